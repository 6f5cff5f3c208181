// hooks.mjs: `keel hook` run exactly as a host runs it: the recorded payload
// (tests/hooks/payloads) on stdin, no tty, the host's timeout, and its
// output checked against the fields that host documents for that event.
// The transcripts in tests/hooks/ are written for keel: a question asked the
// fourth time in 40 minutes, the same with the current prompt already written
// as the last line, one question frame about four different things,
// and a transcript full of lines that hold the question but are not the
// person's prompts (tool results, meta lines, slash commands, task
// notifications, keel's own context, assistant text).
import { spawnSync, spawn } from 'node:child_process';
import { readFileSync, writeFileSync, readdirSync, mkdirSync, chmodSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { ok, skip, done } from './lib/tap.mjs';
import { keel, root, sandbox } from './lib/keel.mjs';

const dir = join(root, 'tests', 'hooks');
const NOW = '2026-05-15T14:40:00Z';
const payload = (name, fill = {}) => {
  const p = JSON.parse(readFileSync(join(dir, 'payloads', name), 'utf8'));
  for (const [k, v] of Object.entries(fill)) p[k] = v;
  return p;
};
const TIMEOUT = { 'claude-code': 30000, codex: 30000, gemini: 60000 };

// The output fields each host documents, per kind of event (and the 10,000
// character cap on text fields).
const FIELDS = {
  prompt: ['continue', 'stopReason', 'suppressOutput', 'systemMessage', 'decision', 'reason', 'hookSpecificOutput'],
  reply: ['continue', 'stopReason', 'suppressOutput', 'systemMessage', 'decision', 'reason'],
  start: ['suppressOutput', 'systemMessage', 'hookSpecificOutput'],
};
function valid(host, kind, out) {
  if (out === null) return true;
  if (typeof out !== 'object' || Array.isArray(out)) return false;
  for (const k of Object.keys(out)) if (!FIELDS[kind].includes(k)) return false;
  const h = out.hookSpecificOutput;
  if (h !== undefined && (typeof h.hookEventName !== 'string' || Object.keys(h).some((k) => !['hookEventName', 'additionalContext'].includes(k))))
    return false;
  if (out.decision !== undefined && out.decision !== (host === 'gemini' ? 'deny' : 'block')) return false;
  for (const t of [out.systemMessage, out.reason, h?.additionalContext]) if (t !== undefined && (typeof t !== 'string' || t.length > 10000)) return false;
  return true;
}

// One hook call as the host makes it. Returns {status, out (parsed or null), stdout, stderr, ms}.
function hook(host, event, input, { box, env = {}, args = [] } = {}) {
  const t0 = Date.now();
  const r = spawnSync(keel, ['hook', event, '--host', host, ...args], {
    input: typeof input === 'string' ? input : JSON.stringify(input),
    env: { PATH: process.env.PATH, HOME: process.env.HOME || '/tmp', KEEL_NOW: NOW, TZ: 'UTC', ...box.env, ...env },
    encoding: 'utf8', timeout: TIMEOUT[host], maxBuffer: 1 << 20,
  });
  let out = null;
  if (r.stdout.trim()) { try { out = JSON.parse(r.stdout); } catch { out = 'not json'; } }
  return { status: r.status, out, stdout: r.stdout, stderr: r.stderr, ms: Date.now() - t0 };
}
const transcript = (name) => join(dir, name);
// A Claude Code transcript at path holding the person's prompts [[when, text], ...].
const writeAsks = (path, asks) => writeFileSync(path, asks.map(([at, text]) =>
  JSON.stringify({ type: 'user', timestamp: at, message: { role: 'user', content: text } })).join('\n') + '\n');
// Prompts typed in chats of one sandbox (session chat-<c>, its transcript
// growing as the host writes it), the clock at when(t) for each: ask(c,
// prompt, t) returns what keel said to the person.
function chats(box, when) {
  const said = {};
  return (c, prompt, t) => {
    const tr = join(box.dir, `${c}.jsonl`);
    const r = spawnSync(keel, ['hook', 'UserPromptSubmit'], { encoding: 'utf8', env: { ...process.env, ...box.env, KEEL_NOW: when(t), TZ: 'UTC' },
      input: JSON.stringify({ hook_event_name: 'UserPromptSubmit', session_id: `chat-${c}`, prompt, transcript_path: tr }) });
    (said[c] ||= []).push([when(t), prompt]);
    writeAsks(tr, said[c]);
    try { return JSON.parse(r.stdout).systemMessage || ''; } catch { return ''; }
  };
}
// What keel hook UserPromptSubmit says to the person (systemMessage) on prompt,
// with the Claude Code transcript at transcript_path, at now (UTC); each call
// a conversation of its own.
let conversations = 0;
const promptSays = (box, transcript_path, prompt, now, env = {}) => {
  const r = spawnSync(keel, ['hook', 'UserPromptSubmit'], { encoding: 'utf8',
    env: { ...process.env, ...box.env, KEEL_NOW: now, TZ: 'UTC', ...env },
    input: JSON.stringify({ hook_event_name: 'UserPromptSubmit', session_id: `c${++conversations}`, prompt, transcript_path }) });
  try { return JSON.parse(r.stdout).systemMessage || ''; } catch { return r.stdout; }
};
// One worry asked three times in new words, on 2026-11-26 (UTC).
const WORRY = [['10:24', 'is it safe to merge the reviewed rate limit change now?'], ['10:31', 'are you sure merging the rate limit change is safe?'],
  ['10:38', 'honestly, is the rate limit change safe to merge?']].map(([t, text]) => [`2026-11-26T${t}:00Z`, text]);
const kindOf = (e) => (['UserPromptSubmit', 'BeforeAgent'].includes(e) ? 'prompt' : e === 'SessionStart' ? 'start' : 'reply');

// --- two checks that wait out a timer (2 s, 5 s) -----------------------------------
// Started first, they run beside the rest. Each hook is timed by its own
// shell, not by this process, whose loop the other checks keep busy.
function timedHook(args, box, write, { keepOpen = false } = {}) {
  return new Promise((res) => {
    const c = spawn('bash', ['-c', 't0=$(date +%s%N); "$0" "$@"; rc=$?; echo "rc=$rc ms=$((($(date +%s%N) - t0) / 1000000))" >&2',
      keel, 'hook', ...args], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME || '/tmp', KEEL_NOW: NOW, TZ: 'UTC', ...box.env } });
    let out = '', err = '';
    c.stdout.on('data', (d) => { out += d; });
    c.stderr.on('data', (d) => { err += d; });
    c.stdin.on('error', () => {});
    if (keepOpen) c.stdin.write(write);         // and the pipe stays open
    else c.stdin.end(write);
    const kill = setTimeout(() => c.kill('SIGKILL'), 40000);
    c.on('close', () => {
      clearTimeout(kill);
      c.stdin.destroy();
      const m = /rc=(\d+) ms=(\d+)/.exec(err);
      res({ status: m ? Number(m[1]) : null, ms: m ? Number(m[2]) : null, stdout: out, stderr: err });
    });
  });
}
const halfPayload = timedHook(['Stop', '--host', 'claude-code'], sandbox(),
  JSON.stringify(payload('claude-code-Stop.json')).slice(0, 40), { keepOpen: true });
const lockedState = (async () => {
  const box = sandbox();
  hook('claude-code', 'SessionStart', payload('claude-code-SessionStart.json'), { box });   // creates the state directory
  // the person's word, given before the file is held, still holds while it is
  const off = hook('claude-code', 'UserPromptSubmit', payload('claude-code-UserPromptSubmit.json',
    { prompt: 'disable-for-session rumination', transcript_path: transcript('claude-reask.jsonl') }), { box });
  const lock = join(box.stateDir, 'state.lock');
  // -o: the lock is flock's own, gone when it is killed; its group holds the sleep too
  const holder = spawn('flock', ['-o', lock, 'sleep', '20'], { stdio: 'ignore', detached: true });
  while (spawnSync('flock', ['-n', lock, 'true']).status === 0) await new Promise((r) => setTimeout(r, 20));
  const r = await timedHook(['UserPromptSubmit', '--host', 'claude-code'], box,
    JSON.stringify(payload('claude-code-UserPromptSubmit.json', { transcript_path: transcript('claude-reask.jsonl') })));
  // the next hook, another process, is told by the first not to wait again
  const next = await timedHook(['Stop', '--host', 'claude-code'], box, JSON.stringify(payload('claude-code-Stop.json')));
  process.kill(-holder.pid);
  await new Promise((res) => holder.on('exit', res));
  // the holder gone, the next hook takes the lock and clears the mark
  const after = await timedHook(['UserPromptSubmit', '--host', 'claude-code'], box,
    JSON.stringify(payload('claude-code-UserPromptSubmit.json', { prompt: 'run the tests' })));
  const mark = readFileSync(lock).subarray(8, 16);
  if (r.stdout.trim()) { try { r.out = JSON.parse(r.stdout); } catch { r.out = 'not json'; } }
  return { ...r, next, after, off: off.out, cleared: mark.length === 8 && mark.every((b) => b === 0) };
})();

// --- every host and event: the output is the host's shape ----------------------
for (const f of readdirSync(join(dir, 'payloads')).sort()) {
  const [host, event] = f.replace(/\.json$/, '').split(/-(?=[A-Z])/);
  const box = sandbox();
  const p = payload(f, { transcript_path: transcript({ codex: 'codex-reask.jsonl', gemini: 'gemini-reask.jsonl' }[host] || 'claude-reask.jsonl') });
  if ('last_assistant_message' in p) p.last_assistant_message = 'Great question! You are absolutely right, this is a brilliant plan.';
  if ('prompt_response' in p) p.prompt_response = 'Great question! You are absolutely right, this is a brilliant plan.';
  const r = hook(host, event, p, { box });
  const kind = kindOf(event);
  ok(r.status === 0 && r.out !== null && valid(host, kind, r.out), `${host} ${event}: exit 0, output in the host's documented fields`, r);
  if (kind === 'prompt')
    ok(/rumination/.test(r.out?.systemMessage || '') && /^\[keel\]/.test(r.out?.hookSpecificOutput?.additionalContext || '') &&
       r.out.hookSpecificOutput.hookEventName === event,
       `${host} ${event}: the fourth asking of one question in 40 minutes gets a rumination advisory, for the model and the person`, r.out);
  if (kind === 'reply')
    ok(/sycophancy/.test(r.out?.systemMessage || '') && r.out.decision === undefined,
      `${host} ${event}: a flattering reply gets a sycophancy message for the person, never a block`, r.out);
  if (kind === 'start')
    ok(/it is 2026-05-15T14:40:00/.test(r.out?.hookSpecificOutput?.additionalContext || ''), `${host} ${event}: the model starts knowing the time`, r.out);
}

// --- a reply is put to the person as keel wrap puts it: not under confidence 0.5 ----
{
  const box = sandbox();
  const stop = (reply) => {
    const r = spawnSync(keel, ['hook', 'Stop'], { encoding: 'utf8', env: { ...process.env, ...box.env },
      input: JSON.stringify({ hook_event_name: 'Stop', session_id: 'bar', stop_hook_active: false, last_assistant_message: reply }) });
    try { return JSON.parse(r.stdout).systemMessage || ''; } catch { return `(no JSON: ${r.stdout})`; }
  };
  const late = 'The race is five weeks out. Run the next three runs easy and check the ankle the morning after each one; if it holds up through a 40-minute run, go for it. If it still aches on stairs, pick a later race.';
  const once = stop(late);
  const opening = stop("You're absolutely right, go for it.");
  ok(!/sycophancy/.test(once) && /keel \(sycophancy\)/.test(opening),
    'one agreeing phrase late in a reply of substance (confidence 0.45) is not put to the person; agreement that opens the reply is', { once, opening });
  // override-once is for the next advisory the person would see: a quiet one leaves it waiting
  spawnSync(keel, ['hook', 'UserPromptSubmit'], { encoding: 'utf8', env: { ...process.env, ...box.env },
    input: JSON.stringify({ hook_event_name: 'UserPromptSubmit', session_id: 'bar', prompt: 'override-once' }) });
  const quiet = stop(late);
  const skipped = stop("You're absolutely right, go for it.");
  const again = stop("You're absolutely right, go for it.");
  ok(!/sycophancy/.test(quiet) && !/keel \(sycophancy\)/.test(skipped) && /keel \(sycophancy\)/.test(again),
    'override-once skips the next advisory said to the person, not a quiet one before it', { quiet, skipped, again });
  // A reply is read on its first 16,000 characters, and nothing after them: not even a slash that would make the
  // words before it a label. Two agreements end the 16,000 (confidence 0.6); without the second, 0.45 is not said.
  const cut = 'The second run took 41 seconds on the warm cache. '.repeat(319) + 'Ok go. ' + "You're absolutely right, I completely agree";
  const atCut = stop(cut + '/not a grade.');
  ok(cut.length === 16000 && /keel \((?:rules, )?sycophancy\)/.test(atCut), 'agreement that ends at the 16,000th character of a reply, a slash after it: the slash is not read', atCut);
}

