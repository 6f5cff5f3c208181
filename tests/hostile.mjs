// hostile.mjs: keel against hostile peers, careless configs and crashed
// processes. Each section is one fault once found by probing (issue 14's
// numbering), kept here so it stays fixed: keel answers, on time, with a
// clear error, and loses nothing.
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ok, skip, done } from './lib/tap.mjs';
import { keel, root, sandbox, check, Proc, Server } from './lib/keel.mjs';

const UP = join(root, 'tests', 'fixtures', 'upstream.mjs');
const INIT = { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } };
// Long enough that a stall shows (the faults took minutes), short enough for CI.
const PATIENCE = 30000;
const box = sandbox();

async function wrapped(args = []) {
  const k = new Proc(['--log-level', 'info', ...args, 'wrap', '--', process.execPath, UP, 'normal']);
  await k.ask(INIT);
  return k;
}
const call = (id, name, args) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
const rulesAdvisory = (m) => ((m.result._meta || {})['keel/advisories'] || []).find((a) => a.detector === 'rules');

// 1. Rules cannot stall the relay: the shipped patterns are linear, and a
// rule's total work on one text is bounded; past it the rule says it was not
// checked, never "no match".
{
  const slow = join(box.dir, 'slow-rules');
  mkdirSync(slow);
  writeFileSync(join(slow, 'slow.yml'), 'rules:\n'
    + "  - name: backtracker\n    applies_to: tool_result\n    patterns: ['(?:x(a|aa)+y)?z|.']\n    examples: {fires: ['z']}\n"
    + "  - name: backtracker-too\n    applies_to: message\n    patterns: ['(?:x(a|aa)+y)?z|.']\n    examples: {fires: ['z']}\n");
  const k = await wrapped();
  k.send(call(1, 'echo', { message: '-----BEGIN PRIVATE KEY-----'.repeat(33000) }));   // 891 KB, no END line
  k.send({ jsonrpc: '2.0', id: 2, method: 'ping' });
  let a = null, b = null;
  try { a = JSON.parse(await k.next(PATIENCE)); b = JSON.parse(await k.next(PATIENCE)); } catch { /* left null */ }
  ok(a && a.id === 1 && a.result && b && b.id === 2,
    '1: 891 KB of private-key headers with no END line: the result and the ping behind it are answered (took 180 s)');
  ok(a && !rulesAdvisory(a), '1: and the shipped rules judged it in full: nothing skipped, nothing matched', a && a.result._meta);
  await k.close();

  const u = await wrapped(['--rules', slow]);
  u.send(call(3, 'echo', { message: ('x' + 'a'.repeat(24)).repeat(1200) }));           // 30 KB
  u.send({ jsonrpc: '2.0', id: 4, method: 'ping' });
  a = b = null;
  try { a = JSON.parse(await u.next(PATIENCE)); b = JSON.parse(await u.next(PATIENCE)); } catch { /* left null */ }
  const adv = a && rulesAdvisory(a);
  ok(b && b.id === 4 && adv && adv.skipped && adv.skipped.some((s) => s.rule === 'backtracker' && s.block === 0)
    && /backtracker was not checked on this result/.test(adv.reason),
    '1: a user rule that backtracks without end on a 30 KB result is skipped and the advisory says so (took 4.4 s)', adv);
  await u.close();

  const s = new Server(['--log-level', 'error', '--rules', slow]);
  const m = await s.ask(call(5, 'submit_message', { message: ('x' + 'a'.repeat(24)).repeat(600) }));
  const notes = (m.result.structuredContent || {}).notes || [];
  ok(notes.some((n) => /rule backtracker-too was not checked/.test(n)), '1: submit_message: a rule past its budget is named in notes', m.result);
  const f = await s.ask(call(6, 'get_rules', { filter: '^(\\w+\\s?)*$' }));
  ok(f.result.isError && f.result.structuredContent.error.code === 'INPUT_INVALID' && f.result.structuredContent.error.field === 'filter',
    '1: get_rules with a filter that backtracks without end: INPUT_INVALID on filter (took over 1 s)', f.result);
  await s.close();
}

