/* test_instedit.c: the small text helpers keel install builds its edits
 * with: a JSON pointer member escaped (RFC 6901) and cut whole at the
 * buffer's end, a path quoted for a POSIX shell, and a hook command known
 * for keel's however it is quoted. */
#include "install.h"
#include "instedit.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
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
        assert_true(inst_is_keel_hook("keel hook UserPromptSubmit --host codex", exact));
        assert_false(inst_is_keel_hook("my-notify hook done", exact));
        assert_false(inst_is_keel_hook("keel wrap -- npx server", exact));
        assert_false(inst_is_keel_hook("/opt/keel-lint hook", exact));
        assert_false(inst_is_keel_hook("keel", exact));
        assert_false(inst_is_keel_hook("", exact));
    }
    /* keel's, but with more than keel install writes: the person's own */
    static const char *const more[] = {"  keel\thook",
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pointers_escape_and_stop_whole),
        cmocka_unit_test(paths_quoted_for_a_shell),
        cmocka_unit_test(keel_s_hook_however_quoted),
        cmocka_unit_test(install_then_uninstall_gives_the_text_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
