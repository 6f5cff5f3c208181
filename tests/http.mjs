// http.mjs: keel wrap --url, a remote server over Streamable HTTP.
//
// 1. The real reference server (@modelcontextprotocol/server-everything in
//    streamableHttp mode, on loopback) through the real SDK client, directly
//    over HTTP and through keel wrap --url over stdio: the same tools (plus
//    keel's), byte-identical results and structured content, the same
//    progress on the wire, sampling and elicitation (server requests on the
//    request's stream) and the session ended (DELETE) when the client leaves.
// 2. A fault-injecting server of our own (fixtures/httpfault.mjs): every
//    failure gets its answer, with the cause, and nothing hangs.
import { spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import { createRequire } from 'node:module';
import { isDeepStrictEqual } from 'node:util';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { Client as Client2, StreamableHTTPClientTransport as Http2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as Stdio2 } from '@modelcontextprotocol/client/stdio';
import { ok, done } from './lib/tap.mjs';
import { keel, httpFault, root, sandbox, Proc } from './lib/keel.mjs';

const require = createRequire(import.meta.url);
const EVERYTHING = require.resolve('@modelcontextprotocol/server-everything/dist/index.js');
const MODERN = join(root, 'tests', 'fixtures', 'modern.mjs');
const KEEL_TOOLS = ['apply_override', 'get_time_context', 'mark_session_end', 'mark_session_start'];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const children = [];
process.on('exit', () => { for (const c of children) c.kill('SIGKILL'); });

function freePort() {
  return new Promise((res) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => res(port)); });
  });
}

async function everything() {
  const port = await freePort();
  const p = spawn(process.execPath, [EVERYTHING, 'streamableHttp'], { env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'pipe'] });
  children.push(p);
  await new Promise((res, rej) => {
    const t = setTimeout(() => rej(new Error('server-everything did not start')), 15000);
    p.stderr.on('data', (d) => { if (String(d).includes('listening')) { clearTimeout(t); res(); } });
  });
  return { url: `http://127.0.0.1:${port}/mcp`, stop: () => p.kill() };
}

const fault = httpFault;

async function session(transport, isKeel) {
  const out = { wire: [] };
  const client = new Client({ name: 'keel-http', version: '1.0.0' }, { capabilities: { sampling: {}, elicitation: {} } });
  client.setRequestHandler(CreateMessageRequestSchema, async () => ({ model: 'test-model', role: 'assistant', content: { type: 'text', text: 'sampled reply 42' } }));
  client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'decline' }));
  await client.connect(transport);
  const onmessage = transport.onmessage;
  transport.onmessage = (m, extra) => { out.wire.push(m); onmessage(m, extra); };
  out.tools = (await client.listTools()).tools.map((t) => t.name).sort();
  out.echo = await client.callTool({ name: 'echo', arguments: { message: 'héllo ✓' } });
  out.sum = await client.callTool({ name: 'get-sum', arguments: { a: 2, b: 40 } });
  out.structured = await client.callTool({ name: 'get-structured-content', arguments: { location: 'Chicago' } });
  out.long = await client.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 1, steps: 4 } },
    undefined, { onprogress: () => {} });
  out.progressOnWire = out.wire.filter((m) => m.method === 'notifications/progress').length;
  out.sampling = await client.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'hello', maxTokens: 20 } });
  out.elicitation = await client.callTool({ name: 'trigger-elicitation-request', arguments: {} });
  if (isKeel) out.keelTool = (await client.callTool({ name: 'get_time_context', arguments: {} })).structuredContent;
  await client.close();
  return out;
}

