/* outq.c: see outq.h. Chunks are copies of the unwritten tail of a message. */
#include "outq.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

struct outq_chunk {
    struct outq_chunk *next;
    size_t len, off;
    char data[];
};

void outq_init(struct outq *q, int fd)
{
    memset(q, 0, sizeof *q);
    q->fd = fd;
}

void outq_free(struct outq *q)
{
    while (q->head) {
        struct outq_chunk *c = q->head;
        q->head = c->next;
        free(c);
    }
    q->tail = NULL;
    q->bytes = 0;
}

static int append(struct outq *q, const char *a, size_t an, const char *b, size_t bn)
{
    struct outq_chunk *c = malloc(sizeof *c + an + bn);
    if (!c)
        return -1;
    c->next = NULL;
    c->len = an + bn;
    c->off = 0;
    memcpy(c->data, a, an);
    memcpy(c->data + an, b, bn);
    if (q->tail)
        q->tail->next = c;
    else
        q->head = c;
    q->tail = c;
    q->bytes += c->len;
    return 0;
}

int outq_line(struct outq *q, const char *s, size_t n)
{
    if (q->failed)
        return 0;                   /* the reader is gone: drop quietly */
    size_t done = 0;
    if (!q->head) {                 /* nothing ahead of it: try to write now */
        struct iovec iov[2] = {{(void *)s, n}, {(void *)"\n", 1}};
        ssize_t w;
        do
            w = writev(q->fd, iov, 2);
        while (w < 0 && errno == EINTR);
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
            q->failed = 1;
            return 0;
        }
        done = w > 0 ? (size_t)w : 0;
        if (done == n + 1)
            return 0;
    }
    if (done >= n)
        return append(q, "\n", 1, "", 0);
    return append(q, s + done, n - done, "\n", 1);
}

int outq_flush(struct outq *q)
{
    while (q->head && !q->failed) {
        struct iovec iov[16];
        int cnt = 0;
        for (struct outq_chunk *c = q->head; c && cnt < 16; c = c->next, cnt++) {
            iov[cnt].iov_base = c->data + c->off;
            iov[cnt].iov_len = c->len - c->off;
        }
        ssize_t w = writev(q->fd, iov, cnt);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return 0;
            q->failed = 1;
            outq_free(q);
            return -1;
        }
        size_t left = (size_t)w;
        q->bytes -= left;
        while (left && q->head) {
            struct outq_chunk *c = q->head;
            size_t take = c->len - c->off < left ? c->len - c->off : left;
            c->off += take;
            left -= take;
            if (c->off == c->len) {
                q->head = c->next;
                if (!q->head)
                    q->tail = NULL;
                free(c);
            }
        }
    }
    return q->failed ? -1 : 0;
}
