// install.mjs: keel install and uninstall on sample configurations of each
// client (tests/install/), each in a private HOME, as a person would run them:
// servers wrapped, hooks registered, everything else byte for byte; uninstall
// removing exactly keel's entries from the file as it is now (after the
// client rewrote it, after the backups were tidied away, after other
// changes), never losing a config (a concurrent writer: install_race.mjs),
// links, modes and owners kept, read-only files refused, hook commands quoted
// for any path, files with a key given twice or that do not parse refused
// with a line, secrets masked in what is printed, project scopes on request.
// The hosts' own command-line tools check the same edits in hosts.mjs.
import { spawn, spawnSync } from 'node:child_process';
import {
  chmodSync, copyFileSync, cpSync, existsSync, linkSync, lstatSync, mkdirSync, readdirSync, readFileSync,
  realpathSync, statSync, symlinkSync, utimesSync, writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { ok, skip, done } from './lib/tap.mjs';
import { keel as keelArg, root, sandbox, homeWith } from './lib/keel.mjs';

const keel = realpathSync(keelArg);   // what install writes: the executable's own path

const src = join(root, 'tests', 'install');
const FILES = {
  'claude.json': '.claude.json',
  'claude-settings.json': '.claude/settings.json',
  'cursor-mcp.json': '.cursor/mcp.json',
  'codex-config.toml': '.codex/config.toml',
  'gemini-settings.json': '.gemini/settings.json',
  'claude-desktop-config.json': '.config/Claude/claude_desktop_config.json',
};
function home(files = FILES) {
  const h = join(sandbox().dir, 'home');
  for (const [from, to] of Object.entries(files)) {
    mkdirSync(dirname(join(h, to)), { recursive: true });
    cpSync(join(src, from), join(h, to));
  }
  if (existsSync(join(h, '.claude.json'))) mkdirSync(join(h, '.claude'), { recursive: true });   // Claude Code is there
  return h;
}
const run = (h, ...args) => spawnSync(keel, args, { env: { PATH: process.env.PATH, HOME: h }, encoding: 'utf8', cwd: h });
const runAs = (bin, h, ...args) => spawnSync(bin, args, { env: { PATH: process.env.PATH, HOME: h }, encoding: 'utf8', cwd: h });
const read = (h, f) => readFileSync(join(h, f), 'utf8');
const snapshot = (h) => Object.fromEntries(Object.values(FILES).concat(['.codex/hooks.json']).map((f) => [f, existsSync(join(h, f)) ? read(h, f) : null]));
const backups = (h, f) => readdirSync(dirname(join(h, f))).filter((n) => n.startsWith(`${f.split('/').pop()}.keel-backup-`));

// --- the sample configurations -------------------------------------------------
const h = home();
const before = snapshot(h);
const dry = run(h, 'install', '--dry-run');
ok(JSON.stringify(snapshot(h)) === JSON.stringify(before) && /^\+.*"wrap"/m.test(dry.stdout) && backups(h, '.claude.json').length === 0,
  'install --dry-run prints the diff and writes nothing', dry.stdout.slice(0, 400));

const r = run(h, 'install');
ok(r.status === 1 && /claude_desktop_config\.json: line 1, column 41: a comment/.test(r.stderr) &&
   /none of claude-desktop's files was changed/.test(r.stderr) &&
   read(h, FILES['claude-desktop-config.json']) === before[FILES['claude-desktop-config.json']],
  'a configuration that does not parse is left alone, with its line and column (exit 1)', r.stderr);
ok(/^--- a.*\.claude\.json$/m.test(r.stdout) && /^\+\+\+ b/m.test(r.stdout) && /^@@ -\d+,\d+ \+\d+,\d+ @@$/m.test(r.stdout) && !/not there/.test(r.stdout),
  'install prints a unified diff of each change', r.stdout.slice(0, 300));
{
  const cache = join(dirname(keel), 'CMakeCache.txt');
  const prefix = existsSync(cache) ? (/^CMAKE_INSTALL_PREFIX:PATH=(.*)$/m.exec(readFileSync(cache, 'utf8')) || [])[1] : null;
  ok(prefix === null ? !/warning: this keel runs from its build tree/.test(r.stderr)
    : /warning: this keel runs from its build tree/.test(r.stderr) && r.stderr.includes(`run ${prefix}/bin/keel install instead`),
  'run from a build tree, install warns and names the installed path to use (the build\'s install prefix)', r.stderr);
}
// what a real install says of each file: what it did, where the file as it
// was is kept; no dry run, no hard link where there is none
ok(/\.claude\.json \(claude-code\): \d+ server\(s\) wrapped, \d+ hook\(s\) registered\n/.test(r.stdout) && !/dry run/.test(r.stdout) &&
   !/hard link/.test(r.stdout) && /^  the file as it was: .*\.claude\.json\.keel-backup-\d{8}-\d{6}$/m.test(r.stdout),
  'install\'s report: what it did to each file and where the file as it was is kept; no dry run, no hard link', r.stdout.slice(0, 600));

const cj = JSON.parse(read(h, '.claude.json'));
const fsrv = cj.mcpServers.filesystem, gh = cj.mcpServers.github;
ok(fsrv.command === keel && JSON.stringify(fsrv.args) === JSON.stringify(['wrap', '--', 'npx', '-y', '@modelcontextprotocol/server-filesystem', '/home/ana']) &&
   JSON.stringify(gh.args.slice(0, 5)) === JSON.stringify(['wrap', '--expose', 'none', '--', 'docker']) &&
   cj.mcpServers.remote.url === 'https://mcp.example.com/mcp' && !('command' in cj.mcpServers.remote),
  'Claude Code: the first server keeps keel\'s tools, the next gets --expose none, the remote one is left', cj.mcpServers);
ok(read(h, '.claude.json').includes('"projects": {"/home/ana/shop": {"allowedTools": []}}') && read(h, '.claude.json').includes('"numStartups": 12,'),
  'everything else in the file stays byte for byte');
const cs = JSON.parse(read(h, '.claude/settings.json'));
ok(cs.model === 'opus' && cs.hooks.Stop.length === 2 && cs.hooks.Stop[0].hooks[0].command === 'notify-send done' &&
   ['UserPromptSubmit', 'Stop', 'SubagentStop', 'SessionStart'].every((e) => JSON.stringify(cs.hooks[e]).includes(`${keel} hook ${e}`)),
  'Claude Code hooks: keel\'s registered for its four events, beside the person\'s own Stop hook', cs.hooks);
const cmd = cs.hooks.UserPromptSubmit[0].hooks[0].command;
const hk = spawnSync('sh', ['-c', cmd], { input: JSON.stringify({ hook_event_name: 'UserPromptSubmit', session_id: 's', prompt: 'hello', transcript_path: '/nonexistent' }),
  env: { PATH: process.env.PATH, HOME: h, KEEL_STATE_DIR: join(h, 'state') }, encoding: 'utf8' });
ok(hk.status === 0, 'the registered hook command runs as the host would run it (through a shell): exit 0', hk);
const codex = read(h, '.codex/config.toml');
ok(codex.includes('# my codex settings') && codex.includes(`command = "${keel}"   # the docs server`) &&
   codex.includes('args = ["wrap", "--", "npx", "-y", "docs-mcp"]') && codex.includes('args = ["wrap", "--expose", "none", "--", "uvx"]') &&
   codex.includes('[mcp_servers.docs.env]\nTOKEN = "x"') && !/\[features\]|codex_hooks/.test(codex),
  'Codex config.toml: servers wrapped, comments and other tables kept, no legacy feature switch added', codex);
const ch = JSON.parse(read(h, '.codex/hooks.json'));
ok(JSON.stringify(ch.hooks.Stop).includes('hook Stop --host codex') && /run \/hooks in Codex and trust keel's hooks/.test(r.stdout),
  'Codex hooks.json created with keel\'s hooks (--host codex), and the person told to trust them in /hooks', ch);
ok(new RegExp(`^--- a${join(h, '.codex/hooks.json')}\\n\\+\\+\\+ b.*\\n@@ -0,0 \\+1,\\d+ @@\\n\\+\\{\\n`, 'm').test(r.stdout),
  'a file install creates is shown whole, as lines added to nothing', r.stdout.slice(r.stdout.indexOf('hooks.json'), 800));
{
  const empty = homeWith({});
  mkdirSync(empty, { recursive: true });
  const e = run(empty, 'install');
  ok(e.status === 0 && e.stdout.includes(`keel found no client configuration under ${empty} (claude-code, claude-desktop, cursor, codex, gemini)`),
    'install where no client is: it says so, names the clients it looks for, and exits 0', e.stdout + e.stderr);
}
const gs = JSON.parse(read(h, '.gemini/settings.json'));
ok(gs.theme === 'dark' && gs.mcpServers.fs.command === keel && JSON.stringify(gs.hooks.AfterAgent).includes('hook AfterAgent --host gemini') &&
   gs.hooks.BeforeAgent[0].hooks[0].timeout === 10000 && /Gemini CLI: servers and hooks run only in folders you trust/.test(r.stdout),
  'Gemini: the server wrapped and BeforeAgent/AfterAgent/SessionStart hooks registered (timeouts in ms); folder trust named', gs);
ok(JSON.parse(read(h, '.cursor/mcp.json')).mcpServers.notes.args[0] === 'wrap', 'Cursor: the server wrapped');
const bk = backups(h, '.claude.json');
ok(bk.length === 1 && /\.keel-backup-\d{8}-\d{6}$/.test(bk[0]) && readFileSync(join(h, bk[0]), 'utf8') === before['.claude.json'] &&
   (statSync(join(h, bk[0])).mode & 0o777) === 0o600, 'a timestamped backup of the file as it was, mode 0600', bk);

const after = snapshot(h);
const again = run(h, 'install');
ok(JSON.stringify(snapshot(h)) === JSON.stringify(after) && (again.stdout.match(/unchanged/g) || []).length === 6,
  'a second install changes nothing', again.stdout);

const un = run(h, 'uninstall');
const restored = snapshot(h);
const same = Object.entries(before).filter(([f, v]) => restored[f] !== v).map(([f]) => f);
ok(same.length === 0 && restored['.codex/hooks.json'] === null && !existsSync(join(h, '.codex/hooks.json.keel-created')) &&
   !existsSync(join(h, '.claude/settings.json.keel-added')),
  'uninstall after a plain install gives every file back byte for byte (and removes the one keel created)', { differ: same, err: un.stderr });
const un2 = run(h, 'uninstall');
ok(JSON.stringify(snapshot(h)) === JSON.stringify(restored) && !/unwrapped, [1-9]|[1-9] server\(s\) unwrapped/.test(un2.stdout),
  'a second uninstall changes nothing', un2.stdout);

// --- 1, 2, 3: uninstall is semantic, whatever happened since -------------------
{
  const h1 = home({ 'claude.json': '.claude.json', 'claude-settings.json': '.claude/settings.json' });
  const orig = read(h1, '.claude.json');
  run(h1, 'install', '--client', 'claude-code');
  for (const b of readdirSync(h1).filter((n) => n.startsWith('.claude.json.keel-'))) spawnSync('rm', [join(h1, b)]);   // every side file
  const u = run(h1, 'uninstall', '--client', 'claude-code');
  ok(u.status === 0 && existsSync(join(h1, '.claude.json')) && read(h1, '.claude.json') === orig,
    'the backups tidied away: uninstall still removes keel from the file and never deletes it', u);
}
{
  const h2 = home({ 'claude.json': '.claude.json' });
  run(h2, 'install', '--client', 'claude-code');
  const j = JSON.parse(read(h2, '.claude.json'));
  j.numStartups = 13;
  j.mcpServers.added = { command: 'node', args: ['/opt/added.js'] };
  j.projects['/home/ana/shop'].history = [{ display: 'hello' }];
  writeFileSync(join(h2, '.claude.json'), JSON.stringify(j, null, 2));        // the client rewrites it
  run(h2, 'install', '--client', 'claude-code');
  const s2 = JSON.parse(read(h2, '.claude/settings.json'));
  s2.permissions = { allow: ['Bash(ls)'] };
  writeFileSync(join(h2, '.claude/settings.json'), JSON.stringify(s2, null, 2));
  const u = run(h2, 'uninstall', '--client', 'claude-code');
  const got = JSON.parse(read(h2, '.claude.json')), gs2 = JSON.parse(read(h2, '.claude/settings.json'));
  ok(u.status === 0 && got.numStartups === 13 && got.projects['/home/ana/shop'].history[0].display === 'hello' &&
     got.mcpServers.added.command === 'node' && JSON.stringify(got.mcpServers.added.args) === '["/opt/added.js"]' &&
     got.mcpServers.filesystem.command === 'npx' && got.mcpServers.github.command === 'docker' &&
     JSON.stringify(got.mcpServers.filesystem.args) === '["-y","@modelcontextprotocol/server-filesystem","/home/ana"]',
    'install, the client rewrites the file and adds a server, install again, uninstall: every change kept, keel gone', { got, u });
  ok(JSON.stringify(gs2) === '{"permissions":{"allow":["Bash(ls)"]}}' && !existsSync(join(h2, '.claude/settings.json.keel-created')),
    'a settings.json keel created keeps the permissions the person added since; only keel\'s hooks go', gs2);
}

// --- 4: no lost update under a concurrent writer: install_race.mjs ------------

// --- 5: Codex's TOML in every form it takes -------------------------------------
{
  const cases = {
    'top-level-dotted-features.toml': (t, o) => !/\[features\]/.test(t) && /codex_hooks = false/.test(t) && /switched off here/.test(o),
    'inline-features.toml': (t, o) => (t.match(/features/g) || []).length === 1 && /switched off here/.test(o),
    'quoted-feature-key.toml': (t, o) => (t.match(/\[features\]/g) || []).length === 1 && /switched off here/.test(o),
    'hooks-off.toml': (t, o) => /hooks = false/.test(t) && /\(\[features\] hooks = false\)/.test(o),
    'command-in-multiline-string.toml': (t) => t.includes('command = "echo"\n"""') && t.includes(`command = "${keel}"\ndescription`) &&
      t.includes('args = ["wrap", "--", "npx", "-y", "srv"]') && t.includes('args = ["not", "these"]'),
    'table-inside-instructions.toml': (t) => t.includes('[mcp_servers.x]\ncommand = "rm"\n"""') && t.includes('args = ["wrap", "--", "node", "/opt/real/server.js"]'),
    'literal-strings.toml': (t) => t.includes(`args = ["wrap", "--", 'npx', '-y', '@scope/srv', 'C:\\Users\\ana']`),
    'quoted-table-name.toml': (t) => t.includes('[mcp_servers."my.server"]') && t.includes('args = ["wrap", "--", "node", "/opt/my.server/index.js"]'),
    'inline-tables.toml': (t) => t.includes(`mcp_servers.docs = { command = "${keel}", args = ["wrap", "--", "npx", "-y", "docs-mcp"] }`) &&
      t.includes(`mcp_servers.plain = { command = "${keel}", args = ["wrap", "--expose", "none", "--", "uvx"], env = { KEY = "v" } }`),
    'multiline-args.toml': (t) => t.includes('args = [\n  "wrap",\n  "--",\n  "npx",\n  "-y",        # fetch it\n  "multi-mcp",'),
    'no-final-newline.toml': (t) => t.endsWith(`command = "${keel}"\nargs = ["wrap", "--", "node"]`),
  };
  for (const [file, check] of Object.entries(cases)) {
    const orig = readFileSync(join(src, 'codex', file), 'utf8');
    const hc = homeWith({ '.codex/config.toml': orig });
    const i = run(hc, 'install', '--client', 'codex');
    const text = read(hc, '.codex/config.toml');
    const u = run(hc, 'uninstall', '--client', 'codex');
    ok(i.status === 0 && check(text, i.stdout) && /config\.toml \(codex\): [1-9] server\(s\) wrapped/.test(i.stdout) && u.status === 0 &&
       read(hc, '.codex/config.toml') === orig,
      `Codex ${file}: wrapped as written, and uninstall gives the file back byte for byte`, { out: i.stdout + i.stderr, text });
  }
}

// --- 6, 7: links, modes, a stray file at the old temporary name ---------------
{
  const hl = homeWith({ 'dotfiles/cursor.json': '{"mcpServers": {"n": {"command": "node", "args": ["/opt/n.js"]}}}\n' });
  mkdirSync(join(hl, '.cursor'), { recursive: true });
  symlinkSync(join(hl, 'dotfiles/cursor.json'), join(hl, '.cursor/mcp.json'));
  const i = run(hl, 'install', '--client', 'cursor');
  const linked = lstatSync(join(hl, '.cursor/mcp.json')).isSymbolicLink();
  const wrapped = read(hl, 'dotfiles/cursor.json').includes('"wrap"');
  run(hl, 'uninstall', '--client', 'cursor');
  ok(i.status === 0 && linked && wrapped && lstatSync(join(hl, '.cursor/mcp.json')).isSymbolicLink() &&
     !read(hl, 'dotfiles/cursor.json').includes('wrap') && /is a link: keel edited the file it points to/.test(i.stdout),
    'a symlinked config (dotfiles): the file it points to is edited, the link stays a link through install and uninstall', i.stdout);

  const he = homeWith({ '.cursor/mcp.json': '{"mcpServers": {"e": {"command": "my-mcp", "args": []}}}\n' });
  const before = read(he, '.cursor/mcp.json');
  const ie = run(he, 'install', '--client', 'cursor');
  const got = JSON.parse(read(he, '.cursor/mcp.json')).mcpServers.e;
  const ue = run(he, 'uninstall', '--client', 'cursor');
  ok(ie.status === 0 && got.command === keel && JSON.stringify(got.args) === '["wrap","--","my-mcp"]' && ue.status === 0 &&
     read(he, '.cursor/mcp.json') === before, 'a server with an empty args array: wrapped, and given back byte for byte', got);

  const hm = homeWith({ '.cursor/mcp.json': '{"mcpServers": {"n": {"command": "node"}}}\n' });
  chmodSync(join(hm, '.cursor/mcp.json'), 0o644);
  run(hm, 'install', '--client', 'cursor');
  ok((statSync(join(hm, '.cursor/mcp.json')).mode & 0o777) === 0o644, 'a 0644 file stays 0644');
  const hro = homeWith({ '.cursor/mcp.json': '{"mcpServers": {"n": {"command": "node"}}}\n' });
  chmodSync(join(hro, '.cursor/mcp.json'), 0o444);
  const ro = run(hro, 'install', '--client', 'cursor');
  ok(ro.status === 1 && /read-only \(mode 0444\)/.test(ro.stderr) && read(hro, '.cursor/mcp.json') === '{"mcpServers": {"n": {"command": "node"}}}\n',
    'a read-only (0444) file is refused with a clear message and left as it is', ro.stderr);

  // Claude Code's two files: when the second cannot be written (here no
  // backup can be kept beside it: every name for the next 20 seconds is
  // taken), the first is put back and the install fails as a whole.
  {
    const cj = '{"mcpServers": {"n": {"command": "node", "args": ["n.js"]}}}\n', st = '{"permissions": {}}\n';
    const hb = homeWith({ '.claude.json': cj, '.claude/settings.json': st });
    const stamp = (t) => new Date(t).toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
    for (let t = Date.now(), s = 0; s < 20; s++)
      for (const suffix of ['', ...Array.from({ length: 98 }, (_, i) => `-${i + 2}`)])
        writeFileSync(join(hb, `.claude/settings.json.keel-backup-${stamp(t + 1000 * s)}${suffix}`), '');
    const r = run(hb, 'install', '--client', 'claude-code');
    ok(r.status === 1 && read(hb, '.claude.json') === cj && read(hb, '.claude/settings.json') === st &&
       /\.claude\.json was put back as it was/.test(r.stderr) && /none of claude-code's files was left changed/.test(r.stderr),
      'Claude Code\'s second file cannot be written: the first is put back, both are as they were, and it says so', r.stderr);
  }

  // Uninstall takes out what keel install writes and nothing else: a wrap
  // the person wrote with options of their own (--restart), and hook
  // commands that run keel hook with more (a pipe, options), are theirs.
  {
    const mine = '{"mcpServers": {"mine": {"command": "/usr/bin/keel", "args": ["wrap", "--restart", "--", "node", "s.js"]}}}\n';
    const hooks = JSON.stringify({ hooks: { Stop: [{ hooks: [{ type: 'command', command: 'keel hook Stop | tee /tmp/log' },
      { type: 'command', command: '/opt/keel/bin/keel hook Stop --log-level debug' }] }] } }) + '\n';
    const hm = homeWith({ '.cursor/mcp.json': mine, '.claude/settings.json': hooks, '.claude.json': '{}\n' });
    const u = run(hm, 'uninstall');
    ok(u.status === 0 && read(hm, '.cursor/mcp.json') === mine && read(hm, '.claude/settings.json') === hooks &&
       /left alone: mine runs keel wrap with options keel install does not write/.test(u.stdout) &&
       /left alone: 2 hook command\(s\) that run keel hook otherwise than keel install writes/.test(u.stdout),
      'uninstall leaves a wrap with the person\'s own options and hook commands that run keel with more, and says so', u.stdout);
    // A keel hook entry the person wrote by hand, keel found on PATH (keel
    // install writes its full path): install adds the other events beside
    // it and says it stays; uninstall gives the file back byte for byte (it
    // took the entry for keel's own and removed it).
    const byHand = '{"hooks": {"Stop": [{"hooks": [{"type":"command","command":"keel hook Stop"}]}]}}';
    const hh = homeWith({ '.claude/settings.json': byHand, '.claude.json': '{}\n' });
    const i2 = run(hh, 'install', '--client', 'claude-code'), u2 = run(hh, 'uninstall', '--client', 'claude-code');
    ok(i2.status === 0 && /hooks\.Stop already runs keel hook as you wrote it: left as it is/.test(i2.stdout) && /3 hook\(s\) registered/.test(i2.stdout) &&
       u2.status === 0 && read(hh, '.claude/settings.json') === byHand,
      'a keel hook entry written by hand (keel on PATH) is the person\'s: install says it stays, uninstall gives the file back byte for byte', [i2.stdout, read(hh, '.claude/settings.json')]);
  }

  // Installed by one keel, installed again by another (the build tree's,
  // then an installed copy): the entries are left on the first, and install
  // says how to move them.
  {
    const hk = homeWith({ '.cursor/mcp.json': '{"mcpServers": {"n": {"command": "node", "args": ["n.js"]}}}\n', '.claude/settings.json': '{}\n', '.claude.json': '{}\n' });
    const other = join(dirname(hk), 'bin', 'keel');
    mkdirSync(dirname(other), { recursive: true });
    copyFileSync(keel, other);
    chmodSync(other, 0o755);
    runAs(other, hk, 'install');
    const same = runAs(other, hk, 'install');
    const again = run(hk, 'install');
    ok(again.status === 0 && JSON.parse(read(hk, '.cursor/mcp.json')).mcpServers.n.command === other &&
       new RegExp(`n runs another keel \\(${other.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\): keel uninstall, then keel install, moves it to this one`).test(again.stdout) &&
       /hooks\.Stop runs another keel than this one: keel uninstall, then keel install/.test(again.stdout) &&
       !/another keel/.test(same.stdout),
      'install by a second keel leaves the first keel\'s entries and says how to move them (by the first again: nothing said)', [same.stdout, again.stdout]);
  }

  // A Claude Code file of 40 MB (a long history of projects) is edited as a
  // small one is; twelve projects with servers of their own: ten named, the
  // rest counted, not a line each.
  {
    const projects = {};
    for (let i = 0; i < 4000; i++)
      projects[`/home/u/p${i}`] = { history: Array.from({ length: 5 }, () => ({ display: 'x'.repeat(1900), pastedContents: {} })),
        mcpServers: i < 12 ? { db: { command: 'node', args: ['db.js'] } } : {} };
    const big = JSON.stringify({ projects, mcpServers: { n: { command: 'node', args: ['n.js'] } } }, null, 2) + '\n';
    const hb = homeWith({ '.claude.json': big, '.claude/settings.json': '{}\n' });
    const r = run(hb, 'install', '--client', 'claude-code');
    const after = JSON.parse(read(hb, '.claude.json'));
    ok(big.length > 38e6 && r.status === 0 && after.mcpServers.n.command === keel && after.projects['/home/u/p3999'].history.length === 5 &&
       (r.stdout.match(/^  left alone, local to the project /gm) || []).length === 10 &&
       /^  left alone, local to 2 more projects \(keel install --project DIR wraps them\)$/m.test(r.stdout),
      'a 40 MB .claude.json is edited; of 12 projects with their own servers, 10 are named and 2 counted', r.stderr || r.stdout.slice(0, 300));
  }

  // keel's tools go with a server the client runs: a disabled one listed
  // first (Cursor's "disabled": true, Codex's enabled = false) gets
  // --expose none; a keel serve entry already gives them.
  {
    const hd = homeWith({ '.cursor/mcp.json': '{"mcpServers": {"a": {"command": "x", "disabled": true}, "b": {"command": "y"}}}\n',
      '.codex/config.toml': '[mcp_servers.a]\ncommand = "x"\nenabled = false\n\n[mcp_servers.b]\ncommand = "y"\n' });
    const r = run(hd, 'install', '--client', 'cursor', '--client', 'codex');
    const cur = JSON.parse(read(hd, '.cursor/mcp.json')).mcpServers, toml = read(hd, '.codex/config.toml');
    const hs = homeWith({ '.cursor/mcp.json': `{"mcpServers": {"k": {"command": ${JSON.stringify(keel)}, "args": ["serve"]}, "b": {"command": "y"}}}\n` });
    run(hs, 'install', '--client', 'cursor');
    const served = JSON.parse(read(hs, '.cursor/mcp.json')).mcpServers.b;
    ok(r.status === 0 && JSON.stringify(cur.a.args) === '["wrap","--expose","none","--","x"]' && JSON.stringify(cur.b.args) === '["wrap","--","y"]' &&
       /\[mcp_servers\.a\]\ncommand = ".*"\nargs = \["wrap", "--expose", "none", "--", "x"\]/.test(toml) && /\[mcp_servers\.b\]\ncommand = ".*"\nargs = \["wrap", "--", "y"\]/.test(toml) &&
       JSON.stringify(served.args) === '["wrap","--expose","none","--","y"]',
      'keel\'s tools go with the first server the client runs, not a disabled one, and not again beside keel serve', { cur, toml, served, err: r.stderr });
  }

  // A client whose folder is here but whose file is not: said, not silence.
  {
    const hn = join(sandbox().dir, 'home');
    mkdirSync(join(hn, '.cursor'), { recursive: true });
    const i = run(hn, 'install', '--client', 'cursor'), u = run(hn, 'uninstall', '--client', 'cursor');
    const hu = homeWith({ '.cursor/mcp.json': '{"mcpServers": {}}\n' });
    const un = run(hu, 'install', '--client', 'cursor');
    ok(i.status === 0 && /mcp\.json \(cursor\): not there: nothing to wrap$/m.test(i.stdout) && /not there: nothing to take out$/m.test(u.stdout) &&
       !existsSync(join(hn, '.cursor/mcp.json')) && /\(cursor\): unchanged$/m.test(un.stdout) && !/not there/.test(un.stdout),
      'a client with no configuration file: install and uninstall say so and write nothing; a file with nothing to change is unchanged, not "not there"', [i.stdout, u.stdout, un.stdout]);
  }

  // The diff install prints is the change it makes: applied with patch(1)
  // to the file as it was, it gives the file as keel wrote it (a line put in
  // before a blank line is shown as put in, the blank line kept).
  {
    const toml = '[mcp_servers.a]\ncommand = "srv"\n\n[other]\nx = 1\n';
    const cur = '{"mcpServers": {"a": {"command": "srv"},\n  "b": {"command": "t", "args": []}}}\n';
    const hd = homeWith({ '.codex/config.toml': toml, '.cursor/mcp.json': cur });
    const r = run(hd, 'install', '--client', 'codex', '--client', 'cursor');
    const works = ['.codex/config.toml', '.cursor/mcp.json'].map((f, i) => {
      const hunk = r.stdout.split(/^(?=--- a)/m).find((x) => x.startsWith(`--- a${join(hd, f)}\n`)) || '';
      const copy = join(hd, `orig-${i}`);
      writeFileSync(copy, i ? cur : toml);
      const p = spawnSync('patch', ['-s', '-o', `${copy}.out`, copy], { input: hunk.replace(/^ {2}the file as it was.*\n/m, ''), encoding: 'utf8' });
      return p.status === 0 && readFileSync(`${copy}.out`, 'utf8') === read(hd, f);
    });
    ok(r.status === 0 && works.every(Boolean) && /^@@ -1,4 \+1,5 @@$/m.test(r.stdout),
      'the printed diff, applied by patch to the file as it was, gives the file keel wrote (TOML and JSON)', r.stdout);
  }

  // A file whose lines end in CRLF gets keel's lines in CRLF too (no mixed
  // endings), and uninstall gives it back byte for byte.
  {
    const toml = '[mcp_servers.a]\r\ncommand = "x"\r\n', st = '{\r\n  "permissions": {}\r\n}\r\n';
    const hc = homeWith({ '.codex/config.toml': toml, '.claude/settings.json': st, '.claude.json': '{}\r\n' });
    const r = run(hc, 'install', '--client', 'codex', '--client', 'claude-code');
    const bare = (t) => (t.match(/(^|[^\r])\n/g) || []).length;
    const t2 = read(hc, '.codex/config.toml'), s2 = read(hc, '.claude/settings.json');
    run(hc, 'uninstall', '--client', 'codex', '--client', 'claude-code');
    ok(r.status === 0 && /\r\nargs = \["wrap", "--", "x"\]\r\n/.test(t2) && /UserPromptSubmit/.test(s2) && bare(t2) === 0 && bare(s2) === 0 &&
       read(hc, '.codex/config.toml') === toml && read(hc, '.claude/settings.json') === st,
      'CRLF files: keel\'s lines end in CRLF too, and uninstall gives the files back byte for byte', JSON.stringify([t2, s2]));
  }

  // Exactly ten projects with servers of their own: each named, none counted.
  {
    const projects = {};
    for (let i = 0; i < 10; i++) projects[`/p${i}`] = { mcpServers: { db: { command: 'node', args: ['db.js'] } } };
    const ht = homeWith({ '.claude.json': JSON.stringify({ projects }) + '\n', '.claude/settings.json': '{}\n' });
    const r = run(ht, 'install', '--client', 'claude-code');
    ok(r.status === 0 && (r.stdout.match(/^  left alone, local to the project /gm) || []).length === 10 && !/more projects/.test(r.stdout),
      'ten projects with their own servers: all ten named, none counted', r.stdout);
  }
  // A file whose first line ends in CRLF and the rest in LF: keel's lines in
  // LF, as most of it.
  {
    const mixed = '[mcp_servers.a]\r\ncommand = "x"\n';
    const hx = homeWith({ '.codex/config.toml': mixed });
    run(hx, 'install', '--client', 'codex');
    ok(/command = ".*"\nargs = \["wrap", "--", "x"\]\n$/.test(read(hx, '.codex/config.toml')),
      'lines ending in CRLF and in LF: keel\'s lines end in LF', read(hx, '.codex/config.toml'));
  }

  // Install and uninstall again and again within one second: each backup
  // keel names is there afterwards (the newest kept are the newest made, -2
  // after the one without a number), and a file of the person's named like a
  // backup is never pruned.
  {
    const hp = homeWith({ '.cursor/mcp.json': '{"mcpServers": {"n": {"command": "node"}}}\n' });
    writeFileSync(join(hp, '.cursor/mcp.json.keel-backup-2025-manual'), 'mine');
    writeFileSync(join(hp, '.cursor/mcp.json.keel-backup-00000000-000000'), 'keel, long ago');
    const said = [];
    for (let i = 0; i < 4; i++)
      for (const cmd of ['install', 'uninstall']) {
        const r = run(hp, cmd, '--client', 'cursor');
        said.push(...[...r.stdout.matchAll(/the file as it was: (\S+)/g)].map((m) => m[1]));
      }
    const left = backups(hp, '.cursor/mcp.json');
    ok(said.length >= 2 && existsSync(said[said.length - 1]) && existsSync(said[said.length - 2]) &&
       read(hp, '.cursor/mcp.json.keel-backup-2025-manual') === 'mine' && !left.includes('mcp.json.keel-backup-00000000-000000') &&
       left.filter((n) => /-\d{8}-\d{6}(-\d)?$/.test(n)).length === 3,
      'repeated installs in one second: the backups said are there, 3 kept, the oldest pruned, a file of the person\'s left', { said, left });
  }

  // A server keel already wraps with its own tools, listed after a new one:
  // the new one still gets --expose none (keel's tools once per client).
  const hw = homeWith({ '.cursor/mcp.json': JSON.stringify({ mcpServers: { fresh: { command: 'node', args: ['n.js'] }, old: { command: keel, args: ['wrap', '--', 'uvx', 'o'] } } }) + '\n' });
  const iw = run(hw, 'install', '--client', 'cursor');
  const fresh = JSON.parse(read(hw, '.cursor/mcp.json')).mcpServers.fresh;
  ok(iw.status === 0 && JSON.stringify(fresh.args) === '["wrap","--expose","none","--","node","n.js"]',
    'a server keel wraps already with its tools, listed after a new one: the new one gets --expose none', fresh);

  // What keel added is listed beside the file (FILE.keel-added, JSON
  // pointers), so uninstall takes out an "args" keel added, whichever keel
  // installed it: here the list as an earlier install left it.
  const earlier = `{"mcpServers": {"n": {"command": "${keel}", "args": ["wrap", "--", "node"]}}}\n`;
  const hk = homeWith({ '.cursor/mcp.json': earlier, '.cursor/mcp.json.keel-added': '/mcpServers/n/args\n' });
  const uk = run(hk, 'uninstall', '--client', 'cursor');
  ok(uk.status === 0 && read(hk, '.cursor/mcp.json') === '{"mcpServers": {"n": {"command": "node"}}}\n' && !existsSync(join(hk, '.cursor/mcp.json.keel-added')),
    'uninstall takes out the "args" an earlier install added, as FILE.keel-added lists it', read(hk, '.cursor/mcp.json'));

  // ... its pointers escaped as RFC 6901 has it (a name with / and ~), as an
  // earlier keel wrote them
  const named = `{"mcpServers": {"team/docs~v2": {"command": "${keel}", "args": ["wrap", "--", "docs-mcp"]}}}\n`;
  const hn = homeWith({ '.cursor/mcp.json': named, '.cursor/mcp.json.keel-added': '/mcpServers/team~1docs~0v2/args\n' });
  const un = run(hn, 'uninstall', '--client', 'cursor');
  ok(un.status === 0 && read(hn, '.cursor/mcp.json') === '{"mcpServers": {"team/docs~v2": {"command": "docs-mcp"}}}\n',
    'FILE.keel-added names members as RFC 6901 pointers (~1 for /, ~0 for ~): an earlier list is read so', read(hn, '.cursor/mcp.json'));

  // a line of the list that is not a pointer, nor a JSON string of one, is
  // passed over: the lines that are still count
  const hj = homeWith({ '.cursor/mcp.json': earlier, '.cursor/mcp.json.keel-added': '"broken\n42\n"not/a/pointer"\n/mcpServers/n/args\n' });
  const uj = run(hj, 'uninstall', '--client', 'cursor');
  ok(uj.status === 0 && read(hj, '.cursor/mcp.json') === '{"mcpServers": {"n": {"command": "node"}}}\n',
    'FILE.keel-added with lines that are no pointer: passed over, the pointer after them still read', uj.stderr);

  // ... and a member whose name holds a line break ("a\nb") is listed so
  // too (as a JSON string on its line): uninstall gives the file back as it
  // was, with no "args": [] left behind.
  const broken = '{"mcpServers": {"a\\nb": {"command": "node"}}}\n';
  const hb = homeWith({ '.cursor/mcp.json': broken });
  const ib = run(hb, 'install', '--client', 'cursor');
  const ub = run(hb, 'uninstall', '--client', 'cursor');
  ok(ib.status === 0 && ub.status === 0 && read(hb, '.cursor/mcp.json') === broken &&
     !existsSync(join(hb, '.cursor/mcp.json.keel-added')),
    'a server named with a line break: install then uninstall gives the file back byte for byte', read(hb, '.cursor/mcp.json'));

  // A keel at another path (installed elsewhere) is keel: its server is not
  // wrapped twice, and uninstall unwraps it.
  const other = '/opt/keel/bin/keel';
  const ho = homeWith({ '.cursor/mcp.json': JSON.stringify({ mcpServers: { o: { command: other, args: ['wrap', '--', 'uvx', 'o'] } } }) + '\n' });
  const io = run(ho, 'install', '--client', 'cursor');
  const afterInstall = JSON.parse(read(ho, '.cursor/mcp.json')).mcpServers.o;
  const uo = run(ho, 'uninstall', '--client', 'cursor');
  const afterUninstall = JSON.parse(read(ho, '.cursor/mcp.json')).mcpServers.o;
  ok(io.status === 0 && afterInstall.command === other && afterInstall.args.join(' ') === 'wrap -- uvx o' &&
     uo.status === 0 && afterUninstall.command === 'uvx' && afterUninstall.args.join(' ') === 'o',
    'a server a keel at another path wraps: install leaves it, uninstall unwraps it', { afterInstall, afterUninstall });

  // Uninstall knows keel's hook however its command is quoted, and leaves a
  // person's hook whose second word happens to be "hook".
  const hq2 = homeWith({ '.claude.json': '{}\n', '.claude/settings.json': JSON.stringify({ hooks: { Stop: [{ hooks: [
    { type: 'command', command: '"/opt/my dir/keel" hook Stop' }, { type: 'command', command: '/opt/my\\ dir/keel hook Stop --host claude-code' },
    { type: 'command', command: 'my-notify hook done' }] }] } }) + '\n' });
  const uh = run(hq2, 'uninstall', '--client', 'claude-code');
  const left = JSON.parse(read(hq2, '.claude/settings.json')).hooks.Stop[0].hooks.map((x) => x.command);
  ok(uh.status === 0 && JSON.stringify(left) === '["my-notify hook done"]',
    'uninstall removes keel\'s hook commands in double quotes or with an escaped space, and leaves another program\'s "hook"', left);

  // A file whose object comes after a comment (JSON with comments) or after
  // blank space: wrapped, and given back byte for byte.
  const lead = { '.gemini/settings.json': '// my settings\n{"mcpServers": {"g": {"command": "node", "args": ["g.js"]}}}\n',
    '.cursor/mcp.json': '\n  {"mcpServers": {"c": {"command": "node"}}}\n' };
  const hl2 = homeWith(lead);
  const il = run(hl2, 'install', '--client', 'gemini', '--client', 'cursor');
  const wrappedBoth = JSON.parse(read(hl2, '.cursor/mcp.json')).mcpServers.c.command === keel && read(hl2, '.gemini/settings.json').includes(`"command": "${keel}", "args": ["wrap", "--", "node", "g.js"]`);
  const ul = run(hl2, 'uninstall', '--client', 'gemini', '--client', 'cursor');
  ok(il.status === 0 && wrappedBoth && ul.status === 0 && read(hl2, '.gemini/settings.json') === lead['.gemini/settings.json'] && read(hl2, '.cursor/mcp.json') === lead['.cursor/mcp.json'],
    'a file whose object follows a comment or blank space: wrapped, and given back byte for byte', il.stdout + il.stderr);

  // Servers keel cannot read are named and left alone; one a keel wraps
  // with --expose=none leaves keel's tools to the new one; a wrap with no
  // command after "--" is left as it is by uninstall.
  const odd = '{"mcpServers": {"x": {"command": ["npx"]}, "y": {"command": "npx", "args": "a"}, '
    + '"old": {"command": "/opt/keel", "args": ["wrap", "--expose=none", "--", "uvx", "o"]}, '
    + '"bad": {"command": "/opt/keel", "args": ["wrap", "--"]}, "new": {"command": "node"}}}\n';
  const hx = homeWith({ '.cursor/mcp.json': odd, '.codex/config.toml': '[mcp_servers.t]\ncommand = 42\n\n[mcp_servers.u]\ncommand = "npx"\nargs = "x"\n' });
  const ix = run(hx, 'install', '--client', 'cursor', '--client', 'codex');
  const wrappedNew = JSON.parse(read(hx, '.cursor/mcp.json')).mcpServers.new;
  const ux = run(hx, 'uninstall', '--client', 'cursor');
  const back = JSON.parse(read(hx, '.cursor/mcp.json')).mcpServers;
  ok(ix.status === 0 && ['x: left alone: its command is not what a client reads', 'y: left alone: its args is not what a client reads',
    't: left alone: its command is not what Codex reads', 'u: left alone: its args is not what Codex reads'].every((l) => ix.stdout.includes(`  ${l}\n`)) &&
     JSON.stringify(wrappedNew.args) === '["wrap","--","node"]' && ux.status === 0 &&
     JSON.stringify(back.bad) === '{"command":"/opt/keel","args":["wrap","--"]}' && back.old.command === 'uvx' && back.new.command === 'node',
    'servers keel cannot read are named and left alone; a wrap with --expose=none leaves keel\'s tools to the new server; a wrap with nothing after "--" stays', { out: ix.stdout.slice(0, 300), wrappedNew, back });

  // The "args" keel added to a file written without spaces goes whole.
  const tight = `{"mcpServers":{"n":{"command":"${keel}","args":["wrap","--","node"]}}}\n`;
  const ht = homeWith({ '.cursor/mcp.json': tight, '.cursor/mcp.json.keel-added': '/mcpServers/n/args\n' });
  const ut = run(ht, 'uninstall', '--client', 'cursor');
  ok(ut.status === 0 && read(ht, '.cursor/mcp.json') === '{"mcpServers":{"n":{"command":"node"}}}\n',
    'the "args" keel added, in a file with no spaces, goes whole on uninstall', read(ht, '.cursor/mcp.json'));

  const hdir = homeWith({});
  mkdirSync(join(hdir, '.cursor/mcp.json'), { recursive: true });
  const rd = run(hdir, 'install', '--client', 'cursor');
  ok(rd.status === 1 && /mcp\.json: not a regular file/.test(rd.stderr) && rd.stderr.split('mcp.json').length === 2 && /none of cursor's files was changed/.test(rd.stderr) &&
     readdirSync(join(hdir, '.cursor/mcp.json')).length === 0, 'a config path that is a directory is refused with a line, and nothing is written', rd.stderr);

  const hh = homeWith({ '.cursor/mcp.json': '{"mcpServers": {"n": {"command": "node"}}}\n', 'unrelated.txt': 'mine\n' });
  linkSync(join(hh, 'unrelated.txt'), join(hh, '.cursor/mcp.json.keel-tmp'));
  linkSync(join(hh, '.cursor/mcp.json'), join(hh, 'hardlink.json'));
  const hi = run(hh, 'install', '--client', 'cursor');
  ok(hi.status === 0 && read(hh, 'unrelated.txt') === 'mine\n' && read(hh, '.cursor/mcp.json').includes('"wrap"') &&
     /had 1 other hard link\(s\): they keep the content from before/.test(hi.stdout),
    'a hard link at FILE.keel-tmp is never written through; a hard-linked config is named (its other names keep the old text)', hi.stdout);
}

// --- 8: hook commands quoted for any path -----------------------------------
for (const dirName of ["it's $(touch PWNED) dir", 'semi;colon & pipe | (paren)', 'new\nline']) {
  const hq = homeWith({ '.claude/settings.json': '{}\n' });
  const dir = join(hq, dirName);
  mkdirSync(dir, { recursive: true });
  const bin = join(dir, 'keel');
  copyFileSync(keel, bin);
  chmodSync(bin, 0o755);
  const i = runAs(bin, hq, 'install', '--client', 'claude-code');
  const hooks = JSON.parse(read(hq, '.claude/settings.json')).hooks;
  const c = hooks.UserPromptSubmit[0].hooks[0].command;
  const res = spawnSync('sh', ['-c', c], { cwd: hq, input: JSON.stringify({ hook_event_name: 'UserPromptSubmit', session_id: 's', prompt: 'hi', transcript_path: '/nonexistent' }),
    env: { PATH: process.env.PATH, HOME: hq, KEEL_STATE_DIR: join(hq, 'state') }, encoding: 'utf8' });
  const again = runAs(bin, hq, 'install', '--client', 'claude-code');
  const once = JSON.parse(read(hq, '.claude/settings.json')).hooks.UserPromptSubmit.length === 1;
  const u = runAs(bin, hq, 'uninstall', '--client', 'claude-code');
  ok(i.status === 0 && res.status === 0 && !existsSync(join(hq, 'PWNED')) && !existsSync(join(dir, 'PWNED')) && res.stderr === '' &&
     again.status === 0 && once && u.status === 0 && read(hq, '.claude/settings.json') === '{}\n',
    `keel installed under ${JSON.stringify(dirName)}: its hook command runs as the host runs it, nothing in the path is executed, a second install knows it for keel's, uninstall takes it out`, { c, res, u: u.stdout });
}

// --- 9, 13: files keel refuses, each with its line --------------------------
{
  const bad = {
    'duplicate mcpServers': ['{\n  "mcpServers": {"a": {"command": "x"}},\n  "mcpServers": {"b": {"command": "y"}}\n}\n', /the key "mcpServers" is given twice in one object \(lines 2 and 3\)/],
    'a duplicate server name': ['{"mcpServers": {\n"a": {"command": "x"},\n"a": {"command": "uvx"}}}', /"a" is given twice.*lines 2 and 3/],
    'a byte-order mark': ['\ufeff{"mcpServers": {}}', /line 1, column 1: the file starts with a byte-order mark/],
    'a trailing comma': ['{\n  "mcpServers": {"a": {"command": "x"},}\n}\n', /line 2, column \d+: a comma before a closing bracket/],
    'nesting over 1000': [`{\n  "mcpServers": {},\n  "x": ${'['.repeat(1001)}${']'.repeat(1001)}}`, /line 3, column 1007: nested deeper than 1000/],
    'a top-level array': ['[{"hooks": {}}]', /the top level is not an object/],
    'a raw tab in a string': ['{\n  "mcpServers": {\n    "a": {"command": "a", "args": ["tab\there"]}\n  }\n}\n', /line 3, column 40: a tab inside a string, which JSON writes as \\t/],
    'a raw line break in a string': ['{"mcpServers": {"a": {"command": "a\nb"}}}', /line 1, column 36: a line break inside a string/],
    'a control character in a string': ['{"mcpServers": {"a": {"command": "a\u0001b"}}}', /line 1, column 36: a control character inside a string/],
  };
  for (const [what, [text, re]] of Object.entries(bad)) {
    const hb = homeWith({ '.cursor/mcp.json': text });
    const b = run(hb, 'install', '--client', 'cursor');
    ok(b.status === 1 && re.test(b.stderr) && read(hb, '.cursor/mcp.json') === text, `a file with ${what} is refused, its line named, left byte for byte`, b.stderr);
  }
  const bomToml = '\ufeff[mcp_servers.x]\ncommand = "node"\n';
  const hbt = homeWith({ '.codex/config.toml': bomToml });
  const bt = run(hbt, 'install', '--client', 'codex');
  ok(bt.status === 1 && /line 1, column 1: the file starts with a byte-order mark \(U\+FEFF\), which TOML does not allow: save it as UTF-8 without one/.test(bt.stderr) &&
     read(hbt, '.codex/config.toml') === bomToml,
    'a config.toml that starts with a byte-order mark is refused with what to do, left byte for byte', bt.stderr);
  // A deeply nested member elsewhere in the file: checking the edit takes time
  // in proportion to the file (comparing nested objects twice over at each
  // level, as cJSON_Compare does, would never end at 200 levels).
  const deep = `${'{"a": '.repeat(200)}1${'}'.repeat(200)}`;
  const hd = homeWith({ '.cursor/mcp.json': `{"deep": ${deep}, "mcpServers": {"n": {"command": "node"}}}\n` });
  const t0 = Date.now();
  const dr = spawnSync(keel, ['install', '--client', 'cursor'], { env: { PATH: process.env.PATH, HOME: hd }, encoding: 'utf8', timeout: 20000 });
  ok(dr.status === 0 && read(hd, '.cursor/mcp.json').includes('"wrap"') && Date.now() - t0 < 10000,
    `a file with a member nested 200 levels deep: installed in ${Date.now() - t0} ms`, dr.stderr);
  const ha = homeWith({ '.claude/settings.json': '[{"a": 1}]\n' });
  run(ha, 'install', '--client', 'claude-code');
  run(ha, 'install', '--client', 'claude-code');
  ok(read(ha, '.claude/settings.json') === '[{"a": 1}]\n', 'a settings.json whose top level is an array gets nothing appended, however often install runs');
  const hc = home({ 'claude.json': '.claude.json' });
  writeFileSync(join(hc, '.claude.json'), '{"mcpServers": {"a": {"command": "x"}}, }');
  const c = run(hc, 'install', '--client', 'claude-code');
  ok(c.status === 1 && !existsSync(join(hc, '.claude/settings.json')) && /none of claude-code's files was changed/.test(c.stderr),
    'one file of a client failing leaves all of that client\'s files untouched (settings.json not created)', c.stderr);
}

// --- 10: secrets masked in what is printed -----------------------------------
{
  const secret = 'ghp_0123456789abcdefSECRET';
  const hs = homeWith({
    '.claude.json': JSON.stringify({ mcpServers: { gh: { command: 'npx', args: ['-y', 'gh-mcp', '--token', `${secret}A`], env: { GITHUB_TOKEN: secret, OTHER: 'plainvalue' } } },
      projects: { '/p': { history: 'x'.repeat(5000) } } }),
    '.codex/config.toml': `[mcp_servers.api]\ncommand = "npx"\nargs = ["api-mcp", "--api-key", "${secret}C"]\nenv = { API_KEY = "${secret}B" }\n\n[mcp_servers.api.http_headers]\n`,
    '.gemini/settings.json': `{\n  // mine\n  "mcpServers": {"g": {"command": "node", "args": ["g.js"], "env": {"G_KEY": "${secret}D"}}}\n}\n`,
  });
  const i = run(hs, 'install', '--client', 'claude-code', '--client', 'codex', '--client', 'gemini');
  const u = run(hs, 'uninstall', '--client', 'claude-code', '--client', 'codex', '--client', 'gemini');
  const all = i.stdout + i.stderr + u.stdout + u.stderr;
  ok(i.status === 0 && !all.includes(secret) && !all.includes('plainvalue') && /"\*\*\*"/.test(i.stdout) &&
     Math.max(...i.stdout.split('\n').map((l) => l.length)) < 700,
    'env values, tokens after --token and header values are masked in every printed diff; a one-line file is shown only around the change', i.stdout.slice(0, 600));
  ok(i.stdout.includes(`+command = "${keel}"`) && i.stdout.includes('"api-mcp", "--api-key", "***"') && i.stdout.includes('"g.js"'),
    'what is not secret is shown: the command, the arguments before a secret flag (TOML), a JSON-with-comments file\'s arguments', i.stdout);
  // a header's value after --header, and a password in a URL, in JSON and TOML alike
  const hh = homeWith({
    '.cursor/mcp.json': JSON.stringify({ mcpServers: {
      b: { command: 'npx', args: ['mcp-remote', 'https://x.example', '--header', 'Authorization: Bearer 8f3k2j4h5g6f7d8s9a0q1w2e3r4t5y6u'] },
      d: { command: 'npx', args: ['https://user:p4ssw0rd@mcp.example.com/sse', 'https://example.com:8443/path'] } } }, null, 2),
    '.codex/config.toml': '[mcp_servers.p]\ncommand = "npx"\nargs = ["pg-mcp", "postgresql://admin:hunter2secret@db.example.com/prod", "-H", "X-Api-Key: k3yk3yk3y"]\n',
  });
  const ih = run(hh, 'install', '--client', 'cursor', '--client', 'codex', '--dry-run');
  ok(ih.status === 0 && !/8f3k2j4h|p4ssw0rd|hunter2secret|k3yk3yk3y/.test(ih.stdout + ih.stderr) && ih.stdout.includes('https://example.com:8443/path') && ih.stdout.includes('"pg-mcp"'),
    'a bearer token after --header, and passwords in URLs, are masked in JSON and TOML; a URL with a port and no password is shown', ih.stdout);
  // a token in a comment (TOML #, JSON with comments //) is masked too
  const hc = homeWith({
    '.codex/config.toml': '[mcp_servers.z]\n# old token: ghp_commentedsecret0000000000000000000\ncommand = "srv3"\n',
    '.gemini/settings.json': '{\n "mcpServers": {\n  // my key was: sk-ant-api03-commentsecretAAAAAAAAAAAAAAA\n  "g": {"command": "node"}\n }\n}\n',
  });
  const ic = run(hc, 'install', '--client', 'codex', '--client', 'gemini', '--dry-run');
  ok(ic.status === 0 && !/ghp_comment|sk-ant-api03/.test(ic.stdout + ic.stderr) && /my key was: "\*\*\*"/.test(ic.stdout),
    'a token in a comment is masked in the diff as one in a value is', ic.stdout);
  // more secrets than keel keeps places for (512): the rest stay hidden
  const many = Array.from({ length: 600 }, (_, k) => `K${k}_TOKEN = "sekrit${k}"`).join(', ');
  const hm = homeWith({ '.codex/config.toml': `[mcp_servers.api]\nenv = { ${many} }\ncommand = "npx"\nargs = ["api-mcp"]\n` });
  const im = run(hm, 'install', '--client', 'codex');
  const um = run(hm, 'uninstall', '--client', 'codex');
  ok(im.status === 0 && um.status === 0 && !/sekrit/.test(im.stdout + im.stderr + um.stdout + um.stderr),
    'a file with 600 secret values: none is printed', im.stdout.slice(0, 400));
}

// --- 11, 15: project scopes -------------------------------------------------
{
  const hp = homeWith({
    '.claude.json': JSON.stringify({ mcpServers: {}, projects: { '/elsewhere': { mcpServers: { db: { command: 'node', args: ['db.js'] }, docs: { type: 'http', url: 'https://example.com/mcp' } } } } }, null, 2),
    'proj/.mcp.json': '{"mcpServers": {"shared": {"command": "npx", "args": ["-y", "shared-mcp"]}}}\n',
    'proj/.gemini/settings.json': '{\n  // the team\'s servers\n  "mcpServers": {"g": {"command": "node", "args": ["g.js"]}} /* keep */\n}\n',
    '.gemini/settings.json': '{}\n',
  });
  const proj = join(hp, 'proj');
  const cj0 = JSON.parse(read(hp, '.claude.json'));
  cj0.projects[proj] = { mcpServers: { local: { command: 'uvx', args: ['local-mcp'] } } };
  writeFileSync(join(hp, '.claude.json'), JSON.stringify(cj0, null, 2));
  const last = run(hp, 'install', '--client', 'claude-code', '--dry-run', '--project');
  ok(last.status === 0 && /dry run/.test(last.stdout), '--project as the last argument: the current directory', last.stdout + last.stderr);
  const plain = run(hp, 'install', '--client', 'claude-code');
  ok(plain.status === 0 && /^  left alone, local to the project \/elsewhere: db \(keel install --project DIR wraps them\)/m.test(plain.stdout) &&
     JSON.parse(read(hp, '.claude.json')).projects['/elsewhere'].mcpServers.db.command === 'node',
    'without --project, local-scope stdio servers are named (not a remote one) and left alone', plain.stdout);
  const pr = run(hp, 'install', '--project', proj);
  const cjp = JSON.parse(read(hp, '.claude.json'));
  const gp = read(hp, 'proj/.gemini/settings.json');
  ok(pr.status === 0 && cjp.projects[proj].mcpServers.local.command === keel && cjp.projects['/elsewhere'].mcpServers.db.command === 'node' &&
     JSON.parse(read(hp, 'proj/.mcp.json')).mcpServers.shared.args[0] === 'wrap' &&
     gp.includes("// the team's servers") && gp.includes('/* keep */') && gp.includes(`"command": "${keel}"`),
    '--project DIR wraps Claude Code\'s local scope for DIR, DIR/.mcp.json and DIR/.gemini/settings.json (its comments kept)', pr.stdout + pr.stderr);
  const up = run(hp, 'uninstall', '--project', proj);
  ok(up.status === 0 && JSON.parse(read(hp, '.claude.json')).projects[proj].mcpServers.local.command === 'uvx' &&
     read(hp, 'proj/.gemini/settings.json') === '{\n  // the team\'s servers\n  "mcpServers": {"g": {"command": "node", "args": ["g.js"]}} /* keep */\n}\n' &&
     read(hp, 'proj/.mcp.json') === '{"mcpServers": {"shared": {"command": "npx", "args": ["-y", "shared-mcp"]}}}\n',
    'uninstall --project DIR takes keel out of the project files again', up.stdout + up.stderr);
}

// --- 12: hooks only: the override word works from the prompt -------------------
{
  const ho = homeWith({ '.claude/settings.json': '{}\n' });
  const i = run(ho, 'install', '--client', 'claude-code');
  ok(/No MCP server runs through keel.*start your next prompt with its word/s.test(i.stdout),
    'a hooks-only install says how to act on an advisory without keel\'s tools', i.stdout);
  const c = JSON.parse(read(ho, '.claude/settings.json')).hooks.UserPromptSubmit[0].hooks[0].command;
  const res = spawnSync('sh', ['-c', c], { input: JSON.stringify({ hook_event_name: 'UserPromptSubmit', session_id: 's', prompt: 'snooze-15m', transcript_path: '/nonexistent' }),
    env: { PATH: process.env.PATH, HOME: ho, KEEL_STATE_DIR: join(ho, 'state') }, encoding: 'utf8' });
  let out = {};
  try { out = JSON.parse(res.stdout); } catch { /* left empty */ }
  const state = existsSync(join(ho, 'state/state.json')) ? read(ho, 'state/state.json') : '';
  ok(res.status === 0 && /snooze-15m applied/.test(out.systemMessage || '') && /snooze/.test(state),
    'a prompt that starts with an override word applies it (the state file holds the snooze)', { out, state: state.slice(0, 300) });
}

// --- 16: keel wrap leaves with its client ------------------------------------
{
  const w = spawn(keel, ['wrap', '--', process.execPath, '-e', 'process.stdin.resume(); setInterval(() => {}, 1000)'], { stdio: ['pipe', 'pipe', 'pipe'] });
  await new Promise((res) => setTimeout(res, 1200));       // past its first second: it has started
  const t0 = Date.now();
  w.stdin.end();
  await new Promise((res) => w.on('close', res));
  const ms = Date.now() - t0;
  // The bound is the plain build's; a sanitized keel runs several times
  // slower, and there only its leaving at all is checked (it took 2.1 s once
  // on a loaded machine).
  const bound = process.env.KEEL_SANITIZED ? 5000 : 1500;
  ok(ms < bound, `the client gone with nothing in flight, keel wrap ends its server and exits in ${ms} ms (< ${bound}; it was 2 s of grace)`);
}

// --- usage ------------------------------------------------------------------
const only = run(h, 'install', '--client', 'codex');
ok(only.status === 0 && !/\.claude/.test(only.stdout), '--client limits install to that client', only.stdout.slice(0, 200));
const badc = run(h, 'install', '--client', 'vscode');
ok(badc.status === 64 && /claude-code, claude-desktop, cursor, codex or gemini/.test(badc.stderr), 'an unknown client: usage error naming the known ones', badc.stderr);
const noval = run(h, 'install', '--client');
ok(noval.status === 64 && /--client needs a name/.test(noval.stderr), '--client with no value: usage error saying it needs a name', noval.stderr);

// Hooks objects keel must add to without breaking them: empty, and an event with an empty list.
for (const [name, text] of [['an empty hooks object', '{"hooks": {}}'], ['an event with an empty list', '{"hooks": {"Stop": []}, "x": 1}']]) {
  const h3 = homeWith({ '.claude/settings.json': text });
  const r3 = run(h3, 'install', '--client', 'claude-code');
  const laid = read(h3, '.claude/settings.json');
  let parsed = null;
  try { parsed = JSON.parse(read(h3, '.claude/settings.json')); } catch { /* left null */ }
  const u3 = run(h3, 'uninstall', '--client', 'claude-code');
  ok(r3.status === 0 && parsed && ['UserPromptSubmit', 'Stop', 'SubagentStop', 'SessionStart'].every((e) => JSON.stringify(parsed.hooks[e] || '').includes('hook ' + e)) &&
     u3.status === 0 && JSON.stringify(JSON.parse(read(h3, '.claude/settings.json'))) === JSON.stringify(JSON.parse(text)) &&
     (!text.includes('"Stop": []') || laid.includes('}]}], "Stop": [')),
    `hooks added to ${name}: valid JSON with all four (put before an event on one line with ", "), and uninstall gives the same JSON back`, laid);
}

// A comment before the first event of a hooks object (Gemini's settings are
// JSON with comments): keel's events go before it, the comment stays once.
{
  const text = '{\n  "hooks": { /* the team\'s */ "Notification": [] }\n}\n';
  const hg = homeWith({ '.gemini/settings.json': text });
  const r = run(hg, 'install', '--client', 'gemini');
  const got = read(hg, '.gemini/settings.json');
  const u = run(hg, 'uninstall', '--client', 'gemini');
  ok(r.status === 0 && got.split("/* the team's */").length === 2 && got.includes('hook BeforeAgent') && u.status === 0 &&
     read(hg, '.gemini/settings.json') === text, 'a comment before the first event of a hooks object stays, once; uninstall gives the file back byte for byte', got);
}
// A comment on its own line before the first member: keel's hooks go after
// it, with no line of blanks where the comment's place was copied.
{
  const text = '{\n  // my settings\n  "theme": "dark",\n  "mcpServers": {"fs": {"command": "npx"}}\n}\n';
  const hg = homeWith({ '.gemini/settings.json': text });
  const r = run(hg, 'install', '--client', 'gemini');
  const got = read(hg, '.gemini/settings.json');
  const u = run(hg, 'uninstall', '--client', 'gemini');
  ok(r.status === 0 && !/\n[ \t]+\n/.test(got) && /\n  },\n  "theme": "dark"/.test(got) && got.includes('// my settings') && u.status === 0 &&
     read(hg, '.gemini/settings.json') === text, 'a comment line before the first member: the hooks go after it with no blank line left, and uninstall gives the file back', got);
}

