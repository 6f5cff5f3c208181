/* serve.c: the standalone MCP server (see serve.h).
 *
 * One message in, at most one message out, in order. The server speaks both
 * eras (era.h): it answers initialize (echoing the client's protocol version
 * when it is one keel speaks, else offering its latest legacy one),
 * server/discover, ping, tools/list and tools/call; a request naming a
 * version keel does not speak gets -32022 with the versions it does; a modern
 * request's result carries resultType (and tools/list its ttlMs and
 * cacheScope); any other request gets -32601; notifications and responses are consumed
 * without an answer. Malformed input is answered and the loop goes on: a line
 * that is not JSON gets -32700 with id null, a batch or a non-request gets
 * -32600, an oversize line gets -32600 with its id when the id can be read
 * from the line's first bytes. */
#include "serve.h"
#include "state.h"

#include "era.h"
#include "frame.h"
#include "jscan.h"
#include "text.h"
#include "jsonrpc.h"
#include "log.h"
#include "tools.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef KEEL_VERSION
#define KEEL_VERSION "0.0.0"
#endif

#define SERVE_TOUCH_EVERY_MS 10000 /* client activity written at most this often */

static const char instructions[] =
    "keel offers advisory checks. Each result has a plain-language reason and, when something is detected, "
    "override tokens the person may choose; relay them, never act on a detection silently.";

static cJSON *server_info(void)
{
    cJSON *info = cJSON_CreateObject();
    cJSON_AddStringToObject(info, "name", "keel");
    cJSON_AddStringToObject(info, "title", "keel guardrails");
    cJSON_AddStringToObject(info, "version", KEEL_VERSION);
    return info;
}

static void add_capabilities(cJSON *r)
{
    cJSON *caps = cJSON_AddObjectToObject(r, "capabilities");
    cJSON *tools = cJSON_AddObjectToObject(caps, "tools");
    cJSON_AddBoolToObject(tools, "listChanged", 0);
}

static cJSON *initialize_result(const cJSON *params)
{
    const char *want = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(params, "protocolVersion"));
    const char *v = era_versions[ERA_FIRST_LEGACY];
    for (int i = ERA_FIRST_LEGACY; want && era_versions[i]; i++)
        if (strcmp(want, era_versions[i]) == 0)
            v = era_versions[i];
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "protocolVersion", v);
    add_capabilities(r);
    cJSON_AddItemToObject(r, "serverInfo", server_info());
    cJSON_AddStringToObject(r, "instructions", instructions);
    return r;
}

/* server/discover: what a modern client asks first (or instead of initialize). */
static cJSON *discover_result(void)
{
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "resultType", "complete");
    cJSON *sup = cJSON_AddArrayToObject(r, "supportedVersions");
    for (int i = 0; era_versions[i]; i++)
        cJSON_AddItemToArray(sup, cJSON_CreateString(era_versions[i]));
    add_capabilities(r);
    cJSON_AddItemToObject(cJSON_AddObjectToObject(r, "_meta"), ERA_SERVER_INFO_KEY, server_info());
    cJSON_AddStringToObject(r, "instructions", instructions);
    cJSON_AddNumberToObject(r, "ttlMs", ERA_LIST_TTL_MS);
    cJSON_AddStringToObject(r, "cacheScope", "public");
    return r;
}

/* A reply: the member ("result" or "error") and its value, or none. */
struct reply {
    const char *member;
    cJSON *value;
};

static struct reply result(cJSON *v)
{
    return (struct reply){"result", v};
}

static struct reply error(int code, const char *message, const char *keel_code)
{
    return (struct reply){"error", jr_error_value(code, message, keel_code)};
}

