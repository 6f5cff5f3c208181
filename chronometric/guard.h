/* guard.h: the overlay's shared memory across keel processes.
 *
 * A person's client runs one keel per wrapped server, and an override said to
 * one of them must hold for all: time-based and session-scoped overrides, the
 * hyperfocus rung already advised, and the end-of-day extension live in the
 * state file under "guard". Nothing here holds user text. */
#ifndef KEEL_GUARD_H
#define KEEL_GUARD_H

#include "chrono.h"

#include <stdint.h>

enum { DET_RUMINATION, DET_HYPERFOCUS, DET_SYCOPHANCY, DET_RULES, DET_LOOP, DET_PINS, DET_COUNT };
extern const char *const guard_detector_names[DET_COUNT];
/* The override tokens each detector offers, NULL-terminated: the one table
 * advisories are built from and apply_override checks against. */
extern const char *const guard_tokens[DET_COUNT][8];

struct guard_view {
    int64_t now;
    int session_open; /* a chronometric session is open */
    char session_id[48];
    char session_key[64]; /* session id, or "activity:<ms>", or "" for none */
    int64_t session_started; /* -1: no session and no activity */
    int64_t focus_started; /* what hyperfocus counts from: the later of the session's start and the
                                    end of its last pause of gap_min or more (now, while paused) */
    char focus_key[96]; /* session_key, and focus_started when it is later: a rung's key */
    char intent[512]; /* the open session's intent (private: never logged) */
    int once[DET_COUNT]; /* override-once tokens waiting */
    int disabled[DET_COUNT]; /* disable-for-session, for the current session */
    int lower_sensitivity; /* rumination, current session */
    int validation_ok; /* i-want-validation, current session */
    int64_t fresh_context_at; /* -1 */
    int64_t snooze_until; /* -1 */
    int skip_next; /* snooze-once waiting */
    int eod_extension_min; /* extend-end-of-day for today */
    int read_only; /* read without the lock: the file could not be locked or written (e holds why) */
};

/* A snapshot of the session and the guard. gap_min: a pause that ends an
 * activity session. */
int guard_read(const struct chrono_env *env, int gap_min, struct guard_view *v, kerr *e);

/* End of day (local minutes, or -1) of the day `at` belongs to (the start of
 * the open session, else now; a day begins at HYP_DAY_START_MIN), after an
 * extension of extension_min. */
int guard_end_of_day(const struct chrono_env *env, int64_t at, int extension_min);

/* The UTC offset to place the end of day of the day `at` belongs to in: the
 * offset at that day's start (HYP_DAY_START_MIN), so that the hour a clock
 * goes back repeats no end of day already passed; now's when the TZ rules
 * cannot say. */
int guard_day_offset(const struct chrono_env *env, int64_t at);

/* Minutes extend-end-of-day added to today's end of day (today: the day now
 * belongs to, begun at HYP_DAY_START_MIN), from a state object. */
int guard_eod_extension(const struct chrono_env *env, const cJSON *state);

/* Atomically: may a hyperfocus advisory at level go out now for this session?
 * Advises when the level rises, and at hard at most every 15 minutes; a
 * pending snooze-once skips a rise, override-once swallows one advisory, a
 * snooze holds all. *emit: GUARD_EMIT to advise; GUARD_QUIET when the rung is
 * recorded but not advised (already advised, skipped, swallowed); GUARD_SNOOZED
 * when nothing was recorded. */
enum { GUARD_QUIET, GUARD_EMIT, GUARD_SNOOZED };
int guard_claim_hyperfocus(const struct chrono_env *env, const char *key, int level, int *emit, kerr *e);

/* Atomically takes one override-once for a detector; *taken 1 if there was one. */
int guard_take_once(const struct chrono_env *env, int det, int *taken, kerr *e);

/* Applies a state-kept override; *effect and *until describe it. */
int guard_apply(const struct chrono_env *env, const char *token, int det, const char *session_key, char *effect,
                size_t effect_n, char *until, size_t until_n, kerr *e);

#endif
