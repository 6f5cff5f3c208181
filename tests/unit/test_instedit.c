/* test_instedit.c: the small text helpers keel install builds its edits
 * with: a JSON pointer member escaped (RFC 6901) and cut whole at the
 * buffer's end, a path quoted for a POSIX shell, and a hook command known
 * for keel's however it is quoted. */
#include "cfgdiff.h"
#include "cfgjson.h"
#include "install.h"
#include "instedit.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void pointers_escape_and_stop_whole(void **state)
{
    (void)state;
    char p[64] = "";
    inst_ptr_add(p, sizeof p, "mcpServers");
    inst_ptr_add(p, sizeof p, "team/docs~v2");
    assert_string_equal(p, "/mcpServers/team~1docs~0v2");
    /* a buffer of 8: the slash, five bytes, the NUL; never an escape cut in two */
    char s[8] = "";
    inst_ptr_add(s, sizeof s, "abcdefghij");
    assert_string_equal(s, "/abcde");
    s[0] = '\0';
    inst_ptr_add(s, sizeof s, "abcd~x"); /* the escape fits, whole */
    assert_string_equal(s, "/abcd~0");
    s[0] = '\0';
    inst_ptr_add(s, sizeof s, "abcde~x"); /* it does not: it is left out */
    assert_string_equal(s, "/abcde");
    char full[3] = "ab"; /* no room for even the slash */
    inst_ptr_add(full, sizeof full, "c");
    assert_string_equal(full, "ab");
}

static void paths_quoted_for_a_shell(void **state)
{
    (void)state;
    char q[64];
    inst_shell_quote(q, sizeof q, "/usr/local/bin/keel");
    assert_string_equal(q, "/usr/local/bin/keel");
    inst_shell_quote(q, sizeof q, "/opt/it's $(x) dir/keel");
    assert_string_equal(q, "'/opt/it'\\''s $(x) dir/keel'");
    /* cut at the buffer's end, still closed: room is kept for a quote's four
     * bytes, the closing quote and the NUL */
    char small[12];
    inst_shell_quote(small, sizeof small, "/a b'c d e f");
    assert_string_equal(small, "'/a b'\\'''");
    inst_shell_quote(small, sizeof small, "/abcd efgh");
    assert_string_equal(small, "'/abcd'");
}

static void keel_s_hook_however_quoted(void **state)
{
    (void)state;
    for (int exact = 0; exact < 2; exact++) {
        assert_true(inst_is_keel_hook("/usr/local/bin/keel hook Stop", exact));
        assert_true(inst_is_keel_hook("'/opt/my dir/keel' hook Stop", exact));
        assert_true(inst_is_keel_hook("\"/opt/my dir/keel\" hook Stop", exact));
        assert_true(inst_is_keel_hook("\"/opt/a \\\"q\\\" dir/keel\" hook Stop", exact));
        assert_true(inst_is_keel_hook("/opt/my\\ dir/keel hook Stop", exact));
        assert_true(inst_is_keel_hook("/usr/bin/keel hook UserPromptSubmit --host codex", exact));
        assert_false(inst_is_keel_hook("my-notify hook done", exact));
        assert_false(inst_is_keel_hook("keel wrap -- npx server", exact));
        assert_false(inst_is_keel_hook("/opt/keel-lint hook", exact));
        assert_false(inst_is_keel_hook("keel", exact));
        assert_false(inst_is_keel_hook("", exact));
    }
    /* keel's, but otherwise than keel install writes (keel found on PATH,
     * more words): the person's own */
    static const char *const more[] = {"  keel\thook",
                                       "keel hook UserPromptSubmit --host codex",
                                       "keel hook Stop | tee /tmp/log",
                                       "keel hook Stop; ./notify.sh",
                                       "/opt/keel/bin/keel hook Stop --log-level debug",
                                       "keel hook Stop --host",
                                       "keel hook 'Stop;x'"};
    for (size_t i = 0; i < sizeof more / sizeof more[0]; i++) {
        assert_true(inst_is_keel_hook(more[i], 0));
        assert_false(inst_is_keel_hook(more[i], 1));
    }
}

/* install_edit_text (the fuzz harness's way in): install, then uninstall on
 * its result, gives the text back, in each format; a text with nothing to
 * change gives NULL and no reason. */
