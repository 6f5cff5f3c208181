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
// A thought no lens matches gets a universal question by a stable hash: the
// same thought, again later in the same process, the same question.
const plain = ['zebra quilt', 'purple marmalade', 'seven oak trees', 'quiet harbour lights', 'blue kettle', 'paper lantern moon'];
const twice = batch([...plain, ...plain]);
ok(twice.length === 12 && twice.every((o) => o.lens === 'universal' && o.matched === false) &&
   plain.every((_, i) => twice[i].id === twice[i + 6].id) && new Set(twice.map((o) => o.id)).size > 1,
  'a thought no lens matches: a universal question, the same each time it is asked in one process', twice.map((o) => o.id));

// A thought that names two lenses ("the edge case and the risk") goes to one
// of them: a lens's name counts three times a word its questions share.
const lensNames = [...new Set(rows.map((r) => r[0]))];
const pairs = lensNames.flatMap((a, i) => lensNames.slice(i + 1).map((b) => [a, b]));
const words = (l) => l.replaceAll('_', ' ');
const named = batch(pairs.map(([a, b]) => `${words(a)} and ${words(b)}`));
const elsewhere = pairs.filter(([a, b], i) => ![a, b].includes(named[i].lens)).map(([a, b]) => `${a}+${b}`);
ok(named.length === pairs.length && elsewhere.length === 0, `each of ${pairs.length} thoughts naming two lenses goes to one of the two`, elsewhere.slice(0, 5));
// At a tie, a core lens before a booster, then the first by name. A tie is
// made sure of from the table: each lens's questions hold its own name as a
// word and neither's hold a word like the other's name.
const tier = Object.fromEntries(rows.map((r) => [r[0], r[2]]));
const said = (l) => rows.filter((r) => r[0] === l).map((r) => r[3].toLowerCase()).join(' ');
const has = (text, l) => text.split(/[^a-z]+/).includes(l);
const like = (text, l) => words(l).split(' ').some((w) => text.split(/[^a-z]+/).some((t) => t.startsWith(w.slice(0, 5))));
const ties = pairs.filter(([a, b]) => !a.includes('_') && !b.includes('_') && has(said(a), a) && has(said(b), b) && !like(said(a), b) && !like(said(b), a));
const tieOut = batch(ties.map(([a, b]) => `${a} and ${b}`));
const byRule = ([a, b]) => (tier[a] !== tier[b] ? (tier[a] === 'core' ? a : b) : a < b ? a : b);
const wrong = ties.filter((p, i) => tieOut[i].lens !== byRule(p)).map(([a, b]) => `${a}+${b}`);
ok(ties.length >= 100 && wrong.length === 0, `at a tie (${ties.length} pairs), a core lens first, then the first by name`, wrong.slice(0, 5));
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
