#!/bin/sh
# demo-check.sh: `make demo` keeps showing what it promises (TAP).
set -u
out=$(sh "$(dirname "$0")/../examples/demo.sh" "$1" 2>&1)
n=0; failed=0
expect() {
    n=$((n + 1))
    if printf '%s\n' "$out" | grep -q -- "$1"; then echo "ok $n - demo shows: $1"
    else failed=$((failed + 1)); echo "not ok $n - demo shows: $1"; fi
}
expect "server notes 1.0.0"
expect "add_note, search_notes, read_note, check_rumination"
expect "migration plan: move the orders table first"
expect "owners: Dana (db), Lee (api)"
expect "advisory (loop, repeat): search_notes with the same arguments returned the same result 4 times in 2 minutes"
expect "effect: \"earlier tool calls are forgotten; loop starts from a clean slate\""
expect "advisory (hyperfocus, gentle)"
expect "advisory (hyperfocus, nudge)"
expect "advisory (hyperfocus, hard)"
expect "You set out to: draft the migration plan"
expect "energy_zone: \"morning_peak\""
expect "detected: true (unconditional_agreement)"
expect "detected: true (repeated_reassurance_request)"
expect "reads one step firmer"
expect "stepped away already"
expect "error WINDOW_OUT_OF_RANGE"
expect "effect: \"the session is closed\""
# reading five notes is work: no advisory before the repeated search
if printf '%s\n' "$out" | sed -n '/reads its notes one by one/,/search_notes "deploy checklist"/p' | grep -q "advisory ("; then
    failed=$((failed + 1)); n=$((n + 1)); echo "not ok $n - demo: reading several notes earns no advisory"
else n=$((n + 1)); echo "ok $n - demo: reading several notes earns no advisory"; fi
# the loop is caught once: one loop advisory in the whole demo, and none after fresh-context
c=$(printf '%s\n' "$out" | grep -c "advisory (loop")
if [ "$c" -ne 1 ]; then failed=$((failed + 1)); n=$((n + 1)); echo "not ok $n - demo: the loop is advised once ($c)"
else n=$((n + 1)); echo "ok $n - demo: the loop is advised once"; fi
if printf '%s\n' "$out" | sed -n '/snoozed: no reminder/,/get_time_context/p' | grep -q "advisory ("; then
    failed=$((failed + 1)); n=$((n + 1)); echo "not ok $n - demo: no reminder while snoozed"
else n=$((n + 1)); echo "ok $n - demo: no reminder while snoozed"; fi
expect "keel hook UserPromptSubmit: the person asks about the migration a fourth time in 40 minutes"
expect "** keel (rumination, sycophancy): You asked about this 3 times before in this stretch of work: at 14:05"
expect "** keel (rules, sycophancy): the reply matched the rule cheerleading-opener"
expect "This reply breaks the person's rules (no-todo-left): Finish the work"
# the revised reply passes: nothing after it
if printf '%s\n' "$out" | sed -n '/the revised reply/,$p' | grep -q "\*\* block"; then
    failed=$((failed + 1)); n=$((n + 1)); echo "not ok $n - demo: the revised reply passes"
else n=$((n + 1)); echo "ok $n - demo: the revised reply passes"; fi
echo "1..$n"
echo "# $((n - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
