/* phrases.h: lists of short phrases, by section, found in text.
 *
 * A data file (embedded, detectors/data/) holds [section] headers and one
 * phrase a line; a phrase is a sequence of text.h words (normalised, hashed;
 * in Chinese and Japanese a character each). A table keeps them sorted by
 * their first word, with a bit per first word's hash, so that a word that
 * begins no phrase (nearly all of them) costs one bit test; and with a bit
 * per first two words and per one-word phrase, so that a common word that
 * begins phrases ("the", "is") costs three bit tests when none of them
 * follows. Used by check_sycophancy's lists and by asking.h. */
#ifndef KEEL_PHRASES_H
#define KEEL_PHRASES_H

#include <stddef.h>
#include <stdint.h>

#define PHRASE_MAX  16 /* words in a phrase */
#define PHRASE_BITS 65536 /* bits of the first-word filter */

struct phrase {
    uint32_t off; /* where its words' hashes are in the table's pool */
    unsigned char len;
    unsigned char cls; /* its section's index in the names given to phrases_load */
};

struct phrases {
    const struct phrase *v; /* sorted by first word, the longest first */
    size_t n;
    const uint64_t *pool; /* every phrase's hashes, one after another */
    size_t npool;
    const uint64_t *first; /* each v[i]'s first word's hash, for a search that stays in cache */
    const uint64_t *bits; /* PHRASE_BITS bits: first words */
    const uint64_t *pairs; /* first two words of phrases of 2+ */
    const uint64_t *ones; /* phrases of one word */
    const uint64_t *words; /* every word of its phrases, sorted, each once */
    size_t nwords;
    void *mem[5]; /* what phrases_parse allocated; none for a baked table */
};

/* The table of the embedded file path: the lines of section "[names[k]]"
 * are phrases of class k, other sections (and those whose name is NULL, for
 * a table of some classes only) are skipped; min_words[k], when given, is
 * the fewest words a phrase of class k may have. Phrases longer than
 * PHRASE_MAX words are skipped. Built into the binary when the build baked
 * it (a table with the same file, names and fewest words: baked.c,
 * written by keel-bake), else parsed from the file (phrases_parse).
 * 0, or -1 when the file is missing or memory runs out (the table is then
 * empty). */
int phrases_load(struct phrases *p, const char *path, const char *const *names, int nnames,
                 const unsigned char *min_words);
/* The same table parsed from the file's text, as the build bakes it. */
int phrases_parse(struct phrases *p, const char *path, const char *const *names, int nnames,
                  const unsigned char *min_words);
/* The hashes of a phrase's words. */
static inline const uint64_t *phrase_words(const struct phrases *p, const struct phrase *ph)
{
    return p->pool + ph->off;
}
/* 1 when a word hashed h is a word of one of the table's phrases. */
int phrases_has_word(const struct phrases *p, uint64_t h);
/* Frees what phrases_parse allocated (nothing for a baked table). */
void phrases_free(struct phrases *p);

/* A table baked into the binary, with the arguments it was loaded by. */
struct phrases_baked {
    const char *path;
    int nnames;
    const char *const *names;
    const unsigned char *min_words; /* NULL: no fewest */
    struct phrases table;
};
extern const struct phrases_baked phrases_baked[]; /* phrases_baked_n of them */
extern const size_t phrases_baked_n;

/* The tables loaded so far in this process, as phrases_load was asked for
 * them (keel-bake writes them out). */
size_t phrases_loaded(const struct phrases_baked **v);

/* The longest phrase of a class in mask (bit k: class k) starting at word i
 * of a text whose n words' hashes are at h, h + stride bytes, ...; NULL if
 * none. The stride lets a caller pass the hash member of its own words.
 * The first word's bit is tested in line; phrases_from does the rest. */
static inline size_t phrase_bit(uint64_t h)
{
    return (size_t)(h >> 7) % PHRASE_BITS;
}
/* 1 when h's bit is set in one of a table's filters. */
static inline int phrase_bit_has(const uint64_t *bits, uint64_t h)
{
    return bits[phrase_bit(h) / 64] >> (phrase_bit(h) % 64) & 1;
}
const struct phrase *phrases_from(const struct phrases *p, const uint64_t *h, size_t stride, size_t n, size_t i,
                                  unsigned mask);
static inline const struct phrase *phrases_at(const struct phrases *p, const uint64_t *h, size_t stride, size_t n,
                                              size_t i, unsigned mask)
{
    return phrase_bit_has(p->bits, *(const uint64_t *)((const char *)h + i * stride))
        ? phrases_from(p, h, stride, n, i, mask)
        : NULL;
}

#endif
