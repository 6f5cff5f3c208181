/* fuzz_sse.c: the event-stream reader on any bytes. Oracles: the events (type,
 * data, oversize) and the last id and retry are the same whether the stream
 * comes whole, cut in two at a point the input picks, or a byte at a time; no
 * event's data is longer than the limit; every event's data is followed by
 * SSE_PAD zero bytes. */
#include "sse.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define LIMIT 64

struct log {
    char buf[1 << 16];
    size_t n;
};

static int record(void *ctx, const char *type, char *data, size_t n, int oversize)
{
    struct log *l = ctx;
    if (oversize ? data != NULL || n : n > LIMIT)
        abort();
    for (size_t i = 0; !oversize && i < SSE_PAD; i++)
        if (data[n + i])
            abort(); /* the padding a regex JIT may read */
    size_t tn = strlen(type), need = tn + n + 8;
    if (l->n + need > sizeof l->buf)
        return 0;
    l->buf[l->n++] = oversize ? 'O' : 'E';
    memcpy(l->buf + l->n, type, tn);
    l->n += tn;
    l->buf[l->n++] = '\0';
    if (n)
        memcpy(l->buf + l->n, data, n);
    l->n += n;
    l->buf[l->n++] = '\0';
    return 0;
}

static void run(const char *s, size_t n, size_t cut, int bytewise, struct log *l, struct sse *x)
{
    sse_init(x, LIMIT);
    l->n = 0;
    if (bytewise) {
        for (size_t i = 0; i < n; i++)
            sse_feed(x, s + i, 1, record, l);
    } else {
        sse_feed(x, s, cut, record, l);
        sse_feed(x, s + cut, n - cut, record, l);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *s = (const char *)data + 1;
    size_t n = size - 1, cut = data[0] % size;
    cut = cut > n ? n : cut;
    static struct log a, b, c;
    struct sse xa, xb, xc;
    run(s, n, n, 0, &a, &xa);
    run(s, n, cut, 0, &b, &xb);
    run(s, n, 0, 1, &c, &xc);
    if (a.n != b.n || memcmp(a.buf, b.buf, a.n) || a.n != c.n || memcmp(a.buf, c.buf, a.n))
        abort();
    if (strcmp(xa.id, xb.id) || strcmp(xa.id, xc.id) || xa.retry_ms != xb.retry_ms || xa.retry_ms != xc.retry_ms)
        abort();
    sse_free(&xa);
    sse_free(&xb);
    sse_free(&xc);
    return 0;
}