static struct reply tools_call(const struct serve_opts *o, const cJSON *params, const char *line, size_t bytes)
{
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(params, "name");
    if (!cJSON_IsObject(params) || !cJSON_IsString(name))
        return error(JR_INVALID_PARAMS, "tools/call needs params {name, arguments}", NULL);
    const struct tool *t = tools_find(name->valuestring, o->groups);
    if (!t) {
        log_event(LOG_INFO, "unknown_tool", "bytes=%zu", bytes);
        return error(JR_INVALID_PARAMS, "Unknown tool; tools/list names the tools keel serves", "UNKNOWN_TOOL");
    }
    log_event(LOG_INFO, "tool_invoked", "name=%s bytes=%zu", t->name, bytes);
    if (!(t->flags & TOOL_PURE_READ)) {
        /* A call is client activity: it resets time_since_last_prompt. It is
         * written at most every SERVE_TOUCH_EVERY_MS (as keel wrap does), so a
         * typical call costs no state file write: activity is known to within
         * that, and sessions and overrides are written when they change. */
        static int64_t last_touch_ms = -1;
        struct chrono_env env = {{0, 0}, o->profile, o->state_dir, 0, NULL};
        kerr e = {0};
        if (chrono_now(&env.now, &e) < 0)
            log_event(LOG_WARN, "activity_not_recorded", "code=%s", e.code ? e.code : "");
        else if (last_touch_ms < 0 || env.now.ms - last_touch_ms >= SERVE_TOUCH_EVERY_MS ||
                 env.now.ms < last_touch_ms) {
            last_touch_ms = env.now.ms;
            /* tried once: the call (and a ping behind it) never waits on
             * another process's lock for it, as keel wrap's relay does not */
            state_lock_wait(0);
            if (chrono_touch(&env, &e) < 0)
                log_event(LOG_INFO, "activity_not_recorded", "code=%s", e.code ? e.code : "");
            state_lock_wait(STATE_LOCK_WAIT_MS);
        }
    }
    return result(tools_answer(t, params, line, bytes, o->profile, o->state_dir));
}

static struct reply dispatch(const struct serve_opts *o, const cJSON *m, const char *line, size_t bytes)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(m, "id");
    const cJSON *method = cJSON_GetObjectItemCaseSensitive(m, "method");
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(m, "jsonrpc");
    int ok_ver = cJSON_IsString(ver) && strcmp(ver->valuestring, "2.0") == 0;
    struct reply none = {NULL, NULL};

    if (!method) {
        /* A response (to a request keel never sends) or garbage. */
        if (id && (cJSON_GetObjectItemCaseSensitive(m, "result") || cJSON_GetObjectItemCaseSensitive(m, "error"))) {
            log_event(LOG_DEBUG, "response_ignored", "bytes=%zu", bytes);
            return none;
        }
        return error(JR_INVALID_REQUEST, "Invalid Request: a message needs a method", NULL);
    }
    if (!ok_ver || !cJSON_IsString(method) || (id && !jr_valid_id(id))) {
        if (!id) {
            log_event(LOG_WARN, "invalid_notification", "bytes=%zu", bytes);
            return none;
        }
        return error(JR_INVALID_REQUEST,
                     "Invalid Request: needs jsonrpc \"2.0\", a string method and a string or number id", NULL);
    }
    const char *mt = method->valuestring;
    if (!id) {
        log_event(LOG_DEBUG, "notification", "bytes=%zu", bytes);
        return none;
    }
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(m, "params");
    if (strcmp(mt, "initialize") == 0) {
        log_event(LOG_INFO, "initialize", "bytes=%zu", bytes);
        return result(initialize_result(params));
    }
    /* The era is the request's own: the version its _meta names, if any. */
    char want[64];
    int named = era_requested(params, want, sizeof want), modern = 0;
    if (named) {
        int known = 0;
        for (int i = 0; named > 0 && era_versions[i]; i++)
            known |= !strcmp(want, era_versions[i]);
        if (!known) {
            log_event(LOG_INFO, "unsupported_version", "bytes=%zu", bytes);
            struct reply e = {"error", era_unsupported_error(named > 0 ? want : "")};
            return e;
        }
        modern = era_modern_supported(want);
    }
    if (strcmp(mt, "server/discover") == 0) {
        log_event(LOG_INFO, "discover", "bytes=%zu", bytes);
        return result(discover_result());
    }
    struct reply r;
    if (strcmp(mt, "ping") == 0) {
        r = result(cJSON_CreateObject());
    } else if (strcmp(mt, "tools/list") == 0) {
        r = result(cJSON_CreateObject());
        cJSON_AddItemToObject(r.value, "tools", tools_list(o->groups));
        if (modern) {
            cJSON_AddNumberToObject(r.value, "ttlMs", ERA_LIST_TTL_MS);
            cJSON_AddStringToObject(r.value, "cacheScope", "public");
        }
    } else if (strcmp(mt, "tools/call") == 0) {
        r = tools_call(o, params, line, bytes);
    } else {
        log_event(LOG_INFO, "method_not_found", "bytes=%zu", bytes);
        return error(JR_METHOD_NOT_FOUND, "Method not found", NULL);
    }
    if (modern && r.member && !strcmp(r.member, "result"))
        era_complete(r.value);
    return r;
}

