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

static inline size_t bit_of(uint64_t h)
{
    return (size_t)(h >> 7) % PHRASE_BITS;
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
        p->first[i] = p->v[i].h[0];
        p->bits[bit_of(p->v[i].h[0]) / 64] |= 1ULL << (bit_of(p->v[i].h[0]) % 64);
    }
    return 0;
}

#define HASH_AT(h, stride, i) (*(const uint64_t *)((const char *)(h) + (i) * (stride)))

const struct phrase *phrases_at(const struct phrases *p, const uint64_t *h, size_t stride, size_t n, size_t i,
                                unsigned mask)
{
    uint64_t w = HASH_AT(h, stride, i);
    if (!(p->bits[bit_of(w) / 64] >> (bit_of(w) % 64) & 1))
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
        if (!(mask >> ph->cls & 1) || i + ph->len > n)
            continue;
        size_t k = 1;
        while (k < ph->len && HASH_AT(h, stride, i + k) == ph->h[k])
            k++;
        if (k == ph->len)
            return ph;
    }
    return NULL;
}
