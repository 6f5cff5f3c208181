/* rumcompare.c: the current prompt prepared once (cur_init: its content
 * keys, prefixes, typos, names and runs of words), and each history item
 * compared with it (cur_similarity): the share of the prompt's keys the item
 * holds outside the frame they share. An ASCII item is cut in one pass and
 * its words looked up in the memo; any other goes word by word. */
#include "rumparts.h"

#include "asking.h"
#include "detect.h"

#include <string.h>

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

static void cur_collect(void *ctx, struct word *w)
{
    struct cur *c = ctx;
    if (c->oom) /* an array grown for want of memory is lost: cur_init fails */
        return;
    size_t np = w->key && w->slen >= PREFIX_MIN ? w->slen : 0;
    size_t nb = w->key && w->slen >= TYPO_MIN ? w->slen : 0;
    if ((c->nw == c->capw && !(c->w = ar_room(c->ar, c->w, c->nw, c->nw + 1, sizeof *c->w, &c->capw, 32))) ||
        (c->nph + np > c->capph &&
         !(c->ph = ar_room(c->ar, c->ph, c->nph, c->nph + np, sizeof *c->ph, &c->capph, 256))) ||
        (c->nsb + nb > c->capsb && !(c->sbytes = ar_room(c->ar, c->sbytes, c->nsb, c->nsb + nb, 1, &c->capsb, 512)))) {
        c->oom = 1;
        return;
    }
    c->w[c->nw++] =
        (struct cword){w->raw,           w->stem,      w->key,           w->key2, w->concept,
                       w->plen,          (uint32_t)np, (uint32_t)c->nph, w->name, w->slen >= 3 ? w->ph[2] : 0,
                       (uint32_t)c->nsb, w->runh};
    if (w->key && w->key == w->stem && w->slen)
        c->typo_first[w->slen] |= 1ULL << (w->sb[0] & 63);
    if (nb)
        memcpy(c->sbytes + c->nsb, w->sb, nb);
    c->nsb += nb;
    if (np)
        memcpy(c->ph + c->nph, w->ph, np * sizeof *c->ph);
    c->nph += np;
}

