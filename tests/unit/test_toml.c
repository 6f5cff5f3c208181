/* test_toml.c: the TOML reader against tests/toml/ (documents whose labels
 * were checked with another TOML 1.0 implementation: every valid one must
 * give exactly its tagged JSON, every invalid one must be refused with a
 * line), and the spans keel install edits by. */
#include "toml.h"

#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *b = malloc(1 << 20);
    *n = b ? fread(b, 1, (1 << 20) - 1, f) : 0;
    if (b)
        b[*n] = '\0';
    fclose(f);
    return b;
}

/* Tagged JSON equal, floats by value (the expected files spell them as
 * Python does: 1e+100, 0.1; keel as %.17g). */
static int same(const cJSON *a, const cJSON *b)
{
    if (cJSON_IsObject(a) && cJSON_GetObjectItemCaseSensitive(a, "type") &&
        cJSON_IsString(cJSON_GetObjectItem(a, "value"))) {
        const char *ta = cJSON_GetStringValue(cJSON_GetObjectItem(a, "type"));
        const char *tb = cJSON_GetStringValue(cJSON_GetObjectItem(b, "type"));
        const char *va = cJSON_GetStringValue(cJSON_GetObjectItem(a, "value"));
        const char *vb = cJSON_GetStringValue(cJSON_GetObjectItem(b, "value"));
        if (!ta || !tb || !va || !vb || strcmp(ta, tb))
            return 0;
        if (!strcmp(ta, "float")) {
            double x = strtod(va, NULL), y = strtod(vb, NULL);
            return (isnan(x) && isnan(y)) || (x == y && signbit(x) == signbit(y));
        }
        return !strcmp(va, vb);
    }
    if (cJSON_IsObject(a) != cJSON_IsObject(b) || cJSON_IsArray(a) != cJSON_IsArray(b))
        return 0;
    if (cJSON_GetArraySize(a) != cJSON_GetArraySize(b))
        return 0;
    const cJSON *x;
    if (cJSON_IsArray(a)) {
        const cJSON *y = b->child;
        cJSON_ArrayForEach(x, a) {
            if (!y || !same(x, y))
                return 0;
            y = y->next;
        }
        return 1;
    }
    cJSON_ArrayForEach(x, a) {
        const cJSON *y = cJSON_GetObjectItemCaseSensitive(b, x->string);
        if (!y || !same(x, y))
            return 0;
    }
    return 1;
}

static int each(const char *sub, int (*check)(const char *path, const char *name))
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/tests/toml/%s", KEEL_SOURCE_DIR, sub);
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0, bad = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 6 || strcmp(e->d_name + l - 5, ".toml"))
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        n++;
        bad += !check(path, e->d_name);
    }
    closedir(d);
    assert_true(n >= 50);
    return bad;
}

static int valid_one(const char *path, const char *name)
{
    size_t n = 0, jn = 0;
    char *s = slurp(path, &n), jpath[1100];
    snprintf(jpath, sizeof jpath, "%.*s.json", (int)(strlen(path) - 5), path);
    char *js = slurp(jpath, &jn);
    struct toml_error err;
    struct toml_node *t = toml_parse(s, n, &err);
    cJSON *want = js ? cJSON_Parse(js) : NULL, *got = t ? toml_to_json(t, 1) : NULL;
    int ok = t && want && got && same(want, got) && same(got, want);
    /* keel refuses U+0000 in a string on purpose (a C string would end there). */
    if (!t && strstr(name, "nul") && strstr(err.message, "U+0000"))
        ok = 1;
    if (!ok)
        print_message("# valid/%s: %s %d:%d\n", name, t ? "differs" : err.message, err.line, err.column);
    cJSON_Delete(want);
    cJSON_Delete(got);
    toml_free(t);
    free(s);
    free(js);
    return ok;
}

static int invalid_one(const char *path, const char *name)
{
    size_t n = 0;
    char *s = slurp(path, &n);
    struct toml_error err;
    struct toml_node *t = toml_parse(s, n, &err);
    int ok = !t && err.line >= 1 && err.column >= 1 && err.message[0];
    if (!ok)
        print_message("# invalid/%s: accepted\n", name);
    toml_free(t);
    free(s);
    return ok;
}

static void every_valid_document_reads_as_its_json(void **state)
{
    (void)state;
    assert_int_equal(each("valid", valid_one), 0);
}

