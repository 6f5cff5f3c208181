/* test_loop.c: the loop detector as a table: identities, and each pattern at
 * its threshold, before it, and again only after as many further repeats. */
#include "loop.h"
#include "relay.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct loop_call ident(const char *tool, const char *args)
{
    struct loop_call c;
    memset(&c, 0, sizeof c);
    relay_identify(tool, strlen(tool), args, args ? strlen(args) : 0, &c);
    return c;
}

static void identity_is_canonical(void **state)
{
    (void)state;
    struct loop_call a = ident("read_file", "{\"path\":\"a.c\",\"opts\":{\"n\":1,\"enc\":\"utf8\"}}");
    struct loop_call b = ident(
        "read_file", "{ \"opts\" : {\"enc\":\"utf8\",\"n\":1.0}, \"path\":\"a.c\", \"_meta\":{\"progressToken\":7}}");
    assert_true(a.id == b.id);
    assert_true(ident("read_file", "{\"path\":\"b.c\"}").id != ident("read_file", "{\"path\":\"a.c\"}").id);
    assert_true(ident("write_file", "{\"path\":\"a.c\"}").id != ident("read_file", "{\"path\":\"a.c\"}").id);
    assert_true(ident("f", "{\"n\":1}").id != ident("f", "{\"n\":\"1\"}").id); /* a number is not a string */
    assert_true(ident("f", "[1,2]").id != ident("f", "[2,1]").id); /* arrays keep their order */
    assert_true(ident("f", NULL).id == ident("f", NULL).id);
    /* strings and keys by their decoded text, numbers by value */
    assert_true(ident("f", "{\"p\":\"A\"}").id == ident("f", "{\"\\u0070\":\"\\u0041\"}").id);
    assert_true(ident("f", "{\"n\":100}").id == ident("f", "{\"n\":1e2}").id);
    assert_true(ident("f", "{\"n\":0}").id == ident("f", "{\"n\":-0.0}").id);
    assert_true(ident("f", "{\"n\":1}").id != ident("f", "{\"n\":2}").id);
    /* progress tokens dropped at any depth; other members are not */
    assert_true(ident("f", "{\"a\":{\"b\":1,\"progressToken\":\"x\"}}").id == ident("f", "{\"a\":{\"b\":1}}").id);
    assert_true(ident("f", "{\"a\":{\"b\":1}}").id != ident("f", "{\"a\":{\"b\":1,\"c\":1}}").id);
    /* a value is not moved to another key by the order-free sum */
    assert_true(ident("f", "{\"a\":1,\"b\":2}").id != ident("f", "{\"a\":2,\"b\":1}").id);
    assert_true(ident("f", "{}").id != ident("f", "[]").id);
    assert_true(ident("f", "{\"a\":[]}").id != ident("f", "{\"a\":{}}").id);
}

static void free_text_is_blanked_in_the_shape(void **state)
{
    (void)state;
    struct loop_call a = ident("search", "{\"query\":\"how do I configure retries\",\"limit\":5}");
    struct loop_call b = ident("search", "{\"limit\":5,\"query\":\"retry configuration please\"}");
    assert_true(a.id != b.id);
    assert_true(a.shape == b.shape);
    assert_true(a.flags & LOOP_FREE_TEXT);
    /* a path with a space, a single token, a URI and a number stay in the shape */
    assert_true(ident("r", "{\"path\":\"/home/me/My Docs/a\"}").shape !=
                ident("r", "{\"path\":\"/home/me/My Docs/b\"}").shape);
    assert_true(ident("r", "{\"id\":\"abc\"}").shape != ident("r", "{\"id\":\"abd\"}").shape);
    assert_true(ident("r", "{\"u\":\"https://x.org/a b\"}").shape != ident("r", "{\"u\":\"https://x.org/a c\"}").shape);
    assert_false(ident("r", "{\"n\":3}").flags & LOOP_FREE_TEXT);
    /* a scheme counts to the text's last byte; a drive letter too */
    assert_false(loop_free_text("open http://", 12));
    assert_true(loop_free_text("open http:/", 11));
    assert_false(loop_free_text("C:/My Docs", 10));
    assert_true(loop_free_text("how do I", 8));
    assert_true(loop_free_text("first\nsecond", 12)); /* a newline spaces words too */
}