// ---- 1. server-everything over Streamable HTTP ----
{
  const srv = await everything();
  const box = sandbox();
  const direct = await session(new StreamableHTTPClientTransport(new URL(srv.url)), false);
  const wrapped = await session(new StdioClientTransport({
    command: keel, args: ['--log-level', 'error', 'wrap', '--url', srv.url],
    env: { PATH: process.env.PATH, HOME: process.env.HOME || '/tmp', ...box.env }, stderr: 'pipe',
  }), true);
  ok(isDeepStrictEqual(wrapped.tools, [...direct.tools, ...KEEL_TOOLS].sort()), "tools/list over HTTP: the server's tools plus keel's",
    { direct: direct.tools, wrapped: wrapped.tools });
  for (const k of ['echo', 'sum', 'structured', 'long', 'sampling', 'elicitation'])
    ok(isDeepStrictEqual(wrapped[k], direct[k]), `${k}: the same result through keel --url as over HTTP directly`, { direct: direct[k], wrapped: wrapped[k] });
  ok(direct.structured.structuredContent && JSON.stringify(wrapped.structured.structuredContent) === JSON.stringify(direct.structured.structuredContent),
    'structuredContent byte-identical through keel --url');
  ok(direct.progressOnWire === 4 && wrapped.progressOnWire === 4, `progress on the wire: ${wrapped.progressOnWire} through keel, ${direct.progressOnWire} directly`);
  ok(wrapped.sampling.content?.[0]?.text?.includes('sampled reply 42'), 'sampling: the server\'s request reached the client through keel and its answer went back');
  ok(wrapped.keelTool && typeof wrapped.keelTool.now === 'string', "keel's own tools answer beside a remote server");
  srv.stop();
}

// ---- 1b. the 2026-07-28 era over HTTP: no session, server/discover, input_required ----
{
  const srv = await fault(['--http'], MODERN);
  for (const mode of ['auto', { pin: '2026-07-28' }]) {
    const name = mode === 'auto' ? 'auto' : 'pinned';
    const run = async (transport) => {
      const c = new Client2({ name: 'keel-http-modern', version: '1.0.0' }, { capabilities: { elicitation: {} }, versionNegotiation: { mode } });
      c.setRequestHandler('elicitation/create', async () => ({ action: 'accept', content: { ok: true } }));
      await c.connect(transport);
      const out = { version: c.getNegotiatedProtocolVersion() };
      out.tools = (await c.listTools()).tools.map((t) => t.name).sort();
      out.echo = await c.callTool({ name: 'echo', arguments: { text: 'modern ✓' } });
      out.confirm = await c.callTool({ name: 'confirm', arguments: { action: 'deploy' } });
      if (transport instanceof Stdio2) out.keel = (await c.callTool({ name: 'get_time_context', arguments: {} })).content?.[0]?.text;
      await c.close();
      return out;
    };
    const box = sandbox();
    const direct = await run(new Http2(new URL(srv.url)));
    const wrapped = await run(new Stdio2({ command: keel, args: ['--log-level', 'error', 'wrap', '--url', srv.url],
      env: { PATH: process.env.PATH, HOME: process.env.HOME || '/tmp', ...box.env }, stderr: 'pipe' }));
    ok(direct.version === '2026-07-28' && wrapped.version === '2026-07-28', `v2 client ${name} over HTTP: the modern era directly and through keel --url`, { direct: direct.version, wrapped: wrapped.version });
    ok(isDeepStrictEqual(wrapped.tools, [...direct.tools, ...KEEL_TOOLS].sort()), `v2 client ${name}: the server's tools plus keel's`, wrapped.tools);
    ok(isDeepStrictEqual(wrapped.echo, direct.echo) && isDeepStrictEqual(wrapped.confirm, direct.confirm) && direct.confirm.content?.[0]?.text === 'confirmed: deploy',
      `v2 client ${name}: results and an input_required round trip identical through keel --url`, { direct, wrapped });
    ok(wrapped.keel && JSON.parse(wrapped.keel).now, `v2 client ${name}: keel's tools answer in the modern era`, wrapped.keel);
  }
  const s = await fault(['--http'], MODERN);   // fresh, for the headers of one request
  const k = new Proc(['--log-level', 'error', 'wrap', '--expose', 'none', '--url', s.url]);
  const d = await k.ask({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } } });
  ok(d.result?.supportedVersions?.includes('2026-07-28') && d.result.capabilities?.tools, 'server/discover over HTTP, with keel\'s tools capability', d);
  const bad = await k.ask({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2099-01-01', 'io.modelcontextprotocol/clientCapabilities': {} } } });
  ok(bad.error?.code === -32022, "a version the server does not speak: its -32022 (an HTTP 400's body) is the client's answer", bad);
  await k.close();
  s.stop();
  srv.stop();
}

// ---- 2. the fault-injecting server ----
const INIT = { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: { sampling: {} }, clientInfo: { name: 't', version: '1' } } };
let nextId = 1;
const call = (name, args = {}, extra = {}) => ({ jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name, arguments: args, ...extra } });
async function wrapAt(url, args = [], env = {}) {
  const k = new Proc(['--log-level', 'debug', 'wrap', '--expose', 'none', ...args, '--url', url], env);
  const init = await k.ask(INIT);
  k.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  return { k, init };
}
const answer = (k, id, ms = 10000) => k.until((m) => m.id === id, ms);

