/* rumwords.c: what a word is to check_rumination. A text's words (text.h,
 * or one pass over ASCII text that cuts the same words), each stemmed by
 * Snowball in the prompt's language (stem.h), looked up in the lexicon of
 * stopwords and concepts (detectors/data: concepts.txt in English for every
 * prompt, concepts-<code>.txt for a prompt in that language), and joined
 * into the phrases of those groups. */
#include "rumparts.h"

#include "embed.h"

#include <stdlib.h>
#include <string.h>
#include <unicase.h>
#include <unictype.h>
#include <unistr.h>
#include <uninorm.h>

static uint64_t mix(uint64_t a, uint64_t b)
{
    uint64_t h = (a ^ (b + 0x9E3779B97F4A7C15ULL + (a << 6) + (a >> 2))) * 0xBF58476D1CE4E5B9ULL;
    h ^= h >> 31;
    return h ? h : 1;
}

/* The language of the call's prompt (stem.h), in which every word of the
 * call is stemmed; the lexicon is built in English. */
enum stem_lang rum_lang = STEM_EN;

/* The stem of a lower-case word b[0..n): Snowball's in rum_lang, hashed; a
 * stem that is ASCII keeps its bytes and their prefix hashes, for prefix and
 * typo matching. */
uint64_t stem_ascii(const char *b, size_t n, struct word *w)
{
    size_t e = text_elision(b, n); /* "l'asthme" is "asthme", "c'est" is "est" */
    w->lraw = e ? text_word_hash(b + e, n - e) : 0;
    b += e;
    n -= e;
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
    w->lraw = 0;
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

/* The lexicon: two tables of open addressing on a key's low bits, each at
 * most half full: English's (its groups, which serve every language, and
 * the stopwords) and the other languages' (each one's groups under its own
 * salt), so that an English prompt looks in the small one only. The build
 * bakes them (lex_baked, written by keel-bake); a build that baked none
 * reads the files at the first prompt. A baked table is read-only: an entry
 * put into it moves it to the heap first. */
struct lextab {
    uint64_t *k;
    uint32_t *v;
    size_t n, cap;
    int ro; /* k and v are the baked arrays */
    uint64_t *k0; /* its arrays before it grew */
    uint32_t *v0;
};
static uint64_t en_k0[LEX_SIZE], other_k0[LEX_SIZE];
static uint32_t en_v0[LEX_SIZE], other_v0[LEX_SIZE];
static struct lextab lex_en = {en_k0, en_v0, 0, LEX_SIZE, 0, en_k0, en_v0},
                     lex_other = {other_k0, other_v0, 0, LEX_SIZE, 0, other_k0, other_v0};
static int lex_oom; /* an entry was left out for want of memory */

/* A bit for the last two stems of every phrase (mix of the two): most words
 * that can end a phrase follow a word that ends none with them, and are
 * ruled out by one bit instead of three lexicon probes. */
#define PAIR_BITS  16
#define PAIR_OTHER (1u << PAIR_BITS) /* the other languages' bits come after English's */
static uint64_t lex_pair0[2 * PAIR_OTHER / 64];
static const uint64_t *lex_pair = lex_pair0;

static inline size_t pair_bit(uint64_t h)
{
    return (size_t)(h >> (64 - PAIR_BITS));
}

static inline uint32_t tab_get(const struct lextab *t, uint64_t k)
{
    for (size_t j = k & (t->cap - 1); t->k[j]; j = (j + 1) & (t->cap - 1))
        if (t->k[j] == k)
            return t->v[j];
    return 0;
}

uint32_t lex_get(uint64_t k)
{
    return tab_get(&lex_en, k);
}

static size_t tab_slot(const struct lextab *t, uint64_t k)
{
    size_t j = k & (t->cap - 1);
    while (t->k[j] && t->k[j] != k)
        j = (j + 1) & (t->cap - 1);
    return j;
}

/* The table in cap slots on the heap; 0, or -1 when memory runs out (the
 * table stays as it was, and the entries that do not fit are left out). */
static int tab_grow(struct lextab *t, size_t cap)
{
    uint64_t *k = calloc(cap, sizeof *k);
    uint32_t *v = calloc(cap, sizeof *v);
    if (!k || !v) {
        free(k);
        free(v);
        return -1;
    }
    uint64_t *ok = t->k;
    uint32_t *ov = t->v;
    size_t ocap = t->cap;
    t->k = k, t->v = v, t->cap = cap;
    for (size_t j = 0; j < ocap; j++)
        if (ok[j]) {
            size_t s = tab_slot(t, ok[j]);
            t->k[s] = ok[j], t->v[s] = ov[j];
        }
    if (ok != t->k0 && !t->ro) {
        free(ok);
        free(ov);
    }
    t->ro = 0;
    return 0;
}

/* Adds bits to k's value; a concept already set is kept (the first group wins). */
static void tab_put(struct lextab *t, uint64_t k, uint32_t v)
{
    if (t->ro && tab_grow(t, t->cap) < 0) {
        lex_oom = 1;
        return;
    }
    size_t j = tab_slot(t, k);
    if (!t->k[j]) {
        if (t->n >= t->cap / 2) {
            if (tab_grow(t, t->cap * 2) < 0) {
                lex_oom = 1;
                return;
            }
            j = tab_slot(t, k);
        }
        t->k[j] = k;
        t->n++;
    }
    if ((t->v[j] >> LEX_ID_SHIFT) && (v >> LEX_ID_SHIFT))
        v &= (1u << LEX_ID_SHIFT) - 1;
    t->v[j] |= v;
}

void lex_put(uint64_t k, uint32_t v)
{
    tab_put(&lex_en, k, v);
}

/* The table back to its own arrays, empty (what the heap held is freed). */
static void tab_clear(struct lextab *t)
{
    if (t->k != t->k0 && !t->ro) {
        free(t->k);
        free(t->v);
    }
    memset(t->k0, 0, LEX_SIZE * sizeof *t->k0);
    memset(t->v0, 0, LEX_SIZE * sizeof *t->v0);
    t->k = t->k0, t->v = t->v0, t->n = 0, t->cap = LEX_SIZE, t->ro = 0;
}

/* The baked table, read-only until an entry is put into it. */
static void tab_adopt(struct lextab *t, const struct lex_table *b)
{
    if (t->k != t->k0 && !t->ro)
        free(t->k), free(t->v);
    t->k = (uint64_t *)b->k, t->v = (uint32_t *)b->v, t->n = b->n, t->cap = b->cap, t->ro = 1;
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

/* The salt of the concept keys of the language whose groups are read or
 * looked up: 0 for English, whose groups serve every language; another
 * language's groups are its own (a German stem that is also an English
 * word is not the English word). */
static uint64_t lex_salt;

static inline uint64_t salted(uint64_t k)
{
    return lex_salt ? mix(k, lex_salt) : k;
}

/* One line of a concepts file: entries separated by commas, each one word
 * or a phrase of up to PHRASE_MAX words, stemmed in rum_lang. */
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
            /* where a phrase may end, under the language's salt too: a
             * prompt in another language does not look for its phrases */
            if (tw.n >= 2) {
                size_t bit = pair_bit(salted(mix(before, last)));
                bit += lex_salt ? PAIR_OTHER : 0;
                lex_pair0[bit / 64] |= 1ULL << (bit % 64);
            }
            uint32_t v = (*id + 1) << LEX_ID_SHIFT;
            struct lextab *t = lex_salt ? &lex_other : &lex_en;
            if (tw.n == 1) {
                tab_put(t, salted(last), v);
            } else {
                tab_put(t, salted(mix(h, PHRASE_SALT)), v | (uint32_t)tw.n << LEX_LEN_SHIFT);
                tab_put(t, salted(last), LEX_END);
            }
        }
        a = b + 1;
    }
    text_words_free(&tw);
}

