/* guard.c: overrides and advisory marks in the state file (see guard.h). */
#include "guard.h"

#include "detect.h"
#include "state.h"
#include "timefmt.h"

#include <stdio.h>
#include <string.h>

const char *const guard_detector_names[DET_COUNT] = {"rumination", "hyperfocus", "sycophancy", "rules", "loop", "pins"};

const char *const guard_tokens[DET_COUNT][8] = {
    {"fresh-context", "override-once", "disable-for-session", "lower-sensitivity", "explain-the-match", NULL},
    {"snooze-15m", "snooze-once", "commit-and-close", "extend-end-of-day", "override-once", "disable-for-session",
     "explain-the-match", NULL},
    {"i-want-validation", "explain-the-match", "override-once", "fresh-context", "disable-for-session", NULL},
    {"override-once", "disable-for-session", "explain-the-match", NULL},
    {"override-once", "disable-for-session", "fresh-context", "explain-the-match", NULL},
    {"approve-tool", "explain-the-match", NULL},
};

#define HARD_REPEAT_MS (15 * 60000LL)

static const char *str_of(const cJSON *o, const char *key)
{
    const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
    return s ? s : "";
}

static int64_t time_of(const cJSON *o, const char *key)
{
    int64_t ms;
    const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
    return s && tf_parse_rfc3339(s, &ms, NULL) == 0 ? ms : -1;
}

/* g[key], or g[key][det], set to v (a number, or a string; a NULL string
 * removes it). */
static void put(cJSON *g, const char *key, const char *det, cJSON *v)
{
    cJSON *o = g;
    if (det) {
        o = cJSON_GetObjectItemCaseSensitive(g, key);
        if (!cJSON_IsObject(o)) {
            cJSON_DeleteItemFromObjectCaseSensitive(g, key);
            o = cJSON_AddObjectToObject(g, key);
        }
        key = det;
    }
    state_set(o, key, v);
}

static void set_time(cJSON *o, const char *key, int64_t ms, int off)
{
    char b[40];
    tf_format_rfc3339(ms, off, b, sizeof b);
    put(o, key, NULL, cJSON_CreateString(b));
}

static void set_str(cJSON *o, const char *key, const char *v)
{
    put(o, key, NULL, cJSON_CreateString(v));
}

static void set_num(cJSON *o, const char *key, double v)
{
    put(o, key, NULL, cJSON_CreateNumber(v));
}

/* An override given at `at` (ms; -1 unknown: an older keel's) in
 * conversation `in` ("" unknown) holds in the caller's conversation: when
 * both are known, it was given in this one (a host's session: another chat
 * open at the same time is not this one, and this one's stay its own however
 * many others come and go); else it was given during it, or the caller knows
 * no conversation. A new chat starts clean. */
static int holds_here(const struct chrono_env *env, int64_t at, const char *in)
{
    if (in[0] && env->conversation && env->conversation[0])
        return !strcmp(in, env->conversation);
    return !env->conversation_at || at < 0 || at >= env->conversation_at;
}

/* When the override name[det] was given (ms), or -1. */
static int64_t given_at(const cJSON *g, const char *name, const char *det)
{
    char key[48];
    snprintf(key, sizeof key, "%s_at", name);
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(g, key);
    const cJSON *n = det ? cJSON_GetObjectItemCaseSensitive(o, det) : o;
    return cJSON_IsNumber(n) ? (int64_t)n->valuedouble : -1;
}

/* The conversation the override name[det] was given in, or "". */
static const char *given_in(const cJSON *g, const char *name, const char *det)
{
    char key[48];
    snprintf(key, sizeof key, "%s_in", name);
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(g, key);
    const char *s = cJSON_GetStringValue(det ? cJSON_GetObjectItemCaseSensitive(o, det) : o);
    return s ? s : "";
}

/* 1 if the override name[det] holds in the caller's conversation. */
static int holds(const struct chrono_env *env, const cJSON *g, const char *name, const char *det)
{
    return holds_here(env, given_at(g, name, det), given_in(g, name, det));
}

/* Records when, and in which conversation, the override name[det] was given. */
static void mark_given(cJSON *g, const char *name, const char *det, const struct chrono_env *env)
{
    char key[48];
    snprintf(key, sizeof key, "%s_at", name);
    put(g, key, det, cJSON_CreateNumber((double)env->now.ms));
    snprintf(key, sizeof key, "%s_in", name);
    put(g, key, det, env->conversation && env->conversation[0] ? cJSON_CreateString(env->conversation) : NULL);
}

