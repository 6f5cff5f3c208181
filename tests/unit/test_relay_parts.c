/* test_relay_parts.c: the relay's small parts: argument splitting, the
 * pending-request table, the output queue over a real non-blocking pipe. */
#include "argsplit.h"
#include "jscan.h"
#include "jsonrpc.h"
#include "outq.h"
#include "overlay.h"
#include "pending.h"
#include "relay.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void splits_like_a_shell_without_one(void **state)
{
    (void)state;
    const char *err = NULL;
    char **v = argsplit("npx -y  'my server' \"a \\\"b\\\" $HOME\" c\\ d e''f", &err);
    assert_non_null(v);
    const char *want[] = {"npx", "-y", "my server", "a \"b\" $HOME", "c d", "ef", NULL};
    for (int i = 0; want[i]; i++)
        assert_string_equal(v[i], want[i]);
    assert_null(v[6]);
    free(v);
    assert_null(argsplit("a 'b", &err));
    assert_string_equal(err, "unterminated quote");
    assert_null(argsplit("a \"b", &err));
    assert_null(argsplit("   ", &err));
    assert_string_equal(err, "empty command");
    v = argsplit("''", &err); /* an empty argument is still an argument */
    assert_non_null(v);
    assert_string_equal(v[0], "");
    assert_null(v[1]);
    free(v);
}

static void drained_id(const char *id, size_t idn, int kind, void *ctx)
{
    (void)kind;
    memcpy(ctx, id, idn < 7 ? idn : 7);
}

static void pending_keys_on_direction_and_raw_id(void **state)
{
    (void)state;
    struct pending p = {0};
    int kind;
    assert_int_equal(pending_add(&p, FROM_CLIENT, "0", 1, PK_INITIALIZE, NULL), 0);
    assert_int_equal(pending_add(&p, FROM_SERVER, "0", 1, PK_OTHER, NULL), 0); /* the same id, the other way */
    assert_int_equal(pending_add(&p, FROM_CLIENT, "\"0\"", 3, PK_TOOLS_LIST, NULL), 0);
    assert_int_equal(pending_take(&p, FROM_CLIENT, "0", 1, &kind, NULL), 1);
    assert_int_equal(kind, PK_INITIALIZE);
    assert_int_equal(pending_take(&p, FROM_CLIENT, "0", 1, &kind, NULL), 0); /* taken once */
    assert_int_equal(pending_take(&p, FROM_SERVER, "0", 1, &kind, NULL), 1);
    assert_int_equal(pending_take(&p, FROM_CLIENT, "\"0\"", 3, &kind, NULL), 1);
    assert_int_equal(kind, PK_TOOLS_LIST);
    /* Many in flight, through several resizes and tombstones. */
    char id[32];
    for (int i = 0; i < 5000; i++) {
        int n = snprintf(id, sizeof id, "%d", i);
        assert_int_equal(pending_add(&p, FROM_CLIENT, id, (size_t)n, PK_OTHER, NULL), 0);
        if (i % 2) {
            n = snprintf(id, sizeof id, "%d", i - 1);
            assert_int_equal(pending_take(&p, FROM_CLIENT, id, (size_t)n, &kind, NULL), 1);
        }
    }
    assert_int_equal(p.live, 2500);
    int count = 0;
    pending_drain(&p, FROM_CLIENT, NULL, NULL);
    for (int i = 1; i < 5000; i += 2) {
        int n = snprintf(id, sizeof id, "%d", i);
        count += pending_take(&p, FROM_CLIENT, id, (size_t)n, &kind, NULL);
    }
    assert_int_equal(count, 0); /* drained */
    assert_int_equal(p.live, 0);
    pending_free(&p);
}

/* An id written back otherwise than it came is the same id: a string by its
 * value, a number by its value; different values stay apart. */
