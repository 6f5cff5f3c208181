// schemas.mjs: the schemas in schemas/ are the wire contract.
//
// Each file is a well-formed 2020-12 document with keel's own $id, the
// clinical-review flag and a compatibility block naming a real source file;
// its input and output compile; its examples validate and are exactly what
// keel answers; its error table matches the codes the output schema allows
// and every code (but INTERNAL_ERROR, which needs an allocation failure) is
// produced by some case in tests/cases. tools/list serves the files as they are.
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { ok, done } from './lib/tap.mjs';
import { root, loadSchemas, validator, check, Server } from './lib/keel.mjs';

const schemas = loadSchemas();
ok(Object.keys(schemas).length >= 3, `found ${Object.keys(schemas).length} schema files`);

for (const [tool, s] of Object.entries(schemas)) {
  ok(s.$schema === 'https://json-schema.org/draft/2020-12/schema', `${tool}: declares JSON Schema 2020-12`);
  ok(s.$id === `urn:keel:schemas:0.1.0:${tool}`, `${tool}: $id is in keel's namespace`, s.$id);
  ok(typeof s.title === 'string' && typeof s.description === 'string' && s.description.length > 40, `${tool}: has a title and a description`);
  ok(s['x-clinical-review-required'] === (tool.startsWith('check_') || tool === 'apply_override'), `${tool}: x-clinical-review-required (true exactly for the guardrail tools)`);
  const src = s.compatibility && s.compatibility.heuristic_source;
  ok(src && existsSync(join(root, src)), `${tool}: compatibility.heuristic_source names a file (${src})`);
  const a = s.annotations || {};
  ok(['readOnlyHint', 'destructiveHint', 'idempotentHint'].every((k) => typeof a[k] === 'boolean') && a.openWorldHint === false
    && (!a.readOnlyHint || a.idempotentHint), `${tool}: annotations say readOnly/destructive/idempotent, openWorldHint:false`, a);
  let vin, vout;
  try { vin = validator(tool, 'input'); vout = validator(tool, 'output'); } catch (e) { ok(false, `${tool}: input and output compile`, e.message); continue; }
  ok(true, `${tool}: input and output compile`);
  ok(s.input.type === 'object' && s.output.type === 'object', `${tool}: inputSchema and outputSchema are objects (MCP requires it)`);
  const declared = Object.keys(s.errors || {}).sort();
  const allowed = [...s.output.$defs.error.properties.error.properties.code.enum].sort();
  ok(declared.length > 0 && isDeepStrictEqual(declared, allowed), `${tool}: the error table matches the error codes the output allows`, { declared, allowed });

  // Every code but INTERNAL_ERROR is produced by a case (clock failure is in cli.mjs).
  const dir = join(root, 'tests', 'cases', tool);
  const produced = new Set(['INTERNAL_CLOCK_UNAVAILABLE']);
  for (const f of existsSync(dir) ? readdirSync(dir) : []) {
    const c = JSON.parse(readFileSync(join(dir, f), 'utf8'));
    for (const st of c.steps || [c]) if ((st.tool || tool) === tool && st.expect['error.code']) produced.add(st.expect['error.code']);
  }
  const missing = declared.filter((c) => c !== 'INTERNAL_ERROR' && !produced.has(c));
  ok(missing.length === 0, `${tool}: every declared error code but INTERNAL_ERROR has a case`, missing);

  for (const [i, ex] of (s.examples || []).entries()) {
    ok(vin(ex.input), `${tool}: example ${i} input is valid`, vin.errors);
    ok(vout(ex.output), `${tool}: example ${i} output is valid`, vout.errors);
    // A new session id is random each time: compare ids by shape.
    const uuids = (v) => JSON.parse(JSON.stringify(v ?? null).replace(/"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"/g, '"<uuid>"'));
    if (ex.before) {          // a stateful example: its setup calls, then it, in one keel serve
      const srv = new Server(['--log-level', 'error'], { ...(ex.now ? { KEEL_NOW: ex.now } : {}) });
      let id = 0, last;
      for (const b of [...ex.before, { tool, input: ex.input }])
        last = await srv.ask({ jsonrpc: '2.0', id: id++, method: 'tools/call', params: { name: b.tool, arguments: b.input } });
      await srv.close();
      ok(isDeepStrictEqual(uuids(last.result.structuredContent), uuids(ex.output)), `${tool}: example ${i} is what keel answers (after its setup calls)`, last);
    } else {
      const r = check(tool, ex.input, ex);
      ok(r.status === 0 && isDeepStrictEqual(uuids(r.json), uuids(ex.output)), `${tool}: example ${i} is what keel answers`, r.stdout);
    }
  }
  ok((s.examples || []).length >= 2, `${tool}: has at least two examples`);
}

// tools/list serves the files, field for field.
const srv = new Server(['--log-level', 'error']);
const list = await srv.ask({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
await srv.close();
const served = Object.fromEntries(list.result.tools.map((t) => [t.name, t]));
for (const [tool, s] of Object.entries(schemas)) {
  const t = served[tool];
  ok(t && isDeepStrictEqual(t, { name: tool, title: s.title, description: s.description, inputSchema: s.input, outputSchema: s.output, annotations: s.annotations }),
    `${tool}: tools/list entry equals the schema file`, t);
}
ok(list.result.tools.length === Object.keys(schemas).length, 'tools/list serves one tool per schema file');
done();