struct run {
    struct loop_window w;
    struct loop_params p;
    int64_t t;
};

/* One call through the window; returns the finding's kind when it advises, else LOOP_NONE. */
static int step(struct run *r, const char *tool, const char *args, uint64_t result, uint64_t error, int64_t dt_ms)
{
    struct loop_call c = ident(tool, args);
    r->t += dt_ms;
    c.at = r->t;
    c.result = result;
    c.error = error;
    struct loop_finding f;
    char other[64];
    assert_int_equal(loop_observe(&r->w, &r->p, &c, tool, &f, other), 0);
    return f.advise ? f.kind : LOOP_NONE;
}

static void start(struct run *r)
{
    memset(r, 0, sizeof *r);
    loop_default_params(&r->p);
    r->t = 1000000000000LL;
}

static void repeat_fires_at_the_fourth_then_every_third(void **state)
{
    (void)state;
    struct run r;
    start(&r);
    int got[12];
    for (int i = 0; i < 12; i++)
        got[i] = step(&r, "read_file", "{\"path\":\"a.c\"}", 42, 0, 20000);
    int want[12] = {0, 0, 0, LOOP_REPEAT, 0, 0, LOOP_REPEAT, 0, 0, LOOP_REPEAT, 0, 0};
    assert_memory_equal(got, want, sizeof got);
    loop_window_free(&r.w);
}

static void a_changed_result_is_progress(void **state)
{
    (void)state;
    struct run r;
    start(&r);
    for (int i = 0; i < 10; i++)
        assert_int_equal(step(&r, "job_status", "{\"id\":7}", (uint64_t)i, 0, 5000), LOOP_NONE);
    /* unchanged three times, then changed: the count starts again */
    for (int i = 0; i < 3; i++)
        assert_int_equal(step(&r, "read_file", "{\"path\":\"a.c\"}", 1, 0, 5000), LOOP_NONE);
    assert_int_equal(step(&r, "read_file", "{\"path\":\"a.c\"}", 2, 0, 5000), LOOP_NONE);
    assert_int_equal(step(&r, "read_file", "{\"path\":\"a.c\"}", 2, 0, 5000), LOOP_NONE);
    loop_window_free(&r.w);
}

static void different_files_are_work(void **state)
{
    (void)state;
    struct run r;
    start(&r);
    char args[64];
    for (int i = 0; i < 200; i++) {
        snprintf(args, sizeof args, "{\"path\":\"src/f%d.c\"}", i % 60);
        assert_int_equal(step(&r, "read_file", args, (uint64_t)(i % 60) + 100, 0, 3000), LOOP_NONE);
    }
    loop_window_free(&r.w);
}

