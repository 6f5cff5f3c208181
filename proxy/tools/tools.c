/* tools.c: the tool table, tools/list from the schemas, and tool results. */
#include "tools.h"

#include "clock.h"
#include "embed.h"
#include "jscan.h"
#include "jsonrpc.h"
#include "log.h"
#include "overlay.h"
#include "submit.h"

#include <stdlib.h>
#include <string.h>

/* The detectors are pure: they take the clock reading and nothing else. */
#define DETECTOR(fn)                                                                                                   \
    static int tool_##fn(const cJSON *args, const struct chrono_env *env, cJSON **out, kerr *e)                        \
    {                                                                                                                  \
        return fn(args, env->now.ms, env->now.offset_s, out, e);                                                       \
    }
DETECTOR(rum_check)
DETECTOR(hyp_check)
DETECTOR(syc_check)
DETECTOR(insp_check)

const struct tool tools_table[] = {
    {"check_rumination", TOOL_GUARDRAIL, "schemas/check_rumination.json", tool_rum_check, 0},
    {"check_hyperfocus", TOOL_GUARDRAIL, "schemas/check_hyperfocus.json", tool_hyp_check, 0},
    {"check_sycophancy", TOOL_GUARDRAIL, "schemas/check_sycophancy.json", tool_syc_check, 0},
    {"get_time_context", TOOL_CHRONO | TOOL_CORE, "schemas/get_time_context.json", chrono_get_time_context,
     TOOL_PURE_READ},
    {"mark_session_start", TOOL_CHRONO | TOOL_CORE, "schemas/mark_session_start.json", chrono_mark_session_start, 0},
    {"mark_session_end", TOOL_CHRONO | TOOL_CORE, "schemas/mark_session_end.json", chrono_mark_session_end, 0},
    {"request_break_if_needed", TOOL_CHRONO, "schemas/request_break_if_needed.json", chrono_request_break, 0},
    {"idle_status", TOOL_CHRONO, "schemas/idle_status.json", chrono_idle_status, TOOL_PURE_READ},
    {"apply_override", TOOL_GUARDRAIL | TOOL_CORE, "schemas/apply_override.json", overlay_apply_override, 0},
    {"self_inspect", TOOL_INSPECT, "schemas/self_inspect.json", tool_insp_check, TOOL_TEXT_QUESTION},
    {"submit_message", TOOL_RULES, "schemas/submit_message.json", submit_message, 0},
    {"submit_justification", TOOL_RULES, "schemas/submit_justification.json", submit_justification, 0},
    {"get_rules", TOOL_RULES, "schemas/get_rules.json", submit_get_rules, 0},
    {"get_status", TOOL_RULES, "schemas/get_status.json", submit_get_status, 0},
    {NULL, 0, NULL, NULL, 0},
};

#define NTOOLS (sizeof tools_table / sizeof tools_table[0] - 1)
static cJSON *schema_cache[NTOOLS];

const struct tool *tools_find(const char *name, unsigned groups)
{
    for (const struct tool *t = tools_table; t->name; t++)
        if ((t->group & groups) && strcmp(t->name, name) == 0)
            return t;
    return NULL;
}

const cJSON *tools_schema(const struct tool *t)
{
    size_t i = (size_t)(t - tools_table);
    if (!schema_cache[i]) {
        const struct embed_blob *b = embed_find(t->schema);
        schema_cache[i] = b ? cJSON_ParseWithLength(b->data, b->len) : NULL;
        if (!schema_cache[i])
            log_event(LOG_ERROR, "schema_unreadable", "tool=%s", t->name);
    }
    return schema_cache[i];
}

static void copy_member(cJSON *to, const cJSON *from, const char *from_key, const char *to_key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(from, from_key);
    if (v)
        cJSON_AddItemToObject(to, to_key, cJSON_Duplicate(v, 1));
}

cJSON *tools_list(unsigned groups)
{
    cJSON *arr = cJSON_CreateArray();
    for (const struct tool *t = tools_table; t->name; t++) {
        if (!(t->group & groups))
            continue;
        const cJSON *s = tools_schema(t);
        cJSON *d = cJSON_CreateObject();
        cJSON_AddStringToObject(d, "name", t->name);
        if (s) {
            copy_member(d, s, "title", "title");
            copy_member(d, s, "description", "description");
            copy_member(d, s, "input", "inputSchema");
            copy_member(d, s, "output", "outputSchema");
            copy_member(d, s, "annotations", "annotations");
        }
        cJSON_AddItemToArray(arr, d);
    }
    return arr;
}

