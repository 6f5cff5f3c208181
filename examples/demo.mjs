// demo.mjs: a scripted session through `keel wrap` around a small notes
// server (notes-server.mjs), with keel's clock moved by hand so an afternoon
// fits in a second. Run it with `make demo`, or: node examples/demo.mjs path/to/keel
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const keel = process.argv[2] || join(here, '..', 'build', 'keel');
const dir = mkdtempSync(join(tmpdir(), 'keel-demo-'));   // state and clock of our own: yours are untouched
const clock = join(dir, 'now');
const setTime = (t) => writeFileSync(clock, `2026-05-16T${t.length === 5 ? `${t}:00` : t}+01:00\n`);
setTime('09:00');
const env = { ...process.env, KEEL_NOW_FILE: clock, TZ: 'Europe/Dublin', KEEL_STATE_DIR: join(dir, 'state'),
  KEEL_PROFILE: join(dir, 'no-profile.yaml') };
const child = spawn(keel, ['--log-level', 'warn', 'wrap', '--expose', 'all', '--', process.execPath, join(here, 'notes-server.mjs')],
  { env, stdio: ['pipe', 'pipe', 'inherit'] });
const pending = new Map();
createInterface({ input: child.stdout }).on('line', (line) => {
  const m = JSON.parse(line);
  if (m.id !== undefined && pending.has(m.id)) { pending.get(m.id)(m); pending.delete(m.id); }
});
let nextId = 0;
const ask = (method, params) => new Promise((res) => {
  const id = nextId++;
  pending.set(id, res);
  child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n');
});
const call = (name, args) => ask('tools/call', { name, arguments: args });
const say = (s = '') => process.stdout.write(s + '\n');
const advisories = (r) => (r.result && r.result._meta && r.result._meta['keel/advisories']) || [];
function show(r) {
  const res = r.result;
  if (r.error) return say(`  error: ${r.error.message}`);
  const s = res.structuredContent;
  if (s && res.isError) return say(`  error ${s.error.code}: ${s.error.message}`);
  if (s && 'confidence' in s) {
    const verdict = s.level ? `level: ${s.level}` : `detected: ${s.detected}${s.pattern && s.pattern !== 'none' ? ` (${s.pattern})` : ''}`;
    say(`  ${verdict}   confidence ${s.confidence}`);
    say(`  reason: ${s.reason}`);
    if (s.override_options.length) say(`  you may say: ${s.override_options.map((o) => o.token).join(', ')}`);
  } else if (s) {
    for (const [k, v] of Object.entries(s)) say(`  ${k}: ${JSON.stringify(v)}`);
  } else {
    say(`  ${res.content[0].text.split('\n').join(' | ')}`);
  }
  for (const a of advisories(r)) say(`  ** advisory (${a.detector}${a.level || a.pattern ? `, ${a.level || a.pattern}` : ''}): ${a.reason}\n     override tokens: ${a.override_options.map((o) => o.token).join(', ')}`);
}
async function step(title, name, args) {
  say(`\n> ${title}`);
  show(await call(name, args));
}