// --- rumination reads only the person's prompts ------------------------------------
{
  const base = payload('claude-code-UserPromptSubmit.json');
  let r = hook('claude-code', 'UserPromptSubmit', { ...base, transcript_path: transcript('claude-frame.jsonl'), prompt: 'How do I configure caching in the payments client?' }, { box: sandbox() });
  ok(r.status === 0 && !/rumination/.test(r.stdout), 'one question frame about four different things: no rumination advisory', r.out?.systemMessage);
  r = hook('claude-code', 'UserPromptSubmit', { ...base, transcript_path: transcript('claude-noise.jsonl') }, { box: sandbox() });
  ok(r.status === 0 && !/rumination/.test(r.stdout),
    'tool results, meta lines, slash commands, task notifications, the ! shell\'s command and output, a teammate\'s message, keel\'s own context and assistant text holding the question are not counted', r.out);
  // Claude Code's summary of a compacted conversation is written as a user
  // line and lists every earlier prompt: it is not one of them.
  for (const f of ['claude-compacted.jsonl', 'claude-compacted-unflagged.jsonl']) {
    r = hook('claude-code', 'UserPromptSubmit', { ...base, transcript_path: transcript(f) }, { box: sandbox() });
    ok(r.status === 0 && !/rumination/.test(r.stdout),
      `${f}: the summary of a compacted conversation (isCompactSummary, or its opening words) is no earlier ask: one ask, no advisory`, r.out);
  }
  // A subagent's task (older Claude Code writes it into the session's file,
  // isSidechain) is the agent's words, not the person asking.
  r = hook('claude-code', 'UserPromptSubmit', { ...base, transcript_path: transcript('claude-sidechain.jsonl') }, { box: sandbox() });
  ok(r.status === 0 && !/rumination/.test(r.stdout),
    'two subagents handed the question as their task (isSidechain) are no earlier asks: one ask, no advisory', r.out);
  // Gemini CLI's JSONL: a message is written again when it changes (the
  // newest line is the message), a tool's response is a "user" message,
  // hooks' context is a part of the prompt, a rewind drops what followed.
  {
    const gem = payload('gemini-BeforeAgent.json');
    r = hook('gemini', 'BeforeAgent', { ...gem, transcript_path: transcript('gemini-reask.jsonl') }, { box: sandbox() });
    ok(r.status === 0 && /3 times before/.test(r.out?.systemMessage || ''),
      'Gemini CLI: three earlier asks, one written twice, beside a tool response and a file holding the question: 3 times before', r.out);
    r = hook('gemini', 'BeforeAgent', { ...gem, transcript_path: transcript('gemini-cancelled.jsonl') }, { box: sandbox() });
    ok(r.status === 0 && /2 times before/.test(r.out?.systemMessage || ''),
      'Gemini CLI: an ask cancelled ("Request cancelled.") and typed again counts once: 2 times before', r.out);
    r = hook('gemini', 'BeforeAgent', { ...gem, transcript_path: transcript('gemini-rewound.jsonl') }, { box: sandbox() });
    ok(r.status === 0 && /2 times before/.test(r.out?.systemMessage || ''),
      'Gemini CLI: a rewind ($rewindTo) takes back the second and third asks, every line of them; one asked after it: 2 times before', r.out);
  }
  // A prompt typed while the agent worked: Claude Code writes it as a
  // queued_command attachment, with no user line.
  r = hook('claude-code', 'UserPromptSubmit', { ...base, transcript_path: transcript('claude-queued.jsonl') }, { box: sandbox() });
  ok(r.status === 0 && /3 times before/.test(r.out?.systemMessage || '') && /This is the 4th time you have asked for reassurance/.test(r.out.systemMessage),
    'Claude Code: an ask typed while the agent worked (a queued_command attachment) counts; a queued shell command, another session\'s message, one marked meta and one of no known origin do not: 3 times before, 4 pleas with this one', r.out);
  {
    // Blank prompts (a stray Enter, whitespace) are no prompts: 21 of them
    // after the asks do not push the asks out of the 21 prompts read.
    const box = sandbox(), blanks = join(box.dir, 'blanks.jsonl');
    const line = (i) => JSON.stringify({ type: 'user', sessionId: 'c1', message: { role: 'user', content: i % 2 ? '   ' : '\n\t ' },
      uuid: `b${i}`, timestamp: `2026-05-15T14:${String(33 + Math.floor(i / 4)).padStart(2, '0')}:${String((i % 4) * 10).padStart(2, '0')}.000Z` });
    writeFileSync(blanks, readFileSync(transcript('claude-reask.jsonl'), 'utf8') + Array.from({ length: 21 }, (_, i) => line(i)).join('\n') + '\n');
    r = hook('claude-code', 'UserPromptSubmit', { ...base, transcript_path: blanks }, { box });
    ok(r.status === 0 && /3 times before/.test(r.out?.systemMessage || ''), '21 blank prompts after three asks: the asks are still read, 3 times before', r.out);
  }
  // A prompt with a screenshot pasted in is still the person's prompt: its text is what they asked.
  r = hook('claude-code', 'UserPromptSubmit', { ...base, transcript_path: transcript('claude-image.jsonl') }, { box: sandbox() });
  ok(r.status === 0 && /3 times before/.test(r.out?.systemMessage || ''),
    'Claude Code: an earlier ask with an image pasted beside its text counts: 3 times before', r.out);
  // A prompt the person interrupted (Esc) and typed again was asked once:
  // the cut-off one and the interruption line are not earlier asks.
  r = hook('claude-code', 'UserPromptSubmit', { ...base, transcript_path: transcript('claude-interrupted.jsonl') }, { box: sandbox() });
  ok(r.status === 0 && /2 times before/.test(r.out?.systemMessage || '') && !/Request interrupted/.test(r.stdout),
    'Claude Code: an ask interrupted and typed again counts once, the interruption not at all: 2 times before', r.out);
  r = hook('codex', 'UserPromptSubmit', { ...payload('codex-UserPromptSubmit.json'), transcript_path: transcript('codex-interrupted.jsonl') }, { box: sandbox() });
  ok(r.status === 0 && /2 times before/.test(r.out?.systemMessage || ''),
    'Codex: an ask aborted (turn_aborted) and typed again counts once: 2 times before', r.out);
  r = hook('claude-code', 'UserPromptSubmit', { ...base, transcript_path: transcript('claude-reask.jsonl'), source: 'system' }, { box: sandbox() });
  ok(r.status === 0 && r.stdout === '', 'a turn the host started itself (source: system) gets nothing', r.stdout);
  r = hook('claude-code', 'UserPromptSubmit', { ...base, transcript_path: transcript('claude-reask.jsonl'),
    prompt: `<task-notification>Background task finished: ${base.prompt}</task-notification>` }, { box: sandbox() });
  ok(r.status === 0 && r.stdout === '', 'a prompt that is a task notification holding the question, after three askings, is not the person\'s: nothing', r.stdout);
  // Claude Code writes the prompt into the transcript before UserPromptSubmit
  // fires: that line is this prompt, not an earlier asking.
  r = hook('claude-code', 'UserPromptSubmit', { ...base, transcript_path: transcript('claude-current.jsonl') }, { box: sandbox() });
  ok(r.status === 0 && /rumination/.test(r.out?.systemMessage || '') && /2 times before/.test(r.out.systemMessage),
    'the third asking of a plea, already written as the transcript\'s last prompt: not counted twice, its advisory counts 2 times before', r.out);
  {
    const box = sandbox(), written = join(box.dir, 'written.jsonl');
    const current = readFileSync(transcript('claude-current.jsonl'), 'utf8').trim().split('\n').pop();
    writeFileSync(written, readFileSync(transcript('claude-reask.jsonl'), 'utf8') + current + '\n');
    r = hook('claude-code', 'UserPromptSubmit', { ...base, transcript_path: written }, { box });
    ok(r.status === 0 && /rumination/.test(r.out?.systemMessage || '') && /3 times before/.test(r.out.systemMessage),
      'the fourth asking, already written as the transcript\'s last prompt: its advisory counts 3 times before', r.out);
  }
  r = hook('claude-code', 'UserPromptSubmit', { ...base, transcript_path: transcript('claude-reask.jsonl') }, { box: sandbox(), env: { KEEL_NOW: '2026-05-15T17:40:00Z' } });
  ok(r.status === 0 && !/rumination/.test(r.stdout), 'the same three earlier askings, three hours later (outside the window): none', r.out);
  {
    // The hooks keep 150 minutes of a conversation (one worry's asks span
    // hours); a profile can set the tool's 90 back.
    const box = sandbox(), prof = join(box.dir, 'ninety.yaml');
    writeFileSync(prof, 'guardrails:\n  rumination:\n    window_minutes: 90\n');
    const later = { KEEL_NOW: '2026-05-15T16:30:00Z' };
    const inside = hook('claude-code', 'UserPromptSubmit', { ...base, transcript_path: transcript('claude-reask.jsonl') }, { box, env: later });
    const ninety = hook('claude-code', 'UserPromptSubmit', { ...base, transcript_path: transcript('claude-reask.jsonl') }, { box: sandbox(), env: { ...later, KEEL_PROFILE: prof } });
    ok(/rumination/.test(inside.out?.systemMessage || '') && ninety.status === 0 && !/rumination/.test(ninety.stdout),
      'the same three earlier askings, the first 2 h 25 min before: advised in the hooks\' 150 minutes, not in a profile\'s 90', { inside: inside.out, ninety: ninety.out });
  }
  // keel reads the transcript from its end in a tail that grows (64 KiB, then
  // fourfold): earlier askings behind megabytes of tool output are still found.
  const box = sandbox();
  const lines = readFileSync(transcript('claude-reask.jsonl'), 'utf8').split('\n').filter(Boolean);
  const big = (i, ts) => JSON.stringify({ type: 'user', message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: `t${i}`, content: 'x'.repeat(300000) }] }, timestamp: ts });
  const out = [];
  lines.forEach((l, i) => { out.push(l); const ts = JSON.parse(l).timestamp; if (ts) for (let k = 0; k < 2; k++) out.push(big(`${i}-${k}`, ts)); });
  const far = join(box.dir, 'far.jsonl');
  writeFileSync(far, out.join('\n') + '\n');
  r = hook('claude-code', 'UserPromptSubmit', { ...base, transcript_path: far }, { box });
  ok(r.status === 0 && /rumination/.test(r.out?.systemMessage || ''),
    'the earlier askings, up to 4.2 MB back behind tool output, are read: the fourth asking gets its advisory', r.out);
}

