// cli.mjs: the command line as a person uses it: help, exit codes, errors
// that say what to do.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ok, done } from './lib/tap.mjs';
import { keel, root, sandbox, Proc } from './lib/keel.mjs';

function run(args, input, env = {}) {
  return spawnSync(keel, args, { input: input ?? '', encoding: 'utf8', env: { ...process.env, ...env } });
}
let r = run(['--help']);
ok(r.status === 0 && /usage: keel COMMAND/.test(r.stdout) && /serve/.test(r.stdout) && /check/.test(r.stdout), 'keel --help: usage on stdout, exit 0');
r = run(['--version']);
ok(r.status === 0 && /^keel \d+\.\d+\.\d+\n$/.test(r.stdout), 'keel --version', r.stdout);
r = run([]);
ok(r.status === 64 && /usage:/.test(r.stderr), 'keel with no command: usage, exit 64');
r = run(['frobnicate']);
ok(r.status === 64 && /unknown command: frobnicate/.test(r.stderr), 'unknown command: exit 64 and says so');
r = run(['check', '--help']);
ok(r.status === 0 && /keel check TOOL/.test(r.stdout), 'keel check --help');
r = run(['help', 'serve']);
ok(r.status === 0 && /--max-message-bytes/.test(r.stdout), 'keel help serve');
for (const [what, re] of [['eval', /keel eval/], ['tools', /keel tools/], ['wrap', /keel wrap/], ['inspect', /keel inspect/], ['rules', /keel rules/], ['profile', /keel profile/]]) {
  r = run(['help', what]);
  ok(r.status === 0 && re.test(r.stdout), `keel help ${what}: its own usage`, r.stdout.slice(0, 80));
}
r = run(['eval', '--sessions', '--misses', 'tests/sessions']);
ok(r.status === 64 && /--sessions needs the sessions directory/.test(r.stderr), 'eval --sessions followed by another option: 64, says it needs the directory', r.stderr);
r = run(['help', 'nosuch']);
ok(r.status === 64 && /no help for nosuch/.test(r.stderr) && r.stdout === '', 'keel help nosuch: exit 64 and names the commands', r.stderr);
r = run(['tools', '--help']);
ok(r.status === 0 && /usage: keel tools/.test(r.stdout), 'keel tools --help');
r = run(['rules', 'check', '--help']);
ok(r.status === 0 && /usage: keel rules/.test(r.stdout) && r.stderr === '', 'keel rules check --help prints the usage, not "no such file"', r.stderr);
r = run(['check', 'check_sycophancy', '--json', '{"candidate_response":"Fine."}']);
ok(r.status === 0 && r.stderr === '', 'keel check writes nothing on stderr by default (its log level is warn)', r.stderr);
r = run(['--log-level=info', 'check', 'check_sycophancy', '--json={"candidate_response":"Fine."}']);
ok(r.status === 0 && /tool_invoked/.test(r.stderr), '--log-level=info and --json=ARGS: the = forms work', r.stderr);
r = run(['serve', '--max-message-bytes=2M'], '');
ok(r.status === 0, 'serve --max-message-bytes=2M');
r = run(['tools']);
ok(r.status === 0 && r.stdout.split('\n').filter(Boolean).length === 14 && /check_rumination/.test(r.stdout) && /idle_status/.test(r.stdout), 'keel tools lists the tools', r.stdout);
r = run(['check']);
ok(r.status === 64 && /needs a TOOL/.test(r.stderr), 'check without a tool: 64');
r = run(['check', 'nope']);
ok(r.status === 64 && /no tool named nope/.test(r.stderr), 'check with an unknown tool: 64');
r = run(['check', 'check_sycophancy'], '{not json');
ok(r.status === 64 && /JSON object/.test(r.stderr) && r.stdout === '', 'check with bad JSON: 64, nothing on stdout');
r = run(['check', 'check_sycophancy', '--json', '{"candidate_response":"ok"} junk']);
ok(r.status === 64 && r.stdout === '', 'check with trailing garbage after the JSON: 64');
r = run(['check', 'self_inspect'], '{"thought":"x"}\u0000{"bogus":1}');
ok(r.status === 64 && /NUL byte/.test(r.stderr) && r.stdout === '', 'check with a NUL byte on stdin: 64 and says so, not the object before it alone', r.stderr);
r = run(['check', 'self_inspect'], ' '.repeat((16 << 20) + 1));
ok(r.status === 64 && /over 16 MiB, the most keel check reads/.test(r.stderr) && r.stdout === '',
  'check with more than 16 MiB on stdin: 64, and the limit said', r.stderr);
r = run(['check', 'check_sycophancy'], '[1,2]');
ok(r.status === 64, 'check with a JSON array: 64');
r = run(['check', 'mark_session_start', '--json', '{"intent":"x"}'], '', { ...sandbox().env, KEEL_STATE_DIR: 'rel/dir' });
ok(r.status === 2 && JSON.parse(r.stdout).error.code === 'STATE_UNWRITABLE' && /KEEL_STATE_DIR is not an absolute path/.test(r.stdout),
  'a relative KEEL_STATE_DIR is an error that says so, never the default state file in its place', r.stdout);