// 2. The state lock is waited for a bounded time, and a FIFO at state.json is
// never opened for reading: the relay goes on, the state call says why.
{
  const b = sandbox();
  mkdirSync(b.stateDir, { recursive: true, mode: 0o700 });
  // initialize and ping with the lock free, then with it held: the same time
  // but for the wait (keel's relay never waits on the state lock; it took 5 s)
  const timed = async (env) => {
    const k = new Proc(['--log-level', 'info', 'wrap', '--', process.execPath, UP, 'normal'], env);
    const t0 = Date.now();
    let init = null, ping = null, t1 = 0;
    try {
      k.send(INIT);
      init = JSON.parse(await k.next(PATIENCE));
      t1 = Date.now();
      ping = await k.ask({ jsonrpc: '2.0', id: 1, method: 'ping' });
    } catch { /* left null */ }
    return { k, init, ping, ms: t1 - t0, pingMs: Date.now() - t1 };
  };
  const free = await timed(sandbox().env);
  await free.k.close();
  const holder = spawn('flock', ['-x', join(b.stateDir, 'state.lock'), 'sleep', '120'], { stdio: 'ignore' });
  await new Promise((r) => setTimeout(r, 300));
  const { k, init, ping, ms, pingMs } = await timed(b.env);
  let busy = null;
  try {
    k.send(call(2, 'mark_session_start', { intent: 'write the report' }));
    busy = JSON.parse(await k.next(PATIENCE));
  } catch { /* left null */ }
  // (initialize includes starting the server's node process: compared with the
  // lock free, with room for a loaded machine; ping is keel's alone)
  ok(init && init.result && ping && ping.id === 1 && ms < free.ms + 1000 && pingMs < 100,
    `2: another process holding state.lock: keel wrap answers initialize as with the lock free (${ms} ms against ${free.ms} ms) and ping in ${pingMs} ms (initialize took 5 s)`);
  ok(busy && busy.result && busy.result.isError && busy.result.structuredContent.error.code === 'STATE_BUSY',
    '2: and a state call gets STATE_BUSY instead of waiting', busy && busy.result);
  holder.kill('SIGKILL');
  await k.close();

  const f = sandbox();
  mkdirSync(f.stateDir, { recursive: true, mode: 0o700 });
  spawnSync('mkfifo', [join(f.stateDir, 'state.json')]);
  const r = spawnSync(keel, ['--log-level', 'error', 'check', 'mark_session_start'], { input: '{"intent":"x"}', env: { ...process.env, ...f.env }, encoding: 'utf8', timeout: PATIENCE });
  ok(r.status !== 0 && /"STATE_UNREADABLE"/.test(r.stdout) && /not a regular file; it was moved to/.test(r.stdout)
    && !existsSync(join(f.stateDir, 'state.json')), '2: a FIFO at state.json: keel check answers at once, moved aside (it hung holding the lock)', r);
  const again = check('mark_session_start', { intent: 'x' }, { box: f });
  ok(again.status === 0 && again.json.session_id, '2: and the next call starts afresh', again.stdout);
}

// 3. A FIFO where a rule file or a profile should be is reported, never
// waited on.
{
  const b = sandbox();
  const dir = join(b.dir, 'rules');
  mkdirSync(dir);
  spawnSync('mkfifo', [join(dir, 'pipe.yml'), join(b.dir, 'profile.fifo')]);
  const opts = { encoding: 'utf8', timeout: PATIENCE, env: { ...process.env, ...b.env } };
  let r = spawnSync(keel, ['rules', 'lint', '--rules', dir], opts);
  ok(r.status === 1 && /pipe\.yml:1: not read: it is not a regular file/.test(r.stdout), '3: rules lint names a FIFO rule file and goes on', r);
  r = spawnSync(keel, ['profile', 'check', '--profile', join(b.dir, 'profile.fifo')], opts);
  ok(r.status === 1 && /cannot be read: it is not a regular file/.test(r.stdout), '3: profile check says the profile is not a regular file', r);
  for (const argv of [['--rules', dir, 'serve'], ['--profile', join(b.dir, 'profile.fifo'), 'wrap', '--', process.execPath, UP, 'normal']]) {
    const k = new Proc(['--log-level', 'error', ...argv]);
    let m = null;
    try { k.send(INIT); m = JSON.parse(await k.next(PATIENCE)); } catch { /* left null */ }
    ok(m && m.result && m.result.serverInfo, `3: keel ${argv.join(' ').replace(/ --.*/, '').replace(b.dir, 'DIR')} starts and answers initialize`, m);
    await k.close();
  }
}

