// interop.mjs: the real MCP SDK client and the real reference server
// (@modelcontextprotocol/server-everything), talking directly and through
// `keel wrap`. Whatever the client sees directly it must see through keel:
// the same tools (plus keel's), the same results, the same number of progress,
// logging and list_changed notifications on the wire, working sampling,
// elicitation, roots and cancellation. Then a recorded session is replayed
// both ways and the client-side bytes compared.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { isDeepStrictEqual } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  CreateMessageRequestSchema, ElicitRequestSchema, ListRootsRequestSchema, ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { ok, done } from './lib/tap.mjs';
import { keel, sandbox } from './lib/keel.mjs';

const require = createRequire(import.meta.url);
const EVERYTHING = require.resolve('@modelcontextprotocol/server-everything/dist/index.js');
const box = sandbox();
const env = { PATH: process.env.PATH, HOME: process.env.HOME || '/tmp', ...box.env };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const KEEL_TOOLS = ['apply_override', 'get_time_context', 'mark_session_end', 'mark_session_start'];   // keel wrap's default (core)

async function session(command, args) {
  const out = { wire: [] };
  const client = new Client({ name: 'keel-interop', version: '1.0.0' },
    { capabilities: { sampling: {}, elicitation: {}, roots: { listChanged: true } } });
  let listChanged = 0;
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => { listChanged++; });
  client.setRequestHandler(CreateMessageRequestSchema, async () => ({ model: 'test-model', role: 'assistant', content: { type: 'text', text: 'sampled reply 42' } }));
  client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'decline' }));
  client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [{ uri: 'file:///tmp/keel-interop-root', name: 'interop' }] }));
  const transport = new StdioClientTransport({ command, args, env, stderr: 'pipe' });
  await client.connect(transport);
  const onmessage = transport.onmessage;
  transport.onmessage = (m, extra) => { out.wire.push(m); onmessage(m, extra); };
  await sleep(300);                       // the server's early notifications
  out.tools = (await client.listTools()).tools.map((t) => t.name).sort();
  out.echo = await client.callTool({ name: 'echo', arguments: { message: 'héllo ✓' } });
  out.sum = await client.callTool({ name: 'get-sum', arguments: { a: 2, b: 40 } });
  out.structured = await client.callTool({ name: 'get-structured-content', arguments: { location: 'Chicago' } });
  let progressCallbacks = 0;
  out.long = await client.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 1, steps: 4 } },
    undefined, { onprogress: () => { progressCallbacks++; } });
  out.progressOnWire = out.wire.filter((m) => m.method === 'notifications/progress').length;
  const ac = new AbortController();
  const cancelled = client.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 3, steps: 3 } },
    undefined, { signal: ac.signal }).then(() => 'finished', (e) => e.name || 'rejected');
  setTimeout(() => ac.abort(), 200);
  out.cancelled = await cancelled;
  out.afterCancel = await client.callTool({ name: 'echo', arguments: { message: 'after cancel' } });
  out.sampling = await client.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'hello', maxTokens: 20 } });
  out.elicitation = await client.callTool({ name: 'trigger-elicitation-request', arguments: {} });
  out.roots = await client.callTool({ name: 'get-roots-list', arguments: {} });
  await client.setLoggingLevel('debug');
  await client.callTool({ name: 'toggle-simulated-logging', arguments: {} });
  await sleep(2500);
  await client.callTool({ name: 'toggle-simulated-logging', arguments: {} });
  out.logging = out.wire.filter((m) => m.method === 'notifications/message').length;
  out.listChanged = listChanged;
  if (args.includes('wrap')) {
    const k = await client.callTool({ name: 'get_time_context', arguments: {} });
    out.keelTool = k.structuredContent;
  }
  await client.close();
  return out;
}

const direct = await session(process.execPath, [EVERYTHING, 'stdio']);
const wrapped = await session(keel, ['--log-level', 'error', 'wrap', '--', process.execPath, EVERYTHING, 'stdio']);

ok(isDeepStrictEqual(wrapped.tools, [...direct.tools, ...KEEL_TOOLS].sort()), 'tools/list: the upstream\'s tools plus keel\'s', { direct: direct.tools, wrapped: wrapped.tools });
for (const k of ['echo', 'sum', 'structured', 'long', 'afterCancel', 'sampling', 'elicitation', 'roots'])
  ok(isDeepStrictEqual(wrapped[k], direct[k]), `${k}: the same result through keel as directly`, { direct: direct[k], wrapped: wrapped[k] });
ok(direct.echo.content[0].text.includes('héllo ✓'), 'echo carries Unicode');
ok(direct.structured.structuredContent && JSON.stringify(wrapped.structured.structuredContent) === JSON.stringify(direct.structured.structuredContent),
  'get-structured-content: structuredContent identical');
ok(direct.progressOnWire === 4 && wrapped.progressOnWire === direct.progressOnWire, `progress notifications on the wire: ${wrapped.progressOnWire} through keel, ${direct.progressOnWire} directly`);
ok(direct.cancelled !== 'finished' && wrapped.cancelled === direct.cancelled, `cancellation: the call is cancelled both ways (${wrapped.cancelled})`);
ok(JSON.stringify(wrapped.sampling).includes('sampled reply 42'), 'sampling/createMessage round trip through keel');
ok(JSON.stringify(wrapped.elicitation).includes('decline'), 'elicitation/create round trip through keel');
ok(JSON.stringify(wrapped.roots).includes('keel-interop-root'), 'roots/list round trip through keel');
ok(direct.logging > 0 && wrapped.logging > 0, `logging notifications pass (${wrapped.logging} through keel, ${direct.logging} directly)`);
ok(direct.listChanged === wrapped.listChanged, `tools/list_changed notifications: ${wrapped.listChanged} through keel, ${direct.listChanged} directly`);
ok(wrapped.keelTool && /^\d{4}-\d\d-\d\dT/.test(wrapped.keelTool.now), 'a keel tool answers beside the upstream\'s', wrapped.keelTool);

