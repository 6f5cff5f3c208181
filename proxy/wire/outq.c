/* outq.c: see outq.h.
 *
 * Messages are appended to the tail chunk while it has room, so a burst of
 * small messages leaves in one writev; a message larger than a chunk gets a
 * chunk of its own. The last large chunk written out is kept as a spare for
 * the next large message, so relaying a stream of 8 MiB results does not
 * fault in 8 MiB of fresh pages each time. A lent chunk (outq_lend) holds no
 * bytes of its own, only where the caller's are. */
#include "outq.h"

#include "jscan.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define CHUNK   (64u << 10)
#define MAX_IOV 64

struct outq_chunk {
    struct outq_chunk *next;
    size_t cap, len, off;
    const char *lent; /* the bytes are the caller's, lent[0..len) (outq_lend); else data */
    char data[];
};

static const char *bytes_of(const struct outq_chunk *c)
{
    return c->lent ? c->lent : c->data;
}

void outq_init(struct outq *q, int fd)
{
    memset(q, 0, sizeof *q);
    q->fd = fd;
}

static void free_chain(struct outq_chunk *c)
{
    while (c) {
        struct outq_chunk *next = c->next;
        free(c);
        c = next;
    }
}

void outq_free(struct outq *q)
{
    free_chain(q->head);
    free_chain(q->held_head);
    q->head = q->held_head = q->held_tail = NULL;
    q->held_bytes = 0;
    q->open = 0;
    free(q->spare);
    q->spare = NULL;
    q->tail = NULL;
    q->bytes = 0;
    q->lent = 0;
}

/* A fresh chunk of at least need bytes at the end of a chain. */
static struct outq_chunk *chunk(struct outq *q, struct outq_chunk **head, struct outq_chunk **tail, size_t need)
{
    size_t cap = CHUNK;
    while (cap < need) /* a power of two, so the spare fits the next message of about this size */
        cap *= 2;
    struct outq_chunk *c;
    if (q->spare && q->spare->cap >= cap) {
        c = q->spare;
        q->spare = NULL;
    } else {
        c = malloc(sizeof *c + cap);
        if (!c)
            return NULL;
        c->cap = cap;
    }
    c->next = NULL;
    c->len = c->off = 0;
    c->lent = NULL;
    if (*tail)
        (*tail)->next = c;
    else
        *head = c;
    *tail = c;
    return c;
}

int outq_line(struct outq *q, const char *s, size_t n)
{
    if (q->failed)
        return 0; /* the reader is gone: drop quietly */
    struct outq_chunk **head = q->open ? &q->held_head : &q->head, **tail = q->open ? &q->held_tail : &q->tail;
    struct outq_chunk *c = *tail;
    if (!c || c->lent || c->cap - c->len < n + 1) {
        c = chunk(q, head, tail, n + 1);
        if (!c)
            return -1;
    }
    memcpy(c->data + c->len, s, n);
    c->data[c->len + n] = '\n';
    c->len += n + 1;
    *(q->open ? &q->held_bytes : &q->bytes) += n + 1;
    return 0;
}

/* The next n bytes of a message: written at once when nothing is ahead of
 * them, the rest copied into the queue, or with lend pointed at. */
static int part(struct outq *q, const char *s, size_t n, int lend)
{
    if (q->failed)
        return 0;
    if (!q->bytes && q->fd >= 0) { /* nothing ahead of it: straight out, queue the rest */
        ssize_t w;
        do
            w = write(q->fd, s, n);
        while (w < 0 && errno == EINTR);
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
            q->failed = 1;
            return 0; /* the reader is gone; outq_flush reports it */
        }
        if (w > 0) {
            s += w;
            n -= (size_t)w;
        }
    }
    if (lend && n) {
        struct outq_chunk *c = malloc(sizeof *c);
        if (!c)
            return -1;
        *c = (struct outq_chunk){NULL, n, n, 0, s};
        if (q->tail)
            q->tail->next = c;
        else
            q->head = c;
        q->tail = c;
        q->bytes += n;
        q->lent++;
        return 0;
    }
    while (n) {
        struct outq_chunk *c = q->tail;
        if (!c || c->lent || c->cap == c->len) {
            c = chunk(q, &q->head, &q->tail, n);
            if (!c)
                return -1;
        }
        size_t k = c->cap - c->len < n ? c->cap - c->len : n;
        memcpy(c->data + c->len, s, k);
        c->len += k;
        q->bytes += k;
        s += k;
        n -= k;
    }
    return 0;
}

