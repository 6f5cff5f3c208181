/* hyperfocus.c: check_hyperfocus, heuristic elapsed_threshold_with_eod 0.1.0.
 *
 * The question: how long has this session run, and is it time to say so?
 * Elapsed time is placed on a ladder
 * of three rungs, gentle / nudge / hard, by default at 60 / 90 / 120 minutes.
 * Elapsed time is open_session.elapsed_seconds when the caller gives it (its
 * own measure: a session it paused, say; the reference contract requires it),
 * else snapshot.now - open_session.started_at. started_at still decides which
 * working day the session belongs to for the end of day.
 * The ladder comes from, in order: escalation_thresholds; or one number,
 * hyperfocus_break_minutes B, read as B*2/3, B, B*4/3 (90 gives 60/90/120).
 *
 * End of day: when end_of_day_local (HH:MM, in the snapshot's own UTC offset)
 * has passed, the level reads one rung harder (gentle -> nudge, nudge -> hard).
 * "Passed" is measured against the end of day of the working day the session
 * started on (a working day runs 05:00 to 05:00, so an end of day of 02:00
 * means the small hours after that evening): a session that began before the
 * end of day is still past it after midnight; a session that started after
 * the end of day is past it from the start.
 *
 * The idle signal changes the outcome: "distraction-or-break" (or the
 * reference contract's "switched_away") means the person has already stepped
 * away from the machine, so there is nothing to nudge and the level is none.
 * "hyperfocus-elsewhere" and "active" count as working. */
#include "detect.h"
#include "timefmt.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define HYP_SKEW_MS     60000
#define HYP_ELAPSED_MAX 9007199254740991L /* 2^53 - 1: any integer JSON carries exactly */

enum { NONE = HYP_NONE, GENTLE = HYP_GENTLE, NUDGE = HYP_NUDGE, HARD = HYP_HARD };
static const char *const level_names[] = {"none", "gentle", "nudge", "hard"};
static const char *const actions[] = {"continue", "check_in", "take_break", "wrap_up"};

/* A working day runs from 05:00 to 05:00: an end of day before 05:00 is the
 * small hours after the evening, and a session begun at 01:00 belongs to the
 * day before. */

int hyp_past_eod(int64_t now, int off, int eod_off, const int64_t *started, int eod_min, int64_t *since_s)
{
    struct tf_civil c;
    tf_civil((started ? *started : now) - HYP_DAY_START_MIN * 60000LL, off, &c);
    int64_t day0 = tf_days_from_civil(c.year, c.month, c.day) * 86400LL - eod_off; /* local midnight, UTC s */
    int64_t eod_at = (day0 + eod_min * 60LL + (eod_min < HYP_DAY_START_MIN ? 86400 : 0)) * 1000;
    int64_t from = started && *started >= eod_at ? *started : eod_at; /* began after it: late from the start */
    if (now < from)
        return 0;
    *since_s = (now - eod_at) / 1000;
    return 1;
}

const char hyp_description[] = "Session time since start placed on a gentle/nudge/hard ladder (60/90/120 minutes "
                               "by default); one rung firmer after the stated end of day; none when the person "
                               "has stepped away.";

const char *hyp_level_name(int level)
{
    return level_names[level];
}

void hyp_evaluate(int64_t now, int off, int eod_off, const int64_t *started, int64_t elapsed_s, long g, long nu, long h,
                  int eod_min, int away, struct hyp_eval *ev)
{
    memset(ev, 0, sizeof *ev);
    ev->elapsed_s = elapsed_s >= 0 ? elapsed_s : started && now > *started ? (now - *started) / 1000 : 0;
    ev->level = ev->elapsed_s >= h * 60 ? HARD
        : ev->elapsed_s >= nu * 60      ? NUDGE
        : ev->elapsed_s >= g * 60       ? GENTLE
                                        : NONE;
    ev->past_eod = eod_min >= 0 && hyp_past_eod(now, off, eod_off, started, eod_min, &ev->since_eod_s);
    if (ev->past_eod && (ev->level == GENTLE || ev->level == NUDGE)) {
        ev->level++;
        ev->raised = 1;
    }
    if (away) {
        ev->stepped_down = ev->level != NONE;
        ev->level = NONE;
    }
}

void hyp_reason(const struct hyp_eval *ev, long g, long nu, long h, int activity, char *buf, size_t n)
{
    long mins = (long)(ev->elapsed_s / 60);
    int rung = ev->level - ev->raised;
    /* with no work session open, what is counted is the stretch of work, which
     * may have begun in another chat */
    const char *what = activity ? "This stretch of work" : "This session";
    if (ev->stepped_down)
        snprintf(buf, n, "%s has run %ld minutes, but you seem to have stepped away already, so no reminder is needed.",
                 what, mins);
    else if (ev->level == NONE)
        snprintf(buf, n, "%s has run %ld minutes; the first reminder comes at %ld.", what, mins, g);
    else
        snprintf(buf, n, "%s has run %ld minutes, past the %s mark of %ld minutes%s.", what, mins, level_names[rung],
                 rung == GENTLE      ? g
                     : rung == NUDGE ? nu
                                     : h,
                 ev->raised ? ", and it is after your end of day, so this reads one step firmer" : "");
}

