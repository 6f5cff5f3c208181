// cases.mjs: the data-driven cases in tests/cases/<tool>/*.json.
//
// `node cases.mjs KEEL [TOOL]`: every tool's cases, or TOOL's alone.
// Each case file is {description, now?, tz?, state?, profile?, env?, args,
// expect, exit?}. The case runs `keel check <tool>` with the args on stdin in
// a private sandbox (its own state directory, seeded with `state`, and its own
// profile file, holding `profile`), with KEEL_NOW=now and TZ=tz when given. It
// passes when the exit status matches (0, or 2 when expect names an error),
// every expected field matches, and the output is valid against the tool's
// output schema. A case may instead list `steps` ({tool?, args, now?, expect,
// exit?}), run in order in one sandbox, and may check the state file after
// with `state_after` (paths as in expect) and the state directory with
// `files_after` ({"prefix": count of files whose name starts with it}). Expected fields are paths ("similar_prompts[0].text",
// "override_options.length", "error.code") mapped to a value or a matcher:
// {"$gte": n}, {"$lte": n}, {"$absent": true}, {"$contains": "text"}, {"$match": "regex"},
// {"$tokens": [...]} (the override tokens, in order).
// A case with "hold_lock": true runs while another process holds the state
// lock (flock(1) on state.lock), as a stopped keel would.
// Args may use {"$repeat": {"value": v, "times": n}} to build long inputs:
// a string value is repeated into one string, anything else into an array.
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, readdirSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { ok, done } from './lib/tap.mjs';
import { root, checkAsync, invalid, sandbox } from './lib/keel.mjs';

function expand(v) {
  if (Array.isArray(v)) return v.map(expand);
  if (v && typeof v === 'object') {
    if (v.$repeat) {
      const { value, times } = v.$repeat;
      return typeof value === 'string' ? value.repeat(times) : Array.from({ length: times }, () => expand(value));
    }
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, expand(x)]));
  }
  return v;
}

function get(obj, path) {
  let cur = obj;
  for (const part of path.match(/[^.[\]]+/g)) {
    if (cur === undefined || cur === null) return undefined;
    cur = part === 'length' && Array.isArray(cur) ? cur.length : cur[part];
  }
  return cur;
}

function matches(actual, want) {
  if (want && typeof want === 'object' && !Array.isArray(want)) {
    if ('$gte' in want) return typeof actual === 'number' && actual >= want.$gte;
    if ('$lte' in want) return typeof actual === 'number' && actual <= want.$lte;
    if ('$absent' in want) return actual === undefined;
    if ('$contains' in want) return typeof actual === 'string' && actual.includes(want.$contains);
    if ('$match' in want) return typeof actual === 'string' && new RegExp(want.$match).test(actual);
    if ('$tokens' in want) return Array.isArray(actual) && JSON.stringify(actual.map((o) => o.token)) === JSON.stringify(want.$tokens);
  }
  return JSON.stringify(actual) === JSON.stringify(want);
}

// The cases run a few at a time (four of them wait out a held state lock).
// One case file: its name and what is wrong with what keel did.
async function runCase(tool, f) {
  const c = JSON.parse(readFileSync(join(dir, tool, f), 'utf8'));
  const name = `${tool}/${f}: ${c.description}`;
  const box = sandbox(c);
  const problems = [];
  let holder = null;
  if (c.hold_lock) {
    const lock = join(box.stateDir, 'state.lock');
    mkdirSync(box.stateDir, { recursive: true, mode: 0o700 });
    holder = spawn('flock', ['-x', lock, 'sleep', '60'], { stdio: 'ignore' });
    while (spawnSync('flock', ['-n', '-x', lock, 'true']).status === 0) await new Promise((r) => setTimeout(r, 20));
  }
  const steps = c.steps || [{ args: c.args, expect: c.expect, exit: c.exit }];
  for (const [i, st] of steps.entries()) {
    const t = st.tool || tool;
    const at = steps.length > 1 ? `step ${i} (${t}): ` : '';
    const r = await checkAsync(t, expand(st.args), { ...c, now: st.now || c.now, box });
    const isError = Object.keys(st.expect).some((k) => k.startsWith('error'));
    const wantExit = st.exit ?? (isError ? 2 : 0);
    if (r.status !== wantExit) problems.push(`${at}exit ${r.status}, expected ${wantExit}; stderr: ${r.stderr}`);
    if (wantExit === 64) {
      if (r.stdout !== '') problems.push(`${at}a usage error printed to stdout: ${r.stdout.slice(0, 200)}`);
      if (!/keel: /.test(r.stderr)) problems.push(`${at}a usage error must explain itself on stderr`);
      continue;
    }
    if (!r.json) { problems.push(`${at}output is not JSON: ${r.stdout.slice(0, 200)}`); continue; }
    for (const [path, want] of Object.entries(st.expect)) {
      const got = get(r.json, path);
      if (!matches(got, want)) problems.push(`${at}${path}: got ${JSON.stringify(got)}, expected ${JSON.stringify(want)}`);
    }
    const errs = invalid(t, 'output', r.json);
    if (errs) problems.push(`${at}output not valid against ${t}.json#/output: ${JSON.stringify(errs.slice(0, 3))}`);
    if (r.json.error && r.json.error.code && !(r.json.error.code in loadCodes(t)))
      problems.push(`${at}error code ${r.json.error.code} is not declared in ${t}.json`);
  }
  if (c.state_after) {
    let st = null;
    try { st = JSON.parse(readFileSync(join(box.stateDir, 'state.json'), 'utf8')); } catch (e) { problems.push(`state file: ${e.message}`); }
    for (const [path, want] of Object.entries(c.state_after)) {
      const got = st && get(st, path);
      if (!matches(got, want)) problems.push(`state ${path}: got ${JSON.stringify(got)}, expected ${JSON.stringify(want)}`);
    }
  }
  for (const [prefix, n] of Object.entries(c.files_after || {})) {
    const have = existsSync(box.stateDir) ? readdirSync(box.stateDir).filter((x) => x.startsWith(prefix)).length : 0;
    if (have !== n) problems.push(`files starting ${prefix}: ${have}, expected ${n}`);
  }
  if (holder) holder.kill('SIGKILL');
  return { name, problems };
}

const dir = join(root, 'tests', 'cases');
const only = process.argv[3];                 // one tool's cases (ctest runs each tool as a test of its own)
const files = [];
for (const tool of readdirSync(dir).sort()) {
  if (only && tool !== only) continue;
  if (!existsSync(join(root, 'schemas', `${tool}.json`))) continue;
  for (const f of readdirSync(join(dir, tool)).filter((f) => f.endsWith('.json')).sort()) files.push([tool, f]);
}
// Four at a time; reported in file order.
const results = new Array(files.length);
let next = 0;
await Promise.all(Array.from({ length: 4 }, async () => {
  while (next < files.length) {
    const i = next++;
    results[i] = await runCase(...files[i]);
  }
}));
for (const { name, problems } of results) ok(problems.length === 0, name, problems.join('\n'));
const count = results.length;
function loadCodes(tool) {
  if (!existsSync(join(root, 'schemas', `${tool}.json`))) return {};
  return JSON.parse(readFileSync(join(root, 'schemas', `${tool}.json`), 'utf8')).errors;
}
ok(only ? count >= 1 : count >= 30, `ran ${count} case files${only ? ` of ${only}` : ''}`);
done();
