/* session.c: sessions with a stated intent, and breaks.
 *
 * A session is opened by mark_session_start {intent} and closed by
 * mark_session_end, which takes no session id: keel tracks the one open
 * session, so the model has nothing to remember. Opening while one is open
 * closes the old one (auto_close, the default) or fails with
 * SESSION_ALREADY_OPEN (profile: session_overlap_policy: error). The state
 * keeps the open session, counters of sessions started and closed, and the
 * last RECENT_KEEP closed sessions. The intent is private: it lives in the
 * state file and in results, never in a log. */
#include "chrono.h"

#include "detect.h"
#include "guard.h"
#include "state.h"
#include "timefmt.h"

#include <stdio.h>
#include <string.h>
#include <unictype.h>
#include <unistr.h>
#include <uuid/uuid.h>

#define INTENT_MAX  500
#define SUMMARY_MAX 1000
#define RECENT_KEEP 50

static void add_time(cJSON *o, const char *key, int64_t ms, int off)
{
    char b[40];
    tf_format_rfc3339(ms, off, b, sizeof b);
    cJSON_AddStringToObject(o, key, b);
}

/* o[key] = the time, where the member stands (state_set) */
static void set_time(cJSON *o, const char *key, int64_t ms, int off)
{
    char b[40];
    tf_format_rfc3339(ms, off, b, sizeof b);
    state_set(o, key, cJSON_CreateString(b));
}

static void add_duration(cJSON *o, const char *key, int64_t ms)
{
    char b[40];
    tf_format_duration(ms / 1000, b, sizeof b);
    cJSON_AddStringToObject(o, key, b);
}

static double counter(const cJSON *state, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(state, key);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static void bump(cJSON *state, const char *key)
{
    double v = counter(state, key) + 1;
    cJSON_DeleteItemFromObjectCaseSensitive(state, key);
    cJSON_AddNumberToObject(state, key, v);
}

int64_t chrono_open_started(const cJSON *state, int64_t now, const cJSON **sess, int *damaged)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(state, "open_session");
    int64_t ms = INT64_MIN;
    int bad = 0;
    if (!damaged)
        damaged = &bad;
    *damaged = 0;
    if (!cJSON_IsObject(s)) {
        *damaged = s && !cJSON_IsNull(s); /* a file edited by hand: something else is there */
        return -1;
    }
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(s, "session_id"),
                *intent = cJSON_GetObjectItemCaseSensitive(s, "intent");
    uuid_t u;
    if (tf_parse_rfc3339(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "started_at")), &ms, NULL) < 0 ||
        ms < now - SESSION_PAST_MAX_MS || ms > now + SESSION_AHEAD_MAX_MS || !cJSON_IsString(id) ||
        uuid_parse(id->valuestring, u) < 0 || (intent && !cJSON_IsString(intent))) {
        *damaged = 1; /* no start, id or intent keel can give back as they are: edited by hand */
        return -1;
    }
    if (sess)
        *sess = s;
    return ms;
}

/* Moves the open session to recent_sessions, closed at now. Returns it (owned by state). A damaged one
 * (no start keel can read) goes there too, marked damaged and with no duration: never dropped. */
