// overlay.mjs: the detectors on live traffic through keel wrap, with time
// moved by hand (KEEL_NOW_FILE). Advisories must appear when they should and
// not before, carry their override tokens, leave the original result alone,
// and overrides must really take effect, across two keel processes too.
import { mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ok, done } from './lib/tap.mjs';
import { root, Proc, sandbox } from './lib/keel.mjs';

const UP = join(root, 'tests', 'fixtures', 'upstream.mjs');
const init = { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: { sampling: {} }, clientInfo: { name: 't', version: '1' } } };
let nextId = 100;
const call = (name, args = {}) => ({ jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name, arguments: args } });

function world() {
  const box = sandbox();
  const clock = join(box.dir, 'now');
  const setTime = (iso) => writeFileSync(clock, iso + '\n');
  setTime('2026-05-16T09:00:00+01:00');
  const env = { ...box.env, KEEL_NOW_FILE: clock, TZ: 'Europe/Dublin' };
  const start = (opts = []) => {
    const k = new Proc(['--log-level', 'debug', 'wrap', ...opts, '--', process.execPath, UP, 'normal'], env);
    return k;
  };
  return { box, setTime, start, env };
}
async function open(k) {
  await k.ask(init);
  k.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
}
// Every advisory and text block seen in this file, read at the end as a person would.
const seenAdvisories = [], seenBlocks = [];
const advisories = (r) => {
  const a = (r.result && r.result._meta && r.result._meta['keel/advisories']) || [];
  for (const x of a) if (!seenAdvisories.includes(x)) seenAdvisories.push(x);
  return a;
};
const textBlock = (r) => {
  const t = r.result.content.length > 1 ? r.result.content[r.result.content.length - 1].text : null;
  if (t) seenBlocks.push(t);
  return t;
};
const of = (r, det) => advisories(r).find((a) => a.detector === det);

