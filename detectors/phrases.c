/* phrases.c: the phrase tables of phrases.h. */
#include "phrases.h"

#include "embed.h"
#include "text.h"

#include <stdlib.h>
#include <string.h>

/* A table as it is parsed: its arrays grow. */
struct build {
    struct phrase *v;
    size_t n, cap;
    uint64_t *pool;
    size_t npool, cappool;
};

struct load {
    struct build *p;
    const char *const *names;
    int nnames;
    const unsigned char *min_words;
    int cls;
    int oom;
    struct text_words w;
};

static void load_line(const char *line, size_t n, void *vctx)
{
    struct load *c = vctx;
    if (line[0] == '[') {
        c->cls = -1;
        for (int k = 0; k < c->nnames; k++)
            if (c->names[k] && n == strlen(c->names[k]) + 2 && !strncmp(line + 1, c->names[k], n - 2))
                c->cls = k;
        return;
    }
    c->w.n = 0;
    if (c->cls >= 0 && text_words(line, n, &c->w) < 0) {
        c->oom = 1; /* a phrase left out: no table rather than a table without it */
        return;
    }
    if (c->cls < 0 || c->w.n == 0 || c->w.n > PHRASE_MAX || (c->min_words && c->w.n < c->min_words[c->cls]))
        return;
    struct build *p = c->p;
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 256;
        struct phrase *v = realloc(p->v, cap * sizeof *v);
        if (!v) {
            c->oom = 1;
            return;
        }
        p->v = v;
        p->cap = cap;
    }
    if (p->npool + c->w.n > p->cappool) {
        size_t cap = p->cappool ? p->cappool * 2 : 1024;
        uint64_t *v = realloc(p->pool, cap * sizeof *v);
        if (!v) {
            c->oom = 1;
            return;
        }
        p->pool = v;
        p->cappool = cap;
    }
    p->v[p->n++] = (struct phrase){(uint32_t)p->npool, (unsigned char)c->w.n, (unsigned char)c->cls};
    for (size_t i = 0; i < c->w.n; i++)
        p->pool[p->npool++] = c->w.v[i].hash;
}

/* The pool of the table being sorted (keel is one thread). */
static const uint64_t *sorting;

