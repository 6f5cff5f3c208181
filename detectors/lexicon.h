/* lexicon.h: rumination's lexicon (rumwords.c) as keel-bake writes it out
 * (detectors/bake.c): its table of stopwords and concept groups, the bits
 * of the phrases' last two stems, the groups read, and the stems it was
 * made with: a process whose libstemmer stems otherwise (missing, or
 * another version) reads the files instead (rumwords.c, lex_init). */
#ifndef KEEL_LEXICON_H
#define KEEL_LEXICON_H

#include "stem.h"

#include <stddef.h>
#include <stdint.h>

struct lex_table {
    const uint64_t *k; /* keys, 0 in an empty slot */
    const uint32_t *v; /* their LEX_* bits and concept */
    size_t n, cap; /* cap 0: none baked */
};

struct lex_state {
    struct lex_table en; /* the stopwords and the English groups */
    struct lex_table other; /* the other languages' groups, each under its own salt */
    const uint64_t *pair; /* 2 << 16 bits: English's phrases' last two stems, then the other languages' */
    unsigned groups, own; /* groups read; the languages with groups of their own, a bit each */
    const uint64_t *print; /* STEM_NLANG: each language's stems of the words of its first groups, hashed (0: no
                              file) */
};

/* The lexicon baked into the binary (cap 0 when the build baked none). */
extern const struct lex_state lex_baked;

/* Empties the lexicon and reads the stopwords and every language's groups
 * from the files into it, as keel-bake bakes it. 0, or -1 when memory ran
 * out and some entry was left out. */
int lex_read_all(struct lex_state *out);

#endif
