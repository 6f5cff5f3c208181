#!/bin/sh
# phrase-lists.sh DATA_DIR: every entry of the detectors' phrase and stop lists
# (detectors/data/stopwords.txt, sycophancy.txt) is a short phrase: at most 4
# words (split on spaces) and at most 40 bytes. Longer entries would match a
# particular sentence rather than a way of speaking. Comments (#) and
# [section] lines are not entries.
dir=${1:?usage: phrase-lists.sh DATA_DIR}
LC_ALL=C awk '
    { sub(/\r$/, ""); sub(/^[ \t]+/, ""); sub(/[ \t]+$/, "") }
    $0 == "" || /^#/ || /^\[.*\]$/ { next }
    NF > 4 || length($0) > 40 {
        printf "%s:%d: entry too long (%d words, %d bytes; limit 4 words, 40 bytes): %s\n", FILENAME, FNR, NF, length($0), $0
        bad++
    }
    { n++ }
    END {
        if (n == 0) { print "no entries found"; exit 1 }
        printf "%d entries checked\n", n
        exit bad ? 1 : 0
    }
' "$dir/stopwords.txt" "$dir/sycophancy.txt"