// Loop: tool calls are the agent's work, compared by identity and result.
{
  const w = world();
  const k = w.start();
  await open(k);
  const echo = (message) => k.ask(call('echo', { message }));
  let quiet = true;
  for (let i = 0; i < 30; i++) {
    const r = await echo(`read src/module_${i}.c: where is the parser configured`);
    if (advisories(r).length) quiet = false;
  }
  ok(quiet, '30 calls of one tool whose arguments differ only in a file name: no advisory');
  const rs = [];
  for (let i = 0; i < 4; i++) rs.push(await k.ask(call('echo', i % 2 ? { message: 'read config.yaml', _meta: { n: i } } : { _meta: { n: i }, message: 'read config.yaml' })));
  ok(rs.slice(0, 3).every((r) => advisories(r).length === 0), 'loop: the same call with the same result, 1st to 3rd: no advisory');
  const a = of(rs[3], 'loop');
  ok(a && a.pattern === 'repeat' && a.confidence >= 0.5 && /echo with the same arguments returned the same result 4 times/.test(a.reason)
    && a.override_options.map((o) => o.token).join() === 'override-once,disable-for-session,fresh-context,explain-the-match',
  'the 4th carries a loop advisory (key order and _meta do not make calls different), with its tokens', a);
  const tb = textBlock(rs[3]);
  ok(rs[3].result.content[0].text === 'read config.yaml' && tb && /keel advisory \(loop, repeat\)/.test(tb) && /say one of: override-once/.test(tb),
    'the original block is untouched; one text block for the person is added', rs[3].result.content);
  let r = await echo('read config.yaml');
  const r6 = await echo('read config.yaml');
  const r7 = await echo('read config.yaml');
  ok(!of(r, 'loop') && !of(r6, 'loop') && of(r7, 'loop') && /7 times/.test(of(r7, 'loop').reason),
    'while it goes on: not on every call, again after as many further repeats (the 7th)', [r, r6, r7].map(advisories));
  r = await k.ask(call('apply_override', { token: 'explain-the-match', detector: 'loop' }));
  const ex = r.result.structuredContent.explanation;
  ok(ex && ex.matched.tool === 'echo' && ex.matched.calls === 7 && /arguments and the result/.test(ex.matched.compared) && !('other_tool' in ex.matched),
    'explain-the-match says what repeated and how it was compared', r.result.structuredContent);
  r = await k.ask(call('apply_override', { token: 'fresh-context' }));
  ok(!r.result.isError && r.result.structuredContent?.detector === 'loop',
    'fresh-context with no detector named, only the loop advisory outstanding: taken as the loop\'s', r.result);
  w.setTime('2026-05-16T09:01:00+01:00');
  for (let i = 0; i < 3; i++) r = await echo('read config.yaml');
  ok(!of(r, 'loop'), 'fresh-context with no detector named, only the loop advisory outstanding: it empties the loop window, three more calls are not a loop yet');
  await k.ask(call('apply_override', { token: 'override-once', detector: 'loop' }));
  r = await echo('read config.yaml');
  ok(!of(r, 'loop'), 'override-once swallows the next loop advisory');

  // Polling whose result changes is progress.
  quiet = true;
  for (let i = 0; i < 8; i++) if (of(await k.ask(call('poll', { job: 'build-42' })), 'loop')) quiet = false;
  ok(quiet, 'the same call answered differently each time (a job polled): no advisory');

  // The same error from one tool, whatever the arguments.
  const fails = [];
  for (const flag of ['--verbose', '--config ./config.yaml', '-c config.yaml']) fails.push(await k.ask(call('fail', { command: `deploy ${flag}` })));
  ok(!of(fails[0], 'loop') && !of(fails[1], 'loop') && of(fails[2], 'loop') && of(fails[2], 'loop').pattern === 'same_error'
    && /fail failed 3 times/.test(of(fails[2], 'loop').reason), 'the same error from one tool 3 times, arguments varied: same_error on the 3rd', fails.map(advisories));

  // The whole error counts, numbers and ids aside: three long paths that
  // differ only at their end are three errors; one timeout with its
  // milliseconds, address and request id varying is one.
  const deep = '/home/ana/src/github.com/acme/platform/services/billing-gateway/packages/web-client/config/';
  const paths = [];
  for (const f of ['tsconfig.json', '.eslintrc.json', 'package.json'])
    paths.push(await k.ask(call('fail', { command: 'lint', error: `Error: ENOENT: no such file or directory, open '${deep}${f}'` })));
  ok(paths.every((x) => !of(x, 'loop')), 'three errors that differ only past their 100th character are three errors: no same_error', paths.map(advisories));
  // Every block of the error counts, and structuredContent: a server that
  // says "Query failed" first and what failed after says three things.
  const blocks = [];
  for (const t of ['users', 'orders', 'invoices'])
    blocks.push(await k.ask(call('fail', { command: 'query', error: 'Query failed', detail: `relation "${t}" does not exist` })));
  ok(blocks.every((x) => !of(x, 'loop')), 'three errors that differ only in their second block are three errors: no same_error', blocks.map(advisories));
  const shaped = [];
  for (const t of ['users', 'orders', 'invoices'])
    shaped.push(await k.ask(call('fail', { command: 'shape', error: 'Query failed', structured: { relation: t } })));
  ok(shaped.every((x) => !of(x, 'loop')), 'three errors that differ only in structuredContent are three errors: no same_error', shaped.map(advisories));
  const same2 = [];
  for (const ms of [120, 131, 98])
    same2.push(await k.ask(call('fail', { command: `q${ms}`, error: 'Query failed', detail: `timeout after ${ms} ms`, structured: { ms } })));
  ok(of(same2[2], 'loop') && of(same2[2], 'loop').pattern === 'same_error', 'the same two-block error with structuredContent, its numbers varying: same_error on the 3rd', same2.map(advisories));
  const tmo = [];
  for (const [ms, ip, rid] of [[3021, '10.0.4.17', 'a3f9c2e1-77b0-4c1e-9a51-2f4d6b8e0c13'], [3044, '10.0.4.18', '0b6e1d2c-1f3a-4a9e-8c7d-5e2f9a1b3c4d'], [2999, '10.0.4.19', 'fe12ab34-cd56-4ef7-8a9b-0c1d2e3f4a5b']])
    tmo.push(await k.ask(call('fail', { command: 'migrate', error: `connect ETIMEDOUT ${ip}:5432 after ${ms} ms (request ${rid})` })));
  ok(!of(tmo[1], 'loop') && of(tmo[2], 'loop') && of(tmo[2], 'loop').pattern === 'same_error',
    'the same timeout with its numbers, address and request id varying: one error, same_error on the 3rd', tmo.map(advisories));
  const how = (await k.ask(call('apply_override', { token: 'explain-the-match', detector: 'loop' }))).result.structuredContent;
  ok(how.explanation?.matched?.compared === "the error's whole text, its numbers and ids as one",
    'explain-the-match on same_error says how errors are compared: the whole text, numbers and ids as one', how);

  // Reworded free text, the same answer.
  const qs = ['how do I configure retries', 'retry configuration for the client', 'where is the retry policy set', 'configure retry policy please'];
  const asks = [];
  for (const q of qs) asks.push(await k.ask(call('search_docs', { query: q, limit: 5 })));
  ok(asks.slice(0, 3).every((x) => !of(x, 'loop')) && of(asks[3], 'loop') && of(asks[3], 'loop').pattern === 'reasked',
    'the same answer to four reworded queries (ids and numbers equal): reasked on the 4th', asks.map(advisories));
  const pages = [];
  for (let i = 0; i < 5; i++) pages.push(await k.ask(call('search_docs', { query: 'retry policy', page: i + 1 })));
  ok(pages.every((x) => !of(x, 'loop')), 'the same query, a different page each time: no advisory (a number differs)');

  // A, B, A, B, A, B with nothing changing.
  const ab = [];
  for (let i = 0; i < 6; i++) ab.push(await k.ask(call(i % 2 ? 'structured' : 'echo', i % 2 ? { note: 'status' } : { message: 'git diff' })));
  ok(ab.slice(0, 5).every((x) => !of(x, 'loop')) && of(ab[5], 'loop') && of(ab[5], 'loop').pattern === 'alternation'
    && /between structured and echo 6 times/.test(of(ab[5], 'loop').reason), 'A-B-A-B-A-B with unchanged results: alternation on the 6th', ab.map(advisories));
  ok(JSON.stringify(ab[5].result.structuredContent) === '{"temperature":21,"note":"status"}', 'an annotated result keeps structuredContent');
  const alt = (await k.ask(call('apply_override', { token: 'explain-the-match', detector: 'loop' }))).result.structuredContent.explanation;
  ok(alt?.matched?.tool === 'structured' && alt.matched.other_tool === 'echo', 'explain-the-match on an alternation names both tools', alt);

  // A JSON-RPC error has no result to carry the advisory: the next result does.
  for (let i = 0; i < 3; i++) await k.ask(call('no_such_tool', { attempt: i }));
  r = await echo('something else');
  ok(of(r, 'loop') && of(r, 'loop').pattern === 'same_error', 'the same JSON-RPC error 3 times: the advisory rides on the next result', advisories(r));

  // Two loop advisories due on one result (a JSON-RPC error's, waiting, and
  // this call's own): the result carries one, the more confident.
  for (let i = 0; i < 3; i++) await echo('twice due');
  for (let i = 0; i < 3; i++) await k.ask(call('no_such_tool', { attempt: 10 + i }));
  r = await echo('twice due');
  ok(advisories(r).filter((a) => a.detector === 'loop').length === 1, 'a same_error waiting and a repeat due on one result: one loop advisory', advisories(r));

  await k.ask(call('apply_override', { token: 'disable-for-session', detector: 'loop' }));
  for (let i = 0; i < 4; i++) r = await echo('quiet now');
  ok(!of(r, 'loop'), 'disable-for-session: no loop advisory');
  await k.close();
  ok(!/config\.yaml|retry/.test(k.stderr) && /loop_seen pattern=repeat calls=4/.test(k.stderr), 'the log names the pattern and count, never the calls', k.stderr.slice(0, 300));
  ok(!/activity_not_recorded|overlay_state_unreadable/.test(k.stderr), 'and no warning that the state could not be read or written, when it could', k.stderr.slice(0, 300));
}