static void pending_keys_on_what_an_id_is(void **state)
{
    (void)state;
    static const char *const same[][2] = {
        {"\"req-\\u00e9-1\"", "\"req-\xC3\xA9-1\""}, /* é escaped, and as UTF-8 */
        {"\"\\u0041\"", "\"A\""}, /* an escaped ASCII letter */
        {"\"a\\/b\"", "\"a/b\""}, /* an escaped slash */
        {"\"\\ud83d\\ude00\"", "\"\xF0\x9F\x98\x80\""}, /* a surrogate pair, and the emoji */
        {"\"\\ud83d\"", "\"\xEF\xBF\xBD\""}, /* a lone surrogate reads as U+FFFD */
        {"1.0", "1"},
        {"1e3", "1000"},
        {"1E+3", "1000"},
        {"10e-1", "1"},
        {"0.05", "5e-2"},
        {"100.50", "1005e-1"},
        {"-0", "0"},
        {"0.0", "0"},
        {"-2.5e1", "-25"},
        {"12345678901234567890123", "12345678901234567890123"},
    };
    static const char *const apart[][2] = {
        {"1", "\"1\""},
        {"1", "-1"},
        {"1", "10"},
        {"1.5", "15"},
        {"0.05", "0.5"},
        {"\"a\"", "\"A\""},
        {"\"a\\\\\"", "\"a\\/\""},
        {"12345678901234567890123", "12345678901234567890124"},
        {"1e1000000000", "1e1000000001"}, /* exponents past nine digits: compared as written */
    };
    int kind;
    for (size_t i = 0; i < sizeof same / sizeof *same; i++) {
        struct pending p = {0};
        assert_int_equal(pending_add(&p, FROM_CLIENT, same[i][0], strlen(same[i][0]), PK_TOOLS_CALL, NULL), 0);
        if (pending_take(&p, FROM_CLIENT, same[i][1], strlen(same[i][1]), &kind, NULL) != 1)
            fail_msg("%s written back as %s: not found", same[i][0], same[i][1]);
        assert_int_equal(kind, PK_TOOLS_CALL);
        pending_free(&p);
    }
    for (size_t i = 0; i < sizeof apart / sizeof *apart; i++) {
        struct pending p = {0};
        assert_int_equal(pending_add(&p, FROM_CLIENT, apart[i][0], strlen(apart[i][0]), PK_OTHER, NULL), 0);
        if (pending_kind(&p, FROM_CLIENT, apart[i][1], strlen(apart[i][1])) != -1)
            fail_msg("%s and %s taken for one id", apart[i][0], apart[i][1]);
        pending_free(&p);
    }
    /* what a pending request is answered with on a drain: its id as it came */
    struct pending p = {0};
    assert_int_equal(pending_add(&p, FROM_CLIENT, "1.0", 3, PK_OTHER, NULL), 0);
    char got[8] = "";
    pending_drain(&p, FROM_CLIENT, drained_id, got);
    assert_string_equal(got, "1.0");
    pending_free(&p);
}

static void outq_keeps_order_when_the_reader_is_slow(void **state)
{
    (void)state;
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    fcntl(fd[1], F_SETFL, O_NONBLOCK);
    struct outq q;
    outq_init(&q, fd[1]);
    char line[1000];
    memset(line, 'a', sizeof line);
    for (int i = 0; i < 500; i++) { /* ~500 KB: far more than a pipe holds */
        line[0] = (char)('A' + i % 26);
        assert_int_equal(outq_line(&q, line, sizeof line), 0);
        if (i % 7 == 0)
            assert_int_equal(outq_flush(&q), 0); /* writes what fits, never blocks */
    }
    assert_true(q.bytes > 0); /* the rest is queued, nothing lost */
    size_t total = 0;
    int i = 0;
    char buf[1001];
    size_t have = 0;
    while (total < 500 * 1001) {
        outq_flush(&q);
        ssize_t got = read(fd[0], buf + have, sizeof buf - have);
        assert_true(got > 0);
        have += (size_t)got;
        total += (size_t)got;
        if (have == sizeof buf) {
            assert_int_equal(buf[0], 'A' + i % 26); /* in order */
            assert_int_equal(buf[1000], '\n');
            have = 0;
            i++;
        }
    }
    assert_int_equal(i, 500);
    assert_int_equal(q.bytes, 0);
    close(fd[0]); /* the reader leaves */
    assert_int_equal(outq_line(&q, "x", 1), 0);
    assert_int_equal(outq_flush(&q), -1);
    assert_int_equal(q.failed, 1);
    assert_int_equal(outq_line(&q, "y", 1), 0); /* later lines are dropped quietly */
    assert_int_equal(q.bytes, 0);
    outq_free(&q);
    close(fd[1]);
}

