/* test_serve.c: serve_handle, one message at a time, in process. */
#include "serve.h"

#include "log.h"

#include <cjson/cJSON.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct profile profile;
static const struct serve_opts opts = {1 << 20, 0xffff, &profile, NULL};

static cJSON *ask(const char *line)
{
    char *r = serve_handle(&opts, line, strlen(line));
    if (!r)
        return NULL;
    cJSON *j = cJSON_Parse(r);
    free(r);
    assert_non_null(j);
    return j;
}

static int error_code(const cJSON *m)
{
    return (int)cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(m, "error"), "code"));
}

static void answers_errors_with_the_right_ids(void **state)
{
    (void)state;
    cJSON *m = ask("not json");
    assert_int_equal(error_code(m), -32700);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(m, "id")));
    cJSON_Delete(m);
    m = ask("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]"); /* a batch: its answers, in one array */
    assert_true(cJSON_IsArray(m));
    assert_int_equal(cJSON_GetArraySize(m), 1);
    assert_int_equal((int)cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetArrayItem(m, 0), "id")), 1);
    cJSON_Delete(m);
    m = ask("[]");
    assert_int_equal(error_code(m), -32600);
    cJSON_Delete(m);
    m = ask("{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"nope\"}");
    assert_int_equal(error_code(m), -32601);
    assert_int_equal((int)cJSON_GetNumberValue(cJSON_GetObjectItem(m, "id")), 0);
    cJSON_Delete(m);
    m = ask("{\"jsonrpc\":\"1.0\",\"id\":\"x\",\"method\":\"ping\"}");
    assert_int_equal(error_code(m), -32600);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(m, "id")), "x");
    cJSON_Delete(m);
    m = ask("{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}");
    assert_int_equal(error_code(m), -32600);
    cJSON_Delete(m);
    m = ask("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"no_such_tool\"}}");
    assert_int_equal(error_code(m), -32602);
    cJSON_Delete(m);
    m = ask("{\"jsonrpc\":\"2.0\",\"id\":1} trailing");
    assert_int_equal(error_code(m), -32700);
    cJSON_Delete(m);
}

static void notifications_and_responses_get_no_answer(void **state)
{
    (void)state;
    assert_null(ask("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}"));
    assert_null(ask("{\"jsonrpc\":\"2.0\",\"method\":\"unknown/notification\",\"params\":{}}"));
    assert_null(ask("{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}"));
    assert_null(ask("   "));
    assert_null(ask(""));
}

static void negotiates_versions(void **state)
{
    (void)state;
    const char *const cases[][2] = {
        {"2024-11-05", "2024-11-05"}, {"2025-03-26", "2025-03-26"}, {"2025-06-18", "2025-06-18"},
        {"2025-11-25", "2025-11-25"}, {"2099-01-01", "2025-11-25"}, {"", "2025-11-25"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char line[256];
        snprintf(line, sizeof line,
                 "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"%s\","
                 "\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}",
                 cases[i][0]);
        cJSON *m = ask(line);
        const cJSON *r = cJSON_GetObjectItem(m, "result");
        assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(r, "protocolVersion")), cases[i][1]);
        assert_non_null(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "capabilities"), "tools"));
        cJSON_Delete(m);
    }
}

int main(void)
{
    log_set_level("error");
    profile_load_text(&profile, "", 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(answers_errors_with_the_right_ids),
        cmocka_unit_test(notifications_and_responses_get_no_answer),
        cmocka_unit_test(negotiates_versions),
    };
    cmocka_set_message_output(CM_OUTPUT_TAP);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
