/* route.c: where each message goes in keel wrap.
 *
 * A message is routed by its top-level "method" and "id", found with jscan
 * without building a tree: with a method it is a request (with an id) or a
 * notification; without one it is a response. Only five kinds of message are
 * ever parsed and rewritten: a tools/call for one of keel's own tools
 * (answered here, never forwarded, in the era of the request: era.h), the
 * upstream's answer to initialize and to server/discover (capabilities.tools
 * is added when missing) and to tools/list (keel's tools are appended to the
 * last page, whose ttlMs and cacheScope stay as they are), and the
 * initialize replayed after a restart. Everything else is written out
 * exactly as it came in. A server/discover is not activity: a client may
 * start keel only to ask it (a dual-era client's probe), and keel then
 * writes nothing.
 *
 * Requests in flight are remembered per direction and raw id (pending.h) so
 * that when the upstream dies every one the client is waiting on is answered
 * at once. */
#include "relay.h"
#include "state.h"

#include "era.h"
#include "jscan.h"
#include "jsonrpc.h"
#include "log.h"
#include "text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TOUCH_EVERY_MS 10000 /* activity is written to the state file at most this often */

/* 1 if the raw JSON string token equals want (escapes decoded when present). */
static int str_is_n(const char *raw, size_t rn, const char *want, size_t wn)
{
    if (rn < 2 || raw[0] != '"')
        return 0;
    if (rn <= wn + 2) /* an escape only makes the raw text longer than what it says */
        return rn == wn + 2 && memcmp(raw + 1, want, wn) == 0;
    if (!memchr(raw, '\\', rn))
        return 0;
    cJSON *v = jscan_parse_valid(raw, rn);
    int eq = cJSON_IsString(v) && strcmp(v->valuestring, want) == 0;
    cJSON_Delete(v);
    return eq;
}
#define str_is(raw, rn, lit) str_is_n(raw, rn, "" lit, sizeof lit - 1) /* lit: a string literal */

/* Tells the client to list the tools again. */
static void tools_changed(struct relay *r)
{
    static const char changed[] = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}";
    outq_line(&r->cout, changed, sizeof changed - 1);
}

static void send_line(struct outq *q, char *text)
{
    if (text)
        outq_line(q, text, strlen(text));
    free(text);
}

void relay_error(struct outq *q, const char *id, size_t idn, int code, const char *msg, const char *keel_code)
{
    send_line(q, jr_reply(id, idn, "error", jr_error_value(code, msg, keel_code)));
}

void relay_to_upstream(struct relay *r, const char *line, size_t n)
{
    if (r->http)
        hup_send(r->http, line, n);
    else
        outq_line(&r->sin, line, n);
}

void relay_upstream_error(struct relay *r, const char *id, size_t idn, int code, const char *msg, const char *keel_code)
{
    char *text = jr_reply(id, idn, "error", jr_error_value(code, msg, keel_code));
    if (text)
        relay_to_upstream(r, text, strlen(text));
    free(text);
}

void relay_expose_init(struct relay *r)
{
    r->nexposed = 0;
    for (const struct tool *t = tools_table; t->name && r->nexposed < RELAY_MAX_TOOLS; t++)
        if (t->group & r->o->groups) {
            r->exposed[r->nexposed] = t;
            snprintf(r->exposed_name[r->nexposed], sizeof r->exposed_name[0], "%s", t->name);
            r->nexposed++;
        }
}

static const struct tool *exposed_tool(const struct relay *r, const char *raw, size_t rn)
{
    for (int i = 0; i < r->nexposed; i++)
        if (str_is_n(raw, rn, r->exposed_name[i], strlen(r->exposed_name[i])))
            return r->exposed[i];
    return NULL;
}

/* A keel tool's tools/call, answered here. */
static void answer_keel_tool(struct relay *r, const struct tool *t, const char *id, size_t idn, const char *line,
                             size_t n)
{
    cJSON *m = jscan_parse_valid(line, n);
    if (!m) { /* never a call with arguments missing */
        relay_error(&r->cout, id, idn, JR_INTERNAL_ERROR, "keel could not read this request (out of memory)", NULL);
        return;
    }
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(m, "params");
    char want[64] = ""; /* the version the call names; "" when it names none, or not as a string */
    int known = !era_requested(params, want, sizeof want);
    for (int i = 0; era_versions[i]; i++)
        known |= !strcmp(want, era_versions[i]);
    if (!known) {
        log_event(LOG_INFO, "unsupported_version", "bytes=%zu", n);
        send_line(&r->cout, jr_reply(id, idn, "error", era_unsupported_error(want)));
        cJSON_Delete(m);
        return;
    }
    log_event(LOG_INFO, "tool_invoked", "name=%s bytes=%zu", t->name, n);
    state_lock_wait(STATE_TOOL_WAIT_MS); /* a tool the client asked for waits a little for the state */
    cJSON *res = tools_answer(t, params, line, n, r->o->profile, r->o->state_dir);
    state_lock_wait(0); /* the relay's own state work never waits */
    if (era_modern_supported(want))
        era_complete(res);
    send_line(&r->cout, jr_reply(id, idn, "result", res));
    cJSON_Delete(m);
    if (cJSON_GetArraySize(r->pins.held) &&
        pins_changed(&r->pins)) { /* approve-tool approved something: the client lists again */
        tools_changed(r);
    }
}

