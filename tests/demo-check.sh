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
expect "add_note, search_notes, check_rumination"
expect "migration plan: move the orders table first"
expect "advisory (rumination): This is call number 4 to search_notes"
expect "effect: \"the next rumination advisory will not be shown\""
expect "advisory (rumination): This is call number 6"
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
# the override takes effect: nothing between the override-once and the next step
if printf '%s\n' "$out" | sed -n '/suppressed once/,/back again/p' | grep -q "advisory ("; then
    failed=$((failed + 1)); n=$((n + 1)); echo "not ok $n - demo: override-once suppresses the next advisory"
else n=$((n + 1)); echo "ok $n - demo: override-once suppresses the next advisory"; fi
if printf '%s\n' "$out" | sed -n '/snoozed: no reminder/,/get_time_context/p' | grep -q "advisory ("; then
    failed=$((failed + 1)); n=$((n + 1)); echo "not ok $n - demo: no reminder while snoozed"
else n=$((n + 1)); echo "ok $n - demo: no reminder while snoozed"; fi
echo "1..$n"
echo "# $((n - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