// The diff printed is the change made: applied to the file as it was, it
// gives the file as keel writes it, for install and uninstall alike, in TOML
// and JSON, whole lines put in and taken out, first and last lines too.
{
  const apply = (text, diff) => {
    const lines = text.split('\n'), out = [];
    let at = 0;
    for (const h of diff.split(/^(?=@@ )/m).slice(1)) {
      const m = /^@@ -(\d+),(\d+) \+\d+,(\d+) @@\n/.exec(h);
      if (!m) return null;
      const from = Math.max(0, Number(m[1]) - (Number(m[2]) ? 1 : 0));
      let olds = Number(m[2]), news = Number(m[3]);
      while (at < from) out.push(lines[at++]);
      for (const l of h.slice(m[0].length).split('\n')) {
        if (!olds && !news) break; /* the hunk's lines are all read: what follows is keel's report */
        if (l.startsWith(' ')) { if (lines[at] !== l.slice(1)) return null; out.push(lines[at++]); olds--; news--; }
        else if (l.startsWith('-')) { if (lines[at] !== l.slice(1)) return null; at++; olds--; }
        else if (l.startsWith('+')) { out.push(l.slice(1)); news--; }
        else return null;
      }
      if (olds || news) return null;
    }
    while (at < lines.length) out.push(lines[at++]);
    return out.join('\n');
  };
  const diffOf = (stdout, file) => {
    const i = stdout.indexOf(`--- a${file}\n`);
    if (i < 0) return '';
    const rest = stdout.slice(i);
    const end = rest.search(/\n(?!(?:[-+ @]))/);
    return end < 0 ? rest : rest.slice(0, end + 1);
  };
  const cases = [
    ['.codex/config.toml', 'codex', 'mcp_servers.a.command = "npx"\nmcp_servers.b = { command = "y", args = ["q"] }\n'],
    ['.codex/config.toml', 'codex', '[mcp_servers.a]\ncommand = "npx"\n'],
    ['.codex/config.toml', 'codex', '[mcp_servers.b]\ncommand = "y"\nenabled = false\n'],
    ['.codex/config.toml', 'codex', '# mine\n[mcp_servers.a]\ncommand = "npx"\n\n[mcp_servers.b]\ncommand = "y"\nargs = ["q"]\n'],
    ['.cursor/mcp.json', 'cursor', '{\n  "mcpServers": {\n    "a": {"command": "x"},\n    "b": {"command": "y", "args": ["q"]}\n  }\n}\n'],
    ['.codex/config.toml', 'codex', `[mcp_servers.fs]\ncommand = "npx"\nargs = ["-y", "@modelcontextprotocol/server-filesystem", ${['alpha', 'beta', 'gamma', 'notes', 'papers'].map((d) => `"/home/me/projects/${d}"`).join(', ')}]\n`],
    ['.claude/settings.json', 'claude-code', '{\n  "$schema": "https://json.schemastore.org/claude-code-settings.json",\n  "permissions": {"allow": ["Bash(ls)"]}\n}\n'],
  ];
  const seen = [];
  for (const [file, client, text] of cases) {
    const h = homeWith({ [file]: text, ...(client === 'claude-code' ? { '.claude.json': '{"mcpServers": {}}\n' } : {}) });
    for (const verb of ['install', 'uninstall']) {
      const before = read(h, file);
      const dry = run(h, verb, '--client', client, '--dry-run');
      const real = run(h, verb, '--client', client);
      const got = apply(before, diffOf(dry.stdout, join(h, file)));
      seen.push({ file, verb, same: got === read(h, file), got, want: read(h, file), diff: diffOf(dry.stdout, join(h, file)) });
    }
  }
  ok(seen.every((x) => x.same) && seen.every((x) => !/^~/m.test(x.diff)), 'the printed diff, applied to the file as it was, gives the file keel writes (install and uninstall, TOML and JSON)', seen.filter((x) => !x.same));
  // a line too long to read whole is shown around the change and marked, so that patch refuses the diff
  const long = `{"mcpServers": {"a": {"command": "x", "args": []}}, "projects": {"/p": {"history": "${'x'.repeat(3000)}"}}}\n`;
  const hl = homeWith({ '.cursor/mcp.json': long });
  const dl = run(hl, 'install', '--client', 'cursor', '--dry-run');
  ok(/^~-\{"mcpServers".*\(a line of \d+ bytes, shown in part\)$/m.test(dl.stdout) && /^~\+/m.test(dl.stdout) && apply(long, diffOf(dl.stdout, join(hl, '.cursor/mcp.json'))) === null,
    'a line over 1,024 bytes is shown in part and marked ~, so the diff cannot be applied as if it were whole', dl.stdout);
}

// CLAUDE_CONFIG_DIR and CODEX_HOME move those clients' files: install and
// uninstall follow them there, and leave the default places alone.
{
  const h = homeWith({ 'cc/.claude.json': '{"mcpServers":{"a":{"command":"x","args":[]}}}\n', 'cc/settings.json': '{}\n',
    'cx/config.toml': '[mcp_servers.a]\ncommand = "x"\n', '.codex/config.toml': '[mcp_servers.stale]\ncommand = "old"\n' });
  const env = { PATH: process.env.PATH, HOME: h, CLAUDE_CONFIG_DIR: join(h, 'cc'), CODEX_HOME: join(h, 'cx') };
  const go = (verb) => spawnSync(keel, [verb, '--client', 'claude-code', '--client', 'codex'], { env, encoding: 'utf8', cwd: h });
  const i = go('install');
  const wrapped = read(h, 'cc/.claude.json').includes('"wrap"') && read(h, 'cx/config.toml').includes('"wrap"') && existsSync(join(h, 'cx/hooks.json'))
    && read(h, 'cc/settings.json').includes('keel') && read(h, '.codex/config.toml') === '[mcp_servers.stale]\ncommand = "old"\n';
  const u = go('uninstall');
  ok(i.status === 0 && u.status === 0 && wrapped && read(h, 'cc/.claude.json') === '{"mcpServers":{"a":{"command":"x","args":[]}}}\n'
     && read(h, 'cx/config.toml') === '[mcp_servers.a]\ncommand = "x"\n' && !existsSync(join(h, 'cx/hooks.json')),
    'CLAUDE_CONFIG_DIR and CODEX_HOME: the files there are wrapped and given back, the default places left alone', i.stdout + i.stderr + u.stderr);
}

// Side files a killed run left beside a file that is not there say nothing
// true: they go, and a file the person makes later is never taken for one
// keel created (uninstall leaves it).
{
  const h = homeWith({ '.claude.json': '{"mcpServers": {}}\n', '.claude/settings.json.keel-created': '', '.claude/settings.json.keel-added': '/hooks\n' });
  const u = run(h, 'uninstall', '--client', 'claude-code');
  const gone = !existsSync(join(h, '.claude/settings.json.keel-created')) && !existsSync(join(h, '.claude/settings.json.keel-added'));
  writeFileSync(join(h, '.claude/settings.json'), '{}\n');
  run(h, 'install', '--client', 'claude-code');
  run(h, 'uninstall', '--client', 'claude-code');
  ok(u.status === 0 && gone && existsSync(join(h, '.claude/settings.json')) && read(h, '.claude/settings.json') === '{}\n',
    'stale side files beside a missing file go; the person\'s file made later is given back as it was, never removed', { u: u.stdout + u.stderr, gone });
}
// The same side files when the person made the file before keel ran again
// (an install killed before it wrote; the person's own hooks file): keel's
// entries they name are not in it, so they say nothing true either.
{
  for (const created of [true, false]) {
    const mine = '{\n  "hooks": {}\n}\n';
    const h = homeWith({ '.codex/config.toml': '[mcp_servers.a]\ncommand = "npx"\n', '.codex/hooks.json': mine,
      '.codex/hooks.json.keel-added': '/hooks/UserPromptSubmit\n/hooks/Stop\n/hooks/SubagentStop\n/hooks/SessionStart\n/hooks\n',
      ...(created ? { '.codex/hooks.json.keel-created': '' } : {}) });
    const i = run(h, 'install', '--client', 'codex');
    const staleGone = !existsSync(join(h, '.codex/hooks.json.keel-created'));   /* the file was the person's before this install */
    const u = run(h, 'uninstall', '--client', 'codex');
    ok(i.status === 0 && u.status === 0 && staleGone && existsSync(join(h, '.codex/hooks.json')) && read(h, '.codex/hooks.json') === mine,
      `stale side files${created ? ' (keel-created too)' : ''} beside the person's own hooks file: install and uninstall give it back as it was, never removed`,
      { i: i.stdout + i.stderr, u: u.stdout + u.stderr, text: existsSync(join(h, '.codex/hooks.json')) ? read(h, '.codex/hooks.json') : null });
  }
}

// keel run by root (sudo) in another user's home: the files it makes there
// (a hooks file, side files, backups) are that user's, so their client can
// read them and their own uninstall change them.
if (process.getuid && process.getuid() === 0) {
  const h = homeWith({ '.codex/config.toml': '[mcp_servers.a]\ncommand = "npx"\n' });
  spawnSync('chown', ['-R', '65534:65534', h]);
  const i = spawnSync(keel, ['install', '--client', 'codex'], { env: { PATH: process.env.PATH, HOME: h, KEEL_STATE_DIR: join(h, '.st') }, encoding: 'utf8', cwd: h });
  const made = readdirSync(join(h, '.codex')).map((f) => [f, lstatSync(join(h, '.codex', f)).uid]);
  ok(i.status === 0 && made.length >= 4 && made.every(([, uid]) => uid === 65534),
    'install run by root in another user\'s home: every file it makes there is that user\'s', { made, err: i.stderr });
  // run as that user: a folder it cannot write, a file of another user, a
  // file of a group it is not in: each said for what it is, with what to do
  const hn = homeWith({ '.codex/config.toml': '[mcp_servers.a]\ncommand = "a"\n', '.codex/hooks.json': '{"hooks":{}}\n', '.cursor/mcp.json': '{"mcpServers":{"a":{"command":"a"}}}\n' });
  spawnSync('chmod', ['755', dirname(hn)]); /* the sandbox this test made: never a directory above it */
  spawnSync('chown', ['-R', '65534:65534', hn]);
  spawnSync('chown', ['0:0', join(hn, '.codex/hooks.json')]);
  spawnSync('chmod', ['555', join(hn, '.cursor')]);
  const asNobody = (...cmd) => spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', ...(cmd.length ? cmd : [keel, 'install'])],
    { env: { PATH: process.env.PATH, HOME: hn, KEEL_STATE_DIR: join(hn, '.st') }, encoding: 'utf8', cwd: '/' });
  if (asNobody('sh', '-c', `test -w "${hn}" && test -x "${keel}"`).status !== 0) { /* a directory above it another user cannot pass */
    skip('a folder keel cannot write and a file of another user are each said for what they are, with what to do', 'another user cannot reach the test\'s directory here');
    skip('a file of a group keel\'s user is not in: said, and left as it is (its group would be lost)', 'another user cannot reach the test\'s directory here');
  } else {
  const n1 = asNobody();
  ok(n1.status === 1 && /\.cursor\/mcp\.json: keel cannot write in its folder .*\.cursor \(Permission denied\), where the backup and the new file go/.test(n1.stderr) &&
     /\.codex\/hooks\.json: the file belongs to another user \(uid 0\).*run keel as that user/.test(n1.stderr),
    'a folder keel cannot write and a file of another user are each said for what they are, with what to do', n1.stderr);
  spawnSync('chown', ['65534:0', join(hn, '.codex/hooks.json')]);
  const n2 = asNobody();
  ok(n2.status === 1 && /\.codex\/hooks\.json has a group you are not in \(gid 0\).*chgrp it/.test(n2.stderr) && read(hn, '.codex/hooks.json') === '{"hooks":{}}\n',
    'a file of a group keel\'s user is not in: said, and left as it is (its group would be lost)', n2.stderr);
  }
  spawnSync('chmod', ['755', join(hn, '.cursor')]);
} else {
  skip('install run by root in another user\'s home: every file it makes there is that user\'s', 'needs root');
  skip('a folder keel cannot write and a file of another user are each said for what they are, with what to do', 'needs root');
  skip('a file of a group keel\'s user is not in: said, and left as it is (its group would be lost)', 'needs root');
}