/* Client activity for get_time_context, written at most every TOUCH_EVERY_MS. */
static void touch(struct relay *r)
{
    struct chrono_env env = {{0, 0}, r->o->profile, r->o->state_dir, 0, NULL};
    kerr e = {0};
    if (chrono_now(&env.now, &e) < 0 ||
        (env.now.ms - r->last_touch_ms < TOUCH_EVERY_MS && env.now.ms >= r->last_touch_ms))
        return;
    r->last_touch_ms = env.now.ms;
    if (chrono_touch(&env, &e) < 0)
        log_event(LOG_WARN, "activity_not_recorded", "code=%s", e.code ? e.code : "");
}

/* A batch (JSON-RPC 2.0; MCP before 2025-06-18), either way, is taken
 * apart: each message in it is routed, checked and answered as if it had
 * come alone, and what answers them goes out one message a line. Passed on
 * whole, it would carry past keel what keel holds back (a pinned tool's
 * changed definition, a call to a held tool), send keel's own tools to the
 * server, and leave its requests unanswered if the server died. */
static void batch_each(struct relay *r, const char *line, size_t n, void (*one)(struct relay *, const char *, size_t))
{
    size_t pos = 0;
    const char *e;
    log_event(LOG_DEBUG, "batch", "bytes=%zu", n);
    while (jscan_array_next(line, n, &pos, &e)) {
        size_t at = (size_t)(e - line);
        if (*e == '{')
            one(r, e, jscan_value_end(line, n, at) - at);
        else if (one == relay_server_line) /* JSON-RPC 2.0, 6: each element that is no request is answered, */
            relay_upstream_error(r, NULL, 0, JR_INVALID_REQUEST, /* to whoever sent it */
                                 "Invalid Request: a message in a batch must be a JSON object", NULL);
        else
            relay_error(&r->cout, NULL, 0, JR_INVALID_REQUEST,
                        "Invalid Request: a message in a batch must be a JSON object", NULL);
    }
}

/* A line that is no message keel can route: answered with the error, 1;
 * else 0 and *top holds its members. A batch is taken apart (batch_each). */
static int client_unroutable(struct relay *r, const char *line, size_t n, struct jscan_top *top)
{
    if (!jscan_scan(line, n, top)) {
        const char *pid;
        size_t pidn;
        int known = jscan_member(line, n, "id", &pid, &pidn) == 1 && jr_valid_raw_id(pid, pidn);
        log_event(LOG_WARN, "client_parse_error", "bytes=%zu", n);
        relay_error(&r->cout, known ? pid : NULL, known ? pidn : 0, JR_PARSE_ERROR,
                    "Parse error: the line is not valid JSON (or nests deeper than 1000)", NULL);
        return 1;
    }
    if (top->first != '{') { /* a batch or a bare value */
        size_t i = 1;
        while (top->first == '[' && i < n && strchr(" \t\r\n", line[i]))
            i++;
        if (top->first == '[' && i < n && line[i] == ']') /* an empty batch: one error (JSON-RPC 2.0, 6) */
            relay_error(&r->cout, NULL, 0, JR_INVALID_REQUEST, "Invalid Request: an empty batch", NULL);
        else if (top->first == '[')
            batch_each(r, line, n, relay_client_line);
        else
            relay_error(&r->cout, NULL, 0, JR_INVALID_REQUEST, "Invalid Request: a message must be a JSON object",
                        NULL);
        return 1;
    }
    const char *id = top->id.p;
    size_t idn = top->id.n;
    int has_id = id && jr_valid_raw_id(id, idn);
    if (top->dup) { /* peers would read it differently (first- or last-wins) */
        log_event(LOG_WARN, "client_invalid_request", "reason=duplicate_member bytes=%zu", n);
        relay_error(&r->cout, has_id ? id : NULL, has_id ? idn : 0, JR_INVALID_REQUEST,
                    "Invalid Request: a member (id, method, params...) is given twice", NULL);
        return 1;
    }
    if (id && !has_id) { /* an id of null, true, {} or []: not a notification */
        log_event(LOG_WARN, "client_invalid_request", "reason=bad_id bytes=%zu", n);
        relay_error(&r->cout, NULL, 0, JR_INVALID_REQUEST, "Invalid Request: an id must be a string or a number", NULL);
        return 1;
    }
    if (!jscan_is_jsonrpc(top)) {
        log_event(LOG_WARN, "client_invalid_request", "bytes=%zu", n);
        relay_error(&r->cout, has_id ? id : NULL, has_id ? idn : 0, JR_INVALID_REQUEST,
                    "Invalid Request: needs jsonrpc \"2.0\" and a method, or an id with a result or an error", NULL);
        return 1;
    }
    /* What a server's SDK drops without an answer (MCP: an id is a string
     * or an integer, a method a string, params an object), refused here so
     * the client is not left waiting. */
    const char *why = !top->method.p                        ? NULL
        : top->method.p[0] != '"'                           ? "Invalid Request: the method must be a string"
        : top->params.p && top->params.p[0] != '{'          ? "Invalid Request: params must be an object"
        : has_id && id[0] != '"' && !jr_integer_id(id, idn) ? "Invalid Request: an id must be a string or an integer"
                                                            : NULL;
    if (why) {
        log_event(LOG_WARN, "client_invalid_request", "reason=shape bytes=%zu", n);
        relay_error(&r->cout, has_id ? id : NULL, has_id ? idn : 0, JR_INVALID_REQUEST, why, NULL);
        return 1;
    }
    if (top->method.p && has_id && idn > JR_ID_MAX) {
        log_event(LOG_WARN, "client_invalid_request", "reason=id_too_long bytes=%zu", idn);
        relay_error(&r->cout, id, idn, JR_INVALID_REQUEST, "Invalid Request: the id is longer than 1024 bytes", NULL);
        return 1;
    }
    return 0;
}

