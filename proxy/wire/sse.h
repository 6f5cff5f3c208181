/* sse.h: a text/event-stream reader (Server-Sent Events, as the WHATWG
 * HTML standard defines the stream's interpretation).
 *
 * Streamable HTTP answers a request with one JSON object or with an event
 * stream whose events carry JSON-RPC messages. Bytes arrive in pieces of
 * any size; the reader splits them into lines (LF, CRLF or a lone CR, also
 * across pieces), gathers the fields of one event (data, event, id, retry;
 * comments and unknown fields ignored) and hands each finished event to a
 * callback. Nothing is held past one event: an event whose data would pass
 * max bytes is reported once as oversize, without its data, as soon as it
 * passes (a line that never ends is reported, not waited for), and the rest
 * of it is skipped. The last event id and the retry delay persist across
 * events, as a reconnecting client needs them. */
#ifndef KEEL_SSE_H
#define KEEL_SSE_H

#include <stddef.h>

#define SSE_ID_MAX 256 /* a longer id is kept cut (ids are cursors, not content) */
#define SSE_PAD    16 /* zero bytes after an event's data (a regex JIT may read past a subject) */

/* One event: its type ("" when none was given), its data (the data lines
 * joined by LF, then SSE_PAD zero bytes; writable: the callee may rewrite it
 * in place), or oversize set with no data. Returns 0 to go on, -1 to stop. */
typedef int (*sse_event_fn)(void *ctx, const char *type, char *data, size_t n, int oversize);

struct sse {
    size_t max; /* largest data of one event */
    char *line; /* the line being read */
    size_t linen, linecap;
    int skipping; /* the rest of an oversize line goes nowhere */
    int cr; /* the last byte seen was a CR (its LF, if next, is not a new line) */
    int started; /* the first line has ended (a BOM opening it is dropped) */
    char *data; /* the data of the event being read */
    size_t datan, datacap;
    int has_data, oversize;
    int reported; /* the oversize event has been reported */
    char type[64];
    char id[SSE_ID_MAX + 1]; /* the last event id ("" none) */
    long retry_ms; /* the last retry field (-1 none) */
};

void sse_init(struct sse *s, size_t max);
void sse_free(struct sse *s);
/* Feeds the next n bytes. 0, or -1 when the callback asked to stop or
 * memory ran out. */
int sse_feed(struct sse *s, const char *p, size_t n, sse_event_fn fn, void *ctx);

#endif
