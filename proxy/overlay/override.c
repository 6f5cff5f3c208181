/* override.c: apply_override, the tool that makes override tokens real.
 *
 * The person says a token ("snooze-15m"), the model calls apply_override
 * {token, detector}, and keel says what changed and until when. Time-based
 * and session-scoped tokens live in the shared state file (guard.h), so every
 * keel process of the person honours them; fresh-context also clears this
 * process's memory at once; explain-the-match reads this process's last
 * advisory; commit-and-close ends the session as mark_session_end does. */
#include "overlay.h"

#include "detect.h"
#include "log.h"
#include "pins.h"

#include <stdio.h>
#include <string.h>

#define allowed guard_tokens /* one table for advisories and for this check */

static int allows(int det, const char *token)
{
    for (int i = 0; allowed[det][i]; i++)
        if (!strcmp(allowed[det][i], token))
            return 1;
    return 0;
}

static void list_tokens(int det, char *buf, size_t n)
{
    buf[0] = '\0';
    for (int i = 0; allowed[det][i]; i++) {
        size_t l = strlen(buf);
        snprintf(buf + l, n - l, "%s%s", i ? ", " : "", allowed[det][i]);
    }
}

/* What a check tool found last in this process, per detector (keel serve
 * has no overlay to remember advisories): explain-the-match's answer there. */
static cJSON *checked_last[DET_COUNT];

void overlay_note_check(int det, const cJSON *result)
{
    if (det < 0 || det >= DET_COUNT || !result)
        return;
    cJSON *copy = cJSON_Duplicate(result, 1);
    if (!copy)
        return;
    cJSON_Delete(checked_last[det]);
    checked_last[det] = copy;
}