/* The client's answer to a request of the server's. */
static void client_response(struct relay *r, const char *line, size_t n, const struct jscan_top *top)
{
    int kind;
    if (!top->id.p || !pending_take(&r->pend, FROM_SERVER, top->id.p, top->id.n, &kind, NULL)) {
        /* Not asked by this upstream (a late answer to one that died): keep it away. */
        log_event(LOG_INFO, "response_dropped", "reason=unknown_id bytes=%zu", n);
        return;
    }
    if (kind == PK_SAMPLING && top->result.p) {
        cJSON *res = jscan_parse_valid(top->result.p, top->result.n);
        overlay_on_sampling_result(&r->ov, res);
        cJSON_Delete(res);
    }
    if (r->up == UP)
        relay_to_upstream(r, line, n);
}

static void client_notification(struct relay *r, const char *line, size_t n, const struct jscan_top *top)
{
    const char *method = top->method.p, *params = top->params.p, *rid;
    size_t mn = top->method.n, ridn;
    int kind;
    if (str_is(method, mn, "notifications/cancelled") && params &&
        jscan_member(params, top->params.n, "requestId", &rid, &ridn) == 1)
        pending_take(&r->pend, FROM_CLIENT, rid, ridn, &kind, NULL); /* no answer will come */
    const char *name;
    size_t nn;
    /* a tools/call of keel's own tool sent without an id: keel's, never the
     * server's (and a notification gets no answer) */
    if (str_is(method, mn, "tools/call") && params && jscan_member(params, top->params.n, "name", &name, &nn) == 1 &&
        exposed_tool(r, name, nn)) {
        log_event(LOG_INFO, "notification_dropped", "reason=keel_tool_without_id bytes=%zu", n);
        return;
    }
    if (str_is(method, mn, "notifications/initialized")) {
        free(r->initialized_line);
        r->initialized_line = text_dup(line, n);
        r->initialized_n = n;
    }
    if (r->up == UP)
        relay_to_upstream(r, line, n);
    else
        log_event(LOG_INFO, "notification_dropped", "reason=upstream_down bytes=%zu", n);
}

/* A request keel cannot take: its id is one still in flight (the answer
 * could not be told apart), or too many are. Answered, 1. */
static int request_refused(struct relay *r, const char *id, size_t idn, size_t n)
{
    if (pending_kind(&r->pend, FROM_CLIENT, id, idn) >= 0) {
        log_event(LOG_WARN, "client_invalid_request", "reason=id_in_use bytes=%zu", n);
        relay_error(&r->cout, id, idn, JR_INVALID_REQUEST,
                    "Invalid Request: this id is already used by a request still in flight", NULL);
        return 1;
    }
    if (r->pend.live >= PENDING_MAX) {
        log_event(LOG_WARN, "too_many_pending", "limit=%d", PENDING_MAX);
        relay_error(&r->cout, id, idn, JR_INTERNAL_ERROR,
                    "keel has too many requests in flight to this server; "
                    "wait for some answers and send it again",
                    "TOO_MANY_PENDING");
        return 1;
    }
    return 0;
}

/* A request: refused, answered by keel (its own tools; the upstream down),
 * or sent on with what its answer will need. */