/* The concept groups of each language: concepts.txt (English, which serve
 * every language) and concepts-<code>.txt (that language's own). */
static const char *const concept_file[STEM_NLANG] = {
    [STEM_EN] = "detectors/data/concepts.txt",    [STEM_DE] = "detectors/data/concepts-de.txt",
    [STEM_FR] = "detectors/data/concepts-fr.txt", [STEM_ES] = "detectors/data/concepts-es.txt",
    [STEM_IT] = "detectors/data/concepts-it.txt", [STEM_PT] = "detectors/data/concepts-pt.txt",
    [STEM_NL] = "detectors/data/concepts-nl.txt", [STEM_RU] = "detectors/data/concepts-ru.txt",
    [STEM_AR] = "detectors/data/concepts-ar.txt", [STEM_HI] = "detectors/data/concepts-hi.txt",
};
static unsigned lex_groups, lex_own; /* groups read; the languages with groups of their own */

static uint64_t salt_of(enum stem_lang lang)
{
    return lang == STEM_EN ? 0 : 0x4C414E47ULL + (uint64_t)lang;
}

static void lex_lang(enum stem_lang lang)
{
    const struct embed_blob *b = concept_file[lang] ? embed_find(concept_file[lang]) : NULL;
    if (!b)
        return;
    enum stem_lang keep = rum_lang;
    rum_lang = lang;
    lex_salt = salt_of(lang);
    text_each_line(b->data, lex_concept, &lex_groups);
    lex_own |= (unsigned)(lang != STEM_EN) << lang;
    rum_lang = keep;
}

