/* rumination.c: check_rumination, heuristic concept_containment 0.6.0.
 *
 * The question: has the person asked nearly this same thing several times in
 * the last while? rum_run answers it on plain text; rum_check is the tool's
 * JSON wrapper (arguments checked, the contract's output built).
 *
 * What a prompt is about. Its words (text.h) less the stoplist (function
 * words of eight languages, contractions, the light verbs make and get),
 * stemmed by Snowball in the language its function words say (stem.h); Han
 * characters alone and in neighbouring pairs, kana only in pairs. Words and
 * short phrases of one group in data/concepts.txt count as one concept; a
 * stem of 4+ letters matches a longer stem it begins, one of 5+ a stem one
 * edit away. An earlier prompt's similarity is the share of this prompt's
 * words or concepts it also holds (containment).
 *
 * What is not asking again, and scores 0: the way a question is asked (a
 * shared run of 3 words with at most 1 content word, "how do I clear"), a
 * shared passage of 8+ words (pasted context), both left out on both sides;
 * the same question about another named thing ("a visa for Japan", "...
 * Canada"); the same frame about other things (objects_of: numbers,
 * identifiers, paths, quotes); the same sentence with a word or two swapped,
 * unless both name the same things (objects_same). With only_asks (keel's
 * hooks and overlay) a prompt that asks nothing is an instruction, and an
 * earlier instruction is never an earlier ask; a short "continue" never
 * fires.
 *
 * What is asking again in other words: a plea for reassurance, or a prompt
 * that says it asks again (asking.h), matches an earlier such ask sharing a
 * content word with it (same_worry); and an earlier ask reaching HOP_SIM with
 * one the prompt matched is the same thing in words that drift (a hop).
 *
 * It fires when threshold_count (3) earlier prompts inside window_minutes
 * (90) reach similarity_threshold (0.25); confidence grows with how far they
 * clear it.
 *
 * How it is fast (make bench: 500 items of 8,000 characters in 26 to 30 ms):
 * ASCII text is cut into words in one pass with a table of byte classes (the
 * same words as the libunistring path; tests/unit/test_rumination.c compares
 * them); each distinct word of the history is analysed once per call (a
 * memo), an item's words are then only looked up; a call's memory is one
 * arena. History is the caller's and is never kept: the detector is a pure
 * function. */
#include "detect.h"
#include "text.h"
#include "timefmt.h"

#include "asking.h"
#include "embed.h"
#include "stem.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unicase.h>
#include <uninorm.h>

#define RUM_MAX_PROMPT  8000
#define RUM_MAX_HISTORY 500
#define RUM_SKEW_MS     60000 /* history may be this far in the future (clock skew) */
#define RUM_SIM_DEFAULT 0.25

static int by_sim(const void *a, const void *b)
{
    const struct rum_match *x = a, *y = b;
    if (x->sim != y->sim)
        return x->sim < y->sim ? 1 : -1;
    return x->index < y->index ? 1 : -1; /* then the most recent first */
}

static const char rum_check_description[] =
    "Share of this prompt's content words (NFKC, case-folded, stoplist removed, Snowball stems in the prompt's "
    "language, words and phrases of one concept group as one concept, a stem of 4+ letters matching a longer one it "
    "begins, a stem of 5+ matching one edit away; Han characters alone and kana only with a neighbour) found in each "
    "prompt in the window; shared runs of 3 words with at most 1 content word, and shared passages of 8+ words, are "
    "the question's frame and are left out; the same question about another named thing, about other things named "
    "(numbers, identifiers, paths, quoted text), or with a word or two swapped for others does not count, nor does "
    "an item saying more about other things than a prompt of one or two content words; a prompt asking for "
    "reassurance or saying it asks again also counts an earlier such ask on its subject; an earlier ask found "
    "through another that matched counts too; a short instruction to go on never fires. Fires when threshold_count "
    "or more reach similarity_threshold.";

double rum_confidence(double mean, double sim_thr)
{
    double excess = sim_thr < 1 ? (mean - sim_thr) / (1 - sim_thr) : 1;
    return 0.6 + 0.39 * (excess < 0 ? 0 : excess > 1 ? 1 : excess);
}

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

static uint64_t mix(uint64_t a, uint64_t b)
{
    uint64_t h = (a ^ (b + 0x9E3779B97F4A7C15ULL + (a << 6) + (a >> 2))) * 0xBF58476D1CE4E5B9ULL;
    h ^= h >> 31;
    return h ? h : 1;
}

/* The hash of s[0..n) without its byte at i, as stem_ascii hashes a stem,
 * given ph[j], the hash of s[0..j] (stem_ascii's prefix hashes). */
