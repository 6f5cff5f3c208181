#!/bin/sh
# phrase-lists.sh DATA_DIR: every entry of the detectors' phrase and stop lists
# (detectors/data/stopwords.txt, sycophancy.txt, asking.txt, and each
# comma-separated entry of concepts.txt and concepts-<lang>.txt) is a short
# phrase: stop words at most 4 words (split on spaces) and 40 bytes, concepts
# 4 words and 60 bytes (Cyrillic, Arabic and Devanagari take 2 to 3 bytes a
# character); the phrasebooks at
# most 6 words and 96 bytes (other scripts take 2 to 3 bytes a character, Devanagari more with its vowel signs).
# Longer entries would match a particular sentence rather than a way of
# speaking. Comments (#) and [section] lines are not entries.
dir=${1:?usage: phrase-lists.sh DATA_DIR}
LC_ALL=C awk '
    { sub(/\r$/, ""); sub(/^[ \t]+/, ""); sub(/[ \t]+$/, "") }
    $0 == "" || /^#/ || /^\[.*\]$/ { next }
    FILENAME ~ /stopwords/ && (NF > 4 || length($0) > 40) {
        printf "%s:%d: entry too long (%d words, %d bytes; limit 4 words, 40 bytes): %s\n", FILENAME, FNR, NF, length($0), $0
        bad++
    }
    # punctuation is not matched: "/s" would read as the word "s" (the "%s" of a format string)
    $0 ~ /[[:punct:]]/ && $0 ~ /^[[:punct:]]*[A-Za-z0-9]?[[:punct:]]*$/ {
        printf "%s:%d: entry is punctuation and at most one letter, which matching reads as that letter alone: %s\n", FILENAME, FNR, $0
        bad++
    }
    FILENAME !~ /stopwords/ && (NF > 6 || length($0) > 96) {
        printf "%s:%d: entry too long (%d words, %d bytes; limit 6 words, 96 bytes): %s\n", FILENAME, FNR, NF, length($0), $0
        bad++
    }
    { n++ }
    END {
        if (n == 0) { print "no entries found"; exit 1 }
        printf "%d entries checked\n", n
        exit bad ? 1 : 0
    }
' "$dir/stopwords.txt" "$dir/sycophancy.txt" "$dir/asking.txt" || exit 1
# concepts.txt and concepts-<lang>.txt: one group a line, entries separated
# by commas; an entry may belong to one group of its file only.
LC_ALL=C awk '
    FNR == 1 { split("", seen) }
    { sub(/\r$/, "") }
    /^[ \t]*$/ || /^[ \t]*#/ { next }
    {
        groups++
        k = split($0, e, ",")
        if (k < 2) { printf "%s:%d: a group needs at least two entries\n", FILENAME, FNR; bad++ }
        for (i = 1; i <= k; i++) {
            t = e[i]; sub(/^[ \t]+/, "", t); sub(/[ \t]+$/, "", t)
            if (t == "") { printf "%s:%d: empty entry\n", FILENAME, FNR; bad++; continue }
            if (split(t, w, " ") > 4 || length(t) > 60) {
                printf "%s:%d: entry too long (limit 4 words, 60 bytes): %s\n", FILENAME, FNR, t
                bad++
            }
            if (t in seen) { printf "%s:%d: %s is also in the group on line %d\n", FILENAME, FNR, t, seen[t]; bad++ }
            seen[t] = FNR
            n++
        }
    }
    END {
        if (groups == 0) { print "no concept groups found"; exit 1 }
        printf "%d concept groups, %d entries checked\n", groups, n
        exit bad ? 1 : 0
    }
' "$dir"/concepts*.txt
