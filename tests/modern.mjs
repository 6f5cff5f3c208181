// modern.mjs: MCP 2026-07-28 (stateless) and the v2 TypeScript SDK.
// The v2 client, in auto mode (discover on a short-lived copy of the server
// command, then the era it finds) and pinned to 2026-07-28, against keel
// serve and against keel wrap around a modern server (the v2 server SDK,
// tests/fixtures/modern.mjs) and a legacy one (server-everything); and the
// wire itself: server/discover, resultType, ttlMs/cacheScope, -32022, an
// input_required round trip passed through untouched, a legacy session
// exactly as before, and a wrap started only to answer one probe writing
// nothing.
import { existsSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { Client as Client1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as Stdio1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { ok, done } from './lib/tap.mjs';
import { keel, root, Proc, Server } from './lib/keel.mjs';

const require = createRequire(import.meta.url);
const EVERYTHING = require.resolve('@modelcontextprotocol/server-everything/dist/index.js');
const MODERN = join(root, 'tests', 'fixtures', 'modern.mjs');
const V = '2026-07-28';
const meta = { 'io.modelcontextprotocol/protocolVersion': V, 'io.modelcontextprotocol/clientCapabilities': {} };
const asker = { ...meta, 'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } } };

async function v2(mode, command, args, env = {}) {
  const client = new Client({ name: 'keel-modern', version: '1.0.0' },
    { capabilities: { elicitation: {} }, versionNegotiation: { mode } });
  client.setRequestHandler('elicitation/create', async () => ({ action: 'accept', content: { ok: true } }));
  const transport = new StdioClientTransport({ command, args, env: { PATH: process.env.PATH, HOME: process.env.HOME || '/tmp', ...env }, stderr: 'pipe' });
  await client.connect(transport);
  return client;
}

const tools = async (c) => (await c.listTools()).tools.map((t) => t.name);
const text = (r) => r?.content?.[0]?.text ?? '';

// --- keel serve, through the v2 client ---------------------------------------
for (const mode of ['auto', { pin: V }]) {
  const name = mode === 'auto' ? 'auto' : 'pinned';
  const s = new Server();
  const c = await v2(mode, keel, ['--log-level', 'error', 'serve'], s.box.env);
  ok(c.getNegotiatedProtocolVersion() === V, `keel serve, v2 client ${name}: the modern era is chosen`, c.getNegotiatedProtocolVersion());
  const list = await c.listTools();
  ok(list.tools.some((t) => t.name === 'check_rumination') && list.ttlMs > 0 && list.cacheScope === 'public',
    `keel serve, v2 client ${name}: tools/list with ttlMs and cacheScope`, { ttl: list.ttlMs, scope: list.cacheScope });
  const r = await c.callTool({ name: 'get_time_context', arguments: {} });
  ok(JSON.parse(text(r)).now, `keel serve, v2 client ${name}: a keel tool answers`, r);
  await c.close();
  s.p.kill();
}

// --- keel serve on the wire --------------------------------------------------
{
  const s = new Server(['--log-level', 'error']);
  const d = await s.ask({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: meta } });
  const r = d.result || {};
  ok(r.resultType === 'complete' && r.supportedVersions?.[0] === V && r.supportedVersions.includes('2024-11-05') &&
     r.capabilities?.tools && r._meta?.['io.modelcontextprotocol/serverInfo']?.name === 'keel' && r.ttlMs > 0 &&
     r.cacheScope === 'public' && typeof r.instructions === 'string',
     'server/discover: resultType, supportedVersions (modern first), capabilities, serverInfo in _meta, ttlMs, cacheScope', d);
  const bad = await s.ask({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: { _meta: { ...meta, 'io.modelcontextprotocol/protocolVersion': '1900-01-01' } } });
  ok(bad.error?.code === -32022 && bad.error.data?.requested === '1900-01-01' && bad.error.data.supported.includes(V),
    'a version keel does not speak: -32022 with the supported list and the one requested', bad);
  const call = await s.ask({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { _meta: meta, name: 'get_time_context', arguments: {} } });
  ok(call.result?.resultType === 'complete' && call.result.structuredContent?.now, 'a modern tools/call: resultType complete, no initialize needed', call);
  const err = await s.ask({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { _meta: meta, name: 'check_rumination', arguments: {} } });
  ok(err.result?.resultType === 'complete' && err.result.isError === true, 'a modern tool error is a complete result too', err);
  const ping = await s.ask({ jsonrpc: '2.0', id: 5, method: 'ping', params: { _meta: meta } });
  ok(ping.result?.resultType === 'complete', 'ping in the modern era', ping);
  // a legacy session on the same process: exactly as before
  const init = await s.ask({ jsonrpc: '2.0', id: 6, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'old', version: '1' } } });
  ok(init.result?.protocolVersion === '2025-06-18' && !('resultType' in init.result), 'initialize: legacy, no resultType', init);
  const old = await s.ask({ jsonrpc: '2.0', id: 7, method: 'tools/list' });
  ok(Array.isArray(old.result?.tools) && !('resultType' in old.result) && !('ttlMs' in old.result),
    'a legacy tools/list: no resultType, no ttlMs', Object.keys(old.result || {}));
  const oldcall = await s.ask({ jsonrpc: '2.0', id: 8, method: 'tools/call', params: { name: 'get_time_context', arguments: {} } });
  ok(oldcall.result && !('resultType' in oldcall.result), 'a legacy tools/call: no resultType', Object.keys(oldcall.result || {}));
  await s.close();
}