int outq_end(struct outq *q)
{
    if (!q->open)
        return 0;
    int rc = outq_part(q, "\n", 1);
    q->open = 0;
    if (q->held_head) { /* what waited goes out next, in order */
        if (q->tail)
            q->tail->next = q->held_head;
        else
            q->head = q->held_head;
        q->tail = q->held_tail;
        q->bytes += q->held_bytes;
        q->held_head = q->held_tail = NULL;
        q->held_bytes = 0;
    }
    return rc;
}

int outq_part(struct outq *q, const char *s, size_t n)
{
    q->open = 1;
    return part(q, s, n, 0);
}

static void release(struct outq *q, struct outq_chunk *c)
{
    if (c->lent) {
        q->lent--;
        free(c);
    } else if (c->cap > CHUNK && (!q->spare || q->spare->cap < c->cap)) {
        free(q->spare);
        q->spare = c;
    } else {
        free(c);
    }
}

int outq_flush(struct outq *q)
{
    while (q->head && !q->failed) {
        struct iovec iov[MAX_IOV];
        int cnt = 0;
        for (struct outq_chunk *c = q->head; c && cnt < MAX_IOV; c = c->next, cnt++) {
            iov[cnt].iov_base = (char *)bytes_of(c) + c->off;
            iov[cnt].iov_len = c->len - c->off;
        }
        ssize_t w = writev(q->fd, iov, cnt);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return 0;
            int saved = errno;
            q->failed = 1;
            outq_free(q);
            errno = saved;
            return -1;
        }
        size_t left = (size_t)w;
        q->bytes -= left;
        while (q->head && left >= q->head->len - q->head->off) {
            struct outq_chunk *c = q->head;
            left -= c->len - c->off;
            q->head = c->next;
            if (!q->head)
                q->tail = NULL;
            release(q, c);
        }
        if (q->head)
            q->head->off += left;
    }
    return q->failed ? -1 : 0;
}

static int splice(struct outq *q, const char *s, size_t n, const struct jscan_insert *ins, int k, int lend)
{
    const struct jscan_insert *v[8];
    if (q->open || k > 8)
        return -1;
    for (int i = 0; i < k; i++) { /* in order of where they go */
        int j = i;
        for (; j > 0 && v[j - 1]->at > ins[i].at; j--)
            v[j] = v[j - 1];
        v[j] = &ins[i];
    }
    size_t at = 0;
    int rc = 0;
    q->open = 1;
    for (int i = 0; i < k && rc == 0; i++) {
        rc |= part(q, s + at, v[i]->at - at, lend);
        rc |= part(q, v[i]->text, strlen(v[i]->text), 0);
        at = v[i]->at + v[i]->del;
    }
    rc |= part(q, s + at, n - at, lend);
    return outq_end(q) | rc;
}

int outq_splice(struct outq *q, const char *s, size_t n, const struct jscan_insert *ins, int k)
{
    return splice(q, s, n, ins, k, 0);
}

int outq_lend_splice(struct outq *q, const char *s, size_t n, const struct jscan_insert *ins, int k)
{
    return splice(q, s, n, ins, k, 1);
}

int outq_lend(struct outq *q, const char *s, size_t n)
{
    return q->open ? outq_line(q, s, n) : splice(q, s, n, NULL, 0, 1);
}

int outq_keep(struct outq *q)
{
    for (struct outq_chunk **pp = &q->head; *pp; pp = &(*pp)->next) {
        struct outq_chunk *c = *pp;
        if (!c->lent)
            continue;
        size_t n = c->len - c->off;
        struct outq_chunk *d = malloc(sizeof *d + n);
        if (!d)
            return -1;
        *d = (struct outq_chunk){c->next, n, n, 0, NULL};
        memcpy(d->data, c->lent + c->off, n);
        *pp = d;
        if (q->tail == c)
            q->tail = d;
        q->lent--;
        free(c);
    }
    return 0;
}
