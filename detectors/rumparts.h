/* rumparts.h: the parts of check_rumination, shared by its files (the
 * tool's interface is in detect.h). rumination.c holds the model; the rest
 * is how a prompt's words are found and compared fast:
 *   rumwords.c    what a word is: cut, stemmed, looked up in the lexicon
 *   rumcompare.c  the prompt prepared once, and compared with each item
 *   rumtables.c   one call's memory: the arena, the word memo, the maps
 *   rumobjects.c  the things a text names (numbers, identifiers, quotes)
 * Nothing here outlives a call but the lexicon, built once. */
#ifndef KEEL_RUMPARTS_H
#define KEEL_RUMPARTS_H

#include "lexicon.h"
#include "stem.h"
#include "text.h"

#include <stddef.h>
#include <stdint.h>

#define FNV_OFFSET 1469598103934665603ULL
#define FNV_PRIME  1099511628211ULL
#define STEM_MAX   64 /* longer words are stemmed on their first 64 bytes */
#define RUN_NUMBER 0x6E756D6265720A01ULL /* every number, as runs of words see it */

/* A number (digits, and , . between them) is one word to runs of words:
 * "crash on line 212" and "crash on line 208" put the question the same
 * way; whether they ask about the same thing is for objects_of. */
static inline uint64_t run_word(const char *s, size_t n, uint64_t raw)
{
    int digit = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] >= '0' && s[i] <= '9')
            digit = 1;
        else if (s[i] != ',' && s[i] != '.')
            return raw;
    }
    return digit ? RUN_NUMBER : raw;
}

/* One call's memory: a block on the caller's stack, then blocks from the
 * heap, each twice the one before, all given back at once. A table that grows
 * leaves its old copy behind until then (never more than as much again). A
 * call with a short history makes no heap allocation here at all. Under
 * AddressSanitizer each allocation is its own heap block, so that it is
 * checked on its own. */
struct arena {
    char *p;
    size_t used, cap;
    void *heap; /* heap blocks, linked through their first 16 bytes */
    size_t next; /* the size of the next one */
};

/* What a word of the history found when it was first compared, in one call:
 * a word seen again (most are) costs a table probe, not a stem, lexicon
 * lookups, prefix chains and typo probes. Keyed by the word's hash in text
 * that is not all ASCII, and by a faster hash of its lower-cased bytes
 * (ascii_key) in text that is. The table's slots are 16 bytes, so the few
 * thousand distinct words of a long history stay in cache; what every
 * occurrence of a word needs (its hash and stem, and its count in the item
 * being compared) is in a dense array by entry number, and the rest (its key
 * and the prompt's keys it holds) further out. */
#define MS_CONTENT  1u /* a content word (its key is not 0) */
#define MS_END      2u /* the last word of some phrase (LEX_END) */
#define MS_FOREIGN  4u /* a content word that holds no key of the prompt and is none of its names */
#define MS_NH_SHIFT 3 /* bits 3-6: how many keys it holds (at most PENDING_MAX) */
#define MS_E_SHIFT  8 /* bits 8-31: entry number */
struct mslot {
    uint64_t key; /* 0: empty */
    uint32_t meta; /* entry number, hit count and MS_* flags */
    uint32_t pad;
};
struct ment {
    uint64_t raw, stem; /* the word's hash for runs (struct word's runh) and its stem's */
    uint64_t seen; /* the item it was last seen in (bits 0-31), and there how often (32-47) and how
                                often inside a frame (48-63); an item has fewer than 2^16 words */
};
#define SEEN_CNT  (1ULL << 32)
#define SEEN_FCNT (1ULL << 48)
struct mcold {
    uint64_t key;
    uint32_t hoff, nh; /* the prompt's keys it holds: pool[hoff .. hoff + nh) */
};
struct memo {
    struct arena *ar;
    struct mslot *s;
    size_t mask, n;
    struct ment *ent;
    struct mcold *cold;
    size_t cape;
    uint32_t *pool;
    size_t npool, cappool;
};

