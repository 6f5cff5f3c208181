// wrap.mjs: keel wrap around a deliberately broken upstream (fixtures/upstream.mjs).
//
// Each fault path a user of a stdio proxy trips over has a check here: the
// upstream exits mid-request, prints garbage, floods, hangs, ignores SIGTERM,
// sends a huge line; the client sends a huge line; keel is killed; the
// upstream restarts. Plus the options: --env, --cwd, --command-args,
// --expose, --tool-prefix, and what keel adds to initialize and tools/list.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ok, skip, done } from './lib/tap.mjs';
import { root, Proc, sandbox } from './lib/keel.mjs';
import { shaped } from './lib/shapes.mjs';

const UP = join(root, 'tests', 'fixtures', 'upstream.mjs');
const wrap = (mode, opts = [], env = {}) => new Proc(['--log-level', 'info', 'wrap', ...opts, '--', process.execPath, UP, mode], env);
const init = { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } };
const call = (id, name, args = {}) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
const alive = (pid) => { try { process.kill(pid, 0); return true; } catch { return false; } };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function upstreamPid(k) {
  for (let i = 0; i < 100 && !/upstream pid=(\d+)/.test(k.stderr); i++) await sleep(20);
  return Number((k.stderr.match(/upstream pid=(\d+)/) || [])[1]);
}
async function handshake(k) {
  const r = await k.ask(init);
  k.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  return r;
}

