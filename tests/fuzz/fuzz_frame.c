/* fuzz_frame.c: the line reader (proxy/wire/frame.c) on any bytes arriving in any
 * pieces, with a small line limit so oversize lines are common. The input's
 * first byte sets the limit and the piece size. Oracles: no crash, no leak;
 * no line handed out whole is over the limit; every byte is accounted for:
 * the lines handed out, the oversize lines' lengths, the newlines and the
 * carriage returns dropped at line ends cover the input, and no more. */
#include "frame.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 60000) /* it must fit in a pipe */
        return 0;
    size_t max = 64 + (size_t)(data[0] & 0x3f) * 64;
    size_t piece = 1 + (data[0] >> 6) * 700;
    const char *s = (const char *)data + 1;
    size_t n = size - 1;
    int p[2];
    if (pipe(p) < 0)
        return 0;
    for (size_t off = 0; off < n; off += piece) {
        size_t k = n - off < piece ? n - off : piece;
        if (write(p[1], s + off, k) != (ssize_t)k)
            abort();
    }
    close(p[1]);
    struct frame_reader r;
    frame_init(&r, p[0], max);
    size_t seen = 0, lines = 0;
    for (;;) {
        const char *line;
        size_t ln;
        enum frame_status st = frame_next(&r, &line, &ln);
        if (st == FRAME_EOF)
            break;
        if (st == FRAME_NEED) {
            if (frame_fill(&r) < 0)
                abort();
            continue;
        }
        size_t len = st == FRAME_LINE ? ln : r.oversize_bytes;
        if (st == FRAME_LINE && ln > max)
            abort(); /* a line over the limit handed out whole */
        seen += len;
        lines++;
    }
    /* Bytes not in a line: the newlines, and carriage returns the reader
     * drops at a line's end (before its newline, or at the end of input). */
    size_t nl = 0, cr = 0;
    for (size_t i = 0; i < n; i++) {
        nl += s[i] == '\n';
        cr += s[i] == '\r';
    }
    if (seen > n || seen + nl + cr < n)
        abort();
    (void)lines;
    frame_free(&r);
    close(p[0]);
    return 0;
}
