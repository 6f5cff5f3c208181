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
    size_t bytes; /* queued, not yet written */
    int failed; /* a write failed (EPIPE...): the reader is gone */
    int open; /* a message is being queued in parts (outq_part) */
    struct outq_chunk *held_head, *held_tail; /* whole messages waiting for it to end */
    size_t held_bytes;
    int lent; /* chunks queued that point at the caller's bytes (outq_lend) */
};

void outq_init(struct outq *q, int fd);
void outq_free(struct outq *q);

/* Queues s[0..n) and a newline. 0, or -1 when memory runs out. */
int outq_line(struct outq *q, const char *s, size_t n);

/* A message passed on as it arrives: outq_part queues its next bytes, and
 * outq_end ends it with a newline. Meanwhile outq_line holds other messages
 * back, so none lands inside it; outq_end queues them after it, in order. */
int outq_part(struct outq *q, const char *s, size_t n);
int outq_end(struct outq *q);

/* Queues s[0..n) with the insertions made (in any order, not overlapping:
 * jscan.h) and a newline, without a copy of the whole: the pieces go out as
 * outq_part's do. Not while a message is open. 0, or -1 out of memory. */
struct jscan_insert;
int outq_splice(struct outq *q, const char *s, size_t n, const struct jscan_insert *ins, int k);

/* outq_line and outq_splice without copying s: what the descriptor does not
 * take at once is queued as a pointer to s, whose bytes the caller keeps in
 * place while q->lent (frame.h, frame_pin). Not while a message is open (the
 * bytes are then copied). outq_keep copies whatever is still lent, so the
 * caller may let its bytes go. 0, or -1 out of memory. */
int outq_lend(struct outq *q, const char *s, size_t n);
int outq_lend_splice(struct outq *q, const char *s, size_t n, const struct jscan_insert *ins, int k);
int outq_keep(struct outq *q);

/* Writes what the descriptor takes now. 0, or -1 when the reader is gone. */
int outq_flush(struct outq *q);

#endif
