/* server.c: a minimal, fast MCP server for make bench.
 *
 * Answers initialize, tools/list and tools/call; a call whose arguments
 * contain "big" gets a result with an 8 MiB text block, any other its
 * arguments' query back as its text (an echo). With BENCH_TOOLS=N, tools/list answers N tools with descriptions
 * and schemas (the pinning bench). Written in C so that neither end of the benchmark hides the proxy. */
#include "benchutil.h"
#include "frame.h"
#include "jscan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BIG (8u << 20)

int main(void)
{
    struct frame_reader r;
    frame_init(&r, 0, 64u << 20);
    char *big = malloc(BIG + 256);
    char *out = malloc(BIG + 512);
    memset(big, 'x', BIG);
    int ntools = getenv("BENCH_TOOLS") ? atoi(getenv("BENCH_TOOLS")) : 0;
    if (ntools < 0 || ntools > 2000)
        ntools = 0;
    for (;;) {
        const char *line, *id, *m;
        size_t n, idn, mn;
        enum frame_status st = frame_next(&r, &line, &n);
        if (st == FRAME_EOF)
            return 0;
        if (st == FRAME_NEED) {
            if (frame_fill(&r) < 0)
                return 1;
            continue;
        }
        if (st != FRAME_LINE || jscan_member(line, n, "id", &id, &idn) != 1 ||
            jscan_member(line, n, "method", &m, &mn) != 1)
            continue;
        int len;
        if (mn == 12 && !memcmp(m, "\"initialize\"", 12))
            len = snprintf(out, 512,
                           "{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"result\":{\"protocolVersion\":\"2025-06-18\","
                           "\"capabilities\":{\"tools\":{}},\"serverInfo\":{\"name\":\"bench\",\"version\":\"1\"}}}\n",
                           (int)idn, id);
        else if (mn == 12 && !memcmp(m, "\"tools/list\"", 12) && ntools) { /* BENCH_TOOLS: a server with many */
            len = snprintf(out, 512, "{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"result\":{\"tools\":[", (int)idn, id);
            for (int i = 0; i < ntools; i++)
                len += snprintf(out + len, 1024,
                                "%s{\"name\":\"work_%d\",\"description\":\"Runs job %d of the batch and returns its "
                                "status, the items it processed and any errors, as text.\",\"inputSchema\":{\"type\":"
                                "\"object\",\"properties\":{\"job\":{\"type\":\"string\",\"description\":\"the job's "
                                "name\"},\"dry_run\":{\"type\":\"boolean\"}},\"required\":[\"job\"]}}",
                                i ? "," : "", i, i);
            len += snprintf(out + len, 64, "]}}\n");
        } else if (mn == 12 && !memcmp(m, "\"tools/list\"", 12))
            len = snprintf(out, 512,
                           "{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"result\":{\"tools\":[{\"name\":\"work\","
                           "\"inputSchema\":{\"type\":\"object\"}}]}}\n",
                           (int)idn, id);
        else if (bench_contains(line, n, "\"big\"")) {
            len = snprintf(out, 512,
                           "{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"",
                           (int)idn, id);
            memcpy(out + len, big, BIG);
            len += BIG;
            len += snprintf(out + len, 64, "\"}]}}\n");
        } else { /* an echo: the query back, so each result differs as the calls do */
            const char *q;
            size_t qn;
            const char *args = NULL;
            size_t an = 0;
            if (jscan_member(line, n, "params", &args, &an) != 1 ||
                jscan_member(args, an, "arguments", &args, &an) != 1 || jscan_member(args, an, "query", &q, &qn) != 1 ||
                q[0] != '"' || qn > 200)
                q = "\"\"", qn = 2;
            len = snprintf(out, 512,
                           "{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"result\":{\"content\":[{\"type\":\"text\","
                           "\"text\":%.*s}]}}\n",
                           (int)idn, id, (int)qn, q);
        }
        bench_put(1, out, (size_t)len);
    }
}