// --- keel wrap around a modern server ------------------------------------------
for (const mode of ['auto', { pin: V }]) {
  const name = mode === 'auto' ? 'auto' : 'pinned';
  const box = new Server(); box.p.kill();           // only for its sandbox
  const c = await v2(mode, keel, ['--log-level', 'error', 'wrap', '--', process.execPath, MODERN], box.box.env);
  ok(c.getNegotiatedProtocolVersion() === V, `wrap(modern server), v2 client ${name}: the modern era`, c.getNegotiatedProtocolVersion());
  const list = await c.listTools();
  const names = list.tools.map((t) => t.name);
  ok(names.includes('echo') && names.includes('confirm') && names.includes('get_time_context') && list.cacheScope === 'private' && list.ttlMs === 0,
    `wrap(modern server), ${name}: the server's tools and keel's, the page's ttlMs and cacheScope untouched`, { names, ttl: list.ttlMs, scope: list.cacheScope });
  ok(text(await c.callTool({ name: 'echo', arguments: { text: 'héllo' } })) === 'héllo', `wrap(modern server), ${name}: an upstream tool call`);
  ok(text(await c.callTool({ name: 'confirm', arguments: { action: 'deploy' } })) === 'confirmed: deploy',
    `wrap(modern server), ${name}: an input_required round trip (elicitation, retried with the answer)`);
  ok(JSON.parse(text(await c.callTool({ name: 'get_time_context', arguments: {} }))).now, `wrap(modern server), ${name}: a keel tool call`);
  await c.close();
}

// --- keel wrap around a legacy server, v2 client in auto mode -----------------------
{
  const box = new Server(); box.p.kill();
  const c = await v2('auto', keel, ['--log-level', 'error', 'wrap', '--', process.execPath, EVERYTHING], box.box.env);
  ok(c.getNegotiatedProtocolVersion() !== V, 'wrap(legacy server), v2 client auto: falls back to initialize', c.getNegotiatedProtocolVersion());
  const names = await tools(c);
  ok(names.includes('echo') && names.includes('get_time_context'), 'wrap(legacy server): its tools and keel\'s', names);
  ok(/héllo/.test(text(await c.callTool({ name: 'echo', arguments: { message: 'héllo' } }))), 'wrap(legacy server): an upstream call');
  await c.close();
}

