/* test_jscan.c: top-level member lookup, on whole and truncated text. */
#include "jscan.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

static int find(const char *s, const char *key, char *out)
{
    const char *v;
    size_t n;
    int rc = jscan_member(s, strlen(s), key, &v, &n);
    if (rc == 1) {
        memcpy(out, v, n);
        out[n] = '\0';
    }
    return rc;
}

static void finds_top_level_members(void **state)
{
    (void)state;
    char v[256];
    assert_int_equal(find("{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"x\"}", "id", v), 1);
    assert_string_equal(v, "0");
    assert_int_equal(find(" { \"method\" : \"tools/call\" , \"id\" : \"a\\\"b\" } ", "id", v), 1);
    assert_string_equal(v, "\"a\\\"b\"");
    assert_int_equal(find("{\"params\":{\"id\":1,\"s\":\"}{][\"},\"id\":-12}", "id", v), 1);
    assert_string_equal(v, "-12"); /* nested "id" is not the top-level one */
    assert_int_equal(find("{\"params\":[1,{\"a\":[2]}],\"method\":\"m\"}", "method", v), 1);
    assert_string_equal(v, "\"m\"");
    assert_int_equal(find("{\"a\":1}", "id", v), 0);
    assert_int_equal(find("[{\"id\":1}]", "id", v), -1);
    assert_int_equal(find("", "id", v), -1);
}

static void works_on_truncated_heads(void **state)
{
    (void)state;
    char v[256];
    assert_int_equal(find("{\"jsonrpc\":\"2.0\",\"id\":42,\"params\":{\"text\":\"aaaa", "id", v), 1);
    assert_string_equal(v, "42");
    assert_int_equal(find("{\"params\":{\"text\":\"aaaa", "id", v), 0);
    assert_int_equal(find("{\"id\":12", "id", v), 0); /* the number may go on */
}

static int valid(const char *s)
{
    return jscan_valid(s, strlen(s));
}

static void validates_json(void **state)
{
    (void)state;
    static const char *const good[] = {"{}",
                                       "[]",
                                       " {\"a\":[1,2.5e-3,-0,true,false,null,\"x\\u00e9\\n\"]} ",
                                       "0",
                                       "\"s\"",
                                       "[[[[]]]]",
                                       "{\"a\":{\"b\":{}}}",
                                       "-12.5E+10",
                                       "{\"\":\"\"}",
                                       NULL};
    static const char *const bad[] = {"",
                                      " ",
                                      "{",
                                      "}",
                                      "{\"a\"}",
                                      "{\"a\":}",
                                      "{\"a\":1,}",
                                      "[1,]",
                                      "[1 2]",
                                      "{a:1}",
                                      "01",
                                      "1.",
                                      ".5",
                                      "-",
                                      "1e",
                                      "tru",
                                      "nul",
                                      "\"unterminated",
                                      "\"bad \\x escape\"",
                                      "\"\\u12g4\"",
                                      "{} {}",
                                      "{\"a\":1}x",
                                      "\"tab\there\"",
                                      "[\"a\":1]",
                                      "{\"a\",1}",
                                      NULL};
    for (int i = 0; good[i]; i++)
        if (!valid(good[i]))
            fail_msg("should be valid: %s", good[i]);
    for (int i = 0; bad[i]; i++)
        if (valid(bad[i]))
            fail_msg("should be invalid: %s", bad[i]);
    /* Nesting: exactly what cJSON takes (1000), so the two parsers agree. */
    char deep[10000];
    memset(deep, '[', 5000);
    memset(deep + 5000, ']', 5000);
    assert_false(jscan_valid(deep, sizeof deep)); /* refused, no crash */
    for (int d = JSCAN_MAX_DEPTH - 1; d <= JSCAN_MAX_DEPTH + 1; d++) {
        memset(deep, '[', (size_t)d);
        memset(deep + d, ']', (size_t)d);
        cJSON *v = cJSON_ParseWithLength(deep, 2 * (size_t)d);
        assert_int_equal(jscan_valid(deep, 2 * (size_t)d), v != NULL);
        assert_int_equal(d <= 1000, v != NULL);
        cJSON_Delete(v);
    }
}

/* jscan_parse: a lone surrogate escape reads as U+FFFD; pairs and escaped
 * backslashes are left alone; what jscan refuses, it refuses. */