static char *annotated(const char *line, const char *adv_json)
{
    struct jscan_top top;
    assert_true(jscan_scan(line, strlen(line), &top));
    cJSON *adv = cJSON_Parse(adv_json);
    char *out = relay_annotate(line, strlen(line), &top.result, adv);
    cJSON_Delete(adv);
    assert_non_null(out);
    assert_true(jscan_valid(out, strlen(out))); /* always valid JSON */
    return out;
}

static void annotation_is_a_splice(void **state)
{
    (void)state;
    const char *adv = "[{\"detector\":\"rumination\",\"confidence\":0.8,\"reason\":\"again\","
                      "\"override_options\":[{\"token\":\"override-once\",\"description\":\"x\"}]}]";
    const char *low = "[{\"detector\":\"sycophancy\",\"confidence\":0.4,\"reason\":\"maybe\",\"override_options\":[]}]";
    char *o =
        annotated("{\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"hi\"}],\"structuredContent\":{\"n\":1e400}},"
                  "\"jsonrpc\":\"2.0\",\"id\":9007199254740993}",
                  adv);
    assert_non_null(strstr(o, "\"structuredContent\":{\"n\":1e400}")); /* untouched bytes */
    assert_non_null(strstr(o, "\"id\":9007199254740993}"));
    assert_non_null(
        strstr(o, "{\"type\":\"text\",\"text\":\"hi\"},{\"type\":\"text\",\"text\":\"keel advisory (rumination)"));
    assert_non_null(strstr(o, "\"result\":{\"_meta\":{\"keel/advisories\":[{\"detector\":\"rumination\""));
    free(o);
    o = annotated("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}", adv); /* empty result */
    cJSON *j = cJSON_Parse(o);
    cJSON *res = cJSON_GetObjectItem(j, "result");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(res, "content")), 1);
    assert_non_null(cJSON_GetObjectItem(cJSON_GetObjectItem(res, "_meta"), "keel/advisories"));
    cJSON_Delete(j);
    free(o);
    o = annotated("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[ ],\"_meta\":{}}}", adv);
    assert_non_null(strstr(o, "\"content\":[ {\"type\":\"text\"")); /* no stray comma */
    assert_non_null(strstr(o, "\"_meta\":{\"keel/advisories\":"));
    free(o);
    o = annotated("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"isError\":true,\"_meta\":{\"a\":1}}}", adv);
    j = cJSON_Parse(o);
    res = cJSON_GetObjectItem(j, "result");
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(res, "_meta"), "a")->valueint, 1);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(res, "content")), 1); /* content added */
    cJSON_Delete(j);
    free(o);
    o = annotated("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}", low);
    assert_non_null(strstr(o, "\"content\":[]")); /* low confidence: no text block */
    assert_non_null(strstr(o, "keel/advisories"));
    free(o);
}

static void finds_ids_written_last(void **state)
{
    (void)state;
    const char *v;
    size_t n;
    const char *a = "xxxx\"}]},\"jsonrpc\":\"2.0\",\"id\":42}";
    assert_int_equal(jscan_tail_id(a, strlen(a), &v, &n), 1);
    assert_int_equal(n, 2);
    assert_memory_equal(v, "42", 2);
    const char *b = "zz\"},\"id\" : \"a\\\"b\" }\n";
    assert_int_equal(jscan_tail_id(b, strlen(b), &v, &n), 1);
    assert_memory_equal(v, "\"a\\\"b\"", n);
    const char *c = "{\"inner\":{\"id\":5}}"; /* a nested id is not it */
    assert_int_equal(jscan_tail_id(c, strlen(c), &v, &n), 0);
    const char *d = "\"text\":\"x\"}";
    assert_int_equal(jscan_tail_id(d, strlen(d), &v, &n), 0);
}

