/* chrono.h: the chronometric tools.
 *
 * get_time_context, mark_session_start, mark_session_end,
 * request_break_if_needed and idle_status keep time and session intent for
 * the model, so it need not. Each takes its arguments, the environment
 * (clock reading, profile, state directory) and returns a structured result
 * or a kerr, like every keel tool. */
#ifndef KEEL_CHRONO_H
#define KEEL_CHRONO_H

#include "clock.h"
#include "kerr.h"
#include "profile.h"

#include <cjson/cJSON.h>

struct chrono_env {
    struct chrono_now now;
    const struct profile *profile;
    const char *state_dir; /* NULL: the default (state.h) */
    int64_t conversation_at; /* when the caller's conversation began (a host session, a client
                                   connection): overrides given before it do not hold in it; 0 unknown */
    const char *conversation; /* which conversation it is (a host's session id, hashed): an override
                                 given in another one does not hold in it; NULL or "" unknown */
};

int chrono_get_time_context(const cJSON *args, const struct chrono_env *env, cJSON **out, kerr *e);
int chrono_mark_session_start(const cJSON *args, const struct chrono_env *env, cJSON **out, kerr *e);
int chrono_mark_session_end(const cJSON *args, const struct chrono_env *env, cJSON **out, kerr *e);
int chrono_request_break(const cJSON *args, const struct chrono_env *env, cJSON **out, kerr *e);
int chrono_idle_status(const cJSON *args, const struct chrono_env *env, cJSON **out, kerr *e);

/* A copy of the state, read under the lock; NULL with e set on failure. */
cJSON *chrono_read_state(const struct chrono_env *env, kerr *e);
/* The same read as the file stands, without the lock (another process
 * holds it, or the directory cannot be written): NULL with e set. */
cJSON *chrono_read_state_as_is(const struct chrono_env *env, kerr *e);

/* The open session of state: its start (ms), or -1 when none is open, or
 * when the one there is damaged (*damaged: an object whose started_at is no
 * time, or lies more than a year before now or a day after it; the next
 * mark_session_start or mark_session_end closes it into recent_sessions,
 * marked damaged; damaged may be NULL). */
#define SESSION_PAST_MAX_MS  (366LL * 86400000)
#define SESSION_AHEAD_MAX_MS (86400000LL)
int64_t chrono_open_started(const cJSON *state, int64_t now, const cJSON **sess, int *damaged);

/* Records that the client sent a request now (last_prompt_at). */
int chrono_touch(const struct chrono_env *env, kerr *e);
/* The same, on a state read under the lock by the caller's own update (one
 * write for both). */
void chrono_touch_state(cJSON *state, const struct chrono_env *env);

/* The energy zone name at a local minute on a weekday, or "unknown". */
const char *chrono_zone_at(const struct profile *p, int wday, int minute);

/* Runs the idle probe command with a timeout; the idle time in ms, or -1. */
long long chrono_probe_idle_ms(const char *command, int timeout_ms);

#endif
