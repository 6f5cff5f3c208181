#!/bin/sh
# mutate-sample.sh PYTHON OUT_DIR: scripts/mutate on a small sample (TAP), so
# the machinery keeps working: detectors/text.c against unit_rumination alone
# (it builds only the detectors), three mutants drawn by seed and three picked
# by hand whose fate is known: one that test kills (words are no longer
# words), one that does not compile (a length for a pointer) and one listed
# as equivalent in a private equivalents file (not run).
set -u
py=$1
out=$2
root=$(cd "$(dirname "$0")/.." && pwd)
t=$(printf '\t')
res=$out/mutate-sample.tsv
eq=$out/mutate-sample-equivalents.txt
rm -f "$res"
killed="detectors/text.c${t}cond${t}if (uc_is_alnum(c))${t}if (!(uc_is_alnum(c)))"
stillborn="detectors/text.c${t}args${t}u8_wordbreaks(s, n, brk);${t}u8_wordbreaks(n, s, brk);"
equivalent="detectors/text.c${t}drop${t}w->n = w->cap = 0;${t}{}"
printf '# for mutate-sample.sh\n%s%sthe sample says so\n' "$equivalent" "$t" > "$eq"

n=0; failed=0
check() {
    n=$((n + 1))
    if [ "$1" = 0 ]; then echo "ok $n - $2"; else failed=$((failed + 1)); echo "not ok $n - $2"; fi
}

FILES=detectors/text.c TESTS='^unit_rumination$' MUTANTS=3 SEED=7 JOBS=2 RESULTS=$res EQUIVALENTS=$eq \
PICK="$killed
$stillborn
$equivalent" "$py" "$root/scripts/mutate" > "$out/mutate-sample.log" 2>&1
status=$?
[ $status = 0 ] || sed 's/^/# /' "$out/mutate-sample.log"
check $status "scripts/mutate runs to the end"
# row STATUS KEY: the results hold KEY (file, op, original, mutated) with STATUS
row() {
    printf '%s\n' "$2" | awk -F'\t' -v st="$1" '
        NR == FNR { f = $1; op = $2; o = $3; m = $4; next }
        $1 == st && $2 == f && $4 == op && $5 == o && $6 == m { found = 1 }
        END { exit !found }' - "$res" 2>/dev/null
}
row killed "$killed"; check $? "the mutant unit_rumination covers is killed"
row stillborn "$stillborn"; check $? "the mutant that does not compile is stillborn"
row equivalent "$equivalent"; check $? "the listed equivalent is reported as equivalent"
drawn=$(grep -c -E "^(killed|survived)${t}" "$res" 2>/dev/null)
[ "$drawn" = 4 ]; check $? "three drawn mutants and the picked one ran (ran: $drawn)"
grep -q "^overall " "$out/mutate-sample.log"; check $? "the report has an overall line"
echo "1..$n"
exit $((failed > 0))