static void raw_ids_are_strings_or_numbers(void **state)
{
    (void)state;
    static const char *const good[] = {
        "0", "-0", "12", "-7", "1.5", "1e3", "\"\"", "\"a b\"", "\"a\\\"b\"", "123456789012345678901234", NULL};
    /* Echoed byte for byte, so nothing JSON forbids: control characters or
     * spaces around a number (found by fuzz_router), leading zeros, a raw
     * control character in a string. */
    static const char *const bad[] = {"-",  "1-",  "--1",       "\"",        "\"a\"b\"", "null", "true",
                                      "{}", "[1]", "\"a",       "\x0e\x0e2", " 1",       "1 ",   "\t\"a\"",
                                      "01", "-01", "\"a\x01\"", "1.",        ".5",       "+1",   NULL};
    for (int i = 0; good[i]; i++)
        if (!jr_valid_raw_id(good[i], strlen(good[i])))
            fail_msg("should be an id: %s", good[i]);
    for (int i = 0; bad[i]; i++)
        if (jr_valid_raw_id(bad[i], strlen(bad[i])))
            fail_msg("should not be an id: %s", bad[i]);
    assert_false(jr_valid_raw_id(NULL, 0));
}

/* A line written in parts keeps whole lines queued meanwhile out of it. */
/* A tool's printed result, quoted as its text block: read back as a string,
 * it is the print again, whatever quotes, backslashes, control characters
 * and non-ASCII text the values hold. */
static void quotes_a_print_as_a_string(void **state)
{
    (void)state;
    static const char *const values[] = {
        "plain", "a \"quoted\" word", "C:\\dir\\file", "tab\tnew\nline\x01", "caf\xc3\xa9 \xe6\xbc\xa2 \\\"", ""};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, values[i], values[i]);
        cJSON_AddNumberToObject(o, "n", 0.25);
        char *print = cJSON_PrintUnformatted(o), *quoted = jr_quote_printed(print);
        cJSON *back = cJSON_Parse(quoted);
        assert_non_null(back);
        assert_true(cJSON_IsString(back));
        assert_string_equal(back->valuestring, print);
        cJSON_Delete(back);
        free(quoted);
        free(print);
        cJSON_Delete(o);
    }
}

static void a_line_in_parts_holds_others_back(void **state)
{
    (void)state;
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    struct outq q;
    outq_init(&q, fds[1]);
    outq_part(&q, "{\"a\":", 5);
    outq_line(&q, "{\"b\":1}", 7);
    assert_int_equal(q.bytes, 0); /* the part went straight out; the line waits */
    outq_part(&q, "1}", 2);
    outq_end(&q);
    assert_int_equal(outq_flush(&q), 0);
    char buf[64];
    ssize_t n = read(fds[0], buf, sizeof buf);
    assert_int_equal(n, 16);
    assert_memory_equal(buf, "{\"a\":1}\n{\"b\":1}\n", 16);
    outq_free(&q);
    close(fds[0]);
    close(fds[1]);
}

/* One advisory of rumination's with its words, built as the overlay builds
 * one (tokens, NULL-ended). */
static cJSON *advisory_with(const char *det, const char *pattern, double confidence, const char *reason,
                            const char *const *tokens)
{
    cJSON *a = cJSON_CreateObject(), *o = cJSON_AddArrayToObject(a, "override_options");
    cJSON_AddStringToObject(a, "detector", det);
    if (pattern)
        cJSON_AddStringToObject(a, "pattern", pattern);
    cJSON_AddNumberToObject(a, "confidence", confidence);
    cJSON_AddStringToObject(a, "reason", reason);
    for (int i = 0; tokens[i]; i++) {
        cJSON *t = cJSON_CreateObject();
        cJSON_AddStringToObject(t, "token", tokens[i]);
        cJSON_AddItemToArray(o, t);
    }
    return a;
}