static void the_window_forgets(void **state)
{
    (void)state;
    struct run r;
    start(&r);
    for (int i = 0; i < 3; i++)
        step(&r, "read_file", "{\"path\":\"a.c\"}", 1, 0, 1000);
    assert_int_equal(step(&r, "read_file", "{\"path\":\"a.c\"}", 1, 0, 31 * 60000), LOOP_NONE); /* 31 min later */
    loop_window_free(&r.w);
    start(&r);
    for (int i = 0; i < 3; i++)
        step(&r, "read_file", "{\"path\":\"a.c\"}", 1, 0, 1000);
    char args[32];
    for (int i = 0; i < 50; i++) { /* 50 other calls push them out of the count window */
        snprintf(args, sizeof args, "{\"n\":%d}", i);
        step(&r, "other", args, (uint64_t)i, 0, 1000);
    }
    assert_int_equal(step(&r, "read_file", "{\"path\":\"a.c\"}", 1, 0, 1000), LOOP_NONE);
    assert_true(r.w.n <= 50);
    loop_window_free(&r.w);
    /* the time window is 30 minutes, both ends in: the same error a third
     * time counts the first when it was 30 minutes ago to the millisecond,
     * not a millisecond more */
    for (int late = 0; late <= 1; late++) {
        start(&r);
        step(&r, "build", "{\"target\":\"all\"}", 0, 7, 1000);
        step(&r, "build", "{\"target\":\"all\"}", 0, 7, 1000);
        assert_int_equal(step(&r, "build", "{\"target\":\"all\"}", 0, 7, 30 * 60000 - 1000 + late),
                         late ? LOOP_NONE : LOOP_SAME_ERROR);
        loop_window_free(&r.w);
    }
    /* the count window is 50 calls, the current one among them: four
     * repeats 50 calls apart fire, 51 apart they do not */
    for (int others = 46; others <= 47; others++) {
        start(&r);
        for (int i = 0; i < 3; i++)
            step(&r, "read_file", "{\"path\":\"a.c\"}", 1, 0, 1000);
        for (int i = 0; i < others; i++) {
            snprintf(args, sizeof args, "{\"n\":%d}", i);
            step(&r, "other", args, (uint64_t)i, 0, 1000);
        }
        assert_int_equal(step(&r, "read_file", "{\"path\":\"a.c\"}", 1, 0, 1000),
                         others == 46 ? LOOP_REPEAT : LOOP_NONE);
        loop_window_free(&r.w);
    }
}

/* The window moves through a buffer twice its size and back to the start:
 * whatever came before, the fourth of a repeat fires, and an alternation
 * names its other tool as it was called, in slots that held longer names. */
static void the_window_as_it_moves(void **state)
{
    (void)state;
    char args[64];
    for (int before = 90; before <= 160; before++) {
        struct run r;
        start(&r);
        for (int i = 0; i < before; i++) {
            snprintf(args, sizeof args, "{\"n\":%d}", i);
            step(&r, "a_tool_whose_name_is_long_enough_to_fill", args, (uint64_t)i, 0, 1000);
        }
        for (int i = 0; i < 3; i++)
            assert_int_equal(step(&r, "read_file", "{\"path\":\"a.c\"}", 1, 0, 1000), LOOP_NONE);
        assert_int_equal(step(&r, "read_file", "{\"path\":\"a.c\"}", 1, 0, 1000), LOOP_REPEAT);
        struct loop_finding f = {0};
        char other[64] = "";
        for (int i = 0; i < 6; i++) {
            const char *tool = i % 2 ? "cd" : "ls";
            struct loop_call c = ident(tool, "{}");
            r.t += 1000;
            c.at = r.t;
            c.result = (uint64_t)(i % 2 ? 5 : 6);
            assert_int_equal(loop_observe(&r.w, &r.p, &c, tool, &f, other), 0);
        }
        assert_int_equal(f.kind, LOOP_ALTERNATION);
        assert_string_equal(other, "ls");
        loop_window_free(&r.w);
    }
}

/* The reason says how long the loop took, in words a person reads. */
static void the_reason_says_how_long(void **state)
{
    (void)state;
    static const struct {
        int64_t ms;
        const char *says;
    } v[] = {{59999, "in under a minute"}, {60000, "in 1 minute;"},     {89999, "in 1 minute;"},
             {90000, "in 2 minutes;"},     {3599999, "in 60 minutes;"}, {3600000, "in 1 h 00 min;"},
             {5460000, "in 1 h 31 min;"}};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        struct loop_finding f = {0};
        f.kind = LOOP_REPEAT;
        f.count = 4;
        f.first_at = 1000000000000LL;
        char buf[300];
        loop_reason(&f, "read_file", "", f.first_at + v[i].ms, buf, sizeof buf);
        if (!strstr(buf, v[i].says))
            fail_msg("%lld ms: \"%s\" does not say \"%s\"", (long long)v[i].ms, buf, v[i].says);
    }
}

/* Calls older than the window are left out, and nothing past the n calls
 * given is read (an array of exactly n: AddressSanitizer sees more). */