// --- a reply breaking the person's reject rule -------------------------------------
{
  const box = sandbox();
  const rules = ['--rules', join(dir, 'rules')];
  const p = payload('claude-code-Stop.json', { last_assistant_message: 'Done. TODO: wire the export button.' });
  const seen = [];
  for (let i = 1; i <= 5; i++) {
    const r = hook('claude-code', 'Stop', { ...p, stop_hook_active: i > 1 }, { box, args: rules });
    seen.push(r);
  }
  ok(seen.slice(0, 4).every((r, i) => r.status === 0 && r.out?.decision === 'block' && /no-todo-left/.test(r.out.reason) &&
     r.out.reason.includes(`attempt ${i + 1} of 4`) && /Finish the work/.test(r.out.reason)),
    'a reply breaking the person\'s reject rule: the stop is blocked with the rule and its guidance, four times', seen.map((r) => r.out));
  ok(seen[4].status === 0 && seen[4].out?.decision === undefined && /bypassed/.test(seen[4].out?.systemMessage || ''),
    'the 5th attempt in the same turn passes, and the person is told the rules were bypassed', seen[4].out);
  // bypassed and sycophantic at once: one message, one header, one list of words
  const q = payload('claude-code-Stop.json', { session_id: 'both', last_assistant_message: 'You are absolutely right, brilliant plan! Done. TODO: wire the export button.' });
  let both;
  for (let i = 1; i <= 5; i++) both = hook('claude-code', 'Stop', { ...q, stop_hook_active: i > 1 }, { box, args: rules });
  const bm = both.out?.systemMessage || '';
  ok(both.out?.decision === undefined && /^keel \(rules, sycophancy\): the reply broke your rules \(no-todo-left\)[^\n]*bypassed\. The reply/.test(bm) &&
     !bm.includes('\n') && (bm.match(/start your next prompt with one of/g) || []).length === 1,
    'a reply bypassing the person\'s rule that is also sycophantic: one message with one list of words', bm);
  const sixth = hook('claude-code', 'Stop', { ...p, stop_hook_active: true }, { box, args: rules });
  ok(sixth.status === 0 && sixth.out?.decision === undefined && /bypassed/.test(sixth.out?.systemMessage || ''),
    'a 6th stop in the same turn (another hook kept it going) passes too: four blocks a turn, not four and then four more', sixth.out);
  const next = hook('claude-code', 'UserPromptSubmit', payload('claude-code-UserPromptSubmit.json', { transcript_path: '/nonexistent', prompt: 'ok, next task' }), { box, args: rules });
  ok(/previous reply/.test(next.out?.hookSpecificOutput?.additionalContext || '') && /no-todo-left/.test(next.out.hookSpecificOutput.additionalContext) &&
     !next.stdout.includes('wire the export'), 'the next prompt carries a note naming the rule, not the reply\'s text', next.out);
  const again = hook('claude-code', 'Stop', { ...p, stop_hook_active: false }, { box, args: rules });
  ok(again.out?.decision === 'block' && /attempt 1 of 4/.test(again.out.reason), 'a new turn (stop_hook_active false) counts from 1 again', again.out);
  const fresh = hook('claude-code', 'Stop', { ...p, stop_hook_active: false }, { box, args: rules });
  ok(fresh.out?.decision === 'block' && /attempt 2 of 4/.test(fresh.out.reason),
    'a second stop in the turn keel saw start counts on (2), though the host says stop_hook_active false', fresh.out);
  const more = [3, 4, 5].map(() => hook('claude-code', 'Stop', { ...p, stop_hook_active: false }, { box, args: rules }));
  ok(more[0].out?.decision === 'block' && more[1].out?.decision === 'block' && more[2].out?.decision === undefined &&
     /bypassed/.test(more[2].out?.systemMessage || ''),
    'a host that never says stop_hook_active is blocked at most 4 times in a turn keel saw start, then told the rules were bypassed', more.map((r) => r.out));
  // a revised reply that passes ends the count: a later break in the same
  // run of stops is attempt 1 again
  const b2 = sandbox();
  const first = hook('claude-code', 'Stop', { ...p, stop_hook_active: false }, { box: b2, args: rules });
  const passed = hook('claude-code', 'Stop', { ...p, last_assistant_message: 'Done: the export button is wired and tested.', stop_hook_active: true }, { box: b2, args: rules });
  const later = hook('claude-code', 'Stop', { ...p, stop_hook_active: true }, { box: b2, args: rules });
  ok(/attempt 1 of 4/.test(first.out?.reason || '') && passed.out?.decision === undefined && later.out?.decision === 'block' && /attempt 1 of 4/.test(later.out.reason),
    'a revised reply that follows the rules ends the count: the next break is attempt 1, not 2', [first.out, passed.out, later.out]);
  // a subagent's stops count apart: four of its blocks leave the main reply's
  // four untouched, and its own fifth says it was a subagent's
  const b3 = sandbox();
  hook('claude-code', 'UserPromptSubmit', payload('claude-code-UserPromptSubmit.json', { transcript_path: '/nonexistent', prompt: 'fix the button' }), { box: b3, args: rules });
  const subs = [1, 2, 3, 4, 5].map(() => hook('claude-code', 'SubagentStop', { ...p, hook_event_name: 'SubagentStop', stop_hook_active: false }, { box: b3, args: rules }));
  const main = hook('claude-code', 'Stop', { ...p, stop_hook_active: false }, { box: b3, args: rules });
  ok(subs.slice(0, 4).every((r) => r.out?.decision === 'block') && /a subagent's reply broke your rules/.test(subs[4].out?.systemMessage || '') &&
     main.out?.decision === 'block' && /attempt 1 of 4/.test(main.out.reason),
    'a subagent\'s blocked stops count apart: the main reply is still sent back (attempt 1 of 4), and the subagent\'s bypass is said as its own', [subs[4].out, main.out]);
  const closer = hook('claude-code', 'Stop', payload('claude-code-Stop.json', { last_assistant_message: 'The build passes now. Hope this helps!' }), { box: sandbox() });
  ok(/the reply matched the rule cheerleading-closer \(A closer that adds nothing/.test(closer.out?.systemMessage || '') && closer.out?.decision === undefined,
    'a reply a shipped rewrite rule matches: the person is told the rule in its own words, and nothing is blocked', closer.out);
  const shipped = hook('gemini', 'AfterAgent', payload('gemini-AfterAgent.json', { prompt_response: 'Shall I go ahead and run the linter on the whole repo?' }), { box: sandbox() });
  ok(shipped.status === 0 && shipped.out?.decision === undefined, 'a shipped rule (rules/voice.yml) never blocks: only the person\'s own do', shipped.out);
  const gem = hook('gemini', 'AfterAgent', payload('gemini-AfterAgent.json', { prompt_response: 'Done. TODO: tests.' }), { box: sandbox(), args: rules });
  ok(gem.out?.decision === 'deny' && /no-todo-left/.test(gem.out.reason), 'Gemini: the same rule denies the response (its word for block)', gem.out);
  // without --host, the event's name tells the host: Gemini's AfterAgent, Claude Code's Stop
  const auto = (event, file, extra) => {
    const b = sandbox();
    const r = spawnSync(keel, ['hook', event, ...rules], { encoding: 'utf8', input: JSON.stringify(payload(file, extra)),
      env: { PATH: process.env.PATH, HOME: process.env.HOME || '/tmp', KEEL_NOW: NOW, TZ: 'UTC', ...b.env } });
    try { return JSON.parse(r.stdout).decision; } catch { return r.stdout; }
  };
  const told = { AfterAgent: auto('AfterAgent', 'gemini-AfterAgent.json', { prompt_response: 'Done. TODO: tests.' }),
    Stop: auto('Stop', 'claude-code-Stop.json', { last_assistant_message: 'Done. TODO: tests.' }) };
  ok(told.AfterAgent === 'deny' && told.Stop === 'block', 'without --host the event tells the host: AfterAgent is denied in Gemini\'s word, Stop blocked in Claude Code\'s', told);
}

// --- never fail the host ---------------------------------------------------------
{
  const box = sandbox();
  const cases = [
    ['bad JSON on stdin', 'UserPromptSubmit', '{"prompt": '],
    ['a JSON array', 'UserPromptSubmit', '[1,2]'],
    ['empty stdin', 'Stop', ''],
    ['stdin over 4 MiB', 'UserPromptSubmit', JSON.stringify({ prompt: 'x'.repeat(5 << 20) })],
    ['a transcript that is a directory', 'UserPromptSubmit', JSON.stringify({ prompt: 'hello there', transcript_path: dir })],
    ['a transcript that is not JSON', 'UserPromptSubmit', JSON.stringify({ prompt: 'hello there', transcript_path: join(dir, 'rules', 'no-todo.yml') })],
    ['an unknown event', 'PreCompact', JSON.stringify({ trigger: 'auto' })],
    ['a prompt that is not a string', 'UserPromptSubmit', JSON.stringify({ prompt: 42 })],
  ];
  for (const [name, event, input] of cases) {
    const r = hook('claude-code', event, input, { box });
    ok(r.status === 0 && (r.stdout === '' || valid('claude-code', kindOf(event), r.out)), `${name}: exit 0, nothing broken`, r);
  }
  // stdin that ends in the middle of the payload is read to its end, not
  // waited on: said to be invalid, never "unfinished" after the 2 s wait
  const cut = hook('claude-code', 'UserPromptSubmit', '{"prompt": ', { box });
  ok(cut.status === 0 && /hook_input_invalid/.test(cut.stderr) && !/hook_input_unfinished/.test(cut.stderr) && cut.ms < 1500,
    `a payload cut short by the end of stdin: invalid at once (${cut.ms} ms), not waited on`, cut.stderr);
  // The payload limit is 4 MiB exactly: a payload of 4 MiB is read, one byte more is not.
  for (const extra of [0, 1]) {
    const input = JSON.stringify({ prompt: 'x'.repeat((4 << 20) - 13 + extra) });
    const big = hook('claude-code', 'UserPromptSubmit', input, { box });
    ok(Buffer.byteLength(input) === (4 << 20) + extra && big.status === 0 && /hook_input_too_large/.test(big.stderr) === (extra === 1),
      `a payload of ${extra ? '4 MiB and 1 byte is not read (logged), exit 0' : 'exactly 4 MiB is read'}`, big.stderr.slice(0, 300));
  }
  // A host writing a payload over the limit in pieces, as a pipe takes it:
  // keel reads the rest and drops it, so the host never writes into a closed
  // pipe (EPIPE crashes a host that has no handler for it).
  {
    const child = spawn(keel, ['hook', 'UserPromptSubmit'], { env: { ...process.env, ...box.env } });
    let epipe = null, stderr = '';
    child.stdin.on('error', (e) => { epipe = e; });
    child.stderr.on('data', (d) => { stderr += d; });
    const exited = new Promise((res) => child.on('exit', (code) => res(code)));
    const piece = Buffer.alloc(1 << 16, 'x');
    child.stdin.write('{"prompt": "');
    for (let i = 0; i < 88 && !epipe; i++)
      if (!child.stdin.write(piece)) await new Promise((res) => child.stdin.once('drain', res));
    child.stdin.end('"}');
    const code = await exited;
    await new Promise((res) => setImmediate(res));
    ok(code === 0 && !epipe && /hook_input_too_large limit=4194304/.test(stderr),
      'a 5.5 MB payload written in pieces: exit 0, said too large, and the host never meets a closed pipe', { code, epipe: epipe && epipe.code, stderr });
  }
  // The same for a payload that stops being JSON early (nested too deep, a
  // value with more after it): what the host still writes is read and dropped.
  for (const [what, head, fill] of [['nested too deep', '', '['], ['a value with more after it', '{"prompt": "hi"}', ' x']]) {
    const child = spawn(keel, ['hook', 'UserPromptSubmit'], { env: { ...process.env, ...box.env } });
    let epipe = null, stderr = '';
    child.stdin.on('error', (e) => { epipe = e; });
    child.stderr.on('data', (d) => { stderr += d; });
    const exited = new Promise((res) => child.on('exit', (code) => res(code)));
    const piece = Buffer.alloc(1 << 16, fill);
    child.stdin.write(head);
    for (let i = 0; i < 48 && !epipe; i++)
      if (!child.stdin.write(piece)) await new Promise((res) => child.stdin.once('drain', res));
    child.stdin.end();
    const code = await exited;
    await new Promise((res) => setImmediate(res));
    ok(code === 0 && !epipe, `a 3 MB payload, ${what}, written in pieces: exit 0, and the host never meets a closed pipe`, { code, epipe: epipe && epipe.code, stderr });
  }
  const r = hook('claude-code', 'Stop', payload('claude-code-Stop.json', { last_assistant_message: 'fine' }), { box, args: ['--host', 'nonsense'] });
  ok(r.status === 0 && r.stdout === '', 'a wrong --host: exit 0, no output, the problem on stderr', r.stderr);
  const secret = 'my-very-private-question-about-ana';
  const s = hook('claude-code', 'UserPromptSubmit', payload('claude-code-UserPromptSubmit.json', { prompt: secret, transcript_path: transcript('claude-reask.jsonl') }), { box, env: { KEEL_LOG_LEVEL: 'debug' }, args: ['--log-level', 'debug'] });
  ok(s.status === 0 && !s.stderr.includes(secret) && !s.stderr.includes('orders migration'), 'nothing the person wrote reaches the log, at debug level', s.stderr);
  // What the log does carry: counts. One earlier prompt is 1, not 0.
  const one = join(box.dir, 'one.jsonl');
  writeFileSync(one, JSON.stringify({ type: 'user', timestamp: '2026-05-15T14:30:00Z', message: { role: 'user', content: 'rename the export module' } }) + '\n');
  const counted = hook('claude-code', 'UserPromptSubmit', payload('claude-code-UserPromptSubmit.json', { prompt: 'now add its tests', transcript_path: one }), { box, args: ['--log-level', 'info'] });
  ok(/hook_prompt earlier=1 advisories=0/.test(counted.stderr) && !/hook_transcript_unreadable/.test(counted.stderr),
    'the log counts the earlier prompts the transcript holds (one here)', counted.stderr);
  const none = join(box.dir, 'none.jsonl');
  writeFileSync(none, JSON.stringify({ type: 'assistant', timestamp: '2026-05-15T14:30:00Z', message: { role: 'assistant', content: 'hello' } }) + '\n');
  const empty = hook('claude-code', 'UserPromptSubmit', payload('claude-code-UserPromptSubmit.json', { prompt: 'now add its tests', transcript_path: none }), { box, args: ['--log-level', 'info'] });
  const gone = hook('claude-code', 'UserPromptSubmit', payload('claude-code-UserPromptSubmit.json', { prompt: 'now add its tests', transcript_path: join(box.dir, 'gone.jsonl') }), { box, args: ['--log-level', 'info'] });
  ok(/hook_prompt earlier=0/.test(empty.stderr) && !/hook_transcript_unreadable/.test(empty.stderr) && /hook_transcript_unreadable present=1/.test(gone.stderr),
    'a transcript with no prompts is read (earlier=0); one that is not there is logged as unreadable', [empty.stderr, gone.stderr]);
}

// --- a state file whose hooks member is not an object: made one again ---------------
{
  const box = sandbox({ state: { version: 1, hooks: ['from', 'elsewhere'] } });
  const p = payload('claude-code-Stop.json', { last_assistant_message: 'Done. TODO: tests.' });
  const seen = [false, true].map((active) => hook('claude-code', 'Stop', { ...p, stop_hook_active: active }, { box, args: ['--rules', join(dir, 'rules')] }).out);
  ok(/attempt 1 of 4/.test(seen[0]?.reason || '') && /attempt 2 of 4/.test(seen[1]?.reason || ''),
    'a state file whose "hooks" is an array: the count is kept all the same (attempt 1, then 2)', seen);
}

// --- a state directory keel cannot use: a person's rule speaks, never blocks ----------
// Blocks are counted in the state file; a block that cannot be counted
// could repeat for ever, so the reply is let through and the person told.
{
  const box = sandbox();
  writeFileSync(join(box.dir, 'file'), '');
  const r = hook('claude-code', 'Stop', payload('claude-code-Stop.json', { last_assistant_message: 'Done. TODO: tests.', stop_hook_active: false }),
    { box, env: { KEEL_STATE_DIR: join(box.dir, 'file', 'state') }, args: ['--rules', join(dir, 'rules')] });
  ok(r.status === 0 && r.out?.decision === undefined && /broke your rules \(no-todo-left\) and was let through unblocked: keel could not count its attempts/.test(r.out?.systemMessage || ''),
    'the state directory unusable: a reply breaking the person\'s rule is let through, and the person told why', r.out);
  const said = r.stderr.match(/hook_state_unavailable[^\n]*/g) || [];
  ok(said.length === 1 && /code=STATE_UNWRITABLE what_to_do="set KEEL_STATE_DIR, XDG_STATE_HOME or HOME to an absolute path/.test(said[0]),
    'the unusable state directory is logged once a hook, with what to do about it', r.stderr);
}

// --- what the hook says reads as sentences --------------------------------------------------
{
  const box = sandbox();
  const start = hook('claude-code', 'SessionStart', payload('claude-code-SessionStart.json'), { box });
  const ctx = start.out?.hookSpecificOutput?.additionalContext || '';
  ok(/It is|it is/.test(ctx) && !/\bPT\d|\bP\dD|%s|\(null\)/.test(ctx) && /\.$/.test(ctx.trim()) &&
    /it is [^ ]+, a [A-Z][a-z]+day( \(energy zone: [a-z_]+\))?\. [A-Z]/.test(ctx),
    'SessionStart on a fresh state file: the time in words, no ISO duration ("PT0S") and no placeholder', ctx);
  const trailing = hook('claude-code', 'SessionStart', JSON.stringify(payload('claude-code-SessionStart.json')) + '\nand then some words', { box });
  ok(trailing.status === 0 && /it is /.test(trailing.out?.hookSpecificOutput?.additionalContext || ''),
    'a payload followed by more on stdin: the payload is read, what follows it left', trailing.stdout + trailing.stderr);
  const long = hook('claude-code', 'Stop', payload('claude-code-Stop.json', { last_assistant_message: 'word '.repeat(320) }), { box });
  const msg = long.out?.systemMessage || '';
  ok(/message-length-cap \(A message longer than a person reads in one go\)\./.test(msg) && /the reply/.test(msg) && !/draft/.test(msg),
    'a reply matching a shipped rule: the person is told the rule in its own words, and the reply is called a reply', msg);
}

// keel's notes about shipped rules say how to quiet them, and the words do:
// override-once hides the next note, disable-for-session the rest of the
// session's; a reply breaking the person's own reject rule is still blocked.
{
  const box = sandbox();
  const at = (m) => ({ KEEL_NOW: `2026-11-30T10:${m}:00Z` });
  const stop = (reply, m) => hook('claude-code', 'Stop', { ...payload('claude-code-Stop.json'), session_id: 'notes', last_assistant_message: reply, stop_hook_active: false },
    { box, env: at(m), args: ['--rules', join(dir, 'rules')] }).out;
  const ask = (prompt, m) => hook('claude-code', 'UserPromptSubmit', { ...payload('claude-code-UserPromptSubmit.json'), session_id: 'notes', prompt }, { box, env: at(m) }).out?.systemMessage || '';
  ask('fix the bug', '00');
  const first = stop('Done.', '01')?.systemMessage || '';
  const once = ask('override-once', '02');
  const hidden = stop('Done.', '03')?.systemMessage || '';
  const back = stop('Done.', '04')?.systemMessage || '';
  const again = ask('override-once', '05');     // the note just given is rules': the word applies to rules
  const plain = stop('The parser now reads the header in one pass; the tests cover both cases.', '06')?.systemMessage || '';
  const saved = stop('Done.', '07')?.systemMessage || '';   // a reply with no note did not use the override
  const off = ask('disable-for-session', '08');
  const r = hook('claude-code', 'Stop', { ...payload('claude-code-Stop.json'), session_id: 'notes', last_assistant_message: 'Done.', stop_hook_active: false },
    { box, env: at('09'), args: ['--rules', join(dir, 'rules'), '--log-level', 'info'] });
  const quiet = r.out?.systemMessage || '';
  const own = stop('Done. TODO: tests.', '10');
  ok(/^keel \(rules\): the reply matched the rule no-empty-status-ping/.test(first) && /To change this, start your next prompt with one of: override-once, disable-for-session\./.test(first) &&
     /keel \(rules\): override-once applied/.test(once) && hidden === '' && /no-empty-status-ping/.test(back) &&
     /keel \(rules\): override-once applied/.test(again) && plain === '' && saved === '' &&
     /keel \(rules\): disable-for-session applied/.test(off) && quiet === '' && /info hook_rules_quiet disabled=1/.test(r.stderr) && own?.decision === 'block',
    'notes about shipped rules: override-once hides the next (a reply with no note leaves it waiting), disable-for-session the rest; the person\'s own reject rule still blocks',
    { first, once, hidden, back, again, plain, saved, off, quiet, own });
  // a sycophantic reply with no rule's note: the word said next is sycophancy's alone
  stop('Great question! You are absolutely right, this is a brilliant plan.', '11');
  const syc = ask('override-once', '12');
  ok(/keel \(sycophancy\): override-once applied/.test(syc) && !/keel \(rules\)/.test(syc),
    'after a sycophancy advisory and no rule\'s note, override-once applies to sycophancy alone', syc);
  // a word the last note's detector does not take: the person is told which words it takes
  hook('claude-code', 'Stop', { ...payload('claude-code-Stop.json'), session_id: 'notes2', last_assistant_message: 'Done.', stop_hook_active: false },
    { box, env: at('13'), args: ['--rules', join(dir, 'rules')] });
  const fresh = hook('claude-code', 'UserPromptSubmit', { ...payload('claude-code-UserPromptSubmit.json'), session_id: 'notes2', prompt: 'fresh-context' }, { box, env: at('14') }).out?.systemMessage || '';
  ok(/^keel: the last advisory here came from rules, which does not take fresh-context; its words are: override-once, disable-for-session\.$/.test(fresh),
    'fresh-context after a rules note: rules does not take it, and its words are named (not "no advisory was given")', fresh);
}

// --- a host that keeps stdin open, or has closed stdout: the hook still ends well ----------
{
  const box = sandbox();
  // spawn a hook whose stdin the test controls; resolves {code, signal, out, ms}
  const run = (write, { closeOut = false } = {}) => new Promise((res) => {
    const t0 = Date.now();
    const c = spawn(keel, ['hook', 'Stop', '--host', 'claude-code'], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME || '/tmp', KEEL_NOW: NOW, TZ: 'UTC', ...box.env },
      stdio: ['pipe', closeOut ? 'ignore' : 'pipe', 'pipe'] });
    let out = '';
    if (!closeOut) c.stdout.on('data', (d) => { out += d; });
    if (closeOut) c.stdin.on('error', () => {});
    c.stdin.on('error', () => {});
    c.stdin.write(write);                       // and the pipe stays open
    const kill = setTimeout(() => c.kill('SIGKILL'), 15000);
    c.on('exit', (code, signal) => { clearTimeout(kill); c.stdin.destroy(); res({ code, signal, out, ms: Date.now() - t0 }); });
  });
  const whole = JSON.stringify(payload('claude-code-Stop.json', { last_assistant_message: 'Great question! You are absolutely right, this is a brilliant plan.' }));
  const r = await run(whole);
  ok(r.code === 0 && r.ms < 1500 && /sycophancy/.test(r.out), `a whole payload with stdin left open: answered at once (${r.ms} ms; it waited for the writer to close, 30 s)`, r);
  // a host that closed its end of stdout before the answer: SIGPIPE is ignored
  const closed = await new Promise((res) => {
    const c = spawn('bash', ['-c', `"$0" hook Stop --host claude-code | true; echo "exit=\${PIPESTATUS[0]}" >&2`, keel], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME || '/tmp', KEEL_NOW: NOW, TZ: 'UTC', ...box.env }, stdio: ['pipe', 'pipe', 'pipe'] });
    let err = '';
    c.stderr.on('data', (d) => { err += d; });
    c.stdin.end(whole);
    c.on('exit', () => res(err));
  });
  ok(/exit=0/.test(closed), 'a host that closed the hook\'s stdout: exit 0, not killed by SIGPIPE (exit 141)', closed);
}