static void client_request(struct relay *r, const char *line, size_t n, const struct jscan_top *top)
{
    const char *method = top->method.p, *id = top->id.p, *params = top->params.p, *name;
    size_t mn = top->method.n, idn = top->id.n, pn = top->params.n, nn;
    if (request_refused(r, id, idn, n))
        return;
    int call = str_is(method, mn, "tools/call"); /* and the tool's name: */
    int named = call && params && jscan_member(params, pn, "name", &name, &nn) == 1;
    if (named) {
        const struct tool *t = exposed_tool(r, name, nn);
        if (t) {
            if (!(t->flags & TOOL_PURE_READ))
                touch(r);
            answer_keel_tool(r, t, id, idn, line, n);
            return;
        }
    }
    char why[1200];
    int held = r->pins.server && named ? pins_held(&r->pins, name, nn, why, sizeof why) : 0;
    if (held) {
        log_event(LOG_WARN, "tool_call_held", "bytes=%zu%s", n, held == PINS_FAILED_UNREAD ? " pins=unread" : "");
        if (held == PINS_FAILED_UNREAD)
            relay_error(&r->cout, id, idn, JR_INTERNAL_ERROR, why, "PINS_UNAVAILABLE");
        else
            relay_error(&r->cout, id, idn, JR_INVALID_PARAMS, why, "TOOL_HELD");
        return;
    }
    int discover = str_is(method, mn, "server/discover");
    if (!discover)
        touch(r);
    if (r->up != UP) {
        const char *msg = r->fail_reason[0] ? r->fail_reason : "the upstream server is not running";
        relay_error(&r->cout, id, idn, JR_INTERNAL_ERROR, msg, r->up == FAILED ? "UPSTREAM_FAILED" : "UPSTREAM_DOWN");
        if (r->up == FAILED && str_is(method, mn, "initialize"))
            r->exit_after_answer = 1;
        return;
    }
    int kind = PK_OTHER;
    void *data = NULL;
    if (r->ov.parts && call && params)
        data = relay_call_started(r, params, pn);
    if (data)
        kind = PK_TOOLS_CALL;
    else if (str_is(method, mn, "initialize")) {
        kind = PK_INITIALIZE;
        free(r->init_line);
        r->init_line = text_dup(line, n);
        r->init_n = n;
    } else if (str_is(method, mn, "tools/list")) {
        kind = PK_TOOLS_LIST;
    } else if (discover) {
        kind = PK_DISCOVER;
    }
    pending_add(&r->pend, FROM_CLIENT, id, idn, kind, data);
    relay_to_upstream(r, line, n);
}

void relay_client_line(struct relay *r, const char *line, size_t n)
{
    size_t i = 0;
    while (i < n && (line[i] == ' ' || line[i] == '\t'))
        i++;
    struct jscan_top top;
    if (i == n || client_unroutable(r, line, n, &top))
        return;
    if (!top.method.p)
        client_response(r, line, n, &top);
    else if (!top.id.p)
        client_notification(r, line, n, &top);
    else
        client_request(r, line, n, &top);
}

static int span_empty(const char *open_brace, size_t n)
{
    size_t i = 1;
    while (i < n && strchr(" \t\r\n", open_brace[i]))
        i++;
    return i == n - 1;
}

/* initialize's result (and server/discover's) must say the server has
 * tools, since keel adds some. The member is spliced in; the upstream's
 * bytes are not re-serialised. */
static char *merge_initialize(struct relay *r, const char *line, size_t n, const struct jscan_top *top)
{
    const struct jscan_span *res = &top->result;
    if (!r->nexposed || !res->p || res->p[0] != '{')
        return NULL;
    const char *caps, *tools;
    size_t cn, tn;
    char text[80];
    struct jscan_insert ins;
    if (jscan_member(res->p, res->n, "capabilities", &caps, &cn) == 1) {
        if (caps[0] != '{' || jscan_member(caps, cn, "tools", &tools, &tn) == 1)
            return NULL; /* it has tools already (or is odd): leave it */
        snprintf(text, sizeof text, "\"tools\":{\"listChanged\":%s}%s",
                 r->o->restart_max > 0 || r->o->url ? "true" : "false", span_empty(caps, cn) ? "" : ",");
        ins = (struct jscan_insert){(size_t)(caps - line) + 1, text, 0};
    } else {
        snprintf(text, sizeof text, "\"capabilities\":{\"tools\":{\"listChanged\":%s}}%s",
                 r->o->restart_max > 0 || r->o->url ? "true" : "false", span_empty(res->p, res->n) ? "" : ",");
        ins = (struct jscan_insert){(size_t)(res->p - line) + 1, text, 0};
    }
    return jscan_splice(line, n, &ins, 1, NULL);
}

static int seen_upstream(const struct relay *r, const char *name)
{
    for (size_t i = 0; i < r->nupstream; i++)
        if (!strcmp(r->upstream_names[i], name))
            return 1;
    return 0;
}

static void remember_upstream(struct relay *r, const char *name)
{
    if (seen_upstream(r, name))
        return;
    if (r->nupstream == r->upstream_cap) {
        size_t cap = r->upstream_cap ? r->upstream_cap * 2 : 32;
        char **v = realloc(r->upstream_names, cap * sizeof *v);
        if (!v)
            return;
        r->upstream_names = v;
        r->upstream_cap = cap;
    }
    char *d = strdup(name);
    if (d)
        r->upstream_names[r->nupstream++] = d;
}

/* tools/list: remember the upstream's names; on the last page, append
 * keel's tools to the array, spliced in before its closing bracket. */