/* The overrides given in a conversation the caller knows (a host's session)
 * are kept in that conversation's own object, guard.conversations[id], so
 * that one chat's override never takes another's place; the most recently
 * used GUARD_CONVERSATIONS are kept. Without a conversation (keel wrap's
 * client connection, keel check) they are kept in guard itself, as an older
 * keel kept every one. */
#define GUARD_CONVERSATIONS 64

/* The caller's conversation's object, or NULL when it has none yet (or the
 * caller knows no conversation). */
static const cJSON *scope_get(const cJSON *g, const struct chrono_env *env)
{
    if (!env->conversation || !env->conversation[0])
        return NULL;
    const cJSON *c =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(g, "conversations"), env->conversation);
    return cJSON_IsObject(c) ? c : NULL;
}

/* Where an override given now is kept: the caller's conversation's object,
 * made when missing (the one used least recently goes when there are too
 * many), or guard itself. NULL out of memory. */
static cJSON *scope_put(cJSON *g, const struct chrono_env *env)
{
    if (!env->conversation || !env->conversation[0])
        return g;
    cJSON *all = cJSON_GetObjectItemCaseSensitive(g, "conversations");
    if (!cJSON_IsObject(all)) {
        cJSON_DeleteItemFromObjectCaseSensitive(g, "conversations");
        if (!(all = cJSON_AddObjectToObject(g, "conversations")))
            return NULL;
    }
    cJSON *c = cJSON_GetObjectItemCaseSensitive(all, env->conversation);
    if (!cJSON_IsObject(c)) {
        cJSON_DeleteItemFromObjectCaseSensitive(all, env->conversation);
        while (cJSON_GetArraySize(all) >= GUARD_CONVERSATIONS) {
            cJSON *old = NULL, *it;
            cJSON_ArrayForEach(it, all) {
                const cJSON *u = cJSON_GetObjectItemCaseSensitive(it, "used_at");
                const cJSON *o = cJSON_GetObjectItemCaseSensitive(old, "used_at");
                if (!old || !cJSON_IsNumber(u) || (cJSON_IsNumber(o) && u->valuedouble < o->valuedouble))
                    old = it;
            }
            cJSON_Delete(cJSON_DetachItemViaPointer(all, old));
        }
        if (!(c = cJSON_AddObjectToObject(all, env->conversation)))
            return NULL;
    }
    put(c, "used_at", NULL, cJSON_CreateNumber((double)env->now.ms));
    return c;
}

/* How many override-once for det are left to the caller in o (a
 * conversation's object or guard), 0 when none holds here. */
static int once_left(const struct chrono_env *env, const cJSON *o, const char *det)
{
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "override_once"), det);
    return o && cJSON_IsNumber(n) && n->valuedouble > 0 && holds(env, o, "override_once", det) ? (int)n->valuedouble
                                                                                               : 0;
}

/* Takes one override-once for det, from the caller's conversation first:
 * 1 when there was one. */
static int take_once(cJSON *g, const struct chrono_env *env, const char *det)
{
    cJSON *o = (cJSON *)scope_get(g, env);
    if (!once_left(env, o, det))
        o = g;
    int left = once_left(env, o, det);
    if (!left)
        return 0;
    set_num(state_obj(o, "override_once"), det, left - 1);
    return 1;
}

/* 1 when the override name (a session key, its value kept per detector when
 * det) holds in the caller's session, in o. */
static int keyed(const struct chrono_env *env, const cJSON *o, const char *name, const char *det,
                 const char *session_key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    const char *k = cJSON_GetStringValue(det ? cJSON_GetObjectItemCaseSensitive(v, det) : v);
    return o && k && session_key[0] && !strcmp(k, session_key) && holds(env, o, name, det);
}

static void today(const struct chrono_env *env, char *buf, size_t n)
{
    struct tf_civil c;
    tf_civil(env->now.ms - HYP_DAY_START_MIN * 60000LL, env->now.offset_s, &c); /* 01:00 is the evening before */
    snprintf(buf, n, "%04d-%02d-%02d", c.year, c.month, c.day);
}

struct read_ctx {
    const struct chrono_env *env;
    int gap_min;
    struct guard_view *v;
};

