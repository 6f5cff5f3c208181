/* fuzz_args.c: what a client or a command line hands keel as text: the
 * argument splitter (--command-args), time parsing, and every tool's argument
 * validation through the entry `keel check` uses (tools_run). The first byte
 * picks the target (and the tool). Oracles: no crash, no leak; a time that
 * parses formats back to one that parses to the same instant; a tool answers
 * with an object, a result or an error with a code. */
#include "argsplit.h"
#include "fuzzdir.h"
#include "jscan.h"
#include "profile.h"
#include "timefmt.h"
#include "tools.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct profile prof;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_dir_make("args");
    setenv("KEEL_NOW", "2026-05-16T12:00:00+01:00", 1);
    profile_load_text(&prof, "", 0);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!size)
        return 0;
    char *s = malloc(size);
    if (!s)
        return 0;
    memcpy(s, data + 1, size - 1);
    s[size - 1] = '\0';
    int pick = data[0];
    if (pick < 32) {
        const char *err = NULL;
        char **v = argsplit(s, &err); /* one allocation */
        if (!v && !err)
            abort();
        free(v);
    } else if (pick < 64) {
        int64_t ms, again;
        int off, off2, min;
        if (tf_parse_rfc3339(s, &ms, &off) == 0) {
            char buf[64];
            tf_format_rfc3339(ms, off, buf, sizeof buf);
            /* The format keeps whole seconds (floored, so before 1970 too). */
            int64_t sec = ms / 1000 - (ms % 1000 < 0);
            if (tf_parse_rfc3339(buf, &again, &off2) != 0 || again != sec * 1000 || off2 != off)
                abort();
        }
        tf_parse_hhmm(s, &min);
    } else {
        int k = 0;
        while (tools_table[k].name)
            k++;
        const struct tool *t = &tools_table[pick % k];
        if (t->flags & TOOL_PURE_READ || pick & 1) { /* the state-writing tools less often: they touch disk */
            cJSON *args = jscan_parse(s, size - 1);
            int is_error = 1;
            cJSON *out = tools_run(t, cJSON_IsObject(args) ? args : NULL, &prof, NULL, &is_error);
            if (!cJSON_IsObject(out) ||
                (is_error &&
                 !cJSON_IsString(
                     cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(out, "error"), "code"))))
                abort();
            cJSON_Delete(out);
            cJSON_Delete(args);
        }
    }
    free(s);
    return 0;
}