int cur_init(struct cur *c, const char *s, size_t n, struct text_words *tw, struct arena *ar)
{
    memset(c, 0, sizeof *c);
    c->ar = ar;
    c->pt = s, c->pn = n, c->plea = -1;
    if (each_word(s, n, tw, ar, cur_collect, c) < 0 || c->oom)
        return -1;
    /* A phrase stands for its concept: its words give way to it, and are
     * counted (pwords) for how much the prompt says. */
    for (size_t i = 0; i < c->nw; i++) {
        struct cword *w = &c->w[i];
        if (!w->concept)
            continue;
        for (size_t k = 1; k < w->plen && k <= i; k++)
            c->pwords += c->w[i - k].key != 0, c->w[i - k].key = 0;
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
        const char *sb = c->sbytes + w->boff;
        c->typo_first[w->slen - 1] |= 1ULL << (sb[0] & 63) | 1ULL << (sb[1] & 63);
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
#define LF_ONLY    4u /* counted in o.only */

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
        /* A byte deleted from this word leaves it beginning with its first
         * byte, or its second: a key or del beginning with neither is not
         * one edit away. */
        uint64_t f = w->slen >= TYPO_MIN ? c->typo_first[w->slen - 1] : 0;
        if (!(f >> (w->sb[0] & 63) & 1) && !(f >> (w->sb[1] & 63) & 1))
            return;
        for (size_t q = 0; !p->n && q < w->slen; q++) {
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
        uint32_t *v = ar_room(m->ar, m->pool, m->npool, m->npool + p.n, sizeof *v, &m->cappool, 64);
        if (!v)
            return NULL;
        m->pool = v;
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
                                                           uint64_t concept, unsigned plen, uint64_t key2, int name)
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
    long ks[2] = {-1, -1};
    if (key2 | concept) {
        ks[0] = key2 ? map_get(&c->keys, key2) : -1, ks[1] = concept ? map_get(&c->keys, concept) : -1;
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
        rw->flags |= again ? 0 : LF_ONLY;
    }
    if (ks[1] >= 0 && plen > 1) /* a phrase the prompt holds: its words are not the item's only */
        for (size_t q = 1; q < plen && q <= j && q < MARK_BACK; q++) {
            struct rword *b = &c->ring[(j - q) % MARK_BACK];
            o->only -= (b->flags & LF_ONLY) != 0;
            b->flags &= (unsigned char)~LF_ONLY;
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
    item_occ(c, &c->o, c->stamp, sl->meta, w->concept, w->plen, w->key2, (int)w->name);
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
    /* In two passes: the words and their memo entries (a word not seen
     * before in this call analysed and matched first), then what each
     * occurrence holds. */
    struct wscan t;
    wscan_init(&t, cut, ascii_runs(s, n, cut));
    size_t a, z, nw = 0;
    int name;
    while (wscan_next(&t, s, &a, &z, &name)) {
        uint64_t key = ascii_key(s + a, z - a, s + n);
        struct mslot *sl = memo_find(m, key);
        if (!sl->key) { /* first seen: analysed, matched and remembered */
            struct word w;
            char b[STEM_MAX];
            size_t l = z - a;
            w.raw = word_lower(s + a, l, b);
            w.runh = run_word((const char *)s + a, l, w.raw);
            w.stem = stem_ascii(b, l < STEM_MAX ? l : STEM_MAX, &w);
            word_lex(&w, w.stem == w.raw);
            if (!(sl = memo_new(c, key, &w))) {
                c->oom = 1;
                return;
            }
        }
        cut->a[nw] = (uint32_t)name; /* the word's place is no longer needed */
        cut->z[nw++] = sl->meta;
    }
    struct phrase ph = {0, 0, 0};
    struct occ o = c->o; /* in registers, not behind c */
    uint32_t stamp = c->stamp;
    for (size_t k = 0; k < nw; k++) {
        uint32_t meta = cut->z[k];
        uint64_t stem = m->ent[meta >> MS_E_SHIFT].stem, concept = 0;
        unsigned plen = 0;
        if (meta & MS_END)
        concept = phrase_at(stem, &ph, &plen);
        phrase_push(&ph, stem);
        item_occ(c, &o, stamp, meta, concept, plen, 0, (int)cut->a[k]);
    }
    c->o = o;
}

/* 1 when the prompt pleads for reassurance or says it asks again: a phrase
 * of asking.h, or what the reassurance count calls a plea (syc_plea: a
 * question asking for a verdict, "is doing that right now safe?", or ending
 * in a tag asking to be told yes, "..., right?"). Worked out the first time
 * it is asked: most prompts never reach a rule that asks. Out of memory it
 * is no plea. */
int cur_pleads(struct cur *c)
{
    if (c->plea < 0)
        c->plea =
            (c->asks & (ASK_REASSURE | ASK_REASK)) || (ask_question_mark(c->pt, c->pn) && syc_plea(c->pt, c->pn) > 0);
    return c->plea;
}

/* Share of the current prompt's content keys that the item holds; when they
 * share runs of RUN words that hold content words, only the words outside
 * those runs are compared. */
int cur_similarity(struct cur *c, const char *s, size_t n, struct text_words *tw, uint32_t stamp, double *sim)
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
    if (c->o.any_run && !c->o.passage && ponly >= 1 && ponly <= SWAP_MAX && c->o.only >= 1 && c->o.only <= SWAP_MAX &&
        c->shared >= 2 && (double)c->o.covered >= SWAP_COVER * (double)c->nw && !cur_pleads(c))
        c->o.swap = 1; /* rum_check decides, with the things each names */
    if (!frame) {
        size_t held = 0;
        for (size_t q = 0; c->ntopic && q < c->keys.n; q++)
            held += c->topic[q] && c->hit[q] == stamp;
        *sim = c->keys.n == c->ntopic ? 0 : (double)(c->shared - held) / (double)(c->keys.n - c->ntopic);
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
    size_t have = c->keys.n - gone, shared = c->nfk - gone_shared, had = have;
    for (size_t q = 0; c->ntopic && q < c->keys.n; q++)
        if (c->topic[q] && !(c->seen[q] == stamp && c->fcnt[q] == c->pcount[q])) {
            have--;
            shared -= c->freek[q] == stamp;
        }
    if (had > 0 && have == 0)
        return 0; /* all it says outside the frame is the session's topic: *sim is 0 */
    *sim = have == 0 || c->o.rest == 0 ? 1.0 : (double)shared / (double)have;
    return 0;
}