static char *append_tools(struct relay *r, const char *line, size_t n, const struct jscan_top *top)
{
    const struct jscan_span *res = &top->result;
    const char *arr, *next, *code;
    size_t an, nn, cn;
    /* a server with no tools (keel's initialize said there are: its own)
     * answers tools/list "method not found": keel's tools are the list */
    if (!res->p && top->error.p && r->nexposed && jscan_member(top->error.p, top->error.n, "code", &code, &cn) == 1 &&
        cn == 6 && !memcmp(code, "-32601", 6)) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToObject(o, "tools", tools_list(r->o->groups));
        char *out = jr_reply(top->id.p, top->id.n, "result", o);
        log_event(LOG_INFO, "tools_listed_for_server", "reason=method_not_found");
        return out;
    }
    if (!res->p || res->p[0] != '{' || jscan_member(res->p, res->n, "tools", &arr, &an) != 1 || arr[0] != '[')
        return NULL;
    cJSON *tools = jscan_parse_valid(arr, an), *t;
    cJSON_ArrayForEach(t, tools) {
        const char *nm = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "name"));
        if (nm)
            remember_upstream(r, nm);
    }
    cJSON_Delete(tools);
    int last_page =
        jscan_member(res->p, res->n, "nextCursor", &next, &nn) != 1 || (nn == 4 && !memcmp(next, "null", 4));
    if (!last_page || !r->nexposed)
        return NULL;
    cJSON *mine = tools_list(r->o->groups);
    int i = 0;
    cJSON *d;
    cJSON_ArrayForEach(d, mine) {
        const char *base = r->exposed[i]->name;
        char want[160];
        snprintf(want, sizeof want, "%s", base);
        /* the server's name: keel's takes the prefix, and again while the
         * server holds that too (keel_keel_apply_override), so every name
         * listed is one and a call to the server's tool stays the server's */
        for (int tries = 0; seen_upstream(r, want) && tries < 4; tries++) {
            char again[160];
            snprintf(again, sizeof again, "%s%s", r->o->tool_prefix, want);
            snprintf(want, sizeof want, "%s", again);
        }
        if (strcmp(want, r->exposed_name[i]) != 0) {
            log_event(LOG_WARN, "tool_renamed", "name=%s as=%s reason=upstream_has_it", base, want);
            snprintf(r->exposed_name[i], sizeof r->exposed_name[0], "%s", want);
        }
        cJSON_ReplaceItemInObjectCaseSensitive(d, "name", cJSON_CreateString(r->exposed_name[i]));
        i++;
    }
    char *printed = cJSON_PrintUnformatted(mine); /* "[...]": keel's tools as an array */
    cJSON_Delete(mine);
    if (!printed)
        return NULL;
    size_t pl = strlen(printed);
    printed[pl - 1] = '\0'; /* drop the closing bracket */
    printed[0] = span_empty(arr, an) ? ' ' : ','; /* and the opening one becomes the separator */
    struct jscan_insert ins = {(size_t)(arr - line) + an - 1, printed, 0};
    char *out = jscan_splice(line, n, &ins, 1, NULL);
    free(printed);
    return out;
}

/* What the pins make of a tools/list page or an initialize result: a new
 * line (tools held back left out, warnings in front of suspect text) or
 * NULL. Tools left out of an earlier page and released by the last one are
 * announced with list_changed. */
static char *pinned_line(struct relay *r, int kind, const char *line, size_t n, const struct jscan_top *top)
{
    const struct jscan_span *res = &top->result;
    const char *v, *next;
    size_t vn, nn;
    r->pins.failed = 0; /* said of this line only */
    if (!r->pins.server || !res->p || res->p[0] != '{')
        return NULL;
    if (kind != PK_TOOLS_LIST)
        return jscan_member(res->p, res->n, "instructions", &v, &vn) == 1 && v[0] == '"'
            ? pins_instructions(&r->pins, line, n, v, vn)
            : NULL;
    if (jscan_member(res->p, res->n, "tools", &v, &vn) != 1 || v[0] != '[')
        return NULL;
    int last = jscan_member(res->p, res->n, "nextCursor", &next, &nn) != 1 || (nn == 4 && !memcmp(next, "null", 4));
    int relist = 0;
    char *out = pins_tools_page(&r->pins, line, n, v, vn, last, &relist);
    if (last) { /* the held set changed: the person hears it once */
        char *names = cJSON_PrintUnformatted(r->pins.held);
        uint64_t h = names ? text_hash(names, strlen(names), 0) : 0;
        if (h != r->pins_announced)
            overlay_pins_held(&r->ov, r->pins.server, r->pins.held);
        r->pins_announced = h;
        free(names);
    }
    if (relist) {
        tools_changed(r);
    }
    return out;
}

/* A line from the upstream that cannot be passed on. If it reads as the
 * answer to a request in flight, that request is answered now, with an
 * error, rather than left waiting for ever. */