{
  const f = await fault();
  const { k, init } = await wrapAt(f.url, ['--header', 'X-Test: plain', '--header-env', 'Authorization=KEEL_TEST_TOKEN'],
    { KEEL_TEST_TOKEN: 'Bearer secret-token-123' });
  ok(init.result?.capabilities?.tools?.listChanged === true, 'initialize answered through keel; tools.listChanged, since a renewed session changes the list');

  let c = call('echo', { text: 'hi' });
  let r = await k.ask(c);
  ok(r.result?.content?.[0]?.text === 'echo: hi', 'a JSON answer is relayed', r);
  let s = await f.stats();
  const h = s.lastPost.headers;
  ok(h['mcp-session-id'] === s.sessions[0] && h['mcp-protocol-version'] === '2025-11-25',
    'the session id and the negotiated MCP-Protocol-Version go on later requests', h);
  ok(h.accept === 'application/json, text/event-stream' && h['mcp-method'] === 'tools/call' && h['mcp-name'] === 'echo',
    'Accept lists both answers; Mcp-Method and Mcp-Name mirror the request', h);
  ok(h['x-test'] === 'plain' && h.authorization === 'Bearer secret-token-123', '--header and --header-env are sent', h);

  {
    const burst = Array.from({ length: 300 }, (_, i) => call('echo', { text: `burst ${i}` }));
    for (const m of burst) k.send(m);
    const got = [];
    for (const m of burst) got.push(await answer(k, m.id, 20000).catch(() => null));
    ok(got.every((g, i) => g?.result?.content?.[0]?.text === `echo: burst ${i}`),
      '300 calls sent at once: each answered with its own result (at most 32 connections; the rest queue)', got.filter((g) => !g?.result).slice(0, 3));
  }

  c = call('echo_sse', { text: 'stream' });
  r = await k.ask(c);
  ok(r.result?.content?.[0]?.text === 'echo: stream', 'an answer on an event stream is relayed', r);

  c = call('slow_sse', {}, { _meta: { progressToken: 'p1' } });
  k.send(c);
  const progress = [];
  r = await k.until((m) => { if (m.method === "notifications/progress") progress.push(m.params.progress); return m.id === c.id; });
  ok(r.result?.content?.[0]?.text === 'slow done' && isDeepStrictEqual(progress, [1, 2, 3]), 'a slow stream: progress as it comes, then the result', { r, progress });

  const fails = [
    ['fail500', 500, 'http_status'], ['html500', 502, 'http_status'], ['not_jsonrpc', 200, 'bad_body'],
    ['cut_body', 200, 'stream_cut'], ['auth401', 401, 'unauthorized'], ['redirect_other', 307, 'redirect'],
  ];
  for (const [name, status, cause] of fails) {
    r = await k.ask(call(name));
    ok(r.error?.data?.code === 'UPSTREAM_HTTP' && r.error.data.status === status && r.error.data.cause === cause,
      `${name}: answered with UPSTREAM_HTTP, status ${status}, cause ${cause}`, r);
  }
  r = await k.ask(call('auth401'));
  ok(/--header-env 'Authorization=VAR'/.test(r.error?.message || ''), 'a 401 says how to give keel a token', r);
  r = await k.ask(call('error400_jsonrpc'));
  ok(r.error?.code === -32022 && isDeepStrictEqual(r.error.data, { supported: ['2025-11-25'] }),
    "the server's own JSON-RPC error in an HTTP 400 is the answer, with the request's id", r);
  r = await k.ask(call('redirect_same'));
  ok(r.result?.content?.[0]?.text === 'echo: redirected', 'a redirect within the origin is followed', r);

  c = call('drop_resume');
  r = await answer(k, (k.send(c), c.id));
  s = await f.stats();
  ok(r.result?.content?.[0]?.text === 'resumed ok' && s.resumes === 1, 'a stream dropped after an event id is resumed with Last-Event-ID', { r, resumes: s.resumes });

  {
    const quick = await wrapAt(f.url, ['--timeout', '1']);
    const t0 = Date.now();
    const n = await quick.k.ask(call('never'));
    ok(n.error?.data?.cause === 'timeout' && Date.now() - t0 < 4000, `a server that never answers: UPSTREAM_HTTP timeout after --timeout (${Date.now() - t0} ms)`, n);
    await quick.k.close();
  }

  // Server requests and notifications on the GET stream.
  c = call('notify_get');
  k.send(c);
  r = await answer(k, c.id);
  const note = await k.until((m) => m.method === 'notifications/message', 3000).catch(() => null);
  ok(r.result && note?.params?.data === 'from get', 'a notification on the GET stream reaches the client', { r, note });
  c = call('ask_sampling');
  k.send(c);
  const req = await k.until((m) => m.method === 'sampling/createMessage', 5000).catch(() => null);
  if (req) k.send({ jsonrpc: '2.0', id: req.id, result: { role: 'assistant', model: 'm', content: { type: 'text', text: 'hi back' } } });
  r = await answer(k, c.id);
  ok(r.result?.content?.[0]?.text === 'sampled: hi back', "a server request on the GET stream is answered by the client, through keel's POST", r);

  // The session ends (404): keel opens a new one and sends the call again.
  // The client is told tools/list_changed only when the new session's tools
  // differ from those it was given.
  k.send({ jsonrpc: '2.0', id: 'tl-1', method: 'tools/list' });
  const listed = await answer(k, 'tl-1');
  const before = (await f.stats()).initializes;
  c = call('expire', { once: true });
  k.send(c);
  r = await answer(k, c.id);
  let changed = await k.until((m) => m.method === 'notifications/tools/list_changed', 1500).catch(() => null);
  s = await f.stats();
  ok(listed.result?.tools && r.result?.content?.[0]?.text?.startsWith('expire: answered on s-') && s.initializes === before + 1 && !changed,
    'a 404 on the session: a new session (initialize replayed), the call sent again; the same tools: no list_changed (it was sent on every renewal)', { r, s: s.initializes, before, changed });
  c = call('expire_new');
  k.send(c);
  r = await answer(k, c.id);
  changed = await k.until((m) => m.method === 'notifications/tools/list_changed', 3000).catch(() => null);
  const again = await k.until((m) => m.method === 'notifications/tools/list_changed', 800).catch(() => null);
  ok(r.result?.content?.[0]?.text?.startsWith('expire_new: answered on s-') && changed && !again,
    'a renewed session whose tools differ: the client is told list_changed, once', { r, changed, again });
  r = await k.ask(call('echo', { text: 'after renewal' }));
  s = await f.stats();
  ok(r.result?.content?.[0]?.text === 'echo: after renewal' && s.lastPost.headers['mcp-session-id'] === s.sessions.at(-1),
    'later calls go on the new session', s.lastPost.headers);

  const logs = k.stderr;
  const deletes = (await f.stats()).deletes;
  await k.close();
  s = await f.stats();
  ok(s.deletes === deletes + 1, 'the session is ended with DELETE when the client leaves', s.deletes);
  ok(!/secret-token|Bearer|X-Test: plain|echo: hi|127\.0\.0\.1|after renewal/.test(logs) && /upstream_http/.test(logs),
    'debug logs carry events and sizes: no header value, URL or body', logs.split('\n').filter((l) => /secret|Bearer|echo|127/.test(l)).slice(0, 5));
  f.stop();
}