// 4 and 5. A rule file cannot multiply itself through YAML aliases, and a key
// given twice is a reported problem (its first value kept, nothing leaked).
{
  const b = sandbox();
  const dir = join(b.dir, 'rules');
  mkdirSync(dir);
  writeFileSync(join(dir, 'aliases.yml'), `big: &a '${'a'.repeat(100000)}'\nrules:\n  - name: many\n    patterns: [${Array(150000).fill('*a').join(', ')}]\n`);
  const opts = { encoding: 'utf8', timeout: PATIENCE };
  let r = spawnSync(keel, ['rules', 'lint', '--rules', dir], opts);
  ok(r.status === 1 && /aliases\.yml:\d+: with its aliases written out this file is over 4 MiB/.test(r.stdout),
    '4: 700 KB of aliases to a 100 KB anchor: refused as over 4 MiB expanded (grew to 23 GB)', r.stdout || r.error);
  r = spawnSync(keel, ['rules', 'test', '--rules', dir], opts);
  ok(r.status === 1 && r.signal === null && /FAIL .*aliases\.yml:\d+: with its aliases/.test(r.stdout), '4: rules test on it fails cleanly, naming the file (crashed with SIGSEGV under a memory cap)', r.stdout || r.error);
  writeFileSync(join(dir, 'aliases.yml'), 'rules:\n  - name: twice\n    patterns: [a]\n    name: again\n'
    + '    guidance: one\n    guidance: two\n    examples: {fires: [a], fires: [b]}\nrules: []\n');
  r = spawnSync(keel, ['rules', 'lint', '--rules', dir], opts);
  ok(r.status === 1 && /aliases\.yml:4: name is given twice in this rule \(first on line 2\)/.test(r.stdout)
    && /aliases\.yml:6: guidance is given twice/.test(r.stdout) && /examples\.fires is given twice/.test(r.stdout)
    && /aliases\.yml:8: rules is given twice in this file/.test(r.stdout), '5: keys given twice are problems, with their lines', r.stdout);
  // At each limit and one past it. Written out, a node counts its scalar's
  // bytes and one more: this file is 16 + M + 63 * 65536 bytes, 4 MiB exactly
  // when M = 65520.
  for (const [m, over] of [[65520, false], [65521, true]]) {
    writeFileSync(join(dir, 'aliases.yml'), `a: &a '${'x'.repeat(65535)}'\nb: [${Array(62).fill('*a').join(', ')}]\nc: '${'y'.repeat(m)}'\nrules: []\n`);
    r = spawnSync(keel, ['rules', 'lint', '--rules', dir], opts);
    ok(/over 4 MiB/.test(r.stdout) === over, `4: a rule file of ${over ? '4 MiB and 1 byte' : 'exactly 4 MiB'} with its aliases written out is ${over ? 'refused' : 'read'}`, r.stdout);
  }
  for (const [size, over] of [[1 << 20, false], [(1 << 20) + 1, true]]) {
    const head = 'rules: []\n#';
    writeFileSync(join(dir, 'aliases.yml'), head + 'z'.repeat(size - head.length - 1) + '\n');
    r = spawnSync(keel, ['rules', 'lint', '--rules', dir], opts);
    ok(/at most 1 MiB/.test(r.stdout) === over, `4: a rule file of ${size} bytes is ${over ? 'refused (at most 1 MiB)' : 'read'}`, r.stdout);
  }
  for (const [len, over] of [[65536, false], [65537, true]]) {
    writeFileSync(join(dir, 'aliases.yml'), `rules:\n  - name: wide\n    patterns: ['${'b'.repeat(len)}']\n`);
    r = spawnSync(keel, ['rules', 'lint', '--rules', dir], opts);
    ok(/patterns is over 64 KiB/.test(r.stdout) === over, `4: a pattern of ${len} bytes is ${over ? 'a problem' : 'kept'}`, r.stdout);
  }
  writeFileSync(join(dir, 'aliases.yml'), `rules:\n  - name: wide\n    patterns: ['${'b'.repeat(70000)}']\n    examples: {fires: [b]}\n`);
  r = spawnSync(keel, ['rules', 'lint', '--rules', dir], opts);
  ok(r.status === 1 && /patterns is over 64 KiB/.test(r.stdout), '4: one value over 64 KiB is a problem', r.stdout);
}