static void install_then_uninstall_gives_the_text_back(void **state)
{
    (void)state;
    static const struct {
        int fmt, hooks;
        const char *text, *has;
    } v[] = {
        {0, 1, "{\"mcpServers\": {\"a\": {\"command\": \"npx\"}}}\n", "\"hooks\": {"},
        {1, 1, "{\n  // mine\n  \"mcpServers\": {\"a\": {\"command\": \"npx\"}}\n}\n", "AfterAgent"},
        {2, 0, "[mcp_servers.a]\ncommand = \"npx\"\n", "args = [\"wrap\", \"--\", \"npx\"]"},
        /* CRLF, no line break at the end: keel's args line goes with its CRLF */
        {2, 0, "[mcp_servers.docs]\r\ncommand = \"npx\"", "\r\nargs = [\"wrap\", \"--\", \"npx\"]"},
        {2, 0, "x = 1\r\nmcp_servers.a.command = \"npx\"", "args"},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        char why[300];
        char *in =
            install_edit_text(v[i].text, strlen(v[i].text), v[i].fmt, v[i].hooks, 0, "/usr/bin/keel", why, sizeof why);
        if (!in)
            fail_msg("format %d: no install (%s)", v[i].fmt, why);
        assert_non_null(strstr(in, "/usr/bin/keel"));
        assert_non_null(strstr(in, v[i].has));
        char *out = install_edit_text(in, strlen(in), v[i].fmt, v[i].hooks, 1, "/usr/bin/keel", why, sizeof why);
        assert_non_null(out);
        assert_string_equal(out, v[i].text);
        free(out);
        free(in);
    }
    char why[300] = "x";
    assert_null(install_edit_text("{}\n", 3, 0, 0, 0, "/usr/bin/keel", why, sizeof why));
    assert_string_equal(why, "");
}

/* What the printed diff masks: a string's text that looks like a credential
 * wherever it stands, and the flags whose next argument is a header. */
static void what_looks_like_a_credential(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        int secret;
    } ex[] = {
        {"sk-abc", 1},
        {"sk-", 0}, /* a prefix alone is no token */
        {"ghp_x", 1},
        {"AKIA2E0A", 1},
        {"eyJhbGc", 1},
        {"xoxb-1", 1},
        {"Authorization: Bearer 8f3k2j", 1},
        {"Basic dXNlcjpwYXNz", 1},
        {"token abc", 1},
        {"Bearer", 0}, /* the word, with nothing after it */
        {"--token=abc", 1},
        {"X-Api-Key: abc", 1},
        {"api_key=", 1},
        {"Content-Type: application/json", 0},
        {"level=debug", 0},
        {"=abc", 0}, /* no name before the sign */
        {"https://user:p4ss@mcp.example.com/sse", 1},
        {"postgresql://admin:hunter2@db.example.com/prod", 1},
        {"https://example.com:8443/path", 0}, /* a port, no password */
        {"https://user@example.com/", 0}, /* a user, no password */
        {"https://example.com/a:b@c", 0}, /* past the host, it is the path's */
        {"https://example.com/?q=a:b@c", 0},
        {"https://h#a:b@c", 0},
        {"mailto:a:b@c", 0}, /* no :// */
        {"abcdefghijklmnopqrstuvwxyzabcdef://u:p@h", 0}, /* a scheme is short: 32 letters are no scheme */
        {"abcdefghijklmnopqrstuvwxyzabcde://u:p@h", 1}, /* 31 are */
        {"s://u:p@h", 1},
        {"://u:p@h", 1},
        {"plain text with a: colon", 0},
        /* a token's prefix wherever a word starts; a key in a query or a path */
        {"AIzaSyW02abcdefghijklmnopqrstuvwxyz0123", 1},
        {"https://h/x/ghp_W04abc/sse", 1},
        {"https://actions.zapier.com/mcp/sk-ak-abc/sse", 1},
        {"task-sk-board", 0}, /* inside a word: no token */
        {"https://h/mcp?key=W08", 1},
        {"https://h/mcp?page=2&access_token=x", 1},
        {"https://h/mcp?monkey=1", 0},
        {"https://mcp.zapier.com/api/mcp/s/ZjA3NmQ5YzktMzQ1Ny00YjU0LWE5OTAt/mcp", 1},
        {"some_long_identifier_without_digits_at_all_here", 0},
        {"SomeLongIdentifierWithoutAnyDigitsAtAllHereToo", 0}, /* both cases, no digit: a word */
        {"https://h/aaaaaaaaaaaaaaaaaaaa/BBBBBBBBBBBBBBBBBBBB/12345", 0}, /* each segment on its own */
        {"--key=W09", 1},
        {"@modelcontextprotocol/server-filesystem", 0},
    };
    for (size_t i = 0; i < sizeof ex / sizeof *ex; i++)
        if (cfg_secret_text(ex[i].s, strlen(ex[i].s)) != ex[i].secret)
            fail_msg("\"%s\": %d, expected %d", ex[i].s, !ex[i].secret, ex[i].secret);
    assert_true(cfg_header_flag("--header", 8));
    assert_true(cfg_header_flag("-H", 2));
    assert_false(cfg_header_flag("--headers", 9));
    assert_false(cfg_header_flag("--heade", 7));
    assert_false(cfg_header_flag("-H=", 3));
    assert_false(cfg_header_flag("-", 1));
    assert_false(cfg_header_flag("-h", 2));
    /* a name of 64 bytes or more before its sign is no name keel reads */
    char longname[80];
    memset(longname, 'a', 70);
    memcpy(longname + 60, "token=x", 8);
    assert_false(cfg_secret_text(longname, strlen(longname)));
    memcpy(longname + 50, "token=x", 8);
    assert_true(cfg_secret_text(longname, strlen(longname)));
    memset(longname, 'a', 70);
    memcpy(longname + 58, "token=x", 8); /* the sign the 64th byte: still read */
    assert_true(cfg_secret_text(longname, strlen(longname)));
}