say('keel wrap --expose all -- node examples/notes-server.mjs   (the clock is keel\'s, moved by the demo)');
const init = await ask('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'demo', version: '1' } });
child.stdin.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n');
say(`\n> initialize\n  protocol ${init.result.protocolVersion}, server ${init.result.serverInfo.name} ${init.result.serverInfo.version}`);
const list = await ask('tools/list', {});
say(`\n> tools/list: the server's tools, then keel's\n  ${list.result.tools.map((t) => t.name).join(', ')}`);

say('\n--- 09:00 A session with a stated intent');
await step('mark_session_start: the person says what this session is for', 'mark_session_start', { intent: 'draft the migration plan' });
await step('search_notes: a call to the wrapped server passes through', 'search_notes', { query: 'migration plan' });

say('\n--- The agent reads its notes one by one: work, not a loop (no advisory)');
for (let id = 1; id <= 5; id++) {
  setTime(`09:0${id}`);
  await step(`09:0${id} read_note ${id}`, 'read_note', { id });
}

say('\n--- The agent searches for the same thing, and gets the same answer, again and again');
for (const t of ['09:10:00', '09:10:40', '09:11:10', '09:11:50']) {
  setTime(t);
  await step(`${t} search_notes "deploy checklist"`, 'search_notes', { query: 'deploy checklist' });
}
await step('apply_override fresh-context: the person says "fresh-context"', 'apply_override', { token: 'fresh-context', detector: 'loop' });
setTime('09:20');
await step('09:20 search_notes "deploy checklist" (a clean slate: no advisory)', 'search_notes', { query: 'deploy checklist' });
setTime('09:22');
await step('09:22 add_note: the agent writes the checklist instead', 'add_note', { text: 'deploy checklist: backup, migrate, verify' });
say('\n--- The morning goes by without a pause (hyperfocus, from the session start)');
for (const t of ['09:50', '10:01', '10:20', '10:31', '10:50', '11:01']) {
  setTime(t);
  await step(`${t} add_note`, 'add_note', { text: `progress at ${t}` });
}
await step('apply_override snooze-15m', 'apply_override', { token: 'snooze-15m', detector: 'hyperfocus' });
setTime('11:10');
await step('11:10 add_note (snoozed: no reminder)', 'add_note', { text: 'still going' });
setTime('11:12');
await step('get_time_context: the model asks the time instead of guessing', 'get_time_context', {});
await step('request_break_if_needed 90', 'request_break_if_needed', { threshold_minutes: 90 });

say('\n--- The guardrail checks, called directly');
await step('check_sycophancy: a draft that agrees without weighing anything', 'check_sycophancy', { candidate_response: "You're absolutely right, let's ship it tonight." });
await step('check_sycophancy: a draft that agrees and names a trade-off', 'check_sycophancy', { candidate_response: "You're right that it is faster, but the migration needs a rollback plan first." });
await step('check_sycophancy: the third request for reassurance on one decision', 'check_sycophancy', { recent_user_messages: [{ text: 'Is the vendor contract okay to sign?' }, { text: 'Are you sure the vendor contract is fine?' }, { text: 'Is this okay? The vendor contract, I mean.' }] });
await step('check_hyperfocus: 70 minutes in, after an 18:00 end of day', 'check_hyperfocus', { chronometric_snapshot: { open_session: { started_at: '2026-05-16T17:30:00+01:00', intent: 'answer review comments' }, now: '2026-05-16T18:40:00+01:00', idle_signal: 'active' }, end_of_day_local: '18:00' });
await step('check_hyperfocus: 3 hours in, but the person has stepped away', 'check_hyperfocus', { chronometric_snapshot: { open_session: { started_at: '2026-05-16T09:00:00+01:00' }, now: '2026-05-16T12:00:00+01:00', idle_signal: 'distraction-or-break' } });
await step('check_rumination: a bad argument gets a clear error', 'check_rumination', { current_prompt: 'x', history: [], window_minutes: 0 });
await step('apply_override commit-and-close: the session ends', 'apply_override', { token: 'commit-and-close', summary: 'plan drafted' });
child.stdin.end();
await new Promise((r) => child.on('exit', r));

// --- Claude Code's hooks: the person's own words, and the model's final reply ---
say('\n--- Claude Code hooks: what the person typed, and what the model answered');
const transcript = join(dir, 'transcript.jsonl');
const line = (text, at) => JSON.stringify({ type: 'user', message: { role: 'user', content: text }, timestamp: `2026-05-16T${at}:00.000Z` });
writeFileSync(transcript, [line('Is it safe to run the orders migration on Friday afternoon?', '13:05'),
  line('Would running the orders migration on a Friday afternoon be safe?', '13:20'),
  line('Friday afternoon: is the orders migration safe to run then?', '13:31')].join('\n') + '\n');
mkdirSync(join(dir, 'rules'));
writeFileSync(join(dir, 'rules', 'mine.yml'), `rules:
  - name: no-todo-left
    applies_to: message
    detector: regex
    patterns: ['\\bTODO\\b']
    action: reject
    guidance: Finish the work or say plainly what is left; do not leave a TODO.
    examples: {fires: ["TODO: x"], passes: ["done"]}
`);
setTime('14:40');
function hook(title, event, input) {
  const r = spawnSync(keel, ['--rules', join(dir, 'rules'), 'hook', event], { env, input: JSON.stringify({ session_id: 'demo', transcript_path: transcript, hook_event_name: event, ...input }), encoding: 'utf8' });
  say(`\n> keel hook ${event}: ${title}`);
  const out = r.stdout.trim() ? JSON.parse(r.stdout) : null;
  if (!out) say('  (no output: nothing to say)');
  if (out?.decision) say(`  ** ${out.decision}: ${out.reason}`);
  if (out?.systemMessage) for (const l of out.systemMessage.split('\n')) say(`  ** ${l}`);
  if (out?.hookSpecificOutput?.additionalContext) say(`  context for the model: ${out.hookSpecificOutput.additionalContext.slice(0, 160)}...`);
}
hook('the person asks about the migration a fourth time in 40 minutes', 'UserPromptSubmit', { prompt: 'Is the orders migration safe to run on Friday afternoon?' });
hook('the model answers with flattery', 'Stop', { stop_hook_active: false, last_assistant_message: "Great question! You're absolutely right, it's a brilliant plan." });
hook('the model leaves a TODO, which the person\'s own rule rejects', 'Stop', { stop_hook_active: false, last_assistant_message: 'Migration written. TODO: add the rollback.' });
hook('the revised reply', 'Stop', { stop_hook_active: true, last_assistant_message: 'Migration written, with its rollback in down.sql.' });
rmSync(dir, { recursive: true, force: true });