// Pinned definitions (on by default): a second session on the same state
// behaves as the first, every tool listed and every result the same.
{
  const again = await session(keel, ['--log-level', 'error', 'wrap', '--', process.execPath, EVERYTHING, 'stdio']);
  const same = ['tools', 'echo', 'sum', 'structured', 'sampling', 'elicitation', 'roots'].every((k) => isDeepStrictEqual(again[k], wrapped[k]));
  const pins = JSON.parse(readFileSync(join(box.stateDir, 'pins.json'), 'utf8'));
  const pinned = Object.values(pins.servers)[0].tools;
  ok(same && direct.tools.every((t) => pinned[t] && !pinned[t].pending),
    `restarted with pinning on: the same tools and results, all ${direct.tools.length} pinned, none held`, Object.keys(pinned));
}

// A recorded session replayed, one message at a time: identical bytes.
const script = [
  { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'replay', version: '1' } } },
  { jsonrpc: '2.0', method: 'notifications/initialized' },
  { jsonrpc: '2.0', id: 1, method: 'ping' },
  { jsonrpc: '2.0', id: 2, method: 'tools/list' },
  { jsonrpc: '2.0', id: 'three', method: 'tools/call', params: { name: 'echo', arguments: { message: 'a "quoted" ✓ \\ line' } } },
  { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'get-sum', arguments: { a: 1.5, b: -2 } } },
  { jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'get-structured-content', arguments: { location: 'New York' } } },
  { jsonrpc: '2.0', id: 6, method: 'prompts/list' },
  { jsonrpc: '2.0', id: 7, method: 'resources/list' },
  { jsonrpc: '2.0', id: 8, method: 'no/such/method' },
];
async function replay(command, args) {
  const p = spawn(command, args, { env, stdio: ['pipe', 'pipe', 'ignore'] });
  let bytes = '';
  p.stdout.setEncoding('utf8');
  const waiters = [];
  p.stdout.on('data', (d) => { bytes += d; for (const w of waiters.splice(0)) w(); });
  const waitFor = async (id) => {
    const needle = `"id":${JSON.stringify(id)}`;
    while (!bytes.includes(needle)) await new Promise((r) => waiters.push(r));
  };
  for (const m of script) {
    p.stdin.write(JSON.stringify(m) + '\n');
    if (m.id !== undefined) await waitFor(m.id);
  }
  await sleep(300);
  p.stdin.end();
  await new Promise((r) => p.on('exit', r));
  return bytes;
}
const rawDirect = await replay(process.execPath, [EVERYTHING, 'stdio']);
const rawKeel = await replay(keel, ['--log-level', 'error', 'wrap', '--expose', 'none', '--', process.execPath, EVERYTHING, 'stdio']);
ok(rawDirect.length > 1000 && rawKeel === rawDirect, `a replayed session: ${rawKeel.length} client-side bytes through keel, identical to direct`,
  rawKeel === rawDirect ? undefined : { direct: rawDirect.slice(0, 600), keel: rawKeel.slice(0, 600) });

// Ids the server writes back otherwise than they came (its JSON.stringify
// writes "\u00e9" as "é", 1.0 as 1, 1e3 as 1000): the same ids, answered
// through keel as directly, each within 5 s.
async function idsAnswered(command, args) {
  const p = spawn(command, args, { env, stdio: ['pipe', 'pipe', 'ignore'] });
  let bytes = '';
  p.stdout.setEncoding('utf8');
  p.stdout.on('data', (d) => { bytes += d; });
  p.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'ids', version: '1' } } }) + '\n');
  await sleep(500);
  p.stdin.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n');
  for (const id of ['"req-\\u00e9-1"', '"\\u0041"', '1.0', '1e3'])
    p.stdin.write(`{"jsonrpc":"2.0","id":${id},"method":"ping"}\n`);
  const answered = () => bytes.split('\n').filter((l) => l.trim()).map((l) => { try { return JSON.parse(l).id; } catch { return undefined; } })
    .filter((id) => id !== undefined && id !== null);   // notifications; the server's own error with no id
  for (let t = 0; t < 50 && answered().length < 5; t++) await sleep(100);
  const got = answered();
  p.stdin.end();
  await new Promise((r) => p.on('exit', r));
  return got;
}
const idsDirect = await idsAnswered(process.execPath, [EVERYTHING, 'stdio']);
const idsKeel = await idsAnswered(keel, ['--log-level', 'error', 'wrap', '--', process.execPath, EVERYTHING, 'stdio']);
ok(isDeepStrictEqual(idsDirect, [0, 'req-é-1', 'A', 1, 1000]) && isDeepStrictEqual(idsKeel, idsDirect),
  'ids the server writes back otherwise ("\\u00e9" as "é", 1.0 as 1, 1e3 as 1000): each answered through keel as directly', { idsDirect, idsKeel });
done();