// The server that kept keel's tools deleted by hand: install says no chat
// has them now, and how to give them back.
{
  const h = homeWith({ '.cursor/mcp.json': '{"mcpServers":{"a":{"command":"x","args":[]},"b":{"command":"y","args":[]}}}\n' });
  run(h, 'install', '--client', 'cursor');
  const cfg = JSON.parse(read(h, '.cursor/mcp.json'));
  delete cfg.mcpServers.a;
  writeFileSync(join(h, '.cursor/mcp.json'), JSON.stringify(cfg));
  const r = run(h, 'install', '--client', 'cursor');
  ok(r.status === 0 && /unchanged/.test(r.stdout) && /every server of cursor that runs through keel has --expose none, so keel's tools are in none of its chats/.test(r.stdout),
    'every wrapped server has --expose none: install says keel\'s tools are in no chat, and what to change', r.stdout);
  const hc = homeWith({ '.claude.json': '{"mcpServers":{"a":{"command":"x","args":[]},"b":{"command":"y","args":[]}}}\n', '.claude/settings.json': '{}\n' });
  run(hc, 'install', '--client', 'claude-code');
  const cc = JSON.parse(read(hc, '.claude.json'));
  delete cc.mcpServers.a;
  writeFileSync(join(hc, '.claude.json'), JSON.stringify(cc));
  const rc = run(hc, 'install', '--client', 'claude-code');
  ok(/every server of claude-code that runs through keel has --expose none/.test(rc.stdout) && !/No MCP server runs through keel/.test(rc.stdout),
    'and it does not also say that no server runs through keel', rc.stdout);
}