// 6. Requests the upstream never answers cannot grow keel without end: past
// 4096 in flight, a request is answered at once.
{
  const k = await wrapped();
  for (let i = 0; i < 4097; i++) k.send(call(100 + i, 'slow', { ms: 600000 }));
  let m = null;
  try { m = JSON.parse(await k.next(PATIENCE)); } catch { /* left null */ }
  ok(m && m.id === 100 + 4096 && m.error && m.error.data && m.error.data.code === 'TOO_MANY_PENDING',
    '6: the 4097th request in flight is answered at once with TOO_MANY_PENDING (a million grew keel to 119 MB)', m);
  await k.close();
}

// 7. One definition of JSON: a lone surrogate (JavaScript's cut emoji) reads
// as U+FFFD everywhere, and nesting past 1000 is refused by both parsers.
{
  const k = await wrapped();
  const raw = (id, name, args) => `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"${name}","arguments":${args}}}`;
  k.send(raw(1, 'mark_session_start', '{"intent":"ship the report \\ud83d"}'));
  let m = JSON.parse(await k.next(PATIENCE));
  ok(m.result && !m.result.isError && /ship the report \ufffd/.test(JSON.stringify(m.result.structuredContent)),
    '7: wrap: a keel tool gets its arguments with the lone surrogate as U+FFFD', m.result);
  k.send(raw(2, 'mark_session_end', '{"summary":"done \\ud83d","bogus_key":1}'));
  m = JSON.parse(await k.next(PATIENCE));
  ok(m.result && m.result.isError && m.result.structuredContent.error.code === 'INPUT_INVALID' && m.result.structuredContent.error.field === 'bogus_key',
    '7: wrap: an unknown argument beside a lone surrogate is refused, the session left open (it was closed, the summary dropped)', m.result);
  k.send(raw(3, 'mark_session_end', `{"summary":${'['.repeat(1000)}${']'.repeat(1000)}}`));
  m = JSON.parse(await k.next(PATIENCE));
  ok(m.id === 3 && m.error && m.error.code === -32700, '7: wrap: arguments nested past 1000 are a parse error for that id, never a call without arguments', m);
  await k.close();
  const sv = new Server(['--log-level', 'error']);
  sv.send('{"jsonrpc":"2.0","id":"p1","method":"ping","params":{"_meta":{"note":"\\udc00"}}}');
  m = JSON.parse(await sv.next(PATIENCE));
  ok(m.id === 'p1' && m.result, '7: serve: a ping with a lone surrogate is answered, with its id (was -32700, id null)', m);
  await sv.close();
}

