// tap.mjs: the smallest TAP producer: plan at the end, one line per check.
let n = 0, failed = 0;
export function ok(cond, name, diag) {
  n++;
  if (cond) { console.log(`ok ${n} - ${name}`); return true; }
  failed++;
  console.log(`not ok ${n} - ${name}`);
  if (diag !== undefined) for (const l of String(typeof diag === 'string' ? diag : JSON.stringify(diag, null, 1)).split('\n').slice(0, 40)) console.log(`#   ${l}`);
  return false;
}
// A check that does not apply here, reported as a TAP skip, never as a pass.
export function skip(name, why) {
  n++;
  console.log(`ok ${n} - ${name} # SKIP ${why}`);
}
export function done() {
  console.log(`1..${n}`);
  if (n === 0) { console.log('# no tests ran'); process.exit(1); }
  console.log(`# ${n - failed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}