static int do_read(cJSON *state, void *vctx, kerr *e)
{
    (void)e;
    struct read_ctx *c = vctx;
    struct guard_view *v = c->v;
    const struct chrono_env *env = c->env;
    memset(v, 0, sizeof *v);
    v->now = env->now.ms;
    v->session_started = v->focus_started = v->fresh_context_at = v->snooze_until = -1;
    const cJSON *sess = cJSON_GetObjectItemCaseSensitive(state, "open_session");
    int64_t started = time_of(sess, "started_at");
    if (started >= 0) {
        v->session_open = 1;
        v->session_started = v->focus_started = started;
        snprintf(v->session_id, sizeof v->session_id, "%s", str_of(sess, "session_id"));
        snprintf(v->session_key, sizeof v->session_key, "%s", v->session_id);
        snprintf(v->focus_key, sizeof v->focus_key, "%s", v->session_key);
        snprintf(v->intent, sizeof v->intent, "%s", str_of(sess, "intent"));
        /* Focus is counted from the last pause: a session left open over a
         * pause of gap_min or more (a night, a weekend) starts its count again
         * when activity resumes, and no activity since the pause counts nothing. */
        int64_t act = time_of(state, "activity_started_at"), last = time_of(state, "last_prompt_at");
        int64_t seen = last > started ? last : started;
        if (env->now.ms - seen >= (int64_t)c->gap_min * 60000)
            v->focus_started = env->now.ms;
        else if (act > started && act <= env->now.ms)
            v->focus_started = act;
        if (v->focus_started > started)
            snprintf(v->focus_key, sizeof v->focus_key, "%s@%lld", v->session_key, (long long)v->focus_started);
    } else {
        int64_t act = time_of(state, "activity_started_at"), last = time_of(state, "last_prompt_at");
        if (act >= 0 && last >= 0 && env->now.ms - last < (int64_t)c->gap_min * 60000) {
            v->session_started = v->focus_started = act;
            snprintf(v->session_key, sizeof v->session_key, "activity:%lld", (long long)act);
            snprintf(v->focus_key, sizeof v->focus_key, "%s", v->session_key);
        }
    }
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(state, "guard");
    /* the caller's conversation's own overrides, then guard's (keel wrap's, an older keel's): both hold */
    const cJSON *where[2] = {scope_get(g, env), g};
    for (int w = 0; w < 2; w++) {
        const cJSON *o = where[w];
        for (int d = 0; d < DET_COUNT; d++) {
            v->once[d] += once_left(env, o, guard_detector_names[d]);
            v->disabled[d] |= keyed(env, o, "disabled", guard_detector_names[d], v->session_key);
        }
        v->lower_sensitivity |= keyed(env, o, "lower_sensitivity", NULL, v->session_key);
        v->validation_ok |= keyed(env, o, "validation_ok", NULL, v->session_key);
        /* fresh-context forgets what was said before it in its own conversation only */
        int64_t fc = o && holds_here(env, -1, given_in(o, "fresh_context", NULL)) ? time_of(o, "fresh_context_at") : -1;
        if (fc > v->fresh_context_at)
            v->fresh_context_at = fc;
    }
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(g, "hyperfocus");
    v->snooze_until = time_of(h, "snooze_until");
    v->skip_next = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(h, "skip_next"));
    v->eod_extension_min = guard_eod_extension(env, state);
    return 0;
}

int guard_eod_extension(const struct chrono_env *env, const cJSON *state)
{
    const cJSON *ext =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(state, "guard"), "end_of_day_extension");
    char d[16];
    today(env, d, sizeof d);
    const char *date = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ext, "date"));
    const cJSON *mins = cJSON_GetObjectItemCaseSensitive(ext, "minutes");
    return date && !strcmp(date, d) && cJSON_IsNumber(mins) ? (int)mins->valuedouble : 0;
}

int guard_read(const struct chrono_env *env, int gap_min, struct guard_view *v, kerr *e)
{
    struct read_ctx c = {env, gap_min, v};
    if (state_update(env->state_dir, env->now.ms, do_read, &c, e) == 0)
        return 0;
    /* Held by another process, or not writable: the person's earlier words
     * (disable-for-session, override-once) still hold, read as they stand. */
    if (!e->code || (strcmp(e->code, "STATE_BUSY") && strcmp(e->code, "STATE_UNWRITABLE")))
        return -1;
    kerr r = {0};
    if (state_read(env->state_dir, do_read, &c, &r) < 0)
        return -1;
    v->read_only = 1;
    return 0;
}

int guard_end_of_day(const struct chrono_env *env, int64_t at, int extension_min)
{
    struct tf_civil c;
    tf_civil(at - HYP_DAY_START_MIN * 60000LL, env->now.offset_s, &c);
    int eod = profile_eod_for(env->profile, c.wday);
    if (eod < 0)
        return -1;
    /* on the day's own clock, which runs from HYP_DAY_START_MIN to the same
     * time the next morning: an end of day before it is after midnight, and
     * an extension carries it past midnight, up to the day's last minute */
    int day = (eod < HYP_DAY_START_MIN ? eod + 1440 : eod) + extension_min;
    if (day > 1440 + HYP_DAY_START_MIN - 1)
        day = 1440 + HYP_DAY_START_MIN - 1;
    return day % 1440;
}

