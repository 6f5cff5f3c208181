/* wrap.c: the event loop of keel wrap.
 *
 * One thread, one poll(2) over at most five descriptors: the client's stdin
 * and stdout, the upstream's stdin and stdout, and a self-pipe that turns
 * signals (SIGCHLD, SIGINT, SIGTERM, SIGHUP) into readable bytes. Reads
 * happen only when poll says a descriptor is ready; writes never block
 * (outq.h). A side is read only while the queue its messages go to is under
 * HIGH_WATER, so a slow reader slows its writer and memory stays bounded by
 * the messages in flight.
 *
 * Lifecycle. When the upstream's stdout ends and the process is reaped,
 * every request the client is still waiting on is answered with an error at
 * once. With --restart the upstream is started again after a backoff, the
 * client's initialize and initialized are replayed to it, and the client is
 * told notifications/tools/list_changed; otherwise keel exits with the
 * upstream's status. When the client leaves (stdin EOF) or a signal asks keel
 * to stop, keel closes the upstream's stdin, waits up to 2 s while answers
 * are still owed to a client that reads or the upstream is in its first
 * second (250 ms otherwise, so keel does not outlive its client), sends
 * SIGTERM to its process group, waits 2 s more, sends SIGKILL, reaps it and
 * exits. */
#include "wrap.h"
#include "clock.h"

#include "log.h"
#include "platform.h"
#include "relay.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HIGH_WATER (1u << 20)
#define GRACE_MS 2000
#define QUIET_GRACE_MS 250       /* after the client left with nothing in flight */
#define YOUNG_MS 1000            /* an upstream started this recently gets the full grace */
#define BACKOFF_FIRST_MS 250
#define BACKOFF_MAX_MS 8000
#define REPLAY_MS 10000          /* a respawned upstream must answer the replayed initialize by then */
#define STABLE_MS 60000          /* an upstream that ran this long gets a fresh restart budget */

static int sig_pipe[2] = {-1, -1};

static void on_signal(int signo)
{
    int saved = errno;
    unsigned char b = (unsigned char)signo;
    if (write(sig_pipe[1], &b, 1) < 0) {
        /* the pipe is full: a wakeup is already pending */
    }
    errno = saved;
}