static void parses_lone_surrogates(void **state)
{
    (void)state;
    static const struct {
        const char *json, *want;
    } cases[] = {
        {"\"cut \\ud83d\"", "cut \xef\xbf\xbd"},
        {"\"\\udc00x\"", "\xef\xbf\xbdx"},
        {"\"\\udc00\\udc00\"", "\xef\xbf\xbd\xef\xbf\xbd"}, /* two low halves: no pair */
        {"\"\\ud83d\\ude00\"", "\xf0\x9f\x98\x80"}, /* a pair: the emoji */
        {"\"\\ud83d\\ud83d\\ude00\"", "\xef\xbf\xbd\xf0\x9f\x98\x80"},
        {"\"\\\\ud83d\"", "\\ud83d"}, /* an escaped backslash, then text */
        {"\"a\\u0041\"", "aA"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cJSON *v = jscan_parse(cases[i].json, strlen(cases[i].json));
        if (!cJSON_IsString(v) || strcmp(v->valuestring, cases[i].want))
            fail_msg("case %zu: %s", i, cases[i].json);
        cJSON_Delete(v);
    }
    assert_null(jscan_parse("{\"a\":1,}", 8));
    assert_null(jscan_parse("\"\\ud83d\" x", 10));
}

static void finds_nul_escapes(void **state)
{
    (void)state;
    const char *a = "{\"t\":\"a\\u0000b\"}", *b = "{\"t\":\"a\\\\u0000b\"}", *c = "{\"u0000\":1}";
    assert_true(jscan_has_nul_escape(a, strlen(a)));
    assert_false(jscan_has_nul_escape(b, strlen(b))); /* an escaped backslash, then text */
    assert_false(jscan_has_nul_escape(c, strlen(c)));
    /* written over as U+FFFD, the escaped backslash and the key left alone */
    char x[] = "{\"t\":\"a\\u0000b\\u0000\",\"u\":\"a\\\\u0000b\"}";
    assert_int_equal(jscan_nul_escapes_replaced(x, strlen(x)), 2);
    assert_string_equal(x, "{\"t\":\"a\\uFFFDb\\uFFFD\",\"u\":\"a\\\\u0000b\"}");
    assert_false(jscan_has_nul_escape(x, strlen(x)));
}

/* Fed in pieces, at every split and a byte at a time, the stream agrees with
 * the whole-text scan, and keeps the top-level id whole. */
static int fed_in_pieces(const char *s, size_t n, size_t step, size_t split, char *id, size_t *idn)
{
    struct jstream j;
    jstream_init(&j);
    size_t at = 0, used;
    while (at < n) {
        size_t k = at < split ? split - at : step;
        if (k > n - at)
            k = n - at;
        if (jstream_feed(&j, s + at, k, &used) < 0)
            return 0;
        at += k;
    }
    if (!jstream_end(&j))
        return 0;
    /* What the stream found is what the whole-text scan finds. */
    struct jscan_top a, b;
    jstream_top(&j, s, &a);
    assert_true(jscan_scan(s, n, &b));
    assert_int_equal(a.first, b.first);
    assert_int_equal(a.dup, b.dup);
    const struct jscan_span *sa[] = {&a.id, &a.method, &a.params, &a.result, &a.error, &a.jsonrpc},
                            *sb[] = {&b.id, &b.method, &b.params, &b.result, &b.error, &b.jsonrpc};
    for (int x = 0; x < 6; x++) {
        assert_ptr_equal(sa[x]->p, sb[x]->p);
        assert_int_equal(sa[x]->n, sb[x]->n);
    }
    /* result's members, against a walk of the result object (jscan_members) */
    static const char *const rk[JSCAN_NRESULT] = {"content", "structuredContent", "isError", "resultType", "_meta"};
    struct jscan_span want[JSCAN_NRESULT] = {{0}};
    if (b.result.p && b.result.p[0] == '{')
        jscan_members(b.result.p, b.result.n, rk, want, JSCAN_NRESULT, 0);
    for (int x = 0; x < JSCAN_NRESULT; x++) {
        assert_ptr_equal(a.rm[x].p, want[x].p);
        assert_int_equal(a.rm[x].n, want[x].n);
    }
    *idn = 0;
    if (j.top[JSCAN_ID].present && !j.top[JSCAN_ID].cut) {
        memcpy(id, j.top[JSCAN_ID].raw, j.top[JSCAN_ID].rawn);
        *idn = j.top[JSCAN_ID].rawn;
    }
    return 1;
}

static void validates_in_pieces(void **state)
{
    (void)state;
    static const char *const docs[] = {
        "{\"jsonrpc\":\"2.0\",\"id\":\"a\\\"b\\u00e9\",\"result\":{\"content\":[{\"text\":\"x\\ny\"}]}}",
        "{\"id\":1,\"result\":{\"_meta\":{\"content\":1},\"isError\":true,\"content\":[{\"content\":[]}],"
        "\"structuredContent\":{\"isError\":false},\"resultType\":\"complete\",\"content\":\"second\"}}",
        "{\"params\":{\"content\":[1]},\"result\":[{\"content\":2}],\"x\":{\"isError\":true}}",
        "{\"result\":{\"cont\\u0065nt\":[1],\"isError\" : 7 ,\"_meta\":null}, \"id\":2}",
        "{\"result\":{\"content\":[]},\"result\":{\"content\":[9]}}",
        "{\"result\":{\"n\":[1,-2.5e+3,0,true,false,null]},\"jsonrpc\":\"2.0\",\"id\":12345}\r",
        " {\"id\" : -0.5E2 , \"method\":\"m\"} ",
        "{\"params\":{\"id\":1},\"id\":7}",
        "[1,{\"id\":2}]",
        "42",
        "{\"id\":1,\"id\":2}",
        "{\"result\":\"unterminated",
        "{\"id\":12",
        "{\"a\":1}x",
        "[1,]",
        "-",
        "{\"id\":\"bad \\x\"}",
        "\"\\u12g4\"",
        "{\"a\":tru}",
        NULL};
    for (int d = 0; docs[d]; d++) {
        const char *s = docs[d];
        size_t n = strlen(s);
        struct jscan_top top;
        int want = jscan_scan(s, n, &top);
        for (size_t split = 0; split <= n; split++)
            for (size_t step = 1; step <= 3; step += 2) {
                char id[64];
                size_t idn;
                int got = fed_in_pieces(s, n, step, split, id, &idn);
                if (got != want)
                    fail_msg("doc %d split %zu step %zu: %d, whole says %d", d, split, step, got, want);
                if (got && (idn != (top.id.p ? top.id.n : 0) || (idn && memcmp(id, top.id.p, idn))))
                    fail_msg("doc %d split %zu step %zu: id %.*s", d, split, step, (int)idn, id);
            }
    }
    struct jstream j; /* the first byte that cannot be JSON is reported */
    jstream_init(&j);
    size_t used;
    assert_int_equal(jstream_feed(&j, "{\"a\":[1,2}", 10, &used), -1);
    assert_int_equal(used, 9);
}

/* What the relay reads of a result object while it streams it: where each
 * member starts and ends, its first byte, whether an array or object member
 * holds anything, and whether the result is an object with any member. The
 * same whichever way the line is cut into pieces. */
static void tells_result_members_apart(void **state)
{
    (void)state;
    static const struct {
        const char *doc;
        int obj, any;
        const char *firsts; /* content, structuredContent, isError, resultType, _meta ('-': absent) */
        const char *items; /* '1' where the member holds something */
    } cases[] = {
        {"{\"id\":1,\"result\":{\"content\":[ ],\"_meta\":{\"a\":1}}}", 1, 1, "[---{", "00001"},
        {"{\"result\":{\"content\":[{\"t\":\"x\"}],\"isError\":true,\"structuredContent\":{}},\"id\":2}", 1, 1, "[{t--",
         "10000"},
        {"{\"result\":{ },\"id\":3}", 1, 0, "-----", "00000"},
        {"{\"result\":{\"other\":[1]},\"id\":3}", 1, 1, "-----", "00000"},
        {"{\"result\":[{\"content\":[1]}],\"id\":4}", 0, 0, "-----", "00000"},
        {"{\"params\":{\"content\":[1]},\"result\":{\"resultType\":\"complete\",\"_meta\":{}}}", 1, 1, "---\"{",
         "00000"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const char *s = cases[c].doc;
        size_t n = strlen(s), used;
        for (size_t split = 0; split <= n; split++) {
            struct jstream j;
            jstream_init(&j);
            assert_int_equal(jstream_feed(&j, s, split, &used), 0);
            assert_int_equal(jstream_feed(&j, s + split, n - split, &used), 0);
            assert_true(jstream_end(&j));
            if (j.result_obj != cases[c].obj || j.result_any != cases[c].any)
                fail_msg("doc %zu split %zu: result object %d, with members %d", c, split, j.result_obj, j.result_any);
            for (int x = 0; x < JSCAN_NRESULT; x++) {
                char want = cases[c].firsts[x];
                if (want == '-' ? j.rm[x].present : !j.rm[x].present || j.rm[x].first != want)
                    fail_msg("doc %zu split %zu member %d: present %d first %c", c, split, x, j.rm[x].present,
                             j.rm[x].first);
                if (j.rm[x].items != (cases[c].items[x] == '1'))
                    fail_msg("doc %zu split %zu member %d: holds something %d", c, split, x, j.rm[x].items);
                if (j.rm[x].present && (s[j.rm[x].start] != want || !j.rm[x].end || j.rm[x].end <= j.rm[x].start))
                    fail_msg("doc %zu split %zu member %d: span %zu..%zu", c, split, x, j.rm[x].start, j.rm[x].end);
            }
        }
    }
}

/* Walking an array's elements: each in turn, nested ones stepped over,
 * whitespace anywhere; none in an empty array; and a prefix cut inside the
 * array gives only the elements it holds whole (the last may be cut). */
static void walks_array_elements(void **state)
{
    (void)state;
    static const char a[] = "[ 1 , {\"a\":[2,\"]\"]} ,\"x,y\",[] ]";
    static const char *const want[] = {"1 ", "{\"a\"", "\"x,y\"", "[] "};
    size_t pos = 0, k = 0;
    const char *v;
    while (jscan_array_next(a, sizeof a - 1, &pos, &v)) {
        assert_true(k < 4);
        assert_memory_equal(v, want[k], strlen(want[k]));
        k++;
    }
    assert_int_equal(k, 4);
    pos = 0;
    assert_false(jscan_array_next("[ ]", 3, &pos, &v));
    pos = 0;
    k = 0;
    while (jscan_array_next(a, 20, &pos, &v)) /* the first 20 bytes: up to the object and a space */
        k++;
    assert_int_equal(k, 2);
    assert_int_equal(jscan_value_end(a, sizeof a - 1, 6), 19); /* the object ends after its brace */
}

/* A control byte in a string is refused and a byte of 0x80 or more is not,
 * wherever it falls: at every position of strings up to 200 bytes, so each
 * width the scan steps by (8, 16, and 32 once a string passes 64) meets it
 * at every offset, in keys and in values. */
static void strings_at_every_width(void **state)
{
    (void)state;
    char s[300];
    for (size_t len = 1; len < 200; len++)
        for (size_t at = 0; at < len; at++)
            for (int in_key = 0; in_key < 2; in_key++) {
                size_t k = 0;
                k += (size_t)snprintf(s + k, sizeof s - k, in_key ? "{\"" : "{\"k\":\"");
                size_t body = k;
                memset(s + k, 'a', len);
                k += len;
                k += (size_t)snprintf(s + k, sizeof s - k, in_key ? "\":1}" : "\"}");
                s[body + at] = '\xc3'; /* a byte of 0x80 or more (UTF-8 is route.c's to check) */
                if (!jscan_valid(s, k))
                    fail_msg("len %zu at %zu key %d: a high byte refused", len, at, in_key);
                s[body + at] = '\x1f';
                if (jscan_valid(s, k))
                    fail_msg("len %zu at %zu key %d: a control byte passed", len, at, in_key);
                s[body + at] = '"';
                if (jscan_valid(s, k))
                    fail_msg("len %zu at %zu key %d: a quote inside did not end the string", len, at, in_key);
            }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(finds_top_level_members),
        cmocka_unit_test(works_on_truncated_heads),
        cmocka_unit_test(validates_json),
        cmocka_unit_test(finds_nul_escapes),
        cmocka_unit_test(parses_lone_surrogates),
        cmocka_unit_test(validates_in_pieces),
        cmocka_unit_test(tells_result_members_apart),
        cmocka_unit_test(walks_array_elements),
        cmocka_unit_test(strings_at_every_width),
    };
    cmocka_set_message_output(CM_OUTPUT_TAP);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