int guard_day_offset(const struct chrono_env *env, int64_t at)
{
    struct tf_civil c;
    int off = env->now.offset_s, day_off;
    tf_civil(at - HYP_DAY_START_MIN * 60000LL, off, &c);
    int64_t start = (tf_days_from_civil(c.year, c.month, c.day) * 86400LL + HYP_DAY_START_MIN * 60LL - off) * 1000;
    return chrono_offset_at(start, &day_off) == 0 ? day_off : off;
}

struct claim_ctx {
    const struct chrono_env *env;
    const char *key;
    int level, det, *result;
};

static int do_claim(cJSON *state, void *vctx, kerr *e)
{
    (void)e;
    struct claim_ctx *c = vctx;
    int64_t now = c->env->now.ms;
    cJSON *g = state_obj(state, "guard"), *h = state_obj(g, "hyperfocus"), *adv = state_obj(h, "advised");
    *c->result = GUARD_QUIET;
    if (time_of(h, "snooze_until") > now) {
        *c->result = GUARD_SNOOZED;
        return 0;
    }
    const char *key = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(adv, "key"));
    const cJSON *lv = cJSON_GetObjectItemCaseSensitive(adv, "level");
    int prev = key && !strcmp(key, c->key) && cJSON_IsNumber(lv) ? (int)lv->valuedouble : 0;
    int64_t at = time_of(adv, "at");
    int rise = c->level > prev;
    int repeat = c->level == HYP_HARD && prev == HYP_HARD && at >= 0 && now - at >= HARD_REPEAT_MS;
    if (!rise && !repeat)
        return 0;
    set_str(adv, "key", c->key);
    set_num(adv, "level", c->level);
    set_time(adv, "at", now, c->env->now.offset_s);
    if (rise && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(h, "skip_next"))) {
        cJSON_DeleteItemFromObjectCaseSensitive(h, "skip_next"); /* snooze-once: this rung is skipped */
        return 1;
    }
    if (take_once(g, c->env, "hyperfocus")) /* override-once: swallowed */
        return 1;
    *c->result = GUARD_EMIT;
    return 1;
}

int guard_claim_hyperfocus(const struct chrono_env *env, const char *key, int level, int *emit, kerr *e)
{
    struct claim_ctx c = {env, key, level, DET_HYPERFOCUS, emit};
    return state_update(env->state_dir, env->now.ms, do_claim, &c, e);
}

static int do_take_once(cJSON *state, void *vctx, kerr *e)
{
    (void)e;
    struct claim_ctx *c = vctx;
    *c->result = take_once(state_obj(state, "guard"), c->env, guard_detector_names[c->det]);
    return *c->result;
}

int guard_take_once(const struct chrono_env *env, int det, int *taken, kerr *e)
{
    struct claim_ctx c = {env, NULL, 0, det, taken};
    return state_update(env->state_dir, env->now.ms, do_take_once, &c, e);
}

struct apply_ctx {
    const struct chrono_env *env;
    const char *token, *key;
    int det;
    char *effect, *until;
    size_t effect_n, until_n;
};