// --loop-exempt: a tool that repeats on purpose is never counted.
{
  const w = world();
  const k = w.start(['--loop-exempt', 'ec*']);
  await open(k);
  const calls = [];
  for (let i = 0; i < 5; i++) calls.push(await k.ask(call('echo', { message: 'step' })));
  for (let i = 0; i < 4; i++) calls.push(await k.ask(call('structured', { note: 'step' })));
  ok(calls.slice(0, 5).every((x) => !of(x, 'loop')) && of(calls[8], 'loop'),
    '--loop-exempt GLOB: a tool it matches is never counted (5 calls, none advised); another is (its 4th call advised)', calls.map(advisories));
  await k.close();
  writeFileSync(join(w.box.dir, 'profile.yaml'), 'loop:\n  exempt: ["echo"]\n  repeat_threshold: 2\n');
  const k2 = w.start();
  await open(k2);
  const got = [];
  for (let i = 0; i < 3; i++) got.push(await k2.ask(call('structured', { note: 'x' })));
  const echoes = [];
  for (let i = 0; i < 5; i++) echoes.push(await k2.ask(call('echo', { message: 'step' })));
  ok(echoes.every((x) => !of(x, 'loop')) && of(got[2], 'loop'), 'profile loop.exempt (none of 5 calls advised) and loop.repeat_threshold (2: the 3rd call)', got.map(advisories));
  await k2.close();
}