static int answer_unusable(struct relay *r, const char *line, size_t n, const char *why)
{
    const char *id, *m;
    size_t idn, mn;
    int kind;
    void *data = NULL;
    if (jscan_member(line, n, "method", &m, &mn) == 1 || jscan_member(line, n, "id", &id, &idn) != 1 ||
        !jr_valid_raw_id(id, idn) || !pending_take(&r->pend, FROM_CLIENT, id, idn, &kind, &data))
        return 0;
    if (data && r->pend.free_data)
        r->pend.free_data(data);
    log_event(LOG_WARN, "upstream_response_unusable", "reason=%s bytes=%zu", why, n);
    char msg[160];
    snprintf(msg, sizeof msg, "the server's answer could not be passed on: %s", why);
    relay_error(&r->cout, id, idn, JR_INTERNAL_ERROR, msg, "UPSTREAM_BAD_RESPONSE");
    return 1;
}

/* 1 when the answer to initialize or tools/list names a member twice
 * anywhere in its result: keel's parse keeps the first, a JavaScript client
 * the last, so what keel pinned would not be what the client reads. (A tool
 * result's are found where the rules read it: annotate.c.) */
static int result_ambiguous(struct relay *r, const char *id, size_t idn, const struct jscan_top *top)
{
    int kind = pending_kind(&r->pend, FROM_CLIENT, id, idn);
    if (kind != PK_INITIALIZE && kind != PK_DISCOVER && kind != PK_TOOLS_LIST)
        return 0;
    cJSON *res = jscan_parse_valid(top->result.p, top->result.n);
    int dup = res ? jscan_has_dup(res) : 0;
    cJSON_Delete(res);
    return dup != 0;
}

/* An array from the upstream is a batch when it holds an object: its
 * objects go on, each element that is none is answered -32600 (a bare
 * [1,2,3] or [] is no message at all). */
static int batch_of_objects(const char *line, size_t n)
{
    size_t pos = 0;
    const char *e;
    while (jscan_array_next(line, n, &pos, &e))
        if (*e == '{')
            return 1;
    return 0;
}

void relay_server_line(struct relay *r, const char *line, size_t n)
{
    size_t i = 0;
    while (i < n && (line[i] == ' ' || line[i] == '\t'))
        i++;
    if (i == n)
        return;
    struct jscan_top top;
    relay_server_scanned(r, line, n, jscan_scan(line, n, &top) ? &top : NULL);
}

