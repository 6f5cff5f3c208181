/* fuzz_state.c: the state file reader on any bytes at state.json: the
 * session and guard views every tool and overlay read (chrono_read_state,
 * guard_read) and a write after it (mark_session_start through the tool
 * entry). Oracles: no crash, no leak; whatever was there, the state is
 * readable afterwards (a file keel cannot use is moved aside, never trusted). */
#include "chrono.h"
#include "fuzzdir.h"
#include "guard.h"
#include "profile.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct profile prof;
static const char *dir;
static char file[96];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    dir = fuzz_dir_make("state");
    snprintf(file, sizeof file, "%s/state.json", dir);
    setenv("KEEL_NOW", "2026-05-16T12:00:00+01:00", 1);
    profile_load_text(&prof, "", 0);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct chrono_env env = {{0, 0}, &prof, dir, 0, NULL};
    kerr e = {0};
    if (chrono_now(&env.now, &e) < 0)
        abort();
    cJSON *s = chrono_read_state(&env, &e); /* creates the directory */
    cJSON_Delete(s);
    FILE *f = fopen(file, "wb");
    if (!f)
        return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    memset(&e, 0, sizeof e);
    s = chrono_read_state(&env, &e);
    cJSON_Delete(s);
    struct guard_view v;
    memset(&e, 0, sizeof e);
    guard_read(&env, 30, &v, &e);
    memset(&e, 0, sizeof e);
    s = chrono_read_state(&env, &e); /* readable now, whatever was there */
    if (!s)
        abort();
    cJSON_Delete(s);
    /* the copies moved aside, removed without a shell (a process a run
     * held the harness to 67 runs a second) */
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d)))
        if (!strncmp(de->d_name, "state.json.corrupt-", 19)) {
            char p[160];
            snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
            unlink(p);
        }
    if (d)
        closedir(d);
    return 0;
}