/* In a file: the argument after --header or -H is masked, in JSON and TOML,
 * and the one after it is not; a string of either kind that looks like a
 * credential is masked wherever it stands. */
static void header_arguments_are_masked(void **state)
{
    (void)state;
    static const struct {
        enum fmt fmt;
        const char *text, *secret, *plain;
    } ex[] = {
        {FMT_JSON, "{\"a\": {\"args\": [\"--header\", \"X-Team: 42\", \"next\"]}}", "\"X-Team: 42\"", "\"next\""},
        {FMT_JSON, "{\"a\": {\"args\": [\"-H\", \"X-Team: 42\", \"next\"]}}", "\"X-Team: 42\"", "\"next\""},
        {FMT_TOML, "[a]\nargs = [\"--header\", \"X-Team: 42\", \"next\"]\n", "\"X-Team: 42\"", "\"next\""},
        {FMT_TOML, "[a]\nargs = [\"-H\", \"X-Team: 42\", \"next\"]\n", "\"X-Team: 42\"", "\"next\""},
        {FMT_TOML, "[a]\nurl = \"https://u:p@h/\"\nname = \"x\"\n", "\"https://u:p@h/\"", "\"x\""},
        {FMT_JSON, "{\"a\": {\"args\": [\"--verbose\", \"X-Team: 42\"]}}", NULL, "\"X-Team: 42\""},
        {FMT_JSON, "{\"a\": \"\"}", NULL, "\"\""},
    };
    for (size_t i = 0; i < sizeof ex / sizeof *ex; i++) {
        static struct cfg_span sp[SECRETS_MAX];
        size_t n = strlen(ex[i].text);
        int k = inst_secrets_of(ex[i].fmt, ex[i].text, n, sp);
        int secret = 0, plain = 0;
        for (int j = 0; j < k; j++) {
            size_t l = sp[j].end - sp[j].at;
            secret |= ex[i].secret && l == strlen(ex[i].secret) && !memcmp(ex[i].text + sp[j].at, ex[i].secret, l);
            plain |= l == strlen(ex[i].plain) && !memcmp(ex[i].text + sp[j].at, ex[i].plain, l);
        }
        if (secret != (ex[i].secret != NULL) || plain)
            fail_msg("%zu: the secret %s, the plain one %s", i, secret ? "masked" : "not masked",
                     plain ? "masked" : "shown");
    }
}

/* The diff keel prints for one splice: whole lines taken out or put in at
 * the top, in the middle and at the bottom show no other line as changed,
 * and each hunk's header counts its lines. */
static void a_diff_is_the_change(void **state)
{
    (void)state;
    static const struct {
        const char *a;
        size_t at, del;
        const char *ins, *want;
    } ex[] = {
        {"a\nb\nc\n", 2, 2, "", "@@ -1,3 +1,2 @@\n a\n-b\n c\n"},
        {"a\nb\n", 0, 2, "", "@@ -1,2 +1,1 @@\n-a\n b\n"},
        {"a\nb\n", 2, 2, "", "@@ -1,2 +1,1 @@\n a\n-b\n"},
        {"a\nb\nc\nd\n", 2, 4, "", "@@ -1,4 +1,2 @@\n a\n-b\n-c\n d\n"},
        {"a\nb\n", 2, 0, "x\n", "@@ -1,2 +1,3 @@\n a\n+x\n b\n"},
        {"a\nb\n", 0, 0, "x\n", "@@ -1,2 +1,3 @@\n+x\n a\n b\n"},
        {"a\nb\n", 4, 0, "x\n", "@@ -1,2 +1,3 @@\n a\n b\n+x\n"},
        {"a\nbc\nd\n", 3, 1, "", "@@ -1,3 +1,3 @@\n a\n-bc\n+b\n d\n"},
        {"1\n2\n3\n4\n5\n6\n7\n8\n", 8, 2, "", "@@ -3,5 +3,4 @@\n 3\n 4\n-5\n 6\n 7\n"},
        {"", 0, 0, "x\n", "@@ -0,0 +1,1 @@\n+x\n"},
    };
    for (size_t i = 0; i < sizeof ex / sizeof *ex; i++) {
        struct cfg_edit e = {ex[i].at, ex[i].del, ex[i].ins, strlen(ex[i].ins)};
        size_t bn;
        char *b = cfgdiff_apply(ex[i].a, strlen(ex[i].a), &e, 1, &bn), *got = NULL;
        size_t gn = 0;
        FILE *f = open_memstream(&got, &gn);
        assert_non_null(b);
        assert_non_null(f);
        cfgdiff_print(f, "/f", ex[i].a, strlen(ex[i].a), NULL, 0, b, bn, NULL, 0, &e, 1);
        fclose(f);
        const char *hunk = strstr(got, "@@");
        if (!hunk || strcmp(hunk, ex[i].want))
            fail_msg("%zu: %s", i, got);
        free(got);
        free(b);
    }
}

