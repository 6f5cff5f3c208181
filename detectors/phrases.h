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
    const uint64_t *h; /* its words' hashes, in the table's pool */
    uint32_t off; /* where they are in the pool */
    unsigned char len;
    unsigned char cls; /* its section's index in the names given to phrases_load */
};

struct phrases {
    struct phrase *v; /* sorted by first word, the longest first */
    size_t n, cap;
    uint64_t *pool; /* every phrase's hashes, one after another */
    size_t npool, cappool;
    uint64_t *first; /* v[i].h[0], for a search that stays in cache */
    uint64_t bits[PHRASE_BITS / 64]; /* first words */
    uint64_t pairs[PHRASE_BITS / 64]; /* first two words of phrases of 2+ */
    uint64_t ones[PHRASE_BITS / 64]; /* phrases of one word */
};

/* Loads the embedded file path: the lines of section "[names[k]]" are
 * phrases of class k, other sections (and those whose name is NULL, for a
 * table of some classes only) are skipped; min_words[k], when given,
 * is the fewest words a phrase of class k may have. Phrases longer than
 * PHRASE_MAX words are skipped. 0, or -1 when the file is missing or memory
 * runs out (the table is then empty). */
int phrases_load(struct phrases *p, const char *path, const char *const *names, int nnames,
                 const unsigned char *min_words);

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