int overlay_apply_override(const cJSON *args, const struct chrono_env *env, cJSON **out, kerr *e)
{
    static const char *const keys[] = {"token", "detector", "summary", NULL};
    const char *token, *detector = NULL, *summary = NULL;
    size_t tn, dn, sn;
    if (det_known_keys(args, keys, "", e) < 0 || det_string(args, "token", "token", 1, NULL, 64, &token, &tn, e) < 0 ||
        det_string(args, "detector", "detector", 0, NULL, 64, &detector, &dn, e) < 0 ||
        det_string(args, "summary", "summary", 0, NULL, 1000, &summary, &sn, e) < 0)
        return -1;
    int det = -1;
    if (detector) {
        for (int d = 0; d < DET_COUNT; d++)
            if (!strcmp(detector, guard_detector_names[d]))
                det = d;
        if (det < 0)
            return kerr_set(e, "INVALID_OVERRIDE", "detector",
                            "detector must be one of rumination, hyperfocus, sycophancy, rules, loop, pins");
    } else { /* a token that belongs to one detector names it */
        int found = 0;
        for (int d = 0; d < DET_COUNT; d++)
            if (allows(d, token))
                det = d, found++;
        if (!found)
            return kerr_set(e, "INVALID_OVERRIDE", "token",
                            "unknown token; the tokens are fresh-context, override-once, disable-for-session, "
                            "lower-sensitivity, snooze-15m, snooze-once, commit-and-close, extend-end-of-day, "
                            "i-want-validation, explain-the-match, approve-tool");
        if (found > 1) { /* the one detector whose advisory is outstanding here, if only one */
            int outstanding = 0;
            for (int d = 0; d < DET_COUNT; d++)
                if ((overlay_current ? overlay_current->last[d] : checked_last[d]) && allows(d, token))
                    det = d, outstanding++;
            if (outstanding != 1)
                return kerr_set(e, "INVALID_OVERRIDE", "detector",
                                "this token applies to several detectors: name one of rumination, hyperfocus, "
                                "sycophancy, rules, loop, pins in detector");
        }
    }
    if (!allows(det, token)) {
        char list[300];
        list_tokens(det, list, sizeof list);
        return kerr_set(e, "INVALID_OVERRIDE", "token", "%s takes these tokens: %s", guard_detector_names[det], list);
    }
    struct overlay *ov = overlay_current;
    struct guard_view v;
    if (guard_read(env, env->profile->activity_gap, &v, e) < 0)
        return -1;
    char effect[200] = "", until[64] = "";
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "token", token);
    cJSON_AddStringToObject(o, "detector", guard_detector_names[det]);
    int session_scoped = !strcmp(token, "disable-for-session") || !strcmp(token, "lower-sensitivity") ||
        !strcmp(token, "i-want-validation");
    if (!strcmp(token, "approve-tool")) {
        /* The tools this keel's last pins advisory named, as the person saw them. */
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(ov ? ov->last[det] : NULL, "matched");
        const char *server = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "server"));
        int n = server ? pins_approve(ov->state_dir, server, cJSON_GetObjectItemCaseSensitive(m, "tools"), e) : 0;
        if (n < 0) {
            cJSON_Delete(o);
            return -1;
        }
        if (!server && ov && ov->pins_unseen)
            snprintf(effect, sizeof effect,
                     "nothing approved: keel's advisory naming the held tools has not reached the person yet; "
                     "approve once it has been read, or run keel pins approve");
        else if (!server)
            snprintf(effect, sizeof effect,
                     "nothing to approve: this keel held no tool back; keel pins lists held ones");
        else
            snprintf(effect, sizeof effect,
                     "%d held tool definition%s approved; the client sees %s when it lists the "
                     "tools again",
                     n, n == 1 ? "" : "s", n == 1 ? "it" : "them");
    } else if (!strcmp(token, "explain-the-match")) {
        const cJSON *last = ov && ov->last[det] ? ov->last[det] : checked_last[det];
        if (last) {
            cJSON_AddItemToObject(o, "explanation", cJSON_Duplicate(last, 1));
            snprintf(effect, sizeof effect, "nothing changed; here is what the last %s advisory saw",
                     guard_detector_names[det]);
        } else {
            snprintf(effect, sizeof effect, "nothing changed; keel has given no %s advisory in this process yet",
                     guard_detector_names[det]);
        }
    } else if (!strcmp(token, "commit-and-close")) {
        cJSON *a = cJSON_CreateObject(), *closed = NULL;
        if (summary)
            cJSON_AddStringToObject(a, "summary", summary);
        int rc = chrono_mark_session_end(a, env, &closed, e);
        cJSON_Delete(a);
        if (rc < 0) {
            cJSON_Delete(o);
            return -1;
        }
        cJSON_AddItemToObject(o, "session", closed);
        snprintf(effect, sizeof effect, "the session is closed");
    } else if (session_scoped && !v.session_key[0] && env->conversation && env->conversation[0]) {
        /* keel hook, which records the prompt's activity first: no session
         * means the state directory took nothing, and this process ends now */
        cJSON_Delete(o);
        return kerr_set(e, "STATE_UNWRITABLE", NULL,
                        "there is no session to scope it to: keel could not record this one in its state directory");
    } else if (session_scoped && !v.session_key[0]) {
        /* No session to scope it to: it holds until this keel exits. */
        if (ov && strcmp(token, "lower-sensitivity") && strcmp(token, "i-want-validation"))
            ov->local_disabled[det] = 1;
        snprintf(effect, sizeof effect, "%s advisories from this keel are off", guard_detector_names[det]);
        if (!ov || !strcmp(token, "lower-sensitivity") || !strcmp(token, "i-want-validation"))
            snprintf(effect, sizeof effect, "nothing to scope it to: no session is open and none is active");
        snprintf(until, sizeof until, "keel exits");
    } else {
        if (guard_apply(env, token, det, v.session_key, effect, sizeof effect, until, sizeof until, e) < 0) {
            cJSON_Delete(o);
            return -1;
        }
    }
    if (ov)
        ov->view_at = 0;
    /* advisories are what these quiet: a check tool asked directly (keel
     * serve, keel check) still answers what it finds */
    if (!ov && !(env->conversation && env->conversation[0]) && /* not a hook: keel serve, keel check */
        (!strcmp(token, "i-want-validation") || !strcmp(token, "disable-for-session")) &&
        strncmp(effect, "nothing", 7)) {
        size_t l = strlen(effect);
        snprintf(effect + l, sizeof effect - l, " (check_%s, asked directly, still answers what it finds)",
                 guard_detector_names[det]);
    }
    cJSON_AddStringToObject(o, "effect", effect);
    if (until[0])
        cJSON_AddStringToObject(o, "until", until);
    log_event(LOG_INFO, "override_applied", "token=%s detector=%s", token, guard_detector_names[det]);
    *out = o;
    return 0;
}