static int by_first(const void *a, const void *b)
{
    const struct phrase *x = a, *y = b;
    uint64_t hx = sorting[x->off], hy = sorting[y->off];
    if (hx != hy)
        return hx < hy ? -1 : 1;
    return (int)y->len - (int)x->len;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static inline uint64_t pair_of(uint64_t a, uint64_t b)
{
    return (a ^ (b * 0x9E3779B97F4A7C15ULL)) * 0xBF58476D1CE4E5B9ULL;
}

static inline void bit_set(uint64_t *bits, uint64_t h)
{
    bits[phrase_bit(h) / 64] |= 1ULL << (phrase_bit(h) % 64);
}

/* A table with no phrase: every filter reads no bit. */
static void empty(struct phrases *p)
{
    static const uint64_t none[PHRASE_BITS / 64];
    memset(p, 0, sizeof *p);
    p->bits = p->pairs = p->ones = none;
}

int phrases_parse(struct phrases *p, const char *path, const char *const *names, int nnames,
                  const unsigned char *min_words)
{
    empty(p);
    const struct embed_blob *b = embed_find(path);
    struct build t = {0};
    struct load c = {&t, names, nnames, min_words, -1, 0, {0}};
    if (b)
        text_each_line(b->data, load_line, &c);
    text_words_free(&c.w);
    uint64_t *first = t.n ? malloc(t.n * sizeof *first) : NULL;
    uint64_t *bits = calloc(3 * (PHRASE_BITS / 64), sizeof *bits);
    uint64_t *words = t.npool ? malloc(t.npool * sizeof *words) : NULL;
    if (!b || c.oom || (t.n && (!first || !words)) || !bits) {
        free(t.v);
        free(t.pool);
        free(first);
        free(bits);
        free(words);
        return -1;
    }
    size_t nwords = 0;
    if (t.npool) {
        memcpy(words, t.pool, t.npool * sizeof *words);
        qsort(words, t.npool, sizeof *words, cmp_u64);
        for (size_t i = 0; i < t.npool; i++)
            if (!nwords || words[i] != words[nwords - 1])
                words[nwords++] = words[i];
    }
    if (t.n) {
        sorting = t.pool;
        qsort(t.v, t.n, sizeof *t.v, by_first);
    }
    uint64_t *pairs = bits + PHRASE_BITS / 64, *ones = pairs + PHRASE_BITS / 64;
    for (size_t i = 0; i < t.n; i++) {
        const uint64_t *h = t.pool + t.v[i].off;
        first[i] = h[0];
        bit_set(bits, h[0]);
        if (t.v[i].len > 1)
            bit_set(pairs, pair_of(h[0], h[1]));
        else
            bit_set(ones, h[0]);
    }
    *p = (struct phrases){
        t.v, t.n, t.pool, t.npool, first, bits, pairs, ones, words, nwords, {t.v, t.pool, first, bits, words}};
    return 0;
}

int phrases_has_word(const struct phrases *p, uint64_t h)
{
    return p->nwords && bsearch(&h, p->words, p->nwords, sizeof h, cmp_u64);
}

static void forget(const struct phrases *p);

void phrases_free(struct phrases *p)
{
    forget(p);
    for (size_t i = 0; i < sizeof p->mem / sizeof *p->mem; i++)
        free(p->mem[i]);
    empty(p);
}

/* The tables parsed in this process, with copies of what they were asked
 * for by (keel-bake bakes them). */
static struct phrases_baked loaded[8];
static size_t nloaded;

static int same_args(const struct phrases_baked *b, const char *path, const char *const *names, int nnames,
                     const unsigned char *min_words)
{
    if (strcmp(b->path, path) || b->nnames != nnames || !b->min_words != !min_words)
        return 0;
    for (int k = 0; k < nnames; k++)
        if (!b->names[k] != !names[k] || (names[k] && strcmp(b->names[k], names[k])) ||
            (min_words && b->min_words[k] != min_words[k]))
            return 0;
    return 1;
}

static void remember(const struct phrases *p, const char *path, const char *const *names, int nnames,
                     const unsigned char *min_words)
{
    if (nloaded == sizeof loaded / sizeof *loaded)
        return;
    char **nv = calloc((size_t)nnames + 1, sizeof *nv);
    unsigned char *mw = min_words ? malloc((size_t)nnames + 1) : NULL;
    int ok = nv && (!min_words || mw);
    for (int k = 0; ok && k < nnames; k++)
        ok = !names[k] || (nv[k] = strdup(names[k]));
    if (!ok) {
        for (int k = 0; nv && k < nnames; k++)
            free(nv[k]);
        free(nv);
        free(mw);
        return;
    }
    if (mw)
        memcpy(mw, min_words, (size_t)nnames);
    loaded[nloaded++] = (struct phrases_baked){path, nnames, (const char *const *)nv, mw, *p};
}

/* A table freed is no longer one of the tables loaded. */
static void forget(const struct phrases *p)
{
    for (size_t i = 0; p->mem[0] && i < nloaded; i++)
        if (loaded[i].table.mem[0] == p->mem[0]) {
            for (int k = 0; k < loaded[i].nnames; k++)
                free((char *)loaded[i].names[k]);
            free((void *)loaded[i].names);
            free((void *)loaded[i].min_words);
            loaded[i] = loaded[--nloaded];
            return;
        }
}

int phrases_load(struct phrases *p, const char *path, const char *const *names, int nnames,
                 const unsigned char *min_words)
{
    for (size_t i = 0; i < phrases_baked_n; i++)
        if (same_args(&phrases_baked[i], path, names, nnames, min_words)) {
            *p = phrases_baked[i].table;
            return 0;
        }
    if (phrases_parse(p, path, names, nnames, min_words) < 0)
        return -1;
    remember(p, path, names, nnames, min_words);
    return 0;
}

size_t phrases_loaded(const struct phrases_baked **v)
{
    *v = loaded;
    return nloaded;
}

#define HASH_AT(h, stride, i) (*(const uint64_t *)((const char *)(h) + (i) * (stride)))

const struct phrase *phrases_from(const struct phrases *p, const uint64_t *h, size_t stride, size_t n, size_t i,
                                  unsigned mask)
{
    uint64_t w = HASH_AT(h, stride, i);
    /* phrases of 2+ words only when some begins with this word and the next */
    size_t most = i + 1 < n && phrase_bit_has(p->pairs, pair_of(w, HASH_AT(h, stride, i + 1))) ? n - i : 1;
    if (most == 1 && !phrase_bit_has(p->ones, w))
        return NULL;
    size_t lo = 0, hi = p->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->first[mid] < w)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo < p->n && p->first[lo] == w; lo++) {
        const struct phrase *ph = &p->v[lo];
        if (!(mask >> ph->cls & 1) || ph->len > most)
            continue;
        size_t k = 1;
        const uint64_t *words = phrase_words(p, ph);
        while (k < ph->len && HASH_AT(h, stride, i + k) == words[k])
            k++;
        if (k == ph->len)
            return ph;
    }
    return NULL;
}
