/* test_jscan.c: top-level member lookup, on whole and truncated text. */
#include "jscan.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
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
    assert_string_equal(v, "-12");                /* nested "id" is not the top-level one */
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
    assert_int_equal(find("{\"id\":12", "id", v), 0);   /* the number may go on */
}

static int valid(const char *s)
{
    return jscan_valid(s, strlen(s));
}

static void validates_json(void **state)
{
    (void)state;
    static const char *const good[] = {
        "{}", "[]", " {\"a\":[1,2.5e-3,-0,true,false,null,\"x\\u00e9\\n\"]} ", "0", "\"s\"", "[[[[]]]]",
        "{\"a\":{\"b\":{}}}", "-12.5E+10", "{\"\":\"\"}", NULL};
    static const char *const bad[] = {
        "", " ", "{", "}", "{\"a\"}", "{\"a\":}", "{\"a\":1,}", "[1,]", "[1 2]", "{a:1}", "01", "1.", ".5", "-",
        "1e", "tru", "nul", "\"unterminated", "\"bad \\x escape\"", "\"\\u12g4\"", "{} {}", "{\"a\":1}x",
        "\"tab\there\"", "[\"a\":1]", "{\"a\",1}", NULL};
    for (int i = 0; good[i]; i++)
        if (!valid(good[i]))
            fail_msg("should be valid: %s", good[i]);
    for (int i = 0; bad[i]; i++)
        if (valid(bad[i]))
            fail_msg("should be invalid: %s", bad[i]);
    char deep[10000];
    memset(deep, '[', 5000);
    memset(deep + 5000, ']', 5000);
    assert_false(jscan_valid(deep, sizeof deep));   /* deeper than 4096: refused, no crash */
    memset(deep, '[', 4000);
    memset(deep + 4000, ']', 4000);
    assert_true(jscan_valid(deep, 8000));
}

static void finds_nul_escapes(void **state)
{
    (void)state;
    const char *a = "{\"t\":\"a\\u0000b\"}", *b = "{\"t\":\"a\\\\u0000b\"}", *c = "{\"u0000\":1}";
    assert_true(jscan_has_nul_escape(a, strlen(a)));
    assert_false(jscan_has_nul_escape(b, strlen(b)));   /* an escaped backslash, then text */
    assert_false(jscan_has_nul_escape(c, strlen(c)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(finds_top_level_members),
        cmocka_unit_test(works_on_truncated_heads),
        cmocka_unit_test(validates_json),
        cmocka_unit_test(finds_nul_escapes),
    };
    cmocka_set_message_output(CM_OUTPUT_TAP);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