// --- the spec's compatibility matrix, through the wrap -------------------------------
{
  const box = new Server(); box.p.kill();
  let failed = null;
  try { const c = await v2({ pin: V }, keel, ['--log-level', 'error', 'wrap', '--', process.execPath, EVERYTHING], box.box.env); await c.close(); } catch (e) { failed = e.message; }
  ok(failed !== null, 'modern-only client, legacy server behind the wrap: fails (the matrix: Modern / Legacy)', failed);
  const old = async (env) => {
    const c = new Client1({ name: 'keel-legacy', version: '1.0.0' }, { capabilities: {} });
    await c.connect(new Stdio1({ command: keel, args: ['--log-level', 'error', 'wrap', '--', process.execPath, MODERN],
      env: { PATH: process.env.PATH, HOME: process.env.HOME || '/tmp', ...box.box.env, ...env }, stderr: 'pipe' }));
    return c;
  };
  const c1 = await old({});
  const names = (await c1.listTools()).tools.map((t) => t.name);
  ok(names.includes('echo') && names.includes('get_time_context') && text(await c1.callTool({ name: 'echo', arguments: { text: 'old' } })) === 'old',
    'legacy client (1.x SDK), dual-era server behind the wrap: works (Legacy / Dual-era)', names);
  await c1.close();
  let refused = null;
  try { const c = await old({ MODERN_ONLY: '1' }); await c.close(); } catch (e) { refused = e.message; }
  ok(refused !== null && /-32022/.test(refused), 'legacy client, modern-only server behind the wrap: fails with the server\'s -32022 (Legacy / Modern)', refused);
}

// --- keel wrap on the wire ----------------------------------------------------
{
  const w = new Proc(['--log-level', 'error', 'wrap', '--', process.execPath, MODERN]);
  const d = await w.ask({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: meta } });
  ok(d.result?.resultType === 'complete' && d.result.capabilities?.tools, 'wrap: server/discover answered by the server, tools capability present', d);
  const call = await w.ask({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { _meta: meta, name: 'get_time_context', arguments: {} } });
  ok(call.result?.resultType === 'complete', 'wrap: keel\'s own tool answers a modern call with resultType complete', call);
  // An input_required answer is not the call's result: never annotated, never a loop, however often.
  let clean = true, last;
  for (let i = 0; i < 6; i++) {
    last = await w.ask({ jsonrpc: '2.0', id: 10 + i, method: 'tools/call', params: { _meta: asker, name: 'confirm', arguments: { action: 'drop table' } } });
    clean &&= last.result?.resultType === 'input_required' && !JSON.stringify(last).includes('keel');
  }
  ok(clean, 'wrap: six input_required answers to one call pass untouched (no advisory, no loop)', last);
  const bad = await w.ask({ jsonrpc: '2.0', id: 20, method: 'tools/call', params: { _meta: { ...meta, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' }, name: 'get_time_context', arguments: {} } });
  ok(bad.error?.code === -32022, 'wrap: keel\'s own tool, a version keel does not speak: -32022', bad);
  await w.close();
}

// --- a wrap started only for a probe writes nothing ------------------------------
{
  const w = new Proc(['--log-level', 'error', 'wrap', '--', process.execPath, MODERN]);
  const d = await w.ask({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: meta } });
  w.p.kill('SIGTERM');
  await w.exited;
  const files = existsSync(w.box.stateDir) ? readdirSync(w.box.stateDir) : [];
  ok(d.result?.supportedVersions && files.length === 0, 'a wrap that answered one server/discover and was killed wrote nothing', files);
  const w2 = new Proc(['--log-level', 'error', 'wrap', '--', process.execPath, MODERN]);
  await w2.ask({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { _meta: meta, name: 'echo', arguments: { text: 'x' } } });
  w2.p.kill('SIGTERM');
  await w2.exited;
  ok(existsSync(w2.box.stateDir) && readdirSync(w2.box.stateDir).length > 0, 'while a tools/call through the wrap is activity, recorded (the check above can fail)');
}

done();