// 8. Upstream faults stay away from the client, and no request is left
// without an answer.
{
  const k = await wrapped();
  const answers = async (id, how) => { k.send(call(id, 'faulty', { how })); return JSON.parse(await k.next(PATIENCE)); };
  let m = await answers(1, 'unknown_id');
  ok(m.id === 1 && m.result.content[0].text === 'after unknown id', '8: a response to an id nobody asked is dropped', m);
  m = await answers(2, 'twice');
  ok(m.id === 2 && m.result.content[0].text === 'first answer', '8: a request answered twice: the client gets the first', m);
  m = await answers(3, 'bare');
  ok(m.id === 2 ? false : m.id === 3 && m.result.content[0].text === 'after bare array', '8: a bare [1,2,3] is not passed on (nor the second answer before it)', m);
  k.send(call(41, 'faulty', { how: 'batch' }));
  m = JSON.parse(await k.next(PATIENCE));
  const after = JSON.parse(await k.next(PATIENCE));
  ok(!Array.isArray(m) && m.params?.data === 'in a batch' && after.id === 41 && after.result.content[0].text === 'after batch',
    '8: a batch from the server is taken apart (its notification comes alone, checked as any), an empty one is not passed on', [m, after]);
  k.send(call(46, 'faulty', { how: 'mixed_batch' }));
  m = JSON.parse(await k.next(PATIENCE));
  const after2 = JSON.parse(await k.next(PATIENCE));
  ok(m.params?.data === 'in a mixed batch' && after2.id === 46 && after2.result.content[0].text === 'after mixed batch',
    '8: a server batch holding an object and an element that is none: the object goes on (the other is answered -32600 to the server)', [m, after2]);
  k.send(call(47, 'faulty', { how: 'server_ids' }));
  const got = [];
  for (;;) { const x = JSON.parse(await k.next(PATIENCE)); got.push(x); if (x.id === 47) break; }
  const pings = got.filter((x) => x.method === 'ping');
  ok(pings.length === 1 && pings[0].id === 's1' && got[got.length - 1].result.content[0].text === 'after server ids',
    '8: the server\'s requests with an id null or an object, or an id still in flight, are answered -32600 to the server, not passed on', got);
  k.send({ jsonrpc: '2.0', id: 's1', result: {} });   // the client answers the one it got
  m = await answers(42, 'dup');
  ok(m.id === 42 && m.error?.data?.code === 'UPSTREAM_BAD_RESPONSE' && /given twice/.test(m.error.message),
    '8: a response with a member given twice answers its request with an error', m);
  for (const [i, how] of [[44, 'dup_content'], [45, 'dup_text']]) {
    m = await answers(i, how);
    ok(m.id === i && m.error?.data?.code === 'UPSTREAM_BAD_RESPONSE' && /given twice/.test(m.error.message),
      `8: a tool result naming a member twice inside (${how}: keel would check the first, a JavaScript client read the last) answers its request with an error`, m);
  }
  m = await answers(43, 'dup_stray');
  ok(m.id === 43 && m.result.content[0].text === 'after dup stray', '8: a notification with a member given twice is not passed on', m);
  m = await answers(4, 'bad_utf8');
  ok(m.id === 4 && m.error && m.error.data && m.error.data.code === 'UPSTREAM_BAD_RESPONSE' && /not valid UTF-8/.test(m.error.message),
    '8: a response with raw invalid UTF-8 answers its request with an error (was passed on byte for byte)', m);
  m = await answers(5, 'nul');
  ok(m.id === 5 && m.error && m.error.data && m.error.data.code === 'UPSTREAM_BAD_RESPONSE' && /not valid JSON/.test(m.error.message),
    '8: a response with a raw NUL answers its request with an error (was never answered)', m);
  // The same faults late in a large line that arrives in pieces: keel holds
  // it whole (the overlay reads results) and checks it as it comes.
  const padded = async (id, how) => { k.send(call(id, 'faulty', { how, pad: 300 })); return JSON.parse(await k.next(PATIENCE)); };
  m = await padded(6, 'bad_utf8');
  ok(m.id === 6 && m.error && m.error.data && m.error.data.code === 'UPSTREAM_BAD_RESPONSE' && /not valid UTF-8/.test(m.error.message),
    '8: invalid UTF-8 300 KiB into a response that came in pieces answers its request with an error', m);
  m = await padded(7, 'nul');
  ok(m.id === 7 && m.error && /not valid JSON/.test(m.error.message), '8: so does a raw NUL 300 KiB in', m);
  m = await padded(8, 'utf8');
  const t = m.result && m.result.content[0].text;
  ok(m.id === 8 && t && t.length === 5 + (300 << 10) + 2 + 6 && t.endsWith('p\u00e9\u6f22 bytes'),
    '8: well-formed UTF-8 300 KiB in passes as the server wrote it', t && t.slice(-12));
  await k.close();
  ok(!k.stderr.includes('nul ') && !k.stderr.includes('bad '), '8: and what it said is not logged');
  ok(!/upstream_not_utf8/.test(k.stderr) && (k.stderr.match(/reason=duplicate_member/g) || []).length === 1,
    '8: a fault that answered its request is not logged as stray output too; the stray one is, once', k.stderr.slice(-600));
}