static int do_apply(cJSON *state, void *vctx, kerr *e)
{
    struct apply_ctx *c = vctx;
    const struct chrono_env *env = c->env;
    const char *det = guard_detector_names[c->det];
    cJSON *g = state_obj(state, "guard");
    char b[40];
    int own = !strcmp(c->token, "override-once") || !strcmp(c->token, "disable-for-session") ||
        !strcmp(c->token, "lower-sensitivity") || !strcmp(c->token, "fresh-context") ||
        !strcmp(c->token, "i-want-validation");
    if (own && !(g = scope_put(g, env))) /* the conversation's own object: out of memory, nothing applied */
        return kerr_set(e, "INTERNAL_ERROR", NULL, "out of memory");
    if (!strcmp(c->token, "override-once")) {
        cJSON *once = state_obj(g, "override_once");
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(once, det);
        /* One left unused from an earlier conversation is not this one's. */
        double left = cJSON_IsNumber(n) && holds(env, g, "override_once", det) ? n->valuedouble : 0;
        set_num(once, det, left + 1);
        mark_given(g, "override_once", det, env);
        if (left >= 1)
            snprintf(c->until, c->until_n, "the next %d %s advisories", (int)left + 1, det);
        else
            snprintf(c->until, c->until_n, "the next %s advisory", det);
        snprintf(c->effect, c->effect_n, "%s will not be shown", c->until);
    } else if (!strcmp(c->token, "disable-for-session")) {
        set_str(state_obj(g, "disabled"), det, c->key);
        mark_given(g, "disabled", det, env);
        snprintf(c->effect, c->effect_n, "%s advisories are off for this session", det);
        snprintf(c->until, c->until_n, "the session ends");
    } else if (!strcmp(c->token, "lower-sensitivity")) {
        set_str(g, "lower_sensitivity", c->key);
        mark_given(g, "lower_sensitivity", NULL, env);
        snprintf(c->effect, c->effect_n,
                 "rumination now needs a similarity of at least 0.75 and one more repeat before it speaks");
        snprintf(c->until, c->until_n, "the session ends");
    } else if (!strcmp(c->token, "fresh-context")) {
        set_time(g, "fresh_context_at", env->now.ms, env->now.offset_s);
        put(g, "fresh_context_in", NULL,
            env->conversation && env->conversation[0] ? cJSON_CreateString(env->conversation) : NULL);
        snprintf(c->effect, c->effect_n, "earlier %s are forgotten; %s starts from a clean slate",
                 c->det == DET_SYCOPHANCY ? "reassurance requests"
                     : c->det == DET_LOOP ? "tool calls"
                                          : "prompts",
                 det);
        tf_format_rfc3339(env->now.ms, env->now.offset_s, b, sizeof b);
        snprintf(c->until, c->until_n, "%s", b);
    } else if (!strcmp(c->token, "snooze-15m")) {
        int64_t until = env->now.ms + 15 * 60000LL;
        int until_off = chrono_offset_or(until, env->now.offset_s);
        set_time(state_obj(g, "hyperfocus"), "snooze_until", until, until_off);
        snprintf(c->effect, c->effect_n, "no time reminders for 15 minutes");
        tf_format_rfc3339(until, until_off, c->until, c->until_n);
    } else if (!strcmp(c->token, "snooze-once")) {
        cJSON *h = state_obj(g, "hyperfocus");
        cJSON_DeleteItemFromObjectCaseSensitive(h, "skip_next");
        cJSON_AddBoolToObject(h, "skip_next", 1);
        snprintf(c->effect, c->effect_n, "the next reminder step will be skipped");
        snprintf(c->until, c->until_n, "the next reminder step");
    } else if (!strcmp(c->token, "extend-end-of-day")) {
        cJSON *ext = state_obj(g, "end_of_day_extension");
        char d[16];
        today(env, d, sizeof d);
        const char *date = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ext, "date"));
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(ext, "minutes");
        int mins = (date && !strcmp(date, d) && cJSON_IsNumber(m) ? (int)m->valuedouble : 0) + 60;
        /* no later than the day's last minute (04:59 the next morning) */
        int base = guard_end_of_day(env, env->now.ms, 0), most = 0;
        if (base >= 0) {
            most = 1440 + HYP_DAY_START_MIN - 1 - (base < HYP_DAY_START_MIN ? base + 1440 : base);
            if (mins > most)
                mins = most;
        }
        set_str(ext, "date", d);
        set_num(ext, "minutes", mins);
        int at = guard_end_of_day(env, env->now.ms, mins);
        if (base < 0)
            snprintf(c->effect, c->effect_n, "today's end of day is %d minutes later (the profile sets none yet)",
                     mins);
        else
            snprintf(c->effect, c->effect_n, "today's end of day is %d minutes later, at %02d:%02d%s", mins, at / 60,
                     at % 60, mins == most ? ", the day's last minute" : "");
        snprintf(c->until, c->until_n, "the end of %s", d);
    } else if (!strcmp(c->token, "i-want-validation")) {
        set_str(g, "validation_ok", c->key);
        mark_given(g, "validation_ok", NULL, env);
        snprintf(c->effect, c->effect_n, "no sycophancy advisories for this session");
        snprintf(c->until, c->until_n, "the session ends");
    } else {
        return 0;
    }
    return 1;
}

int guard_apply(const struct chrono_env *env, const char *token, int det, const char *session_key, char *effect,
                size_t effect_n, char *until, size_t until_n, kerr *e)
{
    struct apply_ctx c = {env, token, session_key, det, effect, until, effect_n, until_n};
    return state_update(env->state_dir, env->now.ms, do_apply, &c, e);
}