/* One word as the comparison sees it. */
struct word {
    uint64_t raw; /* hash of the normalised word (text.h) */
    uint64_t runh; /* what runs of words see: raw, or RUN_NUMBER for a number */
    uint64_t stem; /* hash of its stem (phrases are matched on stems) */
    uint64_t lraw; /* the hash the stoplist is asked about when not raw: the word after an elision, else 0 */
    uint64_t key; /* content key: stem or concept; 0 for a stopword */
    uint64_t key2; /* an ideograph pair, else 0 */
    uint64_t concept; /* concept key of a phrase ending here, else 0 */
    unsigned plen; /* phrase length (words) when concept is set */
    unsigned slen; /* stem length in bytes (ASCII stems only), for prefixes */
    unsigned name; /* capitalised inside a sentence (ASCII text only): names a thing */
    char sb[STEM_MAX]; /* the stem's bytes (ASCII stems only), for typos */
    uint32_t vs; /* the lexicon's flags for the stem (LEX_*) */
    uint64_t p3; /* hash of the stem's first 3 bytes, 0 if shorter */
    struct mslot *slot; /* what comparing this word found before, in this call */
    uint64_t mkey; /* its key in the memo: its hash, or an ideograph's stem (a word that normalises to an
                             ideograph has its hash, and is not one) */
    uint64_t ph[STEM_MAX]; /* ph[i]: hash of the stem's first i+1 bytes */
};

/* The lexicon: stopwords (by word hash), concept words (by stem) and concept
 * phrases (by the hash of their stems), in one open-addressing table built
 * once from detectors/data/stopwords.txt and concepts.txt. */
#define LEX_STOP      1u /* a stopword */
#define LEX_END       2u /* the last word of some phrase */
#define LEX_LEN_SHIFT 2 /* bits 2-4: a phrase's length in words */
#define LEX_ID_SHIFT  8 /* concept number + 1 */
#define LEX_SIZE      8192 /* to begin with: the stopwords and English concepts */
#define PHRASE_SALT   0x50485253ULL
#define CONCEPT_SALT  0x434F4E43ULL
#define PHRASE_MAX    4

/* Phrase state along one text: the stems of the last words. */
struct phrase {
    uint64_t s1, s2, s3; /* the stems of the last three words, 0 when none */
};

static inline void phrase_push(struct phrase *ph, uint64_t stem)
{
    ph->s3 = ph->s2;
    ph->s2 = ph->s1;
    ph->s1 = stem;
}

/* Where raw's probe starts. Word hashes (FNV-1a) are close in their low bits
 * for words that differ in their last letters, so the slot is taken from the
 * high bits of a multiplication (short probes, not long clusters). */
static inline size_t memo_home(size_t mask, uint64_t raw)
{
    return (size_t)((raw * 0x9E3779B97F4A7C15ULL) >> 32) & mask;
}

/* The slot of key, or the empty slot where it would go. */
static inline struct mslot *memo_find(const struct memo *m, uint64_t key)
{
    size_t j = memo_home(m->mask, key);
    while (m->s[j].key && m->s[j].key != key)
        j = (j + 1) & m->mask;
    return &m->s[j];
}

typedef void (*word_fn)(void *ctx, struct word *w);

/* Where the words of ASCII text are, cut as text.c's ASCII path cuts them
 * (text_ascii_word_end). */
struct wcut {
    uint32_t *a, *z; /* per run: its first byte, and the byte after its last */
    size_t cap; /* bytes of text the buffers are sized for */
};

/* The words of a cut ASCII text, in order. */
struct wscan {
    const uint32_t *a, *z;
    size_t nr, j, last;
    int first;
};

static inline void wscan_init(struct wscan *t, const struct wcut *c, size_t nr)
{
    *t = (struct wscan){c->a, c->z, nr, 0, 0, 1};
}

/* The next word: its bytes [*a, *z), and whether it is capitalised inside a
 * sentence (*name: the first word, or one after . ! ? : or a newline since
 * the word before, is not). 0 at the end. */
