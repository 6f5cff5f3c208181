/* fuzz_router.c: keel wrap's router in both directions, on any sequence of
 * messages. The input is lines; a line's first byte says who sends it (even:
 * the client, odd: the server) and the rest is the message. They go through
 * the router as the event loop hands them (relay_client_line,
 * relay_server_line), the overlay on; then the upstream dies
 * (relay_fail_pending), as it does when its process exits.
 * Oracles: every request the client sent (a JSON-RPC object with a method and
 * a string or number id, alone or in a batch, which keel takes apart) is
 * answered on the client's side
 * at least as often as it was sent, unless the client cancelled it
 * (notifications/cancelled: no answer is due then); no id is answered more
 * often than the client sent lines carrying it (requests, and lines keel
 * refuses with an error naming their id); every line keel writes to either
 * side is one valid JSON value, ended by a newline.
 * A server line whose first byte also has bit 1 set comes as over Streamable
 * HTTP: its next byte names the stream it arrives on (0 the GET stream, else
 * one of the client's request ids so far), and only what hup_accepts takes
 * goes on. Oracle: a response is taken only on the stream of the request with
 * the same id (compared as JSON values, with cJSON), never on the GET stream. */
#include "fuzzdir.h"
#include "hup.h"
#include "jscan.h"
#include "jsonrpc.h"
#include "relay.h"
#include "rulefile.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAXIDS 256

struct tally {
    char *id[MAXIDS];
    size_t idn[MAXIDS];
    int sent[MAXIDS], other[MAXIDS], answered[MAXIDS], cancelled[MAXIDS];
    int n, overflow;
};

static int slot(struct tally *t, const char *id, size_t n)
{
    for (int i = 0; i < t->n; i++)
        if (t->idn[i] == n && !memcmp(t->id[i], id, n))
            return i;
    if (t->n == MAXIDS) {
        t->overflow = 1;
        return -1;
    }
    t->id[t->n] = malloc(n ? n : 1);
    memcpy(t->id[t->n], id, n);
    t->idn[t->n] = n;
    t->sent[t->n] = t->other[t->n] = t->answered[t->n] = t->cancelled[t->n] = 0;
    return t->n++;
}

static int str_is(const struct jscan_span *s, const char *want)
{
    size_t wn = strlen(want);
    return s->p && s->n == wn + 2 && !memcmp(s->p + 1, want, wn);
}

/* What a client line means for the tally, read as keel reads it. */
static void client_sent(struct tally *t, const char *line, size_t n)
{
    struct jscan_top top;
    const char *id;
    size_t idn;
    if (jscan_scan(line, n, &top) && top.first == '[') { /* a batch: keel takes it apart, each message as alone */
        size_t pos = 0;
        const char *e;
        while (jscan_array_next(line, n, &pos, &e)) {
            size_t at = (size_t)(e - line);
            if (*e == '{')
                client_sent(t, e, jscan_value_end(line, n, at) - at);
        }
        return;
    }
    if (!jscan_scan(line, n, &top) || top.first != '{' || top.dup || !jscan_is_jsonrpc(&top) || !top.method.p) {
        if (jscan_member(line, n, "id", &id, &idn) == 1 && jr_valid_raw_id(id, idn)) {
            int k = slot(t, id, idn);
            if (k >= 0)
                t->other[k]++;
        }
        return;
    }
    if (top.id.p && jr_valid_raw_id(top.id.p, top.id.n)) {
        int k = slot(t, top.id.p, top.id.n);
        if (k >= 0)
            t->sent[k]++;
        return;
    }
    const char *rid;
    size_t ridn;
    if (!top.id.p && str_is(&top.method, "notifications/cancelled") && top.params.p &&
        jscan_member(top.params.p, top.params.n, "requestId", &rid, &ridn) == 1) {
        int k = slot(t, rid, ridn);
        if (k >= 0)
            t->cancelled[k] = 1;
    }
}

/* Every line keel wrote to fd (a temporary file): one JSON value each; answers to the client counted. */
static void read_out(int fd, struct tally *t)
{
    off_t size = lseek(fd, 0, SEEK_END);
    if (size <= 0)
        return;
    char *buf = malloc((size_t)size);
    if (pread(fd, buf, (size_t)size, 0) != size)
        abort();
    size_t at = 0;
    while (at < (size_t)size) {
        char *nl = memchr(buf + at, '\n', (size_t)size - at);
        if (!nl)
            abort(); /* every message ends its line */
        size_t n = (size_t)(nl - (buf + at));
        struct jscan_top top;
        if (!jscan_scan(buf + at, n, &top)) {
            if (getenv("FUZZ_ROUTER_DEBUG"))
                fprintf(stderr, "not JSON, to the %s: %.*s\n", t ? "client" : "server", (int)n, buf + at);
            abort(); /* keel wrote something that is not JSON */
        }
        if (t && top.first == '{' && !top.method.p && top.id.p &&
            jr_valid_raw_id(top.id.p, top.id.n)) { /* null: a line with no id keel could read */
            int k = slot(t, top.id.p, top.id.n);
            if (k >= 0)
                t->answered[k]++;
        }
        at += n + 1;
    }
    free(buf);
}

