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
 * the replayed initialize, a tools/call's result the rules may read (up to
 * RULES_MAX_LINE) or an error. When the id has not been seen yet (SDKs write
 * it last), the line is held if any such request is in flight. Whatever keel
 * writes to the client meanwhile waits in the queue until the line ends
 * (outq_part).
 *
 * A larger tools/call result passes on while the overlay reads it: what the
 * loop detector compares is gathered from the pieces (relay_result_piece),
 * and only the bytes from the first place an advisory may go (the end of
 * content, the start of _meta, the end of the result) wait in cut.hold until
 * the line ends, when the advisories are put into them. So a result of many
 * megabytes laid out as servers usually write it (content first, little
 * after it) costs keel a buffer of one read, not one of its own size; what
 * comes after the first such place (all of it, when _meta comes first) is
 * held as before.
 *
 * A line that breaks after it began to pass (bytes that are not JSON or not
 * UTF-8, a member given twice, more than --max-message-bytes, the upstream
 * exiting mid-line) is ended with a
 * newline where it broke, so the client's next message starts clean, and the
 * rest of the line is discarded. The request it answered gets a JSON-RPC
 * error: its id was seen on the way, or is read from the line's last bytes
 * (where SDKs write it). */
#include "relay.h"

#include "jsonrpc.h"
#include "log.h"
#include "text.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CUT_MIN   (64u << 10)
#define REWRITTEN ((1u << PK_INITIALIZE) | (1u << PK_TOOLS_LIST) | (1u << PK_TOOLS_CALL) | (1u << PK_REPLAY))
#define CALLS     (1u << PK_TOOLS_CALL)

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

static void put(struct relay *r, const char *p, size_t n)
{
    if (n)
        outq_part(&r->cout, p, n);
}

/* Bytes of a line passing on: to the client, or, from the first place an
 * advisory may go, into the hold until the line ends. */
static void pass(struct relay *r, const char *p, size_t n, size_t base)
{
    if (!r->cut.annotating) {
        put(r, p, n);
        return;
    }
    if (r->cut.hold_from == SIZE_MAX) {
        size_t hp = relay_result_hold_point(&r->cut.js), go = hp < base ? 0 : hp - base < n ? hp - base : n;
        put(r, p, go);
        if (go == n)
            return;
        r->cut.hold_from = base + go;
        p += go, n -= go;
    }
    if (r->cut.hold_n + n > r->cut.hold_cap) {
        size_t cap = r->cut.hold_cap ? r->cut.hold_cap : 4096;
        while (cap < r->cut.hold_n + n)
            cap *= 2;
        char *h = realloc(r->cut.hold, cap);
        if (!h) { /* no room to hold it: it goes as it is, unannotated */
            put(r, r->cut.hold, r->cut.hold_n);
            put(r, p, n);
            r->cut.hold_n = 0;
            r->cut.annotating = 0;
            relay_result_done(&r->cut.rs);
            return;
        }
        r->cut.hold = h;
        r->cut.hold_cap = cap;
    }
    memcpy(r->cut.hold + r->cut.hold_n, p, n);
    r->cut.hold_n += n;
}

/* A line is no longer passing on: what it held goes (as it is), its state is let go. */
static void let_go(struct relay *r)
{
    if (r->cut.annotating) {
        put(r, r->cut.hold, r->cut.hold_n);
        relay_result_done(&r->cut.rs);
    }
    r->cut.hold_n = 0; /* (annotating is set anew when a line starts to pass) */
    if (r->cut.hold_cap > (1u << 20)) { /* a large hold is not kept for the next line */
        free(r->cut.hold);
        r->cut.hold = NULL;
        r->cut.hold_cap = 0;
    }
    r->cut.on = 0;
}

/* The line was passed on whole: its request is answered, a tools/call's
 * result with the overlay's advisories put into what was held. */