static inline __attribute__((always_inline)) int wscan_next(struct wscan *t, const unsigned char *s, size_t *a,
                                                            size_t *z, int *name)
{
    while (t->j < t->nr) {
        size_t i = t->a[t->j], e = t->z[t->j];
        t->j++;
        if (s[i] == '_') { /* only underscores is no word */
            size_t q = i;
            while (q < e && s[q] == '_')
                q++;
            if (q == e)
                continue;
        }
        *name = 0;
        if (s[i] >= 'A' && s[i] <= 'Z' && !t->first) {
            size_t q = t->last;
            while (q < i && s[q] != '.' && s[q] != '!' && s[q] != '?' && s[q] != ':' && s[q] != '\n')
                q++;
            *name = q == i;
        }
        t->first = 0;
        t->last = e;
        *a = i;
        *z = e;
        return 1;
    }
    return 0;
}

/* The word s[0..n) lower-cased: its hash (text.h) and its first STEM_MAX
 * bytes in buf. */
static inline uint64_t word_lower(const unsigned char *s, size_t n, char *buf)
{
    uint64_t h = FNV_OFFSET;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = s[i] >= 'A' && s[i] <= 'Z' ? s[i] | 0x20 : s[i];
        h ^= ch;
        h *= FNV_PRIME;
        if (i < STEM_MAX)
            buf[i] = (char)ch;
    }
    return h;
}

/* An open-addressing map from 64-bit values (never 0) to dense indices,
 * grown as it fills: sized to the distinct values, not to the words they came
 * from, it touches few pages. */
struct map {
    struct arena *ar;
    uint64_t *k;
    uint32_t *v;
    size_t mask, n;
    int oom; /* an add failed for want of memory */
};

/* Index of key, added when add is set; -1 when absent. */
static inline long map_get(const struct map *m, uint64_t key)
{
    size_t j = key & m->mask;
    while (m->k[j]) {
        if (m->k[j] == key)
            return m->v[j];
        j = (j + 1) & m->mask;
    }
    return -1;
}

/* A stem of the current prompt, for prefix matching. */
struct pre {
    uint32_t key; /* its content key's index */
    uint32_t len; /* stem length */
    uint32_t next; /* next stem with the same first 4 bytes, + 1 */
    uint32_t off; /* its prefix hashes in cur.ph */
};

#define PREFIX_MIN  4
#define RUN         3 /* a shared run of this many words is a frame */
#define PENDING_MAX 8
#define FRAME_MAXC  1 /* a run with at most this many content words is a frame */
#define LONG_RUNS   6 /* this many shared runs in a row (8 words) are a frame */
#define PASTE_RUNS  6 /* this many in a row (8 words) is a passage pasted again */
#define MARK_BACK                                                                                                      \
    16 /* words a shared run marks back at most (a streak's first words are marked as it
                                 reaches LONG_RUNS, so none further back is ever left unmarked) */
#define RUN_BITS_MAX   16 /* the runs' bitset: up to 2^16 bits, a probe of the runs map only on a set bit */
#define TYPO_MIN       5 /* stems this long match one edit away (a typo) */
#define TEMPLATE_SHARE 0.75 /* of the words other than names: the same question */
#define SWAP_COVER     0.75 /* of the prompt's words in runs it shares: the same sentence */
#define SWAP_MAX       2 /* words swapped for others: the same question about another thing */
#define COMMAND_WORDS  8 /* a prompt this short holding an instruction to go on is one */
#define THIN_KEYS      2 /* a prompt with this few content keys is matched only by an item saying no more */
#define HOP_SIM        0.35 /* an ask found through another reaches this similarity with it */
#define OBJ_TEXT_MAX   2048 /* a longer text is pasted material: its names are not compared */
#define OBJ_MAX        64 /* things a prompt names, compared; more is a pasted text */