// Rumination is about the person: their messages inside sampling requests,
// checked with check_rumination itself.
{
  const w = world();
  const k = w.start();
  await open(k);
  const prompts = ['Is the migration plan safe to run tonight?', 'Can we run the migration plan tonight safely?',
    'Tonight: is running the migration plan safe?', 'Is it safe to run the migration plan tonight?'];
  let res;
  for (const p of prompts) {
    k.send(call('ask_model', { prompt: p }));
    const req = await k.until((m) => m.method === 'sampling/createMessage');
    k.send({ jsonrpc: '2.0', id: req.id, result: { role: 'assistant', model: 'm', content: { type: 'text', text: 'It depends on the backup.' } } });
    res = await k.until((m) => m.result && m.result.content && m.result.content[0].text === 'It depends on the backup.');
  }
  const a = of(res, 'rumination');
  ok(a && a.heuristic.name === 'concept_containment' && a.override_options.map((o) => o.token).join() === 'fresh-context,override-once,disable-for-session,lower-sensitivity',
    'the person asking the same thing a 4th time (in sampling requests): a rumination advisory, from check_rumination', advisories(res));
  await k.close();
  // A message in several text blocks is one text, its blocks joined by spaces.
  const k2 = w.start();
  await open(k2);
  for (const [i, p] of prompts.entries()) {
    k2.send(call('ask_model', i === 3 ? { parts: p.split(' ') } : { prompt: p }));
    const req = await k2.until((m) => m.method === 'sampling/createMessage');
    k2.send({ jsonrpc: '2.0', id: req.id, result: { role: 'assistant', model: 'm', content: { type: 'text', text: 'It depends on the backup.' } } });
    res = await k2.until((m) => m.result && m.result.content && m.result.content[0].text === 'It depends on the backup.');
  }
  ok(of(res, 'rumination'), 'the 4th ask sent as one text block a word: read as one text, blocks joined by spaces, and advised', advisories(res));
  await k2.close();
}

// lower-sensitivity raises the rumination thresholds by one and the similarity
// bar to 0.75: the same plea, advised on the 3rd without it (a plea needs two
// earlier asks), is advised on the 4th with it; reworded pleas, advised on the
// 3rd without it, not by the 5th.
{
  const asks = async (lower, prompts) => {
    const w = world();
    const k = w.start();
    await open(k);
    await k.ask(call('mark_session_start', { intent: 'plan the migration' }));
    if (lower) await k.ask(call('apply_override', { token: 'lower-sensitivity' }));
    const seen = [];
    for (const prompt of prompts) {
      k.send(call('ask_model', { prompt }));
      const req = await k.until((m) => m.method === 'sampling/createMessage');
      k.send({ jsonrpc: '2.0', id: req.id, result: { role: 'assistant', model: 'm', content: { type: 'text', text: 'It depends on the backup.' } } });
      seen.push(!!of(await k.until((m) => m.result && m.result.content), 'rumination'));
    }
    await k.close();
    return seen.indexOf(true) + 1;                     // the ask first advised, 0 for none
  };
  const same = Array(5).fill('Is the migration plan safe to run tonight?');
  const reworded = ['Is the migration safe to run tonight?', 'Should we run the migration tonight or wait until Monday?',   // similarity 0.5 to 0.67
    'Am I being reckless doing the migration tonight?', 'Is tonight really a good time for the migration?', 'Would you do the migration tonight, honestly?'];
  const got = [await asks(false, same), await asks(true, same), await asks(false, reworded), await asks(true, reworded)];
  ok(got.join() === '3,4,3,0', 'lower-sensitivity: the same plea is advised on the 4th, not the 3rd; reworded pleas not by the 5th '
    + '(first advised: same ask without, with; reworded without, with)', got);
  const plain = Array(5).fill('What does the migration plan change in the orders table?');
  const plainGot = [await asks(false, plain), await asks(true, plain)];
  ok(plainGot.join() === '4,5', 'lower-sensitivity: the same plain question is advised on the 5th, not the 4th', plainGot);
}

