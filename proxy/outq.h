/* outq.h: an ordered queue of bytes bound for one non-blocking descriptor.
 *
 * keel never blocks on a write: messages are queued here, in order, and the
 * event loop writes out what the reader has room for once per turn, so a
 * burst of messages costs one write(2), not one each. The relay stops reading from a side whose destination queue is
 * over its high-water mark, so a slow consumer slows the producer instead of
 * growing memory: what is queued is bounded by the messages in flight. */
#ifndef KEEL_OUTQ_H
#define KEEL_OUTQ_H

#include <stddef.h>

struct outq_chunk;

struct outq {
    int fd;
    struct outq_chunk *head, *tail, *spare;
    size_t bytes;       /* queued, not yet written */
    int failed;         /* a write failed (EPIPE...): the reader is gone */
};

void outq_init(struct outq *q, int fd);
void outq_free(struct outq *q);

/* Queues s[0..n) and a newline. 0, or -1 when memory runs out. */
int outq_line(struct outq *q, const char *s, size_t n);

/* Writes what the descriptor takes now. 0, or -1 when the reader is gone. */
int outq_flush(struct outq *q);

#endif
