/* fuzzdir.h: a private directory for a harness that writes state, removed
 * when the harness exits. */
#ifndef KEEL_FUZZDIR_H
#define KEEL_FUZZDIR_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char fuzz_dir[64];

static void fuzz_dir_remove(void)
{
    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf %s", fuzz_dir);
    if (system(cmd) != 0)
        return;
}

/* /tmp/keel-fuzz-NAME-PID, also set as KEEL_STATE_DIR. */
static const char *fuzz_dir_make(const char *name)
{
    snprintf(fuzz_dir, sizeof fuzz_dir, "/tmp/keel-fuzz-%s-%d", name, (int)getpid());
    setenv("KEEL_STATE_DIR", fuzz_dir, 1);
    atexit(fuzz_dir_remove);
    return fuzz_dir;
}

#endif