// A server that offers no GET stream (405), and one that went away.
{
  const f = await fault(['--json-only']);
  const { k } = await wrapAt(f.url);
  const r = await k.ask(call('echo', { text: 'json only' }));
  await sleep(200);
  ok(r.result?.content?.[0]?.text === 'echo: json only' && /upstream_http_no_get_stream status=405/.test(k.stderr),
    'a server without a GET stream (405) is fine', k.stderr.split('\n').filter((l) => /get_stream/.test(l)));
  // What a peer wrote never becomes a header of its own.
  k.send('{"jsonrpc":"2.0","method":"notifications/x\\r\\nX-Test: evil"}');
  const v = await k.ask({ jsonrpc: '2.0', id: 77, method: 'tools/call', params: { name: 'echo', arguments: { text: 'v' },
    _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28\r\nX-Test: evil2', 'io.modelcontextprotocol/clientCapabilities': {} } } });
  const posts = (await f.stats()).postHeaders.slice(-2);
  ok(v.id === 77 && posts.length === 2 && posts.every((p) => p['x-test'] === null) && posts[0]['mcp-method'] === null,
    'a method or version holding a line break is not sent as a header (no header injection)', posts);
  await k.close();
  f.stop();
  await sleep(100);
  const gone = new Proc(['--log-level', 'info', 'wrap', '--url', f.url]);
  const t0 = Date.now();
  const g = await gone.ask(INIT);
  ok(g.error?.data?.code === 'UPSTREAM_HTTP' && g.error.data.cause === 'connect' && Date.now() - t0 < 5000,
    `connection refused: tried again with backoff, then answered (${Date.now() - t0} ms)`, g);
  const again = await gone.ask({ jsonrpc: '2.0', id: 99, method: 'ping' });
  ok(again.error?.data?.cause === 'connect', 'keel keeps running and answers the next request too', again);
  const st = await gone.close();
  ok(st.code === 0, 'and exits 0 when the client leaves', st);
}

// An initialize the server redirects to another origin fails, and what the
// client sends after it is answered at once, not held for a session that
// never comes.
for (const [flag, what] of [['--init-elsewhere', 'to another origin'], ['--init-loop', 'to itself, more than 5 times']]) {
  const f = await fault([flag]);
  const k = new Proc(['--log-level', 'info', 'wrap', '--url', f.url]);
  const i = await k.ask(INIT);
  ok(i.error?.data?.code === 'UPSTREAM_HTTP' && i.error.data.cause === 'redirect', `an initialize redirected ${what} is answered UPSTREAM_HTTP redirect`, i);
  const t0 = Date.now();
  const p = await k.ask({ jsonrpc: '2.0', id: 5, method: 'ping' });
  ok(p.id === 5 && (p.error || p.result) && Date.now() - t0 < 3000,
    `a request after it is answered at once (${Date.now() - t0} ms), not held until the client leaves`, p);
  await k.close();
  f.stop();
}

// A session id as long as a JWT (600 bytes) is kept and sent back; one past
// 1023 bytes cannot be, and the refusals that follow say so.
for (const [bytes, works] of [[600, true], [1500, false]]) {
  const f = await fault(['--session-bytes', String(bytes)]);
  const k = new Proc(['--log-level', 'info', 'wrap', '--url', f.url]);
  const i = await k.ask(INIT);
  k.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  const r = await k.ask(call('echo', { text: 'long id' }));
  if (works) ok(i.result && r.result?.content?.[0]?.text === 'echo: long id', `a session id of ${bytes} bytes is kept and sent back`, r);
  else ok(i.error?.data?.cause === 'session_id' && /keel cannot send back: over 1023 bytes/.test(i.error.message) && r.id !== undefined && /upstream_http_session_unusable/.test(k.stderr),
    `a session id of ${bytes} bytes: the initialize is answered with why (keel cannot send it back), and what follows is answered`, i);
  await k.close();
  f.stop();
}

// TLS is always verified: a private CA is trusted only with --cacert.
{
  const dir = sandbox().dir;
  const cert = join(dir, 'cert.pem'), key = join(dir, 'key.pem');
  const gen = spawnSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=127.0.0.1',
    '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', key, '-out', cert], { encoding: 'utf8' });
  ok(gen.status === 0, 'a self-signed certificate for the loopback server', gen.stderr);
  const f = await fault(['--tls', cert, key]);
  const url = f.url.replace('http:', 'https:');
  let k = new Proc(['--log-level', 'error', 'wrap', '--url', url]);
  let r = await k.ask(INIT);
  ok(r.error?.data?.cause === 'tls', 'a certificate keel cannot verify: UPSTREAM_HTTP tls, nothing sent', r);
  await k.close();
  k = new Proc(['--log-level', 'error', 'wrap', '--expose', 'none', '--cacert', cert, '--url', url]);
  r = await k.ask(INIT);
  k.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  const e = await k.ask(call('echo', { text: 'over tls' }));
  ok(r.result?.protocolVersion && e.result?.content?.[0]?.text === 'echo: over tls', 'with --cacert naming its CA, the same server answers over TLS', { r, e });
  await k.close();
  f.stop();
  const dns = new Proc(['--log-level', 'error', 'wrap', '--url', 'http://no-such-host.invalid/mcp']);
  r = await dns.ask(INIT);
  ok(r.error?.data?.cause === 'dns' && /could not be resolved/.test(r.error.message), 'a host name that does not resolve: UPSTREAM_HTTP dns', r);
  await dns.close();
}

// Bad command lines say what to do.
{
  const run = (args, env = {}) => new Promise((res) => {
    const p = spawn(keel, ['wrap', ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    p.stderr.on('data', (d) => { err += d; });
    p.on('exit', (code) => res({ code, err }));
  });
  let r = await run(['--url', 'ftp://example.com/mcp']);
  ok(r.code === 64 && /http:\/\/ or https:\/\//.test(r.err), 'a URL that is not http(s) is a usage error, 64, like every bad option', r);
  r = await run(['--url', 'http://127.0.0.1:1/mcp', '--header-env', 'Authorization=KEEL_UNSET_VAR_X']);
  ok(r.code === 64 && /the environment variable KEEL_UNSET_VAR_X, which is not set/.test(r.err),
    '--header-env naming an unset variable is a usage error that names the variable (among several, which one)', r);
  r = await run(['--url', 'http://127.0.0.1:1/mcp', '--header-env', 'Authorization']);
  ok(r.code === 64 && /needs =VAR after the header name/.test(r.err), '--header-env without =VAR says so (not "needs a header name")', r);
  r = await run(['--url', 'http://127.0.0.1:1/mcp', '--header', 'Bad Name: x']);
  ok(r.code === 64 && /header name/.test(r.err), 'a header name HTTP does not allow is refused', r);
  r = await run(['--url', 'http://127.0.0.1:1/mcp', 'node', 'server.js']);
  ok(r.code === 64 && /not both/.test(r.err), '--url and a command together are refused', r);
  r = await run(['--header', 'X: y', 'node', 'server.js']);
  ok(r.code === 64 && /go with --url/.test(r.err), '--header without --url is refused', r);
}

done();
