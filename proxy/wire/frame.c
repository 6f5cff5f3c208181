/* frame.c: the line reader (see frame.h).
 *
 * The buffer holds at most max + FRAME_CHUNK bytes. Consumed bytes are
 * reclaimed by moving the unread tail to the front only when a read needs
 * room, so a burst of small lines costs one memmove per read, not per line. */
#include "frame.h"

#include "platform.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PREFAULT (1u << 20) /* pages mapped in ahead of a read, at most */

void frame_init(struct frame_reader *r, int fd, size_t max)
{
    memset(r, 0, sizeof *r);
    r->fd = fd;
    r->max = max;
}

void frame_free(struct frame_reader *r)
{
    if (!r->pinned) /* pinned, its bytes may still be going out: left to them */
        free(r->buf);
    r->buf = NULL;
}

long frame_fill(struct frame_reader *r)
{
    if (r->pinned) { /* only the room after what is held */
        if (!frame_room(r)) {
            errno = EAGAIN;
            return -1;
        }
    } else if (!r->len) { /* all consumed: read from the start again, into pages already in use */
        r->start = 0, r->scanned = 0;
    }
    if (!r->pinned && r->start + r->len + FRAME_CHUNK > r->cap) {
        if (r->start) {
            memmove(r->buf, r->buf + r->start, r->len);
            r->start = 0;
        }
        if (r->len + FRAME_CHUNK > r->cap) {
            size_t cap = r->cap ? r->cap : FRAME_CHUNK * 2;
            while (cap < r->len + FRAME_CHUNK)
                cap *= 2;
            char *b = realloc(r->buf, cap);
            if (!b) {
                errno = ENOMEM;
                return -1;
            }
            r->buf = b;
            r->cap = cap;
            r->ready = r->start + r->len; /* what was kept is mapped in; the rest may be fresh */
        }
    }
    if (r->cap > 2 * FRAME_CHUNK) { /* a large line is coming in: its next pages at once */
        size_t want = r->cap - r->start - r->len, end = r->start + r->len + (want < PREFAULT ? want : PREFAULT);
        if (end > r->ready) {
            platform_prefault(r->buf + r->ready, end - r->ready);
            r->ready = end;
        }
    }
    ssize_t got;
    do
        got = read(r->fd, r->buf + r->start + r->len, r->cap - r->start - r->len);
    while (got < 0 && errno == EINTR);
    if (got < 0)
        return -1;
    if (got == 0)
        r->eof = 1;
    r->len += (size_t)got;
    return (long)got;
}

void frame_keep_tail(char *tail, size_t *tail_n, const char *p, size_t n)
{
    if (n >= FRAME_HEAD) {
        memcpy(tail, p + n - FRAME_HEAD, FRAME_HEAD);
        *tail_n = FRAME_HEAD;
        return;
    }
    size_t keep = *tail_n + n > FRAME_HEAD ? FRAME_HEAD - n : *tail_n;
    memmove(tail, tail + *tail_n - keep, keep);
    memcpy(tail + keep, p, n);
    *tail_n = keep + n;
}

static void keep_tail(struct frame_reader *r, const char *p, size_t n)
{
    frame_keep_tail(r->tail, &r->tail_n, p, n);
}

static void keep_head(struct frame_reader *r, const char *p, size_t n)
{
    size_t room = FRAME_HEAD - r->head_n;
    if (n > room)
        n = room;
    memcpy(r->head + r->head_n, p, n);
    r->head_n += n;
}

enum frame_status frame_next(struct frame_reader *r, const char **line, size_t *n)
{
    for (;;) {
        if (!r->buf) /* nothing read yet (the buffer comes with the first fill) */
            return r->eof ? FRAME_EOF : FRAME_NEED;
        char *p = r->buf + r->start;
        char *nl = r->len > r->scanned ? memchr(p + r->scanned, '\n', r->len - r->scanned) : NULL;
        if (r->discarding) {
            size_t upto = nl ? (size_t)(nl - p) : r->len;
            keep_head(r, p, upto);
            keep_tail(r, p, upto);
            r->oversize_bytes += upto;
            if (!nl && !r->eof) {
                if (r->pinned) /* drop what we have; the line is lost anyway */
                    r->start += r->len;
                else
                    r->start = 0;
                r->len = 0;
                r->scanned = 0;
                return FRAME_NEED;
            }
            r->discarding = 0;
            size_t used = nl ? upto + 1 : upto;
            r->start += used;
            r->len -= used;
            r->scanned = 0;
            *line = r->head;
            *n = r->head_n;
            return FRAME_OVERSIZE;
        }
        if (nl) {
            size_t ln = (size_t)(nl - p);
            r->start += ln + 1;
            r->len -= ln + 1;
            r->scanned = 0;
            if (ln > r->max) {
                r->head_n = r->tail_n = 0;
                keep_head(r, p, ln);
                keep_tail(r, p, ln);
                r->oversize_bytes = ln;
                *line = r->head;
                *n = r->head_n;
                return FRAME_OVERSIZE;
            }
            if (ln && p[ln - 1] == '\r')
                ln--;
            *line = p;
            *n = ln;
            return FRAME_LINE;
        }
        r->scanned = r->len;
        if (r->len > r->max) { /* too long already: switch to discarding */
            r->discarding = 1;
            r->head_n = r->tail_n = 0;
            r->oversize_bytes = 0;
            r->scanned = 0;
            continue;
        }
        if (r->eof) {
            if (r->len == 0)
                return FRAME_EOF;
            size_t ln = r->len; /* a last line without a newline */
            r->start += ln;
            r->len = 0;
            r->scanned = 0;
            if (ln && p[ln - 1] == '\r')
                ln--;
            *line = p;
            *n = ln;
            return FRAME_LINE;
        }
        return FRAME_NEED;
    }
}

size_t frame_peek(const struct frame_reader *r, const char **p)
{
    *p = r->buf ? r->buf + r->start : "";
    return r->len;
}

void frame_consume(struct frame_reader *r, size_t n)
{
    r->start += n;
    r->len -= n;
    r->scanned = r->scanned > n ? r->scanned - n : 0;
    if (!r->len && !r->pinned)
        r->start = 0;
}

void frame_pin(struct frame_reader *r, int on)
{
    r->pinned = on;
}

int frame_room(const struct frame_reader *r)
{
    return !r->pinned || (r->buf && r->start + r->len < r->cap);
}

int frame_holds(const struct frame_reader *r, const char *p)
{
    return r->buf && p >= r->buf && p < r->buf + r->cap;
}
