/* detect.c: shared argument readers and output builders (see detect.h). */
#include "detect.h"

#include "text.h"
#include "timefmt.h"

#include <math.h>
#include <string.h>

#ifndef KEEL_FEEDBACK_URI
#define KEEL_FEEDBACK_URI "urn:keel:feedback:false-positive"
#endif

int kerr_set(kerr *e, const char *code, const char *field, const char *fmt, ...)
{
    if (!e)
        return -1;
    e->code = code;
    snprintf(e->field, sizeof e->field, "%s", field ? field : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    return -1;
}

int det_known_keys(const cJSON *obj, const char *const *keys, const char *prefix, kerr *e)
{
    for (const cJSON *m = obj ? obj->child : NULL; m; m = m->next) {
        int ok = 0;
        for (const char *const *k = keys; *k; k++)
            if (m->string && strcmp(m->string, *k) == 0)
                ok = 1;
        if (!ok) {
            /* Key names are the caller's schema, not user content: naming them
             * helps, as long as the name is short, clean UTF-8. */
            const char *k = m->string ? m->string : "";
            size_t kn = strlen(k);
            char f[96];
            if (kn <= 48 && text_valid_utf8(k, kn))
                snprintf(f, sizeof f, "%s%s", prefix, k);
            else
                snprintf(f, sizeof f, "%s(a long or non-UTF-8 key)", prefix);
            return kerr_set(e, "INPUT_INVALID", f, "%s is not a known argument", f);
        }
    }
    return 0;
}

int det_string(const cJSON *obj, const char *key, const char *field, int required, const char *missing_code,
               size_t max_chars, const char **s, size_t *n, kerr *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v || cJSON_IsNull(v)) {
        if (required)
            return kerr_set(e, missing_code ? missing_code : "INPUT_INVALID", field, "%s is required", field);
        return 0;
    }
    if (!cJSON_IsString(v) || !v->valuestring)
        return kerr_set(e, "INPUT_INVALID", field, "%s must be a string", field);
    size_t len = strlen(v->valuestring);
    if (!text_valid_utf8(v->valuestring, len))
        return kerr_set(e, "INPUT_INVALID", field, "%s is not valid UTF-8", field);
    /* A code point is at least one byte: only long strings need counting. */
    if (len > max_chars && text_char_count(v->valuestring, len) > max_chars)
        return kerr_set(e, "INPUT_TOO_LARGE", field, "%s is longer than %zu characters; shorten it and retry", field,
                        max_chars);
    *s = v->valuestring;
    *n = len;
    return 1;
}

int det_int(const cJSON *obj, const char *key, const char *field, long lo, long hi, long def, const char *range_code,
            long *out, kerr *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v || cJSON_IsNull(v)) {
        *out = def;
        return 0;
    }
    if (cJSON_IsNumber(v) && !isfinite(v->valuedouble))
        return kerr_set(e, range_code ? range_code : "INPUT_INVALID", field, "%s must be between %ld and %ld", field,
                        lo, hi);
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble))
        return kerr_set(e, "INPUT_INVALID", field, "%s must be an integer", field);
    if (v->valuedouble < (double)lo || v->valuedouble > (double)hi)
        return kerr_set(e, range_code ? range_code : "INPUT_INVALID", field, "%s must be between %ld and %ld", field,
                        lo, hi);
    *out = (long)v->valuedouble;
    return 0;
}

int det_number(const cJSON *obj, const char *key, const char *field, double lo, double hi, double def, double *out,
               kerr *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v || cJSON_IsNull(v)) {
        *out = def;
        return 0;
    }
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return kerr_set(e, "INPUT_INVALID", field, "%s must be a number", field);
    if (v->valuedouble < lo || v->valuedouble > hi)
        return kerr_set(e, "INPUT_INVALID", field, "%s must be between %g and %g", field, lo, hi);
    *out = v->valuedouble;
    return 0;
}