static void finish(struct relay *r, int ended)
{
    const char *id;
    size_t idn;
    int kind;
    void *data = NULL;
    if (line_id(r, ended, &id, &idn) && pending_take(&r->pend, FROM_CLIENT, id, idn, &kind, &data)) {
        if (r->cut.annotating && kind == PK_TOOLS_CALL && data) {
            size_t on = 0;
            char *out =
                relay_call_streamed(r, data, &r->cut.js, &r->cut.rs, r->cut.hold, r->cut.hold_n, r->cut.hold_from, &on);
            if (out) {
                put(r, out, on);
                free(out);
                r->cut.hold_n = 0;
            }
        } else {
            relay_call_data_free(data);
        }
    }
    let_go(r);
    outq_end(&r->cout);
    log_event(LOG_DEBUG, "message_cut_through", "bytes=%zu", r->cut.bytes);
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
    let_go(r);
    outq_end(&r->cout);
    const char *id;
    size_t idn;
    log_event(LOG_WARN, "cut_through_broken", "reason=%s bytes=%zu", code, r->cut.bytes);
    r->cut.why = NULL;
    if (line_id(r, ended, &id, &idn))
        answer_broken(r, id, idn, why, code);
    else if (!ended)
        r->cut.why = why, r->cut.code = code;
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

/* 1 while the bytes of a line seen in pieces are UTF-8 so far: a character
 * cut between two pieces waits in cut.u8 for its other bytes. */
static int utf8_piece(struct relay *r, const char *p, size_t n)
{
    size_t i = 0;
    if (r->cut.u8n) { /* the cut character's other bytes */
        unsigned char c = r->cut.u8[0];
        size_t want = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
        while (r->cut.u8n < want && i < n)
            r->cut.u8[r->cut.u8n++] = (unsigned char)p[i++];
        if (r->cut.u8n < want)
            return 1;
        r->cut.u8n = 0;
        if (!text_valid_utf8((const char *)r->cut.u8, want))
            return 0;
    }
    size_t end = n, k = n;
    while (k > i && n - k < 3 && ((unsigned char)p[k - 1] & 0xC0) == 0x80)
        k--;
    if (k > i) { /* the last character's first byte: does the piece hold all of it? */
        unsigned char c = (unsigned char)p[k - 1];
        size_t want = c >= 0xF0 && c < 0xF8 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 1;
        if (c >= 0xC2 && c < 0xF8 && n - (k - 1) < want)
            end = k - 1;
    }
    if (!text_valid_utf8(p + i, end - i))
        return 0;
    memcpy(r->cut.u8, p + end, n - end);
    r->cut.u8n = n - end;
    return 1;
}

/* Overlay parts that read a tool's result whole: a model-backed tool's text. */
static int reads_results_whole(const struct relay *r)
{
    return (r->ov.parts & OV_SYCOPHANCY) && r->ov.nmodel_tools > 0;
}

/* Should the line whose first n bytes are p (no newline among them) pass on
 * as it arrives? Then it starts, and all n bytes are taken. 0 leaves it held:
 * for good (cut.declined), or until a later look when more of it is in. */
static size_t cut_start(struct relay *r, const char *p, size_t n)
{
    if (r->up != UP || n >= r->o->max_message_bytes || !opens_message(p, n)) {
        r->cut.declined = 1;
        return 0;
    }
    held_feed(r, p, n); /* validated as it came: this look goes on from the last */
    struct jstream *js = &r->cut.js;
    r->cut.declined = 1;
    if (js->off != n || js->dup || js->first != '{' || js->top[JSCAN_METHOD].present ||
        (!js->top[JSCAN_RESULT].present && !js->top[JSCAN_ERROR].present))
        return 0;
    const struct jstream_slot *t = &js->top[JSCAN_ID];
    const char *id;
    size_t idn;
    if (t->present && t->cut)
        return 0; /* an id too long to keep: held whole */
    r->cut.tail_n = 0;
    int call; /* a tools/call's result the overlay reads */
    if (line_id(r, 0, &id, &idn)) {
        int kind = pending_kind(&r->pend, FROM_CLIENT, id, idn);
        if (kind >= 0 && (REWRITTEN & ~CALLS) >> kind & 1)
            return 0;
        call = kind == PK_TOOLS_CALL;
    } else if (pending_any(&r->pend, FROM_CLIENT, REWRITTEN & ~CALLS) || pending_any(&r->pend, FROM_KEEL, REWRITTEN)) {
        return 0;
    } else {
        call = pending_any(&r->pend, FROM_CLIENT, CALLS);
    }
    if (call) {
        if (js->top[JSCAN_ERROR].present || reads_results_whole(r))
            return 0;
        if (n <= RULES_MAX_LINE) { /* the rules may read it whole: look again when more is in */
            r->cut.declined = 0;
            return 0;
        }
    }
    r->cut.u8n = 0;
    if (!utf8_piece(r, p, n))
        return 0; /* held, and refused whole */
    r->cut.on = 1;
    r->cut.held = 0;
    r->cut.bytes = n;
    r->cut.why = NULL;
    r->cut.annotating = call;
    r->cut.hold_from = SIZE_MAX;
    r->cut.hold_n = 0;
    if (call) {
        relay_result_begin(&r->cut.rs);
        relay_result_piece(&r->cut.rs, js, p, n, 0);
    }
    frame_keep_tail(r->cut.tail, &r->cut.tail_n, p, n);
    pass(r, p, n, 0);
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
    size_t room = r->o->max_message_bytes - r->cut.bytes, base = r->cut.bytes;
    int over = lim > room, bad = jstream_feed(&r->cut.js, p, over ? room : lim, &used) < 0;
    if (!bad)
        used = over ? room : lim;
    if (r->cut.annotating)
        relay_result_piece(&r->cut.rs, &r->cut.js, p, used, base);
    if (!utf8_piece(r, p, used) || (ended && !bad && !over && r->cut.u8n)) { /* cut off before this piece */
        r->cut.bytes += used;
        abort_cut(r, "it is not valid UTF-8", "UPSTREAM_BAD_RESPONSE", ended);
    } else if (r->cut.js.dup) {
        r->cut.bytes += used;
        abort_cut(r, "a member is given twice", "UPSTREAM_BAD_RESPONSE", ended);
    } else if (bad) {
        pass(r, p, used, base);
        r->cut.bytes += used;
        if (r->cut.js.trailing) { /* a whole message, then more on its line */
            log_event(LOG_WARN, "upstream_trailing_bytes", "bytes=%zu", lim - used);
            finish(r, 0);
        } else {
            abort_cut(r, "it is not valid JSON", "UPSTREAM_MALFORMED", ended);
        }
    } else if (over) {
        pass(r, p, room, base);
        r->cut.bytes += room;
        abort_cut(r, "it exceeds --max-message-bytes", "MESSAGE_TOO_LARGE", ended);
    } else {
        size_t fwd = nl && lim && p[lim - 1] == '\r' ? lim - 1 : lim; /* the line's CR stays behind */
        pass(r, p, fwd, base);
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