static cJSON *error_value(const kerr *e)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *er = cJSON_AddObjectToObject(o, "error");
    cJSON_AddStringToObject(er, "code", e->code ? e->code : "INTERNAL_ERROR");
    cJSON_AddStringToObject(er, "message", e->message);
    if (e->field[0])
        cJSON_AddStringToObject(er, "field", e->field);
    return o;
}

cJSON *tools_error(const char *code, const char *field, const char *message)
{
    kerr e = {0};
    kerr_set(&e, code, field, "%s", message);
    return error_value(&e);
}

cJSON *tools_run(const struct tool *t, const cJSON *args, const struct profile *profile, const char *state_dir,
                 int *is_error)
{
    kerr e = {0};
    cJSON *out = NULL;
    static cJSON empty = {.type = cJSON_Object}; /* {} for a call without arguments; outlives out (detect.h) */
    struct chrono_env env = {{0, 0},
                             profile,
                             state_dir,
                             overlay_current ? overlay_current->conversation_at : 0,
                             overlay_current ? overlay_current->conversation : NULL};
    *is_error = 1;
    if (args && !cJSON_IsObject(args)) {
        kerr_set(&e, "INPUT_INVALID", "arguments", "arguments must be a JSON object");
        return error_value(&e);
    }
    if (!args)
        args = &empty;
    int rc = chrono_now(&env.now, &e);
    if (rc == 0)
        rc = t->fn(args, &env, &out, &e);
    if (rc < 0) {
        log_event(LOG_INFO, "tool_error", "name=%s code=%s", t->name, e.code ? e.code : "INTERNAL_ERROR");
        return error_value(&e);
    }
    *is_error = 0;
    /* what a check tool found, for explain-the-match */
    int det = !strcmp(t->name, "check_rumination") ? DET_RUMINATION
        : !strcmp(t->name, "check_sycophancy")     ? DET_SYCOPHANCY
        : !strcmp(t->name, "check_hyperfocus")     ? DET_HYPERFOCUS
                                                   : -1;
    const char *level = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(out, "level"));
    if (det >= 0 &&
        (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(out, "detected")) || (level && strcmp(level, "none"))))
        overlay_note_check(det, out);
    return out;
}

cJSON *tools_answer(const struct tool *t, const cJSON *params, const char *line, size_t n,
                    const struct profile *profile, const char *state_dir)
{
    int is_error = 1;
    cJSON *out;
    if (jscan_has_nul_escape(line, n)) {
        out = tools_error("INPUT_INVALID", "arguments", "text must not contain the NUL character (\\u0000)");
    } else {
        cJSON *args = cJSON_GetObjectItemCaseSensitive(params, "arguments");
        out = tools_run(t, cJSON_IsNull(args) ? NULL : args, profile, state_dir, &is_error);
    }
    return tools_call_result(out, is_error, (t->flags & TOOL_TEXT_QUESTION) ? "question" : NULL);
}

cJSON *tools_call_result(cJSON *structured, int is_error, const char *text_field)
{
    cJSON *r = cJSON_CreateObject();
    cJSON *content = cJSON_AddArrayToObject(r, "content");
    cJSON *block = cJSON_CreateObject();
    cJSON_AddStringToObject(block, "type", "text");
    if (is_error) {
        const cJSON *er = cJSON_GetObjectItemCaseSensitive(structured, "error");
        const char *code = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(er, "code"));
        const char *msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(er, "message"));
        size_t n = strlen(code ? code : "") + strlen(msg ? msg : "") + 3;
        char *text = malloc(n);
        if (text)
            snprintf(text, n, "%s: %s", code ? code : "", msg ? msg : "");
        cJSON_AddStringToObject(block, "text", text ? text : "INTERNAL_ERROR: out of memory");
        free(text);
    } else if (text_field) { /* the one field a person reads, alone */
        const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(structured, text_field));
        cJSON_AddStringToObject(block, "text", v ? v : "");
    } else {
        /* The structured result printed once: as the text block and, raw, as
         * structuredContent (printing its numbers twice was most of a call). */
        char *text = cJSON_PrintUnformatted(structured), *quoted = text ? jr_quote_printed(text) : NULL;
        cJSON *raw = text ? cJSON_CreateRaw(text) : NULL;
        if (quoted)
            cJSON_AddRawToObject(block, "text", quoted);
        else
            cJSON_AddStringToObject(block, "text", text ? text : "");
        free(text);
        free(quoted);
        if (raw) {
            cJSON_Delete(structured); /* before the arguments it may borrow from (detect.h) */
            structured = raw;
        }
    }
    cJSON_AddItemToArray(content, block);
    cJSON_AddItemToObject(r, "structuredContent", structured);
    if (is_error)
        cJSON_AddBoolToObject(r, "isError", 1);
    return r;
}
