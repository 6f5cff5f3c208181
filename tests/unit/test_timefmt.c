/* test_timefmt.c: RFC 3339 parsing at every edge, printing, durations. */
#include "timefmt.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

static void parses_valid_times(void **state)
{
    (void)state;
    int64_t ms;
    int off;
    assert_int_equal(tf_parse_rfc3339("1970-01-01T00:00:00Z", &ms, &off), 0);
    assert_int_equal(ms, 0);
    assert_int_equal(off, 0);
    assert_int_equal(tf_parse_rfc3339("2026-05-16T10:00:00+01:00", &ms, &off), 0);
    assert_int_equal(ms, 1778922000000LL);
    assert_int_equal(off, 3600);
    assert_int_equal(tf_parse_rfc3339("2026-05-16T09:00:00.250Z", &ms, &off), 0);
    assert_int_equal(ms, 1778922000250LL);
    assert_int_equal(tf_parse_rfc3339("2026-05-16T09:00:00.2509999Z", &ms, &off), 0); /* past ms: cut, not rounded */
    assert_int_equal(ms, 1778922000250LL);
    assert_int_equal(tf_parse_rfc3339("2024-02-29t23:59:59-05:30", &ms, &off), 0);
    assert_int_equal(off, -(5 * 3600 + 30 * 60));
    assert_int_equal(tf_parse_rfc3339("2026-05-16T10:00:00+23:59", &ms, &off), 0); /* the widest offset */
    assert_int_equal(off, 23 * 3600 + 59 * 60);
    assert_int_equal(tf_parse_rfc3339("1969-12-31T23:59:59Z", &ms, &off), 0);
    assert_int_equal(ms, -1000);
    /* a leap second reads as :59 */
    assert_int_equal(tf_parse_rfc3339("2016-12-31T23:59:60Z", &ms, &off), 0);
    /* RFC 3339 years run from 0000, a leap year (divisible by 400) */
    int64_t feb29, mar1;
    assert_int_equal(tf_parse_rfc3339("0000-02-29T00:00:00Z", &feb29, &off), 0);
    assert_int_equal(tf_parse_rfc3339("0000-03-01T00:00:00Z", &mar1, &off), 0);
    assert_int_equal(mar1 - feb29, 86400000LL);
}

static void rejects_invalid_times(void **state)
{
    (void)state;
    static const char *const bad[] = {"",
                                      "2026-05-16",
                                      "2026-05-16T10:00:00", /* naive: no offset */
                                      "2026-13-01T00:00:00Z",
                                      "2026-02-29T00:00:00Z",
                                      "2100-02-29T00:00:00Z",
                                      "2026-04-31T00:00:00Z",
                                      "2026-05-00T00:00:00Z", /* no day 0 */
                                      "2026-00-16T00:00:00Z", /* no month 0 */
                                      "2026-05-16T24:00:00Z",
                                      "2026-05-16T10:60:00Z",
                                      "2026-05-16T10:00:61Z",
                                      "2026-05-16T10:00:00+1:00",
                                      "2026-05-16T10:00:00+01",
                                      "2026-05-16T10:00:00+01x00", /* the offset's colon is a colon */
                                      "2026-05-16T10:00:00+24:00",
                                      "2026-05-16T10:00:00.Z",
                                      "2026-05-16T10:00:00Zjunk",
                                      "2026/05/16T10:00:00Z",
                                      "2026-05-16X10:00:00Z",
                                      "20a6-05-16T10:00:00Z", /* a letter in each field */
                                      "2026-0a-16T10:00:00Z",
                                      "2026-05-1bT10:00:00Z",
                                      "2026-05-16T1c:00:00Z",
                                      "2026-05-16T10:d0:00Z",
                                      "2026-05-16T10:00:e0Z",
                                      NULL};
    int64_t ms;
    for (int i = 0; bad[i]; i++)
        assert_int_equal(tf_parse_rfc3339(bad[i], &ms, NULL), -1);
    assert_int_equal(tf_parse_rfc3339(NULL, &ms, NULL), -1);
}

static void formats_round_trip(void **state)
{
    (void)state;
    char buf[40];
    tf_format_rfc3339(1778922000000LL, 3600, buf, sizeof buf);
    assert_string_equal(buf, "2026-05-16T10:00:00+01:00");
    tf_format_rfc3339(-1000, 0, buf, sizeof buf);
    assert_string_equal(buf, "1969-12-31T23:59:59+00:00");
    tf_format_rfc3339(0, -(3 * 3600 + 30 * 60), buf, sizeof buf);
    assert_string_equal(buf, "1969-12-31T20:30:00-03:30");
    /* every day of a leap year and of the next, and the years about 0 and
     * 1970, formatted back as they were written */
    static const int years[] = {2024, 2025, 1970, 1969, 0, 1};
    static const int dm[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    for (size_t k = 0; k < sizeof years / sizeof years[0]; k++)
        for (int m = 1; m <= 12; m++)
            for (int d = 1; d <= dm[m - 1]; d++) {
                int y = years[k];
                if (m == 2 && d == 29 && !(y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)))
                    continue;
                char in[40];
                int64_t ms;
                snprintf(in, sizeof in, "%04d-%02d-%02dT12:34:56+00:00", y, m, d);
                assert_int_equal(tf_parse_rfc3339(in, &ms, NULL), 0);
                tf_format_rfc3339(ms, 0, buf, sizeof buf);
                if (strcmp(buf, in))
                    fail_msg("%s came back as %s", in, buf);
            }
    struct tf_civil c;
    tf_civil(1778922000000LL, 3600, &c);
    assert_int_equal(c.wday, 6); /* 2026-05-16 is a Saturday */
    assert_string_equal(tf_weekday_names[c.wday], "saturday");
}

static void formats_durations(void **state)
{
    (void)state;
    char buf[32];
    tf_format_duration(0, buf, sizeof buf);
    assert_string_equal(buf, "PT0S");
    tf_format_duration(-5, buf, sizeof buf);
    assert_string_equal(buf, "PT0S");
    tf_format_duration(59, buf, sizeof buf);
    assert_string_equal(buf, "PT59S");
    tf_format_duration(5400, buf, sizeof buf);
    assert_string_equal(buf, "PT1H30M");
    tf_format_duration(93605, buf, sizeof buf);
    assert_string_equal(buf, "PT26H5S");
}

static void parses_hhmm(void **state)
{
    (void)state;
    int m;
    assert_int_equal(tf_parse_hhmm("00:00", &m), 0);
    assert_int_equal(m, 0);
    assert_int_equal(tf_parse_hhmm("23:59", &m), 0);
    assert_int_equal(m, 1439);
    assert_int_equal(tf_parse_hhmm("24:00", &m), -1);
    assert_int_equal(tf_parse_hhmm("9:00", &m), -1);
    assert_int_equal(tf_parse_hhmm("18:60", &m), -1);
    assert_int_equal(tf_parse_hhmm("18:x0", &m), -1); /* a letter in either field */
    assert_int_equal(tf_parse_hhmm("1x:00", &m), -1);
    assert_int_equal(tf_parse_hhmm("18:00 ", &m), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parses_valid_times), cmocka_unit_test(rejects_invalid_times),
        cmocka_unit_test(formats_round_trip), cmocka_unit_test(formats_durations),
        cmocka_unit_test(parses_hhmm),
    };
    cmocka_set_message_output(CM_OUTPUT_TAP);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