/* The current prompt, prepared once for comparing with every history item. */
struct cur {
    struct arena *ar; /* where all of it lives */
    struct map keys; /* content keys -> index */
    struct map p4; /* hash of a stem's first 4 bytes -> pre index + 1 */
    struct pre *pre;
    size_t npre;
    uint64_t *ph; /* prefix hashes of the stems in pre */
    size_t nph, capph;
    uint32_t *hit; /* per key: stamp of the last item that held it */
    const unsigned char *topic; /* per key: 1 when it is what the session is about (rum_run), or NULL */
    size_t ntopic; /* keys so marked */
    uint32_t *nst; /* per key: stamp of the last item where an occurrence held it */
    uint32_t *nfree; /* per key: how many occurrences of the item hold it outside a frame (valid
                                 while nst is this item's stamp) */
    uint32_t *seen; /* per key: stamp of the last item whose framed words fcnt counts */
    uint32_t *fcnt; /* per key: how many of its places in the prompt are framed in that item */
    uint32_t *pcount; /* per key: its places in the prompt (a word's key and pair key) */
    uint32_t *rlist, nrl; /* the runs the item shares */
    uint32_t *klist, nkl; /* the keys stored by single occurrences in the item (nst) */
    size_t nfk; /* keys the item holds outside frames */
    /* Bitmaps over the prompt's words (bit i of word i / 64, nwb words and
     * a zero one after): the runs the item shares (by first word), the runs
     * with at most FRAME_MAXC content words, its content words, its frame,
     * and the first runs of LONG_RUNS shared ones in a row. */
    uint64_t *bh, *blow, *bcont, *bfr, *b6;
    size_t nwb;
    uint32_t *roff, *rpos; /* the places of run r: rpos[roff[r] .. roff[r + 1]) */
    struct map runs; /* hashes of the prompt's runs of RUN words -> index */
    uint32_t *run_hit; /* per run: stamp of the last item that holds it */
    long *ki, *ki2, *ri; /* per word: key index, pair-key index, run index */
    /* while building */
    struct cword { /* the prompt's words */
        uint64_t raw, stem, key, key2, concept;
        uint32_t plen, slen, off; /* off: its prefix hashes in ph */
        uint32_t name;
        uint64_t p3; /* hash of the stem's first 3 bytes, 0 if shorter */
        uint32_t boff; /* its stem's bytes in sbytes (typos) */
        uint64_t runh; /* what runs of words see (struct word) */
    } * w;
    char *sbytes;
    size_t nsb, capsb;
    struct memo memo; /* the history's words, as compared with this prompt */
    struct map dels; /* hashes of the stems with one byte deleted -> index into dk */
    uint32_t *dk; /* per dels entry: the key index it came from */
    /* per length: the first bytes (as bits, the byte's low 6) of the ASCII
     * stems among keys and dels, so that a word none of whose deletions
     * can begin so is not hashed 'a typo away' byte by byte */
    uint64_t typo_first[STEM_MAX + 1];
    long *names; /* key indices of the prompt's names */
    struct map name3; /* hashes of their first three letters */
    size_t nnames;
    size_t pwords; /* content words that gave way to a phrase's concept */
    size_t nw, capw;
    int oom;
    /* while comparing */
    uint32_t stamp;
    size_t shared; /* keys held anywhere in the item */
    /* The item's words as they stream past (kept in registers while an
     * ASCII item is compared). */
    struct occ {
        size_t nitem; /* words of the item so far */
        size_t nel; /* memo entries it has shown */
        size_t rest; /* its content words outside shared runs */
        uint64_t a1, a2, b1; /* RUN_A times the hash of its last word and the one before, RUN_B times its last */
        unsigned streak; /* shared runs in a row ending at its last word */
        int any_run; /* it shares a run with the prompt */
        int foreign; /* it names something the prompt does not */
        size_t covered; /* the prompt's words inside runs it shares */
        int passage; /* it shares a passage of PASTE_RUNS runs in a row (pasted text) */
        int swap; /* the prompt's sentence with a word or two swapped */
        size_t only; /* its distinct content words that hold none of the prompt's keys */
    } o;
    uint64_t *rbits; /* a bit per run hash (its top bits): most item words end no run of the prompt */
    unsigned rshift; /* 64 - log2 of the bitset's size: about 64 bits a run, up to 2^RUN_BITS_MAX */
    /* The item's last words, until no shared run can reach back to them:
     * its flags and the keys it holds, taken back out when it is framed. */
    struct rword {
        uint32_t e; /* its memo entry */
        unsigned char flags; /* LF_CONTENT, LF_FRAMED */
        unsigned char n;
        uint32_t k[2]; /* keys held by this occurrence only (nfree) */
    } ring[MARK_BACK];
    uint32_t *elist; /* the memo entries seen in the item */
    size_t capel;
    uint32_t *freek; /* per key: stamp of the last item that holds it outside a frame */
    struct wcut cut; /* where an ASCII item's words are */
    unsigned char *run_c; /* per run: its content words */
    /* How the prompt asks (asking.h) and what about. */
    unsigned asks; /* ASK_* kinds of phrase it holds */
    int plea; /* it pleads or says it asks again (cur_pleads): 1, 0, or -1 not yet known */
    const char *pt; /* the prompt */
    size_t pn;
    long *subj; /* its content keys outside those phrases: what it asks about */
    size_t nsubj;
    int other; /* the item compared last asks the same way about another thing */
    int worry; /* it was linked as the same worry (same_worry), not by its words */
};

