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

/* /dev/shm/keel-fuzz-NAME-PID (memory, so that a harness whose target
 * writes the state file is not held up by the disk; /tmp where there is no
 * /dev/shm), also set as KEEL_STATE_DIR. */
static const char *fuzz_dir_make(const char *name)
{
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(fuzz_dir, sizeof fuzz_dir, "%s/keel-fuzz-%s-%d", base, name, (int)getpid());
    setenv("KEEL_STATE_DIR", fuzz_dir, 1);
    atexit(fuzz_dir_remove);
    return fuzz_dir;
}

#endif