int det_time(const cJSON *obj, const char *key, const char *field, int64_t *ms, int *off, kerr *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v || cJSON_IsNull(v))
        return kerr_set(e, "INPUT_INVALID", field, "%s is required", field);
    if (!cJSON_IsString(v) || tf_parse_rfc3339(v->valuestring, ms, off) < 0)
        return kerr_set(e, "INPUT_INVALID", field,
                        "%s must be an RFC 3339 time with an offset, like 2026-05-16T10:00:00+01:00", field);
    return 0;
}

static cJSON *heuristic_object(const char *name, const char *version, const char *description)
{
    cJSON *h = cJSON_CreateObject(); /* static text, keys and values: referenced, not copied */
    cJSON_AddItemToObjectCS(h, "name", cJSON_CreateStringReference(name));
    cJSON_AddItemToObjectCS(h, "version", cJSON_CreateStringReference(version));
    cJSON_AddItemToObjectCS(h, "description", cJSON_CreateStringReference(description));
    return h;
}

cJSON *det_heuristic(const char *name, const char *version, const char *description)
{
    /* The same few static texts on every answer: each is printed (escaped)
     * once, and goes out as that JSON. */
    static struct {
        const char *name, *version, *description;
        char *json;
    } printed[16];
    size_t i = 0;
    while (i < sizeof printed / sizeof printed[0] && printed[i].name &&
           !(printed[i].name == name && printed[i].version == version && printed[i].description == description))
        i++;
    if (i == sizeof printed / sizeof printed[0]) /* more heuristics than kept: built each time */
        return heuristic_object(name, version, description);
    if (!printed[i].name) {
        cJSON *h = heuristic_object(name, version, description);
        char *json = cJSON_PrintUnformatted(h);
        if (!json)
            return h;
        cJSON_Delete(h);
        printed[i].name = name, printed[i].version = version, printed[i].description = description;
        printed[i].json = json;
    }
    return cJSON_CreateRaw(printed[i].json);
}

/* The closed override vocabulary (ADR 0006), each with the sentence a person reads. */
static const struct {
    const char *token, *description;
} vocabulary[] = {
    {"fresh-context", "Start from a clean slate: forget what this check has seen so far."},
    {"override-once", "Don't show this check's next advisory."},
    {"disable-for-session", "Turn this check off until the current session, or stretch of work, ends."},
    {"lower-sensitivity", "Make this check harder to trigger from now on."},
    {"snooze-15m", "No time reminders for the next 15 minutes."},
    {"snooze-once", "Skip the next reminder step."},
    {"commit-and-close", "Write down where you are and close the session now."},
    {"extend-end-of-day", "Move today's end of day one hour later."},
    {"i-want-validation", "I know; I want encouragement right now, so don't flag it."},
    {"explain-the-match", "Show exactly what matched and why."},
    {"approve-tool", "I have read what changed: approve the tools keel held back."},
};

void det_overrides(cJSON *out, const char *const *tokens, size_t n)
{
    cJSON *arr = cJSON_CreateArray();
    cJSON_AddItemToObjectCS(out, "override_options", arr);
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < sizeof vocabulary / sizeof vocabulary[0]; k++)
            if (strcmp(tokens[i], vocabulary[k].token) == 0) {
                cJSON *o = cJSON_CreateObject();
                cJSON_AddItemToObjectCS(o, "token", cJSON_CreateStringReference(vocabulary[k].token));
                cJSON_AddItemToObjectCS(o, "description", cJSON_CreateStringReference(vocabulary[k].description));
                cJSON_AddItemToArray(arr, o);
            }
}

void det_common(cJSON *out, double confidence, const char *reason, cJSON *heuristic)
{
    cJSON_AddItemToObjectCS(out, "confidence", cJSON_CreateNumber(det_round(confidence)));
    cJSON_AddItemToObjectCS(out, "reason", cJSON_CreateString(reason));
    cJSON_AddItemToObjectCS(out, "heuristic", heuristic);
    cJSON_AddItemToObjectCS(out, "false_positive_feedback_path", cJSON_CreateStringReference(KEEL_FEEDBACK_URI));
}

double det_round(double x)
{
    return round(x * 1000.0) / 1000.0;
}
