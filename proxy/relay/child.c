/* child.c: spawn, watch and stop the upstream (see child.h). */
#include "child.h"

#include "platform.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void cloexec(int fd)
{
    fcntl(fd, F_SETFD, FD_CLOEXEC);
}

/* The watchdog: a small process of its own (forked twice, so init reaps
 * it) that holds the read end of a pipe from keel. keel writes it the group
 * of each server it starts, and 0 when it has stopped that server itself.
 * If the pipe ends with a group still guarded (keel was killed, even by
 * SIGKILL), the watchdog ends the group: SIGTERM, then SIGKILL 2 s later.
 * PR_SET_PDEATHSIG reaches only the server itself; this reaches what it
 * started in its group too. */
static int watchdog_fd = -1;

static void watchdog_run(int rfd)
{
    signal(SIGINT, SIG_IGN); /* a Ctrl-C is for keel, which stops the server itself */
    signal(SIGHUP, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
        dup2(null, 0), dup2(null, 1), dup2(null, 2);
    }
    for (int fd = 3; fd < 1024; fd++) /* the server's pipes must see their EOF */
        if (fd != rfd)
            close(fd);
    int32_t group = 0, v;
    ssize_t n;
    while ((n = read(rfd, &v, sizeof v)) == (ssize_t)sizeof v || (n < 0 && errno == EINTR))
        if (n > 0)
            group = v;
    if (group > 0) {
        kill(-group, SIGTERM);
        sleep(2);
        kill(-group, SIGKILL);
    }
    _exit(0);
}

static void watchdog_guard(int32_t group)
{
    if (watchdog_fd < 0) {
        int p[2];
        if (pipe(p) < 0)
            return;
        pid_t a = fork();
        if (a == 0) {
            close(p[1]);
            if (fork() == 0)
                watchdog_run(p[0]);
            _exit(0);
        }
        close(p[0]);
        if (a < 0) {
            close(p[1]);
            return;
        }
        while (waitpid(a, NULL, 0) < 0 && errno == EINTR)
            ;
        cloexec(p[1]);
        watchdog_fd = p[1];
    }
    if (write(watchdog_fd, &group, sizeof group) < 0)
        return; /* no watchdog: PR_SET_PDEATHSIG still covers the server */
}

int child_spawn(struct child *c, char *const argv[], const char *cwd, char *const env_add[], char *err, size_t errn)
{
    int in[2], out[2], ep[2];
    memset(c, 0, sizeof *c);
    c->in_fd = c->out_fd = -1;
    if (pipe(in) < 0 || pipe(out) < 0 || pipe(ep) < 0) {
        snprintf(err, errn, "pipe: %s", strerror(errno));
        return -1;
    }
    cloexec(in[1]);
    cloexec(out[0]);
    cloexec(ep[0]);
    cloexec(ep[1]);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errn, "fork: %s", strerror(errno));
        close(in[0]), close(in[1]), close(out[0]), close(out[1]), close(ep[0]), close(ep[1]);
        return -1;
    }
    if (pid == 0) {
        int e = 0;
        const char *step = "exec";
        setpgid(0, 0);
        signal(SIGPIPE, SIG_DFL);
        signal(SIGXFSZ, SIG_DFL);
        if (platform_die_with_parent((int)parent) < 0)
            _exit(127);
        if (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0)
            e = errno, step = "dup2";
        for (int i = 0; !e && env_add && env_add[i]; i++)
            if (putenv(env_add[i]) != 0)
                e = errno, step = "--env";
        if (!e && cwd && chdir(cwd) < 0)
            e = errno, step = "--cwd";
        if (!e) {
            close(in[0]);
            close(out[1]);
            execvp(argv[0], argv);
            e = errno;
        }
        char msg[96];
        int n = snprintf(msg, sizeof msg, "%s:%d", step, e);
        if (write(ep[1], msg, (size_t)n) < 0)
            _exit(127);
        _exit(127);
    }
    setpgid(pid, pid); /* also here, so the group exists before we signal it */
    close(in[0]);
    close(out[1]);
    close(ep[1]);
    char msg[96];
    ssize_t n;
    do
        n = read(ep[0], msg, sizeof msg - 1);
    while (n < 0 && errno == EINTR);
    close(ep[0]);
    if (n > 0) { /* exec (or a step before it) failed */
        msg[n] = '\0';
        char *colon = strchr(msg, ':');
        int e = colon ? atoi(colon + 1) : 0;
        if (colon)
            *colon = '\0';
        if (!strcmp(msg, "exec"))
            snprintf(err, errn, "%s", strerror(e));
        else
            snprintf(err, errn, "%s: %s", msg, strerror(e));
        close(in[1]);
        close(out[0]);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        return -1;
    }
    c->pid = pid;
    c->in_fd = in[1];
    c->out_fd = out[0];
    watchdog_guard((int32_t)pid);
    fcntl(c->in_fd, F_SETFL, fcntl(c->in_fd, F_GETFL) | O_NONBLOCK);
    return 0;
}

int child_poll(struct child *c)
{
    if (c->reaped)
        return 1;
    if (!c->pid)
        return 0;
    pid_t w = waitpid(c->pid, &c->status, WNOHANG);
    if (w == c->pid) {
        c->reaped = 1;
        return 1;
    }
    return 0;
}

static int wait_for(struct child *c, int ms)
{
    for (int waited = 0; waited <= ms; waited += 10) {
        if (child_poll(c))
            return 1;
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    return child_poll(c);
}

void child_stop(struct child *c, int grace_ms)
{
    if (c->in_fd >= 0) {
        close(c->in_fd);
        c->in_fd = -1;
    }
    if (!c->pid)
        return;
    if (!wait_for(c, grace_ms)) {
        kill(-c->pid, SIGTERM);
        kill(c->pid, SIGTERM);
        if (!wait_for(c, grace_ms)) {
            kill(-c->pid, SIGKILL);
            kill(c->pid, SIGKILL);
            while (!c->reaped && waitpid(c->pid, &c->status, 0) < 0 && errno == EINTR)
                ;
            c->reaped = 1;
        }
    }
    /* Helpers the server left in its group go too. */
    kill(-c->pid, SIGKILL);
    watchdog_guard(0); /* done: nothing for the watchdog to do */
}

int child_exit_code(const struct child *c)
{
    if (WIFEXITED(c->status))
        return WEXITSTATUS(c->status);
    if (WIFSIGNALED(c->status))
        return 128 + WTERMSIG(c->status);
    return 1;
}
