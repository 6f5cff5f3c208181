/* timectx.c: get_time_context and energy zones.
 *
 * A pure read: the clock, the profile and the state file, nothing written.
 * The energy zone is a coarse band of the local clock: by default
 * [05:00,12:00) morning_peak, [12:00,14:00) midday, [14:00,16:30)
 * afternoon_dip, [16:30,19:30) evening_quiet and night_owl_caution for the
 * rest. A profile may redefine the bands (per weekday too); a time no band
 * covers is "unknown". An unreadable profile gives "unknown" and a warning
 * rather than failing the call. */
#include "chrono.h"

#include "detect.h"
#include "guard.h"
#include "timefmt.h"

#include <stdio.h>
#include <string.h>

const char *chrono_zone_at(const struct profile *p, int wday, int minute)
{
    const struct profile_zone *z = profile_zones_for(p, wday);
    for (int i = 0; i < ZONE_COUNT; i++) {
        if (!z[i].defined)
            continue;
        int in = z[i].start < z[i].end ? minute >= z[i].start && minute < z[i].end
                                       : minute >= z[i].start || minute < z[i].end; /* crosses midnight */
        if (in)
            return profile_zone_names[i];
    }
    return "unknown";
}

static void add_since(cJSON *o, const char *key, const cJSON *state, const char *field, int64_t now)
{
    int64_t at;
    const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(state, field));
    char b[40];
    tf_format_duration(s && tf_parse_rfc3339(s, &at, NULL) == 0 && now > at ? (now - at) / 1000 : 0, b, sizeof b);
    cJSON_AddStringToObject(o, key, b);
}

int chrono_get_time_context(const cJSON *args, const struct chrono_env *env, cJSON **out, kerr *e)
{
    static const char *const keys[] = {NULL};
    if (det_known_keys(args, keys, "", e) < 0)
        return -1;
    const struct profile *p = env->profile;
    cJSON *warnings = cJSON_CreateArray();
    kerr se = {0};
    cJSON *state = chrono_read_state(env, &se);
    if (!state) {
        char w[1500];
        /* busy, or a directory keel cannot write: the file as it stands
         * still says whether a session is open */
        kerr re = {0};
        int as_is = (!strcmp(se.code, "STATE_BUSY") || !strcmp(se.code, "STATE_UNWRITABLE")) &&
            (state = chrono_read_state_as_is(env, &re)) != NULL;
        if (as_is)
            snprintf(w, sizeof w,
                     "%s: the state file was read as it stands, without its lock (%s); a change made this moment "
                     "may not show",
                     se.code,
                     !strcmp(se.code, "STATE_BUSY") ? "another keel process held it"
                                                    : "its directory cannot be written");
        else
            snprintf(w, sizeof w, "%s: %s", se.code, se.message);
        cJSON_AddItemToArray(warnings, cJSON_CreateString(w));
    }
    int64_t now = env->now.ms;
    int off = env->now.offset_s;
    struct tf_civil c;
    tf_civil(now, off, &c);
    int minute = c.hour * 60 + c.minute;

    cJSON *o = cJSON_CreateObject();
    char b[40];
    tf_format_rfc3339(now, off, b, sizeof b);
    cJSON_AddStringToObject(o, "now", b);
    cJSON_AddStringToObject(o, "day_of_week", tf_weekday_names[c.wday]);
    add_since(o, "time_since_last_prompt", state, "last_prompt_at", now);
    const cJSON *sess = NULL;
    int damaged;
    int64_t started = chrono_open_started(state, now, &sess, &damaged);
    int open = started >= 0;
    add_since(o, "current_session_length", open ? sess : NULL, "started_at", now);
    cJSON_AddBoolToObject(o, "session_open", open);
    if (damaged)
        cJSON_AddItemToArray(warnings,
                             cJSON_CreateString("SESSION_DAMAGED: the open session in keel's state file has no start "
                                                "keel can read; mark_session_start or mark_session_end closes it into "
                                                "recent_sessions, marked damaged"));
    if (p->unreadable) {
        char w[1500];
        snprintf(w, sizeof w, "PROFILE_UNREADABLE: the profile %s %s; energy_zone is unknown until it is fixed",
                 p->path, p->error);
        cJSON_AddItemToArray(warnings, cJSON_CreateString(w));
        cJSON_AddStringToObject(o, "energy_zone", "unknown");
    } else {
        cJSON_AddStringToObject(o, "energy_zone", chrono_zone_at(p, c.wday, minute));
        int64_t since;
        int eod = guard_end_of_day(env, started >= 0 ? started : now, guard_eod_extension(env, state));
        if (eod >= 0) {
            snprintf(b, sizeof b, "%02d:%02d", eod / 60, eod % 60);
            cJSON_AddStringToObject(o, "effective_end_of_day_local", b);
            cJSON_AddBoolToObject(o, "past_end_of_day",
                                  hyp_past_eod(now, off, guard_day_offset(env, started >= 0 ? started : now),
                                               started >= 0 ? &started : NULL, eod, &since));
        }
    }
    if (cJSON_GetArraySize(warnings))
        cJSON_AddItemToObject(o, "warnings", warnings);
    else
        cJSON_Delete(warnings);
    cJSON_Delete(state);
    *out = o;
    return 0;
}