/* The things a text names, by which two questions with the same words ask
 * about different things: a token with a digit (PR 412, v2.3, port 8080), a
 * token with code punctuation inside (file.ts, src/app, snake_case, a@b,
 * #12, a=b), camelCase (OrderList, getServerSideProps), a span in
 * backticks or quotes of at most 64 bytes, and a Latin-script word in text
 * that is mostly in another script. Each is kept as a hash of its bytes
 * lower-cased (a leading # dropped; a number by its digits: 5,000 and 5k are
 * 5000). More than OBJ_MAX of them, or a text of more than OBJ_TEXT_MAX
 * bytes, is pasted material, which is not compared this way. */
struct objs {
    uint64_t h[OBJ_MAX];
    uint64_t num; /* bit i: h[i] is a number */
    unsigned n;
    int many;
};

/* rumtables.c */
void ar_init(struct arena *a, void *buf, size_t n);
void ar_release(struct arena *a);
void *ar_alloc(struct arena *a, size_t n);
void *ar_zalloc(struct arena *a, size_t n);
void *ar_grow(struct arena *a, const void *old, size_t n, size_t want);
void *ar_room(struct arena *a, const void *old, size_t n, size_t need, size_t sz, size_t *cap, size_t first);
int memo_init(struct memo *m, size_t cap, struct arena *ar);
struct mslot *memo_add(struct memo *m, uint64_t key, const struct word *w);
int wcut_reserve(struct wcut *c, size_t n, struct arena *ar);
size_t ascii_runs(const unsigned char *s, size_t n, struct wcut *c);
int map_init(struct map *m, struct arena *ar);
long map_add(struct map *m, uint64_t key);

/* rumwords.c: rum_lang is the language of the call's prompt, in which every
 * word of the call is stemmed. */
extern enum stem_lang rum_lang;
uint64_t stem_ascii(const char *b, size_t n, struct word *w);
/* The lexicon for a prompt in lang (the baked one, or read from the files
 * the first time): lang's own groups are then looked up first. */
void lex_init(enum stem_lang lang);
size_t lex_size(void); /* entries in the lexicon */
uint32_t lex_get(uint64_t k); /* k's LEX_* bits and concept, 0 if none */
void lex_put(uint64_t k, uint32_t v); /* adds bits to k's (the lexicon grows for it) */
size_t lex_room(void); /* and its slots (tests: every language's groups fit) */

void word_lex(struct word *w, int stem_is_raw);
uint64_t phrase_at(uint64_t stem, const struct phrase *ph, unsigned *plen);
int words_unicode(const char *s, size_t n, struct text_words *tw, struct memo *m, word_fn fn, void *ctx);
int each_word(const char *s, size_t n, struct text_words *tw, struct arena *ar, word_fn fn, void *ctx);

/* rumcompare.c */
int cur_init(struct cur *c, const char *s, size_t n, struct text_words *tw, struct arena *ar);
int cur_similarity(struct cur *c, const char *s, size_t n, struct text_words *tw, uint32_t stamp, double *sim);
int cur_pleads(struct cur *c);

/* rumobjects.c */
void objects_of(const char *s, size_t n, struct objs *o);
int all_numbers(const struct objs *o);
int objects_differ(const struct objs *a, const struct objs *b);
int objects_same(const struct objs *a, const struct objs *b);

#endif
