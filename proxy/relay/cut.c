/* cut.c: large responses passed on as they arrive (cut-through).
 *
 * keel holds a message whole before passing it on only when it must: to
 * check that it is JSON-RPC, to route it, or to rewrite it. For a big result
 * that costs a second full copy of the time on the wire, since the client
 * cannot start reading until the upstream has finished writing. So when the
 * upstream's stdout holds CUT_MIN bytes of one line without a newline, and
 * those bytes are, so far, valid JSON opening a response ("result" or
 * "error" before any "method") that keel will not rewrite, keel starts
 * passing the line on: each piece is validated (jscan.h, struct jstream) and
 * queued as it arrives, and the top-level id is kept as it goes by.
 *
 * A response keel rewrites is held as before: one to initialize or tools/list,
 * a tools/call while the overlay reads results, the replayed initialize. When
 * the id has not been seen yet (SDKs write it last), the line is held if any
 * such request is in flight. Whatever keel writes to the client meanwhile
 * waits in the queue until the line ends (outq_part).
 *
 * A line that breaks after it began to pass (bytes that are not JSON, more
 * than --max-message-bytes, the upstream exiting mid-line) is ended with a
 * newline where it broke, so the client's next message starts clean, and the
 * rest of the line is discarded. The request it answered gets a JSON-RPC
 * error: its id was seen on the way, or is read from the line's last bytes
 * (where SDKs write it). */
#include "relay.h"

#include "jsonrpc.h"
#include "log.h"

#include <stdio.h>
#include <string.h>

#define CUT_MIN   (64u << 10)
#define REWRITTEN ((1u << PK_INITIALIZE) | (1u << PK_TOOLS_LIST) | (1u << PK_TOOLS_CALL) | (1u << PK_REPLAY))

/* 1 if the line's top-level id went by whole. */
static int id_seen(const struct jstream *js)
{
    const struct jstream_slot *t = &js->top[JSCAN_ID];
    return t->present && !t->cut && t->end > t->start;
}

/* The line's top-level id: seen whole on the way, else, once the line has
 * ended, read from its last bytes (where SDKs write it). */
static int line_id(const struct relay *r, int ended, const char **id, size_t *idn)
{
    const struct jstream_slot *t = &r->cut.js.top[JSCAN_ID];
    if (id_seen(&r->cut.js) && jr_valid_raw_id(t->raw, t->rawn)) {
        *id = t->raw;
        *idn = t->rawn;
        return 1;
    }
    return ended && jscan_tail_id(r->cut.tail, r->cut.tail_n, id, idn) && jr_valid_raw_id(*id, *idn);
}

/* The line was passed on whole: its request is answered. */
static void finish(struct relay *r, int ended)
{
    outq_end(&r->cout);
    const char *id;
    size_t idn;
    int kind;
    void *data = NULL;
    if (line_id(r, ended, &id, &idn) && pending_take(&r->pend, FROM_CLIENT, id, idn, &kind, &data))
        relay_call_data_free(data);
    log_event(LOG_DEBUG, "message_cut_through", "bytes=%zu", r->cut.bytes);
    r->cut.on = 0;
}

static void answer_broken(struct relay *r, const char *id, size_t idn, const char *why, const char *code)
{
    int kind;
    if (pending_take(&r->pend, FROM_CLIENT, id, idn, &kind, NULL)) {
        char msg[200];
        snprintf(msg, sizeof msg, "the upstream's response broke off after %zu bytes: %s", r->cut.bytes, why);
        relay_error(&r->cout, id, idn, JR_INTERNAL_ERROR, msg, code);
    }
}

/* The line broke after it began to pass: end it, and answer its request if
 * its id is known; if not, it may yet come at the end of the line. */
static void abort_cut(struct relay *r, const char *why, const char *code, int ended)
{
    outq_end(&r->cout);
    const char *id;
    size_t idn;
    log_event(LOG_WARN, "cut_through_broken", "reason=%s bytes=%zu", code, r->cut.bytes);
    r->cut.why = NULL;
    if (line_id(r, ended, &id, &idn))
        answer_broken(r, id, idn, why, code);
    else if (!ended)
        r->cut.why = why, r->cut.code = code;
    r->cut.on = 0;
}

/* The rest of a broken line went by: its id, if it ends with one. */
static void dropped(struct relay *r)
{
    const char *id;
    size_t idn;
    if (r->cut.why && line_id(r, 1, &id, &idn))
        answer_broken(r, id, idn, r->cut.why, r->cut.code);
    r->cut.why = NULL;
    r->cut.dropping = 0;
}

/* 1 if p opens an object whose first member is one a JSON-RPC message
 * starts with; a JSON logger's line ({"level":...}) does not. */
static int opens_message(const char *p, size_t n)
{
    static const char *const first[] = {"\"jsonrpc\"", "\"id\"", "\"result\"", "\"error\""};
    size_t i = 0;
    while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r'))
        i++;
    if (i == n || p[i++] != '{')
        return 0;
    while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r'))
        i++;
    for (size_t k = 0; k < sizeof first / sizeof first[0]; k++)
        if (n - i >= strlen(first[k]) && !memcmp(p + i, first[k], strlen(first[k])))
            return 1;
    return 0;
}

/* Should the line whose first n bytes are p (no newline among them) pass on
 * as it arrives? Then it starts, and all n bytes are taken. */
