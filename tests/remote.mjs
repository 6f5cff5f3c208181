// remote.mjs: keel wrap --url against a server that misbehaves on purpose
// (tests/fixtures/httpfault.mjs). Each section is a way a hostile or broken
// remote server once hurt keel or its client: a session renewed thousands of
// times a second, memory growing with a flood the client does not read, a
// ping stuck behind calls the server never answers, an event line that never
// ends, a response on another request's stream. keel's CPU time and memory
// are read from /proc where the finding was about them.
import { readFileSync } from 'node:fs';
import { ok, done } from './lib/tap.mjs';
import { httpFault, Proc } from './lib/keel.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const INIT = { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } };
let n = 0;
const call = (name, args = {}) => ({ jsonrpc: '2.0', id: ++n, method: 'tools/call', params: { name, arguments: args } });
const answer = (k, id, ms = 10000) => k.until((m) => m.id === id, ms);

// CPU seconds (user + system) and resident MiB of a process.
const cpu = (pid) => { const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' '); return (Number(f[11]) + Number(f[12])) / 100; };
const rss = (pid) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;

async function wrapAt(url, args = []) {
  const k = new Proc(['--log-level', 'info', 'wrap', '--expose', 'none', ...args, '--url', url]);
  await k.ask(INIT);
  k.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  k.send({ jsonrpc: '2.0', id: 'tl', method: 'tools/list' });   // the client has seen the tools
  await answer(k, 'tl');
  return k;
}

// 1. A server whose GET stream answers 404 for the session (replicas without
// sticky sessions): keel renews the session at most 5 times a minute, with
// backoff; it had renewed 66,000 times in 11 s, telling the client
// tools/list_changed each time.
{
  const f = await httpFault();
  const k = await wrapAt(f.url);
  const before = (await f.stats()).initializes;
  const c = call('get404');
  k.send(c);
  await answer(k, c.id);
  const cpu0 = cpu(k.p.pid);
  await sleep(10000);
  const used = cpu(k.p.pid) - cpu0, s = await f.stats();
  const told = (k.skipped || []).concat(k.lines.map((l) => JSON.parse(l))).filter((m) => m.method === 'notifications/tools/list_changed').length;
  ok(s.initializes - before <= 5 && used < 0.5,
    `1: every GET stream 404: ${s.initializes - before} renewals and ${s.get404s} GETs in 10 s, ${used.toFixed(2)} CPU s (it was 66,000 renewals and 5.2 CPU s in 11 s)`);
  ok(told === 0, `1: and the client was told tools/list_changed ${told} times: the tools did not change`);
  ok(/upstream_http_renewals_exhausted renewals=5/.test(k.stderr) && (k.stderr.match(/renewals_exhausted/g) || []).length === 1,
    '1: keel says once that it stops renewing', k.stderr.split('\n').filter((l) => /renew/.test(l)).slice(-3));
  const e = call('echo', { text: 'still here' });
  k.send(e);
  const r = await answer(k, e.id);
  ok(r.result?.content?.[0]?.text === 'echo: still here', '1: calls on the session go on', r);
  await k.close();
  f.stop();
}

// 2. retry: 0 on the GET stream is raised to 250 ms (it gave 10,000 GETs a second).
{
  const f = await httpFault();
  const k = await wrapAt(f.url);
  const c = call('get_retry0');
  k.send(c);
  await answer(k, c.id);
  const g0 = (await f.stats()).getStreams;
  await sleep(3000);
  const gets = (await f.stats()).getStreams - g0;
  ok(gets >= 2 && gets <= 16, `2: a GET stream that says retry: 0 and closes: ${gets} reconnections in 3 s (at least 250 ms apart)`);
  await k.close();
  f.stop();
}

// 3. A flood while the client does not read keel's stdout: keel stops reading
// from the server once 1 MiB waits for the client (RSS had grown to 456 MB).
for (const tool of ['flood_get', 'flood_post']) {
  const f = await httpFault();
  const k = await wrapAt(f.url);
  const c = call(tool);
  k.send(c);
  if (tool === 'flood_get') await answer(k, c.id);
  else await sleep(200);
  k.p.stdout.pause();                          // the client stops reading
  let peak = 0;
  for (let i = 0; i < 15; i++) {
    await sleep(1000);
    peak = Math.max(peak, rss(k.p.pid));
  }
  const sent = (await f.stats()).floodBytes;
  ok(peak < 64, `3: ${tool}: a client that does not read for 15 s: keel's RSS peaked at ${peak.toFixed(1)} MiB (the server pushed ${(sent / 1048576).toFixed(0)} MiB into the connection; it was 456 MB in 30 s)`);
  k.p.stdout.resume();
  k.lines.length = 0;
  k.skipped = [];
  const p = { jsonrpc: '2.0', id: 'after-flood', method: 'ping' };
  k.send(p);
  const pong = await answer(k, 'after-flood', 20000).catch(() => null);
  ok(pong && pong.result, `3: ${tool}: and once the client reads again, keel goes on (ping answered)`);
  k.p.kill('SIGKILL');
  f.stop();
}