// By default keel adds its core tools only: what acting on an advisory and
// keeping time need, about 9 KB of tools/list instead of 41 KB.
{
  const k = wrap('normal');
  await handshake(k);
  const r = await k.ask({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
  const mine = r.result.tools.map((t) => t.name).filter((n) => !['echo', 'env', 'cwd', 'pid', 'slow', 'flood', 'huge', 'check_rumination', 'structured', 'model_echo', 'ask_model'].includes(n));
  const bytes = JSON.stringify(r.result.tools.filter((t) => mine.includes(t.name))).length;
  ok(mine.join() === 'get_time_context,mark_session_start,mark_session_end,apply_override' && bytes < 12000,
    `by default keel adds its four core tools to tools/list (${bytes} bytes)`, mine);
  const c = await k.ask(call(2, 'check_sycophancy', { candidate_response: 'x' }));
  ok(c.error && c.error.message === 'unknown tool', 'a keel tool it does not expose is not answered by keel: the call goes to the server', c);
  await k.close();
}
// initialize and tools/list: keel's tools beside the upstream's.
{
  const k = wrap('normal', ['--expose', 'all']);
  let r = await handshake(k);
  ok(r.id === 0 && r.result.serverInfo.name === 'test-upstream', 'initialize is relayed to the upstream and back');
  r = await k.ask({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
  const names = r.result.tools.map((t) => t.name);
  ok(names.includes('echo') && names.includes('get_time_context') && names.includes('keel_check_rumination')
    && names.filter((n) => n === 'check_rumination').length === 1, 'tools/list: keel\'s tools appended; the clashing one renamed keel_check_rumination', names);
  r = await k.ask(call(2, 'check_rumination', {}));
  ok(r.result.content[0].text === 'upstream check_rumination', 'the clashing name still reaches the upstream');
  r = await k.ask(call(3, 'keel_check_rumination', { current_prompt: 'x', history: [] }));
  ok(r.result.structuredContent.detected === false, 'keel_check_rumination is answered by keel');
  r = await k.ask(call(4, 'check_sycophancy', { candidate_response: 'You are absolutely right.' }));
  ok(r.result.structuredContent.pattern === 'unconditional_agreement', 'a keel tool is answered by keel, never forwarded');
  r = await k.ask(call(5, 'echo', { message: 'héllo' }));
  ok(r.result.content[0].text === 'héllo', 'an upstream tool is relayed');
  const t0 = Date.now();
  const ex = await k.close();
  ok(ex.code === 0 && Date.now() - t0 < 2500, `client EOF: upstream stopped, keel exits 0 (${Date.now() - t0} ms)`, ex);
  ok(/tool_renamed name=check_rumination as=keel_check_rumination/.test(k.stderr), 'the rename is logged as an event', k.stderr);
}
{
  const k = wrap('normal', ['--expose', 'guardrail', '--tool-prefix', 'kk_']);
  await handshake(k);
  const r = await k.ask({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
  const names = r.result.tools.map((t) => t.name);
  ok(names.includes('kk_check_rumination') && names.includes('check_sycophancy') && !names.includes('get_time_context'),
    '--expose guardrail and --tool-prefix', names);
  await k.close();
}
{
  const k = wrap('normal', ['--expose', 'none']);
  k.send(init);
  const raw = await k.next();
  await k.ask({ jsonrpc: '2.0', id: 1, method: 'tools/list' }).then((r) => ok(r.result.tools.length === 11 && !r.result.tools.some((t) => t.name === 'get_time_context'), '--expose none: tools/list is the upstream\'s alone'));
  ok(raw.startsWith('{"jsonrpc":"2.0","id":0,"result":{"protocolVersion"'), '--expose none: initialize passes byte for byte', raw);
  await k.close();
}
{
  const k = wrap('notools');
  const r = await k.ask(init);
  ok(r.result.capabilities.tools?.listChanged === false && r.result.capabilities.logging, 'an upstream without tools: capabilities.tools added (listChanged false: nothing will change them), the rest kept', r.result.capabilities);
  await k.close();
}
// The client's notifications reach the server as they were sent.
{
  const k = wrap('normal');
  await handshake(k);
  k.send({ jsonrpc: '2.0', method: 'notifications/roots/list_changed' });
  const r = await k.ask(call(1, 'notes'));
  ok(r.result?.content?.[0]?.text === 'notifications/initialized,notifications/roots/list_changed', 'the client\'s notifications reach the server, in order', r.result);
  const p = await k.ask({ jsonrpc: '2.0', id: 2, method: 'ping' });
  ok(JSON.stringify(p.result) === '{}', 'a ping\'s answer passes as the server gave it: {} (only initialize and server/discover get keel\'s tools capability)', p);
  await k.close();
}
// capabilities {} or none at all: the member is spliced in as valid JSON;
// with --restart, listChanged is true (a respawn tells the client to list again).
for (const [mode, opts] of [['emptycaps', []], ['nocaps', []], ['notools', ['--restart=1']]]) {
  const k = wrap(mode, opts);
  k.send(init);
  const raw = await k.next();
  let caps = null;
  try { caps = JSON.parse(raw).result.capabilities; } catch { /* not JSON */ }
  ok(caps?.tools?.listChanged === (opts.length > 0), `initialize from an upstream (${mode}${opts.length ? ', --restart=1' : ''}): capabilities.tools with listChanged ${opts.length > 0}, valid JSON`, raw);
  await k.close();
}
{
  const k = wrap('paged', ['--expose', 'all']);
  await handshake(k);
  const p1 = await k.ask({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
  const p2 = await k.ask({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: { cursor: p1.result.nextCursor } });
  ok(p1.result.tools.length === 3 && p1.result.nextCursor === 'p2' && !p1.result.tools.some((t) => t.name === 'get_time_context'),
    'pagination: the first page is untouched');
  ok(p2.result.tools.some((t) => t.name === 'get_time_context') && p2.result.tools.some((t) => t.name === 'keel_check_rumination')
    && !p2.result.nextCursor, 'pagination: keel\'s tools on the last page, clashes with earlier pages seen');
  await k.close();
}
{
  const k = wrap('nullcursor');
  await handshake(k);
  const r = await k.ask({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
  ok(r.result.tools.some((t) => t.name === 'echo') && r.result.tools.some((t) => t.name === 'get_time_context'),
    'pagination: a page with "nextCursor": null is the last, keel\'s tools are on it', r.result.tools.map((t) => t.name));
  await k.close();
}

// The environment, cwd and joined command strings.
{
  const k = new Proc(['wrap', '--env', 'KEEL_TEST_VAR=from-keel', '--cwd', '/tmp', '--command-args',
    `'${process.execPath}' "${UP}" normal`], { KEEL_TEST_SECRET: 'api-key-123' });
  await handshake(k);
  let r = await k.ask(call(1, 'env', { key: 'KEEL_TEST_VAR' }));
  ok(r.result.content[0].text === 'from-keel', '--env adds a variable');
  r = await k.ask(call(2, 'env', { key: 'KEEL_TEST_SECRET' }));
  ok(r.result.content[0].text === 'api-key-123', 'the upstream gets keel\'s full environment (API keys)');
  r = await k.ask(call(3, 'cwd'));
  ok(r.result.content[0].text === '/tmp', '--cwd');
  ok(/upstream pid=/.test(k.stderr), 'the upstream\'s stderr passes through');
  await k.close();
}

// Faults.
{
  const k = wrap('exit');
  await handshake(k);
  k.send(call(1, 'echo', { message: 'x' }));
  k.send(call(2, 'echo', { message: 'y' }));
  const a = await k.until((m) => m.id === 1), b = await k.until((m) => m.id === 2);
  ok(a.error && /exited with status 3/.test(a.error.message) && b.error, 'the upstream exits mid-request: every pending request gets an error at once', [a, b]);
  const ex = await k.exited;
  ok(ex.code === 3, 'keel exits with the upstream\'s status', ex);
}
{
  const k = wrap('garbage');
  const r = await handshake(k);
  const r2 = await k.ask(call(1, 'echo', { message: 'ok' }));
  ok(r.result && r2.result.content[0].text === 'ok', 'non-JSON on the upstream\'s stdout never reaches the client');
  await k.close();
  ok(/upstream_not_json bytes=\d+/.test(k.stderr) && !/debug: answering|"not": json/.test(k.stderr),
    'it is logged by its size only: its text (which may hold what the server was sent) never reaches stderr', k.stderr);
  ok(/upstream_not_jsonrpc bytes=\d+/.test(k.stderr) && !/a JSON log line/.test(k.stderr), 'so is JSON that is not JSON-RPC (a JSON logger)', k.stderr);
  ok(k.lines.length === 0 && (k.skipped || []).length === 0, 'no stray lines on stdout');
}
{
  const k = wrap('normal');
  await handshake(k);
  k.send(call(1, 'flood', { n: 20000 }));
  let seen = 0, inOrder = true, last = -1;
  const r = await k.until((m) => {
    if (m.method === 'notifications/message') {
      const i = Number(m.params.data.slice(1));
      if (i !== last + 1) inOrder = false;
      last = i;
      seen++;
    }
    return m.id === 1;
  }, 30000);
  ok(seen === 20000 && inOrder && r.result.content[0].text === 'flood done', `a flood of 20000 notifications arrives whole and in order (${seen})`);
  await k.close();
}
{
  const k = wrap('normal', ['--max-message-bytes', '1M']);
  await handshake(k);
  let r = await k.ask(call(1, 'huge', { mb: 3 }));
  ok(r.error && r.error.data.code === 'MESSAGE_TOO_LARGE' && r.id === 1, 'a huge upstream line: the client gets an error for that id', r);
  r = await k.ask({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: { message: 'y'.repeat(2 << 20) } } });
  ok(r.error && r.error.data.code === 'MESSAGE_TOO_LARGE' && r.id === 2, 'a huge client line: an error for that id, never forwarded', r);
  k.send(`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo","arguments":{"message":"${'q'.repeat(2 << 20)}"}},"id":"last"}`);
  r = JSON.parse(await k.next());
  ok(r.error && r.id === 'last', 'a huge client line with its id last still gets an error for that id', r);
  r = await k.ask(call(4, 'huge_idlast', { mb: 2 }));
  ok(r.error && r.error.data.code === 'MESSAGE_TOO_LARGE' && r.id === 4, 'a huge upstream response with its id last: the client still gets an error', r);
  r = await k.ask({ jsonrpc: '2.0', id: 3, method: 'ping' });
  ok(r.id === 3 && r.result, 'keel and the upstream keep going after all of them');
  k.send({ jsonrpc: '2.0', id: 999, result: { roots: [] } });
  r = await k.ask(call(5, 'stray'));
  ok(r.result.content[0].text === '0', 'a client response to a request the upstream never made is not forwarded', r);
  await k.close();
}
// Large responses pass on as they arrive (cut-through), never mixed with
// what keel writes meanwhile; one that breaks is cut off and answered.
{
  const k = wrap('normal', ['--overlay', 'none', '--expose', 'all']);
  await handshake(k);
  const t0 = Date.now();
  k.send(call(1, 'trickle', { kb: 512, ms: 1500, end: 'ok' }));
  while (k.buf.length < 512 << 10 && Date.now() - t0 < 1200) await sleep(10);
  const early = k.buf.length, after = Date.now() - t0;
  ok(early >= 512 << 10 && k.lines.length === 0, `a large result reaches the client while the upstream is still writing it (${early} bytes after ${after} ms)`);
  k.send(call(2, 'check_sycophancy', { candidate_response: 'Great idea.' }));
  const line = await k.next();
  ok(line === `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"${'w'.repeat(512 << 10)}"}]}}`,
    'it arrives byte for byte', line.length);
  let r = JSON.parse(await k.next());
  ok(r.id === 2 && r.result.structuredContent, 'a keel answer written meanwhile waits for the line to end, then follows it', r);
  for (const [id, idlast] of [[3, false], [4, true]]) {
    k.send(call(id, 'trickle', { kb: 256, ms: 100, end: 'bad', idlast }));
    const broken = await k.next();
    let parses = true;
    try { JSON.parse(broken); } catch { parses = false; }
    ok(!parses && broken.length >= 256 << 10, `a large result that stops being JSON midway is cut off there${idlast ? ' (id last)' : ''}`, broken.length);
    r = JSON.parse(await k.next());
    ok(r.id === id && r.error && r.error.data.code === 'UPSTREAM_MALFORMED',
      `and its request gets an error${idlast ? ', the id read from the end of the line' : ''}`, r);
  }
  k.send(call(31, 'trickle', { kb: 256, ms: 100, end: 'badsplit', idlast: true }));
  await k.next();
  r = JSON.parse(await k.next());
  ok(r.id === 31 && r.error && r.error.data.code === 'UPSTREAM_MALFORMED',
    'a line that breaks before its id, the id finished in a later write: still answered', r);
  k.send(call(32, 'trickle', { kb: 256, ms: 100, end: 'trailing' }));
  r = JSON.parse(await k.next());
  ok(r.id === 32 && r.result && r.result.content[0].text.length === 256 << 10,
    'a whole result followed by more text on its line: the result arrives, the rest is dropped', r.id);
  r = await k.ask(call(33, 'biglog'));
  ok(r.id === 33 && r.result.content[0].text === 'logged' && /upstream_not_jsonrpc bytes=1\d{5}/.test(k.stderr),
    'a 100 KiB JSON log line on the server\'s stdout is diverted, not passed on', r);
  const longId = 'x'.repeat(70);
  k.send(call(longId, 'trickle', { kb: 128, ms: 50, end: 'ok' }));
  r = JSON.parse(await k.next());
  ok(r.id === longId && r.result, 'a large result for a 70-byte id', r.id);
  r = await k.ask({ jsonrpc: '2.0', id: 5, method: 'ping' });
  ok(r.id === 5 && r.result, 'the relay goes on after broken large lines', r);
  k.send(call(6, 'trickle', { kb: 256, ms: 100, end: 'die' }));
  const broken = await k.next();
  r = JSON.parse(await k.next());
  ok(broken.length >= 256 << 10 && r.id === 6 && r.error, 'the upstream exits mid-line: the line is cut off and its request answered', r);
  const ex = await k.exited;
  ok(ex.code === 6, 'and keel exits with the upstream\'s status', ex);
  ok(!k.lines.some((l) => l.includes(longId)), 'the 70-byte id was answered once: nothing more for it when the upstream exits', k.lines.length);
}
// Large results the overlay holds whole go out from where they were read:
// while the client does not read, keel waits without spinning and reads on
// only into the room its buffer has; nothing is lost or reordered, and a
// restart meanwhile keeps what is still to be written.
{
  const cpu = (pid) => { const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' '); return (+f[11] + +f[12]) * 10; };
  const k = wrap('normal');
  await handshake(k);
  k.p.stdout.pause();
  for (let i = 1; i <= 3; i++) k.send(call(i, 'huge', { kb: 1100 }));
  k.send(call(4, 'echo', { message: 'after' }));
  await sleep(300);
  const c0 = cpu(k.p.pid);
  await sleep(700);
  const spent = cpu(k.p.pid) - c0;
  k.p.stdout.resume();
  const want = (id) => `{"jsonrpc":"2.0","id":${id},"result":{"content":[{"type":"text","text":"${'x'.repeat(1100 << 10)}"}]}}`;
  const got = [];
  for (let i = 0; i < 4; i++) got.push(await k.next());
  ok(got.slice(0, 3).every((l, i) => l === want(i + 1)), 'three 1.1 MiB results the client read late arrive whole, in order', got.map((l) => l.length));
  ok(JSON.parse(got[3]).result.content[0].text === 'after', 'and the call after them follows');
  ok(spent <= 100, `keel waited for the client without spinning (${spent} ms CPU in 700 ms)`);
  await k.close();
}
// Large tool results pass on while the overlay reads them (over 1 MiB, so
// no rule reads them): the loop detector still compares each whole result,
// advisories go into the bytes held back from the end of content on, and
// keel holds about one read of the result, not all of it.
{
  const k = wrap('normal');
  await handshake(k);
  const t0 = Date.now();
  k.send(call(1, 'trickle', { kb: 1536, ms: 1500, end: 'ok' }));
  while (k.buf.length < 1 << 20 && Date.now() - t0 < 1300) await sleep(10);
  ok(k.buf.length >= 1 << 20 && k.lines.length === 0,
    `with the overlay on, a 1.5 MiB tool result reaches the client while the upstream is still writing it (${k.buf.length} bytes after ${Date.now() - t0} ms)`);
  await k.next();
  let id = 10;
  const strip = (res, orig) => { // the result without what keel added
    const r = structuredClone(res);
    if (r.content) r.content = r.content.filter((b) => !/keel/i.test(b.text.slice(0, 400)) || b.text.length > 4096);
    if (!orig.content) delete r.content;
    if (r._meta) delete r._meta['keel/advisories'];
    if (!orig._meta) delete r._meta;
    return r;
  };
  for (const layout of ['plain', 'idlast', 'meta_first', 'meta_after', 'structured', 'no_content']) {
    const got = [];
    for (let i = 0; i < 4; i++) { k.send(call(++id, 'shaped', { layout })); got.push([await k.next(), id]); }
    const exact = got.slice(0, 3).every(([l, i]) => l === shaped(i, { layout }));
    const [l4, i4] = got[3];
    let j = null;
    try { j = JSON.parse(l4); } catch { /* checked below */ }
    const orig = JSON.parse(shaped(i4, { layout })).result;
    const adv = j && j.result._meta && j.result._meta['keel/advisories'];
    const blocks = j && j.result.content;
    ok(exact && j && j.id === i4 && adv && adv[0].detector === 'loop' && blocks && blocks[blocks.length - 1].type === 'text'
      && /keel/i.test(blocks[blocks.length - 1].text) && JSON.stringify(strip(j.result, orig)) === JSON.stringify(orig),
      `a 1.5 MiB result laid out ${layout}: three pass byte for byte, the 4th repeat carries the loop advisory, the server's members as they were`,
      j ? { adv, last: blocks && blocks[blocks.length - 1], keys: Object.keys(j.result) } : l4.slice(-300));
  }
  const last = [];
  for (let i = 1; i <= 4; i++) { k.send(call(++id, 'shaped', { layout: 'last_byte' })); last.push((await k.next()) === shaped(id, { layout: 'last_byte', n: i })); }
  ok(last.every(Boolean), 'the same call four times, its 1.5 MiB results differing only in their last character: no advisory, each byte for byte', last);
  const sc = [];
  for (let i = 0; i < 4; i++) { k.send(call(++id, 'shaped', { layout: 'string_content' })); sc.push(JSON.parse(await k.next())); }
  ok(sc.every((r) => r.result.content === 'x'.repeat(1536 << 10)) && sc[3].result._meta && sc[3].result._meta['keel/advisories'][0].detector === 'loop',
    'a 1.5 MiB result whose content is a string (not MCP\'s array): the 4th repeat carries the advisory in _meta, and a parser still reads the server\'s content',
    sc.map((r) => [typeof r.result.content, Object.keys(r.result)]));
  const mixed = [];
  for (const i of [1, 2, 3]) { // a 70-byte id is held whole; a short one passes on as it arrives
    const cid = i === 2 ? ++id : `${'i'.repeat(70)}${++id}`;
    k.send(call(cid, 'shaped', { layout: 'big_error', n: 7 }));
    mixed.push(JSON.parse(await k.next()));
  }
  ok(mixed.map((e) => (e.result._meta ? e.result._meta['keel/advisories'].map((a) => a.pattern).join() : '')).join('|') === '||same_error',
    'the same 1.5 MiB error three times, held, passed on, held: the 3rd carries same_error (one identity either way)', mixed.map((e) => e.result._meta));
  const errs = [];
  for (const n of [1001, 1002, 1003]) { k.send(call(++id, 'shaped', { layout: 'error', n })); errs.push(JSON.parse(await k.next())); }
  ok(errs.map((e) => (e.result._meta ? e.result._meta['keel/advisories'].map((a) => a.pattern).join() : '')).join('|') === '||same_error',
    'the same error three times in a 1.5 MiB result, its numbers changing: the 3rd carries same_error (its first block read whole)',
    errs.map((e) => e.result._meta));
  let line = '';
  k.send(call(++id, 'shaped', { layout: 'wide_chars', cut: true, ms: 1500 }));
  const t1 = Date.now();
  while (Buffer.byteLength(k.buf) < 1 << 20 && Date.now() - t1 < 1300) await sleep(10);
  const early = Buffer.byteLength(k.buf);
  line = await k.next();
  ok(early >= 1 << 20 && line === shaped(id, { layout: 'wide_chars' }),
    `a 1.5 MiB result of three-byte characters, read in pieces that end inside characters, passes on as it arrives (${early} bytes early) and byte for byte`, line.length);
  k.send(call(++id, 'shaped', { layout: 'crlf' }));
  line = await k.next();
  ok(line === shaped(id, { layout: 'crlf' }).slice(0, -1), 'a 1.5 MiB result ended by CRLF passes without its CR', line.slice(-20));
  for (const [layout, why] of [['bad_utf8', 'not valid UTF-8'], ['dup', 'a member is given twice']]) {
    k.send(call(++id, 'shaped', { layout }));
    const broken = await k.next();
    let parses = true;
    try { JSON.parse(broken); } catch { parses = false; }
    const r = JSON.parse(await k.next());
    ok(!parses && r.id === id && r.error && r.error.data.code === 'UPSTREAM_BAD_RESPONSE' && r.error.message.includes(why),
      `a 1.5 MiB result found ${why} after it began to pass is cut off there, and its request answered`, { n: broken.length, r });
  }
  const r = await k.ask({ jsonrpc: '2.0', id: ++id, method: 'ping' });
  ok(r.result, 'and keel goes on', r);
  k.send(call(++id, 'trickle', { kb: 1536, ms: 200, end: 'die' }));
  const broken = await k.next();
  const e = JSON.parse(await k.next());
  const ex = await k.exited;
  ok(broken.length >= 1 << 20 && e.id === id && e.error && e.error.data.code === 'UPSTREAM_MALFORMED' && ex.code === 6,
    'the upstream exits while a 1.5 MiB result passes on: the line is cut off, its request answered, keel exits with the upstream\'s status', { n: broken.length, e, ex });
}
{
  const k = wrap('normal');
  await handshake(k);
  for (let i = 1; i <= 4; i++) {
    k.send(call(i, 'huge', { mb: 8 }));
    const l = await k.next();
    if (i === 4) ok(l.length > 8 << 20 && JSON.parse(l).result._meta['keel/advisories'][0].detector === 'loop', 'an 8 MiB result repeated: the 4th carries the loop advisory', l.length);
  }
  const peak = Number((readFileSync(`/proc/${k.p.pid}/status`, 'utf8').match(/VmHWM:\s+(\d+)/) || [])[1]);
  if (process.env.KEEL_SANITIZED)
    skip('keel holds about one read of an 8 MiB result, not all of it', 'ASan keeps freed memory in quarantine; measured in the plain build');
  else
    ok(peak > 0 && peak < 10 * 1024, `keel holds about one read of an 8 MiB result, not all of it (peak RSS ${peak} KiB over four)`);
  await k.close();
}
{
  const marker = join(sandbox().dir, 'lent-marker');   // the fixture dies once, on the call that names it
  const k = wrap('dies-once', ['--restart=2']);
  await handshake(k);
  k.p.stdout.pause();
  k.send(call(1, 'huge', { mb: 2 }));
  await sleep(400);
  k.send(call(2, 'echo', { message: 'a', marker }));
  await sleep(400);
  k.p.stdout.resume();
  const line = await k.next();
  ok(line === `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"${'x'.repeat(2 << 20)}"}]}}`,
    'a large result still being written when its upstream dies arrives whole', line.length);
  const r = await k.until((m) => m.id === 2, 5000);
  ok(r.error && /exited with status 4/.test(r.error.message), 'and the call that ended it is answered', r);
  const ex = await k.close();
  ok(ex.code === 0, 'keel ends cleanly (under ASan: nothing leaked)', { ex, stderr: k.stderr.slice(-300) });
}
{
  const k = wrap('normal', ['--overlay', 'none', '--max-message-bytes', '1M']);
  await handshake(k);
  for (const [id, tool] of [[1, 'huge'], [2, 'huge_idlast']]) {
    k.send(call(id, tool, { mb: 2 }));
    const broken = await k.next();
    const r = JSON.parse(await k.next());
    ok(broken.length <= 1 << 20 && r.id === id && r.error && r.error.data.code === 'MESSAGE_TOO_LARGE',
      `a result passed on as it arrives that grows past --max-message-bytes is cut off at the limit and answered (${tool})`, r);
  }
  await k.close();
}
{
  const k = wrap('bigtools', ['--overlay', 'none']);
  await handshake(k);
  const r = await k.ask({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
  ok(r.result.tools.length > 600 && r.result.tools.some((t) => t.name === 'get_time_context'),
    'a tools/list answer over 64 KiB, id last, is held whole and gets keel\'s tools', r.result.tools.length);
  await k.close();
}
{
  const k = wrap('hang');
  await handshake(k);
  const pid = await upstreamPid(k);
  k.send(call(1, 'echo', { message: 'x' }));
  await sleep(100);
  const t0 = Date.now();
  k.p.stdin.end();
  const r = await k.until((m) => m.id === 1).catch(() => null);
  const ex = await k.exited;
  ok(r && r.error, 'a hung upstream: the pending request is answered when keel stops it', r);
  ok(!alive(pid) && Date.now() - t0 < 3500, `client EOF: a hung upstream is gone within the grace periods (${Date.now() - t0} ms)`, ex);
}
{
  const k = wrap('stubborn');
  await handshake(k);
  const pid = await upstreamPid(k);
  const t0 = Date.now();
  k.p.stdin.end();
  await k.exited;
  const ms = Date.now() - t0;
  ok(!alive(pid) && ms >= 2150 && ms < 6500 && /upstream_sigterm/.test(k.stderr) && /upstream_sigkill/.test(k.stderr),
    `an upstream that ignores SIGTERM gets SIGKILL 2 s later (${ms} ms: its stdin closed, 0.25-2 s, SIGTERM, 2 s, SIGKILL)`, k.stderr);
}
{
  const k = wrap('hang');
  await handshake(k);
  const pid = await upstreamPid(k);
  k.p.kill('SIGTERM');
  const ex = await k.exited;
  ok(!alive(pid) && ex.code === 143, 'SIGTERM to keel: the upstream goes too; keel exits 143', ex);
}
{
  const k = wrap('hang');
  await handshake(k);
  const pid = await upstreamPid(k);
  k.p.kill('SIGKILL');
  await k.exited;
  let gone = false;
  for (let i = 0; i < 100 && !(gone = !alive(pid)); i++) await sleep(20);
  ok(gone, 'kill -9 keel: the upstream dies with it (no orphan)');
}
{
  const k = new Proc(['wrap', '--', '/nonexistent/mcp-server', '--flag']);
  const r = await k.ask(init);
  const ex = await k.exited;
  ok(r.error && /could not start the upstream command '\/nonexistent\/mcp-server': No such file or directory/.test(r.error.message),
    'an upstream that cannot start: initialize gets an error naming the command', r);
  ok(ex.code === 1 && /cannot start the upstream command/.test(k.stderr), 'a clear stderr line, exit 1', k.stderr);
}
{
  const marker = join(sandbox().dir, 'restart-marker');
  const k = wrap('dies-once', ['--restart=2']);
  await handshake(k);
  let r = await k.ask(call(1, 'echo', { message: 'a', marker }));
  ok(r.error && /exited with status 4/.test(r.error.message), '--restart: the request in flight when it died gets an error', r);
  const changed = await k.until((m) => m.method === 'notifications/tools/list_changed', 5000).catch(() => null);
  ok(changed, 'after the respawn the client is told notifications/tools/list_changed');
  r = await k.ask(call(2, 'echo', { message: 'after restart', marker }));
  ok(r.result && r.result.content[0].text === 'after restart', 'the replayed initialize and notifications/initialized let the new upstream serve the next call', r);
  await k.close();
  ok(/upstream_restart_scheduled attempt=1/.test(k.stderr) && /upstream_reinitialized/.test(k.stderr), 'the restart is logged', k.stderr);
}
{
  const k = wrap('normal');
  await handshake(k);
  k.send(call(1, 'forkdie'));
  const t0 = Date.now();
  const r = await k.until((m) => m.id === 1, 5000).catch(() => null);
  const ex = await k.exited;
  ok(r && r.error && /status 5/.test(r.error.message) && ex.code === 5 && Date.now() - t0 < 3000,
    `the upstream exits while a child it left holds its stdout: answered and ended (${Date.now() - t0} ms)`, { r, ex });
}
{
  const k = wrap('normal');
  await handshake(k);
  k.send(call(60, 'slow', { ms: 3000 }));
  k.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 60, reason: 'user' } });
  await sleep(100);
  k.p.stdin.end();
  await k.exited;
  ok(!k.lines.some((l) => JSON.parse(l).id === 60), 'a cancelled request gets no error when the upstream later ends', k.lines);
}
{
  const marker = join(sandbox().dir, 'mute-marker');
  const k = wrap('mute-after', ['--restart=1'], { UPSTREAM_MARKER: marker });
  await handshake(k);
  let r = await k.ask(call(1, 'echo', { message: 'dies' }));
  await sleep(600);                          /* respawned; its initialize goes unanswered */
  r = await k.ask({ jsonrpc: '2.0', id: 2, method: 'ping' });
  ok(r.error && r.error.data.code === 'UPSTREAM_DOWN', 'while the replayed handshake is unanswered, requests are answered at once', r);
  const t0 = Date.now();
  k.p.stdin.end();
  await k.exited;
  ok(Date.now() - t0 < 5000, `and the client leaving still ends keel promptly (${Date.now() - t0} ms)`);
}
{
  // A slow consumer: the client stops reading while the upstream floods.
  const k = wrap('normal');
  await handshake(k);
  k.p.stdout.pause();
  k.send(call(1, 'flood', { n: 200000 }));
  await sleep(1500);
  const rss = Number((readFileSync(`/proc/${k.p.pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/) || [])[1]);
  k.p.stdout.resume();
  let seen = 0;
  const r = await k.until((m) => { if (m.method) seen++; return m.id === 1; }, 60000);
  ok(seen === 200000 && r.result, `a slow consumer loses nothing (${seen} notifications)`);
  if (process.env.KEEL_SANITIZED)
    skip('keel\'s memory stays bounded while the client does not read', 'ASan keeps freed memory in quarantine; measured in the plain build');
  else
    ok(rss > 0 && rss < 12 * 1024, `keel's memory stays bounded while the client does not read (${rss} KiB RSS)`);
  await k.close();
}
{
  const out = execFileSync(process.execPath, ['-e', 'process.stdout.write("x")']);
  ok(String(out) === 'x', 'node runs the fixtures');
}
ok(existsSync(UP), 'the fixture upstream exists');
done();