// 9. Ids and keys mean one thing: an id in flight is not reused, a member
// given twice is refused, an id that is not a string or number is invalid.
{
  const k = await wrapped();
  k.send(call(50, 'slow', { ms: 800 }));
  k.send({ jsonrpc: '2.0', id: 50, method: 'tools/list' });
  let m = JSON.parse(await k.next(PATIENCE));
  ok(m.id === 50 && m.error && m.error.code === -32600 && /already used/.test(m.error.message),
    '9: a tools/list with the id of a tools/call in flight is refused (keel\'s tools went missing)', m);
  m = JSON.parse(await k.next(PATIENCE));
  ok(m.id === 50 && m.result && m.result.content[0].text === 'slow done', '9: and the call in flight is answered as it was');
  // A plain request too: two pings with one id in one write, so the second
  // is read while the first is still in flight.
  k.send('{"jsonrpc":"2.0","id":51,"method":"ping"}\n{"jsonrpc":"2.0","id":51,"method":"ping"}');
  const pings = [];
  try { pings.push(JSON.parse(await k.next(PATIENCE)), JSON.parse(await k.next(5000))); } catch { /* fewer */ }
  const refused = pings.filter((p) => p.id === 51 && p.error && p.error.code === -32600 && /already used/.test(p.error.message));
  const answered = pings.filter((p) => p.id === 51 && p.result && !p.error);
  ok(refused.length === 1 && answered.length === 1, '9: a ping with the id of a ping in flight is refused, the first ping answered', pings);
  for (const [i, line] of ['{"jsonrpc":"2.0","id":1001,"id":1002,"method":"ping"}', '{"jsonrpc":"2.0","id":7,"method":"ping","method":"tools/list"}'].entries()) {
    k.send(line);
    m = JSON.parse(await k.next(PATIENCE));
    ok(m.error && m.error.code === -32600 && /given twice/.test(m.error.message), `9: duplicate ${i ? 'method' : 'id'} keys: Invalid Request`, m);
  }
  for (const [len, good] of [[1024, true], [1025, false]]) {
    const id = `"${'i'.repeat(len - 2)}"`;              // the id's JSON text is len bytes
    k.send(`{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"echo","arguments":{"message":"long id"}}}`);
    m = JSON.parse(await k.next(PATIENCE));
    ok(good ? m.id === JSON.parse(id) && m.result?.content?.[0]?.text === 'long id'
            : m.id === JSON.parse(id) && m.error?.code === -32600 && /longer than 1024 bytes/.test(m.error.message),
      `9: an id of ${len} bytes is ${good ? 'relayed' : 'refused with -32600, its id echoed (4096 ids of 16 MiB each would have been kept)'}`, m);
  }
  // A name means the same written with JSON escapes: keel's own tool called
  // as get\u005ftime_context is keel's, and tools\/list is tools/list.
  k.send('{"jsonrpc":"2.0","id":61,"method":"tools\\/call","params":{"name":"get\\u005ftime_context","arguments":{}}}');
  m = JSON.parse(await k.next(PATIENCE));
  ok(m.id === 61 && m.result?.structuredContent && 'now' in m.result.structuredContent && !m.error,
    '9: keel\'s tool named with escapes (get\\u005ftime_context, by tools\\/call) is answered by keel, not passed to the server', m);
  const modern = await k.ask({ jsonrpc: '2.0', id: 63, method: 'tools/call', params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' }, name: 'get_time_context', arguments: {} } });
  const legacy = await k.ask({ jsonrpc: '2.0', id: 64, method: 'tools/call', params: { name: 'get_time_context', arguments: {} } });
  ok(modern.result?.resultType === 'complete' && legacy.result && !('resultType' in legacy.result),
    '9: keel\'s tool called in the modern era (its version in _meta) answers resultType complete, and a legacy call does not', [modern.result?.resultType, legacy.result?.resultType]);
  k.send(' \t {"jsonrpc":"2.0","id":65,"method":"ping"}');
  m = JSON.parse(await k.next(PATIENCE));
  ok(m.id === 65 && m.result && !m.error, '9: a request with blanks before it is answered (JSON allows them)', m);
  k.send('{"jsonrpc":"2.0","id":62,"method":"tools\\/list"}');
  m = JSON.parse(await k.next(PATIENCE));
  ok(m.id === 62 && m.result?.tools?.some((t) => t.name === 'get_time_context') && m.result.tools.some((t) => t.name === 'echo'),
    '9: tools\\/list lists keel\'s tools beside the server\'s', m.result?.tools?.map((t) => t.name));
  // The server's own request with too long an id is answered to the server,
  // never passed to the client; one of 1,024 bytes is passed on.
  k.send(call(59, 'ask_model', { prompt: 'hello', id: 's'.repeat(1022) }));
  const req = await k.until((x) => x.method === 'sampling/createMessage', PATIENCE);
  k.send({ jsonrpc: '2.0', id: req.id, result: { role: 'assistant', model: 'm', content: { type: 'text', text: 'hi' } } });
  m = await k.until((x) => x.id === 59, PATIENCE);
  ok(req.id.length === 1022 && m.result?.content?.[0]?.text === 'hi', '9: the server\'s request with an id of 1,024 bytes is passed to the client, and its answer back', m);
  k.send(call(60, 'ask_model', { prompt: 'hello', id: 's'.repeat(1100) }));
  m = JSON.parse(await k.next(PATIENCE));
  ok(m.id === 60 && /^error -32600 : Invalid Request: the id is longer than 1024 bytes/.test(m.result?.content?.[0]?.text),
    '9: the server\'s request with an id of 1,102 bytes: the server is answered -32600, the client sees only the call\'s result', m);
  for (const id of ['null', '{}', '[]', 'true']) {
    k.send(`{"jsonrpc":"2.0","id":${id},"method":"ping"}`);
    m = JSON.parse(await k.next(PATIENCE));
    ok(m.id === null && m.error && m.error.code === -32600, `9: a request with id ${id} is invalid, answered (was a silent notification)`, m);
  }
  // What the server's SDK would drop without a word is answered by keel, so
  // the client does not wait for ever: a method that is no string, params
  // that are no object, an id that is no integer, an empty batch. An id of
  // integer value written otherwise (1.0, 1e3) is an integer and goes on.
  for (const [line, id, what] of [['{"jsonrpc":"2.0","id":66,"method":5}', 66, /method must be a string/],
    ['{"jsonrpc":"2.0","id":67,"method":"ping","params":"str"}', 67, /params must be an object/],
    ['{"jsonrpc":"2.0","id":68,"method":"ping","params":[1]}', 68, /params must be an object/],
    ['{"jsonrpc":"2.0","id":1.5,"method":"ping"}', 1.5, /string or an integer/],
    ['{"jsonrpc":"2.0","id":1e400,"method":"ping"}', null, /string or an integer/],
    ['[]', null, /empty batch/]]) {
    k.send(line);
    m = JSON.parse(await k.next(PATIENCE));
    ok((id === null ? m.id === null || m.id === undefined || !Number.isFinite(m.id) : m.id === id) && m.error?.code === -32600 && what.test(m.error.message),
      `9: ${line} is answered -32600 (${what.source})`, m);
  }
  k.send('5');
  m = JSON.parse(await k.next(PATIENCE));
  ok(m.id === null && m.error?.code === -32600 && /must be a JSON object/.test(m.error.message), '9: a bare value (5) is answered -32600, not passed on', m);
  k.send('{"jsonrpc":"2.0","id":1e3,"method":"ping"}');
  m = JSON.parse(await k.next(PATIENCE));
  ok(m.id === 1000 && m.result && !m.error, '9: a ping with id 1e3 (an integer) is answered by the server', m);
  await k.close();
}

// 10. kill -9 of keel leaves nothing of the server behind: a helper the
// server started in its process group goes too.
{
  const b = sandbox();
  const pidFile = join(b.dir, 'helper.pid');
  const k = new Proc(['--log-level', 'error', 'wrap', '--', 'sh', '-c', `sleep 300 & echo $! > ${pidFile}; exec "${process.execPath}" "${UP}" normal`]);
  await k.ask(INIT);
  const helper = +readFileSync(pidFile, 'utf8');
  const alive = (pid) => { try { process.kill(pid, 0); return true; } catch { return false; } };
  ok(alive(helper), '10: the server\'s helper runs');
  k.p.kill('SIGKILL');
  await k.exited;
  let gone = false;
  for (let t = 0; t < 50 && !gone; t++) { await new Promise((r) => setTimeout(r, 200)); gone = !alive(helper); }
  ok(gone, '10: after kill -9 of keel the helper in the server\'s group is gone too (it survived)');
  if (!gone) process.kill(helper, 'SIGKILL');
}

// 11. State file edges: too large, a symbolic link, a directory others may
// write to.
{
  const b = sandbox({ state: { version: 1 } });
  truncateSync(join(b.stateDir, 'state.json'), 100 << 20);               // 100 MB, sparse
  let r = check('mark_session_start', { intent: 'x' }, { box: b });
  ok(r.json && r.json.error && r.json.error.code === 'STATE_UNREADABLE' && /over 8 MiB; it was moved to/.test(r.json.error.message),
    '11: a 100 MB state.json is moved aside (it failed every call, for ever)', r.stdout);
  r = check('mark_session_start', { intent: 'x' }, { box: b });
  ok(r.status === 0, '11: and the next call works', r.stdout);

  const l = sandbox();
  mkdirSync(l.stateDir, { recursive: true, mode: 0o700 });
  const target = join(l.dir, 'elsewhere.json');
  writeFileSync(target, JSON.stringify({ version: 1 }));
  symlinkSync(target, join(l.stateDir, 'state.json'));
  r = check('mark_session_start', { intent: 'x' }, { box: l });
  ok(r.json && r.json.error && r.json.error.code === 'STATE_UNREADABLE' && /not a regular file/.test(r.json.error.message)
    && readFileSync(target, 'utf8') === '{"version":1}', '11: a symbolic link at state.json is not followed: moved aside, its target untouched', r.stdout);
  const aside = readdirSync(l.stateDir).find((n) => n.startsWith('state.json.corrupt-'));
  ok(aside && lstatSync(join(l.stateDir, aside)).isSymbolicLink(), '11: what was moved aside is the link itself');

  const w = sandbox();
  mkdirSync(w.stateDir, { recursive: true });
  chmodSync(w.stateDir, 0o777);
  r = check('mark_session_start', { intent: 'x' }, { box: w });
  ok(r.json && r.json.error && r.json.error.code === 'STATE_UNWRITABLE' && /can be changed by other users \(mode 0777\)/.test(r.json.error.message)
    && !existsSync(join(w.stateDir, 'state.json')), '11: a state directory others may write to is refused, with what to do', r.stdout);
  if (process.getuid && process.getuid() === 0) {
    const o = sandbox();
    mkdirSync(o.stateDir, { recursive: true, mode: 0o700 });
    chownSync(o.stateDir, 65534, 65534);
    r = check('mark_session_start', { intent: 'x' }, { box: o });
    ok(r.json && r.json.error && r.json.error.code === 'STATE_UNWRITABLE' && /belongs to another user \(uid 65534\)/.test(r.json.error.message)
      && !/chmod/.test(r.json.error.message), '11: a state directory of another user (mode 0700) is refused, and chmod is not what the person is told to do', r.stdout);
  } else {
    skip('11: a state directory of another user is refused with the right advice', 'giving a directory to another user needs root');
  }
}

// 12. A message over --max-message-bytes between the server and the client
// is never passed on, and whoever asked gets an answer: the server's request
// is answered to the server, and so is the client's answer to one.
{
  const k = new Proc(['--log-level', 'info', 'wrap', '--max-message-bytes', '8K', '--', process.execPath, UP, 'normal']);
  await k.ask(INIT);
  k.send(call(70, 'ask_model', { prompt: 'ppppp', times: 2000 }));
  let m = JSON.parse(await k.next(PATIENCE));
  ok(m.id === 70 && /^error -32600 MESSAGE_TOO_LARGE: Invalid Request: message/.test(m.result?.content?.[0]?.text),
    '12: the server\'s request over 8 KiB: the server is answered -32600 MESSAGE_TOO_LARGE, the client sees only the call\'s result', m);
  k.send(call(71, 'ask_model', { prompt: 'small' }));
  const req = await k.until((x) => x.method === 'sampling/createMessage', PATIENCE);
  k.send({ jsonrpc: '2.0', id: req.id, result: { role: 'assistant', model: 'm', content: { type: 'text', text: 'a'.repeat(10000) } } });
  m = await k.until((x) => x.id === 71, PATIENCE);
  ok(/^error -32603 MESSAGE_TOO_LARGE: the client's response/.test(m.result?.content?.[0]?.text),
    '12: the client\'s answer to it over 8 KiB: the server is answered -32603 MESSAGE_TOO_LARGE', m);
  await k.close();
  ok(/message_too_large from=upstream/.test(k.stderr) && /message_too_large from=client/.test(k.stderr) && !k.stderr.includes('ppppp'),
    '12: both logged by size, never by content', k.stderr.slice(-400));
}

done();
