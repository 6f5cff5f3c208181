// install_race.mjs: keel install and uninstall never lose a config written
// while they run: a writer appends a key every few milliseconds through each
// of 50 installs and 50 uninstalls, and every key is still there, with keel's
// change made each time. Its own test, apart from install.mjs, for it takes
// about a minute.
import { spawn, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, readFileSync, readdirSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ok, skip, done } from './lib/tap.mjs';
import { keel as keelArg, sandbox, homeWith } from './lib/keel.mjs';

const keel = realpathSync(keelArg);   // what install writes: the executable's own path
const run = (h, ...args) => spawnSync(keel, args, { env: { PATH: process.env.PATH, HOME: h }, encoding: 'utf8', cwd: h });
const read = (h, f) => readFileSync(join(h, f), 'utf8');

{
  const TRIALS = 50;
  let lost = 0, kept = 0, failures = [];
  // Every 2 ms against a plain build; a sanitized keel runs several times
  // slower, so its writer appends every 8 ms (the property is the same).
  const every = process.env.KEEL_SANITIZED ? 8 : 2;
  const writer = join(sandbox().dir, 'writer.mjs');
  writeFileSync(writer, `import { appendFileSync, existsSync } from 'node:fs';
const [file, stop, tag] = process.argv.slice(2);
let i = 0; const sab = new Int32Array(new SharedArrayBuffer(4));
while (!existsSync(stop) && i < 5000) { appendFileSync(file, tag + '_' + (i++) + ' = ' + i + '\\n'); Atomics.wait(sab, 0, 0, ${every}); }
console.log(i);
`);
  for (let t = 0; t < TRIALS; t++) {
    const ht = homeWith({ '.codex/config.toml': '[mcp_servers.docs]\ncommand = "npx"\nargs = ["-y", "docs"]\n\n[mcp_servers.docs.env]\n' });
    for (const verb of ['install', 'uninstall']) {
      const stop = join(ht, `stop-${verb}`);
      const w = spawn(process.execPath, [writer, join(ht, '.codex/config.toml'), stop, `${verb}_k`], { stdio: ['ignore', 'pipe', 'inherit'] });
      let count = '';
      w.stdout.on('data', (d) => { count += d; });
      for (let wait = 0; wait < 500 && !read(ht, '.codex/config.toml').includes(`${verb}_k_1 = 2`); wait++)
        await new Promise((res) => setTimeout(res, 5));      // the writer is writing
      const k = run(ht, verb, '--client', 'codex');
      writeFileSync(stop, '');
      await new Promise((res) => w.on('close', res));
      const text = read(ht, '.codex/config.toml');
      const n = Number(count);
      for (let i = 0; i < n; i++) if (!text.includes(`${verb}_k_${i} = ${i + 1}\n`)) { lost++; break; }
      const wrapped = text.includes(`command = "${keel}"`);
      if (k.status !== 0 || (verb === 'install') !== wrapped) failures.push({ verb, status: k.status, err: k.stderr.replace(/^keel: warning.*\n/m, '').slice(0, 300), wrapped });
      else kept++;
    }
  }
  ok(lost === 0 && failures.length === 0 && kept === 2 * TRIALS,
    `a writer appending a key every ~${every} ms during install and uninstall (${TRIALS} trials each): no key lost, keel's change made each time`, { lost, failures: failures.slice(0, 3) });
}
// A writer that opened the file before keel replaced it and writes to it
// well after (300 ms: past any fixed watch) still loses nothing: keel waits
// for it to close the file it holds, then makes its change again on what the
// writer wrote, keeping what was added to keel's new file meanwhile (another
// write, by name, between keel's swap and the late one).
{
  const holder = join(sandbox().dir, 'holder.mjs');
  writeFileSync(holder, `import { appendFileSync, closeSync, fstatSync, openSync, statSync, writeFileSync, writeSync } from 'node:fs';
const [file, ready, tag] = process.argv.slice(2);
const fd = openSync(file, 'a'), ino = fstatSync(fd).ino, sab = new Int32Array(new SharedArrayBuffer(4));
writeFileSync(ready, '');
for (let t = 0; t < 10000 && statSync(file).ino === ino; t++) Atomics.wait(sab, 0, 0, 1);
const swapped = statSync(file).ino !== ino;
if (swapped) appendFileSync(file, tag + '_fresh = 2\\n');
Atomics.wait(sab, 0, 0, 300);
writeSync(fd, tag + ' = 1\\n');
closeSync(fd);
console.log(swapped ? 'swapped' : 'not swapped');
`);
  const ht = homeWith({ '.codex/config.toml': '[mcp_servers.docs]\ncommand = "npx"\nargs = ["-y", "docs"]\n' });
  for (const verb of ['install', 'uninstall']) {
    const ready = join(ht, `ready-${verb}`);
    const w = spawn(process.execPath, [holder, join(ht, '.codex/config.toml'), ready, `late_${verb}`], { stdio: ['ignore', 'pipe', 'inherit'] });
    let said = '';
    w.stdout.on('data', (d) => { said += d; });
    for (let wait = 0; wait < 1000 && !existsSync(ready); wait++) await new Promise((res) => setTimeout(res, 5));
    const k = run(ht, verb, '--client', 'codex');
    await new Promise((res) => w.on('close', res));
    const text = read(ht, '.codex/config.toml');
    const wrapped = text.includes(`command = "${keel}"`);
    ok(said.trim() === 'swapped' && k.status === 0 && text.includes(`late_${verb} = 1\n`) && text.includes(`late_${verb}_fresh = 2\n`) && (verb === 'install') === wrapped
      && (verb === 'install' || text.includes('late_install = 1\n')),
    `${verb}: a key written 300 ms after keel replaced the file, by a writer that had it open, is kept, with keel's change and a key added to the new file meanwhile`,
    { said: said.trim(), status: k.status, err: k.stderr.slice(0, 300), wrapped, text: text.slice(-200) });
  }
}
// A writer that holds the file open (r+) from before keel replaces it, then
// empties it, waits pauseMs and writes text into it: the script's path.
// Run as: node SCRIPT FILE READY (READY made once it holds the file).
const inPlaceWriter = (text, pauseMs) => {
  const script = join(sandbox().dir, 'inplace.mjs');
  writeFileSync(script, `import { fstatSync, ftruncateSync, openSync, closeSync, statSync, writeFileSync, writeSync } from 'node:fs';
const [file, ready] = process.argv.slice(2);
const fd = openSync(file, 'r+'), ino = fstatSync(fd).ino, sab = new Int32Array(new SharedArrayBuffer(4));
writeFileSync(ready, '');
for (let t = 0; t < 10000 && statSync(file).ino === ino; t++) Atomics.wait(sab, 0, 0, 1);
ftruncateSync(fd, 0);
if (${pauseMs}) Atomics.wait(sab, 0, 0, ${pauseMs});
writeSync(fd, ${JSON.stringify(text)}, 0);
closeSync(fd);
`);
  return script;
};
// keel ARGS run while SCRIPT (an inPlaceWriter) holds FILE of home h: keel's result, once the writer is done.
const whileWriting = async (script, h, file, ...args) => {
  const ready = join(h, 'ready');
  const w = spawn(process.execPath, [script, join(h, file), ready], { stdio: 'ignore' });
  for (let wait = 0; wait < 1000 && !existsSync(ready); wait++) await new Promise((res) => setTimeout(res, 5));
  const k = run(h, ...args);
  await new Promise((res) => w.on('close', res));
  return k;
};
// An edit redone on what such a writer wrote decides again which server
// keeps keel's tools: the first, as a first try does (every server got
// --expose none, and no server kept apply_override and the rest).
{
  const rewriter = inPlaceWriter('{"mcpServers": {"x": {"command": "npx"}, "y": {"command": "node", "args": ["y"]}}, "n": 1}\n', 0);
  const ht = homeWith({ '.claude/settings.json': '{}\n', '.claude.json': '{"mcpServers": {"x": {"command": "npx"}, "y": {"command": "node", "args": ["y"]}}}\n' });
  const k = await whileWriting(rewriter, ht, '.claude.json', 'install', '--client', 'claude-code');
  let j = {};
  try { j = JSON.parse(read(ht, '.claude.json')); } catch { /* left empty */ }
  ok(k.status === 0 && j.n === 1 && JSON.stringify(j.mcpServers?.x?.args) === '["wrap","--","npx"]' &&
     JSON.stringify(j.mcpServers?.y?.args) === '["wrap","--expose","none","--","node","y"]',
    'an edit redone on what a writer wrote meanwhile: its key kept, and the first server still keeps keel\'s tools', { status: k.status, err: k.stderr.slice(0, 300), j });
}
// A writer that empties the file it holds open and writes only after keel
// stopped waiting (3 s): keel cannot make its change again on what it wrote,
// and says that the file holds keel's change, with its backup; keel's side
// file stays, so uninstall gives the file back as it was.
{
  const truncator = inPlaceWriter('{"n": 1}\n', 3000);
  const orig = '{"mcpServers": {"x": {"command": "npx"}}}\n';
  const ht = homeWith({ '.claude/settings.json': '{}\n', '.claude.json': orig });
  const k = await whileWriting(truncator, ht, '.claude.json', 'install', '--client', 'claude-code');
  const text = read(ht, '.claude.json');
  const backups = readdirSync(ht).filter((f) => f.startsWith('.claude.json.keel-backup-'));
  ok(k.status === 1 && /\.claude\.json holds keel's change, but what another program wrote to it just after could not be read/.test(k.stderr) &&
     !/none of claude-code's files was left changed/.test(k.stderr) && text.includes('"wrap"') && backups.length === 1 &&
     existsSync(join(ht, '.claude.json.keel-added')),
    'a writer that empties the file and writes after keel gave up waiting: keel says the file holds its change, names the backup, keeps its side file', { status: k.status, err: k.stderr, backups });
  const u = run(ht, 'uninstall', '--client', 'claude-code');
  ok(u.status === 0 && read(ht, '.claude.json') === orig, 'and uninstall then gives the file back byte for byte', { status: u.status, err: u.stderr, text: read(ht, '.claude.json') });
}
// n runs of keel VERB --client CLIENT at once in home h: each one's exit code and what it printed.
const atOnce = (h, n, client, verb = 'install') => Promise.all(Array.from({ length: n }, () => new Promise((res) => {
  const p = spawn(keel, [verb, '--client', client], { env: { PATH: process.env.PATH, HOME: h }, cwd: h });
  let out = '';
  p.stdout.on('data', (d) => { out += d; });
  p.on('close', (code) => res({ code, out }));
})));

