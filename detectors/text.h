/* text.h: from raw UTF-8 to comparable words.
 *
 * Every detector sees text the same way: the input is cut into words by the
 * Unicode word-break rules (UAX #29, libunistring), so text in any script
 * tokenises; each word is normalised (NFKC + full case folding, typographic
 * apostrophes folded to ') and reduced to a 64-bit hash. Words keep their byte
 * offsets in the original text, so a detector can quote exactly what it saw,
 * and a sentence number, so rules can look at "the same sentence".
 *
 * Comparing hashes instead of strings makes set operations cheap; with 64 bits
 * a collision among the few thousand words of one call is below 1e-11. */
#ifndef KEEL_TEXT_H
#define KEEL_TEXT_H

#include <stddef.h>
#include <stdint.h>

struct text_word {
    uint32_t start, end; /* byte offsets in the original text */
    uint32_t sentence; /* 0-based sentence index */
    uint64_t hash; /* hash of the normalised word */
};

struct text_words {
    struct text_word *v;
    size_t n, cap;
};

/* A sorted set of distinct word hashes. */
struct text_set {
    uint64_t *v;
    size_t n;
};

/* ASCII bytes by how they make words (UAX #29 below 0x80): a letter, a
 * digit, a word byte (letter, digit, _), a byte that joins two letters
 * (' . :), one that joins two digits (, ; ' .). Bytes from 0x80 are none. */
enum { TEXT_L = 1, TEXT_D = 2, TEXT_W = 4, TEXT_JL = 8, TEXT_JD = 16 };
extern const unsigned char text_ascii_class[256];

/* The end of the ASCII word that begins at s[i], a word byte, in ASCII
 * s[0..n): word bytes, joined across a joiner between two letters or two
 * digits. The ASCII path of text_words and check_rumination's both cut so. */
/* 1 when the byte at s[i], after a word byte, joins it to the word byte
 * after it (a joiner between two letters or two digits). */
static inline int text_ascii_joins(const unsigned char *s, size_t n, size_t i)
{
    const unsigned char *k = text_ascii_class;
    unsigned j = i + 1 < n ? k[s[i]] : 0; /* most words end at a space: no joiner */
    if (!(j & (TEXT_JL | TEXT_JD)))
        return 0;
    unsigned p = k[s[i - 1]] & k[s[i + 1]];
    return (j & TEXT_JL && p & TEXT_L) || (j & TEXT_JD && p & TEXT_D);
}

static inline size_t text_ascii_word_end(const char *str, size_t n, size_t i)
{
    const unsigned char *s = (const unsigned char *)str;
    for (;;) {
        while (++i < n && (text_ascii_class[s[i]] & TEXT_W))
            ;
        if (!text_ascii_joins(s, n, i))
            return i;
    }
}

/* The length of s's leading run of ASCII bytes, eight bytes at a time. */
size_t text_ascii_prefix(const char *s, size_t n);
/* 1 if s[0..n) is valid UTF-8. */
int text_valid_utf8(const char *s, size_t n);

/* Number of Unicode code points in valid UTF-8. */
size_t text_char_count(const char *s, size_t n);

/* Cut and normalise; appends to out (reset out->n first to reuse its memory).
 * Returns 0, or -1 when memory runs out. s must be valid UTF-8. */
int text_words(const char *s, size_t n, struct text_words *out);
void text_words_free(struct text_words *w);

/* text_words always through libunistring (text that is all ASCII takes a
 * faster path with the same results; tests compare the two). */
int text_words_unicode(const char *s, size_t n, struct text_words *out);

/* Hash of one word after normalisation (for phrase and stop lists). */
uint64_t text_word_hash(const char *s, size_t n);

/* Distinct hashes of w; with drop_stop, words on the stoplist are left out. */
int text_set_from_words(const struct text_words *w, int drop_stop, struct text_set *out);
/* Makes s a set: its values sorted, each once (for a set filled by hand). */
void text_set_settle(struct text_set *s);
void text_set_free(struct text_set *s);

/* |a ∩ b|: how many words two sets share. */
size_t text_set_intersect(const struct text_set *a, const struct text_set *b);

int text_is_stopword(uint64_t hash);

/* The bytes of a French or Italian elision that opens word s[0..n) ("l'",
 * "qu'", "c'", "dell'", "un'"; ASCII letters in either case, then '), when a
 * word follows it: "l'asthme" is "asthme" after "l'", "c'est" is "est". 0
 * when there is none. The word cutters keep an apostrophe between letters
 * inside a word ("don't", "it's"), so the word the elision is glued to is
 * found here. */
size_t text_elision_at(const char *s, size_t n, size_t k); /* the apostrophe at s[k] */
static inline size_t text_elision(const char *s, size_t n)
{
    size_t m = n < 8 ? n : 8; /* the longest elision, "lorsqu'", is 7 bytes */
    for (size_t k = 1; k < m; k++)
        if (s[k] == '\'' || s[k] == '\xE2')
            return text_elision_at(s, n, k);
    return 0;
}

/* keel's one general hash of bytes (64 bits, seeded; a multiply-mix of 16
 * bytes at a time): the loop detector's identities, a host session's key in
 * the state file, the tools a client was given. Not for anything an
 * adversary must not collide. */
uint64_t text_hash(const void *p, size_t n, uint64_t seed);

/* The same kind of hash over bytes that arrive in pieces (a result passed on
 * as it is read): the value depends on the bytes, not on how they were cut,
 * but it is not text_hash's value for them. */
struct text_hasher {
    uint64_t lane[4], total;
    unsigned char buf[64];
    size_t bufn;
};
void text_hasher_init(struct text_hasher *t, uint64_t seed);
void text_hasher_add(struct text_hasher *t, const void *p, size_t n);
uint64_t text_hasher_end(const struct text_hasher *t);
/* The hasher's value for p[0..n) in one piece. */
uint64_t text_hash_pieces(const void *p, size_t n, uint64_t seed);

/* 1 when code point c ends a sentence as a reader sees it: . ! ? or the
 * full-width 。！？ of Chinese and Japanese. */
static inline int text_full_stop(uint32_t c)
{
    return c == '.' || c == '!' || c == '?' || c == 0x3002 || c == 0xFF01 || c == 0xFF1F;
}

/* A NUL-terminated copy of n bytes (a message, an id), or NULL. */
char *text_dup(const char *s, size_t n);

/* A NUL-terminated copy of s[0..n) that is valid UTF-8 without NUL: a byte
 * that is not UTF-8 (a paste from another encoding, a truncated character)
 * reads as U+FFFD and a NUL as a space, as a terminal shows them, so the
 * rest of the text is still read. *len: its length; *repaired: 1 when it
 * differs from s. NULL out of memory. */
char *text_repair(const char *s, size_t n, size_t *len, int *repaired);

/* Calls fn for each non-empty, non-comment line of an embedded list file;
 * lines are trimmed. Returns the number of lines seen. */
size_t text_each_line(const char *data, void (*fn)(const char *line, size_t n, void *ctx), void *ctx);

/* How deep the flow collections ([ ] { }) of YAML text s[0..n) nest,
 * outside quotes and comments; stops counting past max (returns max + 1).
 * libyaml's scanner takes time that grows with the square of that depth,
 * so a file is refused on it before it is parsed. */
int text_yaml_flow_depth(const char *s, size_t n, int max);

#endif