char *serve_handle(const struct serve_opts *o, const char *line, size_t n)
{
    size_t i = 0;
    if (n >= 3 && !memcmp(line, "\xEF\xBB\xBF", 3)) /* a byte-order mark some writers put first: no part of the JSON */
        line += 3, n -= 3;
    while (i < n && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'))
        i++;
    if (i == n)
        return NULL; /* blank line */
    cJSON *m = jscan_parse(line, n);
    struct reply r;
    const char *id = NULL;
    size_t idn = 0;
    if (!m) {
        /* Answered with its id when one can be read, so the client can match it. */
        if (jscan_member(line, n, "id", &id, &idn) != 1 || !jr_valid_raw_id(id, idn))
            id = NULL;
        log_event(LOG_WARN, "parse_error", "bytes=%zu", n);
        r = error(JR_PARSE_ERROR, "Parse error: the line is not valid JSON (or nests deeper than 1000)", NULL);
    } else if (cJSON_IsArray(m) && cJSON_GetArraySize(m) > 0) {
        /* A batch (MCP 2025-03-26 and before): each message taken as its own
         * line is, its answers in one array; none when all were
         * notifications. Every request gets its own answer, with its id. */
        cJSON_Delete(m);
        log_event(LOG_DEBUG, "batch", "bytes=%zu", n);
        size_t pos = 0, k = 0, cap = 2, len = 1;
        const char *e;
        char *all = malloc(cap + 1);
        if (!all)
            return NULL;
        all[0] = '[';
        while (jscan_array_next(line, n, &pos, &e)) {
            size_t at = (size_t)(e - line);
            char *one = *e == '[' ? NULL : serve_handle(o, e, jscan_value_end(line, n, at) - at);
            if (*e == '[') /* a batch in a batch is no message */
                one = jr_reply(NULL, 0, "error",
                               jr_error_value(JR_INVALID_REQUEST, "Invalid Request: a batch holds messages", NULL));
            if (!one)
                continue;
            size_t l = strlen(one);
            if (len + l + 2 > cap) {
                while (len + l + 2 > cap)
                    cap *= 2;
                char *b = realloc(all, cap + 1);
                if (!b) {
                    free(one);
                    free(all);
                    return NULL;
                }
                all = b;
            }
            if (k++)
                all[len++] = ',';
            memcpy(all + len, one, l);
            len += l;
            free(one);
        }
        all[len++] = ']';
        all[len] = '\0';
        if (!k) {
            free(all);
            return NULL;
        }
        return all;
    } else if (cJSON_IsArray(m)) {
        log_event(LOG_WARN, "batch_rejected", "bytes=%zu", n);
        r = error(JR_INVALID_REQUEST, "Invalid Request: an empty batch", NULL);
    } else if (!cJSON_IsObject(m)) {
        r = error(JR_INVALID_REQUEST, "Invalid Request: a message must be a JSON object", NULL);
    } else {
        /* The reply echoes the id exactly as it came: big integers and
         * escapes survive, which a parse-and-print round trip would not. */
        if (jr_valid_id(cJSON_GetObjectItemCaseSensitive(m, "id")) && jscan_member(line, n, "id", &id, &idn) != 1)
            id = NULL;
        int dup = jscan_has_dup(m);
        if (id && !text_valid_utf8(id, idn)) { /* echoed, it would make the reply no JSON text */
            id = NULL;
            log_event(LOG_WARN, "invalid_request", "reason=id_not_utf8 bytes=%zu", n);
            r = error(JR_INVALID_REQUEST, "Invalid Request: the id is not valid UTF-8", NULL);
        } else if (id && *id != '"' && !jr_integer_id(id, idn)) {
            id = NULL; /* 1.5, 1e400: peers round such ids each their own way (1.0 and 1e3 are integers) */
            log_event(LOG_WARN, "invalid_request", "reason=id_not_integer bytes=%zu", n);
            r = error(JR_INVALID_REQUEST, "Invalid Request: a numeric id must be an integer", NULL);
        } else if (dup) { /* keel would read the first, a JavaScript peer the last */
            int ids = 0;
            for (const cJSON *c = m->child; c; c = c->next)
                ids += c->string && !strcmp(c->string, "id");
            if (ids > 1) /* which id would be the answer's is the question: none */
                id = NULL;
            log_event(LOG_WARN, "invalid_request", "reason=duplicate_member bytes=%zu", n);
            r = error(dup < 0 ? JR_INTERNAL_ERROR : JR_INVALID_REQUEST,
                      dup < 0 ? "out of memory"
                              : "Invalid Request: a member is given twice (peers would read it differently)",
                      NULL);
        } else {
            r = dispatch(o, m, line, n);
        }
    }
    char *out = r.member ? jr_reply(id, idn, r.member, r.value) : NULL;
    cJSON_Delete(m); /* after the reply, which may borrow its strings (detect.h) */
    return out;
}

static char *oversize_reply(const struct serve_opts *o, const struct frame_reader *f, const char *head, size_t hn,
                            size_t total)
{
    const char *id = NULL;
    size_t idn = 0;
    if ((jscan_member(head, hn, "id", &id, &idn) != 1 && !jscan_tail_id(f->tail, f->tail_n, &id, &idn)) ||
        !jr_valid_raw_id(id, idn))
        id = NULL;
    char msg[160];
    snprintf(msg, sizeof msg, "Invalid Request: message of %zu bytes exceeds the limit of %zu (--max-message-bytes)",
             total, o->max_message_bytes);
    log_event(LOG_WARN, "message_too_large", "bytes=%zu limit=%zu", total, o->max_message_bytes);
    /* Without a readable id keel cannot tell a request from a notification;
     * it answers (id null) rather than risk leaving a request unanswered. */
    return jr_reply(id, idn, "error", jr_error_value(JR_INVALID_REQUEST, msg, "MESSAGE_TOO_LARGE"));
}

int serve_run(const struct serve_opts *o)
{
    signal(SIGPIPE, SIG_IGN);
    struct frame_reader r;
    frame_init(&r, STDIN_FILENO, o->max_message_bytes);
    log_event(LOG_INFO, "serve_start", "max_message_bytes=%zu", o->max_message_bytes);
    int status = 0;
    for (;;) {
        const char *line;
        size_t n;
        enum frame_status st = frame_next(&r, &line, &n);
        if (st == FRAME_EOF)
            break;
        if (st == FRAME_NEED) {
            if (frame_fill(&r) >= 0)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) { /* a non-blocking stdin */
                struct pollfd p = {STDIN_FILENO, POLLIN, 0};
                poll(&p, 1, -1);
                continue;
            }
            log_event(LOG_ERROR, "stdin_error", "errno=%d", errno);
            status = 1;
            break;
        }
        char *reply =
            st == FRAME_OVERSIZE ? oversize_reply(o, &r, line, n, r.oversize_bytes) : serve_handle(o, line, n);
        if (reply) {
            int rc = jr_write_line(STDOUT_FILENO, reply, strlen(reply));
            free(reply);
            if (rc < 0) {
                log_event(LOG_INFO, "client_gone", "errno=%d", errno);
                break;
            }
        }
    }
    frame_free(&r);
    log_event(LOG_INFO, "serve_stop", "status=%d", status);
    return status;
}