/* Trees compared member by member, whatever the order of an object's
 * members; a set of pointers and a manifest's merge hold each once. */
static void trees_and_pointer_sets(void **state)
{
    (void)state;
    static const char *const pairs[][3] = {
        {"{\"a\":1,\"b\":{\"c\":[1,2]}}", "{\"b\":{\"c\":[1,2]},\"a\":1}", "1"},
        {"{\"a\":1,\"b\":2,\"c\":3}", "{\"a\":1,\"c\":3,\"b\":2}", "1"},
        {"{\"a\":1,\"b\":2}", "{\"a\":1,\"b\":3}", "0"},
        {"{\"a\":1,\"b\":2}", "{\"b\":2,\"c\":1}", "0"},
        {"{\"a\":1,\"b\":2}", "{\"a\":1}", "0"},
        {"{\"a\":1,\"b\":2,\"c\":3}", "{\"a\":1,\"c\":3,\"d\":2}", "0"},
        {"[1,{\"x\":\"y\"}]", "[1,{\"x\":\"y\"}]", "1"},
        {"[1,2]", "[2,1]", "0"},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) {
        cJSON *a = cJSON_Parse(pairs[i][0]), *b = cJSON_Parse(pairs[i][1]);
        if (cfg_json_equal(a, b) != (pairs[i][2][0] == '1') || cfg_json_equal(b, a) != (pairs[i][2][0] == '1'))
            fail_msg("%zu: %s and %s", i, pairs[i][0], pairs[i][1]);
        cJSON_Delete(a);
        cJSON_Delete(b);
    }
    struct ptrset set = {0};
    char names[3000][16];
    for (int i = 0; i < 3000; i++) {
        snprintf(names[i], sizeof names[i], "/m/s%d", i);
        assert_int_equal(inst_ptrset_add(&set, names[i]), 0);
    }
    assert_int_equal(inst_ptrset_add(&set, "/m/s7"), 1);
    assert_true(inst_ptrset_has(&set, "/m/s2999/args", 8) && inst_ptrset_has(&set, "/m/s0", 5));
    assert_false(inst_ptrset_has(&set, "/m/s", 4) || inst_ptrset_has(&set, "/m/s3000", 8));
    assert_int_equal((int)set.n, 3000);
    inst_ptrset_free(&set);
    cJSON *m = cJSON_Parse("[\"/hooks\",\"/hooks/Stop\",7]"), *add = cJSON_Parse("[\"/hooks/Stop\",\"/x\",\"/x\"]");
    cJSON *merged = inst_manifest_merge(m, add);
    char *text = cJSON_PrintUnformatted(merged);
    assert_string_equal(text, "[\"/hooks\",\"/hooks/Stop\",\"/x\"]");
    struct plan p = {0};
    assert_true(inst_manifest_has(&p, merged, "/x") && inst_manifest_has(&p, merged, "/hooks"));
    assert_false(inst_manifest_has(&p, merged, "/hook") || inst_manifest_has(&p, m, "/x"));
    assert_true(inst_manifest_has(&p, m, "/hooks/Stop"));
    inst_plan_free(&p);
    free(text);
    cJSON_Delete(m);
    cJSON_Delete(add);
    cJSON_Delete(merged);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pointers_escape_and_stop_whole), cmocka_unit_test(paths_quoted_for_a_shell),
        cmocka_unit_test(keel_s_hook_however_quoted),     cmocka_unit_test(install_then_uninstall_gives_the_text_back),
        cmocka_unit_test(what_looks_like_a_credential),   cmocka_unit_test(header_arguments_are_masked),
        cmocka_unit_test(a_diff_is_the_change),           cmocka_unit_test(trees_and_pointer_sets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