/* What the person reads of several advisories on one result: one message,
 * one header naming each detector (and pattern), each reason, and one list
 * of words with each word once, a word that is part of another (once,
 * snooze) still said; one too unsure to say is left to _meta. */
static void one_message_for_what_speaks(void **state)
{
    (void)state;
    static const char *const t1[] = {"snooze-once", "override-once", NULL},
                             *const t2[] = {"once", "snooze", "override-once", NULL}, *const t3[] = {"quiet", NULL};
    cJSON *adv = cJSON_CreateArray();
    cJSON_AddItemToArray(adv, advisory_with("loop", "repeat", 0.9, "First reason.", t1));
    cJSON_AddItemToArray(adv, advisory_with("rules", NULL, 0.9, "Second reason.", t2));
    cJSON_AddItemToArray(adv, advisory_with("sycophancy", "x", 0.1, "Too unsure.", t3));
    char *text = overlay_text(adv);
    assert_non_null(text);
    assert_string_equal(text,
                        "keel advisory (loop, repeat; rules): First reason.\n\nSecond reason.\nIf you want, say one "
                        "of: snooze-once, override-once, once, snooze.");
    free(text);
    cJSON_Delete(adv);
    adv = cJSON_CreateArray();
    cJSON_AddItemToArray(adv, advisory_with("sycophancy", "x", 0.1, "Too unsure.", t3));
    assert_null(overlay_text(adv)); /* nothing said: no message */
    cJSON_Delete(adv);
}

/* The error a failed result says, as the loop compares it: numbers and ids
 * made one ("after 3021 ms" and "after 3044 ms" are one error), an id read
 * after a '-' in a run that is none, and a long run of hex letters read in
 * one pass (it once cost the relay seconds a result). */
static uint64_t error_of(const char *text)
{
    size_t n = strlen(text) + 128;
    char *line = malloc(n);
    snprintf(line, n,
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"%s\"}],"
             "\"isError\":true}}",
             text);
    struct jscan_top top;
    assert_true(jscan_scan(line, strlen(line), &top));
    struct loop_call c = {0};
    relay_outcome(&top, &c);
    free(line);
    return c.error;
}

static void errors_compare_with_numbers_and_ids_made_one(void **state)
{
    (void)state;
    assert_int_equal(error_of("timed out after 3021 ms"), error_of("timed out after 3044 ms"));
    assert_int_equal(error_of("commit 3f2a9c1d0e not found"), error_of("commit 77b0e1aa42 not found"));
    assert_int_equal(error_of("x6e6-C-52daEa2b"), error_of("x6e6-C-99ffEa1c")); /* an id after a '-' */
    assert_int_not_equal(error_of("ENOENT /a/b/tsconfig.json"), error_of("ENOENT /a/b/.eslintrc.json"));
    assert_int_not_equal(error_of("cafe"), error_of("face")); /* short hex words are words */
    size_t n = 1u << 20;
    char *a = malloc(n + 1), *b = malloc(n + 1);
    memset(a, 'A', n), memset(b, 'A', n);
    a[n] = b[n] = '\0';
    b[n - 1] = 'B';
    assert_int_not_equal(error_of(a), error_of(b)); /* a MiB of hex letters: read, and to its end */
    free(a);
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(errors_compare_with_numbers_and_ids_made_one),
        cmocka_unit_test(annotation_is_a_splice),
        cmocka_unit_test(finds_ids_written_last),
        cmocka_unit_test(splits_like_a_shell_without_one),
        cmocka_unit_test(pending_keys_on_direction_and_raw_id),
        cmocka_unit_test(pending_keys_on_what_an_id_is),
        cmocka_unit_test(outq_keeps_order_when_the_reader_is_slow),
        cmocka_unit_test(raw_ids_are_strings_or_numbers),
        cmocka_unit_test(a_line_in_parts_holds_others_back),
        cmocka_unit_test(quotes_a_print_as_a_string),
        cmocka_unit_test(one_message_for_what_speaks),
    };
    signal(SIGPIPE, SIG_IGN); /* as keel does */
    cmocka_set_message_output(CM_OUTPUT_TAP);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
