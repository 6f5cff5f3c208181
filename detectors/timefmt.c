/* timefmt.c: RFC 3339 and ISO 8601 durations (see timefmt.h).
 *
 * Civil-date arithmetic uses the days-from-civil algorithm (eras of 400
 * years), exact for every proleptic Gregorian date, so no libc time function
 * and no TZ setting can change a result. */
#include "timefmt.h"

#include <stdio.h>
#include <string.h>

const char *const tf_weekday_names[7] = {"sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"};

int64_t tf_days_from_civil(int y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400; /* [0, 399] */
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1; /* [0, 365] */
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy; /* [0, 146096] */
    return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int *y, int *m, int *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = (int)(yoe + era * 400 + (*m <= 2));
}

static int days_in_month(int y, int m)
{
    static const int dm[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return m == 2 ? 28 + leap : dm[m - 1];
}

/* Reads exactly n digits; -1 if any is not a digit. */
static int digits(const char *s, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

int tf_parse_rfc3339(const char *s, int64_t *ms, int *offset_s)
{
    if (!s || strlen(s) < 20)
        return -1;
    int y = digits(s, 4), mo = digits(s + 5, 2), d = digits(s + 8, 2);
    int h = digits(s + 11, 2), mi = digits(s + 14, 2), se = digits(s + 17, 2);
    if (y < 0 || mo < 0 || d < 0 || h < 0 || mi < 0 || se < 0)
        return -1;
    if (s[4] != '-' || s[7] != '-' || s[13] != ':' || s[16] != ':')
        return -1;
    if (s[10] != 'T' && s[10] != 't' && s[10] != ' ')
        return -1;
    if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 || se > 60)
        return -1;
    if (se == 60) /* a leap second reads as the last second of the minute */
        se = 59;
    const char *p = s + 19;
    int frac_ms = 0;
    if (*p == '.') {
        p++;
        int nd = 0;
        while (*p >= '0' && *p <= '9') {
            if (nd < 3)
                frac_ms = frac_ms * 10 + (*p - '0');
            nd++;
            p++;
        }
        if (nd == 0)
            return -1;
        for (; nd < 3; nd++)
            frac_ms *= 10;
    }
    int off;
    if (*p == 'Z' || *p == 'z') {
        off = 0;
        p++;
    } else if (*p == '+' || *p == '-') {
        int oh = digits(p + 1, 2), om = (oh >= 0 && p[3] == ':') ? digits(p + 4, 2) : -1;
        if (oh < 0 || om < 0 || oh > 23 || om > 59)
            return -1;
        off = (oh * 3600 + om * 60) * (*p == '-' ? -1 : 1);
        p += 6;
    } else {
        return -1;
    }
    if (*p != '\0')
        return -1;
    int64_t days = tf_days_from_civil(y, mo, d);
    int64_t secs = days * 86400 + h * 3600 + mi * 60 + se - off;
    *ms = secs * 1000 + frac_ms;
    if (offset_s)
        *offset_s = off;
    return 0;
}

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

void tf_civil(int64_t ms, int offset_s, struct tf_civil *c)
{
    int64_t secs = floor_div(ms, 1000) + offset_s;
    int64_t days = floor_div(secs, 86400);
    int64_t rem = secs - days * 86400;
    civil_from_days(days, &c->year, &c->month, &c->day);
    c->hour = (int)(rem / 3600);
    c->minute = (int)(rem % 3600 / 60);
    c->second = (int)(rem % 60);
    c->wday = (int)((days % 7 + 11) % 7); /* 1970-01-01 was a Thursday */
}

void tf_format_rfc3339(int64_t ms, int offset_s, char *buf, size_t n)
{
    struct tf_civil c;
    tf_civil(ms, offset_s, &c);
    int a = offset_s < 0 ? -offset_s : offset_s;
    snprintf(buf, n, "%04d-%02d-%02dT%02d:%02d:%02d%c%02d:%02d", c.year, c.month, c.day, c.hour, c.minute, c.second,
             offset_s < 0 ? '-' : '+', a / 3600, a % 3600 / 60);
}

void tf_format_duration(int64_t seconds, char *buf, size_t n)
{
    if (seconds <= 0) {
        snprintf(buf, n, "PT0S");
        return;
    }
    int64_t h = seconds / 3600, m = seconds % 3600 / 60, s = seconds % 60;
    size_t used = (size_t)snprintf(buf, n, "PT");
    if (h && used < n)
        used += (size_t)snprintf(buf + used, n - used, "%lldH", (long long)h);
    if (m && used < n)
        used += (size_t)snprintf(buf + used, n - used, "%lldM", (long long)m);
    if (s && used < n)
        snprintf(buf + used, n - used, "%lldS", (long long)s);
}

int tf_parse_hhmm(const char *s, int *minutes)
{
    if (!s || strlen(s) != 5 || s[2] != ':')
        return -1;
    int h = digits(s, 2), m = digits(s + 3, 2);
    if (h < 0 || m < 0 || h > 23 || m > 59)
        return -1;
    *minutes = h * 60 + m;
    return 0;
}
