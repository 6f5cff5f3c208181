/* clock.c: system clock and local offset (see clock.h). */
#include "clock.h"

#include "timefmt.h"

#include <ctype.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* 1 when path is a zone file: a regular file that opens with the TZif
 * magic (a directory, /etc/passwd or a FIFO is none, and is not waited on). */
static int zone_file(const char *path)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return 0;
    struct stat st;
    char magic[4];
    int ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && read(fd, magic, 4) == 4 && !memcmp(magic, "TZif", 4);
    close(fd);
    return ok;
}

/* 1 if TZ is unset or empty, a POSIX rule ("EST5EDT", "<+03>-3"), or names
 * a zone file that is there; 0 for a name with no file ("Europe/Berln"),
 * which the C library would silently read as UTC. */
static int tz_usable(void)
{
    const char *tz = getenv("TZ");
    if (!tz || !*tz)
        return 1;
    if (*tz == ':')
        tz++;
    size_t letters = 0;
    if (*tz == '<') {
        const char *close = strchr(tz, '>');
        letters = close ? 3 : 0;
        tz = close ? close + 1 : tz;
    } else {
        while (isalpha((unsigned char)tz[letters]))
            letters++;
        tz += letters >= 3 ? letters : 0;
    }
    if (letters >= 3 && (*tz == '+' || *tz == '-' || isdigit((unsigned char)*tz)))
        return 1; /* a rule: a name of 3+ letters, then its offset */
    tz = getenv("TZ");
    tz += *tz == ':';
    if (!strcmp(tz, "UTC") || !strcmp(tz, "GMT")) /* what the C library falls back on anyway */
        return 1;
    if (*tz == '/')
        return zone_file(tz);
    const char *dir = getenv("TZDIR");
    char path[4096];
    int n = snprintf(path, sizeof path, "%s/%s", dir && *dir ? dir : "/usr/share/zoneinfo", tz);
    return n > 0 && (size_t)n < sizeof path && !strstr(tz, "..") && zone_file(path);
}

/* TZ is set before keel starts and never changed: -1 not yet looked at, 0
 * it names no zone, 1 usable, 2 it names no zone and times are read as UTC
 * (chrono_zone_as_utc). */
static int usable = -1;

int chrono_zone_ok(void)
{
    if (usable < 0)
        usable = tz_usable();
    return usable != 0;
}

void chrono_zone_as_utc(void)
{
    if (!chrono_zone_ok())
        usable = 2;
}

int chrono_offset_or(int64_t ms, int fallback)
{
    int off;
    return chrono_offset_at(ms, &off) == 0 ? off : fallback;
}

int chrono_offset_at(int64_t ms, int *offset_s)
{
    if (!chrono_zone_ok())
        return -1;
    if (usable == 2) {
        *offset_s = 0;
        return 0;
    }
    time_t t = (time_t)(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
    struct tm tm;
    if (!localtime_r(&t, &tm))
        return -1;
    *offset_s = (int)tm.tm_gmtoff;
    return 0;
}

/* KEEL_NOW_FILE names a file holding the time; the file is read at every look
 * at the clock, so a test can move time while keel runs. */
static int read_fake_file(const char *path, char *buf, size_t n)
{
    /* a regular file only: a FIFO with no writer would hold every look at
     * the clock (and a hook, its host) */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    ssize_t got = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? read(fd, buf, n - 1) : -1;
    close(fd);
    if (got < 0)
        return -1;
    buf[got] = '\0';
    while (got && (buf[got - 1] == '\n' || buf[got - 1] == ' ' || buf[got - 1] == '\r'))
        buf[--got] = '\0';
    return 0;
}

static int64_t replay_ms;

void chrono_replay_at(int64_t ms)
{
    replay_ms = ms;
}

int chrono_now(struct chrono_now *t, kerr *e)
{
    /* The environment is read once: KEEL_NOW and KEEL_NOW_FILE are set before
     * keel starts and keel never changes its own environment (the wrapped
     * server's additions are made in the child, after fork). getenv walks the
     * whole environment, and the clock is looked at several times per call. */
    static int env_read;
    static const char *env_now, *env_file;
    if (!env_read) {
        env_now = getenv("KEEL_NOW");
        env_file = getenv("KEEL_NOW_FILE");
        env_read = 1;
    }
    const char *fake = env_now;
    const char *file = env_file;
    char buf[64];
    if (file && *file) {
        if (read_fake_file(file, buf, sizeof buf) < 0)
            return kerr_set(e, "INTERNAL_CLOCK_UNAVAILABLE", NULL, "KEEL_NOW_FILE is set but cannot be read");
        fake = buf;
    }
    if (replay_ms) {
        t->ms = replay_ms;
    } else if (fake && *fake) {
        if (tf_parse_rfc3339(fake, &t->ms, NULL) < 0)
            return kerr_set(e, "INTERNAL_CLOCK_UNAVAILABLE", NULL,
                            "KEEL_NOW (or KEEL_NOW_FILE) is set but is not an RFC 3339 time with an offset");
    } else {
        struct timespec ts;
        if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
            return kerr_set(e, "INTERNAL_CLOCK_UNAVAILABLE", NULL, "the system clock could not be read");
        t->ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    }
    /* The offset of the same second as last time is the one computed then. */
    static int64_t cached_s = INT64_MIN;
    static int cached_off;
    if (t->ms / 1000 != cached_s) {
        if (chrono_offset_at(t->ms, &cached_off) < 0)
            return kerr_set(e, "INTERNAL_CLOCK_UNAVAILABLE", NULL,
                            "the local time zone could not be read: TZ names no zone installed here (see "
                            "/usr/share/zoneinfo; TZ=Europe/Berlin, say), or unset TZ for the system's own");
        cached_s = t->ms / 1000;
    }
    t->offset_s = cached_off;
    /* RFC 3339 writes years 0001 to 9999: a clock outside them (a test's, a
     * broken one) is no time keel could write and read back */
    if (t->ms < -62135596800000LL + 86400000LL || t->ms > 253402300799000LL - 86400000LL)
        return kerr_set(e, "INTERNAL_CLOCK_UNAVAILABLE", NULL,
                        "the clock reads a time outside the years 0001 to 9999, which keel cannot write");
    return 0;
}

int64_t chrono_mono_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}
