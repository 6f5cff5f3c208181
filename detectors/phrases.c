/* phrases.c: the phrase tables of phrases.h. */
#include "phrases.h"

#include "embed.h"
#include "text.h"

#include <stdlib.h>
#include <string.h>

struct load {
    struct phrases *p;
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
    if (c->cls < 0 || text_words(line, n, &c->w) < 0 || c->w.n == 0 || c->w.n > PHRASE_MAX ||
        (c->min_words && c->w.n < c->min_words[c->cls]))
        return;
    struct phrases *p = c->p;
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
    struct phrase *ph = &p->v[p->n++];
    *ph = (struct phrase){NULL, (uint32_t)p->npool, (unsigned char)c->w.n, (unsigned char)c->cls};
    for (size_t i = 0; i < c->w.n; i++)
        p->pool[p->npool++] = c->w.v[i].hash;
}

static int by_first(const void *a, const void *b)
{
    const struct phrase *x = a, *y = b;
    if (x->h[0] != y->h[0])
        return x->h[0] < y->h[0] ? -1 : 1;
    return (int)y->len - (int)x->len;
}

static inline uint64_t pair_of(uint64_t a, uint64_t b)
{
    return (a ^ (b * 0x9E3779B97F4A7C15ULL)) * 0xBF58476D1CE4E5B9ULL;
}

static inline void bit_set(uint64_t *bits, uint64_t h)
{
    bits[phrase_bit(h) / 64] |= 1ULL << (phrase_bit(h) % 64);
}

int phrases_load(struct phrases *p, const char *path, const char *const *names, int nnames,
                 const unsigned char *min_words)
{
    memset(p, 0, sizeof *p);
    const struct embed_blob *b = embed_find(path);
    struct load c = {p, names, nnames, min_words, -1, 0, {0}};
    if (b)
        text_each_line(b->data, load_line, &c);
    text_words_free(&c.w);
    if (p->n)
        p->first = malloc(p->n * sizeof *p->first);
    if (!b || c.oom || !p->first) {
        free(p->v);
        free(p->pool);
        free(p->first);
        memset(p, 0, sizeof *p);
        return -1;
    }
    for (size_t i = 0; i < p->n; i++) /* the pool has stopped moving */
        p->v[i].h = p->pool + p->v[i].off;
    qsort(p->v, p->n, sizeof *p->v, by_first);
    for (size_t i = 0; i < p->n; i++) {
        const struct phrase *ph = &p->v[i];
        p->first[i] = ph->h[0];
        bit_set(p->bits, ph->h[0]);
        if (ph->len > 1)
            bit_set(p->pairs, pair_of(ph->h[0], ph->h[1]));
        else
            bit_set(p->ones, ph->h[0]);
    }
    return 0;
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
        while (k < ph->len && HASH_AT(h, stride, i + k) == ph->h[k])
            k++;
        if (k == ph->len)
            return ph;
    }
    return NULL;
}
