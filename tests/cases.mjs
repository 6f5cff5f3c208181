// cases.mjs: the data-driven cases in tests/cases/<tool>/*.json.
//
// Each case file is {description, now?, args, expect, exit?}. The case runs
// `keel check <tool>` with the args on stdin (KEEL_NOW=now when given) and
// passes when the exit status matches (0, or 2 when expect names an error),
// every expected field matches, and the output is valid against the tool's
// output schema. Expected fields are paths ("similar_prompts[0].text",
// "override_options.length", "error.code") mapped to a value or a matcher:
// {"$gte": n}, {"$lte": n}, {"$absent": true}, {"$contains": "text"},
// {"$tokens": [...]} (the override tokens, in order).
// Args may use {"$repeat": {"value": v, "times": n}} to build long inputs:
// a string value is repeated into one string, anything else into an array.
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { ok, done } from './lib/tap.mjs';
import { root, check, invalid } from './lib/keel.mjs';

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
    if ('$tokens' in want) return Array.isArray(actual) && JSON.stringify(actual.map((o) => o.token)) === JSON.stringify(want.$tokens);
  }
  return JSON.stringify(actual) === JSON.stringify(want);
}

const dir = join(root, 'tests', 'cases');
let count = 0;
for (const tool of readdirSync(dir).sort()) {
  if (!existsSync(join(root, 'schemas', `${tool}.json`))) continue;
  for (const f of readdirSync(join(dir, tool)).filter((f) => f.endsWith('.json')).sort()) {
    const c = JSON.parse(readFileSync(join(dir, tool, f), 'utf8'));
    const name = `${tool}/${f}: ${c.description}`;
    const r = check(tool, expand(c.args), c.now ? { KEEL_NOW: c.now } : {});
    const isError = Object.keys(c.expect).some((k) => k.startsWith('error'));
    const wantExit = c.exit ?? (isError ? 2 : 0);
    const problems = [];
    if (r.status !== wantExit) problems.push(`exit ${r.status}, expected ${wantExit}; stderr: ${r.stderr}`);
    if (wantExit === 64) {
      if (r.stdout !== '') problems.push(`a usage error printed to stdout: ${r.stdout.slice(0, 200)}`);
      if (!/keel: /.test(r.stderr)) problems.push('a usage error must explain itself on stderr');
    } else if (!r.json) problems.push(`output is not JSON: ${r.stdout.slice(0, 200)}`);
    else {
      for (const [path, want] of Object.entries(c.expect)) {
        const got = get(r.json, path);
        if (!matches(got, want)) problems.push(`${path}: got ${JSON.stringify(got)}, expected ${JSON.stringify(want)}`);
      }
      const errs = invalid(tool, 'output', r.json);
      if (errs) problems.push(`output not valid against ${tool}.json#/output: ${JSON.stringify(errs.slice(0, 3))}`);
      if (isError && r.json.error && r.json.error.code && !(r.json.error.code in (loadCodes(tool))))
        problems.push(`error code ${r.json.error.code} is not declared in the schema`);
    }
    ok(problems.length === 0, name, problems.join('\n'));
    count++;
  }
}
function loadCodes(tool) {
  return JSON.parse(readFileSync(join(root, 'schemas', `${tool}.json`), 'utf8')).errors;
}
ok(count >= 30, `ran ${count} case files`);
done();
