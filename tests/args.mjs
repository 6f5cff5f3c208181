// args.mjs: the server keel wrap runs gets exactly its own command line,
// whatever keel options come before it, in whatever form and position, with
// "--" or without (some clients drop every "--" they pass on).
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { ok, done } from './lib/tap.mjs';
import { keel, root, sandbox } from './lib/keel.mjs';

const box = sandbox({ profile: 'overlay:\n  hyperfocus: true\n' });
const out = join(box.dir, 'argv.json');
const FIX = join(root, 'tests', 'fixtures', 'argv.mjs');
const server = [process.execPath, FIX, 'a b', '--profile', 'x', '--', '-v', '--log-level=debug'];
const want = JSON.stringify(server.slice(2));
const rules = join(root, 'rules');
function wrap(before, after, dashes = true) {
  rmSync(out, { force: true });
  const args = [...before, 'wrap', ...after, ...(dashes ? ['--'] : []), ...server];
  const r = spawnSync(keel, args, { input: '', encoding: 'utf8', env: { ...process.env, ...box.env, ARGV_OUT: out } });
  const got = existsSync(out) ? readFileSync(out, 'utf8') : null;
  return { r, got };
}

// Every option, in each form, before and after the command word where it may
// stand, with "--" and without.
const globals = [
  ['--profile', join(box.dir, 'profile.yaml')], [`--profile=${join(box.dir, 'profile.yaml')}`],
  ['--rules', rules], [`--rules=${rules}`], ['--log-level', 'warn'], ['--log-level=error'],
];
const wrapOpts = [
  ['--env', 'K=V'], ['--env=K=V'], ['--cwd', box.dir], [`--cwd=${box.dir}`], ['--expose', 'guardrail'], ['--expose=none'],
  ['--overlay', 'none'], ['--overlay=hyperfocus'], ['--model-tools', 'ask_*'], ['--model-tools=ask_*'],
  ['--tool-prefix', 'k_'], ['--tool-prefix=k_'], ['--restart'], ['--restart=0'], ['--max-message-bytes', '1M'],
  ['--max-message-bytes=2M'],
];
let bad = [];
let count = 0;
for (const dashes of [true, false]) {
  for (const g of globals) {
    for (const [before, after] of [[g, []], [[], g]]) {
      const { r, got } = wrap(before, after, dashes);
      count++;
      if (got !== want) bad.push({ args: [...before, 'wrap', ...after, dashes ? '--' : ''], got, stderr: r.stderr.slice(0, 300) });
    }
  }
  for (const o of wrapOpts) {
    const { r, got } = wrap([], o, dashes);
    count++;
    if (got !== want) bad.push({ args: ['wrap', ...o, dashes ? '--' : ''], got, stderr: r.stderr.slice(0, 300) });
  }
}
ok(bad.length === 0, `the server gets exactly its command line after each of ${count} option placements`, bad.slice(0, 3));

// Several options at once, globals on both sides.
bad = [];
for (const dashes of [true, false]) {
  const { r, got } = wrap(['--log-level', 'warn', '--rules', rules], ['--profile', join(box.dir, 'profile.yaml'), '--log-level=error',
    '--env', 'A=1', '--expose', 'none', '--restart'], dashes);
  if (got !== want) bad.push({ dashes, got, stderr: r.stderr });
}
ok(bad.length === 0, 'many options on both sides of wrap: the server still gets exactly its own', bad);

// --command-args is one way to give the command; a second one is refused.
let r = spawnSync(keel, ['wrap', '--command-args', `${process.execPath} ${FIX} 'a b' c`], { input: '', encoding: 'utf8', env: { ...process.env, ...box.env, ARGV_OUT: out } });
ok(readFileSync(out, 'utf8') === '["a b","c"]', '--command-args splits with quotes, no shell', r.stderr);
for (const tail of [['--', 'true'], ['true']]) {
  rmSync(out, { force: true });
  r = spawnSync(keel, ['wrap', '--command-args', `${process.execPath} ${FIX}`, ...tail], { input: '', encoding: 'utf8', env: { ...process.env, ...box.env, ARGV_OUT: out } });
  ok(r.status === 64 && /command once/.test(r.stderr) && !existsSync(out), `--command-args and a command after it (${tail.join(' ')}): refused, nothing runs`, r.stderr);
}
r = spawnSync(keel, ['wrap', '--bogus', 'x'], { input: '', encoding: 'utf8' });
ok(r.status === 64 && /unknown option for wrap: --bogus/.test(r.stderr), 'an unknown option before the command: 64, named');
r = spawnSync(keel, ['wrap', '--env'], { input: '', encoding: 'utf8' });
ok(r.status === 64 && /--env needs NAME=VALUE/.test(r.stderr), 'an option missing its value: 64, says what it needs');
r = spawnSync(keel, ['wrap', '--'], { input: '', encoding: 'utf8' });
ok(r.status === 64 && /command after --/.test(r.stderr), 'nothing after --: 64');
r = spawnSync(keel, ['wrap'], { input: '', encoding: 'utf8' });
ok(r.status === 64 && /needs the server's command/.test(r.stderr), 'no command at all: 64');
for (const p of ['bad prefix!', 'k/', 'x'.repeat(33)]) {
  r = spawnSync(keel, ['wrap', '--tool-prefix', p, '--', 'true'], { input: '', encoding: 'utf8' });
  ok(r.status === 64 && /--tool-prefix needs a prefix of 1 to 32 letters, digits, _, - or \./.test(r.stderr),
    `--tool-prefix ${JSON.stringify(p.slice(0, 12))}: 64, a tool's name could not hold it`, r.stderr);
}
rmSync(box.dir, { recursive: true, force: true });
done();