static void calls_before_the_window_are_left_out(void **state)
{
    (void)state;
    struct loop_params p;
    loop_default_params(&p);
    struct loop_call cur = ident("read_file", "{\"path\":\"a.c\"}");
    cur.at = 1000000000000LL;
    cur.result = 9;
    struct loop_call *hist = malloc(3 * sizeof *hist);
    assert_non_null(hist);
    for (int i = 0; i < 3; i++) {
        hist[i] = cur;
        hist[i].at = cur.at - p.window_ms - 1000 + i;
    }
    struct loop_finding f;
    loop_check(hist, 3, &cur, &p, &f);
    assert_int_equal(f.kind, LOOP_NONE);
    for (int i = 0; i < 3; i++) /* the same calls inside the window: the 4th is advised */
        hist[i].at = cur.at - 3000 + i;
    loop_check(hist, 3, &cur, &p, &f);
    assert_int_equal(f.kind, LOOP_REPEAT);
    assert_true(f.advise);
    free(hist);
}

static void the_same_error_with_varied_arguments(void **state)
{
    (void)state;
    struct run r;
    start(&r);
    assert_int_equal(step(&r, "bash", "{\"cmd\":\"make -j2\"}", 1, 77, 1000), LOOP_NONE);
    assert_int_equal(step(&r, "bash", "{\"cmd\":\"make -j4\"}", 2, 77, 1000), LOOP_NONE);
    assert_int_equal(step(&r, "bash", "{\"cmd\":\"make all\"}", 3, 77, 1000), LOOP_SAME_ERROR);
    loop_window_free(&r.w);
    start(&r); /* loop.error_threshold at its least, 2: the second failure */
    r.p.error_threshold = 2;
    assert_int_equal(step(&r, "bash", "{\"cmd\":\"make -j2\"}", 1, 77, 1000), LOOP_NONE);
    assert_int_equal(step(&r, "bash", "{\"cmd\":\"make -j4\"}", 2, 77, 1000), LOOP_SAME_ERROR);
    /* a success of the tool in between starts it again */
    loop_window_free(&r.w);
    start(&r);
    step(&r, "bash", "{\"cmd\":\"a\"}", 1, 77, 1000);
    step(&r, "bash", "{\"cmd\":\"b\"}", 2, 77, 1000);
    step(&r, "bash", "{\"cmd\":\"ls\"}", 3, 0, 1000);
    assert_int_equal(step(&r, "bash", "{\"cmd\":\"c\"}", 4, 77, 1000), LOOP_NONE);
    /* ... and the failures after it count from there: the third is advised */
    assert_int_equal(step(&r, "bash", "{\"cmd\":\"d\"}", 5, 77, 1000), LOOP_NONE);
    assert_int_equal(step(&r, "bash", "{\"cmd\":\"e\"}", 6, 77, 1000), LOOP_SAME_ERROR);
    loop_window_free(&r.w);
}

static void reworded_free_text_same_answer(void **state)
{
    (void)state;
    struct run r;
    start(&r);
    const char *q[] = {"{\"q\":\"how to set retries\"}", "{\"q\":\"retry settings where\"}",
                       "{\"q\":\"configure the retry policy\"}", "{\"q\":\"set retry count please\"}"};
    int got[4];
    for (int i = 0; i < 4; i++)
        got[i] = step(&r, "search_docs", q[i], 9, 0, 15000);
    int want[4] = {0, 0, 0, LOOP_REASKED};
    assert_memory_equal(got, want, sizeof got);
    /* an empty answer is not counted */
    loop_window_free(&r.w);
    start(&r);
    for (int i = 0; i < 4; i++) {
        struct loop_call c = ident("search_docs", q[i]);
        r.t += 1000;
        c.at = r.t;
        c.result = 5;
        c.flags |= LOOP_EMPTY;
        struct loop_finding f;
        char other[64];
        loop_observe(&r.w, &r.p, &c, "search_docs", &f, other);
        assert_false(f.advise);
    }
    loop_window_free(&r.w);
}

