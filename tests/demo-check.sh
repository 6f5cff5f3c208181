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
expect "check_rumination: the fourth ask"
expect "detected: true   confidence"
expect "level: nudge"
expect "reads one step firmer"
expect "stepped away already"
expect "detected: true (unconditional_agreement)"
expect "detected: true (repeated_reassurance_request)"
expect "error WINDOW_OUT_OF_RANGE"
expect "energy_zone: \"morning_peak\""
expect "break: null"
expect "notes 1.0.0"
expect "search_notes, check_rumination"
expect "migration plan: move the orders table first"
echo "1..$n"
echo "# $((n - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
