/* child.h: the upstream server process.
 *
 * Started with its own process group (so it and its helpers can be signalled
 * together), the full environment of keel plus --env additions, its stdin and
 * stdout on pipes to keel and its stderr on keel's stderr, untouched. It dies
 * with keel (platform.h). An exec failure is reported back through a
 * close-on-exec pipe, so "command not found" is an error here, not a child
 * that exits 127 later. */
#ifndef KEEL_CHILD_H
#define KEEL_CHILD_H

#include <sys/types.h>

struct child {
    pid_t pid; /* 0 when none */
    int in_fd; /* keel writes the child's stdin here (-1 when closed) */
    int out_fd; /* keel reads the child's stdout here */
    int status; /* wait status once reaped */
    int reaped;
};

/* 0, or -1 with a message in err (errno-based: "No such file or directory"). */
int child_spawn(struct child *c, char *const argv[], const char *cwd, char *const env_add[], char *err, size_t errn);

/* Reaps without blocking; 1 when the child has exited (status set). */
int child_poll(struct child *c);

/* The orderly end: close stdin, wait up to grace_ms for an exit, SIGTERM the
 * process group, wait grace_ms, SIGKILL, reap. */
void child_stop(struct child *c, int grace_ms);

/* Exit code keel should use for the child's wait status (128+signal if killed). */
int child_exit_code(const struct child *c);

#endif
