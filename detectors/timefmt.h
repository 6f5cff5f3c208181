/* timefmt.h: the time formats on keel's wire, parsed and printed by hand.
 *
 * Instants are int64 milliseconds since the Unix epoch (UTC); a civil time is
 * an instant plus a UTC offset in seconds. Parsing is strict RFC 3339 with a
 * mandatory offset: a naive "2026-05-16T10:00:00" is rejected, because guessing
 * a time zone is exactly the mistake keel exists to avoid. Pure functions: no
 * clock, no TZ database. */
#ifndef KEEL_TIMEFMT_H
#define KEEL_TIMEFMT_H

#include <stdint.h>
#include <stddef.h>

struct tf_civil {
    int year, month, day; /* month 1..12, day 1..31 */
    int hour, minute, second;
    int wday; /* 0 = Sunday */
};

/* "YYYY-MM-DDTHH:MM:SS[.fff]Z" or "...+HH:MM". 0 on success, -1 if invalid. */
int tf_parse_rfc3339(const char *s, int64_t *ms, int *offset_s);

/* Prints "YYYY-MM-DDTHH:MM:SS+HH:MM" (seconds precision); buf >= 32 bytes. */
void tf_format_rfc3339(int64_t ms, int offset_s, char *buf, size_t n);

/* Civil fields of the instant as seen at the given UTC offset. */
void tf_civil(int64_t ms, int offset_s, struct tf_civil *c);

/* Days since 1970-01-01 of a proleptic Gregorian date (negative before). */
int64_t tf_days_from_civil(int y, int m, int d);

/* ISO 8601 duration with hours as the largest unit: "PT0S", "PT1H30M", "PT26H5S". */
void tf_format_duration(int64_t seconds, char *buf, size_t n);

/* "HH:MM" (00:00..23:59) into minutes after midnight; 0 or -1. */
int tf_parse_hhmm(const char *s, int *minutes);

extern const char *const tf_weekday_names[7]; /* "sunday".."saturday" */

#endif