size_t hyp_tokens(const struct hyp_eval *ev, const char **tok)
{
    size_t nt = 0;
    if (ev->level == NONE)
        return 0;
    tok[nt++] = "snooze-15m";
    if (ev->level != HARD)
        tok[nt++] = "snooze-once";
    if (ev->level != GENTLE)
        tok[nt++] = "commit-and-close";
    if (ev->past_eod)
        tok[nt++] = "extend-end-of-day";
    tok[nt++] = "override-once";
    tok[nt++] = "disable-for-session";
    return nt;
}

int hyp_check(const cJSON *args, int64_t now_ms_clock, int offset_clock, cJSON **out, kerr *e)
{
    (void)now_ms_clock;
    (void)offset_clock;
    static const char *const keys[] = {"chronometric_snapshot",    "session_id",
                                       "hyperfocus_break_minutes", "end_of_day_local",
                                       "escalation_thresholds",    NULL};
    static const char *const snap_keys[] = {"open_session", "now", "idle_signal", NULL};
    static const char *const sess_keys[] = {"session_id", "started_at", "intent", "elapsed_seconds", NULL};
    static const char *const thr_keys[] = {"gentle", "nudge", "hard", NULL};
    if (det_known_keys(args, keys, "", e) < 0)
        return -1;

    const cJSON *snap = cJSON_GetObjectItemCaseSensitive(args, "chronometric_snapshot");
    if (!snap)
        return kerr_set(e, "INPUT_INVALID", "chronometric_snapshot", "chronometric_snapshot is required");
    if (!cJSON_IsObject(snap))
        return kerr_set(e, "INPUT_INVALID", "chronometric_snapshot",
                        "chronometric_snapshot must be an object {open_session, now, idle_signal?}");
    int64_t now;
    int off;
    if (det_known_keys(snap, snap_keys, "chronometric_snapshot.", e) < 0 ||
        det_time(snap, "now", "chronometric_snapshot.now", &now, &off, e) < 0)
        return -1;

    const char *idle = NULL;
    size_t idle_n;
    if (det_string(snap, "idle_signal", "chronometric_snapshot.idle_signal", 0, NULL, 8000, &idle, &idle_n, e) < 0)
        return -1;
    if (idle && strcmp(idle, "active") && strcmp(idle, "hyperfocus-elsewhere") &&
        strcmp(idle, "distraction-or-break") && strcmp(idle, "switched_away") && strcmp(idle, "unknown"))
        return kerr_set(e, "INPUT_INVALID", "chronometric_snapshot.idle_signal",
                        "idle_signal must be one of active, hyperfocus-elsewhere, distraction-or-break, "
                        "switched_away, unknown");

    const char *sid = NULL, *snap_sid = NULL, *intent = NULL;
    size_t sid_n, intent_n;
    if (det_string(args, "session_id", "session_id", 0, NULL, 128, &sid, &sid_n, e) < 0)
        return -1;

    /* The ladder. */
    long b, g = 60, nu = 90, h = 120;
    if (det_int(args, "hyperfocus_break_minutes", "hyperfocus_break_minutes", 15, 480, 0, NULL, &b, e) < 0)
        return -1;
    if (b) {
        g = lround(b * 2.0 / 3.0);
        nu = b;
        h = lround(b * 4.0 / 3.0);
    }
    const cJSON *thr = cJSON_GetObjectItemCaseSensitive(args, "escalation_thresholds");
    if (thr && !cJSON_IsNull(thr)) {
        if (!cJSON_IsObject(thr))
            return kerr_set(e, "INPUT_INVALID", "escalation_thresholds",
                            "escalation_thresholds must be an object {gentle, nudge, hard} in minutes");
        if (det_known_keys(thr, thr_keys, "escalation_thresholds.", e) < 0 ||
            det_int(thr, "gentle", "escalation_thresholds.gentle", 1, 1440, g, NULL, &g, e) < 0 ||
            det_int(thr, "nudge", "escalation_thresholds.nudge", 1, 1440, nu, NULL, &nu, e) < 0 ||
            det_int(thr, "hard", "escalation_thresholds.hard", 1, 1440, h, NULL, &h, e) < 0)
            return -1;
        if (!(g < nu && nu < h))
            return kerr_set(
                e, "THRESHOLDS_NOT_ASCENDING", "escalation_thresholds",
                "escalation_thresholds must be strictly ascending: gentle < nudge < hard (got %ld, %ld, %ld)", g, nu,
                h);
    }

    int eod_min = -1;
    const cJSON *eodv = cJSON_GetObjectItemCaseSensitive(args, "end_of_day_local");
    if (eodv && !cJSON_IsNull(eodv)) {
        if (!cJSON_IsString(eodv) || tf_parse_hhmm(eodv->valuestring, &eod_min) < 0)
            return kerr_set(e, "INVALID_END_OF_DAY", "end_of_day_local",
                            "end_of_day_local must be a 24-hour local time HH:MM, like 18:30");
    }

    /* The open session, if any. */
    const cJSON *sess = cJSON_GetObjectItemCaseSensitive(snap, "open_session");
    int64_t started = 0;
    long given_elapsed = -1;
    int has_session = 0;
    /* No open_session member is no session, as null is (the reference contract). */
    if (sess && !cJSON_IsNull(sess)) {
        if (!cJSON_IsObject(sess))
            return kerr_set(e, "INPUT_INVALID", "chronometric_snapshot.open_session",
                            "open_session must be null or an object {session_id?, started_at, intent?}");
        if (det_known_keys(sess, sess_keys, "chronometric_snapshot.open_session.", e) < 0 ||
            det_time(sess, "started_at", "chronometric_snapshot.open_session.started_at", &started, NULL, e) < 0 ||
            det_string(sess, "session_id", "chronometric_snapshot.open_session.session_id", 0, NULL, 128, &snap_sid,
                       &sid_n, e) < 0 ||
            det_string(sess, "intent", "chronometric_snapshot.open_session.intent", 0, NULL, 500, &intent, &intent_n,
                       e) < 0 ||
            det_int(sess, "elapsed_seconds", "chronometric_snapshot.open_session.elapsed_seconds", 0, HYP_ELAPSED_MAX,
                    -1, NULL, &given_elapsed, e) < 0)
            return -1;
        if (started > now + HYP_SKEW_MS)
            return kerr_set(e, "INPUT_INVALID", "chronometric_snapshot.open_session.started_at",
                            "open_session.started_at is later than snapshot now");
        has_session = 1;
    }
    if (sid && snap_sid && strcmp(sid, snap_sid) != 0)
        return kerr_set(e, "SESSION_ID_MISMATCH", "session_id",
                        "session_id differs from chronometric_snapshot.open_session.session_id");

    struct hyp_eval ev;
    int away = idle && (!strcmp(idle, "distraction-or-break") || !strcmp(idle, "switched_away"));
    hyp_evaluate(now, off, off, has_session ? &started : NULL, has_session ? given_elapsed : -1, g, nu, h, eod_min,
                 away, &ev);
    int level = ev.level, past_eod = ev.past_eod;
    int64_t elapsed = ev.elapsed_s, since_eod = ev.since_eod_s;

    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "level", level_names[level]);
    char digits[24]; /* printed exactly: cJSON prints a double of over 15 digits with an exponent */
    snprintf(digits, sizeof digits, "%lld", (long long)elapsed);
    cJSON_AddRawToObject(o, "elapsed_seconds", digits);
    if (has_session && snap_sid)
        cJSON_AddStringToObject(o, "session_id", snap_sid);
    else if (sid)
        cJSON_AddStringToObject(o, "session_id", sid);
    cJSON *t = cJSON_AddObjectToObject(o, "thresholds_minutes");
    cJSON_AddNumberToObject(t, "gentle", (double)g);
    cJSON_AddNumberToObject(t, "nudge", (double)nu);
    cJSON_AddNumberToObject(t, "hard", (double)h);
    cJSON_AddBoolToObject(o, "past_end_of_day", past_eod);
    if (past_eod) {
        char d[32];
        tf_format_duration(since_eod, d, sizeof d);
        cJSON_AddStringToObject(o, "time_since_stated_end", d);
    }
    if (level != NONE && intent)
        cJSON_AddStringToObject(o, "prior_intent", intent);
    cJSON_AddStringToObject(o, "suggested_action", actions[level]);

    char reason[280];
    if (!has_session)
        snprintf(reason, sizeof reason, "No session is open, so there is no elapsed time to weigh.");
    else
        hyp_reason(&ev, g, nu, h, 0, reason, sizeof reason);

    /* Without an idle signal keel cannot tell work from a walk away. */
    double confidence = (!has_session || (idle && strcmp(idle, "unknown"))) ? 0.9 : 0.75;
    det_common(o, confidence, reason, det_heuristic("elapsed_threshold_with_eod", "0.1.0", hyp_description));
    const char *tok[6];
    size_t nt = hyp_tokens(&ev, tok);
    det_overrides(o, tok, nt);
    *out = o;
    return 0;
}