// 3b. A flood to a client that reads slowly (200 KB/s) and then closes its
// input: keel stops reading the server once 1 MiB waits, within one round of
// reading too, so it sees the end of the client's input and is gone within
// its 2 s of grace and 2 s for DELETE (it took 24 s: a socket's worth of
// flood queued past the mark before each pause).
{
  const f = await httpFault();
  const k = await wrapAt(f.url);
  k.send(call('flood_post'));
  await sleep(200);
  k.p.stdout.pause();
  let read = 0;
  const t = setInterval(() => { const b = k.p.stdout.read(1024); if (b) read += b.length; }, 5);
  await sleep(3000);
  const t0 = Date.now();
  k.p.stdin.end();
  const gone = await Promise.race([k.exited.then(() => Date.now() - t0), sleep(30000).then(() => null)]);
  clearInterval(t);
  ok(gone !== null && gone < 8000, `3b: a slow reader closes its input during a flood: keel is gone ${gone} ms later (it read ${(read / 1048576).toFixed(1)} MiB)`);
  k.p.kill('SIGKILL');
  f.stop();
}

// 4. ping, a cancel and keel's own requests never wait behind calls the server
// never answers (a ping waited 25 s behind 40 of them).
{
  const f = await httpFault();
  const k = await wrapAt(f.url);
  const stuck = Array.from({ length: 40 }, () => call('never'));
  for (const c of stuck) k.send(c);
  await sleep(500);
  const t0 = Date.now();
  k.send({ jsonrpc: '2.0', id: 'p1', method: 'ping' });
  const pong = await answer(k, 'p1', 5000).catch(() => null);
  const ms = Date.now() - t0;
  ok(pong && pong.result && ms < 100, `4: 40 calls the server never answers: ping answered in ${ms} ms`);
  const posts = (await f.stats()).posts;
  k.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: stuck[0].id } });
  await sleep(500);
  const after = (await f.stats()).posts;
  ok(after >= posts + 1, `4: a cancelled call frees its connection at once: a waiting call is sent in its place (${after - posts} POSTs)`);
  k.p.kill('SIGKILL');
  f.stop();
}

// 5. An event line that never ends fails its request at once with
// MESSAGE_TOO_LARGE once it passes --max-message-bytes (it held the request
// until the server gave up).
{
  const f = await httpFault();
  const k = await wrapAt(f.url, ['--max-message-bytes', '1048576']);
  const c = call('endless_line');
  const t0 = Date.now();
  k.send(c);
  const r = await answer(k, c.id, 10000).catch(() => null);
  const ms = Date.now() - t0;
  ok(r?.error?.data?.code === 'MESSAGE_TOO_LARGE' && ms < 1500,
    `5: an SSE data line that never ends: MESSAGE_TOO_LARGE after ${ms} ms (1 MiB arrives in about 80 ms)`, r);
  await k.close();
  f.stop();
}

// 6. A response on one request's stream carrying another request's id is
// dropped, not delivered as that other request's answer.
{
  const f = await httpFault();
  const k = await wrapAt(f.url);
  const waiting = call('never');
  k.send(waiting);
  await sleep(200);
  const c = call('wrong_stream', { other: waiting.id });
  k.send(c);
  const r = await answer(k, c.id);
  const stray = await answer(k, waiting.id, 700).catch(() => null);
  ok(r.result?.content?.[0]?.text === 'wrong_stream: mine' && !stray,
    "6: a response carrying another request's id on this request's stream: dropped; each request gets only its own answer", { r, stray });
  k.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: waiting.id } });
  await k.close();
  ok(/upstream_http_misrouted stream=post/.test(k.stderr), '6: and counted in the log', k.stderr.split('\n').filter((l) => /misrouted/.test(l)));
  f.stop();
}

// A server that answers every request, initialize included, as one event on
// a stream it leaves open with a keep-alive each second (it SHOULD close
// it): the messages held for the session went out only when initialize's
// stream ended, never, and after 28 calls every connection was held.
{
  const f = await httpFault(['--sse-open']);
  const k = new Proc(['--log-level', 'info', 'wrap', '--expose', 'none', '--overlay', 'none', '--url', f.url]);
  const t0 = Date.now();
  k.send(INIT);
  k.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  k.send({ jsonrpc: '2.0', id: 'p', method: 'ping' });
  const init = await answer(k, 0, 5000).catch(() => null), ping = await answer(k, 'p', 5000).catch(() => null);
  ok(init?.result?.serverInfo?.name === 'httpfault' && ping?.result && Date.now() - t0 < 4000,
    `a server that leaves initialize's stream open: the ping held for the session is answered at once (${Date.now() - t0} ms)`, [init, ping]);
  const calls = Array.from({ length: 40 }, (_, i) => call('echo', { text: `c${i}` }));
  const t1 = Date.now();
  for (const c of calls) k.send(c);
  const got = [];
  for (const c of calls) got.push(ping && got.every(Boolean) ? await answer(k, c.id, 8000).catch(() => null) : null);
  ok(got.every((r, i) => r?.result?.content?.[0]?.text === `echo: c${i}`) && Date.now() - t1 < 6000,
    `40 calls whose streams the server leaves open are all answered (${got.filter(Boolean).length} in ${Date.now() - t1} ms): keel ends a stream once its response came`);
  const s = await f.stats();
  ok(s.openStreams <= 2, `and keel holds none of those streams open (${s.openStreams} open at the server)`, s.openStreams);
  await k.close();
  f.stop();
}

done();
