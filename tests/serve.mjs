// serve.mjs: a scripted client drives `keel serve` through pipes, then the
// real MCP SDK client does the same. Asserts what a client relies on: the
// handshake, every tool, tool errors as results, JSON-RPC errors for bad
// input, keel alive after all of it, a prompt exit on EOF, and logs free of
// user content.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ok, done } from './lib/tap.mjs';
import { keel, Server, invalid } from './lib/keel.mjs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const CANARY = 'canary-7f3a9c-do-not-log';
const srv = new Server(['--max-message-bytes', '64K', '--log-level', 'debug']);

let r = await srv.ask({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } });
ok(r.id === 0 && r.result.protocolVersion === '2025-06-18' && r.result.capabilities.tools && r.result.serverInfo.name === 'keel', 'initialize echoes a supported version', r);
srv.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
r = await srv.ask({ jsonrpc: '2.0', id: 'p', method: 'ping' });
ok(r.id === 'p' && JSON.stringify(r.result) === '{}', 'ping answers {} (and the notification got no answer)', r);

r = await srv.ask({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
const names = r.result.tools.map((t) => t.name).sort();
ok(JSON.stringify(names) === JSON.stringify(['apply_override', 'check_hyperfocus', 'check_rumination', 'check_sycophancy', 'get_rules',
  'get_status', 'get_time_context', 'idle_status', 'mark_session_end', 'mark_session_start', 'request_break_if_needed', 'self_inspect',
  'submit_justification', 'submit_message']), 'tools/list lists the guardrail, chronometric, inspect and rules tools', names);

const calls = {
  check_rumination: { current_prompt: `${CANARY} is the plan okay`, history: [] },
  check_hyperfocus: { chronometric_snapshot: { open_session: { started_at: '2026-05-16T09:00:00+01:00', intent: CANARY }, now: '2026-05-16T12:00:00+01:00' } },
  check_sycophancy: { candidate_response: `You're absolutely right about ${CANARY}.` },
};
let id = 10;
for (const [name, args] of Object.entries(calls)) {
  r = await srv.ask({ jsonrpc: '2.0', id: ++id, method: 'tools/call', params: { name, arguments: args } });
  const res = r.result;
  ok(res && !res.isError && res.content[0].type === 'text' && JSON.stringify(JSON.parse(res.content[0].text)) === JSON.stringify(res.structuredContent),
    `${name}: result carries structuredContent and the same JSON as text`, r);
  ok(!invalid(name, 'output', res.structuredContent), `${name}: structuredContent is valid against outputSchema`, invalid(name, 'output', res.structuredContent));
}
r = await srv.ask({ jsonrpc: '2.0', id: 20, method: 'tools/call', params: { name: 'check_rumination', arguments: { current_prompt: 'x', history: [], window_minutes: 0 } } });
ok(r.result.isError === true && r.result.content[0].text.startsWith('WINDOW_OUT_OF_RANGE: ') && r.result.structuredContent.error.code === 'WINDOW_OUT_OF_RANGE'
  && r.result.structuredContent.error.field === 'window_minutes', 'a tool error is a result: isError, "CODE: message", structuredContent.error', r);
ok(!invalid('check_rumination', 'output', r.result.structuredContent), 'a tool error is valid against outputSchema too (SDK clients validate it)');
r = await srv.ask({ jsonrpc: '2.0', id: 21, method: 'tools/call', params: { name: 'check_sycophancy', arguments: 'not an object' } });
ok(r.result.isError && r.result.structuredContent.error.code === 'INPUT_INVALID', 'arguments that are not an object are an INPUT_INVALID result', r);
r = await srv.ask({ jsonrpc: '2.0', id: 22, method: 'tools/call', params: { name: 'check_sycophancy' } });
ok(r.result.isError && r.result.structuredContent.error.code === 'INPUT_MISSING', 'missing arguments mean no arguments', r);
r = await srv.ask({ jsonrpc: '2.0', id: 23, method: 'tools/call', params: { name: 'no_such_tool', arguments: {} } });
ok(r.error && r.error.code === -32602 && r.id === 23, 'unknown tool: -32602', r);
r = await srv.ask({ jsonrpc: '2.0', id: 24, method: 'resources/list' });
ok(r.error && r.error.code === -32601 && r.id === 24, 'unknown method: -32601', r);
r = await srv.ask('this is not json');
ok(r.error && r.error.code === -32700 && r.id === null, 'garbage line: -32700 with id null', r);
r = await srv.ask([{ jsonrpc: '2.0', id: 25, method: 'ping' }, { jsonrpc: '2.0', method: 'notifications/initialized' }, 5]);
ok(Array.isArray(r) && r.length === 2 && r[0].id === 25 && r[0].result && r[1].error?.code === -32600 && r[1].id === null,
  'a batch (MCP 2025-03-26): each request answered with its id in one array, a notification not, an element that is no message -32600', r);
r = await srv.ask([]);
ok(r.error && r.error.code === -32600 && r.id === null, 'an empty batch: -32600', r);
r = await srv.ask('{"jsonrpc":"2.0","id":28,"method":"tools/call","params":{"name":"get_status","name":"mark_session_end","arguments":{}}}');
ok(r.error && r.error.code === -32600 && r.id === 28 && /given twice/.test(r.error.message),
  'a member given twice (a tool\'s name: keel would run the first, a JavaScript peer read the last): -32600 with its id', r);
r = await srv.ask('{"jsonrpc":"2.0","id":29,"id":30,"method":"ping"}');
ok(r.error && r.error.code === -32600 && r.id === null, 'the id given twice: -32600, id null (neither is the answer\'s)', r);
r = await srv.ask('{"jsonrpc":"2.0","id":1.5,"method":"ping"}');
ok(r.error && r.error.code === -32600 && r.id === null && /integer/.test(r.error.message), 'an id of no integer value: -32600', r);
{
  const home = mkdtempSync(join(tmpdir(), 'keel-serve-'));
  const raw = spawnSync(keel, ['serve', '--log-level', 'error'], { env: { PATH: process.env.PATH, HOME: home },
    input: Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":"a'), Buffer.from([0xff]), Buffer.from('b","method":"ping"}\n')]) });
  rmSync(home, { recursive: true, force: true });
  const out = raw.stdout.toString('latin1');
  ok(!out.includes('\xff') && /"id":null,"error":\{"code":-32600,"message":"Invalid Request: the id is not valid UTF-8"/.test(out),
    'an id that is not valid UTF-8 is not echoed (the reply would be no JSON text): -32600, id null', out);
}
{
  // another process holding the state lock: a guardrail tool (its activity
  // write tried once) and the ping behind it are answered at once, not after
  // the 5 s a state tool waits
  const home = mkdtempSync(join(tmpdir(), 'keel-serve-'));
  const st = join(home, 'st');
  spawnSync('mkdir', ['-m', '700', st]);
  const holder = spawn('flock', ['-o', join(st, 'state.lock'), 'sleep', '20'], { stdio: 'ignore', detached: true });
  while (spawnSync('flock', ['-n', join(st, 'state.lock'), 'true']).status === 0) await new Promise((res) => setTimeout(res, 20));
  const t0 = Date.now();
  const lines = [{ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'check_sycophancy', arguments: { candidate_response: 'ok' } } },
    { jsonrpc: '2.0', id: 2, method: 'ping' }].map((m) => JSON.stringify(m)).join('\n') + '\n';
  const busy = spawnSync(keel, ['serve', '--log-level', 'error'], { env: { PATH: process.env.PATH, HOME: home, KEEL_STATE_DIR: st }, input: lines, encoding: 'utf8' });
  const took = Date.now() - t0;
  process.kill(-holder.pid);
  rmSync(home, { recursive: true, force: true });
  const got = busy.stdout.trim().split('\n').map((l) => JSON.parse(l));
  ok(got.length === 2 && got[0].result && got[1].id === 2 && took < 2500,
    `a guardrail tool and a ping behind it, the state lock held elsewhere: answered at once (${took} ms), not after a 5 s wait`, got);
}
r = await srv.ask('\ufeff{"jsonrpc":"2.0","id":31,"method":"ping"}');
ok(r.result && r.id === 31, 'a byte-order mark before a message: read past, and the message answered with its id', r);
r = await srv.ask({ jsonrpc: '2.0', id: 26 });
ok(r.error && r.error.code === -32600 && r.id === 26, 'a message without method: -32600 with its id', r);
r = await srv.ask({ jsonrpc: '2.0', id: 27, method: 'tools/call', params: { name: 'check_rumination', arguments: { current_prompt: 'x'.repeat(70000), history: [] } } });
ok(r.error && r.error.code === -32600 && r.id === 27 && r.error.data.code === 'MESSAGE_TOO_LARGE', 'oversized line: error with its id', r);
for (const [len, over] of [[65536, false], [65537, true]]) {     // --max-message-bytes 64K, at the limit and one past
  const head = '{"jsonrpc":"2.0","id":28,"method":"ping","params":{"_meta":{"pad":"', tail = '"}}}';
  srv.send(head + 'p'.repeat(len - head.length - tail.length) + tail);
  r = JSON.parse(await srv.next());
  ok(r.id === 28 && (over ? r.error?.data?.code === 'MESSAGE_TOO_LARGE' : r.result !== undefined),
    `a line of ${len} bytes with --max-message-bytes 64K is ${over ? 'refused, MESSAGE_TOO_LARGE' : 'answered'}`, r);
}
srv.send('{"jsonrpc":"2.0","method":"x","params":"' + 'y'.repeat(70000) + '"}');
r = JSON.parse(await srv.next());
ok(r.error && r.id === null && r.error.data.code === 'MESSAGE_TOO_LARGE', 'oversized line without a readable id: error with id null', r);
srv.send('{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}');
let raw = await srv.next();
ok(raw.startsWith('{"jsonrpc":"2.0","id":9007199254740993,'), 'an integer id beyond 2^53 is echoed byte for byte', raw);
srv.send('{"jsonrpc":"2.0","id":"a\\"b\\u00e9","method":"nope"}');
raw = await srv.next();
ok(raw.startsWith('{"jsonrpc":"2.0","id":"a\\"b\\u00e9",'), 'a string id with escapes is echoed byte for byte', raw);
srv.send('{"jsonrpc":"2.0","id":12abc,"method":"x","params":"' + 'y'.repeat(70000) + '"}');
r = JSON.parse(await srv.next());
ok(r.id === null && r.error.data.code === 'MESSAGE_TOO_LARGE', 'an oversize line with a malformed id is answered with id null, as valid JSON', r);
r = await srv.ask({ jsonrpc: '2.0', id: '28', method: 'ping' });
ok(r.id === '28' && r.result, 'keel is alive and in order after all of that', r);
// Client activity is recorded for get_time_context; pure reads do not count.
{
  const s2 = new Server(['--log-level', 'error'], { KEEL_NOW: '2026-05-16T10:00:00Z', TZ: 'UTC' });
  let g = await s2.ask({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_time_context', arguments: {} } });
  const stateFile = join(s2.box.stateDir, 'state.json');
  ok(g.result.structuredContent.time_since_last_prompt === 'PT0S' && (!existsSync(stateFile) || !JSON.parse(readFileSync(stateFile, 'utf8')).last_prompt_at),
    'get_time_context is a pure read: it records no activity');
  await s2.ask({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'mark_session_start', arguments: { intent: CANARY } } });
  await s2.close();
  const st = JSON.parse(readFileSync(join(s2.box.stateDir, 'state.json'), 'utf8'));
  ok(st.last_prompt_at === '2026-05-16T10:00:00+00:00', 'a tool call records last_prompt_at', st);
  const s3 = new Server(['--log-level', 'debug'], { KEEL_NOW: '2026-05-16T10:20:00Z', KEEL_STATE_DIR: s2.box.stateDir });
  g = await s3.ask({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_time_context', arguments: {} } });
  ok(g.result.structuredContent.time_since_last_prompt === 'PT20M' && g.result.structuredContent.current_session_length === 'PT20M',
    'the state survives a restart: a new keel sees the session and the last prompt', g.result.structuredContent);
  g = await s3.ask({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'mark_session_end', arguments: { summary: CANARY } } });
  ok(g.result.structuredContent.intent === CANARY && g.result.structuredContent.duration === 'PT20M', 'mark_session_end in another process closes the session');
  await s3.close();
  ok(!s3.stderr.includes(CANARY), 'intents and summaries never reach the log', s3.stderr);
  // Every tool call but asking the time counts: self_inspect, get_rules and get_status do
  for (const name of ['self_inspect', 'get_rules', 'get_status']) {
    const dir = mkdtempSync(join(tmpdir(), 'keel-act-'));
    const s4 = new Server(['--log-level', 'error'], { KEEL_NOW: '2026-05-16T10:00:00Z', KEEL_STATE_DIR: dir });
    await s4.ask({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: name === 'self_inspect' ? { thought: 'plan the next step' } : {} } });
    await s4.close();
    let at = null;
    try { at = JSON.parse(readFileSync(join(dir, 'state.json'), 'utf8')).last_prompt_at; } catch { /* none */ }
    rmSync(dir, { recursive: true, force: true });
    ok(at === '2026-05-16T10:00:00+00:00', `${name} is client activity: it records last_prompt_at`, at);
  }
}
// In keel serve the check tools are what finds things: explain-the-match
// answers with what check_sycophancy found last, and a quieting token says
// that the check tools still answer (it promised what serve never does).
{
  const s5 = new Server(['--log-level', 'error']);
  const call = (id, name, args) => s5.ask({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
  let c = await call(1, 'apply_override', { token: 'explain-the-match', detector: 'sycophancy' });
  ok(/keel has given no sycophancy advisory/.test(c.result.structuredContent.effect), 'explain-the-match before any finding: says there is none', c.result.structuredContent);
  await call(2, 'check_sycophancy', { candidate_response: 'You are absolutely right!' });
  c = await call(3, 'apply_override', { token: 'explain-the-match', detector: 'sycophancy' });
  ok(c.result.structuredContent.explanation?.detected === true && c.result.structuredContent.explanation?.pattern === 'unconditional_agreement',
    'explain-the-match in keel serve: what check_sycophancy found last', c.result.structuredContent);
  await call(31, 'check_rumination', { current_prompt: 'is it safe to merge now?', history: [{ text: 'is merging safe now?', at: new Date(Date.now() - 600000).toISOString() },
    { text: 'safe to merge now?', at: new Date(Date.now() - 400000).toISOString() }, { text: 'now, is merging it safe?', at: new Date(Date.now() - 200000).toISOString() }] });
  c = await call(32, 'apply_override', { token: 'explain-the-match', detector: 'rumination' });
  ok(c.result.structuredContent.explanation?.detected === true, 'explain-the-match in keel serve: what check_rumination found last', c.result.structuredContent);
  c = await call(4, 'apply_override', { token: 'i-want-validation' });
  const d = await call(5, 'check_sycophancy', { candidate_response: 'You are absolutely right!' });
  ok(/check_sycophancy, asked directly, still answers what it finds/.test(c.result.structuredContent.effect) && d.result.structuredContent.detected === true,
    'i-want-validation in keel serve says the check tool still answers, and it does', [c.result.structuredContent, d.result.structuredContent]);
  await s5.close();
}
const t0 = Date.now();
const ex = await srv.close();
ok(ex.code === 0 && Date.now() - t0 < 2000, `stdin EOF: exit 0 promptly (${Date.now() - t0} ms)`, ex);
ok(!srv.stderr.includes(CANARY), 'stderr never carries user content', srv.stderr);
ok(/tool_invoked name=check_rumination bytes=\d+/.test(srv.stderr), 'stderr logs events with names and sizes', srv.stderr);
ok(srv.lines.length === 0, 'no unexpected lines on stdout', srv.lines);

// The real SDK client: it validates structuredContent against outputSchema.
const client = new Client({ name: 'keel-test', version: '1.0.0' });
const transport = new StdioClientTransport({ command: keel, args: ['serve', '--log-level', 'error'], stderr: 'pipe', env: { PATH: process.env.PATH, ...srv.box.env } });
await client.connect(transport);
const tools = await client.listTools();
ok(tools.tools.length === 14 && tools.tools.every((t) => t.outputSchema), 'SDK client: listTools sees every tool with an outputSchema');
for (const [name, args] of Object.entries(calls)) {
  try {
    const res = await client.callTool({ name, arguments: args });
    ok(res.structuredContent && !res.isError, `SDK client: ${name} succeeds and validates`);
  } catch (e) { ok(false, `SDK client: ${name} succeeds and validates`, e.message); }
}
try {
  const res = await client.callTool({ name: 'check_hyperfocus', arguments: { chronometric_snapshot: { open_session: null, now: 'x' } } });
  ok(res.isError && res.structuredContent.error.code === 'INPUT_INVALID', 'SDK client: a tool error arrives as a result it accepts');
} catch (e) { ok(false, 'SDK client: a tool error arrives as a result it accepts', e.message); }
await client.close();
done();
