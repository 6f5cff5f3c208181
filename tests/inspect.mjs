// inspect.mjs: self_inspect as the table promises: every question of the lens
// table, fed back as a thought, routes to its own lens; the same thought
// always gets the same question; matched is true exactly when a lens scored;
// the CLI and the MCP text block carry the question alone.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ok, done } from './lib/tap.mjs';
import { keel, root, Server } from './lib/keel.mjs';

const rows = readFileSync(join(root, 'detectors', 'data', 'lenses.csv'), 'utf8').trim().split('\n').slice(1).map((l) => l.split(','));
ok(rows.length >= 120 && new Set(rows.map((r) => r[0])).size >= 40, `the table has ${rows.length} questions in ${new Set(rows.map((r) => r[0])).size} lenses`);
const batch = (lines) => {
  const r = spawnSync(keel, ['--log-level', 'error', 'inspect'], { input: lines.join('\n') + '\n', encoding: 'utf8' });
  return r.stdout.trim().split('\n').map((l) => JSON.parse(l));
};
const out = batch(rows.map((r) => r[3]));
const strays = rows.filter((r, i) => out[i].lens !== r[0]).map((r, i) => `${r[3]} -> ${out[i] && out[i].lens}`);
ok(out.length === rows.length && strays.length === 0, 'every question, fed back as a thought, routes to its own lens', strays);
ok(rows.every((r, i) => out[i].matched === true && out[i].id.startsWith(`${r[0]}-`)), 'and is matched, with a lens-rank id');
const again = batch(rows.map((r) => r[3]));
ok(JSON.stringify(again) === JSON.stringify(out), 'the same input always gives the same output');
const thoughts = ['order a pizza', 'the weather is nice', 'x', 'Ich gehe jetzt nach Hause', '🙂', 'lorem ipsum dolor'];
const u = batch(thoughts);
ok(u.every((o) => (o.lens === 'universal') === (o.matched === false)), 'matched is false exactly for universal questions');
ok(new Set(u.map((o) => o.question)).size >= 3, 'different unmatched thoughts get different universal questions', u.map((o) => o.id));
let r = spawnSync(keel, ['inspect', 'The evidence for this is one log line'], { encoding: 'utf8' });
ok(r.status === 0 && /\?\n$/.test(r.stdout) && !r.stdout.includes('{'), 'keel inspect THOUGHT prints the question alone', r.stdout);
r = spawnSync(keel, ['inspect', '--json', 'The evidence for this is one log line'], { encoding: 'utf8' });
ok(r.status === 0 && JSON.parse(r.stdout).lens === 'evidence', 'keel inspect --json prints the object');
r = spawnSync(keel, ['inspect', ''], { encoding: 'utf8' });
ok(r.status === 2 && JSON.parse(r.stdout).error.code === 'INPUT_INVALID', 'an empty thought: exit 2 with the error');
const s = new Server(['--log-level', 'error']);
const m = await s.ask({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'self_inspect', arguments: { thought: 'I am sure the cache is the cause' } } });
await s.close();
ok(m.result.content[0].text === m.result.structuredContent.question && m.result.content.length === 1, 'over MCP the text block is the question alone', m.result);
done();
