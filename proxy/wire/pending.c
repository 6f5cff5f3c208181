/* pending.c: see pending.h. Linear probing; deleted slots are tombstones
 * until the next resize, which also happens when tombstones pile up. */
#include "pending.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0'
        : c >= 'a' && c <= 'f'  ? c - 'a' + 10
        : c >= 'A' && c <= 'F'  ? c - 'A' + 10
                                : -1;
}

/* The four hex digits at s[0..4) (n bytes left), or -1. */
static long hex4(const char *s, size_t n)
{
    long v = 0;
    for (size_t i = 0; i < 4; i++) {
        int h = i < n ? hexval(s[i]) : -1;
        if (h < 0)
            return -1;
        v = v * 16 + h;
    }
    return v;
}

static size_t put_utf8(unsigned long c, char *o)
{
    if (c < 0x80)
        return o[0] = (char)c, 1;
    if (c < 0x800)
        return o[0] = (char)(0xC0 | c >> 6), o[1] = (char)(0x80 | (c & 0x3F)), 2;
    if (c < 0x10000)
        return o[0] = (char)(0xE0 | c >> 12), o[1] = (char)(0x80 | (c >> 6 & 0x3F)), o[2] = (char)(0x80 | (c & 0x3F)),
               3;
    o[0] = (char)(0xF0 | c >> 18), o[1] = (char)(0x80 | (c >> 12 & 0x3F));
    o[2] = (char)(0x80 | (c >> 6 & 0x3F)), o[3] = (char)(0x80 | (c & 0x3F));
    return 4;
}

/* A JSON string's value (id[0] is its quote) into o: 's' and its UTF-8, each
 * escape read as JSON reads it (a lone surrogate as U+FFFD, as jscan_parse
 * does). 0 when it is not a whole string. */
static size_t string_key(const char *id, size_t n, char *o)
{
    size_t k = 0;
    o[k++] = 's';
    for (size_t i = 1; i < n; i++) {
        if (id[i] == '"')
            return i + 1 == n ? k : 0;
        if (id[i] != '\\') {
            o[k++] = id[i];
            continue;
        }
        if (++i == n)
            return 0;
        const char *simple = strchr("\"\\/bfnrt", id[i]);
        if (simple && id[i]) {
            o[k++] = "\"\\/\b\f\n\r\t"[simple - "\"\\/bfnrt"];
            continue;
        }
        long c = id[i] == 'u' ? hex4(id + i + 1, n - i - 1) : -1;
        if (c < 0)
            return 0;
        i += 4;
        if (c >= 0xD800 && c < 0xDC00) { /* a high surrogate: its low one should follow */
            long lo = i + 2 < n && id[i + 1] == '\\' && id[i + 2] == 'u' ? hex4(id + i + 3, n - i - 3) : -1;
            if (lo >= 0xDC00 && lo < 0xE000) {
                c = 0x10000 + ((c - 0xD800) << 10) + (lo - 0xDC00);
                i += 6;
            } else {
                c = 0xFFFD;
            }
        } else if (c >= 0xDC00 && c < 0xE000) {
            c = 0xFFFD;
        }
        k += put_utf8((unsigned long)c, o + k);
    }
    return 0;
}

/* A JSON number's value into o: 'n', its sign, its significant digits and
 * the power of ten they are multiplied by ("1.0", "1e0" and "10e-1" all
 * "n+1e0"; 0 and -0 "n0"). 0 when it is not a number, or its exponent
 * has more than nine digits. */
static size_t number_key(const char *id, size_t n, char *o)
{
    size_t i = 0, k = 0, lead = 1;
    long point = 0, trail = 0; /* digits after the point; zeros held back */
    char sign = '+';
    if (i < n && id[i] == '-')
        sign = '-', i++;
    o[k++] = 'n';
    o[k++] = sign;
    size_t start = k;
    int seen = 0, frac = 0;
    for (; i < n && ((id[i] >= '0' && id[i] <= '9') || (id[i] == '.' && !frac)); i++) {
        if (id[i] == '.') {
            frac = 1;
            continue;
        }
        seen = 1;
        point += frac;
        if (id[i] == '0' && lead)
            continue;
        lead = 0;
        if (id[i] == '0') {
            trail++;
            continue;
        }
        for (; trail; trail--)
            o[k++] = '0';
        o[k++] = id[i];
    }
    if (!seen)
        return 0;
    long e = 0;
    if (i < n && (id[i] == 'e' || id[i] == 'E')) {
        int neg = ++i < n && id[i] == '-';
        if (i < n && (id[i] == '-' || id[i] == '+'))
            i++;
        size_t d = 0;
        for (; i < n && id[i] >= '0' && id[i] <= '9'; i++, d++)
            if ((e = e * 10 + (id[i] - '0')) > 999999999)
                return 0;
        if (!d)
            return 0;
        e = neg ? -e : e;
    }
    if (i != n)
        return 0;
    if (k == start) /* zero, whatever its sign */
        return o[1] = '0', 2;
    long power = e - point + trail;
    o[k++] = 'e';
    char b[24];
    int bl = 0;
    unsigned long a = power < 0 ? (unsigned long)-power : (unsigned long)power;
    do
        b[bl++] = (char)('0' + a % 10);
    while (a /= 10);
    if (power < 0)
        o[k++] = '-';
    while (bl)
        o[k++] = b[--bl];
    return k;
}