static void nonblock(int fd)
{
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

int relay_open(struct relay *r)
{
    if (pipe(sig_pipe) < 0)
        return -1;
    for (int i = 0; i < 2; i++) {                 /* not inherited by the upstream */
        nonblock(sig_pipe[i]);
        fcntl(sig_pipe[i], F_SETFD, FD_CLOEXEC);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGCHLD, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    r->stdout_flags = fcntl(STDOUT_FILENO, F_GETFL);
    nonblock(STDOUT_FILENO);
    platform_grow_pipe(STDOUT_FILENO);
    frame_init(&r->cin, STDIN_FILENO, r->o->max_message_bytes);
    outq_init(&r->cout, STDOUT_FILENO);
    return 0;
}

int relay_signal_fd(void)
{
    return sig_pipe[0];
}

int relay_signals(int *stop_signal)
{
    unsigned char b[64];
    ssize_t got;
    int chld = 0;
    while ((got = read(sig_pipe[0], b, sizeof b)) > 0)
        for (ssize_t k = 0; k < got; k++) {
            if (b[k] == SIGCHLD)
                chld = 1;
            else if (!*stop_signal) {
                *stop_signal = b[k];
                log_event(LOG_INFO, "signal", "signo=%d", *stop_signal);
            }
        }
    return chld;
}

int relay_read_client(struct relay *r)
{
    long got = frame_fill(&r->cin);
    if (got < 0 && errno != EAGAIN && errno != EINTR)
        r->cin.eof = 1;
    const char *line;
    size_t n;
    enum frame_status st;
    while ((st = frame_next(&r->cin, &line, &n)) == FRAME_LINE || st == FRAME_OVERSIZE) {
        if (st == FRAME_LINE)
            relay_client_line(r, line, n);
        else
            relay_client_oversize(r, line, n, r->cin.oversize_bytes);
    }
    if (st == FRAME_EOF)
        log_event(LOG_INFO, "client_eof", NULL);
    return st == FRAME_EOF;
}

void relay_close(struct relay *r, int status)
{
    /* Last words to the client, if it still reads, for at most GRACE_MS. */
    int64_t until = chrono_mono_ms() + GRACE_MS;
    while (r->cout.bytes && !r->cout.failed && chrono_mono_ms() < until) {
        struct pollfd w = {STDOUT_FILENO, POLLOUT, 0};
        if (poll(&w, 1, (int)(until - chrono_mono_ms())) <= 0 || outq_flush(&r->cout) < 0)
            break;
    }
    fcntl(STDOUT_FILENO, F_SETFL, r->stdout_flags);
    log_event(LOG_INFO, "wrap_stop", "status=%d", status);
    relay_free(r);
    close(sig_pipe[0]);
    close(sig_pipe[1]);
}

static int start_upstream(struct relay *r)
{
    char err[256];
    if (child_spawn(&r->child, r->o->argv, r->o->cwd, r->o->env_add, err, sizeof err) < 0) {
        fprintf(stderr, "keel: cannot start the upstream command '%s': %s\n", r->o->argv[0], err);
        snprintf(r->fail_reason, sizeof r->fail_reason, "keel could not start the upstream command '%s': %s",
                 r->o->argv[0], err);
        log_event(LOG_ERROR, "upstream_start_failed", NULL);
        return -1;
    }
    platform_grow_pipe(r->child.in_fd);
    platform_grow_pipe(r->child.out_fd);
    frame_free(&r->sout);
    frame_init(&r->sout, r->child.out_fd, r->o->max_message_bytes);
    outq_free(&r->sin);
    outq_init(&r->sin, r->child.in_fd);
    log_event(LOG_INFO, "upstream_started", "pid=%ld", (long)r->child.pid);
    return 0;
}

enum phase { RUNNING, CLOSING, TERMINATING, KILLED };

/* The wait before restart number n + 1: BACKOFF_FIRST_MS doubling, at most BACKOFF_MAX_MS. */
static int64_t restart_delay(int n)
{
    int backoff = BACKOFF_FIRST_MS << (n < 5 ? n : 5);
    return backoff > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff;
}

/* keel stops reading the upstream's stdout: what it said is over. */
static void close_upstream_out(struct relay *r, int *sout_open)
{
    relay_server_closed(r);
    *sout_open = 0;
    close(r->child.out_fd);
    r->child.out_fd = -1;
}

int wrap_run(const struct wrap_opts *o)
{
    struct relay r;
    relay_init(&r, o);
    if (relay_open(&r) < 0) {
        relay_free(&r);
        return 1;
    }
    log_event(LOG_INFO, "wrap_start", "tools=%d overlay=%u max_message_bytes=%zu", r.nexposed, r.ov.parts,
              o->max_message_bytes);
    r.up = start_upstream(&r) == 0 ? UP : FAILED;

    enum phase phase = RUNNING;
    int client_eof = 0, sout_open = r.up == UP, status = 0, restarts = 0, stop_signal = 0;
    int64_t reap_at = -1, restart_at = -1, phase_at = -1, replay_at = -1;   /* deadlines, monotonic ms */
    int64_t started_at = chrono_mono_ms();           /* when the upstream last started */

    for (;;) {
        /* Decide what to wait for. */
        struct pollfd pf[5];
        int np = 0, icin = -1, isout = -1;
        pf[np++] = (struct pollfd){sig_pipe[0], POLLIN, 0};
        /* Answers held back behind a line passing through count too. */
        int room = r.cout.bytes + r.cout.held_bytes < HIGH_WATER && r.sin.bytes < HIGH_WATER;
        if (phase == RUNNING && !client_eof && room)
            icin = np, pf[np++] = (struct pollfd){STDIN_FILENO, POLLIN, 0};
        /* A line passing through waits in the pipe, not in keel, while the client is behind. */
        if (sout_open && r.cout.bytes < (r.cut.on ? 1 : HIGH_WATER))
            isout = np, pf[np++] = (struct pollfd){r.child.out_fd, POLLIN, 0};
        if (r.cout.bytes && !r.cout.failed)
            pf[np++] = (struct pollfd){STDOUT_FILENO, POLLOUT, 0};
        if (r.sin.bytes && r.child.in_fd >= 0 && !r.sin.failed)
            pf[np++] = (struct pollfd){r.child.in_fd, POLLOUT, 0};
        int64_t next = -1;
        if (reap_at >= 0)
            next = reap_at;
        if (restart_at >= 0 && (next < 0 || restart_at < next))
            next = restart_at;
        if (phase != RUNNING && r.child.pid && (next < 0 || phase_at < next))
            next = phase_at;
        if (r.up == REPLAYING && (next < 0 || replay_at < next))
            next = replay_at;
        int timeout = -1;
        if (next >= 0) {
            int64_t left = next - chrono_mono_ms();
            timeout = left < 0 ? 0 : (int)left;
        }
        if (poll(pf, (nfds_t)np, timeout) < 0 && errno != EINTR) {
            log_event(LOG_ERROR, "poll_failed", "errno=%d", errno);
            status = 1;
            break;
        }

        /* Signals. */
        if (pf[0].revents & POLLIN) {
            int chld = relay_signals(&stop_signal);
            if (chld && r.child.pid && sout_open && child_poll(&r.child)) {
                /* It exited while something it left behind holds its stdout:
                 * take what it wrote, then stop listening and end the group. */
                int fl = fcntl(r.child.out_fd, F_GETFL);
                fcntl(r.child.out_fd, F_SETFL, fl | O_NONBLOCK);
                while (relay_server_drain(&r) != FRAME_EOF && frame_fill(&r.sout) >= 0)   /* 0: the end, drained next */
                    ;
                kill(-r.child.pid, SIGKILL);
                close_upstream_out(&r, &sout_open);
            }
        }
        if (stop_signal && phase == RUNNING) {
            client_eof = 1;
            status = 128 + stop_signal;
        }

        /* Client → keel. */
        if (icin >= 0 && (pf[icin].revents & (POLLIN | POLLHUP | POLLERR)) && relay_read_client(&r))
            client_eof = 1;

        /* Upstream → keel. */
        if (isout >= 0 && (pf[isout].revents & (POLLIN | POLLHUP | POLLERR))) {
            long got = frame_fill(&r.sout);
            if (got < 0 && errno != EAGAIN && errno != EINTR)
                r.sout.eof = 1;
            if (relay_server_drain(&r) == FRAME_EOF)
                close_upstream_out(&r, &sout_open);
        }

        /* Writes: whatever this turn queued goes out in one writev per side. */
        if (r.cout.bytes && !r.cout.failed)
            outq_flush(&r.cout);
        if (r.cout.failed && !client_eof) {
            log_event(LOG_INFO, "client_gone", NULL);
            client_eof = 1;
        }
        if (r.sin.bytes && !r.sin.failed && r.child.in_fd >= 0 && outq_flush(&r.sin) < 0)
            log_event(LOG_WARN, "upstream_stdin_closed", "errno=%d", errno);

        int64_t now = chrono_mono_ms();
        /* The upstream ended: once its stdout is drained, reap it (and if it
         * lingers with its stdout closed, it cannot talk anyway: kill it). */
        if (r.child.pid && !sout_open) {
            if (!child_poll(&r.child)) {
                if (reap_at < 0) {
                    reap_at = now + GRACE_MS;
                } else if (now >= reap_at) {
                    kill(-r.child.pid, SIGKILL);
                    kill(r.child.pid, SIGKILL);
                    while (waitpid(r.child.pid, &r.child.status, 0) < 0 && errno == EINTR)
                        ;
                    r.child.reaped = 1;
                }
            }
            if (r.child.reaped) {
                reap_at = -1;
                int code = child_exit_code(&r.child);
                log_event(LOG_INFO, "upstream_exit", "status=%d", code);
                if (r.child.in_fd >= 0)
                    close(r.child.in_fd);
                r.child.in_fd = -1;
                outq_free(&r.sin);
                kill(-r.child.pid, SIGKILL);    /* helpers left in its group */
                r.child.pid = 0;
                char why[120];
                snprintf(why, sizeof why, "the upstream server exited with status %d", code);
                relay_fail_pending(&r, why);
                if (now - started_at >= STABLE_MS)
                    restarts = 0;             /* it ran well for a while: a fresh budget */
                if (phase == RUNNING && !client_eof && restarts < o->restart_max) {
                    restart_at = now + restart_delay(restarts);
                    r.up = WAITING;
                    restarts++;
                    log_event(LOG_INFO, "upstream_restart_scheduled", "attempt=%d", restarts);
                } else {
                    r.up = GONE;
                    if (phase == RUNNING) {
                        status = code;
                        client_eof = 1;       /* nothing left to relay */
                    }
                }
            }
        }
        if (r.up == WAITING && restart_at >= 0 && now >= restart_at) {
            restart_at = -1;
            if (start_upstream(&r) == 0) {
                sout_open = 1;
                started_at = now;
                r.up = relay_replay(&r) ? REPLAYING : UP;
                replay_at = now + REPLAY_MS;
            } else if (restarts < o->restart_max) {
                restart_at = now + restart_delay(restarts);
                restarts++;
            } else {
                r.up = FAILED;
            }
        }
        if (r.up == REPLAYING && now >= replay_at && r.child.pid) {
            /* The new upstream never answered the replayed initialize: end it;
             * the exit path restarts it again or gives up. */
            log_event(LOG_WARN, "upstream_replay_timeout", "ms=%d", REPLAY_MS);
            kill(-r.child.pid, SIGKILL);
            kill(r.child.pid, SIGKILL);
            replay_at = now + REPLAY_MS;
        }
        if (r.exit_after_answer && !r.cout.bytes) {
            status = 1;
            client_eof = 1;
        }

        /* Winding down: stdin closed once what the client sent is delivered,
         * then SIGTERM and SIGKILL to the group, GRACE_MS apart. */
        if (client_eof && phase == RUNNING) {
            phase = CLOSING;
            restart_at = -1;
            if (r.up == WAITING)
                r.up = GONE;
            /* Answers still owed to a client that reads get the full grace;
             * with none owed, or nobody left to read them, the upstream has
             * QUIET_GRACE_MS to leave on its own. */
            int owed = pending_any(&r.pend, FROM_CLIENT, ~0u) && !r.cout.failed;
            int young = now - started_at < YOUNG_MS;       /* still starting: let it */
            phase_at = now + (owed || young ? GRACE_MS : QUIET_GRACE_MS);
        }
        if (phase != RUNNING && r.child.in_fd >= 0 && (!r.sin.bytes || r.sin.failed || now >= phase_at)) {
            close(r.child.in_fd);
            r.child.in_fd = -1;
            outq_free(&r.sin);
        }
        if (phase == KILLED && r.child.pid && now >= phase_at && sout_open)
            close_upstream_out(&r, &sout_open);   /* something outside the group holds its stdout */
        if (phase != RUNNING && phase != KILLED && r.child.pid && now >= phase_at) {
            int sig = phase == CLOSING ? SIGTERM : SIGKILL;
            log_event(LOG_INFO, sig == SIGTERM ? "upstream_sigterm" : "upstream_sigkill", "pid=%ld", (long)r.child.pid);
            kill(-r.child.pid, sig);
            kill(r.child.pid, sig);
            phase = phase == CLOSING ? TERMINATING : KILLED;
            phase_at = now + GRACE_MS;
        }
        if (phase != RUNNING && !r.child.pid)
            break;
    }

    if (r.up == FAILED && !status)
        status = 1;                   /* the upstream never ran */
    if (r.child.out_fd >= 0)
        close(r.child.out_fd);
    relay_close(&r, status);
    return status;
}
