/* frame.h: newline-delimited messages from a file descriptor.
 *
 * MCP's stdio transport is one JSON-RPC message per line. The reader buffers
 * bytes and hands out whole lines without copying. A line longer than the cap
 * is never held in full: its first and last FRAME_HEAD bytes are kept (enough
 * to read the id of a request, which SDKs often write last) and the rest is
 * discarded up to the newline, so a 2 GiB line costs 2 * FRAME_HEAD bytes. A final line without a
 * newline at end of input is still a line. */
#ifndef KEEL_FRAME_H
#define KEEL_FRAME_H

#include <stddef.h>

#define FRAME_HEAD  4096
#define FRAME_CHUNK 65536

enum frame_status {
    FRAME_LINE, /* *line, *n: one line without its newline (and without a trailing CR) */
    FRAME_OVERSIZE, /* *line, *n: the line's first bytes; r->tail: its last; r->oversize_bytes: its length */
    FRAME_NEED, /* no complete line buffered: call frame_fill */
    FRAME_EOF, /* input ended and everything was handed out */
};

struct frame_reader {
    int fd;
    size_t max; /* largest line accepted */
    char *buf;
    size_t start, len, cap; /* buffered bytes are buf[start .. start+len) */
    int eof;
    int discarding; /* inside an oversize line */
    char head[FRAME_HEAD];
    size_t head_n;
    char tail[FRAME_HEAD]; /* the last bytes of an oversize line (ids often come last) */
    size_t tail_n;
    size_t oversize_bytes;
    size_t scanned; /* bytes after start already known to hold no newline */
    int pinned; /* lines it handed out are still in use (frame_pin) */
    size_t ready; /* buf[0 .. ready) is mapped in (a grown buffer's pages are, ahead of each read) */
};

void frame_init(struct frame_reader *r, int fd, size_t max);
void frame_free(struct frame_reader *r);

/* One read(2). Returns bytes read, 0 at end of input, -1 on error (errno). */
long frame_fill(struct frame_reader *r);

/* The next line, if a whole one is buffered. The line stays valid until the
 * next call to frame_next or frame_fill, or while the reader is pinned. */
enum frame_status frame_next(struct frame_reader *r, const char **line, size_t *n);

/* For a line passed on before it ends: every byte buffered (when frame_next
 * said FRAME_NEED, none is a newline), and dropping the first n of them. */
/* Keeps the last FRAME_HEAD bytes of a stream in tail[0..*tail_n), p[0..n) being its next bytes. */
void frame_keep_tail(char *tail, size_t *tail_n, const char *p, size_t n);
size_t frame_peek(const struct frame_reader *r, const char **p);
void frame_consume(struct frame_reader *r, size_t n);

/* Pinned, the reader keeps every byte it handed out where it is (a large line
 * written out from the buffer itself, outq_lend): nothing is moved, freed or
 * read over, and frame_fill reads only into the room after what it holds
 * (-1 with EAGAIN when there is none: frame_room says whether there is). */
void frame_pin(struct frame_reader *r, int on);
int frame_room(const struct frame_reader *r);
/* 1 if p lies in the reader's buffer. */
int frame_holds(const struct frame_reader *r, const char *p);

#endif
