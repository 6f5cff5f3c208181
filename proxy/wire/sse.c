/* sse.c: the event-stream reader (sse.h). */
#include "sse.h"

#include <stdlib.h>
#include <string.h>

void sse_init(struct sse *s, size_t max)
{
    memset(s, 0, sizeof *s);
    s->max = max;
    s->retry_ms = -1;
}

void sse_free(struct sse *s)
{
    free(s->line);
    free(s->data);
    s->line = s->data = NULL;
}

static int grow(char **buf, size_t *cap, size_t want)
{
    if (want <= *cap)
        return 0;
    size_t c = *cap ? *cap : 256;
    while (c < want)
        c *= 2;
    char *b = realloc(*buf, c);
    if (!b)
        return -1;
    *buf = b;
    *cap = c;
    return 0;
}

static void reset_event(struct sse *s)
{
    s->datan = 0;
    s->has_data = s->oversize = s->reported = 0;
    s->type[0] = '\0';
}

/* A blank line: the event is dispatched if it has data. */
static int dispatch(struct sse *s, sse_event_fn fn, void *ctx)
{
    int rc = 0;
    if (s->oversize) {
        rc = s->reported ? 0 : fn(ctx, s->type, NULL, 0, 1);
    } else if (s->has_data) {
        if (s->datan && s->data[s->datan - 1] == '\n')
            s->datan--; /* the LF after the last data line */
        if (grow(&s->data, &s->datacap, s->datan + SSE_PAD) < 0)
            return -1;
        memset(s->data + s->datan, 0, SSE_PAD);
        rc = fn(ctx, s->type, s->data, s->datan, 0);
    }
    reset_event(s);
    return rc;
}

/* The event has passed max: said at once, not when it ends (it may never
 * end), and only once. */
static int too_large(struct sse *s, sse_event_fn fn, void *ctx)
{
    s->oversize = s->has_data = 1;
    if (s->reported)
        return 0;
    s->reported = 1;
    return fn(ctx, s->type, NULL, 0, 1);
}

/* One whole line, without its end. */
static int field(struct sse *s, const char *l, size_t n, sse_event_fn fn, void *ctx)
{
    if (!n)
        return dispatch(s, fn, ctx);
    if (l[0] == ':')
        return 0; /* a comment (keep-alives) */
    const char *colon = memchr(l, ':', n);
    size_t nn = colon ? (size_t)(colon - l) : n;
    const char *v = colon ? colon + 1 : l + n;
    size_t vn = colon ? n - nn - 1 : 0;
    if (vn && v[0] == ' ')
        v++, vn--;
    if (nn == 4 && !memcmp(l, "data", 4)) {
        s->has_data = 1;
        if (s->oversize)
            return 0;
        if (s->datan + vn + 1 > s->max)
            return too_large(s, fn, ctx);
        if (grow(&s->data, &s->datacap, s->datan + vn + 2) < 0)
            return -1;
        memcpy(s->data + s->datan, v, vn);
        s->datan += vn;
        s->data[s->datan++] = '\n';
    } else if (nn == 5 && !memcmp(l, "event", 5)) {
        size_t k = vn < sizeof s->type - 1 ? vn : sizeof s->type - 1;
        memcpy(s->type, v, k);
        s->type[k] = '\0';
    } else if (nn == 2 && !memcmp(l, "id", 2)) {
        if (!memchr(v, '\0', vn)) { /* the standard ignores an id holding NUL */
            size_t k = vn < SSE_ID_MAX ? vn : SSE_ID_MAX;
            memcpy(s->id, v, k);
            s->id[k] = '\0';
        }
    } else if (nn == 5 && !memcmp(l, "retry", 5)) {
        long ms = 0;
        size_t i = 0;
        while (i < vn && v[i] >= '0' && v[i] <= '9' && ms < 100000000)
            ms = ms * 10 + (v[i++] - '0');
        if (vn && i == vn)
            s->retry_ms = ms;
    }
    return 0;
}

int sse_feed(struct sse *s, const char *p, size_t n, sse_event_fn fn, void *ctx)
{
    size_t i = 0;
    while (i < n) {
        if (s->cr && p[i] == '\n') { /* the LF of a CRLF split across pieces */
            s->cr = 0;
            i++;
            continue;
        }
        s->cr = 0;
        size_t j = i;
        while (j < n && p[j] != '\n' && p[j] != '\r')
            j++;
        if (!s->skipping) {
            /* A line longer than an event may be cannot be kept: its event is oversize. */
            if (s->linen + (j - i) > s->max + 16) {
                s->skipping = 1;
                s->linen = 0;
                if (too_large(s, fn, ctx) < 0)
                    return -1;
            } else if (j > i) {
                if (grow(&s->line, &s->linecap, s->linen + (j - i)) < 0)
                    return -1;
                memcpy(s->line + s->linen, p + i, j - i);
                s->linen += j - i;
            }
        }
        if (j == n)
            return 0; /* the line goes on in the next piece */
        s->cr = p[j] == '\r';
        size_t at = 0;
        if (!s->started) { /* a BOM may open the stream, in pieces or whole */
            s->started = 1;
            if (s->linen >= 3 && !memcmp(s->line, "\xEF\xBB\xBF", 3))
                at = 3;
        }
        int rc = s->skipping ? 0 : field(s, s->linen ? s->line + at : "", s->linen - at, fn, ctx);
        s->skipping = 0;
        s->linen = 0;
        if (rc < 0)
            return -1;
        i = j + 1;
    }
    return 0;
}
