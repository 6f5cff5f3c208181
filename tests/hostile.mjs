// hostile.mjs: keel against hostile peers, careless configs and crashed
// processes. Each section is one fault once found by probing (issue 14's
// numbering), kept here so it stays fixed: keel answers, on time, with a
// clear error, and loses nothing.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ok, done } from './lib/tap.mjs';
import { root, sandbox, Proc, Server } from './lib/keel.mjs';

const UP = join(root, 'tests', 'fixtures', 'upstream.mjs');
const INIT = { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } };
// Long enough that a stall shows (the faults took minutes), short enough for CI.
const PATIENCE = 30000;
const box = sandbox();

async function wrapped(args = []) {
  const k = new Proc(['--log-level', 'info', ...args, 'wrap', '--', process.execPath, UP, 'normal']);
  await k.ask(INIT);
  return k;
}
const call = (id, name, args) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
const rulesAdvisory = (m) => ((m.result._meta || {})['keel/advisories'] || []).find((a) => a.detector === 'rules');

// 1. Rules cannot stall the relay: the shipped patterns are linear, and a
// rule's total work on one text is bounded; past it the rule says it was not
// checked, never "no match".
{
  const slow = join(box.dir, 'slow-rules');
  mkdirSync(slow);
  writeFileSync(join(slow, 'slow.yml'), 'rules:\n'
    + "  - name: backtracker\n    applies_to: tool_result\n    patterns: ['(?:x(a|aa)+y)?z|.']\n    examples: {fires: ['z']}\n"
    + "  - name: backtracker-too\n    applies_to: message\n    patterns: ['(?:x(a|aa)+y)?z|.']\n    examples: {fires: ['z']}\n");
  const k = await wrapped();
  k.send(call(1, 'echo', { message: '-----BEGIN PRIVATE KEY-----'.repeat(33000) }));   // 891 KB, no END line
  k.send({ jsonrpc: '2.0', id: 2, method: 'ping' });
  let a = null, b = null;
  try { a = JSON.parse(await k.next(PATIENCE)); b = JSON.parse(await k.next(PATIENCE)); } catch { /* left null */ }
  ok(a && a.id === 1 && a.result && b && b.id === 2,
    '1: 891 KB of private-key headers with no END line: the result and the ping behind it are answered (took 180 s)');
  ok(a && !rulesAdvisory(a), '1: and the shipped rules judged it in full: nothing skipped, nothing matched', a && a.result._meta);
  await k.close();

  const u = await wrapped(['--rules', slow]);
  u.send(call(3, 'echo', { message: ('x' + 'a'.repeat(24)).repeat(1200) }));           // 30 KB
  u.send({ jsonrpc: '2.0', id: 4, method: 'ping' });
  a = b = null;
  try { a = JSON.parse(await u.next(PATIENCE)); b = JSON.parse(await u.next(PATIENCE)); } catch { /* left null */ }
  const adv = a && rulesAdvisory(a);
  ok(b && b.id === 4 && adv && adv.skipped && adv.skipped.some((s) => s.rule === 'backtracker' && s.block === 0)
    && /backtracker was not checked on this result/.test(adv.reason),
    '1: a user rule that backtracks without end on a 30 KB result is skipped and the advisory says so (took 4.4 s)', adv);
  await u.close();

  const s = new Server(['--log-level', 'error', '--rules', slow]);
  const m = await s.ask(call(5, 'submit_message', { message: ('x' + 'a'.repeat(24)).repeat(600) }));
  const notes = (m.result.structuredContent || {}).notes || [];
  ok(notes.some((n) => /rule backtracker-too was not checked/.test(n)), '1: submit_message: a rule past its budget is named in notes', m.result);
  const f = await s.ask(call(6, 'get_rules', { filter: '^(\\w+\\s?)*$' }));
  ok(f.result.isError && f.result.structuredContent.error.code === 'INPUT_INVALID' && f.result.structuredContent.error.field === 'filter',
    '1: get_rules with a filter that backtracks without end: INPUT_INVALID on filter (took over 1 s)', f.result);
  await s.close();
}

done();