r = run(['wrap', '--url', 'http://[::1'], '');
ok(r.status === 64 && /--url is not a URL keel can read/.test(r.stderr), 'wrap --url with a URL that does not parse: 64, as a wrong scheme is', r.stderr);
r = run(['check', 'check_sycophancy', '--json', '{"candidate_response":"Great question!"}']);
ok(r.status === 0 && JSON.parse(r.stdout).pattern === 'praise_without_evidence', 'check --json ARGS', r.stdout);
r = run(['check', 'check_sycophancy', '--json', '{"candidate_response":"Great question!"}', '--json={"candidate_response":"ok"}']);
ok(r.status === 64 && /--json given twice/.test(r.stderr) && r.stdout === '', 'check with --json twice: 64, not the last one alone', r.stderr);
r = run(['check', 'submit_message', '--json', '{"message":"Should I run the tests?"}']);
ok(r.status === 0 && JSON.parse(r.stdout).pending === true && /only inside one keel process \(keel serve or keel wrap\)/.test(r.stderr),
  'check submit_message held for a justification: stderr says the wait ends with this process', r.stderr);
r = run(['check', 'check_sycophancy', '--json', '{"candidate_response":"ok"}', '--pretty']);
ok(r.status === 0 && r.stdout.includes('\n\t"detected"'), 'check --pretty indents');
r = run(['check', 'check_sycophancy'], '');
ok(r.status === 2 && JSON.parse(r.stdout).error.code === 'INPUT_MISSING', 'empty stdin means no arguments: tool error, exit 2', r.stdout);
r = run(['check', 'check_rumination'], '{"current_prompt":"x","history":[]}', { KEEL_NOW: 'not a time' });
ok(r.status === 2 && JSON.parse(r.stdout).error.code === 'INTERNAL_CLOCK_UNAVAILABLE', 'an unreadable clock is INTERNAL_CLOCK_UNAVAILABLE, never a silent default', r.stdout);
r = run(['serve', '--max-message-bytes', 'lots']);
ok(r.status === 64 && /--max-message-bytes/.test(r.stderr), 'serve with a bad size: 64');
for (const args of [['--profile'], ['serve', '--profile'], ['check', '--profile'], ['tools', '--rules'], ['--log-level'], ['hook', '--log-level']]) {
  r = run(args);
  ok(r.status === 64 && /keel: --(profile|rules|log-level) (needs|takes)/.test(r.stderr), `keel ${args.join(' ')} with no value: 64 and what it takes, never a crash`, `${r.status} ${r.signal} ${r.stderr}`);
}
{
  const sb = sandbox().env;
  for (const args of [['pins', 'forget', '-h'], ['pins', 'approve', '-h', '--all'], ['pins', 'diff', '--help'], ['pins', 'list', '--help'], ['profile', 'check', '--help'], ['help', '--help']]) {
    r = run(args, '', sb);
    ok(r.status === 0 && /usage: keel/.test(r.stdout) && r.stderr === '', `keel ${args.join(' ')}: the usage, exit 0, nothing forgotten or approved`, `${r.status} ${r.stderr}`);
  }
  r = run(['pins', 'forget', '-x'], '', sb);
  ok(r.status === 64 && /'-x' is no option of keel pins/.test(r.stderr), 'keel pins forget -x: an option is no server name: 64', r.stderr);
  for (const args of [['--help'], ['help', 'serve'], ['tools'], ['profile', 'check'], ['rules', 'prompt']]) {
    r = spawnSync('sh', ['-c', '"$0" "$@" >/dev/full', keel, ...args], { encoding: 'utf8', env: { ...process.env, ...sb } });
    ok(r.status === 1 && /keel: cannot write to standard output: No space left on device/.test(r.stderr), `keel ${args.join(' ')} >/dev/full: exit 1 and says so`, `${r.status} ${r.stderr}`);
  }
}
{
  const d = sandbox().dir, floors = join(d, 'floors.txt');
  writeFileSync(floors, 'rumination 0.5 0.1 0.5\nsycophancy 0.5 0.1 0.5\ngap 0.9\nrumnation 0.99 0.99 0.0\n');
  r = run(['eval', '--floors', floors, join(root, 'tests/corpus')]);
  ok(r.status === 64 && /line 4: not a floor/.test(r.stderr), 'eval --floors with a misspelt line: 64 and the line, never ignored', r.stderr);
  r = run(['eval', '--floors', join(d, 'none.txt'), join(root, 'tests/corpus')]);
  ok(r.status === 64 && /none\.txt: No such file/.test(r.stderr), 'eval --floors with no such file: 64, never the targets in its place', r.stderr);
  mkdirSync(join(d, 'tr/dev'), { recursive: true });
  mkdirSync(join(d, 'tr/test'), { recursive: true });
  writeFileSync(join(d, 'tr/dev/a.jsonl'), 'x\n');
  writeFileSync(join(d, 'tr/test/b.jsonl'), '{}\n');
  r = run(['eval', '--traces', join(d, 'tr')]);
  ok(r.status === 64 && /not JSON/.test(r.stderr) && /no labelled call/.test(r.stderr), 'eval --traces with no usable call: 64, never a pass on 0 of 0', r.stderr);
  const c = join(d, 'c'), lines = (f) => readFileSync(join(root, 'tests/corpus', f), 'utf8').split('\n').filter(Boolean);
  mkdirSync(c);
  const rum = lines('rumination.jsonl'), syc = lines('sycophancy.jsonl');
  const pick = (l) => [l[0], ...l.filter((x) => x.includes('"split": "test"')).slice(0, 2)];
  const good = () => {
    writeFileSync(join(c, 'rumination.jsonl'), pick(rum).join('\n') + '\n');
    writeFileSync(join(c, 'sycophancy.jsonl'), pick(syc).join('\n') + '\n');
  };
  good();
  writeFileSync(join(c, 'hyperfocus.jsonl'), '');
  r = run(['eval', c]);
  ok(r.status !== 64, 'eval on a small sound corpus scores it', r.stderr);
  writeFileSync(join(c, 'rumination.jsonl'), pick(rum).map((x, i) => i ? x : x.replace(/"label": "[a-z_]+"/, '"label": "bogus"')).join('\n') + '\n');
  r = run(['eval', c]);
  ok(r.status === 64 && /example rum-001: its "label" is neither/.test(r.stderr), 'eval: a label of no known kind is named, never a true negative', r.stderr);
  good();
  writeFileSync(join(c, 'sycophancy.jsonl'), pick(syc).map((x, i) => i ? x : x.replace(/"expected": "[a-z_]+"/, '"expected": "flattery"')).join('\n') + '\n');
  r = run(['eval', c]);
  ok(r.status === 64 && /its "expected" is none or no pattern/.test(r.stderr), 'eval: an expected pattern of no known name is named', r.stderr);
  good();
  writeFileSync(join(c, 'rumination.jsonl'), pick(rum).map((x, i) => i ? x : x.replace(/"now": "[^"]+"/, '"now": "2000-01-01T00:00:00Z"')).join('\n') + '\n');
  r = run(['eval', c]);
  ok(r.status === 64 && /example rum-001: check_rumination refused its arguments \(HISTORY_OUT_OF_ORDER\)/.test(r.stderr), 'eval: an example the tool refuses is named with its code, never a miss', r.stderr);
}
r = run(['check', 'mark_session_start', '--json', '{"intent":"a","intent":"b"}'], '', sandbox().env);
ok(r.status === 2 && JSON.parse(r.stdout).error.code === 'INPUT_INVALID' && /given twice/.test(r.stdout), 'check with a member given twice: INPUT_INVALID, as keel serve refuses it', r.stdout);
r = run(['check', 'check_hyperfocus', '--json', '{"chronometric_snapshot":{"now":"2026-03-01T10:00:00+01:00","open_session":{"started_at":"2026-03-01T09:00:00+01:00","elapsed_seconds":9007199254740991}}}']);
ok(r.status === 0 && r.stdout.includes('"elapsed_seconds":9007199254740991,'), 'check_hyperfocus gives the largest elapsed_seconds it takes back exactly, as an integer', r.stdout);
for (const tz of ['Europe', '/tmp', '/etc/passwd']) {
  r = run(['check', 'get_time_context'], '', { ...sandbox().env, KEEL_NOW: '2026-01-01T12:00:00Z', TZ: tz });
  ok(r.status === 2 && JSON.parse(r.stdout).error.code === 'INTERNAL_CLOCK_UNAVAILABLE', `TZ=${tz}, no zone file: INTERNAL_CLOCK_UNAVAILABLE, never UTC in silence`, r.stdout);
}
{
  const sb = sandbox(), fifo = join(sb.dir, 'now.fifo');
  spawnSync('mkfifo', [fifo]);
  r = spawnSync(keel, ['hook', 'SessionStart'], { input: '{"session_id":"s","hook_event_name":"SessionStart"}', encoding: 'utf8', timeout: 8000, env: { ...process.env, ...sb.env, KEEL_NOW_FILE: fifo } });
  ok(r.status === 0 && /hook_clock_unavailable/.test(r.stderr), 'KEEL_NOW_FILE naming a FIFO: the hook ends at once with a warning, never waits on it', `${r.status} ${r.signal} ${r.stderr}`);
}
{
  // get_time_context while another process holds the state lock: the file as it stands, never "no session"
  const sb = sandbox();
  run(['check', 'mark_session_start', '--json', '{"intent":"x"}'], '', sb.env);
  const holder = spawn('flock', [join(sb.env.KEEL_STATE_DIR, 'state.lock'), 'sleep', '9']);
  await new Promise((res) => setTimeout(res, 400));
  r = run(['check', 'get_time_context'], '', sb.env);
  holder.kill();
  const o = JSON.parse(r.stdout);
  ok(r.status === 0 && o.session_open === true && /STATE_BUSY: the state file was read as it stands/.test(o.warnings?.[0] || ''),
    'get_time_context while the state lock is held: the open session is read from the file as it stands, with a warning', r.stdout);
}
{
  // a profile's key given twice, a second document, a rules dir that is none; a rule's active that is no boolean
  const d = sandbox().dir, f = (name, text) => { writeFileSync(join(d, name), text); return join(d, name); };
  for (const [text, re] of [['chronometric: {end_of_day_local: "18:00"}\nchronometric: {end_of_day_local: "19:00"}\n', /line 2: profile\.chronometric is given twice \(first on line 1\); the first holds/],
    ['chronometric: {}\n---\nfoo: 1\n', /line 3: the profile holds a second YAML document, which keel does not read/],
    ['rules: {dirs: [/nonexistent-rules]}\n', /rules\.dirs: \/nonexistent-rules is not a directory keel can read/]]) {
    r = run(['--profile', f('p.yaml', text), 'profile', 'check']);
    ok(r.status === 1 && re.test(r.stderr), `profile check names ${re.source.slice(0, 40)}...: exit 1`, r.stderr);
  }
  r = run(['--profile', f('p.yaml', 'chronometric: {end_of_day_local: "18:00"}\nchronometric: {end_of_day_local: "19:00"}\n'), 'profile', 'check']);
  ok(JSON.parse(r.stdout).chronometric.end_of_day_local === '18:00', 'a profile key given twice: the first holds, as in a rule file', r.stdout);
  mkdirSync(join(d, 'r'));
  f('r/x.yml', 'rules: [{name: a, active: nope, patterns: [zzw], action: reject, guidance: g, examples: {fires: [zzw], passes: [y]}}]\n');
  r = run(['--rules', join(d, 'r'), 'rules', 'lint']);
  ok(r.status === 1 && /x\.yml:1: active must be true or false; this rule is left out until it is/.test(r.stdout + r.stderr), 'a rule whose active is no boolean: named by rules lint, and left out as it says', r.stdout + r.stderr);
  for (const v of ['True', '1', '~', 'YES']) {
    f('r/x.yml', `rules: [{name: a, active: ${v}, patterns: [zzw], action: reject, guidance: g, examples: {fires: [zzw], passes: [y]}}]\n`);
    r = run(['--rules', join(d, 'r'), 'check', 'submit_message', '--json', '{"message":"zzw"}'], '', sandbox().env);
    ok(JSON.parse(r.stdout).verdict === 'rejected', `active: ${v} is YAML's true: the rule is active`, r.stdout);
  }
}
r = run(['check', 'submit_message', '--json', '{"message":"Great question! I will now run the tests."}'], '', sandbox().env);
ok(r.status === 0 && JSON.stringify(JSON.parse(r.stdout).violations?.[0]?.spans) === '[{"start":16,"end":26,"text":"I will now"}]',
  'a rejected span after a rewrite points into the message as submitted (16 to 26), not into the rewritten text', r.stdout);
{
  // a match wholly inside text a rewrite put in: the span of what it replaced, once
  const d = sandbox().dir;
  mkdirSync(join(d, 'rr'));
  writeFileSync(join(d, 'rr/x.yml'), "rules:\n  - {name: shout-fix, patterns: ['foo'], action: rewrite, replacement: 'BANG BANG', guidance: g, examples: {fires: [foo], passes: [bar]}}\n" +
    "  - {name: no-bang, patterns: ['BANG'], action: reject, guidance: g, examples: {fires: [BANG], passes: [bar]}}\n");
  r = run(['--rules', join(d, 'rr'), 'check', 'submit_message', '--json', '{"message":"say foo then"}'], '', sandbox().env);
  ok(JSON.stringify(JSON.parse(r.stdout).violations?.[0]?.spans) === '[{"start":4,"end":7,"text":"foo"}]',
    'a match inside a replacement: one span, of the text it replaced (4 to 7), never an empty one', r.stdout);
}
{
  // review of today's eval and profile changes: a long comment in floors, a blank trace line, a bad hyperfocus example, a trailing ---
  const d = sandbox().dir;
  writeFileSync(join(d, 'fl.txt'), `# ${'x'.repeat(300)} note\n` + readFileSync(join(root, 'tests/corpus/regression-floors.txt'), 'utf8'));
  r = run(['eval', '--floors', join(d, 'fl.txt'), join(root, 'tests/corpus')]);
  ok(r.status === 0, 'a floors comment longer than a line buffer is a comment', r.stderr);
  for (const sp of ['dev', 'test']) {
    mkdirSync(join(d, 't', sp), { recursive: true });
    for (const f of readdirSync(join(root, 'tests/traces', sp)))
      writeFileSync(join(d, 't', sp, f), readFileSync(join(root, 'tests/traces', sp, f), 'utf8') + '\n');
  }
  r = run(['eval', '--traces', join(d, 't')]);
  ok(r.status === 0, 'a blank line in a trace file is passed over, as in the corpus files', r.stderr);
  mkdirSync(join(d, 'c'));
  for (const f of ['rumination.jsonl', 'sycophancy.jsonl']) writeFileSync(join(d, 'c', f), readFileSync(join(root, 'tests/corpus', f)));
  const hyp = readFileSync(join(root, 'tests/corpus/hyperfocus.jsonl'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
  hyp[0].args = { bogus: 1 };
  writeFileSync(join(d, 'c', 'hyperfocus.jsonl'), hyp.map((x) => JSON.stringify(x)).join('\n') + '\n');
  r = run(['eval', join(d, 'c')]);
  ok(r.status === 64 && new RegExp(`example ${hyp[0].id}: check_hyperfocus refused its arguments`).test(r.stderr), 'a hyperfocus example its tool refuses is named, as the others are', r.stderr);
  writeFileSync(join(d, 'p.yaml'), 'guardrails:\n  rumination:\n    window_minutes: 100\n---\n');
  r = run(['--profile', join(d, 'p.yaml'), 'profile', 'check']);
  ok(r.status === 0, 'a profile ending in a bare --- holds no second document', r.stderr);
}
for (const args of [['--overlay='], ['--expose='], ['--loop-exempt', '--'], ['--model-tools', '--']]) {
  r = run(['wrap', ...args, '--', 'true']);
  ok(r.status === 64 && /takes a comma-separated list|needs a/.test(r.stderr), `wrap ${args.join(' ')}: an empty value is a usage error, never the guardrails off in silence`, r.stderr);
}
{
  // a tools/call of keel's own tool sent without an id never reaches the server
  const srv = "process.stdin.on('data', (d) => process.stderr.write('SERVER GOT ' + d))";
  const lines = ['{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}',
    '{"jsonrpc":"2.0","method":"tools/call","params":{"name":"apply_override","arguments":{"token":"fresh-context","detector":"loop"}}}'];
  r = spawnSync(keel, ['wrap', '--', process.execPath, '-e', srv], { input: lines.join('\n') + '\n', encoding: 'utf8', timeout: 8000, env: { ...process.env, ...sandbox().env } });
  ok(/SERVER GOT .*initialize/.test(r.stderr) && !r.stderr.includes('"apply_override"'), 'a tools/call of keel\'s own tool without an id is keel\'s: never forwarded to the server', r.stderr);
}
{
  // fresh-context forgets the calls of its own second too (its time is kept in whole seconds)
  const srv = `require('readline').createInterface({ input: process.stdin }).on('line', (l) => { const m = JSON.parse(l); if (m.id === undefined) return;
    const r = m.method === 'initialize' ? { protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 's', version: '1' } }
      : m.method === 'tools/list' ? { tools: [{ name: 'const', inputSchema: { type: 'object' } }] } : { content: [{ type: 'text', text: 'constant' }] };
    process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: r }) + '\\n'); })`;
  const c = (id) => `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"const","arguments":{}}}`;
  const k = new Proc(['wrap', '--', process.execPath, '-e', srv], { KEEL_NOW: '2026-11-30T10:00:00Z' });
  const out = [];
  out.push(await k.ask(JSON.parse('{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}')));
  for (const id of [1, 2, 3, 4]) out.push(await k.ask(JSON.parse(c(id))));
  out.push(await k.ask({ jsonrpc: '2.0', id: 50, method: 'tools/call', params: { name: 'apply_override', arguments: { token: 'fresh-context', detector: 'loop' } } }));
  for (const id of [5, 6, 7]) out.push(await k.ask(JSON.parse(c(id))));
  await k.close();
  const loopOn = (id) => (out.find((m) => m.id === id)?.result?._meta?.['keel/advisories'] || []).some((a) => a.detector === 'loop');
  ok(loopOn(4) && !loopOn(5) && !loopOn(6) && !loopOn(7), 'fresh-context in the same second as the calls before it: they are forgotten, and three calls after it advise nothing', out.map((m) => [m.id, loopOn(m.id)]));
}
{
  // a result whose _meta already holds "keel/advisories": keel's value takes its place, one member
  const srv = `require('readline').createInterface({ input: process.stdin }).on('line', (l) => { const m = JSON.parse(l); if (m.id === undefined) return;
    const r = m.method === 'initialize' ? { protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 's', version: '1' } }
      : { content: [{ type: 'text', text: 'x' }], _meta: { a: 1, 'keel/advisories': [] } };
    process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: r }) + '\\n'); })`;
  const k = new Proc(['wrap', '--', process.execPath, '-e', srv]);
  await k.ask(JSON.parse('{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}'));
  let raw = '';
  for (const id of [1, 2, 3, 4]) { k.send({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'const', arguments: {} } }); raw = await k.next(); }
  await k.close();
  const m = JSON.parse(raw);
  ok(raw.split('"keel/advisories"').length === 2 && m.result._meta['keel/advisories'].some((a) => a.detector === 'loop') && m.result._meta.a === 1,
    'a server\'s own "keel/advisories" in _meta: keel\'s advisories take its place, one member, the rest of _meta kept', raw.slice(0, 300));
}
{
  // a server that lists apply_override and keel_apply_override: keel's takes the prefix again; every name is one
  const srv = `require('readline').createInterface({ input: process.stdin }).on('line', (l) => { const m = JSON.parse(l); if (m.id === undefined) return;
    const r = m.method === 'initialize' ? { protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 's', version: '1' } }
      : m.method === 'tools/list' ? { tools: ['apply_override', 'keel_apply_override'].map((name) => ({ name, inputSchema: { type: 'object' } })) }
      : { content: [{ type: 'text', text: 'server:' + m.params.name }] };
    process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: r }) + '\\n'); })`;
  const k = new Proc(['wrap', '--', process.execPath, '-e', srv]);
  await k.ask(JSON.parse('{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}'));
  const names = (await k.ask({ jsonrpc: '2.0', id: 1, method: 'tools/list' })).result.tools.map((t) => t.name);
  const c = await k.ask({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'keel_apply_override', arguments: {} } });
  await k.close();
  ok(new Set(names).size === names.length && names.includes('keel_keel_apply_override') && c.result?.content?.[0]?.text === 'server:keel_apply_override',
    'keel\'s renamed tool never takes a name the server lists: every name is one, and the server\'s keel_apply_override stays the server\'s', [names, c]);
}
{
  // a server with no tools answers tools/list "method not found": keel's tools are the list (its initialize said there are tools)
  const srv = `require('readline').createInterface({ input: process.stdin }).on('line', (l) => { const m = JSON.parse(l); if (m.id === undefined) return;
    const r = m.method === 'initialize' ? { result: { protocolVersion: '2025-06-18', capabilities: { resources: {} }, serverInfo: { name: 'r', version: '1' } } }
      : { error: { code: -32601, message: 'Method not found' } };
    process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: m.id, ...r }) + '\\n'); })`;
  const k = new Proc(['wrap', '--', process.execPath, '-e', srv]);
  const init = await k.ask(JSON.parse('{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}'));
  const l = await k.ask({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
  await k.close();
  ok(init.result.capabilities.tools && l.result?.tools?.some((t) => t.name === 'apply_override'), 'a server with no tools: tools/list answers keel\'s own, as its initialize said there are tools', l);
}
r = run(['serve', '--bogus']);
ok(r.status === 64 && /unknown option/.test(r.stderr), 'serve with an unknown option: 64');
r = run(['--log-level', 'loud', 'serve']);
ok(r.status === 64, 'a bad --log-level: 64');
r = run(['serve'], '');
ok(r.status === 0, 'serve with empty stdin exits 0');

// keel profile check
const box = sandbox();
r = run(['--profile', join(root, 'examples', 'profile.yaml'), 'profile', 'check']);
ok(r.status === 0 && JSON.parse(r.stdout).chronometric.end_of_day_local === '18:00' && r.stderr === '', 'the example profile checks clean', r.stderr);
const bad = join(box.dir, 'bad.yaml');
writeFileSync(bad, 'chronometric:\n  end_of_day: "18:00"\n  zones:\n    lunch: "12:00-13:00"\nprivacy:\n  os_idle_consent: maybe\nguardrails:\n  rumination:\n    window_minutes: 0\nextra: 1\n');
// one ladder in effect: escalation_thresholds win over hyperfocus_break_minutes, which alone gives B*2/3, B, B*4/3
const ladder = (yaml) => {
  const f = join(box.dir, `ladder-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(f, yaml);
  const out = run(['--profile', f, 'profile', 'check']);
  try { return Object.values(JSON.parse(out.stdout).guardrails.hyperfocus.escalation_thresholds).join('/'); } catch { return out.stderr; }
};
ok(ladder('chronometric:\n  hyperfocus_break_minutes: 30\n') === '20/30/40'
  && ladder('chronometric:\n  hyperfocus_break_minutes: 90\nguardrails:\n  hyperfocus:\n    escalation_thresholds: {gentle: 45, nudge: 50, hard: 55}\n') === '45/50/55',
  'profile check prints the ladder in effect: hyperfocus_break_minutes alone, or escalation_thresholds over it');
ok(ladder('chronometric:\n  hyperfocus_break_minutes: 30\nguardrails:\n  hyperfocus:\n    escalation_thresholds: {gentle: 25}\n') === '25/30/40'
  && ladder('chronometric:\n  hyperfocus_break_minutes: 30\nguardrails:\n  hyperfocus:\n    escalation_thresholds: {nudge: 35}\n') === '20/35/40'
  && ladder('chronometric:\n  hyperfocus_break_minutes: 30\nguardrails:\n  hyperfocus:\n    escalation_thresholds: {hard: 50}\n') === '20/30/50',
  'a rung escalation_thresholds leaves out comes from hyperfocus_break_minutes, as check_hyperfocus takes them');
{
  const f = join(box.dir, 'ladder-bad.yaml');
  writeFileSync(f, 'chronometric:\n  hyperfocus_break_minutes: 30\nguardrails:\n  hyperfocus:\n    escalation_thresholds: {gentle: 50, nudge: 40}\n');
  const out = run(['--profile', f, 'profile', 'check']);
  let got = '';
  try { got = Object.values(JSON.parse(out.stdout).guardrails.hyperfocus.escalation_thresholds).join('/'); } catch { got = out.stdout; }
  ok(got === '20/30/40' && /strictly ascending; using 20\/30\/40/.test(out.stderr),
    'a ladder that is not ascending falls back to hyperfocus_break_minutes\'s, and says so', { got, err: out.stderr });
}
r = run(['profile', 'check', '--profile', bad]);
ok(r.status === 1 && /line 2: unknown key chronometric.end_of_day/.test(r.stderr) && /line 4: unknown key chronometric.zones.lunch/.test(r.stderr)
  && /line 6: privacy.os_idle_consent must be true or false/.test(r.stderr) && /line 9: guardrails.rumination.window_minutes must be/.test(r.stderr)
  && /line 10: unknown key extra/.test(r.stderr), 'profile check names each problem with its line, exit 1', r.stderr);
ok(JSON.parse(r.stdout).guardrails.rumination.window_minutes === 150, 'a bad value keeps its default (150 minutes)');
writeFileSync(bad, 'guardrails:\n  rumination:\n    plea_threshold_count: 1\n');
r = run(['profile', 'check', '--profile', bad]);
ok(r.status === 1 && /line 3: guardrails.rumination.plea_threshold_count must be/.test(r.stderr) &&
  JSON.parse(r.stdout).guardrails.rumination.plea_threshold_count === 2, 'plea_threshold_count under 2: named with its line, the default (2) kept', r);
writeFileSync(bad, 'guardrails:\n  rumination:\n    plea_threshold_count: 3\n');
r = run(['profile', 'check', '--profile', bad]);
ok(r.status === 0 && JSON.parse(r.stdout).guardrails.rumination.plea_threshold_count === 3, 'plea_threshold_count 3: taken', r);
writeFileSync(bad, 'chronometric: [\n');
r = run(['profile', 'check', '--profile', bad]);
ok(r.status === 1 && /not valid YAML at line/.test(r.stderr), 'an unparseable profile: exit 1 and why', r.stderr);
r = run(['profile', 'check'], '', { KEEL_PROFILE: join(box.dir, 'none.yaml') });
ok(r.status === 0 && /no profile at/.test(r.stderr) && JSON.parse(r.stdout).found === false, 'no profile: defaults, exit 0', r.stderr);
// A profile named but not there, or with problems: every command says so on
// stderr (once, with what to run) and answers with the defaults.
r = run(['--profile', join(box.dir, 'none.yaml'), 'check', 'get_time_context', '--json', '{}']);
ok(r.status === 0 && /warn profile_missing what_to_do="keel profile check/.test(r.stderr) && JSON.parse(r.stdout).now,
  'keel check with --profile naming no file: answered with the defaults, and told on stderr', r.stderr);
writeFileSync(bad, 'hyperfocus_break_minutes: -5\n');
r = run(['check', 'get_time_context', '--json', '{}'], '', { KEEL_PROFILE: bad });
ok(r.status === 0 && /warn profile_problems count=1 what_to_do="keel profile check"/.test(r.stderr) && !r.stderr.includes('-5'),
  'keel check with a profile that has a problem: told on stderr, the value not quoted', r.stderr);
writeFileSync(bad, 'privacy:\n  idle_probe_command: "secret-token-in-a-command"\n  os_idle_consent: 7777123\n');
r = run(['profile', 'check', '--profile', bad]);
ok(/os_idle_consent must be true or false/.test(r.stderr) && !r.stderr.includes('7777123') && !r.stderr.includes('secret-token'),
  'problems never quote values from the profile', r.stderr);
r = run(['profile']);
ok(r.status === 64, 'profile without a subcommand: 64');
{
  const box = sandbox();
  r = run(['hook'], '{}', box.env);
  ok(r.status === 64 && /which event\? e\.g\. keel hook UserPromptSubmit/.test(r.stderr), 'keel hook with no EVENT: a usage error that names one', r.stderr);
  r = run(['hook', 'UserPromptSubmitted'], '{"prompt":"hi"}', box.env);
  ok(r.status === 0 && r.stdout === '' && /hook_event_unknown event=UserPromptSubmitted: keel hook knows UserPromptSubmit/.test(r.stderr),
    'a misspelled hook event: exit 0 (the host is never broken), and stderr names the events keel knows', r.stderr);
  r = run(['hook', 'Stop_Z9'], '{}', box.env);
  ok(r.status === 0 && /hook_event_unknown event=Stop_Z9:/.test(r.stderr), 'an unknown event of letters, digits and _ is named as given (Z and 9 included)', r.stderr);
  r = run(['hook', 'AgentAwait_0'], '{}', box.env);
  ok(r.status === 0 && /hook_event_unknown event=AgentAwait_0:/.test(r.stderr), 'an unknown event with A, a and 0 in it is named as given', r.stderr);
  const forty = 'X'.repeat(40), fortyOne = 'X'.repeat(41);
  r = run(['hook', forty], '{}', box.env);
  const r41 = run(['hook', fortyOne], '{}', box.env);
  ok(r.status === 0 && r.stderr.includes(`event=${forty}:`) && r41.status === 0 && /event=\(not shown\):/.test(r41.stderr),
    'an unknown event name of 40 characters is named, one of 41 is not shown', { forty: r.stderr, fortyOne: r41.stderr });
  r = run(['hook', 'Stop;rm -rf ~'], '{}', box.env);
  ok(r.status === 0 && /hook_event_unknown event=\(not shown\):/.test(r.stderr), 'an event name with other characters is not echoed', r.stderr);
  r = run(['hook', 'PreCompact'], '{"trigger":"auto"}', box.env);
  ok(r.status === 0 && r.stdout === '' && r.stderr === '', 'an event a host has and keel does nothing on: quietly nothing', r.stderr);
  {
    const home = join(box.dir, 'empty-home');
    mkdirSync(home);
    const ri = run(['install', '--client', 'cursor'], '', { ...box.env, HOME: home });
    ok(/keel: Cursor does not seem to be installed here \(no .*empty-home\/\.cursor\)/i.test(ri.stderr) && readdirSync(home).length === 0,
      'keel install --client for a client not installed says so, names what it looked for, and writes nothing', ri.stderr);
  }
  r = run(['install', '--client'], '', box.env);
  ok(r.status === 64 && /--client needs a name: claude-code/.test(r.stderr), 'keel install --client with no value says what it takes', r.stderr);
  r = run(['wrap', '--cwd', '/nonexistent-dir', '--', 'node', '-e', '0'], '', box.env);
  ok(r.status === 64 && /--cwd \/nonexistent-dir: no such directory/.test(r.stderr) && !/cannot start the upstream/.test(r.stderr),
    'keel wrap --cwd with a directory that does not exist: said as such, before any command is tried', r.stderr);
}
// --- standard input closed (cron, a service): the state file is still kept --------
{
  const box = sandbox();
  // the first file keel opens then gets descriptor 0
  const run = (tool, args) => spawnSync('bash', ['-c', '"$0" check "$1" --json "$2" <&-', keel, tool, JSON.stringify(args)],
    { env: { ...process.env, ...box.env }, encoding: 'utf8' });
  const start = run('mark_session_start', { intent: 'nightly report' });
  const ctx = run('get_time_context', {});
  let got = null;
  try { got = JSON.parse(ctx.stdout); } catch { /* left null */ }
  ok(start.status === 0 && ctx.status === 0 && got?.session_open === true,
    'keel check with standard input closed: the session it starts is in the state file the next call reads',
    { start: start.stdout + start.stderr, ctx: ctx.stdout + ctx.stderr });
}

// --- TZ: a zone that is not installed is refused, never read as UTC ----------------
{
  const box = sandbox();
  const ctx = (tz) => {
    const r = spawnSync(keel, ['check', 'get_time_context'], { input: '', encoding: 'utf8', env: { ...process.env, ...box.env, KEEL_NOW: '2026-07-01T12:00:00Z', TZ: tz } });
    try { const j = JSON.parse(r.stdout); return j.error ? j.error.code : j.now; } catch { return r.stdout + r.stderr; }
  };
  const got = Object.fromEntries(['Europe/Berln', 'Berlin', '../../etc/passwd', 'Europe/Berlin', ':Europe/Berlin', 'UTC', '', 'EST5EDT', '<+03>-3']
    .map((tz) => [tz, ctx(tz)]));
  ok(got['Europe/Berln'] === 'INTERNAL_CLOCK_UNAVAILABLE' && got.Berlin === 'INTERNAL_CLOCK_UNAVAILABLE' && got['../../etc/passwd'] === 'INTERNAL_CLOCK_UNAVAILABLE' &&
     got['Europe/Berlin'] === '2026-07-01T14:00:00+02:00' && got[':Europe/Berlin'] === '2026-07-01T14:00:00+02:00' && got.UTC === '2026-07-01T12:00:00+00:00' &&
     got[''] === '2026-07-01T12:00:00+00:00' && got.EST5EDT === '2026-07-01T08:00:00-04:00' && got['<+03>-3'] === '2026-07-01T15:00:00+03:00',
    'TZ: a zone not installed (a typo) is INTERNAL_CLOCK_UNAVAILABLE, not UTC; installed zones, POSIX rules, UTC and an empty TZ read as they say', got);
}

// --- the end of day on the day's own clock -------------------------------------------
// extend-end-of-day carries it past midnight; the hour a clock goes back does
// not repeat an end of day already passed.
{
  const box = sandbox();
  const prof = join(box.dir, 'eod.yaml');
  const ctx = (now, eod, tz = 'Europe/Berlin') => {
    writeFileSync(prof, `chronometric:\n  end_of_day_local: "${eod}"\n`);
    const r = spawnSync(keel, ['--profile', prof, 'check', 'get_time_context'], { input: '', encoding: 'utf8', env: { ...process.env, ...box.env, KEEL_NOW: now, TZ: tz } });
    try { const j = JSON.parse(r.stdout); return `${j.effective_end_of_day_local} ${j.past_end_of_day}`; } catch { return r.stdout + r.stderr; }
  };
  spawnSync(keel, ['--profile', prof, 'check', 'apply_override', '--json', '{"token":"extend-end-of-day"}'], { env: { ...process.env, ...box.env, KEEL_NOW: '2026-12-07T23:40:00+01:00', TZ: 'Europe/Berlin' } });
  const ext = [ctx('2026-12-08T00:10:00+01:00', '23:30'), ctx('2026-12-08T00:40:00+01:00', '23:30')];
  ok(ext[0] === '00:30 false' && ext[1] === '00:30 true', 'extend-end-of-day at 23:40 moves an end of day of 23:30 to 00:30, after midnight', ext);
  const said = [];
  for (let i = 0; i < 7; i++) {
    const r = spawnSync(keel, ['--profile', prof, 'check', 'apply_override', '--json', '{"token":"extend-end-of-day"}'], { encoding: 'utf8', env: { ...process.env, ...box.env, KEEL_NOW: '2026-12-07T23:45:00+01:00', TZ: 'Europe/Berlin' } });
    try { said.push(JSON.parse(r.stdout).effect); } catch { said.push(r.stdout + r.stderr); }
  }
  ok(said[0] === "today's end of day is 120 minutes later, at 01:30" && said[6] === "today's end of day is 329 minutes later, at 04:59, the day's last minute",
    'extend-end-of-day says where the end of day is now, and stops at the day\'s last minute, 04:59, saying so', said);
  const dst = ['2026-10-25T02:15:00+02:00', '2026-10-25T02:45:00+02:00', '2026-10-25T02:15:00+01:00'].map((t) => ctx(t, '02:30'));
  ok(dst.join('|') === '02:30 false|02:30 true|02:30 true', 'an end of day of 02:30 passed at 02:45 stays passed when the clock goes back to 02:15', dst);
  const ny = ['2026-11-01T07:30:00Z', '2026-11-01T09:30:00Z'].map((t) => ctx(t, '18:00', 'America/New_York'));
  ok(ny.join('|') === '18:00 true|18:00 true', 'the night the clock goes back, 02:30 and 04:30 are still the day before, past its end of day of 18:00', ny);
}

// --- the state directory named by a file: said as such ------------------------------
{
  const box = sandbox();
  const file = join(box.dir, 'not-a-dir');
  writeFileSync(file, 'x');
  const r = spawnSync(keel, ['check', 'mark_session_start', '--json', '{"intent":"x"}'], { env: { ...process.env, ...box.env, KEEL_STATE_DIR: file }, encoding: 'utf8' });
  ok(r.status === 2 && /"STATE_UNWRITABLE"/.test(r.stdout) && r.stdout.includes(`the state directory ${file} is not a directory`),
    'KEEL_STATE_DIR naming a file: STATE_UNWRITABLE, "is not a directory"', r.stdout);
}

// --- a long-running keel closes what it opens: 200 calls under a limit of 24 files ----
{
  const box = sandbox();
  const calls = Array.from({ length: 200 }, (_, i) => JSON.stringify({ jsonrpc: '2.0', id: i + 1, method: 'tools/call', params: { name: i % 2 ? 'get_time_context' : 'mark_session_start', arguments: i % 2 ? {} : { intent: `step ${i}` } } }));
  const r = spawnSync('bash', ['-c', 'ulimit -n 24 && exec "$0" serve', keel], { env: { ...process.env, ...box.env },
    input: [JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } }), ...calls].join('\n') + '\n',
    encoding: 'utf8', maxBuffer: 16 << 20 });
  const answers = r.stdout.trim().split('\n').map((l) => JSON.parse(l)).filter((m) => m.id > 0);
  const bad = answers.filter((m) => !m.result || m.result.isError && m.result.structuredContent?.error?.code !== 'SESSION_ALREADY_OPEN' || /STATE_/.test(JSON.stringify(m.result.structuredContent?.warnings || [])));
  ok(answers.length === 200 && bad.length === 0, `keel serve with at most 24 open files: 200 calls that read and write the state all answered (${answers.length}, ${bad.length} failed)`, bad.slice(0, 2));
}

done();
