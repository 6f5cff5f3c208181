/* pending.c: see pending.h. Linear probing; deleted slots are tombstones
 * until the next resize, which also happens when tombstones pile up. */
#include "pending.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
        size_t j = hash(e->dir, e->id, e->idn) & (cap - 1);
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
    char *copy = malloc(idn ? idn : 1);
    if (!copy)
        return -1;
    memcpy(copy, id, idn);
    size_t j = hash(dir, id, idn) & (p->cap - 1);
    while (p->v[j].id)
        j = (j + 1) & (p->cap - 1);
    p->v[j] = (struct pending_entry){copy, idn, (unsigned char)dir, (unsigned char)kind, 0, data};
    p->used++;
    p->live++;
    return 0;
}

static struct pending_entry *find(const struct pending *p, int dir, const char *id, size_t idn)
{
    if (!p->cap)
        return NULL;
    size_t j = hash(dir, id, idn) & (p->cap - 1);
    for (; p->v[j].id; j = (j + 1) & (p->cap - 1)) {
        struct pending_entry *e = &p->v[j];
        if (!e->dead && e->dir == dir && e->idn == idn && memcmp(e->id, id, idn) == 0)
            return e;
    }
    return NULL;
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