static void drain(struct outq *q)
{
    while (q->bytes && !q->failed)
        if (outq_flush(q) < 0)
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct profile profile;
    static int once;
    if (!once) {
        once = 1;
        fuzz_dir_make("router");
        profile_load_text(&profile, "", 0);
        static struct ruleset rules;
        ruleset_load(&rules, &profile, NULL, 0); /* the shipped rules, on every result */
        ruleset_current = &rules;
    }
    struct wrap_opts o = {.max_message_bytes = 1u << 20,
                          .groups = TOOL_ALL,
                          .tool_prefix = "keel_",
                          .profile = &profile,
                          .overlay = OV_ALL,
                          .state_dir = fuzz_dir,
                          .restart_max = 0};
    struct relay r;
    memset(&r, 0, sizeof r);
    r.o = &o;
    relay_expose_init(&r);
    r.pend.free_data = relay_call_data_free;
    overlay_init(&r.ov, &profile, fuzz_dir, OV_ALL, NULL, 0, NULL, 0);
    FILE *cf = tmpfile(), *sf = tmpfile(); /* what keel writes to each side */
    if (!cf || !sf)
        abort();
    int cfd = fileno(cf), sfd = fileno(sf);
    outq_init(&r.cout, cfd);
    outq_init(&r.sin, sfd);
    frame_init(&r.cin, -1, o.max_message_bytes);
    frame_init(&r.sout, -1, o.max_message_bytes);
    r.up = UP;
    struct tally t = {0};
    const char *p = (const char *)data, *end = p + size;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *stop = nl ? nl : end;
        if (stop > p) {
            int from_server = (unsigned char)p[0] & 1;
            /* Each line gets its own copy, as the reader hands one out, with room past its end. */
            size_t n = (size_t)(stop - p - 1);
            char *line = calloc(1, n + 64);
            memcpy(line, p + 1, n);
            if (from_server && ((unsigned char)p[0] & 2) && n >= 1) {
                unsigned pick = (unsigned char)line[0];
                const char *sid = pick && t.n ? t.id[(pick - 1) % (unsigned)t.n] : NULL;
                size_t sidn = sid ? t.idn[(pick - 1) % (unsigned)t.n] : 0;
                memmove(line, line + 1, n);
                n--;
                if (hup_accepts(sid, sidn, line, n)) {
                    /* the whole line one JSON value (RFC 8259: cJSON alone also takes
                     * control characters as white space, which keel's reader does not) */
                    cJSON *m = strlen(line) == n && jscan_valid(line, n) ? cJSON_ParseWithOpts(line, NULL, 1) : NULL;
                    cJSON *want = sid ? cJSON_ParseWithLength(sid, sidn) : NULL;
                    const cJSON *id = cJSON_GetObjectItemCaseSensitive(m, "id");
                    int response = cJSON_IsObject(m) && !cJSON_GetObjectItemCaseSensitive(m, "method") &&
                        (cJSON_GetObjectItemCaseSensitive(m, "result") || cJSON_GetObjectItemCaseSensitive(m, "error"));
                    if (response && (!want || !id || !cJSON_Compare(id, want, 1))) {
                        if (getenv("FUZZ_ROUTER_DEBUG"))
                            fprintf(stderr, "taken on %.*s: %.*s\n", (int)sidn, sid ? sid : "the GET stream", (int)n,
                                    line);
                        abort(); /* a response taken on another request's stream */
                    }
                    cJSON_Delete(m);
                    cJSON_Delete(want);
                    relay_server_line(&r, line, n);
                }
            } else if (from_server) {
                relay_server_line(&r, line, n);
            } else {
                client_sent(&t, line, n);
                relay_client_line(&r, line, n);
            }
            free(line);
        }
        p = stop + (nl != NULL);
    }
    relay_fail_pending(&r, "the upstream server exited with status 0");
    drain(&r.cout);
    drain(&r.sin);
    read_out(cfd, &t);
    read_out(sfd, NULL);
    for (int k = 0; k < t.n && !t.overflow; k++) {
        if (getenv("FUZZ_ROUTER_DEBUG"))
            fprintf(stderr, "id %.*s: sent %d, other %d, answered %d, cancelled %d\n", (int)t.idn[k], t.id[k],
                    t.sent[k], t.other[k], t.answered[k], t.cancelled[k]);
        if (!t.cancelled[k] && t.answered[k] < t.sent[k])
            abort(); /* a request never answered */
        if (t.answered[k] > t.sent[k] + t.other[k])
            abort(); /* answered twice */
    }
    for (int k = 0; k < t.n; k++)
        free(t.id[k]);
    fclose(cf);
    fclose(sf);
    relay_free(&r);
    return 0;
}
