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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(finds_top_level_members),
        cmocka_unit_test(works_on_truncated_heads),
    };
    cmocka_set_message_output(CM_OUTPUT_TAP);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