static int lex_done;
static int lex_baked_in; /* the lexicon is the baked one (a heap copy of it too) */
static unsigned lex_checked; /* the languages whose stems were found to be the baked ones */

/* What lang's stemmer in this process makes of the words of the first
 * LEX_PRINT_LINES groups of its file, hashed; 0 for a language with no
 * file. */
#define LEX_PRINT_LINES 3
struct print_ctx {
    uint64_t h;
    int lines;
    struct text_words tw;
};

static void print_line(const char *line, size_t n, void *vctx)
{
    struct print_ctx *c = vctx;
    struct word w;
    c->tw.n = 0;
    if (c->lines >= LEX_PRINT_LINES || text_words(line, n, &c->tw) < 0)
        return;
    c->lines++;
    for (size_t i = 0; i < c->tw.n; i++) {
        const struct text_word *x = &c->tw.v[i];
        c->h = mix(c->h, word_stem(line + x->start, x->end - x->start, x->hash, &w));
    }
}

static uint64_t lex_print(enum stem_lang lang)
{
    const struct embed_blob *b = concept_file[lang] ? embed_find(concept_file[lang]) : NULL;
    if (!b)
        return 0;
    enum stem_lang keep = rum_lang;
    rum_lang = lang;
    struct print_ctx c = {0x9E3779B97F4A7C15ULL, 0, {0}};
    text_each_line(b->data, print_line, &c);
    text_words_free(&c.tw);
    rum_lang = keep;
    return c.h;
}

/* lex_init with baked as the build's lexicon: adopted, and used for a
 * prompt in lang while this process stems English and lang as the build
 * did; else the files are read and stemmed here (a missing libstemmer
 * leaves words as they are, on both sides). */
static void lex_use(const struct lex_state *baked, enum stem_lang lang)
{
    if (!lex_done && baked->en.cap) {
        tab_adopt(&lex_en, &baked->en);
        tab_adopt(&lex_other, &baked->other);
        lex_pair = baked->pair;
        lex_groups = baked->groups, lex_own = baked->own;
        lex_done = lex_baked_in = 1;
    }
    if (!lex_done) /* a build that baked none */
        lex_read_all(&(struct lex_state){0});
    enum stem_lang check[2] = {STEM_EN, lang};
    for (int q = 0; q < 2 && lex_baked_in; q++) {
        enum stem_lang l = check[q];
        if (l <= STEM_NONE || l >= STEM_NLANG || (lex_checked >> l & 1))
            continue;
        if (lex_print(l) != baked->print[l])
            lex_read_all(&(struct lex_state){0});
        else
            lex_checked |= 1u << l;
    }
    lex_salt = lex_own >> lang & 1 ? salt_of(lang) : 0;
}

void lex_init(enum stem_lang lang)
{
    lex_use(&lex_baked, lang);
}

int lex_read_all(struct lex_state *out)
{
    tab_clear(&lex_en);
    tab_clear(&lex_other);
    memset(lex_pair0, 0, sizeof lex_pair0);
    lex_pair = lex_pair0;
    lex_groups = lex_own = 0, lex_oom = 0;
    const struct embed_blob *b = embed_find("detectors/data/stopwords.txt");
    if (b)
        text_each_line(b->data, lex_stop, NULL);
    for (int l = STEM_EN; l < STEM_NLANG; l++) /* English first: its groups serve every language */
        lex_lang((enum stem_lang)l);
    static uint64_t print[STEM_NLANG];
    for (int l = 0; l < STEM_NLANG; l++)
        print[l] = lex_print((enum stem_lang)l);
    lex_done = 1;
    lex_baked_in = 0;
    *out = (struct lex_state){{lex_en.k, lex_en.v, lex_en.n, lex_en.cap},
                              {lex_other.k, lex_other.v, lex_other.n, lex_other.cap},
                              lex_pair,
                              lex_groups,
                              lex_own,
                              print};
    return lex_oom ? -1 : 0;
}

size_t lex_size(void)
{
    return lex_en.n + lex_other.n;
}

