// reference.mjs: a caller built for the reference guardrail contract
// (neurodock's mcp-guardrail schemas, v0.1.0) is never refused. For each of
// check_hyperfocus, check_rumination and check_sycophancy, 300 inputs are
// drawn at random (seeded) from what the reference's input schema accepts
// and its runtime does not reject (ascending thresholds, matching session
// ids, history in order), with every optional field sometimes present and
// sometimes absent, at the edges of its bounds. Each must be valid against
// keel's own input schema and be answered by keel serve with a result, not
// an error. The fields and bounds below are the reference's, written out
// here by hand from its schemas (docs/tools.md: "Reference contract").
import { ok, done } from './lib/tap.mjs';
import { Server, invalid } from './lib/keel.mjs';

let seed = 20261124;
const rnd = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
const int = (lo, hi) => lo + Math.floor(rnd() * (hi - lo + 1));
const pick = (a) => a[int(0, a.length - 1)];
const maybe = (p = 0.5) => rnd() < p;
const edge = (lo, hi) => pick([lo, hi, int(lo, hi), int(lo, hi)]);
const WORDS = 'the deploy plan retry queue budget why should we pick vendor again is it safe how do I fix this test é ✓ 日本'.split(' ');
const text = (lo, hi) => {
  const n = edge(lo, hi);
  let s = '';
  while (s.length < n) s += pick(WORDS) + ' ';
  return s.slice(0, n).replace(/\s+$/, 'x').padEnd(Math.max(lo, 1), 'x');
};
const hex = (n) => Array.from({ length: n }, () => '0123456789abcdef'[int(0, 15)]).join('');
const uuid = () => `${hex(8)}-${hex(4)}-4${hex(3)}-${pick(['8', '9', 'a', 'b'])}${hex(3)}-${hex(12)}`;
const NOW = Date.parse('2026-05-16T20:00:00Z');
const stamp = (ms, off) => {      // RFC 3339 with an explicit offset, as the reference requires
  const d = new Date(ms + off * 60000);
  const sign = off < 0 ? '-' : '+', a = Math.abs(off);
  return d.toISOString().replace(/\.\d{3}Z$/, '') + `${sign}${String(Math.floor(a / 60)).padStart(2, '0')}:${String(a % 60).padStart(2, '0')}`;
};
const hhmm = () => `${String(int(0, 23)).padStart(2, '0')}:${String(int(0, 59)).padStart(2, '0')}`;

function hyperfocus() {
  const off = pick([0, 60, -300, 330, 540]);
  const a = { chronometric_snapshot: { now: stamp(NOW, off) } };
  if (maybe(0.1)) {
    // no open_session member: no session, as null is
  } else if (maybe(0.15)) {
    a.chronometric_snapshot.open_session = null;
  } else {
    const elapsed = edge(0, 30000);
    const sid = uuid();
    a.chronometric_snapshot.open_session = {
      session_id: sid,
      started_at: stamp(NOW - int(0, 36000) * 1000, off),
      intent: text(1, 500),
      elapsed_seconds: elapsed,
    };
    if (maybe(0.3)) a.session_id = sid;
  }
  if (maybe()) a.chronometric_snapshot.idle_signal = pick(['active', 'switched_away', 'unknown']);
  if (maybe()) a.hyperfocus_break_minutes = edge(15, 480);
  if (maybe()) a.end_of_day_local = hhmm();
  if (maybe(0.3)) {
    const g = int(5, 470), n = int(g + 1, 479), h = int(n + 1, 480);
    a.escalation_thresholds = { gentle: g, nudge: n, hard: h };
  }
  return a;
}

function rumination() {
  const a = { current_prompt: text(1, 8000), history: [] };
  let t = NOW - int(1, 7200) * 1000;
  for (let k = int(0, 30); k > 0; k--) {
    a.history.unshift({ text: maybe(0.2) ? a.current_prompt : text(1, maybe(0.1) ? 8000 : 300), at: stamp(t, pick([0, 60])) });
    t -= int(1, 600) * 1000;
  }
  if (maybe()) a.window_minutes = edge(1, 1440);
  if (maybe()) a.threshold_count = edge(2, 50);
  if (maybe()) a.similarity_threshold = pick([0, 1, 0.55, rnd()]);
  return a;
}

function sycophancy() {
  const a = {};
  const which = int(0, 2);            // the reference needs one of the two
  if (which !== 1) a.candidate_response = text(1, maybe(0.1) ? 16000 : 600);
  if (which !== 0) {
    a.recent_user_messages = [];
    let t = NOW - int(1, 3600) * 1000;
    for (let k = int(which === 1 ? 1 : 0, 20); k > 0; k--) {
      a.recent_user_messages.push({ text: text(1, maybe(0.1) ? 8000 : 200), at: stamp(t, 0) });
      t += int(1, 120) * 1000;
    }
    if (!a.recent_user_messages.length) a.recent_user_messages.push({ text: 'is this right?', at: stamp(NOW, 0) });
  }
  if (maybe()) a.decision_context = text(0, 500);
  return a;
}

const N = 300;
for (const [tool, gen] of [['check_hyperfocus', hyperfocus], ['check_rumination', rumination], ['check_sycophancy', sycophancy]]) {
  const s = new Server(['--log-level', 'error'], { KEEL_NOW: new Date(NOW).toISOString() });
  await s.ask({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'ref', version: '1' } } });
  let refused = null, schemaRefused = null, answered = 0;
  for (let i = 1; i <= N; i++) {
    const args = gen();
    const bad = invalid(tool, 'input', args);
    if (bad && !schemaRefused) schemaRefused = { args, bad };
    const r = await s.ask({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: tool, arguments: args } });
    if (r.result && !r.result.isError) answered++;
    else if (!refused) refused = { args: JSON.stringify(args).slice(0, 600), answer: r.result?.structuredContent ?? r.error };
  }
  ok(!schemaRefused, `${tool}: ${N} inputs the reference accepts are valid against keel's input schema`, schemaRefused);
  ok(answered === N, `${tool}: keel answers all ${N} with a result (answered ${answered})`, refused);
  await s.close();
}

done();
