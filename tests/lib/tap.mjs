// tap.mjs: the smallest TAP producer: plan at the end, one line per check.
let n = 0, failed = 0, todos = 0;
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
// A check that states what should hold but does not yet, tied to the open
// work that will make it hold: reported as "not ok ... # TODO" (TAP), so it
// is seen on every run, and fails the run the day it passes unannounced.
export function todo(cond, name, why, diag) {
  n++;
  if (cond) { failed++; console.log(`not ok ${n} - ${name} # passes now: remove the TODO (${why})`); return; }
  todos++;
  console.log(`not ok ${n} - ${name} # TODO ${why}`);
  if (diag !== undefined) for (const l of String(typeof diag === 'string' ? diag : JSON.stringify(diag)).split('\n').slice(0, 10)) console.log(`#   ${l}`);
}
export function done() {
  console.log(`1..${n}`);
  if (n === 0) { console.log('# no tests ran'); process.exit(1); }
  console.log(`# ${n - failed - todos} passed, ${failed} failed${todos ? `, ${todos} to do` : ''}`);
  process.exit(failed ? 1 : 0);
}