static size_t cut_start(struct relay *r, const char *p, size_t n)
{
    r->cut.declined = 1; /* looked at once per line */
    if (r->up != UP || n >= r->o->max_message_bytes || !opens_message(p, n))
        return 0;
    struct jstream *js = &r->cut.js;
    jstream_init(js);
    size_t used;
    r->cut.held = n; /* if it is held after all, validation goes on from here */
    if (jstream_feed(js, p, n, &used) < 0 || js->first != '{' || js->top[JSCAN_METHOD].present ||
        (!js->top[JSCAN_RESULT].present && !js->top[JSCAN_ERROR].present))
        return 0;
    const struct jstream_slot *t = &js->top[JSCAN_ID];
    const char *id;
    size_t idn;
    if (t->present && t->cut)
        return 0; /* an id too long to keep: held whole */
    r->cut.tail_n = 0;
    if (line_id(r, 0, &id, &idn)) {
        int kind = pending_kind(&r->pend, FROM_CLIENT, id, idn);
        if (kind >= 0 && (REWRITTEN >> kind & 1))
            return 0;
    } else if (pending_any(&r->pend, FROM_CLIENT, REWRITTEN) || pending_any(&r->pend, FROM_KEEL, REWRITTEN)) {
        return 0;
    }
    r->cut.on = 1;
    r->cut.held = 0;
    r->cut.bytes = n;
    r->cut.why = NULL;
    frame_keep_tail(r->cut.tail, &r->cut.tail_n, p, n);
    outq_part(&r->cout, p, n);
    return n;
}

/* The next n bytes of a line being passed on or discarded; how many are taken.
 * The line's last bytes are kept throughout, for an id written last. */
static size_t cut_feed(struct relay *r, const char *p, size_t n, int eof)
{
    const char *nl = memchr(p, '\n', n);
    size_t lim = nl ? (size_t)(nl - p) : n, used, take = nl ? lim + 1 : n;
    int ended = nl || eof;
    if (!id_seen(&r->cut.js)) /* the tail is wanted only for an id not seen yet */
        frame_keep_tail(r->cut.tail, &r->cut.tail_n, p, lim);
    if (r->cut.dropping) {
        if (ended)
            dropped(r);
        return take;
    }
    size_t room = r->o->max_message_bytes - r->cut.bytes;
    int over = lim > room;
    if (jstream_feed(&r->cut.js, p, over ? room : lim, &used) < 0) {
        outq_part(&r->cout, p, used);
        r->cut.bytes += used;
        if (r->cut.js.trailing) { /* a whole message, then more on its line */
            log_event(LOG_WARN, "upstream_trailing_bytes", "bytes=%zu", lim - used);
            finish(r, 0);
        } else {
            abort_cut(r, "it is not valid JSON", "UPSTREAM_MALFORMED", ended);
        }
    } else if (over) {
        outq_part(&r->cout, p, room);
        r->cut.bytes += room;
        abort_cut(r, "it exceeds --max-message-bytes", "MESSAGE_TOO_LARGE", ended);
    } else {
        size_t fwd = nl && lim && p[lim - 1] == '\r' ? lim - 1 : lim; /* the line's CR stays behind */
        outq_part(&r->cout, p, fwd);
        r->cut.bytes += lim;
        if (!ended)
            return n;
        if (jstream_end(&r->cut.js))
            finish(r, 1);
        else
            abort_cut(r, nl ? "the line ended before the JSON did" : "the upstream's output ended",
                      "UPSTREAM_MALFORMED", 1);
        return take;
    }
    if (!ended)
        r->cut.dropping = 1; /* the rest of the line goes nowhere */
    else
        r->cut.why = NULL; /* ended here: answered above if it could be */
    return take;
}

/* The held line's first n bytes are p: validate those not seen yet (once
 * they are not JSON, the stream stays in error and each feed stops at once). */
static void held_feed(struct relay *r, const char *p, size_t n)
{
    size_t used;
    if (n <= r->cut.held)
        return;
    if (!r->cut.held)
        jstream_init(&r->cut.js);
    jstream_feed(&r->cut.js, p + r->cut.held, n - r->cut.held, &used);
    r->cut.held = n;
}

/* A whole line that was held: routed on the validation done as it came. */
static void held_line(struct relay *r, const char *p, size_t n)
{
    struct jscan_top top;
    if (r->cut.held) {
        held_feed(r, p, n);
        if (jstream_end(&r->cut.js)) {
            jstream_top(&r->cut.js, p, &top);
            relay_server_scanned(r, p, n, &top);
            return;
        }
    }
    relay_server_line(r, p, n);
}

int relay_server_drain(struct relay *r)
{
    for (;;) {
        const char *p;
        size_t n;
        if (r->cut.on || r->cut.dropping) {
            n = frame_peek(&r->sout, &p);
            if (!n && !r->sout.eof)
                return FRAME_NEED;
            frame_consume(&r->sout, cut_feed(r, p, n, r->sout.eof));
            if (r->cut.on || r->cut.dropping)
                return FRAME_NEED;
            r->cut.declined = 0;
            continue;
        }
        enum frame_status st = frame_next(&r->sout, &p, &n);
        if (st == FRAME_LINE || st == FRAME_OVERSIZE) {
            if (st == FRAME_LINE)
                held_line(r, p, n);
            else
                relay_server_oversize(r, p, n, r->sout.oversize_bytes);
            r->cut.declined = 0;
            r->cut.held = 0;
            continue;
        }
        if (st == FRAME_NEED && !r->sout.discarding && (n = frame_peek(&r->sout, &p)) >= CUT_MIN) {
            if (!r->cut.declined) {
                size_t took = cut_start(r, p, n);
                if (took) {
                    frame_consume(&r->sout, took);
                    continue;
                }
            }
            held_feed(r, p, n);
        }
        return st;
    }
}

void relay_server_closed(struct relay *r)
{
    if (r->cut.on)
        abort_cut(r, "the upstream's output ended", "UPSTREAM_MALFORMED", 1);
    if (r->cut.dropping)
        dropped(r);
    r->cut.declined = 0;
    r->cut.held = 0;
}