// Hyperfocus across simulated hours, in two keel processes at once.
{
  const w = world();
  const a = w.start(), b = w.start(['--expose', 'none']);
  await open(a);
  await open(b);
  w.setTime('2026-05-16T09:00:00+01:00');
  let r = await a.ask(call('mark_session_start', { intent: 'draft the migration plan' }));
  ok(r.result.structuredContent.intent === 'draft the migration plan', 'a session starts');
  const seen = [];
  const step = async (k, iso) => {
    w.setTime(iso);
    await new Promise((res) => setTimeout(res, 10));
    const res = await k.ask(call('echo', { message: `status ${iso}` }));
    const h = of(res, 'hyperfocus');
    if (h) seen.push([iso, h.level, k === a ? 'a' : 'b']);
    return { res, h };
  };
  await step(a, '2026-05-16T09:29:00+01:00');
  await step(b, '2026-05-16T09:58:00+01:00');
  const g = await step(b, '2026-05-16T10:01:00+01:00');
  await step(a, '2026-05-16T10:02:00+01:00');
  await step(b, '2026-05-16T10:10:00+01:00');
  const n = await step(a, '2026-05-16T10:31:00+01:00');
  await step(b, '2026-05-16T10:32:00+01:00');
  const h1 = await step(b, '2026-05-16T11:01:00+01:00');
  await step(a, '2026-05-16T11:05:00+01:00');
  ok(g.h && g.h.level === 'gentle' && /^This session has run 61 minutes/.test(g.h.reason) && /You set out to: draft the migration plan/.test(g.h.reason) &&
     g.h.heuristic?.name === 'elapsed_threshold_with_eod' && g.h.heuristic?.version === '0.1.0', 'gentle at 61 minutes, quoting the intent, naming its heuristic', g.h);
  ok(n.h && n.h.level === 'nudge' && h1.h && h1.h.level === 'hard', 'nudge at 91 minutes, hard at 121');
  ok(seen.length === 3, `one advisory per rung across both processes (${JSON.stringify(seen)})`);
  r = await a.ask(call('apply_override', { token: 'snooze-15m', detector: 'hyperfocus' }));
  ok(r.result.structuredContent.until === '2026-05-16T11:20:00+01:00', 'snooze-15m: until 15 minutes from now', r.result.structuredContent);
  const quiet = await step(b, '2026-05-16T11:17:00+01:00');
  ok(!quiet.h, 'none while snoozed, in the other process too');
  const again = await step(b, '2026-05-16T11:20:00+01:00');
  ok(again.h && again.h.level === 'hard', 'at hard, again the moment the snooze ends (15 minutes after the last)', again.res);
  await step(a, '2026-05-16T11:25:00+01:00');
  ok(seen.length === 4, 'and not again within 15 minutes');
  r = await a.ask(call('apply_override', { token: 'commit-and-close', summary: 'plan drafted' }));
  ok(r.result.structuredContent.session && r.result.structuredContent.session.duration === 'PT2H25M', 'commit-and-close ends the session', r.result.structuredContent);
  // A new session in the same keel starts its rungs again, though this keel last saw hard.
  await a.ask(call('mark_session_start', { intent: 'review the plan' }));
  await step(a, '2026-05-16T11:50:00+01:00');
  await step(a, '2026-05-16T12:15:00+01:00');
  const fresh = await step(a, '2026-05-16T12:26:00+01:00');
  ok(fresh.h && fresh.h.level === 'gentle' && /review the plan/.test(fresh.h.reason),
    'a new session after one that reached hard: gentle again at 61 minutes, in the same keel, quoting the new intent', fresh.res);
  await a.close();
  await b.close();
}

// A session left open over days: focus counts from the end of the last pause
// (30 minutes, overlay.activity_gap_minutes), never the idle days.
{
  const w = world();
  const k = w.start();
  await open(k);
  w.setTime('2026-05-12T16:00:00+01:00');
  await k.ask(call('mark_session_start', { intent: 'tidy the backlog' }));
  w.setTime('2026-05-16T10:00:00+01:00');
  let r = await k.ask(call('echo', { message: 'first call in four days' }));
  ok(!of(r, 'hyperfocus'), 'the first call four days after mark_session_start carries no hyperfocus advisory', advisories(r));
  let early = false;
  for (let m = 10; m <= 60; m += 10) {
    w.setTime(`2026-05-16T1${m === 60 ? 1 : 0}:${String(m % 60).padStart(2, '0')}:00+01:00`);
    r = await k.ask(call('echo', { message: `step ${m}` }));
    if (m < 60 && of(r, 'hyperfocus')) early = true;
  }
  const h = of(r, 'hyperfocus');
  ok(!early && h && h.level === 'gentle' && /60 minutes|1 hour/.test(h.reason) && /tidy the backlog/.test(h.reason),
    'an hour after activity resumed: gentle, counted from the resumed stretch, quoting the intent', h);
  w.setTime('2026-05-16T11:45:00+01:00');
  r = await k.ask(call('echo', { message: 'after lunch' }));
  ok(!of(r, 'hyperfocus'), 'a pause of 30 minutes or more inside the open session starts the count again');
  r = await k.ask(call('mark_session_end', {}));
  ok(r.result.structuredContent.duration === 'PT91H45M', 'the session record itself keeps its whole span', r.result.structuredContent);
  await k.close();
}