static cJSON *close_open(cJSON *state, const struct chrono_env *env, const char *summary, int auto_closed)
{
    int damaged;
    int64_t started = chrono_open_started(state, env->now.ms, NULL, &damaged);
    cJSON *s = cJSON_DetachItemFromObjectCaseSensitive(state, "open_session");
    cJSON_AddNullToObject(state, "open_session");
    if (s && !cJSON_IsNull(s) && !cJSON_IsObject(s)) { /* kept as it was found, inside a session marked damaged */
        cJSON *o = cJSON_CreateObject();
        if (!o) {
            cJSON_Delete(s);
            return NULL;
        }
        cJSON_AddItemToObject(o, "found", s);
        s = o;
    }
    if (!cJSON_IsObject(s)) {
        cJSON_Delete(s);
        return NULL;
    }
    add_time(s, "ended_at", env->now.ms, env->now.offset_s);
    if (damaged)
        cJSON_AddBoolToObject(s, "damaged", 1);
    else
        add_duration(s, "duration", env->now.ms > started ? env->now.ms - started : 0);
    if (!damaged && env->now.ms < started) /* said, not hidden: it ended before it began */
        cJSON_AddBoolToObject(s, "clock_went_back", 1);
    if (summary)
        cJSON_AddStringToObject(s, "summary", summary);
    if (auto_closed)
        cJSON_AddBoolToObject(s, "auto_closed", 1);
    cJSON *recent = cJSON_GetObjectItemCaseSensitive(state, "recent_sessions");
    if (!cJSON_IsArray(recent)) {
        cJSON_DeleteItemFromObjectCaseSensitive(state, "recent_sessions");
        recent = cJSON_AddArrayToObject(state, "recent_sessions");
    }
    cJSON_AddItemToArray(recent, s);
    while (cJSON_GetArraySize(recent) > RECENT_KEEP)
        cJSON_DeleteItemFromArray(recent, 0);
    bump(state, "sessions_closed");
    return s;
}

struct start_ctx {
    const struct chrono_env *env;
    const char *intent;
    cJSON *out;
};

static int do_start(cJSON *state, void *vctx, kerr *e)
{
    struct start_ctx *c = vctx;
    const cJSON *prior = NULL;
    cJSON *auto_closed = NULL;
    int damaged;
    if (chrono_open_started(state, c->env->now.ms, &prior, &damaged) >= 0 || damaged) {
        if (c->env->profile->overlap_error)
            return kerr_set(e, "SESSION_ALREADY_OPEN", NULL,
                            "a session is already open; end it with mark_session_end first "
                            "(the profile's session_overlap_policy is error)");
        cJSON *closed = close_open(state, c->env, NULL, 1);
        if (closed) {
            auto_closed = cJSON_CreateObject();
            const cJSON *id = cJSON_GetObjectItemCaseSensitive(closed, "session_id");
            cJSON_AddStringToObject(auto_closed, "prior_session_id", cJSON_IsString(id) ? id->valuestring : "");
            cJSON_AddStringToObject(auto_closed, "closed_at",
                                    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(closed, "ended_at")));
            if (damaged)
                cJSON_AddBoolToObject(auto_closed, "damaged", 1);
        }
    }
    uuid_t u;
    char id[37];
    uuid_generate_random(u);
    uuid_unparse_lower(u, id);
    cJSON *s = cJSON_CreateObject();
    cJSON_AddStringToObject(s, "session_id", id);
    add_time(s, "started_at", c->env->now.ms, c->env->now.offset_s);
    cJSON_AddStringToObject(s, "intent", c->intent);
    cJSON_DeleteItemFromObjectCaseSensitive(state, "open_session");
    cJSON_AddItemToObject(state, "open_session", s);
    bump(state, "sessions_started");

    c->out = cJSON_Duplicate(s, 1);
    if (auto_closed)
        cJSON_AddItemToObject(c->out, "auto_closed_prior_session", auto_closed);
    return 1;
}

/* 1 when s[0..n) (valid UTF-8) holds nothing to read: white space
 * (U+00A0 too), controls and characters that show nothing (U+200B). */
static int blank_text(const char *s, size_t n)
{
    const uint8_t *p = (const uint8_t *)s, *end = p + n;
    ucs4_t c;
    for (int l; p < end; p += l) {
        l = u8_mbtouc(&c, p, (size_t)(end - p)); /* a byte that is not UTF-8 reads as U+FFFD: not blank */
        if (!uc_is_property_white_space(c) && !uc_is_property_default_ignorable_code_point(c) && !uc_is_cntrl(c))
            return 0;
    }
    return 1;
}