static void alternation_at_six(void **state)
{
    (void)state;
    struct run r;
    start(&r);
    int got[12];
    for (int i = 0; i < 12; i++)
        got[i] =
            step(&r, i % 2 ? "run_tests" : "read_file", i % 2 ? "{}" : "{\"path\":\"a.c\"}", i % 2 ? 5 : 6, 0, 10000);
    int want[12] = {0, 0, 0, 0, 0, LOOP_ALTERNATION, 0, 0, 0, 0, 0, LOOP_ALTERNATION};
    assert_memory_equal(got, want, sizeof got);
    /* edit-build-test: the test output changes each time */
    loop_window_free(&r.w);
    start(&r);
    for (int i = 0; i < 12; i++)
        assert_int_equal(
            step(&r, i % 2 ? "run_tests" : "edit", i % 2 ? "{}" : "{\"path\":\"a.c\"}", (uint64_t)i, 0, 10000),
            LOOP_NONE);
    loop_window_free(&r.w);
}

static void a_changing_world_ends_a_repeat(void **state)
{
    (void)state;
    struct run r;
    start(&r);
    /* a debugger: the same evaluation between steps that each show a new line */
    for (int k = 0; k < 6; k++) {
        step(&r, "debugger_next", "{\"thread\":1}", 100 + (uint64_t)k % 2, 0, 2000);
        assert_int_equal(step(&r, "debugger_evaluate", "{\"expression\":\"locals\"}", 7, 0, 2000), LOOP_NONE);
    }
    loop_window_free(&r.w);
    /* the same evaluation with only new, different calls in between is a loop */
    start(&r);
    const char *files[] = {"{\"path\":\"a\"}", "{\"path\":\"b\"}", "{\"path\":\"c\"}"};
    for (int k = 0; k < 3; k++) {
        step(&r, "read_file", files[k], 200 + (uint64_t)k, 0, 2000);
        assert_int_equal(step(&r, "debugger_evaluate", "{\"expression\":\"locals\"}", 7, 0, 2000), LOOP_NONE);
    }
    assert_int_equal(step(&r, "debugger_evaluate", "{\"expression\":\"locals\"}", 7, 0, 2000), LOOP_REPEAT);
    loop_window_free(&r.w);
}

static void a_poll_waited_for_is_not_a_repeat(void **state)
{
    (void)state;
    struct run r;
    start(&r);
    /* a job's status checked every 90 s, nothing else in between: waiting */
    for (int k = 0; k < 8; k++)
        assert_int_equal(step(&r, "get_run", "{\"id\":7}", 5, 0, 90000), LOOP_NONE);
    loop_window_free(&r.w);
    /* checked quickly, it is a repeat; and 90 s apart with the agent busy in between, too */
    start(&r);
    for (int k = 0; k < 3; k++)
        assert_int_equal(step(&r, "get_run", "{\"id\":7}", 5, 0, 5000), LOOP_NONE);
    assert_int_equal(step(&r, "get_run", "{\"id\":7}", 5, 0, 5000), LOOP_REPEAT);
    loop_window_free(&r.w);
    start(&r);
    char args[32];
    for (int k = 0; k < 4; k++) {
        snprintf(args, sizeof args, "{\"path\":\"f%d\"}", k);
        step(&r, "read_file", args, 300 + (uint64_t)k, 0, 45000);
        assert_int_equal(step(&r, "get_run", "{\"id\":7}", 5, 0, 45000), k == 3 ? LOOP_REPEAT : LOOP_NONE);
    }
    loop_window_free(&r.w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(identity_is_canonical),
        cmocka_unit_test(free_text_is_blanked_in_the_shape),
        cmocka_unit_test(repeat_fires_at_the_fourth_then_every_third),
        cmocka_unit_test(a_changed_result_is_progress),
        cmocka_unit_test(different_files_are_work),
        cmocka_unit_test(the_window_forgets),
        cmocka_unit_test(the_window_as_it_moves),
        cmocka_unit_test(the_reason_says_how_long),
        cmocka_unit_test(the_same_error_with_varied_arguments),
        cmocka_unit_test(a_changing_world_ends_a_repeat),
        cmocka_unit_test(a_poll_waited_for_is_not_a_repeat),
        cmocka_unit_test(reworded_free_text_same_answer),
        cmocka_unit_test(alternation_at_six),
        cmocka_unit_test(calls_before_the_window_are_left_out),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
