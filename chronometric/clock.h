/* clock.h: the one place keel reads the time.
 *
 * Every other module is handed a chrono_now. KEEL_NOW (an RFC 3339 instant),
 * or the contents of the file KEEL_NOW_FILE names (read at every look, so a
 * test can move time while keel runs), replaces the system clock for tests
 * and demos; the local UTC offset for that instant still comes from the TZ
 * database, so DST rules stay real. The monotonic clock, for waits, is read
 * here too (chrono_mono_ms). */
#ifndef KEEL_CLOCK_H
#define KEEL_CLOCK_H

#include "kerr.h"

#include <stdint.h>

struct chrono_now {
    int64_t ms; /* since the epoch, UTC */
    int offset_s; /* local UTC offset at that instant */
};

/* 0, or -1 with INTERNAL_CLOCK_UNAVAILABLE. */
int chrono_now(struct chrono_now *t, kerr *e);

/* keel eval only: from now on the clock reads ms (0: the real clock again),
 * so a recorded session can be replayed at the times it happened. */
void chrono_replay_at(int64_t ms);

/* Monotonic milliseconds, for waits, deadlines and backoff only: never a
 * time anyone is shown (that is chrono_now's, which tests may move). */
int64_t chrono_mono_ms(void);

/* The local UTC offset at an instant (TZ rules); 0 or -1. */
int chrono_offset_at(int64_t ms, int *offset_s);
/* The local offset at ms, or fallback when it cannot be had: a time shown
 * to the person is on the clock of its own instant (an ask made before a
 * daylight-saving change reads as the clock read then). */
int chrono_offset_or(int64_t ms, int fallback);

/* 0 when TZ names no zone installed here (the local time cannot be had),
 * else 1. */
int chrono_zone_ok(void);
/* From now on, when TZ names no zone, the local time is UTC's (the hooks:
 * a misspelt TZ does not silence them; they say so instead). */
void chrono_zone_as_utc(void);

#endif