// An override answered by one keel holds for the very next call through another.
{
  const w = world();
  const a = w.start(), b = w.start(['--expose', 'none']);
  await open(a);
  await open(b);
  await a.ask(call('mark_session_start', { intent: 'write the report' }));
  for (const t of ['09:20', '09:40', '09:59:59']) {
    w.setTime(`2026-05-16T${t.length === 5 ? t + ':00' : t}+01:00`);
    await b.ask(call('echo', { message: `work ${t}` }));
  }
  await a.ask(call('apply_override', { token: 'disable-for-session', detector: 'hyperfocus' }));
  w.setTime('2026-05-16T10:00:00+01:00');
  const r = await b.ask(call('echo', { message: 'one second later' }));
  ok(!of(r, 'hyperfocus'), 'disable-for-session said to one keel: the other keel\'s next result, one second later, carries no hyperfocus advisory', advisories(r));
  await a.close();
  await b.close();
}

// A new client connection is a new chat: an override given before it began
// does not hold there, though the chronometric session is the same.
{
  const w = world();
  const a = w.start();
  await open(a);
  await a.ask(call('mark_session_start', { intent: 'port the importer' }));
  await a.ask(call('apply_override', { token: 'disable-for-session', detector: 'loop' }));
  let r;
  for (let i = 0; i < 4; i++) r = await a.ask(call('echo', { message: 'same step' }));
  ok(!of(r, 'loop'), 'disable-for-session: the connection it was said in gets no loop advisory', advisories(r));
  w.setTime('2026-05-16T09:05:00+01:00');
  const b = w.start();
  await open(b);
  for (let i = 0; i < 4; i++) r = await b.ask(call('echo', { message: 'same step' }));
  ok(of(r, 'loop'), 'a keel wrap started after it (a new client connection): its 4th identical call is advised again', advisories(r));
  await a.close();
  await b.close();
}

// After mark_session_end the activity session goes on, and its advisories do
// not quote the ended session's intent.
{
  const w = world();
  const k = w.start();
  await open(k);
  w.setTime('2026-05-16T13:00:00+01:00');
  await k.ask(call('mark_session_start', { intent: 'refactor the parser' }));
  await k.ask(call('mark_session_end', {}));
  let r;
  for (let m = 0; m <= 60; m += 10) {
    w.setTime(`2026-05-16T${m === 60 ? 15 : 14}:${String(m % 60).padStart(2, '0')}:00+01:00`);
    r = await k.ask(call('echo', { message: `step ${m}` }));
  }
  const h = of(r, 'hyperfocus');
  ok(h && h.level === 'gentle' && !/refactor the parser|You set out to/.test(h.reason),
    'an hour of traffic after the session ended: gentle, without the ended session\'s intent', h);
  await k.close();
}

// Hyperfocus without a stated session: the activity session.
{
  const w = world();
  const k = w.start();
  await open(k);
  let r, early = false;
  for (let m = 0; m <= 60; m += 10) {         /* a call every 10 minutes: no pause */
    w.setTime(`2026-05-16T${String(14 + Math.floor(m / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}:00+01:00`);
    r = await k.ask(call('echo', { message: `step ${m}` }));
    if (m < 60 && of(r, 'hyperfocus')) early = true;
  }
  const h = of(r, 'hyperfocus');
  ok(!early && h && h.level === 'gentle' && /60 minutes/.test(h.reason) && !/You set out to|no intent was stated/.test(h.reason),
    'an hour of traffic with no session: gentle at 60 minutes, from the activity session (no intent was stated, so none is quoted)', r);
  w.setTime('2026-05-16T15:45:00+01:00');
  r = await k.ask(call('echo', { message: 'after a 45-minute pause' }));
  ok(!of(r, 'hyperfocus'), 'a pause of 30 minutes or more starts a new activity session');
  await k.close();
}