size_t lex_room(void)
{
    return lex_en.cap + lex_other.cap;
}

/* Fills in w's content key and lexicon flags; raw and stem are set. */
void word_lex(struct word *w, int stem_is_raw)
{
    uint32_t v = lex_get(w->lraw ? w->lraw : w->raw);
    uint32_t vs = stem_is_raw && !w->lraw ? v : lex_get(w->stem);
    uint32_t id = vs >> LEX_ID_SHIFT;
    if (lex_salt) { /* the prompt's language's own group first, and its phrases' ends */
        uint32_t own = tab_get(&lex_other, mix(w->stem, lex_salt));
        id = own >> LEX_ID_SHIFT ? own >> LEX_ID_SHIFT : id;
        vs |= own & LEX_END;
    }
    w->key = v & LEX_STOP ? 0 : id ? mix(id, CONCEPT_SALT) : w->stem;
    w->vs = vs;
    w->p3 = w->slen >= 3 ? w->ph[2] : 0;
}

/* The concept of a phrase of concepts.txt ending with stem, given the words
 * before it (its length in *plen), or 0. */
uint64_t phrase_at(uint64_t stem, const struct phrase *ph, unsigned *plen)
{
    if (!ph->s1)
        return 0;
    uint64_t two = mix(ph->s1, stem);
    size_t bit = pair_bit(two);
    if (!(lex_pair[bit / 64] >> (bit % 64) & 1)) { /* no English phrase ends with these two stems */
        bit = lex_salt ? PAIR_OTHER + pair_bit(mix(two, lex_salt)) : bit;
        if (!lex_salt || !(lex_pair[bit / 64] >> (bit % 64) & 1))
            return 0; /* nor one of the prompt's language */
    }
    /* hashed as lex_concept hashes a phrase's stems */
    uint64_t p2 = ph->s2 ? mix(ph->s2, ph->s1) : 0, p3 = ph->s3 ? mix(mix(ph->s3, ph->s2), ph->s1) : 0;
    uint64_t n2 = mix(ph->s1, stem), n3 = p2 ? mix(p2, stem) : 0, n4 = p3 ? mix(p3, stem) : 0;
    uint64_t c[3] = {n4, n3, n2};
    for (int q = 0; q < 3; q++) {
        uint32_t p = c[q] && lex_salt ? tab_get(&lex_other, mix(mix(c[q], PHRASE_SALT), lex_salt)) : 0;
        if (c[q] && !(p >> LEX_ID_SHIFT))
            p = lex_get(mix(c[q], PHRASE_SALT));
        if (p >> LEX_ID_SHIFT) {
            *plen = (p >> LEX_LEN_SHIFT) & 7;
            return mix(p >> LEX_ID_SHIFT, CONCEPT_SALT);
        }
    }
    return 0;
}

static inline void word_phrase(struct word *w, struct phrase *ph)
{
    w->concept = 0;
    if (w->vs & LEX_END) /* only where some phrase can end */
    w->concept = phrase_at(w->stem, ph, &w->plen);
    phrase_push(ph, w->stem);
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

/* Whether the word at a (of s) is capitalised inside a sentence, as
 * wscan_next says of ASCII text: an upper-case first letter, and no . ! ?
 * : newline (or 。！？) since the word before, which ended at last; the
 * first word (first) is none. */
static int unicode_name(const char *s, size_t last, const char *a, size_t l, int first)
{
    ucs4_t c;
    if (first || u8_mbtouc(&c, (const uint8_t *)a, l) < 1 || !uc_is_upper(c))
        return 0;
    for (const uint8_t *q = (const uint8_t *)s + last, *end = (const uint8_t *)a; q < end;) {
        q += u8_mbtouc(&c, q, (size_t)(end - q));
        if (text_full_stop(c) || c == ':' || c == '\n')
            return 0;
    }
    return 1;
}

/* The words of a text through libunistring (text.h), for text that is not
 * all ASCII. */
int words_unicode(const char *s, size_t n, struct text_words *tw, struct memo *m, word_fn fn, void *ctx)
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
        w.name = (unsigned)unicode_name(s, i ? tw->v[i - 1].end : 0, a, l, i == 0);
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

/* The prompt's words, each passed to fn. */
int each_word(const char *s, size_t n, struct text_words *tw, struct arena *ar, word_fn fn, void *ctx)
{
    if (text_ascii_prefix(s, n) == n)
        return words_ascii(s, n, ar, fn, ctx);
    return words_unicode(s, n, tw, NULL, fn, ctx);
}