// What a run killed midway left beside a file, an hour old: keel's new text
// (never renamed over the file) goes; a backup taken before a change but not
// yet named is named, so it is kept and counted like any other; fresh ones,
// which may be another run's at work, stay as they are.
{
  const h = homeWith({ '.cursor/mcp.json': '{"mcpServers":{"a":{"command":"x","args":[]}}}\n' });
  const old = (Date.now() - 2 * 3600 * 1000) / 1000;
  writeFileSync(join(h, '.cursor/.mcp.json.keel-Ab12Cd'), '{"new": "text"}');
  writeFileSync(join(h, '.cursor/mcp.json.keel-backup-pending-Ef34Gh'), 'the file before a change');
  writeFileSync(join(h, '.cursor/.mcp.json.keel-Zz99Yy'), '{"fresh": 1}');
  writeFileSync(join(h, '.cursor/.mcp.json.keel-added.keel-Qq11Rr'), '/mcpServers\n');
  utimesSync(join(h, '.cursor/.mcp.json.keel-added.keel-Qq11Rr'), old, old);
  utimesSync(join(h, '.cursor/.mcp.json.keel-Ab12Cd'), old, old);
  utimesSync(join(h, '.cursor/mcp.json.keel-backup-pending-Ef34Gh'), old, old);
  const r = run(h, 'install', '--client', 'cursor');
  const left = readdirSync(join(h, '.cursor')).sort();
  const named = left.filter((f) => /^mcp\.json\.keel-backup-\d{8}-\d{6}(-\d+)?$/.test(f));
  ok(r.status === 0 && !left.includes('.mcp.json.keel-Ab12Cd') && !left.includes('.mcp.json.keel-added.keel-Qq11Rr') && !left.some((f) => f.includes('pending')) && left.includes('.mcp.json.keel-Zz99Yy')
     && named.length === 2 && named.some((f) => read(h, `.cursor/${f}`) === 'the file before a change'),
    'an hour-old leftover of a killed run: its new text goes, its unnamed backup is named and kept; a fresh one is left', left);
  // a run that writes nothing tidies too, and names the backup for when it was taken (so it sorts as the oldest)
  writeFileSync(join(h, '.cursor/mcp.json.keel-backup-pending-Ij56Kl'), 'an older file');
  utimesSync(join(h, '.cursor/mcp.json.keel-backup-pending-Ij56Kl'), old, old);
  const again = run(h, 'install', '--client', 'cursor');
  const then = readdirSync(join(h, '.cursor')).filter((f) => /^mcp\.json\.keel-backup-\d{8}-\d{6}(-\d+)?$/.test(f)).sort();
  ok(again.status === 0 && /unchanged/.test(again.stdout) && !readdirSync(join(h, '.cursor')).some((f) => f.includes('pending'))
     && read(h, `.cursor/${then[0]}`) !== undefined && ['the file before a change', 'an older file'].includes(read(h, `.cursor/${then[0]}`)),
    'a run that changes nothing names an hour-old pending backup too, for the time it was taken', then);
  // a backup cut short (a run killed while writing it) was named as if whole
  writeFileSync(join(h, '.cursor/mcp.json.keel-backup-partial-Mn78Op'), '{"mcpServers":{"cut-short');
  utimesSync(join(h, '.cursor/mcp.json.keel-backup-partial-Mn78Op'), old, old);
  const third = run(h, 'install', '--client', 'cursor');
  const after = readdirSync(join(h, '.cursor'));
  ok(third.status === 0 && !after.some((f) => f.includes('partial')) &&
     after.filter((f) => /^mcp\.json\.keel-backup-\d{8}/.test(f)).every((f) => !read(h, `.cursor/${f}`).includes('cut-short')),
    'an hour-old backup cut short by a killed run is removed, never named as a backup', [third.status, third.stderr, after]);
  // and a run's own backup is never left partial
  const fourth = run(h, 'uninstall', '--client', 'cursor');
  ok(fourth.status === 0 && !readdirSync(join(h, '.cursor')).some((f) => /partial|pending/.test(f)), 'a run leaves no partial or pending backup of its own', readdirSync(join(h, '.cursor')));
}
// A reader that leaves after the first line (keel install | head -1): keel
// goes on to every client (it was killed by SIGPIPE after Claude Code's,
// the others left undone without a word), and exits as it would have.
{
  const hp = home();
  const r = spawnSync('bash', ['-c', '"$0" install 2>/dev/null | head -c 1 >/dev/null; exit ${PIPESTATUS[0]}', keel],
    { env: { PATH: process.env.PATH, HOME: hp }, encoding: 'utf8', cwd: hp });
  const hn = home(), plain = run(hn, 'install');   // the same, read to the end
  const wrapped = (x) => Object.values(FILES).filter((f) => /keel/.test(read(x, f))).join();
  ok(r.status === plain.status && wrapped(hp) === wrapped(hn) && wrapped(hp).split(',').length >= 4,
    `keel install | head -c 1: every client is done as when its output is read to the end (${wrapped(hp)}), exit ${r.status} as ${plain.status}`, [wrapped(hp), wrapped(hn)]);
}
// hooks of a shape keel cannot add to: said, with what to do
{
  for (const [text, re] of [['{"hooks": null}', /"hooks" is not an object here, so none of keel's hooks is registered: make it \{\}/],
    ['{"hooks": {"Stop": {}}}', /hooks\.Stop: left alone: it is not a list, so keel's Stop hook is not registered: make it \[\]/]]) {
    const hs = homeWith({ '.claude/settings.json': text, '.claude.json': '{}\n' });
    const r = run(hs, 'install', '--client', 'claude-code');
    ok(r.status === 0 && re.test(r.stdout), `${text}: keel says which hooks it could not register and what to do`, r.stdout);
  }
}
// a file keel created that the person made read-only is refused, as any read-only file is, never deleted
{
  const hr = homeWith({ '.codex/config.toml': '[mcp_servers.a]\ncommand = "a"\n' });
  run(hr, 'install', '--client', 'codex');
  chmodSync(join(hr, '.codex/hooks.json'), 0o444);
  const u = run(hr, 'uninstall', '--client', 'codex');
  ok(u.status === 1 && existsSync(join(hr, '.codex/hooks.json')) && /hooks\.json is read-only \(mode 0444\), so keel left it as it is: make it writable/.test(u.stderr),
    'uninstall leaves a keel-created hooks file the person made read-only, and says what to do', u.stderr);
  chmodSync(join(hr, '.codex/hooks.json'), 0o644);
}
// a server that runs keel already through env or a shell is not wrapped
// again (keel inside keel, its tools twice), and the others then go
// without keel's tools
{
  const text = '{"mcpServers":{"p":{"command":"npx","args":["p"]},"e":{"command":"/usr/bin/env","args":["A=1","keel","wrap","--","r"]},"s":{"command":"sh","args":["-c","exec keel wrap -- r"]},"t":{"command":"env","args":["A=1","node","x.js"]}}}';
  const hk = homeWith({ '.cursor/mcp.json': text });
  const r = run(hk, 'install', '--client', 'cursor');
  const m = JSON.parse(read(hk, '.cursor/mcp.json')).mcpServers;
  ok(r.status === 0 && m.e.command === '/usr/bin/env' && m.s.command === 'sh' && /left alone: e runs keel already, through env/.test(r.stdout) &&
     /left alone: s runs keel already, through sh/.test(r.stdout) && m.p.args.join(' ').startsWith('wrap --expose none --') && m.t.args.includes('env'),
    'a server running keel through env or sh -c is left alone and said; the others are wrapped without keel\'s tools', [r.stdout, m]);
}
done();