// Six installs at once on one file: the one that makes the change keeps a
// backup of the file as it was; one that finds the change made by another
// writes nothing and keeps none, and every backup a run names exists.
{
  const ht = homeWith({ '.codex/config.toml': '[mcp_servers.docs]\ncommand = "npx"\nargs = ["-y", "docs"]\n' });
  const runs = await atOnce(ht, 6, 'codex');
  const named = runs.flatMap((r) => [...r.out.matchAll(/the file as it was: (\S+)/g)].map((m) => m[1]));
  const kept = readdirSync(join(ht, '.codex')).filter((f) => f.includes('.keel-backup-'));
  const unchanged = runs.filter((r) => /config\.toml \(codex\): unchanged/.test(r.out)).length;
  ok(runs.every((r) => r.code === 0) && named.length === kept.length && named.every((f) => existsSync(f)) && unchanged === 5 &&
     read(ht, '.codex/config.toml').includes(`command = "${keel}"`),
    'six installs at once: only the runs that wrote keep a backup, and each backup a run names is there', { named, kept, all: readdirSync(join(ht, '.codex')), unchanged });
}
// The same, five times over, with three older backups there: the run that
// wrote keeps the backup it names, whatever the others made meanwhile, and
// once all are done three are left: its own and the two newest before it.
{
  const seen = [];
  for (let trial = 0; trial < 5; trial++) {
    const hc = homeWith({ '.cursor/mcp.json': '{"mcpServers":{"a":{"command":"x","args":[]}}}\n' });
    for (const t of ['20200101-000000', '20200101-000001', '20200101-000002']) writeFileSync(join(hc, `.cursor/mcp.json.keel-backup-${t}`), 'old');
    const runs = await atOnce(hc, 6, 'cursor');
    const named = runs.flatMap((r) => [...r.out.matchAll(/the file as it was: (\S+)/g)].map((m) => m[1]));
    const kept = readdirSync(join(hc, '.cursor')).filter((f) => f.includes('.keel-backup-')).sort();
    seen.push({ named, kept, codes: runs.map((r) => r.code) });
  }
  ok(seen.every((t) => t.codes.every((c) => c === 0) && t.named.length === 1 && existsSync(t.named[0]) && t.kept.length === 3
     && t.kept.includes('mcp.json.keel-backup-20200101-000001') && t.kept.includes('mcp.json.keel-backup-20200101-000002')),
    'installs at once, five times: the backup the writing run names is there, with the two newest older ones, and no more', seen);
}
// Installs and uninstalls at once take turns: then one uninstall gives back
// the file as it was, byte for byte, and the hooks file keel made goes.
{
  const orig = '[mcp_servers.a]\ncommand = "npx"\n';
  const hr = homeWith({ '.codex/config.toml': orig });
  const env = { PATH: process.env.PATH, HOME: hr, KEEL_STATE_DIR: join(hr, '.keel-state') };
  const one = (verb) => new Promise((res) => spawn(keel, [verb, '--client', 'codex'], { env, cwd: hr, stdio: 'ignore' }).on('close', res));
  const codes = await Promise.all(Array.from({ length: 10 }, (_, i) => one(i % 2 ? 'uninstall' : 'install')));
  await one('uninstall');
  const left = readdirSync(join(hr, '.codex')).filter((f) => !f.includes('.keel-backup-'));
  ok(codes.every((c) => c === 0) && read(hr, '.codex/config.toml') === orig && left.join() === 'config.toml',
    'five installs and five uninstalls at once, then one uninstall: the file as it was, no hooks file, no side file', { codes, text: read(hr, '.codex/config.toml'), left });
  // the same with keel's state directory refused (another user's): the lock is taken in HOME instead
  if (process.getuid && process.getuid() === 0) {
    const hs = homeWith({ '.codex/config.toml': orig });
    const other = join(hs, 'not-mine');
    mkdirSync(other, { mode: 0o700 });
    chownSync(other, 65534, 65534);
    const envs = { PATH: process.env.PATH, HOME: hs, KEEL_STATE_DIR: other };
    const go = (verb) => new Promise((res) => spawn(keel, [verb, '--client', 'codex'], { env: envs, cwd: hs, stdio: 'ignore' }).on('close', res));
    const cs = await Promise.all(Array.from({ length: 10 }, (_, i) => go(i % 2 ? 'uninstall' : 'install')));
    await go('uninstall');
    const rest = readdirSync(join(hs, '.codex')).filter((f) => !f.includes('.keel-backup-'));
    ok(cs.every((c) => c === 0) && read(hs, '.codex/config.toml') === orig && rest.join() === 'config.toml' && existsSync(join(hs, '.keel-install.lock')),
      'with the state directory refused, installs and uninstalls at once still take turns (the lock in HOME): the file as it was', { cs, rest });
  } else {
    skip('with the state directory refused, installs and uninstalls at once still take turns', 'giving a directory to another user needs root');
  }
}
done();