void relay_server_scanned(struct relay *r, const char *line, size_t n, const struct jscan_top *top)
{
    if (!top || (top->first != '{' && top->first != '[')) {
        if (answer_unusable(r, line, n, "it is not valid JSON"))
            return;
        /* Not a message: keep it off the client's stream. Its size is logged,
         * never its text (a server's stray output may hold what it was sent). */
        log_event(LOG_WARN, "upstream_not_json", "bytes=%zu", n);
        return;
    }
    if (!text_valid_utf8(line, n)) { /* the client's parser would refuse the whole line */
        if (!answer_unusable(r, line, n, "it is not valid UTF-8"))
            log_event(LOG_WARN, "upstream_not_utf8", "bytes=%zu", n);
        return;
    }
    if (top->first == '[') {
        if (batch_of_objects(line, n)) /* taken apart, as a client's is */
            batch_each(r, line, n, relay_server_line);
        else
            log_event(LOG_WARN, "upstream_not_jsonrpc", "reason=array bytes=%zu", n);
        return;
    }
    if (top->dup) {
        if (!answer_unusable(r, line, n, "a member is given twice"))
            log_event(LOG_WARN, "upstream_not_jsonrpc", "reason=duplicate_member bytes=%zu", n);
        return;
    }
    if (!jscan_is_jsonrpc(top)) { /* JSON, but not a message: a JSON logger, say */
        log_event(LOG_WARN, "upstream_not_jsonrpc", "bytes=%zu", n);
        return;
    }
    const char *id = top->id.p;
    size_t idn = top->id.n;
    int has_id = id && jr_valid_raw_id(id, idn);
    if (top->method.p && has_id && idn > JR_ID_MAX) { /* kept in flight: answered here instead */
        log_event(LOG_WARN, "upstream_invalid_request", "reason=id_too_long bytes=%zu", idn);
        relay_upstream_error(r, id, idn, JR_INVALID_REQUEST, "Invalid Request: the id is longer than 1024 bytes", NULL);
        return;
    }
    if (top->method.p && id && !has_id) { /* null, true, an object: the client could not answer it */
        log_event(LOG_WARN, "upstream_invalid_request", "reason=id_type bytes=%zu", n);
        relay_upstream_error(r, NULL, 0, JR_INVALID_REQUEST, "Invalid Request: an id is a string or a number", NULL);
        return;
    }
    if (top->method.p && has_id && pending_kind(&r->pend, FROM_SERVER, id, idn) >= 0) {
        /* two requests of one id in flight: their answers could not be told apart */
        log_event(LOG_WARN, "upstream_invalid_request", "reason=id_in_use bytes=%zu", n);
        relay_upstream_error(r, id, idn, JR_INVALID_REQUEST, "Invalid Request: this id is still in flight", NULL);
        return;
    }
    if (top->method.p) {
        int kind = PK_OTHER;
        const char *rid;
        size_t ridn;
        int k2;
        if (!has_id && str_is(top->method.p, top->method.n, "notifications/cancelled") && top->params.p &&
            jscan_member(top->params.p, top->params.n, "requestId", &rid, &ridn) == 1)
            pending_take(&r->pend, FROM_SERVER, rid, ridn, &k2, NULL);
        if (r->ov.parts && str_is(top->method.p, top->method.n, "sampling/createMessage")) {
            cJSON *params = top->params.p ? jscan_parse_valid(top->params.p, top->params.n) : NULL;
            overlay_on_sampling_request(&r->ov, params);
            cJSON_Delete(params);
            kind = PK_SAMPLING;
        }
        if (has_id)
            pending_add(&r->pend, FROM_SERVER, id, idn, kind, NULL);
        relay_queue_server_line(r, line, n, NULL, 0);
        return;
    }
    int kind = PK_OTHER;
    if (has_id && pending_take(&r->pend, FROM_KEEL, id, idn, &kind, NULL)) {
        /* The replayed initialize answered: finish the handshake quietly and
         * tell the client to list tools again. */
        if (r->initialized_line)
            relay_to_upstream(r, r->initialized_line, r->initialized_n);
        tools_changed(r);
        log_event(LOG_INFO, "upstream_reinitialized", "replays=%u", r->replays);
        r->up = UP;
        return;
    }
    char *rewritten = NULL;
    void *data = NULL;
    if (has_id && top->result.p && result_ambiguous(r, id, idn, top)) {
        if (!answer_unusable(r, line, n, "a member is given twice"))
            log_event(LOG_WARN, "upstream_not_jsonrpc", "reason=duplicate_member bytes=%zu", n);
        return;
    }
    if (has_id && pending_take(&r->pend, FROM_CLIENT, id, idn, &kind, &data)) {
        if (kind == PK_INITIALIZE || kind == PK_DISCOVER || kind == PK_TOOLS_LIST) {
            char *pinned = pinned_line(r, kind, line, n, top);
            struct jscan_top pt;
            if ((!pinned && r->pins.server && r->pins.failed) || (pinned && !jscan_scan(pinned, strlen(pinned), &pt))) {
                /* What pins had to leave out or mark could not be: the
                 * server's answer must not reach the client as it is. */
                int unread = r->pins.failed == PINS_FAILED_UNREAD;
                free(pinned);
                log_event(LOG_WARN, "pins_page_unwritten", "bytes=%zu%s", n, unread ? " pins=unread" : "");
                char msg[512];
                if (unread)
                    pins_unread_why(&r->pins, msg, sizeof msg);
                else
                    snprintf(msg, sizeof msg,
                             "keel could not hold back the server's changed tool definitions (out of memory); ask "
                             "again");
                relay_error(&r->cout, id, idn, JR_INTERNAL_ERROR, msg, "PINS_UNAVAILABLE");
                return;
            }
            const char *l = pinned ? pinned : line;
            size_t ln = pinned ? strlen(pinned) : n;
            const struct jscan_top *t = pinned ? &pt : top;
            rewritten = kind == PK_TOOLS_LIST ? append_tools(r, l, ln, t) : merge_initialize(r, l, ln, t);
            if (rewritten)
                free(pinned);
            else
                rewritten = pinned;
        } else if (kind == PK_TOOLS_CALL) {
            int queued;
            rewritten = relay_call_finished(r, data, line, n, top, &queued);
            if (queued)
                return;
        }
    } else {
        /* Nobody waits for it: an unknown id, one already answered, or none. */
        log_event(LOG_INFO, "response_dropped", "from=upstream reason=unknown_id bytes=%zu", n);
        return;
    }
    if (rewritten) {
        outq_line(&r->cout, rewritten, strlen(rewritten));
        free(rewritten);
    } else {
        relay_queue_server_line(r, line, n, NULL, 0);
    }
}

static void oversize_msg(char *buf, size_t n, size_t total, size_t limit, const char *what)
{
    snprintf(buf, n, "%s of %zu bytes exceeds the limit of %zu (--max-message-bytes)", what, total, limit);
}

/* The id of an oversize line: near its start, or (as SDKs write it) last. */
static int oversize_id(const struct frame_reader *f, const char *head, size_t hn, const char **id, size_t *idn)
{
    return (jscan_member(head, hn, "id", id, idn) == 1 || jscan_tail_id(f->tail, f->tail_n, id, idn)) &&
        jr_valid_raw_id(*id, *idn);
}

