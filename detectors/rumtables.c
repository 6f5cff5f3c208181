/* rumtables.c: one call of check_rumination's memory and tables: an arena
 * given back at once, the memo of the history's words, a map from 64-bit
 * values to dense indices, and the buffers an ASCII text is cut into. */
#include "rumparts.h"

#include <stdlib.h>
#include <string.h>

void ar_init(struct arena *a, void *buf, size_t n)
{
    *a = (struct arena){buf, 0, n, NULL, n < 32768 ? 65536 : 2 * n};
}

void ar_release(struct arena *a)
{
    while (a->heap) {
        void *next = *(void **)a->heap;
        free(a->heap);
        a->heap = next;
    }
}

/* n bytes, 16-aligned; NULL when memory runs out. */
void *ar_alloc(struct arena *a, size_t n)
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

void *ar_zalloc(struct arena *a, size_t n)
{
    void *p = ar_alloc(a, n);
    if (p)
        memset(p, 0, n);
    return p;
}

/* A copy of old (n bytes) in want bytes. */
void *ar_grow(struct arena *a, const void *old, size_t n, size_t want)
{
    void *p = ar_alloc(a, want);
    if (p && n)
        memcpy(p, old, n);
    return p;
}

/* The array old (n elements of sz bytes, room for *cap fewer than need) in a
 * copy with room for need: *cap doubled (from first) until it fits, and set;
 * NULL when memory runs out, *cap unchanged. */
void *ar_room(struct arena *a, const void *old, size_t n, size_t need, size_t sz, size_t *cap, size_t first)
{
    size_t c = *cap ? *cap * 2 : first;
    while (c < need)
        c *= 2;
    void *p = ar_grow(a, old, n * sz, c * sz);
    if (p)
        *cap = c;
    return p;
}

int memo_init(struct memo *m, size_t cap, struct arena *ar)
{
    memset(m, 0, sizeof *m);
    m->ar = ar;
    m->s = ar_zalloc(ar, cap * sizeof *m->s);
    m->mask = cap - 1;
    return m->s ? 0 : -1;
}

/* Remembers w under key (its hash, stem and key; the keys it holds are
 * added by memo_hits), the table grown first when 7/10 full; NULL when
 * memory runs out. */
struct mslot *memo_add(struct memo *m, uint64_t key, const struct word *w)
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

/* Sizes c for n bytes of text; -1 when memory runs out. */
int wcut_reserve(struct wcut *c, size_t n, struct arena *ar)
{
    if (c->a && n <= c->cap)
        return 0;
    size_t nr = n / 2 + 1; /* a run and the byte after it */
    c->a = ar_alloc(ar, 2 * nr * sizeof *c->a);
    if (!c->a)
        return -1;
    c->z = c->a + nr;
    c->cap = n;
    return 0;
}

#define ONES 0x0101010101010101ULL
/* Which of the 8 ASCII bytes at s are word bytes (a letter, a digit or _),
 * as the 8 low bits, byte i at bit i: the bytes are tested in one word (no
 * byte is 0x80 or more, so no sum carries into the next byte). */
static inline uint64_t word_bits8(const unsigned char *s)
{
    uint64_t x;
    memcpy(&x, s, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    x = __builtin_bswap64(x);
#endif
    uint64_t y = x | 0x20 * ONES; /* A-Z as a-z */
    uint64_t letter = (y + (0x80 - 'a') * ONES) & ~(y + (0x7F - 'z') * ONES);
    uint64_t digit = (x + (0x80 - '0') * ONES) & ~(x + (0x7F - '9') * ONES);
    uint64_t t = x ^ '_' * ONES, under = ~((t + 0x7F * ONES) | t);
    uint64_t m = (letter | digit | under) & 0x80 * ONES;
    return ((m >> 7) * 0x0102040810204080ULL) >> 56; /* bit 7 of byte i to bit i */
}

/* The word bytes of ASCII s[o..o+64) as bits, none past n. */
static inline uint64_t word_bits(const unsigned char *s, size_t o, size_t n)
{
    uint64_t w = 0;
    size_t r = n - o < 64 ? n - o : 64, q = 0;
    for (; q + 8 <= r; q += 8)
        w |= word_bits8(s + o + q) << q;
    if (q < r && o + q >= 8) /* the last bytes: the 8 that end the text, less those read above */
        w |= word_bits8(s + o + r - 8) >> (8 - (r - q)) << q;
    else if (q < r) {
        unsigned char t[8] = {0}; /* a text of under 8 bytes: NUL is no word byte */
        memcpy(t, s + o + q, r - q);
        w |= word_bits8(t) << q;
    }
    return w;
}

/* The runs of word bytes of ASCII s[0..n) into c->a and c->z; returns how
 * many. A run may be only underscores, which is no word (see wscan_next).
 * The text is read 64 bytes at a time as a mask of its word bytes, whose
 * edges are where runs start and end: no branch depends on a byte. A run
 * that ends at a joiner (text.h: ' . : between letters, , ; ' . between
 * digits) goes on past it, as text_ascii_word_end cuts it: that end and the
 * start after it are left out. */
size_t ascii_runs(const unsigned char *s, size_t n, struct wcut *c)
{
    size_t na = 0, nz = 0;
    uint64_t in = 0, carry = 0; /* the block before ends in a word byte; in a joiner that joins */
    for (size_t o = 0; o < n; o += 64) {
        uint64_t w = word_bits(s, o, n), before = w << 1 | in;
        uint64_t starts = w & ~before, ends = ~w & before, skip = carry;
        if (n - o < 64)
            ends &= (1ULL << (n - o)) - 1; /* the text's end is no byte: the last run is ended below */
        carry = 0;
        for (; ends; ends &= ends - 1) {
            unsigned q = (unsigned)__builtin_ctzll(ends);
            size_t i = o + q;
            if (text_ascii_joins(s, n, i)) {
                if (q == 63)
                    carry = 1;
                else
                    skip |= 1ULL << (q + 1);
                continue;
            }
            c->z[nz++] = (uint32_t)i;
        }
        for (starts &= ~skip; starts; starts &= starts - 1)
            c->a[na++] = (uint32_t)(o + (size_t)__builtin_ctzll(starts));
        in = w >> 63;
    }
    if (nz < na)
        c->z[nz++] = (uint32_t)n;
    return nz;
}
#undef ONES

static int map_alloc(struct map *m, size_t cap)
{
    m->k = ar_zalloc(m->ar, cap * sizeof *m->k);
    m->v = ar_alloc(m->ar, cap * sizeof *m->v);
    m->mask = cap - 1;
    m->n = 0;
    return m->k && m->v ? 0 : -1;
}

int map_init(struct map *m, struct arena *ar)
{
    m->ar = ar;
    m->oom = 0;
    return map_alloc(m, 16);
}

/* Index of key, added if new; -1 when memory runs out (m->oom is then set). */
long map_add(struct map *m, uint64_t key)
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