int chrono_mark_session_start(const cJSON *args, const struct chrono_env *env, cJSON **out, kerr *e)
{
    static const char *const keys[] = {"intent", NULL};
    const char *intent;
    size_t n;
    if (det_known_keys(args, keys, "", e) < 0)
        return -1;
    int got = det_string(args, "intent", "intent", 1, "INTENT_REQUIRED", INTENT_MAX, &intent, &n, e);
    if (got < 0) {
        if (e->code && !strcmp(e->code, "INPUT_TOO_LARGE"))
            e->code = "INTENT_TOO_LONG";
        return -1;
    }
    if (blank_text(intent, n))
        return kerr_set(e, "INTENT_REQUIRED", "intent",
                        "intent must say what this session is for (1 to 500 characters)");
    if (env->profile->unreadable)
        return kerr_set(e, "PROFILE_UNREADABLE", NULL, "the profile %s %s; fix it (keel profile check) and retry",
                        env->profile->path, env->profile->error);
    struct start_ctx c = {env, intent, NULL};
    if (state_update(env->state_dir, env->now.ms, do_start, &c, e) < 0) {
        cJSON_Delete(c.out);
        return -1;
    }
    *out = c.out;
    return 0;
}

struct end_ctx {
    const struct chrono_env *env;
    const char *summary;
    cJSON *out;
    int damaged; /* a damaged session was closed: the answer is NO_OPEN_SESSION, in e */
};

static int do_end(cJSON *state, void *vctx, kerr *e)
{
    struct end_ctx *c = vctx;
    int damaged;
    if (chrono_open_started(state, c->env->now.ms, NULL, &damaged) < 0 && !damaged)
        return kerr_set(e, "NO_OPEN_SESSION", NULL, "no session is open; mark_session_start opens one");
    if (damaged) { /* kept, not dropped: the error is the answer, the state is written */
        if (!close_open(state, c->env, c->summary, 0))
            return kerr_set(e, "INTERNAL_ERROR", NULL, "out of memory");
        kerr_set(e, "NO_OPEN_SESSION", NULL,
                 "no session is open: the one in keel's state file had no start keel could read; it was kept in "
                 "recent_sessions, marked damaged; mark_session_start opens a new one");
        c->damaged = 1;
        return 1;
    }
    cJSON *closed = close_open(state, c->env, c->summary, 0);
    if (!closed)
        return kerr_set(e, "INTERNAL_ERROR", NULL, "out of memory");
    /* what the tool says of it: its own members, not what else a hand put in */
    static const char *const said[] = {"session_id", "started_at", "intent",      "ended_at",
                                       "duration",   "summary",    "auto_closed", "clock_went_back"};
    c->out = cJSON_CreateObject();
    for (size_t k = 0; c->out && k < sizeof said / sizeof *said; k++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(closed, said[k]);
        if (v)
            cJSON_AddItemToObject(c->out, said[k], cJSON_Duplicate(v, 1));
    }
    if (c->out && !cJSON_GetObjectItemCaseSensitive(c->out, "intent"))
        cJSON_AddStringToObject(c->out, "intent", "");
    /* Closing the session is the step a hyperfocus reminder asks for: the
     * stretch of work counted without a session begins again now, so the
     * rung just answered is not given again at once. */
    if (cJSON_GetObjectItemCaseSensitive(state, "activity_started_at"))
        set_time(state, "activity_started_at", c->env->now.ms, c->env->now.offset_s);
    return 1;
}

int chrono_mark_session_end(const cJSON *args, const struct chrono_env *env, cJSON **out, kerr *e)
{
    static const char *const keys[] = {"summary", NULL};
    const char *summary = NULL;
    size_t n;
    if (det_known_keys(args, keys, "", e) < 0)
        return -1;
    if (det_string(args, "summary", "summary", 0, NULL, SUMMARY_MAX, &summary, &n, e) < 0) {
        if (e->code && !strcmp(e->code, "INPUT_TOO_LARGE"))
            e->code = "SUMMARY_TOO_LONG";
        return -1;
    }
    struct end_ctx c = {env, summary, NULL, 0};
    if (state_update(env->state_dir, env->now.ms, do_end, &c, e) < 0 || c.damaged) {
        cJSON_Delete(c.out);
        return -1;
    }
    *out = c.out;
    return 0;
}