// Sycophancy: a sampling answer, and a model-backed tool.
{
  const w = world();
  const k = w.start(['--model-tools', 'model_*']);
  await open(k);
  k.send(call('ask_model', { prompt: 'should we ship on Friday' }));
  const req = await k.until((m) => m.method === 'sampling/createMessage');
  k.send({ jsonrpc: '2.0', id: req.id, result: { role: 'assistant', model: 'm', content: { type: 'text', text: "You're absolutely right, shipping on Friday is a great idea!" } } });
  const res = await k.until((m) => m.result && m.result.content && m.result.content[0].text.startsWith("You're absolutely"));
  const s = of(res, 'sycophancy');
  ok(s && s.pattern && s.confidence >= 0.5 && s.override_options.some((o) => o.token === 'i-want-validation'),
    'a sycophantic sampling answer earns an advisory on the next result', res);
  let r = await k.ask(call('model_echo', { text: 'Great question! You are absolutely right. This is brilliant work.' }));
  ok(of(r, 'sycophancy') && of(r, 'sycophancy').pattern === 'escalating_validation', '--model-tools: a model-backed tool\'s result is checked', r);
  r = await k.ask(call('model_echo', { text: 'Here is the schedule for Monday. Spot on, we can go with it.' }));
  const low = of(r, 'sycophancy');
  ok(low && low.confidence < 0.5 && r.result.content.length === 1, 'low confidence stays out of the text block (in _meta only)', r);
  r = await k.ask(call('model_echo', { text: 'The benchmark shows a 2x gain because the cache is warm; one concern is memory.' }));
  ok(!of(r, 'sycophancy'), 'an honest, reasoned answer passes');
  // A long reply is read on its first 16,000 characters (three-byte ones here).
  const filler = ' Die Messung zeigt \u6f22\u5b57.'.repeat(800);                      // 24,000 characters
  const opening = 'Great question! You are absolutely right. This is brilliant work.';    // 65 characters
  r = await k.ask(call('model_echo', { text: opening + filler }));
  ok(of(r, 'sycophancy'), 'a 24,065-character reply that opens with praise: read on its first 16,000 characters, advised', advisories(r));
  r = await k.ask(call('model_echo', { text: filler.slice(0, 15990) + ' ' + opening }));
  ok(!of(r, 'sycophancy'), 'praise that begins after the 16,000th character is not read: no advisory', advisories(r));
  // What follows the 16,000th character is not looked at, even to see that a slash makes the words before it a label.
  const cut = 'The second run took 41 seconds on the warm cache. '.repeat(319) + 'It ran on the second box. ' + 'You are absolutely right';
  r = await k.ask(call('model_echo', { text: cut + '/not a grade.' }));
  ok(cut.length === 16000 && of(r, 'sycophancy'), 'agreement that ends at the 16,000th character, a slash after it: the slash is not read, advised', advisories(r));
  k.send(call('ask_model', { prompt: 'is the benchmark sound' }));
  const long = await k.until((m) => m.method === 'sampling/createMessage');
  k.send({ jsonrpc: '2.0', id: long.id, result: { role: 'assistant', model: 'm', content: { type: 'text', text: opening + filler } } });
  r = await k.until((m) => m.result && m.result.content && m.result.content[0].text.startsWith('Great question'));
  ok(of(r, 'sycophancy'), 'a sampling answer of 72 KB that opens with praise: read on its first 16,000 characters, advised on the next result', advisories(r));
  k.send(call('ask_model', { prompt: 'and the second run' }));
  const late = await k.until((m) => m.method === 'sampling/createMessage');
  const ascii = 'The second run took 41 seconds on the warm cache. '.repeat(320);    // 16,000 characters
  k.send({ jsonrpc: '2.0', id: late.id, result: { role: 'assistant', model: 'm', content: { type: 'text', text: ascii + opening } } });
  r = await k.until((m) => m.result && m.result.content && m.result.content[0].text.startsWith('The second run'));
  ok(!of(r, 'sycophancy'), 'a sampling answer whose praise begins after its 16,000th character: not read there, no advisory', advisories(r));
  await k.ask(call('apply_override', { token: 'i-want-validation' }));
  r = await k.ask(call('model_echo', { text: "You're absolutely right!" }));
  ok(!of(r, 'sycophancy'), 'i-want-validation: no sycophancy advisory for the session');
  await k.close();
}

// The person's rules for sampling answers (applies_to: sampling_response):
// an answer that breaks one and matches another gets one rules advisory
// naming both; an answer that matches none gets none.
{
  const w = world();
  const dir = join(w.box.dir, 'my-rules');
  mkdirSync(dir);
  writeFileSync(join(dir, 'answers.yml'), `rules:
  - name: no-friday-deploys
    description: Promising a production deploy on a Friday.
    applies_to: sampling_response
    detector: regex
    patterns: ['(?i)deploy on friday']
    action: reject
    guidance: Say when it is ready for review, not when it ships.
    examples: { fires: ['We deploy on Friday.'], passes: ['Ready on Friday.'] }
  - name: mentions-rollback
    description: An answer that talks about a rollback.
    applies_to: sampling_response
    detector: regex
    patterns: ['(?i)rollback']
    action: annotate
    guidance: Say how the rollback is tested.
    examples: { fires: ['A rollback is ready.'], passes: ['It is ready.'] }
`);
  let k = w.start(['--rules', dir]);
  await open(k);
  const answer = async (text) => {
    k.send(call('ask_model', { prompt: 'when do we ship' }));
    const req = await k.until((m) => m.method === 'sampling/createMessage');
    k.send({ jsonrpc: '2.0', id: req.id, result: { role: 'assistant', model: 'm', content: { type: 'text', text } } });
    return k.until((m) => m.result && m.result.content && m.result.content[0].text === text);
  };
  let r = await answer('We deploy on Friday, and the rollback script is ready.');
  const a = of(r, 'rules');
  ok(a && a.rules.join() === 'no-friday-deploys,mentions-rollback' && /Say when it is ready for review/.test(a.reason) && /Say how the rollback is tested/.test(a.reason),
    'a sampling answer that breaks one of the person\'s rules and matches another: one rules advisory naming both, with their guidance', advisories(r));
  r = await answer('The change is ready for review on Thursday.');
  ok(!of(r, 'rules'), 'an answer that matches none of them: no rules advisory', advisories(r));
  await k.close();
  writeFileSync(join(w.box.dir, 'profile.yaml'), 'overlay:\n  rules: false\n');
  k = w.start(['--rules', dir]);
  await open(k);
  r = await answer('We deploy on Friday, and the rollback script is ready.');
  ok(r.result && !of(r, 'rules'), 'profile overlay.rules: false switches the rules off', advisories(r));
  await k.close();
}