/* What an id is, whatever bytes wrote it: a string by its value, a number by
 * its value, anything else by its bytes ('r'). A peer may write an id back
 * otherwise than it came ("\u00e9" as "é", 1.0 as 1), and it is the same id.
 * o holds n + 24 bytes. */
static size_t id_key(const char *id, size_t n, char *o)
{
    size_t k = n && id[0] == '"' ? string_key(id, n, o) : n ? number_key(id, n, o) : 0;
    if (k)
        return k;
    o[0] = 'r';
    memcpy(o + 1, id, n);
    return n + 1;
}

static uint64_t hash(int dir, const char *id, size_t n)
{
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)dir;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)id[i];
        h *= 1099511628211ULL;
    }
    return h;
}

static void drop_data(struct pending *p, struct pending_entry *e)
{
    if (e->data && p->free_data)
        p->free_data(e->data);
    e->data = NULL;
}

void pending_free(struct pending *p)
{
    for (size_t i = 0; i < p->cap; i++) {
        drop_data(p, &p->v[i]);
        free(p->v[i].id);
    }
    free(p->v);
    void (*fd)(void *) = p->free_data;
    memset(p, 0, sizeof *p);
    p->free_data = fd;
}

static int grow(struct pending *p)
{
    size_t cap = p->cap ? (p->live * 4 > p->cap ? p->cap * 2 : p->cap) : 64;
    struct pending_entry *v = calloc(cap, sizeof *v);
    if (!v)
        return -1;
    for (size_t i = 0; i < p->cap; i++) {
        struct pending_entry *e = &p->v[i];
        if (!e->id)
            continue;
        if (e->dead) {
            free(e->id);
            continue;
        }
        size_t j = hash(e->dir, e->id + e->idn, e->keyn) & (cap - 1);
        while (v[j].id)
            j = (j + 1) & (cap - 1);
        v[j] = *e;
    }
    free(p->v);
    p->v = v;
    p->cap = cap;
    p->used = p->live;
    return 0;
}

int pending_add(struct pending *p, int dir, const char *id, size_t idn, int kind, void *data)
{
    if ((p->used + 1) * 2 > p->cap && grow(p) < 0)
        return -1;
    char *copy = malloc(idn + idn + 25); /* the id as it came, then its key */
    if (!copy)
        return -1;
    memcpy(copy, id, idn);
    size_t keyn = id_key(id, idn, copy + idn);
    size_t j = hash(dir, copy + idn, keyn) & (p->cap - 1);
    while (p->v[j].id)
        j = (j + 1) & (p->cap - 1);
    p->v[j] = (struct pending_entry){copy, idn, keyn, (unsigned char)dir, (unsigned char)kind, 0, data};
    p->used++;
    p->live++;
    return 0;
}

static struct pending_entry *find(const struct pending *p, int dir, const char *id, size_t idn)
{
    if (!p->cap)
        return NULL;
    char small[128], *key = idn + 25 <= sizeof small ? small : malloc(idn + 25);
    if (!key)
        return NULL;
    size_t keyn = id_key(id, idn, key);
    struct pending_entry *found = NULL;
    for (size_t j = hash(dir, key, keyn) & (p->cap - 1); p->v[j].id && !found; j = (j + 1) & (p->cap - 1)) {
        struct pending_entry *e = &p->v[j];
        if (!e->dead && e->dir == dir && e->keyn == keyn && memcmp(e->id + e->idn, key, keyn) == 0)
            found = e;
    }
    if (key != small)
        free(key);
    return found;
}

int pending_take(struct pending *p, int dir, const char *id, size_t idn, int *kind, void **data)
{
    struct pending_entry *e = find(p, dir, id, idn);
    if (!e)
        return 0;
    *kind = e->kind;
    if (data)
        *data = e->data;
    else
        drop_data(p, e);
    e->data = NULL;
    e->dead = 1;
    p->live--;
    return 1;
}

int pending_kind(const struct pending *p, int dir, const char *id, size_t idn)
{
    const struct pending_entry *e = find(p, dir, id, idn);
    return e ? e->kind : -1;
}

int pending_any(const struct pending *p, int dir, unsigned kinds)
{
    for (size_t i = 0; i < p->cap && p->live; i++) {
        const struct pending_entry *e = &p->v[i];
        if (e->id && !e->dead && e->dir == dir && (kinds >> e->kind & 1))
            return 1;
    }
    return 0;
}

void pending_drain(struct pending *p, int dir, void (*fn)(const char *id, size_t idn, int kind, void *ctx), void *ctx)
{
    for (size_t i = 0; i < p->cap; i++) {
        struct pending_entry *e = &p->v[i];
        if (e->id && !e->dead && e->dir == dir) {
            if (fn)
                fn(e->id, e->idn, e->kind, ctx);
            drop_data(p, e);
            e->dead = 1;
            p->live--;
        }
    }
}
