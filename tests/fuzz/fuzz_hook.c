/* fuzz_hook.c: keel hook's input handling (proxy/hosts/hook.c) on any bytes, for
 * every event keel knows and one it does not. The oracle: no crash, no leak
 * (ASan), and whatever comes out is one JSON object (a host parses it). The
 * input's first byte picks the event and the host. The state goes to a
 * private directory (KEEL_STATE_DIR), the clock is fixed (KEEL_NOW). */
#include "fuzzdir.h"
#include "hook.h"
#include "jscan.h"
#include "profile.h"
#include "rulefile.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct profile prof;
static struct ruleset rules;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_dir_make("hook");
    setenv("KEEL_NOW", "2026-05-15T14:40:00Z", 1);
    setenv("KEEL_PROFILE", "/nonexistent/keel-fuzz-profile.yaml", 1);
    profile_load(&prof, NULL);
    ruleset_load(&rules, &prof, NULL, 0);
    ruleset_current = &rules;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const events[] = {"UserPromptSubmit", "Stop",       "SubagentStop", "SessionStart",
                                         "BeforeAgent",      "AfterAgent", "PreCompact",   NULL};
    if (!size)
        return 0;
    const char *event = events[data[0] % 8]; /* NULL: the event name from the input */
    int host = (data[0] >> 3) % 4;
    char *out = hook_answer((const char *)data + 1, size - 1, event, host, &prof, NULL);
    if (out) {
        cJSON *o = jscan_parse(out, strlen(out));
        if (!cJSON_IsObject(o))
            abort();
        cJSON_Delete(o);
        free(out);
    }
    return 0;
}
