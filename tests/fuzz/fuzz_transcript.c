/* fuzz_transcript.c: the host transcript reader (proxy/hosts/transcript.c) on any
 * bytes. The oracle: no crash, no leak (ASan), every prompt handed out lies in
 * the input, is not empty, and is not older than the window's start. */
#include "transcript.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct check {
    int64_t from;
    int n;
};

static void seen(const struct transcript_prompt *p, void *ctx)
{
    struct check *c = ctx;
    if (!p->text || !p->n || p->at < c->from || strlen(p->text) != p->n)
        abort();
    c->n++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    struct check c = {1747000000000LL, 0};
    int kept = transcript_prompts_in(buf, size, c.from, 21, seen, &c);
    if (kept != c.n || kept > 21)
        abort();
    free(buf);
    return 0;
}
