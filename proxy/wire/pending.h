/* pending.h: requests in flight, keyed by direction and id.
 *
 * The client and the server each number their own requests, and the two
 * numberings collide in practice (both start at 0). keel keys every pending
 * request by its direction and its id's value (string or number, 0
 * included): a peer that writes an id back otherwise than it came ("\u00e9"
 * as "é", 1.0 as 1: JSON.stringify does) answers the same request. The id's
 * bytes as they came are kept, to answer with. An open-addressing hash table. */
#ifndef KEEL_PENDING_H
#define KEEL_PENDING_H

#include <stddef.h>

/* Requests in flight at once, both ways together: past it a request is
 * answered with an error at once (TOO_MANY_PENDING), so a peer that never
 * answers cannot grow keel without end. */
#define PENDING_MAX 4096

enum pend_dir { FROM_CLIENT = 1, FROM_SERVER = 2, FROM_KEEL = 3 };
enum pend_kind { PK_OTHER, PK_INITIALIZE, PK_TOOLS_LIST, PK_REPLAY, PK_TOOLS_CALL, PK_SAMPLING, PK_DISCOVER };

struct pending_entry {
    char *id; /* NULL: empty slot; the id's bytes as they came, then its key (what it is) */
    size_t idn, keyn;
    unsigned char dir, kind, dead;
    void *data; /* the caller's, freed with free_data when dropped */
};

struct pending {
    struct pending_entry *v;
    size_t cap, used, live;
    void (*free_data)(void *);
};

void pending_free(struct pending *p);
int pending_add(struct pending *p, int dir, const char *id, size_t idn, int kind, void *data);
/* Removes the entry; 1 with *kind and *data (now the caller's) when found, 0 when not. */
int pending_take(struct pending *p, int dir, const char *id, size_t idn, int *kind, void **data);
/* The kind of a live entry, or -1 when there is none. */
int pending_kind(const struct pending *p, int dir, const char *id, size_t idn);
/* 1 if a live entry of the direction has a kind in kinds (bit 1 << kind). */
int pending_any(const struct pending *p, int dir, unsigned kinds);
/* Calls fn for each live entry of a direction, then removes them all (data freed). */
void pending_drain(struct pending *p, int dir, void (*fn)(const char *id, size_t idn, int kind, void *ctx), void *ctx);

#endif