struct read_ctx {
    cJSON *copy;
};

static int do_read(cJSON *state, void *vctx, kerr *e)
{
    (void)e;
    ((struct read_ctx *)vctx)->copy = cJSON_Duplicate(state, 1);
    return 0;
}

/* A copy of the state, read under the lock; NULL with e set on failure. */
cJSON *chrono_read_state(const struct chrono_env *env, kerr *e)
{
    struct read_ctx c = {NULL};
    if (state_update(env->state_dir, env->now.ms, do_read, &c, e) < 0)
        return NULL;
    return c.copy;
}

cJSON *chrono_read_state_as_is(const struct chrono_env *env, kerr *e)
{
    struct read_ctx c = {NULL};
    if (state_read(env->state_dir, do_read, &c, e) < 0)
        return NULL;
    return c.copy;
}

int chrono_request_break(const cJSON *args, const struct chrono_env *env, cJSON **out, kerr *e)
{
    static const char *const keys[] = {"threshold_minutes", NULL};
    long thr;
    if (det_known_keys(args, keys, "", e) < 0)
        return -1;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(args, "threshold_minutes");
    if (!t || cJSON_IsNull(t))
        return kerr_set(e, "INVALID_THRESHOLD", "threshold_minutes",
                        "threshold_minutes is required: whole minutes, 1 to 480");
    if (det_int(args, "threshold_minutes", "threshold_minutes", 1, 480, 0, "INVALID_THRESHOLD", &thr, e) < 0) {
        e->code = "INVALID_THRESHOLD";
        return -1;
    }
    cJSON *state = chrono_read_state(env, e);
    if (!state)
        return -1;
    const cJSON *sess = NULL;
    int64_t started = chrono_open_started(state, env->now.ms, &sess, NULL);
    cJSON *o = cJSON_CreateObject();
    int64_t elapsed = started >= 0 && env->now.ms > started ? env->now.ms - started : 0;
    if (started < 0 || elapsed < thr * 60000) {
        cJSON_AddNullToObject(o, "break");
    } else {
        cJSON *b = cJSON_AddObjectToObject(o, "break");
        add_duration(b, "elapsed", elapsed);
        cJSON_AddNumberToObject(b, "elapsed_seconds", (double)(elapsed / 1000));
        const char *intent = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(sess, "intent"));
        cJSON_AddStringToObject(b, "prior_intent", intent ? intent : "");
        int eod = guard_end_of_day(env, started, guard_eod_extension(env, state));
        int64_t since;
        const char *action = eod >= 0 &&
                hyp_past_eod(env->now.ms, env->now.offset_s, guard_day_offset(env, started), &started, eod, &since)
            ? "stop_for_today"
            : elapsed >= 2 * thr * 60000 ? "long_break"
                                         : "short_break";
        cJSON_AddStringToObject(b, "suggested_action", action);
        cJSON_AddNumberToObject(b, "threshold_minutes", (double)thr);
    }
    cJSON_Delete(state);
    *out = o;
    return 0;
}

void chrono_touch_state(cJSON *state, const struct chrono_env *env)
{
    /* A pause of activity_gap_minutes or more starts a new activity session. */
    int64_t last;
    const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(state, "last_prompt_at"));
    if (!s || tf_parse_rfc3339(s, &last, NULL) < 0 || env->now.ms - last >= env->profile->activity_gap * 60000LL ||
        !cJSON_GetObjectItemCaseSensitive(state, "activity_started_at")) {
        set_time(state, "activity_started_at", env->now.ms, env->now.offset_s);
    }
    set_time(state, "last_prompt_at", env->now.ms, env->now.offset_s);
}

static int do_touch(cJSON *state, void *env, kerr *e)
{
    (void)e;
    chrono_touch_state(state, env);
    return 1;
}

int chrono_touch(const struct chrono_env *env, kerr *e)
{
    return state_update(env->state_dir, env->now.ms, do_touch, (void *)env, e);
}