// A prompt longer than the 8,000 bytes the detectors read is cut, not
// dropped, and never inside a character: the same short question before
// 9,000 bytes of three-byte characters, cut 2 bytes into one, asked a 4th
// time is advised.
{
  const box = sandbox();
  const tr = join(box.dir, 'long.jsonl');
  const ask = 'is the nightly backup job safe?  ' + '\u20ac'.repeat(3000);
  const first = 'is the nightly backup job safe?  ' + 'x'.repeat(60);
  writeAsks(tr, ['10:02', '10:09', '10:16'].map((t) => [`2026-11-26T${t}:00Z`, t === '10:02' ? first : ask]));
  const r = spawnSync(keel, ['hook', 'UserPromptSubmit'], { encoding: 'utf8', env: { ...process.env, ...box.env, KEEL_NOW: '2026-11-26T10:23:00Z', TZ: 'UTC' },
    input: JSON.stringify({ hook_event_name: 'UserPromptSubmit', session_id: 'long', prompt: ask, transcript_path: tr }) });
  ok(r.status === 0 && /keel \(rumination/.test(r.stdout), 'a 9,033-byte question asked a 4th time: read on its first 8,000 bytes (cut between characters) and advised', r.stdout.slice(0, 300));
  const said = JSON.parse(r.stdout || '{}').systemMessage || '';
  ok(said.includes(`at 10:02 ("is the nightly backup job safe? ${'x'.repeat(46)}...")`),
    'the first ask quoted in at most 78 bytes, with "..." where its words go on', said.slice(0, 300));
}

// After two pleas about one change, an "ok" that acknowledges the last answer
// before another request about it is the work going on: no advice about
// seeking reassurance again. The third plea is advised.
{
  const box = sandbox();
  const tr = join(box.dir, 'plea.jsonl');
  writeAsks(tr, WORRY.slice(0, 2));
  const hook = (prompt) => {
    const r = spawnSync(keel, ['hook', 'UserPromptSubmit'], { encoding: 'utf8', env: { ...process.env, ...box.env, KEEL_NOW: '2026-11-26T10:45:00Z', TZ: 'UTC' },
      input: JSON.stringify({ hook_event_name: 'UserPromptSubmit', session_id: 'plea', prompt, transcript_path: tr }) });
    try { return JSON.parse(r.stdout).systemMessage || ''; } catch { return `(no JSON: ${r.stdout})`; }
  };
  const question = hook('ok. can you add the rate limit change to the changelog?');
  const plea = hook('is the rate limit change safe to merge today?');
  ok(!/sycophancy/.test(question) && /keel \((rumination, )?sycophancy\)/.test(plea),
    'an "ok" that acknowledges the answer before another request is not advised as a third plea; the third plea is', { question, plea });
}

// In the hooks a prompt counts an earlier one on shared words only when that
// one holds half of its words (the profile's similarity_threshold, 0.5): the
// follow-up questions of a study session share its words ("chi-square", "r
// squared") at a third. The same question in the same words is still advised,
// and a profile can set the tool's own bar, 0.28, back.
{
  const box = sandbox();
  const tr = join(box.dir, 'study.jsonl'), same = join(box.dir, 'same.jsonl'), prof = join(box.dir, 'low.yaml');
  writeAsks(tr, [['10:20', 'after lunch now. chi-square: when do i use it'], ['10:30', 'i got chi square = 11.2 with df 2. right?'],
    ['10:40', 'next topic regression. what does r squared mean']].map(([t, text]) => [`2026-11-26T${t}:00Z`, text]));
  writeAsks(same, ['10:20', '10:30', '10:40'].map((t) => [`2026-11-26T${t}:00Z`, 'what does r squared mean']));
  writeFileSync(prof, 'guardrails:\n  rumination:\n    similarity_threshold: 0.28\n');
  const said = (transcript_path, prompt, env) => promptSays(box, transcript_path, prompt, '2026-11-26T11:00:00Z', env);
  const next = said(tr, "if r = -0.6 what's r squared");
  const again = said(same, 'what does r squared mean');
  const low = said(tr, "if r = -0.6 what's r squared", { KEEL_PROFILE: prof });
  ok(!/rumination/.test(next) && /keel \(rumination/.test(again) && /keel \(rumination/.test(low),
    'a follow-up question sharing a third of its words with three earlier ones: no advisory; the same question a 4th time: advised; at similarity_threshold 0.28 both', { next, again, low });
}

// What the person sees quotes their earlier words as text: a pasted log's
// colour codes, a bell, a right-to-left override or a zero-width space in
// them is not passed on to their terminal (white space and controls as one
// space, format characters left out).
{
  const box = sandbox();
  const tr = join(box.dir, 'ctrl.jsonl');
  const first = '\u001b[31mis it\u0007 safe\u200b to\tmerge \u202ethe reviewed rate limit change now?';
  writeAsks(tr, [[WORRY[0][0], first], ...WORRY.slice(1)]);
  const m = promptSays(box, tr, 'sorry to ask again, but is merging the rate limit change really safe?', '2026-11-26T10:45:00Z');
  ok(/at 10:24 \("\[31mis it safe to merge the reviewed rate\.\.\."\)/.test(m) && !/[\u0000-\u001f\u007f-\u009f\u200b\u202e]/.test(m.replace(/\n/g, ' ')),
    'an earlier prompt with an escape sequence, a bell, a tab, a zero-width space and a bidi override is quoted as plain words', JSON.stringify(m));
}

// Across a daylight-saving change each earlier ask is shown on the clock of
// its own moment (Berlin went from 02:00 to 03:00 at 01:00 UTC on
// 2026-03-29), and snooze-15m's end on the clock of that end.
{
  const box = sandbox();
  const tr = join(box.dir, 'dst.jsonl');
  writeAsks(tr, [['2026-03-29T00:30:00Z', 'Is it safe to deploy the billing service tonight?'], ['2026-03-29T00:45:00Z', 'Would deploying the billing service tonight be safe?'],
    ['2026-03-29T00:55:00Z', 'Tonight: is deploying the billing service safe?']]);
  const m = promptSays(box, tr, 'Is deploying the billing service tonight really safe?', '2026-03-29T01:10:00Z', { TZ: 'Europe/Berlin' });
  const z = promptSays(box, tr, 'snooze-15m', '2026-03-29T00:55:00Z', { TZ: 'Europe/Berlin' });
  ok(/at 01:30 \(.*\), 01:45 and 01:55\./.test(m) && /until 03:10\./.test(z),
    'across a daylight-saving change the earlier asks read 01:30, 01:45 and 01:55 (the clock then), and a snooze given at 01:55 ends at 03:10', `${m} | ${z}`);
}

// An override word said at the start of a prompt is the person's answer to
// keel, not part of what they ask: an earlier ask is quoted without it, and
// one that was the word alone is no ask.
{
  const box = sandbox();
  const tr = join(box.dir, 'words.jsonl');
  writeAsks(tr, [[WORRY[0][0], 'fresh-context ' + WORRY[0][1]], ['2026-11-26T10:27:00Z', 'Override-once rumination.'], ...WORRY.slice(1)]);
  const m = promptSays(box, tr, 'keel, lower-sensitivity sycophancy: sorry to ask again, but is merging the rate limit change really safe?', '2026-11-26T10:45:00Z');
  ok(/^keel: sycophancy does not take lower-sensitivity; its words are: [a-z-]+(, [a-z-]+)*\.$/m.test(m) &&
     /You asked about this 3 times before in this stretch of work: at 10:24 \("is it safe to merge the reviewed rate\.\.\."\), 10:31 and 10:38\./.test(m),
    'earlier asks that opened with an override word are quoted without it, one that was the word alone is not counted, the prompt after its own word is checked, and a word the detector named does not take says which it takes', m);
}

// A prompt with a byte that is not UTF-8 (a paste from another encoding) is
// still read: the byte reads as U+FFFD, and the worry asked a 4th time is
// advised as it would be without it.
{
  const box = sandbox();
  const tr = join(box.dir, 'bytes.jsonl');
  writeAsks(tr, WORRY);
  const json = JSON.stringify({ hook_event_name: 'UserPromptSubmit', session_id: 'bytes', transcript_path: tr,
    prompt: 'sorry to ask again, but is merging the rate limit change really safe? @@' });
  const [a, b] = json.split('@@');
  const r = spawnSync(keel, ['hook', 'UserPromptSubmit'], { env: { ...process.env, ...box.env, KEEL_NOW: '2026-11-26T10:45:00Z', TZ: 'UTC' },
    input: Buffer.concat([Buffer.from(a), Buffer.from([0xff, 0xc3]), Buffer.from(b)]) });
  let m = '';
  try { m = JSON.parse(r.stdout.toString()).systemMessage || ''; } catch { m = r.stdout.toString(); }
  ok(r.status === 0 && /keel \(rumination/.test(m) && /3 times before/.test(m),
    'a prompt with bytes that are not UTF-8 is still checked: the worry asked again is advised', m || r.stderr.toString());
}

// ... and so is a reply: a byte that is not UTF-8 in it reads as U+FFFD, and
// the person's reject rule and sycophancy still read the rest of it.
{
  const box = sandbox();
  const stop = (reply, sid) => {
    const [a, b] = JSON.stringify({ hook_event_name: 'Stop', session_id: sid, stop_hook_active: false, last_assistant_message: reply }).split('@@');
    return spawnSync(keel, ['hook', 'Stop', '--rules', join(dir, 'rules')], { env: { ...process.env, ...box.env },
      input: Buffer.concat([Buffer.from(a), Buffer.from([0xff]), Buffer.from(b)]) });
  };
  const r = stop('Implemented. TODO: handle errors later. @@', 'bytes-r1');
  let out = {};
  try { out = JSON.parse(r.stdout.toString()); } catch { /* none */ }
  ok(r.status === 0 && out.decision === 'block' && /no-todo-left/.test(out.reason || ''),
    'a reply with a byte that is not UTF-8 still meets the person\'s reject rule', r.stdout.toString() || r.stderr.toString());
  const f = stop('You are absolutely right, brilliant plan! @@', 'bytes-r2');
  ok(f.status === 0 && /keel \(sycophancy\)/.test(f.stdout.toString()), 'and sycophancy still reads it', f.stdout.toString() || f.stderr.toString());
}

// One worry asked again and again is one episode: a later ask whose words
// reach only the latest asks still counts every ask of the episode (the
// count never drops, "4 times before", not "2"); another chat starts its own.
{
  const box = sandbox();
  const tr = join(box.dir, 'episode.jsonl');
  const asks = [['14:05', 'Is this migration safe to run in production?'],
    ['14:14', 'Will running 0042 on the prod database lock the users table for long?'],
    ['14:20', "I'm worried about this: could the migration take down production when we apply it?"],
    ['14:26', "Sorry to ask again, but are you sure it's safe to apply this migration on the production db?"]]
    .map(([t, text]) => [`2026-12-02T${t}:00Z`, text]);
  const run = (sid, prompt, now) => {
    const r = spawnSync(keel, ['hook', 'UserPromptSubmit'], { encoding: 'utf8', env: { ...process.env, ...box.env, KEEL_NOW: now, TZ: 'UTC' },
      input: JSON.stringify({ hook_event_name: 'UserPromptSubmit', session_id: sid, prompt, transcript_path: tr }) });
    try { return JSON.parse(r.stdout).systemMessage || ''; } catch { return r.stdout; }
  };
  writeAsks(tr, asks.slice(0, 3));
  const fourth = run('ep', asks[3][1], '2026-12-02T14:26:00Z');
  writeAsks(tr, asks);
  const last = "Just to double check, nothing bad will happen to prod if I run the users migration now, right?";
  const fifth = run('ep', last, '2026-12-02T14:31:00Z');
  const elsewhere = run('other-chat', last, '2026-12-02T14:31:00Z');
  ok(/You asked about this 3 times before in this stretch of work: at 14:05 .*, 14:14 and 14:20\./.test(fourth) &&
     /You asked about this 4 times before in this stretch of work: at 14:05 .*, 14:14, 14:20 and 14:26\./.test(fifth) &&
     /You asked about this 2 times before in this stretch of work: at 14:20 .* and 14:26\./.test(elsewhere),
    'the 5th ask of one worry, whose words reach the 2 latest asks: 4 times before in its chat (the episode), 2 in a new chat', [fourth, fifth, elsewhere]);
}

// A plea for reassurance asked a third time is advised (two earlier asks,
// guardrails.rumination.plea_threshold_count); a plain question needs three
// earlier asks (threshold_count); a profile can ask three of a plea too.
{
  const box = sandbox();
  const pleas = join(box.dir, 'pleas.jsonl'), plain = join(box.dir, 'plain.jsonl'), prof = join(box.dir, 'three.yaml');
  writeAsks(pleas, WORRY.slice(0, 2));
  const question = 'what does the rate limit change do to the login endpoint?';
  writeAsks(plain, [['10:24', question], ['10:31', question]].map(([t, text]) => [`2026-11-26T${t}:00Z`, text]));
  writeFileSync(prof, 'guardrails:\n  rumination:\n    plea_threshold_count: 3\n');
  const said = (transcript_path, prompt, env) => promptSays(box, transcript_path, prompt, '2026-11-26T10:45:00Z', env);
  const third = said(pleas, 'honestly, is the rate limit change safe to merge?');
  const plainThird = said(plain, question);
  const three = said(pleas, 'honestly, is the rate limit change safe to merge?', { KEEL_PROFILE: prof });
  ok(/keel \(rumination/.test(third) && /2 times before/.test(third) && !/rumination/.test(plainThird) && !/rumination/.test(three),
    'a plea asked a third time: advised (2 times before); the same plain question a third time: not; a plea with plea_threshold_count 3: not', { third, plainThird, three });
}

// A person who asks the same worry again: the message names when they asked
// (local times) with the first words of the first ask; when two detectors
// speak, one message and one list of words; the word then applies to both.
{
  const box = sandbox();
  const tr = join(box.dir, 'worry.jsonl');
  writeAsks(tr, WORRY);
  const hook = (prompt, now) => {
    const r = spawnSync(keel, ['hook', 'UserPromptSubmit'], { encoding: 'utf8', env: { ...process.env, ...box.env, KEEL_NOW: now, TZ: 'UTC' },
      input: JSON.stringify({ hook_event_name: 'UserPromptSubmit', session_id: 'worry', prompt, transcript_path: tr }) });
    try { return JSON.parse(r.stdout); } catch { return {}; }
  };
  const o = hook('sorry to ask again, but is merging the rate limit change really safe?', '2026-11-26T10:45:00Z');
  const m = o.systemMessage || '';
  const words = (/start your next prompt with one of: ([^.]*)\./.exec(m) || [])[1] || '';
  ok(/^keel \(rumination, sycophancy\): You asked about this 3 times before in this stretch of work: at 10:24 \("is it safe to merge the reviewed rate\.\.\."\), 10:31 and 10:38\./.test(m) &&
     (m.match(/To change this/g) || []).length === 1 && words.split(', ').length === new Set(words.split(', ')).size && /override-once/.test(words),
    'rumination and sycophancy on one prompt: one message naming when it was asked (and its first words), one list of words, each once', m);
  // a reply advisory after the prompt's, in the same turn: the word answers both
  {
    const b2 = sandbox();
    const t2 = join(b2.dir, 'worry.jsonl');
    writeAsks(t2, WORRY);
    const run = (event, body, now) => {
      const r = spawnSync(keel, ['hook', event], { encoding: 'utf8', env: { ...process.env, ...b2.env, KEEL_NOW: now, TZ: 'UTC' },
        input: JSON.stringify({ hook_event_name: event, session_id: 'turn', transcript_path: t2, ...body }) });
      try { return JSON.parse(r.stdout); } catch { return {}; }
    };
    const asked = run('UserPromptSubmit', { prompt: 'sorry to ask again, but is merging the rate limit change really safe?' }, '2026-11-26T10:45:00Z');
    const replied = run('Stop', { stop_hook_active: false, last_assistant_message: "You're absolutely right, it's totally safe!" }, '2026-11-26T10:45:20Z');
    const word = run('UserPromptSubmit', { prompt: 'override-once' }, '2026-11-26T10:46:00Z').systemMessage || '';
    ok(/keel \(rumination, sycophancy\)/.test(asked.systemMessage || '') && /keel \(sycophancy\)/.test(replied.systemMessage || '') &&
       /keel \(rumination\): override-once applied/.test(word) && (word.match(/keel \(sycophancy\): override-once applied/g) || []).length === 1 &&
       /keel \(sycophancy\): override-once applied: the next sycophancy advisory will not be shown/.test(word),
      'advised on the prompt (rumination, sycophancy) and on the reply (sycophancy): the word said next applies to both that spoke in that turn', [asked.systemMessage, replied.systemMessage, word]);
  }
  {
    const b3 = sandbox();
    const t3 = join(b3.dir, 'again.jsonl');
    const question = 'what does the rate limit change do to the login endpoint?';
    writeAsks(t3, ['10:24', '10:31', '10:38'].map((t) => [`2026-11-26T${t}:00Z`, question]));
    const run = (event, body, now) => {
      const r = spawnSync(keel, ['hook', event], { encoding: 'utf8', env: { ...process.env, ...b3.env, KEEL_NOW: now, TZ: 'UTC' },
        input: JSON.stringify({ hook_event_name: event, session_id: 'turns', transcript_path: t3, ...body }) });
      try { return JSON.parse(r.stdout); } catch { return {}; }
    };
    const fourth = run('UserPromptSubmit', { prompt: question }, '2026-11-26T10:45:00Z');
    const plain = run('UserPromptSubmit', { prompt: 'thanks, now write the changelog entry for it' }, '2026-11-26T10:50:00Z');
    const praised = run('Stop', { stop_hook_active: false, last_assistant_message: "You're absolutely right, great idea!" }, '2026-11-26T10:50:20Z');
    const later = run('UserPromptSubmit', { prompt: 'override-once' }, '2026-11-26T10:51:00Z').systemMessage || '';
    ok(/keel \(rumination\)/.test(fourth.systemMessage || '') && !plain.systemMessage && /keel \(sycophancy\)/.test(praised.systemMessage || '') &&
       /keel \(sycophancy\): override-once applied/.test(later) && !/rumination/.test(later),
      'in a later turn whose prompt drew nothing, the word answers only the reply\'s advisory, not an earlier turn\'s', [fourth.systemMessage, plain.systemMessage, praised.systemMessage, later]);
  }
  const longer = hook("override-once's effect, what is it?", '2026-11-26T10:45:30Z');
  ok(!/applied/.test(longer.systemMessage || ''), 'an override word run on into another (override-once\'s) is no override', longer.systemMessage);
  const u = hook('override-once', '2026-11-26T10:46:00Z');
  ok(/keel \(rumination\): override-once applied/.test(u.systemMessage || '') && /keel \(sycophancy\): override-once applied/.test(u.systemMessage || ''),
    'the word that several detectors offer, said at the start of the next prompt, applies to each that spoke', u.systemMessage);
  ok(/The person used keel's override word; keel \(rumination\): override-once applied/.test(u.hookSpecificOutput?.additionalContext || ''),
    'and the model is told the person used it', u.hookSpecificOutput);
  const named = hook('override-once  rumination', '2026-11-26T10:47:00Z').systemMessage || '';
  ok(/keel \(rumination\): override-once applied/.test(named) && !/sycophancy/.test(named),
    'the word followed by a detector\'s name applies to that detector alone', named);
  ok(/override-once applied: the next rumination advisory will not be shown\.$/.test(u.systemMessage.split('\n')[0]),
    'override-once says once what it does, not again as how long it holds', u.systemMessage);
  const capital = hook('Override-once Rumination', '2026-11-26T10:48:00Z').systemMessage || '';
  ok(/keel \(rumination\): override-once applied/.test(capital) && !/sycophancy/.test(capital),
    'the word and the detector\'s name in capitals (a phone capitalises the first letter) apply as in lower case', capital);
  const snooze = hook('snooze-15m', '2026-11-26T10:49:00Z').systemMessage || '';
  ok(/keel \(hyperfocus\): snooze-15m applied: no time reminders for 15 minutes, until 11:04\.$/.test(snooze),
    'a snooze says until when as a clock shows it (11:04), not as a timestamp', snooze);
  const caps = hook('DISABLE-FOR-SESSION Rumination.', '2026-11-26T10:49:30Z').systemMessage || '';
  ok(/keel \(rumination\): disable-for-session applied: rumination advisories are off for this session, until the session ends\.$/.test(caps) && !/sycophancy/.test(caps),
    'a word in capitals (DISABLE-...) and the detector named before a full stop: applied to that detector, until the session ends', caps);
  const fresh = hook('fresh-context rumination', '2026-11-26T10:50:00Z').systemMessage || '';
  ok(/fresh-context applied: earlier prompts are forgotten; rumination starts from a clean slate\.$/.test(fresh),
    'fresh-context says what it forgot, with no "until" the moment it was said', fresh);
}

// A prompt that holds more than an override word is the person's prompt
// too: the word applies, and the detectors still read what follows.
{
  const box = sandbox();
  const tr = join(box.dir, 'worry.jsonl');
  writeAsks(tr, WORRY);
  const r = spawnSync(keel, ['hook', 'UserPromptSubmit'], { encoding: 'utf8', env: { ...process.env, ...box.env, KEEL_NOW: '2026-11-26T10:45:00Z', TZ: 'UTC' },
    input: JSON.stringify({ hook_event_name: 'UserPromptSubmit', session_id: 'worry', prompt: 'snooze-15m. sorry to ask again, but is merging the rate limit change really safe?', transcript_path: tr }) });
  let m = '';
  try { m = JSON.parse(r.stdout).systemMessage || ''; } catch { /* no output: the checks below fail */ }
  ok(/keel \(hyperfocus\): snooze-15m applied/.test(m) && /keel \(rumination[,)]/.test(m),
    'an override word followed by a question: the word applies and rumination still reads the question', m);
  // override-once before a question is that question's: the person is told so
  const box2 = sandbox();
  const o = spawnSync(keel, ['hook', 'UserPromptSubmit'], { encoding: 'utf8', env: { ...process.env, ...box2.env, KEEL_NOW: '2026-11-26T10:45:00Z', TZ: 'UTC' },
    input: JSON.stringify({ hook_event_name: 'UserPromptSubmit', session_id: 'worry', prompt: 'override-once rumination. sorry to ask again, but is merging the rate limit change really safe?', transcript_path: tr }) });
  let om = '';
  try { om = JSON.parse(o.stdout).systemMessage || ''; } catch { /* no output: the check below fails */ }
  ok(/keel \(rumination\): override-once applied: the next rumination advisory will not be shown \(this prompt's, if it raises one\)\./.test(om) &&
     !/keel \(rumination[,)]: You asked/.test(om),
    'override-once typed before the question: it says the advisory it spares is this prompt\'s, and none is shown', om);
}

// A word several detectors take, said before any advisory in this chat,
// says so; and every prompt the hook sees is the person's activity.
{
  const box = sandbox();
  const r = hook('claude-code', 'UserPromptSubmit', { ...payload('claude-code-UserPromptSubmit.json'), session_id: 'quiet', prompt: 'override-once' }, { box });
  ok(/override-once belongs to several detectors and no advisory was given here yet/.test(r.out?.systemMessage || ''),
    'a word of several detectors before any advisory: the person is told to name the detector', r.out);
  const nostate = spawnSync(keel, ['hook', 'UserPromptSubmit'], { encoding: 'utf8', env: { ...process.env, ...box.env, KEEL_STATE_DIR: '/dev/null/x' },
    input: JSON.stringify({ hook_event_name: 'UserPromptSubmit', session_id: 'quiet', prompt: 'disable-for-session is it safe?' }) });
  let ns = '';
  try { ns = JSON.parse(nostate.stdout).systemMessage || ''; } catch { /* none */ }
  ok(nostate.status === 0 && /disable-for-session was not applied: keel cannot use its state directory/.test(ns) && !/no advisory was given/.test(ns),
    'a word said when keel cannot use its state directory: the person is told that, not to name a detector', ns || nostate.stderr);
  const st = JSON.parse(readFileSync(join(box.stateDir, 'state.json'), 'utf8'));
  ok(st.last_prompt_at === '2026-05-15T14:40:00+00:00', 'the prompt hook records the person\'s activity (last_prompt_at) in the state file', st);
  // an ordinary prompt: its time recorded with its turn, and not a word
  // on stdout or stderr
  const plain = hook('claude-code', 'UserPromptSubmit', { ...payload('claude-code-UserPromptSubmit.json'), session_id: 'quiet', prompt: 'add a test for the parser' },
    { box, env: { KEEL_NOW: '2026-05-15T14:52:00Z' } });
  const st2 = JSON.parse(readFileSync(join(box.stateDir, 'state.json'), 'utf8'));
  ok(plain.status === 0 && plain.stdout === '' && plain.stderr === '' && st2.last_prompt_at === '2026-05-15T14:52:00+00:00' &&
     Object.values(st2.hooks || {}).some((h) => h.at === Date.parse('2026-05-15T14:52:00Z')),
    'an ordinary prompt: nothing on stdout or stderr, and its time and its turn recorded', { plain, st2 });
}

// A zone keel cannot read (a mistyped TZ): the hook reads the time as UTC,
// names hook_zone_unknown once and tells the person how to fix TZ.
{
  const box = sandbox();
  const r = hook('claude-code', 'UserPromptSubmit', { ...payload('claude-code-UserPromptSubmit.json'), session_id: 'tz', prompt: 'add a test for the parser' },
    { box, env: { TZ: 'Europe/Berln' } });
  const st = existsSync(join(box.stateDir, 'state.json')) ? JSON.parse(readFileSync(join(box.stateDir, 'state.json'), 'utf8')) : {};
  ok(r.status === 0 && r.stderr === 'keel: warn hook_zone_unknown reading=utc\n' &&
     /TZ names no time zone installed here .* set TZ to your zone/.test(r.out?.systemMessage || '') &&
     st.last_prompt_at === '2026-05-15T14:40:00+00:00',
    'a mistyped TZ: the prompt hook exits 0, names hook_zone_unknown once, records the prompt at its UTC time and tells the person how to fix TZ', { r, st });
}


// An override word may be said after "keel", "keel:" or "keel,"; and a
// sycophantic reply's message lists the words the person may start with.
{
  const asks = ['is it safe to drop the legacy table tonight?', 'are you sure dropping the legacy table is safe?',
    'honestly, is dropping the legacy table safe?'];
  const said = {};
  for (const prefix of ['keel ', 'keel: ', 'keel, ']) {
    const box = sandbox();
    const tr = join(box.dir, 'drop.jsonl');
    writeAsks(tr, asks.map((text, i) => [`2026-11-26T09:0${i}:00Z`, text]));
    const say = (prompt, minute) => {
      const r = spawnSync(keel, ['hook', 'UserPromptSubmit'], { encoding: 'utf8', env: { ...process.env, ...box.env, KEEL_NOW: `2026-11-26T09:${minute}:00Z`, TZ: 'UTC' },
        input: JSON.stringify({ hook_event_name: 'UserPromptSubmit', session_id: 'drop', prompt, transcript_path: tr }) });
      try { return JSON.parse(r.stdout).systemMessage || ''; } catch { return ''; }
    };
    const fired = say('sorry to ask again, is dropping the legacy table really safe?', '10');
    said[prefix] = /keel \(rumination/.test(fired) && /keel \(rumination\): override-once applied/.test(say(`${prefix}override-once`, '11'));
  }
  ok(Object.values(said).every(Boolean), 'an override word after "keel", "keel:" or "keel," applies as the word alone does', said);
  const box = sandbox();
  const r = hook('claude-code', 'Stop', payload('claude-code-Stop.json', { last_assistant_message: 'Great question! You are absolutely right, this is a brilliant plan.' }), { box });
  const words = (/keel \((?:rules, )?sycophancy\): .* start your next prompt with one of: ([a-z0-9-]+(?:, [a-z0-9-]+)+)\./.exec(r.out?.systemMessage || '') || [])[1] || '';
  ok(/i-want-validation/.test(words) && /override-once/.test(words), 'a sycophantic reply: the message lists the words the person may start the next prompt with', r.out);
  // a shipped rule's note and sycophancy on one reply: one message, one list of words
  const both = r.out?.systemMessage || '';
  ok(both.split('\n').length === 1 && /^keel \(rules, sycophancy\): the reply matched the rule cheerleading-opener/.test(both) &&
     (both.match(/start your next prompt with one of/g) || []).length === 1 && /disable-for-session/.test(words) && /fresh-context/.test(words),
    'a reply a shipped rule notes and sycophancy flags: one message with one list of words, as a prompt\'s advisories are', both);
  ok(/It said "Great question", "You are absolutely right", "brilliant"\./.test(r.out?.systemMessage || ''),
    'a sycophantic reply: the message quotes the words of the reply it matched', r.out?.systemMessage);
  // Each keel hook is a process of its own that keeps none of the
  // conversation: it offers no explain-the-match, and says so when asked.
  ok(!/explain-the-match/.test(words), 'a sycophantic reply: explain-the-match is not offered by the hooks', words);
  const ex = hook('claude-code', 'UserPromptSubmit', { ...payload('claude-code-UserPromptSubmit.json'), prompt: 'explain-the-match' }, { box, args: ['--log-level', 'info'] });
  ok(/keel: explain-the-match: keel's message already says what it matched/.test(ex.out?.systemMessage || '') && !/in this process/.test(ex.out?.systemMessage || '') &&
     /info hook_override_refused code=NO_EXPLANATION/.test(ex.stderr),
    'explain-the-match typed anyway: the hooks say the message above named the match, not that no advisory was given (logged as refused)', ex);
  const four = hook('claude-code', 'Stop', payload('claude-code-Stop.json', { last_assistant_message: 'Great question! You are absolutely right! Brilliant idea! Amazing work!' }), { box });
  ok(/It said "Great question", "You are absolutely right", "Brilliant idea"\./.test(four.out?.systemMessage || ''),
    'a reply with four matches: the message quotes the first three', four.out?.systemMessage);
  const none = hook('claude-code', 'Stop', { ...payload('claude-code-Stop.json'), last_assistant_message: undefined }, { box, args: ['--log-level', 'info'] });
  ok(none.status === 0 && none.stdout === '' && /info hook_reply_missing present=0/.test(none.stderr),
    'a Stop with no reply: exit 0, nothing said, hook_reply_missing at info', none);
}

// The time reminders of the hooks offer no commit-and-close when no work
// session is open (the hooks' session is one of activity): there is none to
// close.
{
  const box = sandbox();
  const tr = join(box.dir, 'long.jsonl');
  const at = (min) => new Date(Date.parse('2026-11-30T09:00:00Z') + min * 60000).toISOString().replace('.000Z', 'Z');
  const steps = [];
  let last = '';
  for (let m = 0; m <= 91; m += 7) {
    const r = spawnSync(keel, ['hook', 'UserPromptSubmit'], { encoding: 'utf8', env: { ...process.env, ...box.env, KEEL_NOW: at(m), TZ: 'UTC' },
      input: JSON.stringify({ hook_event_name: 'UserPromptSubmit', session_id: 'long', prompt: `step ${m}: update handler ${m}`, transcript_path: tr }) });
    steps.push([at(m), `step ${m}: update handler ${m}`]);
    writeAsks(tr, steps);
    try { last = JSON.parse(r.stdout).systemMessage || last; } catch { /* nothing said */ }
  }
  ok(/keel \(hyperfocus\): This stretch of work has run 91 minutes, past the nudge mark/.test(last) && /snooze-15m/.test(last) && !/commit-and-close/.test(last),
    'the 90-minute reminder of the hooks offers no commit-and-close without a work session to close', last);
}

// override-once for the time reminders, said in one chat: the next reminder
// in that chat is not shown, one in another chat is, and the one after it
// in the first chat is again.
{
  const box = sandbox();
  const ask = chats(box, (min) => new Date(Date.parse('2026-11-30T09:00:00Z') + min * 60000).toISOString().replace('.000Z', 'Z'));
  for (let m = 0; m <= 49; m += 7) ask('a', `step ${m}: update handler ${m}`, m);
  const given = ask('a', 'override-once hyperfocus', 50);
  ask('b', 'what does the parser do?', 55);
  const gentle = ask('b', 'and the lexer?', 61);
  const quiet = [];
  for (let m = 63; m <= 91; m += 7) quiet.push(ask('a', `step ${m}: update handler ${m}`, m));
  let hard = '';
  for (const m of [98, 105, 112, 121]) hard = ask('a', `step ${m}: update handler ${m}`, m) || hard;
  ok(/override-once applied/.test(given) && /keel \(hyperfocus\).*past the gentle mark/.test(gentle) &&
     quiet.every((q) => !/keel \(hyperfocus/.test(q)) && /keel \(hyperfocus\).*past the hard mark/.test(hard),
    'override-once for the time reminders: the next one in its chat is not shown, one in another chat is, and the one after it is', { given, gentle, quiet, hard });
}

// SessionStart tells the model how long ago the person last wrote and how
// long the open session has run, in words, and the session's stated intent.
{
  const box = sandbox();
  const env = { ...process.env, ...box.env, TZ: 'UTC' };
  spawnSync(keel, ['check', 'mark_session_start', '--json', JSON.stringify({ intent: 'draft the Q3 plan' })], { env: { ...env, KEEL_NOW: '2026-05-15T09:00:00Z' } });
  spawnSync(keel, ['hook', 'UserPromptSubmit'], { env: { ...env, KEEL_NOW: '2026-05-15T09:00:00Z' }, input: JSON.stringify({ hook_event_name: 'UserPromptSubmit', session_id: 's1', prompt: 'hello there' }) });
  const start = (now) => {
    const r = spawnSync(keel, ['hook', 'SessionStart'], { encoding: 'utf8', env: { ...env, KEEL_NOW: now }, input: JSON.stringify({ hook_event_name: 'SessionStart', session_id: 's2', source: 'startup' }) });
    try { return JSON.parse(r.stdout).hookSpecificOutput.additionalContext; } catch { return ''; }
  };
  const seen = {
    '1 h 5 min': start('2026-05-15T10:05:40Z'), '40 s': start('2026-05-15T09:00:40Z'),
    '1 day': start('2026-05-16T09:00:00Z'), '2 days 3 h': start('2026-05-17T12:05:00Z'),
  };
  ok(Object.entries(seen).every(([w, c]) => c.includes(`The person's last prompt was ${w} ago. A work session is open (${w} so far); its stated intent: draft the Q3 plan.`)),
    'SessionStart: the time since the last prompt and the session\'s length in words (seconds, minutes, hours, days), and its intent', seen);
  // an intent the model wrote with escape codes, a bell and a bidi override reaches the person as plain text
  spawnSync(keel, ['check', 'mark_session_end'], { env: { ...env, KEEL_NOW: '2026-05-18T08:59:00Z' } });
  spawnSync(keel, ['check', 'mark_session_start', '--json', JSON.stringify({ intent: 'ship \u001b]0;pwned\u0007\u001b[31mit \u202eevil\nnow' })], { env: { ...env, KEEL_NOW: '2026-05-18T09:00:00Z' } });
  const said = [];
  for (const t of ['09:00', '09:20', '09:40', '10:01']) {
    const r = spawnSync(keel, ['hook', 'UserPromptSubmit'], { encoding: 'utf8', env: { ...env, KEEL_NOW: `2026-05-18T${t}:00Z` }, input: JSON.stringify({ hook_event_name: 'UserPromptSubmit', session_id: 's3', prompt: 'next step' }) });
    said.push(r.stdout);
  }
  const ctx = start('2026-05-18T10:02:00Z');
  let msg = '';
  try { msg = JSON.parse(said[3]).systemMessage || ''; } catch { /* none */ }
  const raw = /[\u0000-\u001f\u007f\u202e]/;
  ok(/You set out to: ship /.test(msg) && !raw.test(msg) && /its stated intent: ship /.test(ctx) && !raw.test(ctx),
    'a stated intent holding escape codes, a bell, a line break and a bidi override reaches the person and the model as plain text', { msg, ctx });
}

// Closing the session is the step the nudge asks for: the stretch of work
// counts again from then, and the rung just answered is not given again.
{
  const box = sandbox();
  const env = { ...process.env, ...box.env, TZ: 'UTC' };
  const at = (t) => ({ ...env, KEEL_NOW: `2026-05-19T${t}:00Z` });
  spawnSync(keel, ['check', 'mark_session_start', '--json', '{"intent":"ship it"}'], { env: at('09:00') });
  const say = (t, prompt) => {
    const r = spawnSync(keel, ['hook', 'UserPromptSubmit'], { encoding: 'utf8', env: at(t), input: JSON.stringify({ hook_event_name: 'UserPromptSubmit', session_id: 'c', prompt }) });
    try { return JSON.parse(r.stdout).systemMessage || ''; } catch { return ''; }
  };
  const seen = {};
  for (const t of ['09:00', '09:20', '09:40', '10:00', '10:20', '10:30']) seen[t] = say(t, 'next step');
  seen['10:31'] = say('10:31', 'commit-and-close');
  for (const t of ['10:35', '10:55', '11:15', '11:32']) seen[t] = say(t, 'next step');
  ok(/nudge mark of 90/.test(seen['10:30']) && /session is closed/.test(seen['10:31']) && seen['10:35'] === '' && seen['11:15'] === ''
    && /This stretch of work has run 61 minutes, past the gentle mark of 60/.test(seen['11:32']),
    'commit-and-close after the nudge: no reminder at once; the stretch after it is counted from the close', seen);
}

// Overrides hold in the conversation they were given in: disable-for-session
// said in one chat keeps that chat quiet, and a chat begun after it starts
// clean; so does an override-once left unused.
{
  const box = sandbox();
  const asks = ['is it safe to run the data migration tonight?', 'are you sure the data migration tonight is safe?',
    'honestly, will the data migration tonight be safe?'];
  const chat = (sid, hour) => {
    const tr = join(box.dir, `${sid}.jsonl`);
    writeAsks(tr, asks.map((text, i) => [`2026-11-26T${hour}:0${i}:00Z`, text]));
    return (prompt, minute) => {
      const r = spawnSync(keel, ['hook', 'UserPromptSubmit'], { encoding: 'utf8', env: { ...process.env, ...box.env, KEEL_NOW: `2026-11-26T${hour}:${minute}:00Z`, TZ: 'UTC' },
        input: JSON.stringify({ hook_event_name: 'UserPromptSubmit', session_id: sid, prompt, transcript_path: tr }) });
      try { return JSON.parse(r.stdout).systemMessage || ''; } catch { return ''; }
    };
  };
  const one = chat('chat-one', '10');
  const first = one('sorry to ask again, is the data migration tonight really safe?', '05');
  const off = one('disable-for-session', '06');
  const quiet = one('and is the data migration tonight definitely safe?', '07');
  const two = chat('chat-two', '10');                  // minutes later: the same stretch of work
  two('what time is it in Tokyo?', '10');              // the new chat begins
  const fresh = two('sorry to ask again, is the data migration tonight really safe?', '12');
  ok(/keel \(rumination/.test(first) && /disable-for-session applied/.test(off) && !/keel \(rumination/.test(quiet) && /keel \(rumination/.test(fresh),
    'disable-for-session holds in the chat it was said in; a chat begun after it starts clean', { first, off, quiet, fresh });
}

// Two chats open at the same time, each having asked its own worry three
// times (the next ask of either is advised).
function twoWorriedChats() {
  const worry = {
    a: 'could the retry logic we added end up charging a customer twice?',
    b: 'does the new cache invalidation drop entries that are still in use?',
  };
  const ask = chats(sandbox(), (at) => `2026-11-30T10:${at}Z`);
  for (const m of ['00', '06', '12']) { ask('a', worry.a, `${m}:00`); ask('b', worry.b, `${m}:30`); }
  return { ask, worry };
}

// Two chats open at the same time, each asking its own worry again: an
// override said in one holds in that one only, never in the other, begun
// before it (override-once, disable-for-session, fresh-context,
// lower-sensitivity); the chat it was said in keeps it.
for (const word of ['override-once', 'disable-for-session', 'fresh-context', 'lower-sensitivity']) {
  const { ask, worry } = twoWorriedChats();
  const given = ask('a', `${word} rumination`, '13:00');
  const other = ask('b', worry.b, '15:00');   // the 4th ask in the other chat, first
  const own = ask('a', worry.a, '18:00');     // the 4th ask, in the chat the word was said in
  ok(new RegExp(`${word} applied`).test(given) && !/keel \(rumination/.test(own) && /keel \(rumination/.test(other),
    `${word} said in one chat holds there, not in another chat open at the same time`, { given, own, other });
  if (word === 'override-once') {
    const after = ask('a', worry.a, '24:00');  // the one override is used: the next ask is advised
    const more = ask('b', 'override-once rumination', '25:00');   // then the other chat says it too:
    const mine = ask('b', worry.b, '26:00');   // its own holds there
    ok(/keel \(rumination/.test(after) && /override-once applied/.test(more) && !/keel \(rumination/.test(mine),
      'override-once is used once; said then in the other chat, it holds in that one', { after, more, mine });
  }
}

// Both chats say the same word: each keeps its own (the one said second
// does not take the first one's place), and a chat keeps its own however
// many other host sessions come and go meanwhile.
for (const word of ['override-once', 'disable-for-session', 'fresh-context', 'lower-sensitivity']) {
  const { ask, worry } = twoWorriedChats();
  const saidA = ask('a', `${word} rumination`, '13:00');
  const saidB = ask('b', `${word} rumination`, '13:30');
  const own = ask('a', worry.a, '18:00');
  const other = ask('b', worry.b, '18:30');
  ok(new RegExp(`${word} applied`).test(saidA) && new RegExp(`${word} applied`).test(saidB) && !/keel \(rumination/.test(own) && !/keel \(rumination/.test(other),
    `${word} said in two chats: each holds in its own, the second does not take the first one's place`, { saidA, saidB, own, other });
  if (word === 'disable-for-session') {
    for (let i = 0; i < 40; i++) ask(`c${i}`, `what does build step ${i} print?`, `20:${String(i).padStart(2, '0')}`);
    const later = ask('a', worry.a, '24:00');
    ok(!/keel \(rumination/.test(later), 'and holds after 40 other host sessions came and went', later);
  }
}

// The conversations that keep overrides are the 64 used most recently: a
// 65th takes the place of the one used least recently (not of one used
// again since), and the others stay.
{
  const box = sandbox();
  const ask = chats(box, (at) => `2026-11-30T${at}Z`);
  const conv = () => {
    try { return JSON.parse(readFileSync(join(box.stateDir, 'state.json'), 'utf8')).guard?.conversations || {}; } catch { return {}; }
  };
  const keyOf = {};
  const say = (c, t) => {
    const before = new Set(Object.keys(conv()));
    ask(c, 'override-once rumination', t);
    const added = Object.keys(conv()).filter((k) => !before.has(k));
    if (added.length === 1) keyOf[c] = added[0];
  };
  for (let i = 0; i < 64; i++) say(`e${i}`, `10:${String(Math.floor(i / 60)).padStart(2, '0')}:${String(i % 60).padStart(2, '0')}`);
  ask('e0', 'override-once rumination', '10:05:00');   // e0 used again: e1 is now the least recent
  say('e64', '10:06:00');
  const kept = conv();
  ok(Object.keys(keyOf).length === 65 && Object.keys(kept).length === 64 && keyOf.e0 in kept && !(keyOf.e1 in kept) && keyOf.e64 in kept && keyOf.e2 in kept,
    '64 conversations kept: a 65th takes the place of the least recently used one, not of one used again since', { n: Object.keys(kept).length, e0: keyOf.e0 in kept, e1: keyOf.e1 in kept });
}

// A conversations object edited by hand into another shape is made again:
// the override said next holds in its chat.
for (const shape of ['junk', 'entry']) {
  const box = sandbox(shape === 'junk' ? { state: { version: 1, guard: { conversations: 'junk' } } } : {});
  const worry = 'could the retry logic we added end up charging a customer twice?';
  const ask = chats(box, (at) => `2026-11-30T10:${at}Z`);
  for (const m of ['00', '06', '12']) ask('a', worry, `${m}:00`);
  if (shape === 'entry') { // the chat's own entry replaced by a number
    ask('a', 'override-once rumination', '12:30');
    const f = join(box.stateDir, 'state.json');
    const st = JSON.parse(readFileSync(f, 'utf8'));
    for (const k of Object.keys(st.guard.conversations)) st.guard.conversations[k] = 5;
    writeFileSync(f, JSON.stringify(st));
  }
  const given = ask('a', 'override-once rumination', '13:00');
  const own = ask('a', worry, '18:00');
  ok(/override-once applied/.test(given) && !/keel \(rumination/.test(own),
    `conversations ${shape === 'junk' ? 'that is no object' : 'whose entry for this chat is no object'}: made again, and the override holds`, { given, own });
}

// An override-once an older keel left with no conversation's mark, as a
// plain string where an object is kept now, is replaced, not read as said in
// every chat.
{
  const box = sandbox({ state: { version: 1, guard: { override_once: { rumination: 0 }, override_once_in: 'left by an older keel' } } });
  const worry = 'could the retry logic we added end up charging a customer twice?';
  const ask = chats(box, (at) => `2026-11-30T10:${at}Z`);
  for (const m of ['00', '06', '12']) { ask('a', worry, `${m}:00`); ask('b', worry, `${m}:30`); }
  const given = ask('a', 'override-once rumination', '13:00');
  const other = ask('b', worry, '15:00');
  const own = ask('a', worry, '18:00');
  ok(/override-once applied/.test(given) && /keel \(rumination/.test(other) && !/keel \(rumination/.test(own),
    'an old override mark of another shape is replaced: the override said in one chat holds there and does not quiet the other', { given, other, own });
}

// An override given outside any chat (keel check apply_override, keel wrap)
// before a chat began does not hold in it: a new chat starts clean.
{
  const box = sandbox();
  const worry = 'could the retry logic we added end up charging a customer twice?';
  const tr = join(box.dir, 'late.jsonl');
  spawnSync(keel, ['check', 'apply_override', '--json', JSON.stringify({ token: 'override-once', detector: 'rumination' })],
    { encoding: 'utf8', env: { ...process.env, ...box.env, KEEL_NOW: '2026-11-30T09:00:00Z' } });
  const said = [];
  let last = '';
  for (const m of ['00', '06', '12', '18']) {
    const r = spawnSync(keel, ['hook', 'UserPromptSubmit'], { encoding: 'utf8', env: { ...process.env, ...box.env, KEEL_NOW: `2026-11-30T10:${m}:00Z`, TZ: 'UTC' },
      input: JSON.stringify({ hook_event_name: 'UserPromptSubmit', session_id: 'late', prompt: worry, transcript_path: tr }) });
    said.push([`2026-11-30T10:${m}:00Z`, worry]);
    writeAsks(tr, said);
    try { last = JSON.parse(r.stdout).systemMessage || ''; } catch { last = ''; }
  }
  ok(/keel \(rumination/.test(last), 'an override given outside any chat before it began does not hold in it', last);
  const r = spawnSync(keel, ['hook', 'UserPromptSubmit'], { encoding: 'utf8', env: { ...process.env, ...box.env, KEEL_NOW: '2026-11-30T10:19:00Z', TZ: 'UTC' },
    input: JSON.stringify({ hook_event_name: 'UserPromptSubmit', session_id: 'late', prompt: 'override-once rumination', transcript_path: tr }) });
  let once = '';
  try { once = JSON.parse(r.stdout).systemMessage || ''; } catch { /* nothing said */ }
  ok(/the next rumination advisory will not be shown\.$/.test(once), 'nor is it counted with one said in the chat: the next advisory, not the next 2', once);
}

// The same for a reply: i-want-validation said in one chat quiets that
// chat's next reply, not a reply in a chat begun after it.
{
  const box = sandbox();
  const flattering = 'Great question! You are absolutely right, this is a brilliant plan.';
  const run = (event, sid, minute, extra) => {
    const r = spawnSync(keel, ['hook', event], { encoding: 'utf8', env: { ...process.env, ...box.env, KEEL_NOW: `2026-11-26T11:${minute}:00Z`, TZ: 'UTC' },
      input: JSON.stringify({ hook_event_name: event, session_id: sid, ...extra }) });
    try { return JSON.parse(r.stdout).systemMessage || ''; } catch { return ''; }
  };
  const prompt = (sid, text, minute) => run('UserPromptSubmit', sid, minute, { prompt: text });
  const reply = (sid, minute) => run('Stop', sid, minute, { stop_hook_active: false, last_assistant_message: flattering });
  prompt('chat-a', 'should I rewrite the parser?', '00');
  prompt('chat-c', 'should I rename the lexer?', '00');  // a chat open at the same time
  const before = reply('chat-a', '01');
  const want = prompt('chat-a', 'i-want-validation', '02');
  prompt('chat-b', 'what does the parser do?', '03');   // a new chat begins
  const other = reply('chat-b', '04');
  const beside = reply('chat-c', '04');
  const own = reply('chat-a', '05');
  const syc = /keel \((?:rules, )?sycophancy\)/;
  ok(syc.test(before) && /i-want-validation applied/.test(want) && syc.test(other) && syc.test(beside) && !syc.test(own),
    'i-want-validation quiets the next reply of the chat it was said in, not a reply in a chat begun after it nor in one open beside it',
    { before, want, other, beside, own });
  const once = prompt('chat-b', 'override-once', '06');   // several detectors take it: the reply's is meant
  ok(/keel \(sycophancy\): override-once applied/.test(once), 'override-once after a flattering reply applies to sycophancy, the detector that spoke', once);
}

// A chat whose last event was a stop is recent: when a 33rd host session
// takes the place of the least recent, it is not the one forgotten (its
// disable-for-session still holds). Both ways a blocked reply ends: revised
// (it passes) and bypassed (after the 4th block).
for (const end of ['revised', 'bypassed']) {
  const box = sandbox();
  const asks = ['is it safe to run the data migration tonight?', 'are you sure the data migration tonight is safe?',
    'honestly, will the data migration tonight be safe?'];
  const tr = join(box.dir, 'kept.jsonl');
  writeAsks(tr, asks.map((text, i) => [`2026-11-26T10:0${i}:00Z`, text]));
  const at = (second) => new Date(Date.parse('2026-11-26T10:00:00Z') + second * 1000).toISOString().replace('.000Z', 'Z');
  const run = (event, input, minute, args = []) => hook('claude-code', event, { hook_event_name: event, ...input }, { box, env: { KEEL_NOW: at(minute) }, args });
  const ask = (prompt, minute, sid = 'kept') => run('UserPromptSubmit', { session_id: sid, prompt, transcript_path: tr }, minute).out?.systemMessage || '';
  const stop = (reply, active, minute) => run('Stop', { session_id: 'kept', last_assistant_message: reply, stop_hook_active: active }, minute, ['--rules', join(dir, 'rules')]).out;
  const first = ask('sorry to ask again, is the data migration tonight really safe?', 300);
  const off = ask('disable-for-session', 360);
  for (let i = 0; i < 31; i++) ask(`step ${i} of the plan`, 400 + i, `other-${i}`);
  const blocked = stop('Done. TODO: tests.', false, 480);
  const last = end === 'revised' ? [stop('Done, with tests.', true, 490)]
    : [2, 3, 4, 5].map((k) => stop('Done. TODO: tests.', true, 480 + 10 * k));
  ask('what time is it?', 540, 'newcomer');              // the 33rd session
  const later = ask('and is the data migration tonight definitely safe?', 600);
  ok(/keel \(rumination/.test(first) && /disable-for-session applied/.test(off) && blocked?.decision === 'block' &&
     last.at(-1)?.decision === undefined && (end === 'revised' || /bypassed/.test(last.at(-1)?.systemMessage || '')) &&
     !/keel \(/.test(later),
    `a chat whose blocked reply was ${end} a moment ago is not the session forgotten for a 33rd: its disable-for-session holds`,
    { first, off, blocked, last: last.at(-1), later });
}

// The state file remembers at most 32 host sessions (HOOK_SESSIONS_MAX): a
// new one past that takes the place of the least recent, and no sooner.
{
  const box = sandbox();
  const base = payload('claude-code-UserPromptSubmit.json');
  const counts = [];
  for (let i = 0; i < 34; i++) {
    const at = new Date(Date.parse(NOW) + i * 60000).toISOString().replace('.000Z', 'Z');
    hook('claude-code', 'UserPromptSubmit', { ...base, session_id: `session-${i}`, prompt: `step ${i} of the plan` }, { box, env: { KEEL_NOW: at } });
    counts.push(Object.keys(JSON.parse(readFileSync(join(box.stateDir, 'state.json'), 'utf8')).hooks || {}).length);
  }
  ok(counts[30] === 31 && counts[31] === 32 && counts[33] === 32, `the state file keeps up to 32 host sessions, then the most recent 32 (${counts.slice(29).join(', ')})`);
}
// A broken profile: the hooks run on the defaults and say so on stderr (an
// event name, never the file's text); --host with no value says what it wants.
{
  const box = sandbox();
  const bad = join(box.dir, 'broken.yaml');
  writeFileSync(bad, 'guardrails: [unclosed\n');
  const r = hook('claude-code', 'UserPromptSubmit', payload('claude-code-UserPromptSubmit.json'), { box, env: { KEEL_PROFILE: bad } });
  ok(r.status === 0 && /warn profile_unreadable/.test(r.stderr) && !/unclosed/.test(r.stderr),
    'a broken profile: the prompt hook exits 0 and names profile_unreadable on stderr, without the file\'s text', r);
  const h = spawnSync(keel, ['hook', 'UserPromptSubmit', '--host'], { encoding: 'utf8', input: '{}', env: { ...process.env, ...box.env } });
  ok(h.status === 0 && /^keel: warn hook_usage --host needs a value/m.test(h.stderr), '--host with no value: exit 0 (a hook never breaks its host), and stderr says it needs one, at warn as every hook line has its level', h.stderr);
  // a \u0000 would cut a string short (two session ids read as one, a
  // reply's rest unread): read as U+FFFD, so the reply is still checked,
  // an override word still applies, and "abc\u0000other" is not "abc"
  const nb = sandbox();
  const nulStop = spawnSync(keel, ['hook', 'Stop', '--rules', join(dir, 'rules'), '--log-level', 'info'], { encoding: 'utf8', env: { ...process.env, ...nb.env },
    input: '{"session_id":"n1","hook_event_name":"Stop","stop_hook_active":false,"last_assistant_message":"Done.\\u0000 TODO: wire the button."}' });
  ok(nulStop.status === 0 && /"decision":"block"/.test(nulStop.stdout) && /no-todo-left/.test(nulStop.stdout) && /hook_nul_read_as_fffd count=1/.test(nulStop.stderr),
    'a reply holding \\u0000: read whole (the NUL as U+FFFD), and the person\'s reject rule past it still blocks', nulStop);
  const nulWord = spawnSync(keel, ['hook', 'UserPromptSubmit'], { encoding: 'utf8', env: { ...process.env, ...nb.env },
    input: '{"session_id":"abc\\u0000other","hook_event_name":"UserPromptSubmit","prompt":"disable-for-session rumination \\u0000"}' });
  const other = spawnSync(keel, ['hook', 'UserPromptSubmit'], { encoding: 'utf8', env: { ...process.env, ...nb.env },
    input: '{"session_id":"abc","hook_event_name":"UserPromptSubmit","prompt":"override-once rumination"}' });
  ok(/disable-for-session applied/.test(nulWord.stdout) && !/already|is off/.test(other.stdout) && /override-once applied/.test(other.stdout),
    'an override word in a prompt holding \\u0000 applies, to its own chat: "abc\\u0000other" is not "abc"', [nulWord.stdout, other.stdout]);
  const typed = spawnSync(keel, ['hook', 'UserPromptSubmit'], { encoding: 'utf8', input: '{"prompt":42,"transcript_path":7}', env: { ...process.env, ...box.env } });
  ok(typed.status === 0 && typed.stdout === '' && /hook_field_invalid field=prompt expected=string/.test(typed.stderr),
    'a prompt that is a number: exit 0, and stderr names the field rather than reading it as no prompt', typed);
  const flag = spawnSync(keel, ['hook', 'Stop'], { encoding: 'utf8', input: '{"session_id":"f","stop_hook_active":"yes","last_assistant_message":"Done."}', env: { ...process.env, ...box.env } });
  ok(flag.status === 0 && /hook_field_invalid field=stop_hook_active expected=boolean/.test(flag.stderr),
    'stop_hook_active that is no boolean: exit 0, and stderr names it', flag);
  // a TZ that names no zone: the hooks read the time as UTC and say so; the person's reject rule still blocks
  const tz = hook('claude-code', 'Stop', payload('claude-code-Stop.json', { last_assistant_message: 'Done. TODO: wire the export button.' }),
    { box, env: { TZ: 'Europe/Berln' }, args: ['--rules', join(dir, 'rules')] });
  ok(tz.status === 0 && tz.out?.decision === 'block' && /TZ names no time zone installed here/.test(tz.out?.systemMessage || '') &&
     /warn hook_zone_unknown/.test(tz.stderr),
    'TZ misspelt: the reject rule still blocks, and the person is told the time is read as UTC and how to fix TZ', tz);
  // so do the options every command takes, and --help: after the EVENT, stdout is the host's
  for (const args of [['--log-level=nope'], ['--rules'], ['--profile'], ['--help']]) {
    const u = spawnSync(keel, ['hook', 'UserPromptSubmit', ...args], { encoding: 'utf8', input: '{"prompt":"hi"}', env: { ...process.env, ...box.env } });
    ok(u.status === 0 && u.stdout === '' && (args[0] === '--help' ? /^usage: keel hook EVENT/.test(u.stderr) : /^keel: warn hook_usage /m.test(u.stderr)),
      `keel hook UserPromptSubmit ${args[0]}: exit 0, nothing on stdout for the host to read, and stderr says what is wrong`, u);
  }
  // a state directory others may write (mode 777), which keel refuses: each
  // event named once, not at every look at the state
  mkdirSync(box.stateDir, { recursive: true });
  chmodSync(box.stateDir, 0o777);
  const w = hook('claude-code', 'UserPromptSubmit', payload('claude-code-UserPromptSubmit.json'), { box });
  const lines = w.stderr.trim().split('\n').filter(Boolean);
  ok(w.status === 0 && lines.length >= 1 && new Set(lines).size === lines.length && /STATE_UNWRITABLE/.test(w.stderr) &&
     lines.filter((l) => /overlay_state_unreadable/.test(l)).length === 1 &&
     lines.filter((l) => /warn hook_activity_not_recorded code=STATE_UNWRITABLE/.test(l)).length === 1,
    'a state directory keel refuses: exit 0, and each event on stderr once (the prompt\'s activity not recorded among them)', lines);
  const sw = hook('claude-code', 'Stop', payload('claude-code-Stop.json'), { box });
  ok(sw.status === 0 && /hook_state_unavailable code=STATE_UNWRITABLE/.test(sw.stderr) && !/hook_activity_not_recorded/.test(sw.stderr),
    'the same for a reply: the state is named unavailable, and no prompt\'s activity is said to be lost', sw.stderr);
}

// A state directory keel can read but not write (another user's, mode 500):
// the prompt's activity is not recorded, so a session-scoped override has no
// session to hold in, and the person is told it was not applied (keel hook's
// process ends at once: "until keel exits" would be no time at all). Run as
// an unprivileged user, since root writes anywhere.
{
  const box = sandbox();
  const setpriv = spawnSync('setpriv', ['--version']).status === 0;
  if (setpriv && process.getuid() === 0) spawnSync('chown', ['-R', '65534:65534', box.dir]);
  const reach = setpriv && process.getuid() === 0 &&
    spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', 'test', '-w', box.dir]).status === 0;
  if (!reach) {
    skip('an override with a state directory keel can only read is said not applied',
      'needs root, setpriv(1), and a temporary directory other users can reach, to run keel as another user');
  } else {
    mkdirSync(box.stateDir, { recursive: true });
    spawnSync('chown', ['-R', '65534:65534', box.dir]);
    chmodSync(box.dir, 0o755);
    chmodSync(box.stateDir, 0o700);
    spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', keel, 'check', 'get_time_context'], { env: { ...process.env, ...box.env } });
    chmodSync(box.stateDir, 0o500); // its files are there, and readable
    const r = spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', keel, 'hook', 'UserPromptSubmit'], {
      encoding: 'utf8', env: { ...process.env, ...box.env },
      input: JSON.stringify({ hook_event_name: 'UserPromptSubmit', session_id: 'ro', prompt: 'disable-for-session rumination is it safe?' }) });
    let said = '';
    try { said = JSON.parse(r.stdout).systemMessage || ''; } catch { /* nothing said */ }
    ok(r.status === 0 && /disable-for-session was not applied: there is no session to scope it to/.test(said) && !/disable-for-session applied/.test(said),
      'an override with a state directory keel can only read: exit 0, and said not applied, not "until keel exits"', { said, stderr: r.stderr });
    chmodSync(box.stateDir, 0o700);
  }
}

// override-once said twice hides the next two advisories, and says two.
{
  const box = sandbox();
  const say = (prompt, minute) => hook('claude-code', 'UserPromptSubmit', { ...payload('claude-code-UserPromptSubmit.json'), session_id: 'twice', prompt },
    { box, env: { KEEL_NOW: `2026-11-26T12:${minute}:00Z` } }).out?.systemMessage || '';
  const one = say('override-once rumination', '00'), two = say('override-once rumination', '01');
  ok(/the next rumination advisory will not be shown\.$/.test(one) && /the next 2 rumination advisories will not be shown\.$/.test(two),
    'override-once said twice: the second says the next 2 advisories', { one, two });
}

// --- the two timed checks started first ------------------------------------------
{
  const r = await halfPayload;
  ok(r.status === 0 && r.stdout === '' && r.ms >= 1900 && r.ms < 5000,
    `half a payload with stdin left open: exit 0, no output, after 2 s (${r.ms} ms)`, r);
  const l = await lockedState;
  ok(l.status === 0 && l.ms < 30000 && (l.stdout === '' || valid('claude-code', 'prompt', l.out)),
    `a state file held by another process: exit 0 within the host's 30 s (${l.ms} ms)`, l);
  ok(l.ms >= 4000 && l.next.status === 0 && l.next.ms < 2500 && l.after.status === 0 && l.cleared,
    `the first hook waits the lock out (${l.ms} ms), the next process does not wait again (${l.next.ms} ms), and once the holder is gone the mark is cleared`,
    { first: l.ms, next: l.next.ms, after: l.after.ms, cleared: l.cleared });
  ok(/disable-for-session applied/.test(l.off?.hookSpecificOutput?.additionalContext || '') &&
     !/rumination/.test(l.out?.systemMessage || '') && /overlay_state_read_only code=STATE_BUSY/.test(l.stderr),
    'disable-for-session given earlier still holds while another process holds the state file (read as it stands)',
    { off: l.off, out: l.out, stderr: l.stderr });
}

done();