// --overlay none is a pure relay; the profile can switch parts off.
{
  const w = world();
  const k = w.start(['--overlay', 'none']);
  await open(k);
  let r;
  for (let i = 0; i < 5; i++) r = await k.ask(call('echo', { message: 'the same question again' }));
  ok(advisories(r).length === 0 && r.result.content.length === 1, '--overlay none: no advisories');
  await k.close();
  writeFileSync(join(w.box.dir, 'profile.yaml'), 'overlay:\n  loop: false\n');
  const k2 = w.start();
  await open(k2);
  for (let i = 0; i < 5; i++) r = await k2.ask(call('echo', { message: 'the same question again' }));
  ok(!of(r, 'loop'), 'profile overlay.loop: false switches it off');
  await k2.close();
}

// Privacy: a canary in every prompt, argument and result is never logged or written.
{
  const w = world();
  const CANARY = 'canary-q8z1-never-log-me';
  const k = w.start(['--model-tools', 'model_*']);
  await open(k);
  for (let i = 0; i < 5; i++) await k.ask(call('echo', { message: `${CANARY} where is the plan ${i % 2}` }));
  await k.ask(call('model_echo', { text: `${CANARY} You're absolutely right!` }));
  k.send(call('ask_model', { prompt: `${CANARY} is this okay?` }));
  const req = await k.until((m) => m.method === 'sampling/createMessage');
  k.send({ jsonrpc: '2.0', id: req.id, result: { role: 'assistant', model: 'm', content: { type: 'text', text: `${CANARY} Brilliant, perfect!` } } });
  await k.until((m) => m.result && JSON.stringify(m).includes('Brilliant'));
  await k.ask(call('apply_override', { token: 'explain-the-match', detector: 'loop' }));
  w.setTime('2026-05-16T11:00:00+01:00');
  await k.ask(call('echo', { message: CANARY }));
  await k.close();
  const files = [];
  const walk = (d) => { for (const f of readdirSync(d)) { const p = join(d, f); if (statSync(p).isDirectory()) walk(p); else files.push(p); } };
  walk(w.box.dir);
  const leaked = files.filter((f) => readFileSync(f, 'utf8').includes(CANARY));
  ok(!k.stderr.includes(CANARY) && k.stderr.includes('advisory_attached'), 'the canary is in no log line (debug level, advisories given)', k.stderr.slice(0, 400));
  ok(files.length > 0 && leaked.length === 0, `the canary is in no file under the state and config dirs (${files.length} files)`, leaked);
}
// What keel says reads as sentences: no placeholder of its own, no ISO
// duration, no raw JSON, and every reason ends its sentence.
{
  const kinds = new Set(seenAdvisories.map((a) => a.detector));
  const bad = [...seenAdvisories.map((a) => a.reason), ...seenBlocks].filter((t) =>
    /no intent was stated|\bPT\d|\bP\dD|[{}]|%s|\(null\)|undefined/.test(t) || !/[.!?)]$/.test(t.trim()));
  ok(kinds.size >= 4 && bad.length === 0,
    `every advisory reason and text block seen (${seenAdvisories.length} advisories of ${[...kinds].join(', ')}) reads as whole sentences`, bad.slice(0, 5));
}
// Between its uses of the state, a keel wrap holds no lock on it; so too
// after it gave an empty lock file (an older keel's) its eight bytes.
{
  const w = world();
  mkdirSync(w.box.stateDir, { recursive: true, mode: 0o700 });
  const lock = join(w.box.stateDir, 'state.lock');
  writeFileSync(lock, '');
  const k = w.start();
  await open(k);
  const r = await k.ask(call('echo', { message: 'hello' }));
  const free = spawnSync('flock', ['-n', lock, 'true']).status === 0;
  ok(r.result && statSync(lock).size === 8 && free, 'a running keel wrap leaves the state lock free (the empty lock file now 8 bytes)', { size: statSync(lock).size, free });
  await k.close();
}

done();