void relay_client_oversize(struct relay *r, const char *head, size_t hn, size_t total)
{
    const char *method = NULL, *id = NULL;
    size_t mn, idn = 0;
    int has_method = jscan_member(head, hn, "method", &method, &mn) == 1;
    int has_id = oversize_id(&r->cin, head, hn, &id, &idn);
    char msg[200];
    log_event(LOG_WARN, "message_too_large", "from=client bytes=%zu limit=%zu", total, r->o->max_message_bytes);
    int kind;
    if (has_method && has_id) { /* a request: answer it */
        oversize_msg(msg, sizeof msg, total, r->o->max_message_bytes, "Invalid Request: message");
        relay_error(&r->cout, id, idn, JR_INVALID_REQUEST, msg, "MESSAGE_TOO_LARGE");
    } else if (!has_method && has_id && pending_take(&r->pend, FROM_SERVER, id, idn, &kind, NULL) && r->up == UP) {
        /* The client's answer to a server request: the server still gets one. */
        oversize_msg(msg, sizeof msg, total, r->o->max_message_bytes, "the client's response");
        relay_upstream_error(r, id, idn, JR_INTERNAL_ERROR, msg, "MESSAGE_TOO_LARGE");
    }
}

void relay_server_oversize(struct relay *r, const char *head, size_t hn, size_t total)
{
    const char *method = NULL, *id = NULL;
    size_t mn, idn = 0;
    int has_method = jscan_member(head, hn, "method", &method, &mn) == 1;
    int has_id = oversize_id(&r->sout, head, hn, &id, &idn);
    char msg[200];
    log_event(LOG_WARN, "message_too_large", "from=upstream bytes=%zu limit=%zu", total, r->o->max_message_bytes);
    int kind;
    if (has_method && has_id) { /* a server request: answer the server */
        oversize_msg(msg, sizeof msg, total, r->o->max_message_bytes, "Invalid Request: message");
        relay_upstream_error(r, id, idn, JR_INVALID_REQUEST, msg, "MESSAGE_TOO_LARGE");
    } else if (!has_method && has_id && pending_take(&r->pend, FROM_CLIENT, id, idn, &kind, NULL)) {
        oversize_msg(msg, sizeof msg, total, r->o->max_message_bytes, "the upstream's response");
        relay_error(&r->cout, id, idn, JR_INTERNAL_ERROR, msg, "MESSAGE_TOO_LARGE");
    }
}

static void fail_one(const char *id, size_t idn, int kind, void *ctx)
{
    (void)kind;
    struct relay *r = ctx;
    relay_error(&r->cout, id, idn, JR_INTERNAL_ERROR, r->fail_reason, "UPSTREAM_EXITED");
}

void relay_fail_pending(struct relay *r, const char *why)
{
    snprintf(r->fail_reason, sizeof r->fail_reason, "%s", why);
    pending_drain(&r->pend, FROM_CLIENT, fail_one, r);
    pending_drain(&r->pend, FROM_SERVER, NULL, NULL);
    pending_drain(&r->pend, FROM_KEEL, NULL, NULL);
}

int relay_replay(struct relay *r)
{
    if (!r->init_line)
        return 0;
    cJSON *m = jscan_parse_valid(r->init_line, r->init_n);
    if (!m)
        return 0;
    char id[48];
    snprintf(id, sizeof id, "keel-replay-%u", ++r->replays);
    cJSON_ReplaceItemInObjectCaseSensitive(m, "id", cJSON_CreateString(id));
    char *s = cJSON_PrintUnformatted(m);
    cJSON_Delete(m);
    if (!s)
        return 0;
    char raw[64];
    int rn = snprintf(raw, sizeof raw, "\"%s\"", id);
    pending_add(&r->pend, FROM_KEEL, raw, (size_t)rn, PK_REPLAY, NULL);
    relay_to_upstream(r, s, strlen(s));
    free(s);
    return 1;
}

void relay_init(struct relay *r, const struct wrap_opts *o)
{
    memset(r, 0, sizeof *r);
    r->o = o;
    relay_expose_init(r);
    r->pend.free_data = relay_call_data_free;
    state_lock_wait(0); /* the wire never waits on the state file */
    overlay_init(&r->ov, o->profile, o->state_dir, o->overlay, o->model_tools, o->nmodel_tools, o->loop_exempt,
                 o->nloop_exempt);
    if (o->profile && o->profile->pins_on) {
        char id[2048];
        pins_identity(id, sizeof id, o->argv, o->url);
        pins_open(&r->pins, o->state_dir, id, o->profile->pins_hold_suspect);
    }
    outq_init(&r->sin, -1);
    frame_init(&r->sout, -1, o->max_message_bytes);
}

void relay_free(struct relay *r)
{
    pins_close(&r->pins);
    overlay_free(&r->ov);
    frame_free(&r->cin);
    outq_free(&r->cout); /* nothing lent any more: the reader's buffer can go */
    frame_pin(&r->sout, 0);
    frame_free(&r->sout);
    outq_free(&r->sin);
    pending_free(&r->pend);
    free(r->init_line);
    free(r->initialized_line);
    free(r->cut.hold);
    relay_result_done(&r->cut.rs);
    for (size_t i = 0; i < r->nupstream; i++)
        free(r->upstream_names[i]);
    free(r->upstream_names);
}