static void every_invalid_document_is_refused_with_a_place(void **state)
{
    (void)state;
    assert_int_equal(each("invalid", invalid_one), 0);
}

static struct toml_node *parse(const char *s, struct toml_error *err)
{
    return toml_parse(s, strlen(s), err);
}

static void integers_stay_within_64_bits(void **state)
{
    (void)state;
    struct toml_error err;
    struct toml_node *t = parse("a = 9223372036854775807\nb = -9223372036854775808\n", &err);
    assert_non_null(t);
    toml_free(t);
    assert_null(parse("a = 9223372036854775808\n", &err));
    assert_null(parse("a = -9223372036854775809\n", &err));
    assert_null(parse("a = 0x8000000000000000\n", &err));
}

static void errors_name_line_and_column(void **state)
{
    (void)state;
    struct toml_error err;
    assert_null(parse("[a]\nx = 1\nx = 2\n", &err));
    assert_int_equal(err.line, 3);
    assert_int_equal(err.column, 1);
    assert_non_null(strstr(err.message, "x"));
    assert_null(parse("a = \"é\" b\n", &err)); /* the column counts characters */
    assert_int_equal(err.line, 1);
    assert_int_equal(err.column, 9);
    assert_null(parse("[mcp_servers.a]\n[mcp_servers.a]\n", &err));
    assert_int_equal(err.line, 2);
    /* a byte-order mark, alone or before the document: named, at 1:1 */
    for (int k = 0; k < 2; k++) {
        err.line = err.column = 0;
        assert_null(parse(k ? "\xEF\xBB\xBF" : "\xEF\xBB\xBF[a]\nx = 1\n", &err));
        assert_int_equal(err.line, 1);
        assert_int_equal(err.column, 1);
        assert_non_null(strstr(err.message, "byte-order mark"));
    }
}

static void depth_is_bounded(void **state)
{
    (void)state;
    char s[4096];
    size_t k = 0;
    k += (size_t)snprintf(s, sizeof s, "a = ");
    for (int i = 0; i < 200; i++)
        s[k++] = '[';
    s[k] = '\0';
    struct toml_error err;
    assert_null(parse(s, &err));
    assert_non_null(strstr(err.message, "deeper"));
}

/* The spans keel install splices by. */
static void spans_locate_keys_values_and_lines(void **state)
{
    (void)state;
    const char *s = "# c\n[mcp_servers.docs]\ncommand = 'npx'   # the docs\nargs = [\n  \"-y\",\n  \"docs\",\n]\n"
                    "mcp_servers.x = { command = \"uvx\", args = [] }\n";
    struct toml_error err;
    struct toml_node *t = parse("x = 1\n", &err);
    toml_free(t);
    /* mcp_servers.x after [mcp_servers.docs] is a key of docs: x.command. */
    t = parse(s, &err);
    assert_non_null(t);
    struct toml_node *docs = toml_get(toml_get(t, "mcp_servers"), "docs");
    struct toml_node *cmd = toml_get(docs, "command"), *args = toml_get(docs, "args");
    assert_non_null(cmd);
    assert_memory_equal(s + cmd->at, "'npx'", cmd->end - cmd->at);
    assert_int_equal(cmd->end - cmd->at, 5);
    assert_memory_equal(s + cmd->line_at, "command", 7);
    assert_int_equal(s[cmd->line_end - 1], '\n');
    assert_memory_equal(s + cmd->line_end, "args", 4);
    assert_int_equal(args->nkids, 2);
    assert_memory_equal(s + args->first->at, "\"-y\"", 4);
    assert_int_equal(s[args->end - 1], ']');
    struct toml_node *inl = toml_get(toml_get(toml_get(docs, "mcp_servers"), "x"), "command");
    assert_non_null(inl);
    assert_true(inl->in_inline);
    assert_memory_equal(s + inl->at, "\"uvx\"", 5);
    toml_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_valid_document_reads_as_its_json),
        cmocka_unit_test(every_invalid_document_is_refused_with_a_place),
        cmocka_unit_test(integers_stay_within_64_bits),
        cmocka_unit_test(errors_name_line_and_column),
        cmocka_unit_test(depth_is_bounded),
        cmocka_unit_test(spans_locate_keys_values_and_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
