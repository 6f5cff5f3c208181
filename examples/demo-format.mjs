// demo-format.mjs: pairs each request of the demo session with keel's answer
// and prints what a person would want to see.
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

const requests = new Map();
for (const line of readFileSync(process.argv[2], 'utf8').split('\n').filter(Boolean)) {
  const m = JSON.parse(line);
  if (m.id !== undefined) requests.set(m.id, m);
}
const say = (s) => process.stdout.write(s + '\n');
// Answers arrive in any order (keel answers its own tools at once, the
// server answers its own); print them in the order they were asked.
const answers = new Map();
for await (const line of createInterface({ input: process.stdin })) {
  const r = JSON.parse(line);
  if (r.id !== undefined) answers.set(r.id, r);
}
for (const [id, q] of requests) {
  const r = answers.get(id);
  if (!r) { say(`\n> ${q.method}: no answer`); continue; }
  if (q.method !== 'tools/call') {
    const what = q.method === 'initialize' ? `protocol ${r.result.protocolVersion}, server ${r.result.serverInfo.name} ${r.result.serverInfo.version}`
      : q.method === 'tools/list' ? r.result.tools.map((t) => t.name).join(', ') : JSON.stringify(r.result ?? r.error);
    say(`\n> ${q.method}\n  ${what}`);
    continue;
  }
  if (!r.result.structuredContent) {        // the wrapped server's own tool
    say(`\n> ${q.params.name}: ${q.note}\n  ${r.result.content.map((c) => c.text).join(' | ')}`);
    continue;
  }
  const s = r.result.structuredContent;
  say(`\n> ${q.params.name}: ${q.note}`);
  if (r.result.isError) { say(`  error ${s.error.code}: ${s.error.message}`); continue; }
  if (!('confidence' in s)) {               // a chronometric tool: show its fields
    for (const [k, v] of Object.entries(s)) say(`  ${k}: ${JSON.stringify(v)}`);
    continue;
  }
  const verdict = s.level ? `level: ${s.level}` : `detected: ${s.detected}${s.pattern && s.pattern !== 'none' ? ` (${s.pattern})` : ''}`;
  say(`  ${verdict}   confidence ${s.confidence}`);
  say(`  reason: ${s.reason}`);
  if (s.prior_intent) say(`  your intent: "${s.prior_intent}"`);
  if (s.override_options.length) say(`  you may say: ${s.override_options.map((o) => o.token).join(', ')}`);
}