static inline uint64_t del_hash(const char *s, size_t n, size_t i, const uint64_t *ph)
{
    uint64_t h = i ? ph[i - 1] : FNV_OFFSET;
    for (size_t j = i + 1; j < n; j++) {
        h ^= (unsigned char)s[j];
        h *= FNV_PRIME;
    }
    return h ? h : 1;
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

static void ar_init(struct arena *a, void *buf, size_t n)
{
    *a = (struct arena){buf, 0, n, NULL, n < 32768 ? 65536 : 2 * n};
}

static void ar_release(struct arena *a)
{
    while (a->heap) {
        void *next = *(void **)a->heap;
        free(a->heap);
        a->heap = next;
    }
}

/* n bytes, 16-aligned; NULL when memory runs out. */
static void *ar_alloc(struct arena *a, size_t n)
{
#ifdef __SANITIZE_ADDRESS__
    char *b = malloc(16 + n); /* exactly n: an overrun of even a byte is seen */
    if (!b)
        return NULL;
    *(void **)b = a->heap;
    a->heap = b;
    return b + 16;
#else
    n = (n + 15) & ~(size_t)15;
    if (n > a->cap - a->used) {
        size_t sz = a->next;
        while (sz - 16 < n)
            sz *= 2;
        char *b = malloc(sz);
        if (!b)
            return NULL;
        *(void **)b = a->heap;
        a->heap = b;
        a->p = b + 16;
        a->cap = sz - 16;
        a->used = 0;
        a->next = sz * 2;
    }
    void *r = a->p + a->used;
    a->used += n;
    return r;
#endif
}

static void *ar_zalloc(struct arena *a, size_t n)
{
    void *p = ar_alloc(a, n);
    if (p)
        memset(p, 0, n);
    return p;
}

/* A copy of old (n bytes) in want bytes. */
static void *ar_grow(struct arena *a, const void *old, size_t n, size_t want)
{
    void *p = ar_alloc(a, want);
    if (p && n)
        memcpy(p, old, n);
    return p;
}

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

/* The language of the call's prompt (stem.h), in which every word of the
 * call is stemmed; the lexicon is built in English. */
static enum stem_lang rum_lang = STEM_EN;

/* The stem of a lower-case word b[0..n): Snowball's in rum_lang, hashed; a
 * stem that is ASCII keeps its bytes and their prefix hashes, for prefix and
 * typo matching. */
static uint64_t stem_ascii(const char *b, size_t n, struct word *w)
{
    size_t l;
    const char *t = stem_word(rum_lang, b, n, &l);
    if (l > STEM_MAX)
        l = STEM_MAX;
    uint64_t h = FNV_OFFSET;
    int ascii = 1;
    for (size_t i = 0; i < l; i++) {
        h ^= (unsigned char)t[i];
        h *= FNV_PRIME;
        w->ph[i] = h;
        ascii &= (unsigned char)t[i] < 0x80;
    }
    if (ascii)
        memcpy(w->sb, t, l);
    w->slen = ascii ? (unsigned)l : 0;
    return h ? h : 1;
}

/* The stem of a word that is not ASCII: its NFKC case fold, stemmed. */
static uint64_t stem_folded(const char *s, size_t n, uint64_t raw, struct word *w)
{
    uint8_t buf[64];
    size_t len = sizeof buf;
    uint8_t *f = u8_casefold((const uint8_t *)s, n, NULL, UNINORM_NFKC, buf, &len);
    uint64_t k = mix(raw, 11);
    w->slen = 0;
    if (!f)
        return k;
    k = stem_ascii((const char *)f, len, w);
    if (f != buf)
        free(f);
    return k;
}

/* A Han, Hiragana or Katakana character standing alone as a word: IDEO_HAN,
 * IDEO_HIRA or IDEO_KATA; 0 for any other word. */
enum { IDEO_HIRA = 1, IDEO_KATA = 2, IDEO_HAN = 3 };
static int ideograph(const char *s, size_t n)
{
    if (n != 3 || ((unsigned char)s[0] & 0xF0) != 0xE0)
        return 0;
    unsigned c = ((unsigned)(s[0] & 0x0F) << 12) | ((unsigned)(s[1] & 0x3F) << 6) | (unsigned)(s[2] & 0x3F);
    if (c >= 0x3040 && c <= 0x309F)
        return IDEO_HIRA;
    if (c >= 0x30A0 && c <= 0x30FF)
        return IDEO_KATA;
    return (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x4E00 && c <= 0x9FFF) ? IDEO_HAN : 0;
}

/* The lexicon: stopwords (by word hash), concept words (by stem) and concept
 * phrases (by the hash of their stems), in one open-addressing table built
 * once from detectors/data/stopwords.txt and concepts.txt. */
#define LEX_STOP      1u /* a stopword */
#define LEX_END       2u /* the last word of some phrase */
#define LEX_LEN_SHIFT 2 /* bits 2-4: a phrase's length in words */
#define LEX_ID_SHIFT  8 /* concept number + 1 */
#define LEX_SIZE      8192
#define PHRASE_SALT   0x50485253ULL
#define CONCEPT_SALT  0x434F4E43ULL
#define PHRASE_MAX    4

static uint64_t lex_k[LEX_SIZE];
static uint32_t lex_v[LEX_SIZE];
static size_t lex_n;

/* A bit for the last two stems of every phrase (mix of the two): most words
 * that can end a phrase follow a word that ends none with them, and are
 * ruled out by one bit instead of three lexicon probes. */
#define PAIR_BITS 14
static uint64_t lex_pair[(1u << PAIR_BITS) / 64];

static inline size_t pair_bit(uint64_t h)
{
    return (size_t)(h >> (64 - PAIR_BITS));
}

static uint32_t lex_get(uint64_t k)
{
    for (size_t j = k & (LEX_SIZE - 1); lex_k[j]; j = (j + 1) & (LEX_SIZE - 1))
        if (lex_k[j] == k)
            return lex_v[j];
    return 0;
}

/* Adds bits to k's value; a concept already set is kept (the first group wins). */
static void lex_put(uint64_t k, uint32_t v)
{
    size_t j = k & (LEX_SIZE - 1);
    while (lex_k[j] && lex_k[j] != k)
        j = (j + 1) & (LEX_SIZE - 1);
    if (!lex_k[j]) {
        if (lex_n >= LEX_SIZE / 2)
            return;
        lex_k[j] = k;
        lex_n++;
    }
    if ((lex_v[j] >> LEX_ID_SHIFT) && (v >> LEX_ID_SHIFT))
        v &= (1u << LEX_ID_SHIFT) - 1;
    lex_v[j] |= v;
}

static void lex_stop(const char *line, size_t n, void *ctx)
{
    (void)ctx;
    lex_put(text_word_hash(line, n), LEX_STOP);
}

static uint64_t word_stem(const char *s, size_t n, uint64_t raw, struct word *w)
{
    size_t j = 0;
    while (j < n && (unsigned char)s[j] < 0x80)
        j++;
    if (j < n)
        return stem_folded(s, n, raw, w);
    char b[STEM_MAX];
    size_t m = n < STEM_MAX ? n : STEM_MAX;
    for (size_t i = 0; i < m; i++)
        b[i] = s[i] >= 'A' && s[i] <= 'Z' ? (char)(s[i] + 32) : s[i];
    return stem_ascii(b, m, w);
}

/* One line of concepts.txt: entries separated by commas, each one word or a
 * phrase of up to PHRASE_MAX words. */
static void lex_concept(const char *line, size_t n, void *ctx)
{
    unsigned *id = ctx;
    struct text_words tw = {0};
    struct word w;
    ++*id;
    size_t a = 0;
    while (a < n) {
        size_t b = a;
        while (b < n && line[b] != ',')
            b++;
        tw.n = 0;
        if (text_words(line + a, b - a, &tw) == 0 && tw.n >= 1 && tw.n <= PHRASE_MAX) {
            uint64_t h = 0, last = 0, before = 0;
            for (size_t i = 0; i < tw.n; i++) {
                const struct text_word *x = &tw.v[i];
                before = last;
                last = word_stem(line + a + x->start, x->end - x->start, x->hash, &w);
                h = i ? mix(h, last) : last;
            }
            if (tw.n >= 2) {
                size_t bit = pair_bit(mix(before, last));
                lex_pair[bit / 64] |= 1ULL << (bit % 64);
            }
            uint32_t v = (*id + 1) << LEX_ID_SHIFT;
            if (tw.n == 1) {
                lex_put(last, v);
            } else {
                lex_put(mix(h, PHRASE_SALT), v | (uint32_t)tw.n << LEX_LEN_SHIFT);
                lex_put(last, LEX_END);
            }
        }
        a = b + 1;
    }
    text_words_free(&tw);
}

static void lex_init(void)
{
    static int done;
    if (done)
        return;
    const struct embed_blob *b = embed_find("detectors/data/stopwords.txt");
    if (b)
        text_each_line(b->data, lex_stop, NULL);
    unsigned id = 0;
    b = embed_find("detectors/data/concepts.txt");
    rum_lang = STEM_EN; /* concepts.txt is English */
    if (b)
        text_each_line(b->data, lex_concept, &id);
    done = 1;
}

/* Phrase state along one text: the stems of the last words. */
struct phrase {
    uint64_t s1, s2, s3; /* the stems of the last three words, 0 when none */
};

/* Fills in w's content key and lexicon flags; raw and stem are set. */
static void word_lex(struct word *w, int stem_is_raw)
{
    uint32_t v = lex_get(w->raw);
    uint32_t vs = stem_is_raw ? v : lex_get(w->stem);
    uint32_t id = vs >> LEX_ID_SHIFT;
    w->key = v & LEX_STOP ? 0 : id ? mix(id, CONCEPT_SALT) : w->stem;
    w->vs = vs;
    w->p3 = w->slen >= 3 ? w->ph[2] : 0;
}

/* The concept of a phrase of concepts.txt ending with stem, given the words
 * before it (its length in *plen), or 0. */
static uint64_t phrase_at(uint64_t stem, const struct phrase *ph, unsigned *plen)
{
    if (!ph->s1)
        return 0;
    size_t bit = pair_bit(mix(ph->s1, stem));
    if (!(lex_pair[bit / 64] >> (bit % 64) & 1))
        return 0; /* no phrase ends with these two stems */
    /* hashed as lex_concept hashes a phrase's stems */
    uint64_t p2 = ph->s2 ? mix(ph->s2, ph->s1) : 0, p3 = ph->s3 ? mix(mix(ph->s3, ph->s2), ph->s1) : 0;
    uint64_t n2 = mix(ph->s1, stem), n3 = p2 ? mix(p2, stem) : 0, n4 = p3 ? mix(p3, stem) : 0;
    uint64_t c[3] = {n4, n3, n2};
    for (int q = 0; q < 3; q++) {
        uint32_t p = c[q] ? lex_get(mix(c[q], PHRASE_SALT)) : 0;
        if (p >> LEX_ID_SHIFT) {
            *plen = (p >> LEX_LEN_SHIFT) & 7;
            return mix(p >> LEX_ID_SHIFT, CONCEPT_SALT);
        }
    }
    return 0;
}

static inline void phrase_push(struct phrase *ph, uint64_t stem)
{
    ph->s3 = ph->s2;
    ph->s2 = ph->s1;
    ph->s1 = stem;
}

static inline void word_phrase(struct word *w, struct phrase *ph)
{
    w->concept = 0;
    if (w->vs & LEX_END) /* only where some phrase can end */
    w->concept = phrase_at(w->stem, ph, &w->plen);
    phrase_push(ph, w->stem);
}

static int memo_init(struct memo *m, size_t cap, struct arena *ar)
{
    memset(m, 0, sizeof *m);
    m->ar = ar;
    m->s = ar_zalloc(ar, cap * sizeof *m->s);
    m->mask = cap - 1;
    return m->s ? 0 : -1;
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

/* Remembers w under key (its hash, stem and key; the keys it holds are
 * added by memo_hits), the table grown first when 7/10 full; NULL when
 * memory runs out. */
static struct mslot *memo_add(struct memo *m, uint64_t key, const struct word *w)
{
    if ((m->n + 1) * 10 > (m->mask + 1) * 7) {
        size_t cap = (m->mask + 1) * 2;
        struct mslot *v = ar_zalloc(m->ar, cap * sizeof *v);
        if (!v)
            return NULL;
        for (size_t i = 0; i <= m->mask; i++)
            if (m->s[i].key) {
                size_t j = memo_home(cap - 1, m->s[i].key);
                while (v[j].key)
                    j = (j + 1) & (cap - 1);
                v[j] = m->s[i];
            }
        m->s = v;
        m->mask = cap - 1;
    }
    if (m->n == m->cape) {
        size_t cap = m->cape ? m->cape * 2 : 64;
        struct ment *h = ar_grow(m->ar, m->ent, m->n * sizeof *h, cap * sizeof *h);
        struct mcold *c = ar_grow(m->ar, m->cold, m->n * sizeof *c, cap * sizeof *c);
        if (!h || !c)
            return NULL;
        m->ent = h;
        m->cold = c;
        m->cape = cap;
    }
    struct mslot *sl = memo_find(m, key);
    size_t e = m->n++;
    m->ent[e] = (struct ment){w->runh, w->stem, 0};
    m->cold[e] = (struct mcold){w->key, 0, 0};
    *sl =
        (struct mslot){key, (uint32_t)e << MS_E_SHIFT | (w->key ? MS_CONTENT : 0) | (w->vs & LEX_END ? MS_END : 0), 0};
    return sl;
}

/* w's stem, key and flags: from the memo when the word was seen before,
 * else by stem(w) and the lexicon (w.slot is then NULL, for item_word to
 * remember it). A seen word's lexicon flags are only LEX_END (all that is
 * asked of them after); its stem length and prefix hashes are not filled in
 * (the keys it holds are known). */
#define ANALYSE(w, m, stem_expr, stem_is_raw)                                                                          \
    do {                                                                                                               \
        struct mslot *s_ = (m) && (m)->s && (w).raw ? memo_find((m), (w).raw) : NULL;                                  \
        if (s_ && s_->key) {                                                                                           \
            size_t e_ = s_->meta >> MS_E_SHIFT;                                                                        \
            (w).stem = (m)->ent[e_].stem, (w).key = (m)->cold[e_].key;                                                 \
            (w).vs = s_->meta & MS_END ? LEX_END : 0;                                                                  \
        } else {                                                                                                       \
            (w).stem = (stem_expr);                                                                                    \
            word_lex(&(w), (stem_is_raw));                                                                             \
            s_ = NULL;                                                                                                 \
        }                                                                                                              \
        (w).slot = s_;                                                                                                 \
    } while (0)

typedef void (*word_fn)(void *ctx, struct word *w);

/* The words of a text through libunistring (text.h), for text that is not
 * all ASCII. */
static int words_unicode(const char *s, size_t n, struct text_words *tw, struct memo *m, word_fn fn, void *ctx)
{
    tw->n = 0;
    if (text_words(s, n, tw) < 0)
        return -1;
    struct word w;
    struct phrase ph = {0, 0, 0};
    int prev_ideo = 0;
    for (size_t i = 0; i < tw->n; i++) {
        const struct text_word *x = &tw->v[i];
        const char *a = s + x->start;
        size_t l = x->end - x->start;
        w.raw = x->hash;
        w.runh = run_word(a, l, w.raw);
        w.key2 = 0;
        w.name = 0;
        w.slen = 0;
        int ideo = ideograph(a, l);
        w.slot = NULL;
        if (ideo) {
            /* A Han character says something on its own; a kana says it
             * only with its neighbour (a katakana word, a verb's ending on
             * its Han stem), and two hiragana together are grammar ("のと",
             * "とき"). */
            w.stem = mix(x->hash, 7);
            w.key = ideo == IDEO_HAN ? w.stem : 0;
            w.vs = 0;
            w.p3 = 0;
            w.concept = 0;
            if (prev_ideo && tw->v[i - 1].end == x->start && !(prev_ideo == IDEO_HIRA && ideo == IDEO_HIRA))
                w.key2 = mix(tw->v[i - 1].hash, x->hash);
            ph.s1 = w.stem;
            ph.s2 = ph.s3 = 0;
            w.mkey = w.stem;
            if (m && m->s && (w.slot = memo_find(m, w.mkey))->key == 0)
                w.slot = NULL; /* not seen before */
        } else {
            w.mkey = w.raw;
            ANALYSE(w, m, word_stem(a, l, x->hash, &w), 0);
            word_phrase(&w, &ph);
        }
        prev_ideo = ideo;
        fn(ctx, &w);
    }
    return 0;
}

/* Where the words of ASCII text are, cut as text.c's ASCII path cuts them
 * (text_ascii_word_end). */
struct wcut {
    uint32_t *a, *z; /* per run: its first byte, and the byte after its last */
    uint64_t *key; /* per word: its memo key (item_ascii) */
    size_t cap; /* bytes of text the buffers are sized for */
};

/* Sizes c for n bytes of text; -1 when memory runs out. */
static int wcut_reserve(struct wcut *c, size_t n, struct arena *ar)
{
    if (c->a && n <= c->cap)
        return 0;
    size_t nr = n / 2 + 1; /* a run and the byte after it */
    c->a = ar_alloc(ar, 2 * nr * sizeof *c->a);
    c->key = ar_alloc(ar, nr * sizeof *c->key);
    if (!c->a || !c->key) {
        c->a = NULL;
        return -1;
    }
    c->z = c->a + nr;
    c->cap = n;
    return 0;
}

/* The runs of word bytes of ASCII s[0..n) into c->a and c->z; returns how
 * many. A run may be only underscores, which is no word (see wscan_next). */
static size_t ascii_runs(const unsigned char *s, size_t n, struct wcut *c)
{
    size_t nr = 0, i = 0;
    for (;;) {
        while (i < n && !(text_ascii_class[s[i]] & TEXT_W)) /* a joiner never starts a word */
            i++;
        if (i == n)
            return nr;
        c->a[nr] = (uint32_t)i;
        i = text_ascii_word_end((const char *)s, n, i);
        c->z[nr++] = (uint32_t)i;
    }
}

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

/* The words of ASCII text as text.c's ASCII path cuts them (letters, digits
 * and _; joined across ' . : between letters and , ; ' . between digits). */
static int words_ascii(const char *text, size_t n, struct arena *ar, word_fn fn, void *ctx)
{
    const unsigned char *s = (const unsigned char *)text;
    struct wcut cut = {0};
    if (wcut_reserve(&cut, n, ar) < 0)
        return -1;
    struct wscan t;
    wscan_init(&t, &cut, ascii_runs(s, n, &cut));
    struct word w;
    struct phrase ph = {0, 0, 0};
    char b[STEM_MAX];
    size_t a, z;
    int name;
    while (wscan_next(&t, s, &a, &z, &name)) {
        uint64_t h = word_lower(s + a, z - a, b);
        w.name = (unsigned)name;
        w.raw = h;
        w.runh = run_word((const char *)s + a, z - a, h);
        w.key2 = 0;
        w.slot = NULL;
        w.stem = stem_ascii(b, z - a < STEM_MAX ? z - a : STEM_MAX, &w);
        word_lex(&w, w.stem == h);
        word_phrase(&w, &ph);
        fn(ctx, &w);
    }
    return 0;
}

/* 8 ASCII bytes with A-Z lower-cased. */
static inline uint64_t lower8(uint64_t x)
{
    const uint64_t low7 = 0x7F7F7F7F7F7F7F7FULL, high = 0x8080808080808080ULL;
    uint64_t ge_a = (x & low7) + 0x3F3F3F3F3F3F3F3FULL, gt_z = (x & low7) + 0x2525252525252525ULL;
    return x | ((ge_a & ~gt_z & high) >> 2);
}

/* keep[r]: a mask of the first r bytes of an 8-byte load. */
static const uint64_t keep[9] = {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    0,
    0xFF00000000000000ULL,
    0xFFFF000000000000ULL,
    0xFFFFFF0000000000ULL,
    0xFFFFFFFF00000000ULL,
    0xFFFFFFFFFF000000ULL,
    0xFFFFFFFFFFFF0000ULL,
    0xFFFFFFFFFFFFFF00ULL,
    ~0ULL
#else
    0,    0xFFULL, 0xFFFFULL, 0xFFFFFFULL, 0xFFFFFFFFULL, 0xFFFFFFFFFFULL, 0xFFFFFFFFFFFFULL, 0xFFFFFFFFFFFFFFULL,
    ~0ULL
#endif
};

static inline uint64_t key_step(uint64_t h, uint64_t x)
{
    h = (h ^ lower8(x)) * 0xBF58476D1CE4E5B9ULL;
    return h ^ (h >> 29);
}

/* The memo's key for an ASCII word s[0..n) of a text ending at end: a hash
 * of its lower-cased bytes, eight at a time (the word's hash, text.h, takes
 * a multiplication per byte). A word of up to 16 bytes not at the text's end
 * (most) is hashed with no branch on its length. */
static inline uint64_t ascii_key(const unsigned char *s, size_t n, const unsigned char *end)
{
    uint64_t h = n * 0x9E3779B97F4A7C15ULL, x, y;
    if (n <= 16 && s + 16 <= end) {
        memcpy(&x, s, 8);
        memcpy(&y, s + 8, 8);
        size_t r = n < 8 ? n : 8;
        uint64_t h1 = key_step(h, x & keep[r]), h2 = key_step(h1, y & keep[n - r]);
        h = n > 8 ? h2 : h1;
    } else {
        size_t i = 0;
        for (; i + 8 <= n; i += 8) {
            memcpy(&x, s + i, 8);
            h = key_step(h, x);
        }
        if (i < n) {
            x = 0;
            memcpy(&x, s + i, n - i);
            h = key_step(h, x);
        }
    }
    h *= 0x94D049BB133111EBULL;
    h ^= h >> 32;
    return h ? h : 1;
}

/* The prompt's words, each passed to fn. */
static int each_word(const char *s, size_t n, struct text_words *tw, struct arena *ar, word_fn fn, void *ctx)
{
    if (text_ascii_prefix(s, n) == n)
        return words_ascii(s, n, ar, fn, ctx);
    return words_unicode(s, n, tw, NULL, fn, ctx);
}

/* The hash of a run of three words, from their hashes (the first two
 * multiplied by RUN_A and RUN_B): the multiplications of a word are done
 * once as it passes, and nothing waits on the run before. */
#define RUN_A 0x9E3779B97F4A7C15ULL
#define RUN_B 0xC2B2AE3D27D4EB4FULL
static inline uint64_t run_hash(uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t h = a ^ b ^ c;
    h ^= h >> 29;
    return h ? h : 1;
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

static int map_alloc(struct map *m, size_t cap)
{
    m->k = ar_zalloc(m->ar, cap * sizeof *m->k);
    m->v = ar_alloc(m->ar, cap * sizeof *m->v);
    m->mask = cap - 1;
    m->n = 0;
    return m->k && m->v ? 0 : -1;
}

static int map_init(struct map *m, struct arena *ar)
{
    m->ar = ar;
    m->oom = 0;
    return map_alloc(m, 16);
}

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

/* Index of key, added if new; -1 when memory runs out (m->oom is then set). */
static long map_add(struct map *m, uint64_t key)
{
    if ((m->n + 1) * 2 > m->mask + 1) {
        struct map g;
        g.ar = m->ar;
        if (map_alloc(&g, (m->mask + 1) * 2) < 0) {
            m->oom = 1;
            return -1;
        }
        for (size_t i = 0; i <= m->mask; i++)
            if (m->k[i]) {
                size_t j = m->k[i] & g.mask;
                while (g.k[j])
                    j = (j + 1) & g.mask;
                g.k[j] = m->k[i];
                g.v[j] = m->v[i];
            }
        g.n = m->n;
        g.oom = m->oom; /* a failed add stays failed */
        *m = g;
    }
    size_t j = key & m->mask;
    while (m->k[j]) {
        if (m->k[j] == key)
            return m->v[j];
        j = (j + 1) & m->mask;
    }
    m->k[j] = key;
    m->v[j] = (uint32_t)m->n;
    return (long)m->n++;
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
    long *names; /* key indices of the prompt's names */
    struct map name3; /* hashes of their first three letters */
    size_t nnames;
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
    long *subj; /* its content keys outside those phrases: what it asks about */
    size_t nsubj;
    int other; /* the item compared last asks the same way about another thing */
};

static void cur_collect(void *ctx, struct word *w)
{
    struct cur *c = ctx;
    if (c->nw == c->capw) {
        size_t cap = c->capw ? c->capw * 2 : 32;
        struct cword *v = ar_grow(c->ar, c->w, c->nw * sizeof *v, cap * sizeof *v);
        if (!v) {
            c->oom = 1;
            return;
        }
        c->w = v;
        c->capw = cap;
    }
    size_t np = w->key && w->slen >= PREFIX_MIN ? w->slen : 0;
    if (c->nph + np > c->capph) {
        size_t cap = c->capph ? c->capph * 2 : 256;
        while (cap < c->nph + np)
            cap *= 2;
        uint64_t *v = ar_grow(c->ar, c->ph, c->nph * sizeof *v, cap * sizeof *v);
        if (!v) {
            c->oom = 1;
            return;
        }
        c->ph = v;
        c->capph = cap;
    }
    size_t nb = w->key && w->slen >= TYPO_MIN ? w->slen : 0;
    if (c->nsb + nb > c->capsb) {
        size_t cap = c->capsb ? c->capsb * 2 : 512;
        while (cap < c->nsb + nb)
            cap *= 2;
        char *v = ar_grow(c->ar, c->sbytes, c->nsb, cap);
        if (!v) {
            c->oom = 1;
            return;
        }
        c->sbytes = v;
        c->capsb = cap;
    }
    c->w[c->nw++] =
        (struct cword){w->raw,           w->stem,      w->key,           w->key2, w->concept,
                       w->plen,          (uint32_t)np, (uint32_t)c->nph, w->name, w->slen >= 3 ? w->ph[2] : 0,
                       (uint32_t)c->nsb, w->runh};
    if (nb)
        memcpy(c->sbytes + c->nsb, w->sb, nb);
    c->nsb += nb;
    if (np)
        memcpy(c->ph + c->nph, w->ph, np * sizeof *c->ph);
    c->nph += np;
}

static int cur_init(struct cur *c, const char *s, size_t n, struct text_words *tw, struct arena *ar)
{
    memset(c, 0, sizeof *c);
    c->ar = ar;
    if (each_word(s, n, tw, ar, cur_collect, c) < 0 || c->oom)
        return -1;
    /* A phrase stands for its concept: its words give way to it. */
    for (size_t i = 0; i < c->nw; i++) {
        struct cword *w = &c->w[i];
        if (!w->concept)
            continue;
        for (size_t k = 1; k < w->plen && k <= i; k++)
            c->w[i - k].key = 0;
        w->key = w->concept;
        w->slen = 0;
    }
    if (map_init(&c->keys, c->ar) < 0 || map_init(&c->p4, c->ar) < 0)
        return -1;
    c->pre = ar_alloc(ar, (c->nw + 1) * sizeof *c->pre);
    if (!c->pre)
        return -1;
    for (size_t i = 0; i < c->nw; i++) {
        const struct cword *w = &c->w[i];
        if (w->key2)
            map_add(&c->keys, w->key2);
        if (!w->key)
            continue;
        size_t before = c->keys.n;
        long k = map_add(&c->keys, w->key);
        if (k < 0)
            return -1;
        if (c->keys.n == before || w->slen < PREFIX_MIN || w->key != w->stem)
            continue;
        map_add(&c->p4, c->ph[w->off + PREFIX_MIN - 1]);
        struct pre *p = &c->pre[c->npre];
        p->key = (uint32_t)k;
        p->len = w->slen;
        p->off = w->off;
        c->npre++;
    }
    if (c->keys.oom || c->p4.oom)
        return -1;
    /* Chain the stems by their first 4 bytes: p4 maps to the first. */
    uint32_t *first = ar_zalloc(ar, (c->p4.n + 1) * sizeof *first);
    if (!first)
        return -1;
    for (size_t i = c->npre; i-- > 0;) {
        long h = map_get(&c->p4, c->ph[c->pre[i].off + PREFIX_MIN - 1]);
        c->pre[i].next = first[h];
        first[h] = (uint32_t)i + 1;
    }
    for (size_t j = 0; j <= c->p4.mask; j++)
        if (c->p4.k[j])
            c->p4.v[j] = first[c->p4.v[j]];
    c->hit = ar_zalloc(ar, (c->keys.n + 1) * sizeof *c->hit);
    c->nfree = ar_zalloc(ar, (c->keys.n + 1) * sizeof *c->nfree);
    c->nst = ar_zalloc(ar, (c->keys.n + 1) * sizeof *c->nst);
    c->freek = ar_zalloc(ar, (c->keys.n + 1) * sizeof *c->freek);
    c->seen = ar_zalloc(ar, (c->keys.n + 1) * sizeof *c->seen);
    c->ki = ar_alloc(ar, c->nw * sizeof *c->ki + 1);
    c->ki2 = ar_alloc(ar, c->nw * sizeof *c->ki2 + 1);
    c->ri = ar_alloc(ar, c->nw * sizeof *c->ri + 1);
    if (!c->hit || !c->nfree || !c->nst || !c->freek || !c->seen || !c->ki || !c->ki2 || !c->ri ||
        map_init(&c->runs, c->ar) < 0)
        return -1;
    c->names = ar_alloc(ar, c->nw * sizeof *c->names + 1);
    if (!c->names || map_init(&c->name3, c->ar) < 0)
        return -1;
    for (size_t i = 0; i < c->nw; i++) {
        const struct cword *w = c->w;
        c->ki[i] = w[i].key ? map_get(&c->keys, w[i].key) : -1;
        if (w[i].name && w[i].key && w[i].key == w[i].stem && c->seen[c->ki[i]] != 1) {
            c->seen[c->ki[i]] = 1; /* each name once; seen is reset below */
            c->names[c->nnames++] = c->ki[i];
            if (w[i].p3)
                map_add(&c->name3, w[i].p3);
        }
        c->ki2[i] = w[i].key2 ? map_get(&c->keys, w[i].key2) : -1;
        c->ri[i] = i + RUN <= c->nw
            ? map_add(&c->runs, run_hash(w[i].runh * RUN_A, w[i + 1].runh * RUN_B, w[i + 2].runh))
            : -1;
    }
    if (c->runs.oom || c->name3.oom)
        return -1;
    for (size_t q = 0; q < c->nnames; q++)
        c->seen[c->names[q]] = 0;
    if (memo_init(&c->memo, 64, ar) < 0)
        return -1;
    /* Typos: every stem of TYPO_MIN+ bytes with one byte deleted. */
    if (map_init(&c->dels, c->ar) < 0 || !(c->dk = ar_alloc(ar, (c->nsb + 1) * sizeof *c->dk)))
        return -1;
    for (size_t i = 0; i < c->nw; i++) {
        const struct cword *w = &c->w[i];
        if (!w->key || w->key != w->stem || w->slen < TYPO_MIN || c->ki[i] < 0)
            continue;
        for (size_t q = 0; q < w->slen; q++) {
            size_t before = c->dels.n;
            long d = map_add(&c->dels, del_hash(c->sbytes + w->boff, w->slen, q, c->ph + w->off));
            if (d < 0)
                return -1;
            if (c->dels.n > before)
                c->dk[d] = (uint32_t)c->ki[i];
        }
    }
    /* sized to the prompt: a short prompt (the usual) pays for a small one */
    unsigned lg = 6;
    while (lg < RUN_BITS_MAX && (1u << lg) < 64 * c->runs.n)
        lg++;
    c->rshift = 64 - lg;
    c->rbits = ar_zalloc(ar, (1u << lg) / 64 * sizeof *c->rbits);
    if (!c->rbits)
        return -1;
    for (size_t j = 0; j <= c->runs.mask; j++)
        if (c->runs.k[j]) {
            uint64_t b = c->runs.k[j] >> c->rshift;
            c->rbits[b / 64] |= 1ULL << (b % 64);
        }
    c->run_hit = ar_zalloc(ar, (c->runs.n + 1) * sizeof *c->run_hit);
    c->run_c = ar_zalloc(ar, c->runs.n + 1);
    c->rlist = ar_alloc(ar, (c->runs.n + 1) * sizeof *c->rlist);
    c->roff = ar_zalloc(ar, (c->runs.n + 2) * sizeof *c->roff);
    c->rpos = ar_alloc(ar, (c->nw + 1) * sizeof *c->rpos);
    c->fcnt = ar_alloc(ar, (c->keys.n + 1) * sizeof *c->fcnt);
    c->pcount = ar_zalloc(ar, (c->keys.n + 1) * sizeof *c->pcount);
    c->klist = ar_alloc(ar, (c->keys.n + 1) * sizeof *c->klist);
    c->nwb = c->nw / 64 + 1;
    uint64_t *bm = ar_zalloc(ar, 5 * (c->nwb + 1) * sizeof *bm);
    if (!c->run_hit || !c->run_c || !c->rlist || !c->roff || !c->rpos || !c->fcnt || !c->pcount || !c->klist || !bm)
        return -1;
    c->bh = bm, c->blow = bm + (c->nwb + 1), c->bcont = c->blow + (c->nwb + 1), c->bfr = c->bcont + (c->nwb + 1);
    c->b6 = c->bfr + (c->nwb + 1);
    for (size_t i = 0; i + RUN <= c->nw; i++) {
        unsigned char n = 0;
        for (size_t q = i; q < i + RUN; q++)
            n += c->ki[q] >= 0 || c->ki2[q] >= 0;
        c->run_c[c->ri[i]] = n; /* a run seen twice: the later count */
    }
    for (size_t i = 0; i < c->nw; i++) {
        if (c->ki[i] >= 0 || c->ki2[i] >= 0)
            c->bcont[i / 64] |= 1ULL << (i % 64);
        if (c->ki[i] >= 0)
            c->pcount[c->ki[i]]++;
        if (c->ki2[i] >= 0)
            c->pcount[c->ki2[i]]++;
    }
    /* Each run's places, grouped by run (a counting sort). */
    for (size_t i = 0; i + RUN <= c->nw; i++) {
        c->roff[c->ri[i] + 1]++;
        if (c->run_c[c->ri[i]] <= FRAME_MAXC)
            c->blow[i / 64] |= 1ULL << (i % 64);
    }
    for (size_t r = 0; r < c->runs.n; r++)
        c->roff[r + 1] += c->roff[r];
    for (size_t i = 0; i + RUN <= c->nw; i++)
        c->rpos[c->roff[c->ri[i]] + c->run_hit[c->ri[i]]++] = (uint32_t)i;
    memset(c->run_hit, 0, (c->runs.n + 1) * sizeof *c->run_hit); /* it counted places just now */
    return 0;
}

/* The keys one word of the history holds. */
struct pending {
    uint32_t k[PENDING_MAX];
    unsigned n;
};
#define LF_CONTENT 1u
#define LF_FRAMED  2u

static inline void pending_add(struct pending *p, long k)
{
    if (k >= 0 && p->n < PENDING_MAX)
        p->k[p->n++] = (uint32_t)k;
}

/* The prompt's keys one word of the history holds on its own: its key, the
 * stems it begins or that begin it (4+ letters), else one a typo away. */
static void word_hits(struct cur *c, struct pending *p, const struct word *w)
{
    pending_add(p, map_get(&c->keys, w->key));
    if (w->slen >= PREFIX_MIN && c->npre) {
        /* A stem of 4+ letters that begins the other (auth, authentication). */
        long s4 = map_get(&c->p4, w->ph[PREFIX_MIN - 1]);
        for (uint32_t q = s4 >= 0 ? (uint32_t)s4 : 0; q; q = c->pre[q - 1].next) {
            const struct pre *s = &c->pre[q - 1];
            if (s->len <= w->slen ? w->ph[s->len - 1] == c->ph[s->off + s->len - 1]
                                  : c->ph[s->off + w->slen - 1] == w->ph[w->slen - 1])
                pending_add(p, s->key);
        }
    }
    if (!p->n && w->key == w->stem && w->slen >= TYPO_MIN - 1 && c->dels.n) {
        /* One edit away from a stem of the prompt: a typo of it. */
        long d = map_get(&c->dels, w->stem); /* a byte missing here */
        if (d >= 0)
            pending_add(p, c->dk[d]);
        for (size_t q = 0; !p->n && w->slen >= TYPO_MIN && q < w->slen; q++) {
            uint64_t h = del_hash(w->sb, w->slen, q, w->ph);
            long k = map_get(&c->keys, h); /* a byte too many here */
            if (k < 0 && (d = map_get(&c->dels, h)) >= 0)
                k = c->dk[d]; /* a byte changed, or two swapped */
            pending_add(p, k);
        }
    }
}

/* A word of the history seen for the first time in this call: remembered
 * under key, with the prompt's keys it holds. NULL when memory runs out. */
static struct mslot *memo_new(struct cur *c, uint64_t key, const struct word *w)
{
    struct memo *m = &c->memo;
    struct pending p;
    p.n = 0;
    if (w->key)
        word_hits(c, &p, w);
    if (m->npool + p.n > m->cappool) {
        size_t cap = m->cappool ? m->cappool * 2 : 64;
        uint32_t *v = ar_grow(m->ar, m->pool, m->npool * sizeof *v, cap * sizeof *v);
        if (!v)
            return NULL;
        m->pool = v;
        m->cappool = cap;
    }
    struct mslot *sl = memo_add(m, key, w);
    if (!sl)
        return NULL;
    m->cold[sl->meta >> MS_E_SHIFT].hoff = (uint32_t)m->npool;
    m->cold[sl->meta >> MS_E_SHIFT].nh = p.n;
    if (p.n) /* pool is NULL until some word holds a key */
        memcpy(m->pool + m->npool, p.k, p.n * sizeof *p.k);
    m->npool += p.n;
    sl->meta |= (uint32_t)p.n << MS_NH_SHIFT;
    /* a name, and not one of the prompt's by its first letters (FRA, Frankfurt) */
    if (w->key && !p.n && !(w->p3 && map_get(&c->name3, w->p3) >= 0))
        sl->meta |= MS_FOREIGN;
    return sl;
}

/* A key the item holds by one occurrence of a word (a phrase's concept, an
 * ideograph pair): counted as held, and kept (stored) while there is room
 * among the word's keys. */
static inline void occ_hit(struct cur *c, long k, int store)
{
    if (c->hit[k] != c->stamp) {
        c->hit[k] = c->stamp;
        c->shared++;
    }
    if (store) {
        if (c->nst[k] != c->stamp) {
            c->nst[k] = c->stamp;
            c->nfree[k] = 0;
            c->klist[c->nkl++] = (uint32_t)k;
        }
        c->nfree[k]++;
    }
}

/* The item's word j is in a frame: it no longer counts, nor do the keys it
 * holds. Returns 1 if it was a content word outside frames until now. */
static inline unsigned frame_word(struct cur *c, size_t j)
{
    struct rword *r = &c->ring[j % MARK_BACK];
    if (r->flags & LF_FRAMED)
        return 0;
    r->flags |= LF_FRAMED;
    c->memo.ent[r->e].seen += SEEN_FCNT;
    for (unsigned q = 0; q < r->n; q++)
        c->nfree[r->k[q]]--;
    return r->flags & LF_CONTENT;
}

/* One occurrence of a word of the item (its memo slot, a phrase's concept
 * ending with it, an ideograph pair it ends): counted for its entry, kept in
 * the ring for the frame; the shared run of RUN words it ends, if any,
 * frames them. */
static inline __attribute__((always_inline)) void item_occ(struct cur *c, struct occ *o, uint32_t stamp, uint32_t meta,
                                                           uint64_t concept, uint64_t key2, int name)
{
    uint32_t e = meta >> MS_E_SHIFT;
    struct ment *me = &c->memo.ent[e];
    int again = (uint32_t)me->seen == stamp; /* no branch: about half the words of a long item are new to it */
    me->seen = again ? me->seen + SEEN_CNT : stamp | SEEN_CNT;
    c->elist[o->nel] = e;
    o->nel += !again;
    size_t j = o->nitem++;
    struct rword *rw = &c->ring[j % MARK_BACK];
    rw->e = e;
    rw->flags = meta & MS_CONTENT ? LF_CONTENT : 0;
    rw->n = 0;
    o->rest += rw->flags;
    unsigned held = meta >> MS_NH_SHIFT & 15;
    if (key2 | concept) {
        long ks[2] = {key2 ? map_get(&c->keys, key2) : -1, concept ? map_get(&c->keys, concept) : -1};
        for (int q = 0; q < 2; q++)
            if (ks[q] >= 0) {
                int store = held < PENDING_MAX;
                occ_hit(c, ks[q], store);
                if (store)
                    rw->k[rw->n++] = (uint32_t)ks[q];
                held++;
            }
    }
    if ((meta & MS_FOREIGN) && !held) {
        o->foreign |= name;
        o->only += !again;
    }
    uint64_t raw = me->raw;
    if (j >= RUN - 1 && c->runs.n) {
        uint64_t h = run_hash(o->a2, o->b1, raw);
        uint64_t b = h >> c->rshift;
        long r = c->rbits[b / 64] >> (b % 64) & 1 ? map_get(&c->runs, h) : -1;
        o->streak = r >= 0 ? o->streak + 1 : 0;
        o->passage |= o->streak >= PASTE_RUNS;
        if (r >= 0) {
            if (c->run_hit[r] != stamp) {
                c->run_hit[r] = stamp;
                c->rlist[c->nrl++] = (uint32_t)r;
            }
            o->any_run = 1;
            size_t back = o->streak >= LONG_RUNS ? o->streak + RUN - 1 : c->run_c[r] <= FRAME_MAXC ? RUN : 0;
            if (back > MARK_BACK)
                back = MARK_BACK;
            for (size_t q = 0; q < back; q++)
                o->rest -= frame_word(c, j - q);
        }
    }
    o->a2 = o->a1;
    o->a1 = raw * RUN_A;
    o->b1 = raw * RUN_B;
}

/* One word of a history item that is not all ASCII. */
static void item_word(void *ctx, struct word *w)
{
    struct cur *c = ctx;
    struct mslot *sl = w->slot;
    if (!sl && !(sl = memo_new(c, w->mkey, w))) {
        c->oom = 1;
        return;
    }
    item_occ(c, &c->o, c->stamp, sl->meta, w->concept, w->key2, (int)w->name);
}

/* The words of an item that is all ASCII, compared as item_word compares
 * them: each word is looked up in the memo by its ascii_key, and only a word
 * not seen before in this call is hashed, stemmed and matched. */
static void item_ascii(struct cur *c, const char *text, size_t n)
{
    const unsigned char *s = (const unsigned char *)text;
    struct memo *m = &c->memo;
    struct wcut *cut = &c->cut;
    if (wcut_reserve(cut, n, c->ar) < 0) {
        c->oom = 1;
        return;
    }
    /* In three passes, each with no branch that depends on the one before:
     * the words and their keys; their memo entries (a probe whose slot is
     * fetched ahead); what each occurrence holds. */
    struct wscan t;
    wscan_init(&t, cut, ascii_runs(s, n, cut));
    size_t a, z, nw = 0;
    int name;
    while (wscan_next(&t, s, &a, &z, &name)) {
        cut->key[nw] = ascii_key(s + a, z - a, s + n);
        cut->a[nw] = (uint32_t)a | (uint32_t)name << 31;
        cut->z[nw++] = (uint32_t)z;
    }
    for (size_t k = 0; k < nw; k++) {
        if (k + 8 < nw)
            __builtin_prefetch(&m->s[memo_home(m->mask, cut->key[k + 8])]);
        struct mslot *sl = memo_find(m, cut->key[k]);
        if (!sl->key) { /* first seen: analysed, matched and remembered */
            struct word w;
            char b[STEM_MAX];
            size_t i = cut->a[k] & ~(1u << 31), l = cut->z[k] - i;
            w.raw = word_lower(s + i, l, b);
            w.runh = run_word((const char *)s + i, l, w.raw);
            w.stem = stem_ascii(b, l < STEM_MAX ? l : STEM_MAX, &w);
            word_lex(&w, w.stem == w.raw);
            if (!(sl = memo_new(c, cut->key[k], &w))) {
                c->oom = 1;
                return;
            }
        }
        cut->z[k] = sl->meta; /* the word's end is no longer needed */
    }
    struct phrase ph = {0, 0, 0};
    struct occ o = c->o; /* in registers, not behind c */
    uint32_t stamp = c->stamp;
    for (size_t k = 0; k < nw; k++) {
        if (k + 8 < nw)
            __builtin_prefetch(&m->ent[cut->z[k + 8] >> MS_E_SHIFT]);
        uint32_t meta = cut->z[k];
        uint64_t stem = m->ent[meta >> MS_E_SHIFT].stem, concept = 0;
        unsigned plen;
        if (meta & MS_END)
        concept = phrase_at(stem, &ph, &plen);
        phrase_push(&ph, stem);
        item_occ(c, &o, stamp, meta, concept, 0, (int)(cut->a[k] >> 31));
    }
    c->o = o;
}

/* Share of the current prompt's content keys that the item holds; when they
 * share runs of RUN words that hold content words, only the words outside
 * those runs are compared. */
static int similarity(struct cur *c, const char *s, size_t n, struct text_words *tw, uint32_t stamp, double *sim)
{
    *sim = 0;
    if (c->keys.n == 0)
        return 0;
    c->stamp = stamp;
    c->other = 0;
    c->shared = c->nfk = 0;
    c->nrl = c->nkl = 0;
    c->o = (struct occ){0};
    if (n + 1 > c->capel) { /* every word holds at least one byte */
        c->capel = n + 1;
        if (!(c->elist = ar_alloc(c->ar, c->capel * sizeof *c->elist))) {
            c->capel = 0;
            return -1;
        }
    }
    if (text_ascii_prefix(s, n) == n)
        item_ascii(c, s, n);
    else if (words_unicode(s, n, tw, &c->memo, item_word, c) < 0)
        return -1;
    if (c->oom)
        return -1;
    /* The keys the item's words hold: held, and held outside a frame where
     * some occurrence of the word is. */
    for (size_t q = 0; q < c->o.nel; q++) {
        const struct ment *me = &c->memo.ent[c->elist[q]];
        const struct mcold *co = &c->memo.cold[c->elist[q]];
        const uint32_t *k = co->nh ? c->memo.pool + co->hoff : NULL; /* pool is NULL until a word holds a key */
        unsigned nk = co->nh;
        int out = (me->seen >> 32 & 0xFFFF) > me->seen >> 48;
        for (unsigned i = 0; i < nk; i++) {
            if (c->hit[k[i]] != stamp) {
                c->hit[k[i]] = stamp;
                c->shared++;
            }
            if (out && c->freek[k[i]] != stamp) {
                c->freek[k[i]] = stamp;
                c->nfk++;
            }
        }
    }
    for (size_t q = 0; q < c->nkl; q++) /* and those single occurrences hold outside frames */
        if (c->nfree[c->klist[q]] > 0 && c->freek[c->klist[q]] != stamp) {
            c->freek[c->klist[q]] = stamp;
            c->nfk++;
        }
    int frame = 0;
    if (c->o.any_run) {
        /* The prompt's frame: the words of each shared run with at most
         * FRAME_MAXC content words, and of LONG_RUNS or more shared runs in a
         * row, worked out on bitmaps of the prompt's words. */
        size_t nb = c->nwb;
        uint64_t *h = c->bh, *s6 = c->b6, *fr = c->bfr;
        memset(h, 0, nb * sizeof *h);
        for (size_t q = 0; q < c->nrl; q++)
            for (uint32_t p = c->roff[c->rlist[q]]; p < c->roff[c->rlist[q] + 1]; p++)
                h[c->rpos[p] / 64] |= 1ULL << (c->rpos[p] % 64);
        for (size_t i = 0; i < nb; i++) { /* s6: a run that starts LONG_RUNS shared ones in a row */
            uint64_t a = h[i];
            for (unsigned t = 1; t < LONG_RUNS; t++)
                a &= h[i] >> t | h[i + 1] << (64 - t);
            s6[i] = a;
        }
        for (size_t i = 0; i < nb; i++) {
            uint64_t low = h[i] & c->blow[i], lowp = i ? h[i - 1] & c->blow[i - 1] : 0, sp = i ? s6[i - 1] : 0;
            uint64_t f = low;
            for (unsigned t = 1; t < RUN; t++)
                f |= low << t | lowp >> (64 - t);
            f |= s6[i];
            for (unsigned t = 1; t < LONG_RUNS + RUN - 1; t++)
                f |= s6[i] << t | sp >> (64 - t);
            fr[i] = f;
            frame |= (f & c->bcont[i]) != 0;
            uint64_t hp = i ? h[i - 1] : 0;
            c->o.covered += (size_t)__builtin_popcountll(h[i] | h[i] << 1 | hp >> 63 | h[i] << 2 | hp >> 62);
        }
    }
    if (c->o.foreign && c->nnames < c->keys.n) {
        /* The same question about another named thing ("a visa for Japan",
         * "a visa for Canada"): all but the names is shared, and each side
         * names something the other does not. */
        size_t held = 0;
        for (size_t q = 0; q < c->nnames; q++)
            held += c->hit[c->names[q]] == stamp;
        if (held < c->nnames && (double)(c->shared - held) >= TEMPLATE_SHARE * (double)(c->keys.n - c->nnames)) {
            c->other = 1;
            return 0;
        }
    }
    /* The same sentence with a word or two swapped for others ("configure
     * retries in the payments client", "configure logging in ..."): another
     * thing in the same question (three quarters of the prompt's words are
     * in runs of three they share, and no pasted passage is), unless the
     * prompt asks to be reassured ("is it safe", "is it risky" ask one
     * thing). */
    size_t ponly = c->keys.n - c->shared;
    if (c->o.any_run && !c->o.passage && !(c->asks & (ASK_REASSURE | ASK_REASK)) && ponly >= 1 && ponly <= SWAP_MAX &&
        c->o.only >= 1 && c->o.only <= SWAP_MAX && c->shared >= 2 && (double)c->o.covered >= SWAP_COVER * (double)c->nw)
        c->o.swap = 1; /* rum_check decides, with the things each names */
    if (!frame) {
        *sim = (double)c->shared / (double)c->keys.n;
        return 0;
    }
    /* The prompt's keys outside its frame (have), and those the item holds
     * outside its own (shared): all but the keys whose every place is
     * framed. */
    size_t gone = 0, gone_shared = 0;
    for (size_t i = 0; i < c->nwb; i++)
        for (uint64_t f = c->bfr[i] & c->bcont[i]; f; f &= f - 1) {
            size_t w = i * 64 + (size_t)__builtin_ctzll(f);
            long ks[2] = {c->ki[w], c->ki2[w]};
            for (int q = 0; q < 2; q++) {
                long k = ks[q];
                if (k < 0)
                    continue;
                if (c->seen[k] != stamp) {
                    c->seen[k] = stamp;
                    c->fcnt[k] = 0;
                }
                if (++c->fcnt[k] == c->pcount[k]) {
                    gone++;
                    gone_shared += c->freek[k] == stamp;
                }
            }
        }
    size_t have = c->keys.n - gone, shared = c->nfk - gone_shared;
    *sim = have == 0 || c->o.rest == 0 ? 1.0 : (double)shared / (double)have;
    return 0;
}

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

static void obj_add(struct objs *o, const char *s, size_t n, int number)
{
    while (n && (*s == '#' || *s == '@'))
        s++, n--;
    if (!n)
        return;
    uint64_t h = FNV_OFFSET;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        h ^= ch >= 'A' && ch <= 'Z' ? ch | 0x20 : ch;
        h *= FNV_PRIME;
    }
    for (unsigned i = 0; i < o->n; i++)
        if (o->h[i] == h)
            return;
    if (o->n == OBJ_MAX)
        o->many = 1;
    else {
        o->num |= (uint64_t)(number != 0) << o->n;
        o->h[o->n++] = h;
    }
}

static int is_alnum(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* One whitespace-delimited token, its edge punctuation trimmed. */
static void obj_token(struct objs *o, const char *s, size_t n, int foreign_text)
{
    static const char edge[] = "()[]{}<>\"'`,;:!?.*";
    while (n && memchr(edge, s[0], sizeof edge - 1))
        s++, n--;
    while (n && memchr(edge, s[n - 1], sizeof edge - 1))
        n--;
    if (n < 2 && !(n == 1 && s[0] >= '0' && s[0] <= '9'))
        return;
    int digit = 0, lower = 0, camel = 0, code = 0, ascii = 1;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x80) {
            ascii = 0;
            continue;
        }
        digit |= c >= '0' && c <= '9';
        camel |= lower && c >= 'A' && c <= 'Z'; /* an upper-case letter after a lower-case one */
        lower |= c >= 'a' && c <= 'z';
        if (c && i > 0 && i + 1 < n && strchr("_/\\@#=.", c))
            code |= c != '.' ||
                (i >= 2 && is_alnum((unsigned char)s[i - 1]) && is_alnum((unsigned char)s[i + 1]) && n - i > 2);
    }
    int latin = foreign_text && ascii && n >= 3 && (lower || (s[0] >= 'A' && s[0] <= 'Z'));
    if (digit && ascii && s[0] >= '0' && s[0] <= '9') {
        /* a number however it is written: 5,000 5000 5k are one, and
         * 50-minute and 50 minutes say 50 */
        char b[32];
        size_t k = 0, q = 0;
        int whole = 1;
        while (q < n && k + 4 < sizeof b) {
            unsigned char ch = (unsigned char)s[q];
            if (ch >= '0' && ch <= '9')
                b[k++] = (char)ch;
            else if (ch == ',' && q + 1 < n && s[q + 1] >= '0' && s[q + 1] <= '9')
                ;
            else if ((ch | 0x20) == 'k' && q + 1 == n)
                b[k++] = '0', b[k++] = '0', b[k++] = '0';
            else {
                /* 50-minute, 2GB, 3x: the number, and a unit or a word */
                size_t r = q + (ch == '-');
                while (r < n && (s[r] | 0x20) >= 'a' && (s[r] | 0x20) <= 'z')
                    r++;
                whole = r == n && r > q + (ch == '-') ? 2 : 0;
                break;
            }
            q++;
        }
        if (whole) { /* digits, commas and letters: no code punctuation */
            obj_add(o, b, k, 1);
            return;
        }
    }
    if (digit || code || camel || latin)
        obj_add(o, s, n, 0);
}

static void objects_of(const char *s, size_t n, struct objs *o)
{
    o->n = 0;
    o->num = 0;
    o->many = n > OBJ_TEXT_MAX;
    if (o->many)
        return;
    /* Mostly another script: more bytes of multi-byte letters than ASCII letters. */
    size_t hi = 0, lo = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        hi += c >= 0xC0;
        lo += (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
    }
    int foreign_text = hi > lo;
    size_t i = 0;
    while (i < n && !o->many) {
        unsigned char c = (unsigned char)s[i];
        /* a quoted span: `x`, "x", 'x' (an apostrophe inside a word is
         * inside its token, never looked at here) */
        if ((c == '`' || c == '"' || c == '\'') && !(c == '`' && i + 1 < n && s[i + 1] == '`')) {
            const char *e = memchr(s + i + 1, c, n - i - 1 < 65 ? n - i - 1 : 65);
            if (e && e > s + i + 1 && !memchr(s + i + 1, '\n', (size_t)(e - s - i - 1))) {
                obj_add(o, s + i + 1, (size_t)(e - s - i - 1), 0); /* the span, and its tokens below */
                i++;
                continue;
            }
        }
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            i++;
            continue;
        }
        size_t a = i;
        while (i < n && s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r')
            i++;
        obj_token(o, s + a, i - a, foreign_text);
    }
}

static int all_numbers(const struct objs *o)
{
    return o->n && !o->many && o->num == (o->n < 64 ? ((uint64_t)1 << o->n) - 1 : ~(uint64_t)0);
}

/* Both name things, each one the other does not, and what they share is
 * numbers at most ("chapter 3 (membrane transport), 10 questions" and
 * "chapter 6 (cell signaling), 10 questions"): they ask about different
 * things. A name they share (the same file, the same error) is the same
 * thing asked about again, whatever line or time it gives. */
static int objects_differ(const struct objs *a, const struct objs *b)
{
    if (!a->n || !b->n || a->many || b->many)
        return 0;
    unsigned a_only = 0, shared_b = 0;
    for (unsigned i = 0; i < a->n; i++) {
        unsigned k = 0;
        while (k < b->n && a->h[i] != b->h[k])
            k++;
        if (k == b->n)
            a_only++;
        else if (!(a->num >> i & 1))
            return 0;
        else
            shared_b++;
    }
    return a_only > 0 && shared_b < b->n;
}

/* They name the same things: the same set, or a name (not a number) both
 * hold. */
static int objects_same(const struct objs *a, const struct objs *b)
{
    if (!a->n || !b->n || a->many || b->many)
        return 0;
    unsigned common = 0;
    for (unsigned i = 0; i < a->n; i++)
        for (unsigned k = 0; k < b->n; k++)
            if (a->h[i] == b->h[k]) {
                if (!(a->num >> i & 1))
                    return 1;
                common++;
            }
    return common == a->n && common == b->n;
}

/* How the prompt asks, and the keys of its words outside those phrases. */
static int cur_asking(struct cur *c)
{
    unsigned char *mark = ar_zalloc(c->ar, c->nw + 1);
    c->subj = ar_alloc(c->ar, (c->nw + 1) * sizeof *c->subj);
    if (!mark || !c->subj)
        return -1;
    c->asks = c->nw ? ask_kinds(&c->w[0].raw, sizeof *c->w, c->nw, mark) : 0;
    c->nsubj = 0;
    for (size_t i = 0; i < c->nw; i++)
        if (!mark[i] && c->ki[i] >= 0)
            c->subj[c->nsubj++] = c->ki[i];
    return 0;
}

/* A history item that did not reach the bar but asks about what the prompt
 * asks about (a content word of the prompt outside its asking phrases), when
 * the prompt asks again in other words: it says it asks again ("sorry to ask
 * again", "I know you said") and the item is a question or a request for
 * reassurance, or both ask to be reassured ("is it safe", "did I make a
 * mistake"). 1 when it is the same worry, 0 not, -1 out of memory. */
static int same_worry(struct cur *c, const char *s, size_t n, struct text_words *tw, uint32_t stamp)
{
    int about = 0;
    for (size_t q = 0; q < c->nsubj && !about; q++)
        about = c->hit[c->subj[q]] == stamp;
    if (!about)
        return 0;
    tw->n = 0;
    if (text_words(s, n, tw) < 0)
        return -1;
    unsigned k = tw->n ? ask_kinds(&tw->v[0].hash, sizeof *tw->v, tw->n, NULL) : 0;
    if ((c->asks & (ASK_REASSURE | ASK_REASK)) && (k & (ASK_REASSURE | ASK_REASK)))
        return 1;
    return (c->asks & ASK_REASK) && ((k & (ASK_REASSURE | ASK_REASK)) || ask_question_mark(s, n));
}

/* 1 when an earlier prompt asks something: a question (a question mark, or a
 * question word where a question has it), a plea for reassurance or a sign
 * of asking again; 0 an instruction or a statement;
 * -1 out of memory. */
static int item_asks(const char *s, size_t n)
{
    unsigned k;
    if (ask_text(s, n, &k) < 0)
        return -1;
    return (k & (ASK_QUESTION | ASK_REASSURE | ASK_REASK)) != 0;
}

/* A history item as validated: its text and time, kept so that comparing
 * does not look them up and parse them again. */
/* One history item's shape, {text, at}, with errors that name the field
 * (history[3].at). */
static int check_item(const cJSON *it, int i, struct rum_item *h, kerr *e)
{
    static const char *const item_keys[] = {"text", "at", NULL};
    char f[48], pre[48], ft[48], fa[48];
    snprintf(pre, sizeof pre, "history[%d].", i);
    snprintf(f, sizeof f, "history[%d]", i);
    snprintf(ft, sizeof ft, "history[%d].text", i);
    snprintf(fa, sizeof fa, "history[%d].at", i);
    if (!cJSON_IsObject(it))
        return kerr_set(e, "INPUT_INVALID", f, "%s must be an object {text, at}", f);
    if (det_known_keys(it, item_keys, pre, e) < 0 ||
        det_string(it, "text", ft, 1, NULL, RUM_MAX_PROMPT, &h->t, &h->n, e) < 0 ||
        det_time(it, "at", fa, &h->at, NULL, e) < 0)
        return -1;
    return 0;
}

/* check_item's checks in one walk over the item's members, for the item
 * that passes them (nearly all): -1 where check_item would fail, or might,
 * and then check_item names the fault. */
static int item_ok(const cJSON *it, struct rum_item *h)
{
    const cJSON *t = NULL, *at = NULL;
    if (!cJSON_IsObject(it))
        return -1;
    for (const cJSON *m = it->child; m; m = m->next) {
        if (!m->string)
            return -1;
        if (!strcmp(m->string, "text"))
            t = t ? t : m;
        else if (!strcmp(m->string, "at"))
            at = at ? at : m;
        else
            return -1;
    }
    if (!cJSON_IsString(t) || !t->valuestring || !cJSON_IsString(at) || !at->valuestring)
        return -1;
    size_t n = strlen(t->valuestring);
    if (!text_valid_utf8(t->valuestring, n) ||
        (n > RUM_MAX_PROMPT && text_char_count(t->valuestring, n) > RUM_MAX_PROMPT) ||
        tf_parse_rfc3339(at->valuestring, &h->at, NULL) < 0)
        return -1;
    h->t = t->valuestring;
    h->n = n;
    return 0;
}

/* How far history item h asks about what the text c was made of (pt) asks
 * about: similarity, less the ways of asking about something else (another
 * thing in the same frame, a word or two swapped, an earlier instruction
 * with only_asks). po holds the text's things once *po_known; ho is scratch.
 * 0, or -1 out of memory. */
static int related(struct cur *c, const char *pt, size_t pn, struct objs *po, int *po_known, const struct rum_item *h,
                   struct objs *ho, struct text_words *w, uint32_t stamp, int only_asks, double sim_thr, double *out,
                   int *other)
{
    double j;
    *out = 0;
    if (similarity(c, h->t, h->n, w, stamp, &j) < 0)
        return -1;
    *other = c->other;
    /* A prompt that names its subject in a word or two ("why is that one
     * failing?") says too little to be matched by an item that says more
     * about other things than they share ("and the upsides of failing
     * hard?"). */
    if (c->keys.n <= THIN_KEYS && c->o.only > c->shared)
        j = 0;
    if (j < sim_thr && j > 0 && (c->asks & (ASK_REASSURE | ASK_REASK))) {
        int r = same_worry(c, h->t, h->n, w, stamp);
        if (r < 0)
            return -1;
        if (r)
            j = sim_thr;
    }
    if (j >= sim_thr && j > 0 && !*po_known) {
        objects_of(pt, pn, po);
        *po_known = 1;
    }
    if (j >= sim_thr && j > 0 && c->o.swap) {
        /* a word or two swapped: another thing asked about, unless they
         * name the same things (5k for 5,000; the same file, another
         * line) */
        objects_of(h->t, h->n, ho);
        if (!objects_same(po, ho))
            j = 0, *other = 1;
    } else if (j >= sim_thr && j > 0 && po->n && !po->many &&
               (c->o.any_run || (all_numbers(po) && !(c->asks & (ASK_REASSURE | ASK_REASK))))) {
        /* the same frame of words about other things; or, without a
         * frame, numbers only ("outline chapter 4" after chapter 3),
         * unless the prompt asks again for reassurance (a worry's
         * figures change as it is asked again) */
        objects_of(h->t, h->n, ho);
        if (!c->o.any_run && !all_numbers(ho))
            ho->n = 0;
        if (objects_differ(po, ho))
            j = 0, *other = 1;
    }
    if (only_asks && j >= sim_thr && j > 0) { /* an earlier instruction is not an earlier ask */
        int a = item_asks(h->t, h->n);
        if (a < 0)
            return -1;
        if (!a)
            j = 0, *other = 1;
    }
    *out = j;
    return 0;
}

int rum_run(const struct rum_query *q, int64_t now_ms, struct rum_result *r)
{
    const struct rum_item *items = q->hist;
    const char *cur = q->prompt;
    size_t cur_n = q->n, hn = q->nhist, threshold = (size_t)q->threshold;
    double sim_thr = q->similarity;
    int only_asks = q->only_asks;
    int64_t window_start = now_ms - (int64_t)q->window_min * 60000;
    struct rum_match *m = r->match;
    _Alignas(16) char stack[32768];
    struct arena ar;
    ar_init(&ar, stack, sizeof stack);
    struct text_words w = {0};
    struct cur c;
    memset(&c, 0, sizeof c);
    lex_init();
    rum_lang = stem_lang_of(cur, cur_n);
    int oom = cur_init(&c, cur, cur_n, &w, &ar) < 0 || cur_asking(&c) < 0;
    struct objs *po = ar_alloc(&ar, sizeof *po), *ho = ar_alloc(&ar, sizeof *ho);
    oom |= !po || !ho;
    int po_known = 0; /* the prompt's things, worked out when an item first reaches the bar */
    /* A short instruction to go on ("continue", "weiter", "do the same for
     * the rest") asks nothing: sent again and again, it is work going on. */
    int command = !oom && (c.asks & ASK_COMMAND) && c.nw <= COMMAND_WORDS && !ask_question_mark(cur, cur_n);
    /* With only_asks (keel's hooks and overlay, keel eval), only an ask can
     * be asked again: a prompt that is no question (no question mark, no
     * question word where a question has it) and no plea for reassurance
     * ("write the migration", "Tests für die Filter") is an instruction, the
     * work going on; and "and the second one?", "e a luz?" is the next thing
     * in the same frame, unless it pleads or says it asks again. */
    unsigned how = 0;
    if (only_asks && !oom && !command && ask_text(cur, cur_n, &how) < 0)
        oom = 1;
    int statement = only_asks && !oom && !command &&
        (!(how & (ASK_QUESTION | ASK_REASSURE | ASK_REASK)) ||
         ((how & ASK_FOLLOWUP) && !(how & (ASK_REASSURE | ASK_REASK))));
    size_t count = 0, i;
    double best = 0, sum = 0;
    unsigned char *away = ar_zalloc(&ar, hn + 1); /* items that ask the same way about another thing */
    oom |= !away;
    for (i = 0; i < hn && !oom && !command && !statement; i++) {
        if (items[i].at < window_start)
            continue;
        double j;
        int other;
        if (related(&c, cur, cur_n, po, &po_known, &items[i], ho, &w, (uint32_t)i + 1, only_asks, sim_thr, &j, &other) <
            0) {
            oom = 1;
            break;
        }
        if (other || j <= 0)
            away[i] = 1;
        if (j > best)
            best = j;
        if (j >= sim_thr && j > 0) {
            m[count++] = (struct rum_match){i, j};
            sum += j;
        }
    }
    /* Asked again in words that drift: an earlier ask about the same thing
     * as one the prompt matched is the same thing asked again, though it
     * shares too few words with the prompt itself ("did I make a mistake
     * turning down the offer", "was saying no to that job a bad call"). Each
     * ask found stands in for the prompt in turn, until threshold are found
     * or none is left. */
    unsigned char *in = !oom && count > 0 && count < threshold ? ar_zalloc(&ar, hn + 1) : NULL;
    if (!oom && count > 0 && count < threshold && !in)
        oom = 1;
    for (size_t k = 0; k < count && in; k++)
        in[m[k].index] = 1;
    for (size_t s = 0; in && !oom && s < count && count < threshold; s++) {
        const struct rum_item *hs = &items[m[s].index];
        struct cur cs;
        struct objs *so = ar_alloc(&ar, sizeof *so);
        int so_known = 0;
        if (!so || cur_init(&cs, hs->t, hs->n, &w, &ar) < 0 || cur_asking(&cs) < 0) {
            oom = 1;
            break;
        }
        for (i = 0; i < hn && count < threshold; i++) {
            if (items[i].at < window_start || in[i] || away[i])
                continue;
            double j;
            int other;
            if (related(&cs, hs->t, hs->n, so, &so_known, &items[i], ho, &w, (uint32_t)i + 1, only_asks, sim_thr, &j,
                        &other) < 0) {
                oom = 1;
                break;
            }
            if (j >= HOP_SIM && j >= sim_thr && j > 0) {
                in[i] = 1;
                m[count++] = (struct rum_match){i, j * m[s].sim};
                sum += j * m[s].sim;
            }
        }
    }
    text_words_free(&w);
    ar_release(&ar);
    if (oom)
        return -1;
    r->count = count;
    r->best = best;
    r->detected = count >= threshold;
    r->kind = r->detected ? RUM_DETECTED
        : count           ? RUM_SOME
        : command         ? RUM_COMMAND
        : statement       ? RUM_STATEMENT
                          : RUM_NONE;
    if (r->detected) {
        qsort(m, count, sizeof *m, by_sim);
        r->confidence = rum_confidence(sum / (double)count, sim_thr);
    } else
        r->confidence = count ? 0.9 - 0.3 * (double)count / (double)threshold : 0.9;
    return 0;
}

cJSON *rum_heuristic(void)
{
    return det_heuristic("concept_containment", "0.6.0", rum_check_description);
}

/* check_rumination: the contract's arguments, checked, to rum_run, and its
 * result as the contract's JSON. */
int rum_check(const cJSON *args, int64_t now_ms, int offset_s, cJSON **out, kerr *e)
{
    (void)offset_s;
    static const char *const keys[] = {
        "current_prompt", "history", "window_minutes", "threshold_count", "similarity_threshold", "only_asks", NULL};
    struct rum_query q = {0};
    if (det_known_keys(args, keys, "", e) < 0 ||
        det_string(args, "current_prompt", "current_prompt", 1, NULL, RUM_MAX_PROMPT, &q.prompt, &q.n, e) < 0 ||
        det_int(args, "window_minutes", "window_minutes", 1, 1440, 90, "WINDOW_OUT_OF_RANGE", &q.window_min, e) < 0 ||
        det_int(args, "threshold_count", "threshold_count", 2, 50, 3, NULL, &q.threshold, e) < 0 ||
        det_number(args, "similarity_threshold", "similarity_threshold", 0, 1, RUM_SIM_DEFAULT, &q.similarity, e) < 0)
        return -1;
    const cJSON *oa = cJSON_GetObjectItemCaseSensitive(args, "only_asks");
    if (oa && !cJSON_IsBool(oa))
        return kerr_set(e, "INPUT_INVALID", "only_asks", "only_asks must be true or false");
    q.only_asks = cJSON_IsTrue(oa);
    const cJSON *hist = cJSON_GetObjectItemCaseSensitive(args, "history");
    if (!hist)
        return kerr_set(e, "INPUT_INVALID", "history", "history is required (an empty array is fine)");
    if (!cJSON_IsArray(hist))
        return kerr_set(e, "INPUT_INVALID", "history", "history must be an array of {text, at}");
    int hn = cJSON_GetArraySize(hist);
    if (hn > RUM_MAX_HISTORY)
        return kerr_set(e, "INPUT_TOO_LARGE", "history", "history has more than %d items; keep the most recent",
                        RUM_MAX_HISTORY);

    /* Every item is checked before any work is done. */
    size_t cap = (size_t)(hn ? hn : 1);
    struct rum_item *items = malloc(cap * sizeof *items);
    const cJSON **its = malloc(cap * sizeof *its);
    struct rum_match *m = malloc(cap * sizeof *m);
    if (!items || !its || !m) {
        free(items), free(its), free(m);
        return kerr_set(e, "INTERNAL_ERROR", NULL, "out of memory");
    }
    int64_t prev = INT64_MIN;
    int i = 0, bad = 0;
    for (const cJSON *it = hist->child; it && !bad; it = it->next, i++) {
        struct rum_item *h = &items[i];
        its[i] = it;
        /* Field names are written out only for an item that is at fault. */
        bad = item_ok(it, h) < 0 ? check_item(it, i, h, e) : 0;
        if (!bad && (h->at < prev || h->at > now_ms + RUM_SKEW_MS)) {
            char fa[48];
            snprintf(fa, sizeof fa, "history[%d].at", i);
            bad = h->at < prev ? kerr_set(e, "HISTORY_OUT_OF_ORDER", fa,
                                          "history must be oldest first; %s is earlier than the item before it", fa)
                               : kerr_set(e, "HISTORY_OUT_OF_ORDER", fa, "%s is in the future", fa);
        }
        prev = h->at;
    }
    q.hist = items;
    q.nhist = (size_t)hn;
    struct rum_result r = {.match = m};
    if (!bad && rum_run(&q, now_ms, &r) < 0)
        bad = kerr_set(e, "INTERNAL_ERROR", NULL, "out of memory");
    if (bad) {
        free(items), free(its), free(m);
        return bad;
    }

    /* Keys are literals: added by reference (CS), not copied. */
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObjectCS(o, "detected", cJSON_CreateBool(r.detected));
    cJSON_AddItemToObjectCS(o, "count", cJSON_CreateNumber((double)r.count));
    cJSON_AddItemToObjectCS(o, "threshold", cJSON_CreateNumber((double)q.threshold));
    cJSON_AddItemToObjectCS(o, "window_seconds", cJSON_CreateNumber((double)(q.window_min * 60)));
    cJSON_AddItemToObjectCS(o, "similarity_threshold", cJSON_CreateNumber(det_round(q.similarity)));
    cJSON_AddItemToObjectCS(o, "best_similarity", cJSON_CreateNumber(det_round(r.best)));
    if (r.detected) {
        cJSON *arr = cJSON_CreateArray();
        cJSON_AddItemToObjectCS(o, "similar_prompts", arr);
        for (size_t k = 0; k < r.count; k++) {
            /* The prompts are quoted by reference: a long history is not
             * copied again (detect.h: the result is deleted before args). */
            size_t x = m[k].index;
            cJSON *p = cJSON_CreateObject();
            cJSON_AddItemToObjectCS(p, "text", cJSON_CreateStringReference(items[x].t));
            cJSON_AddItemToObjectCS(
                p, "at", cJSON_CreateStringReference(cJSON_GetObjectItemCaseSensitive(its[x], "at")->valuestring));
            cJSON_AddItemToObjectCS(p, "similarity", cJSON_CreateNumber(det_round(m[k].sim)));
            cJSON_AddItemToArray(arr, p);
        }
    }
    free(items), free(its), free(m);

    char reason[280];
    long window = q.window_min;
    switch (r.kind) {
    case RUM_DETECTED:
        snprintf(reason, sizeof reason,
                 "This prompt closely matches %zu earlier prompts from the last %ld minutes (best word overlap %d%%). "
                 "Asking again may not bring a new answer; a different angle or a decision might.",
                 r.count, window, (int)(r.best * 100 + 0.5));
        break;
    case RUM_SOME:
        snprintf(reason, sizeof reason,
                 "%zu earlier prompt%s from the last %ld minutes look%s similar; a loop is flagged at %ld.", r.count,
                 r.count == 1 ? "" : "s", window, r.count == 1 ? "s" : "", q.threshold);
        break;
    case RUM_COMMAND:
        snprintf(reason, sizeof reason, "This prompt is a short instruction to go on, not a question asked again.");
        break;
    case RUM_STATEMENT:
        snprintf(reason, sizeof reason,
                 "This prompt asks nothing (no question, no plea for reassurance): an instruction "
                 "is the work going on, not a question asked again.");
        break;
    default:
        snprintf(reason, sizeof reason, "No earlier prompt from the last %ld minutes is similar to this one.", window);
    }
    det_common(o, r.confidence, reason, rum_heuristic());
    static const char *const tokens[] = {"fresh-context", "override-once", "disable-for-session", "lower-sensitivity"};
    det_overrides(o, tokens, r.detected ? 4 : 0);
    *out = o;
    return 0;
}
