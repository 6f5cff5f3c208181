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

#define HIGH_WATER       (1u << 20)
#define GRACE_MS         2000
#define QUIET_GRACE_MS   250 /* after the client left with nothing in flight */
#define YOUNG_MS         1000 /* an upstream started this recently gets the full grace */
#define BACKOFF_FIRST_MS 250
#define BACKOFF_MAX_MS   8000
#define REPLAY_MS        10000 /* a respawned upstream must answer the replayed initialize by then */
#define STABLE_MS        60000 /* an upstream that ran this long gets a fresh restart budget */

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
    for (int i = 0; i < 2; i++) { /* not inherited by the upstream */
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
    relay_lent_keep(r);
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

/* wrap_run's loop: the relay, the phase, and the deadlines it waits for
 * (monotonic ms, -1: none). */
struct loop {
    struct relay r;
    enum phase phase;
    int client_eof, sout_open, status, restarts, stop_signal;
    int64_t reap_at, restart_at, phase_at, replay_at;
    int64_t started_at; /* when the upstream last started */
    struct pollfd pf[5];
    int np, icin, isout; /* pf's entries, and which are the client's stdin and the upstream's stdout */
};

/* What to wait for, and until when: the nearest deadline. -1 when poll fails. */
static int wait_turn(struct loop *l)
{
    struct relay *r = &l->r;
    l->np = 0, l->icin = -1, l->isout = -1;
    l->pf[l->np++] = (struct pollfd){sig_pipe[0], POLLIN, 0};
    /* Answers held back behind a line passing through count too. */
    int room = r->cout.bytes + r->cout.held_bytes < HIGH_WATER && r->sin.bytes < HIGH_WATER;
    if (l->phase == RUNNING && !l->client_eof && room)
        l->icin = l->np, l->pf[l->np++] = (struct pollfd){STDIN_FILENO, POLLIN, 0};
    /* A line passing through waits in the pipe, not in keel, while the client is behind. */
    if (l->sout_open && r->cout.bytes < (r->cut.on ? 1 : HIGH_WATER) && frame_room(&r->sout))
        l->isout = l->np, l->pf[l->np++] = (struct pollfd){r->child.out_fd, POLLIN, 0};
    if (r->cout.bytes && !r->cout.failed)
        l->pf[l->np++] = (struct pollfd){STDOUT_FILENO, POLLOUT, 0};
    if (r->sin.bytes && r->child.in_fd >= 0 && !r->sin.failed)
        l->pf[l->np++] = (struct pollfd){r->child.in_fd, POLLOUT, 0};
    int64_t next = -1;
    if (l->reap_at >= 0)
        next = l->reap_at;
    if (l->restart_at >= 0 && (next < 0 || l->restart_at < next))
        next = l->restart_at;
    if (l->phase != RUNNING && r->child.pid && (next < 0 || l->phase_at < next))
        next = l->phase_at;
    if (r->up == REPLAYING && (next < 0 || l->replay_at < next))
        next = l->replay_at;
    int timeout = -1;
    if (next >= 0) {
        int64_t left = next - chrono_mono_ms();
        timeout = left < 0 ? 0 : (int)left;
    }
    if (poll(l->pf, (nfds_t)l->np, timeout) < 0 && errno != EINTR) {
        log_event(LOG_ERROR, "poll_failed", "errno=%d", errno);
        return -1;
    }
    return 0;
}

/* A stop signal ends the client's side; SIGCHLD with the upstream's stdout
 * still held by something it left behind ends the upstream's. */
static void take_signals(struct loop *l)
{
    struct relay *r = &l->r;
    if (l->pf[0].revents & POLLIN) {
        int chld = relay_signals(&l->stop_signal);
        if (chld && r->child.pid && l->sout_open && child_poll(&r->child)) {
            /* It exited while something it left behind holds its stdout:
             * take what it wrote, then stop listening and end the group. */
            relay_lent_keep(r); /* its reader reads on, whatever the client has taken */
            int fl = fcntl(r->child.out_fd, F_GETFL);
            fcntl(r->child.out_fd, F_SETFL, fl | O_NONBLOCK);
            while (relay_server_drain(r) != FRAME_EOF && frame_fill(&r->sout) >= 0) /* 0: the end, drained next */
                ;
            kill(-r->child.pid, SIGKILL);
            close_upstream_out(r, &l->sout_open);
        }
    }
    if (l->stop_signal && l->phase == RUNNING) {
        l->client_eof = 1;
        l->status = 128 + l->stop_signal;
    }
}

/* Client → keel, upstream → keel, then whatever this turn queued goes out
 * in one writev per side. */
static void move_bytes(struct loop *l)
{
    struct relay *r = &l->r;
    if (l->icin >= 0 && (l->pf[l->icin].revents & (POLLIN | POLLHUP | POLLERR)) && relay_read_client(r))
        l->client_eof = 1;
    if (l->isout >= 0 && (l->pf[l->isout].revents & (POLLIN | POLLHUP | POLLERR))) {
        long got = frame_fill(&r->sout);
        if (got < 0 && errno != EAGAIN && errno != EINTR)
            r->sout.eof = 1;
        if (relay_server_drain(r) == FRAME_EOF)
            close_upstream_out(r, &l->sout_open);
    }
    if (r->cout.bytes && !r->cout.failed)
        outq_flush(&r->cout);
    relay_lent_written(r);
    if (r->cout.failed && !l->client_eof) {
        log_event(LOG_INFO, "client_gone", NULL);
        l->client_eof = 1;
    }
    if (r->sin.bytes && !r->sin.failed && r->child.in_fd >= 0 && outq_flush(&r->sin) < 0)
        log_event(LOG_WARN, "upstream_stdin_closed", "errno=%d", errno);
}

/* The upstream ended: once its stdout is drained, reap it (and if it
 * lingers with its stdout closed, it cannot talk anyway: kill it); then
 * schedule a restart, or give up. */
static void reap_upstream(struct loop *l, int64_t now)
{
    struct relay *r = &l->r;
    if (!r->child.pid || l->sout_open)
        return;
    if (!child_poll(&r->child)) {
        if (l->reap_at < 0) {
            l->reap_at = now + GRACE_MS;
        } else if (now >= l->reap_at) {
            kill(-r->child.pid, SIGKILL);
            kill(r->child.pid, SIGKILL);
            while (waitpid(r->child.pid, &r->child.status, 0) < 0 && errno == EINTR)
                ;
            r->child.reaped = 1;
        }
    }
    if (!r->child.reaped)
        return;
    l->reap_at = -1;
    int code = child_exit_code(&r->child);
    log_event(LOG_INFO, "upstream_exit", "status=%d", code);
    if (r->child.in_fd >= 0)
        close(r->child.in_fd);
    r->child.in_fd = -1;
    outq_free(&r->sin);
    kill(-r->child.pid, SIGKILL); /* helpers left in its group */
    r->child.pid = 0;
    char why[120];
    snprintf(why, sizeof why, "the upstream server exited with status %d", code);
    relay_fail_pending(r, why);
    if (now - l->started_at >= STABLE_MS)
        l->restarts = 0; /* it ran well for a while: a fresh budget */
    if (l->phase == RUNNING && !l->client_eof && l->restarts < r->o->restart_max) {
        l->restart_at = now + restart_delay(l->restarts);
        r->up = WAITING;
        l->restarts++;
        log_event(LOG_INFO, "upstream_restart_scheduled", "attempt=%d", l->restarts);
    } else {
        r->up = GONE;
        if (l->phase == RUNNING) {
            l->status = code;
            l->client_eof = 1; /* nothing left to relay */
        }
    }
}

/* A restart that is due, and a replayed initialize never answered. */
static void restart_upstream(struct loop *l, int64_t now)
{
    struct relay *r = &l->r;
    if (r->up == WAITING && l->restart_at >= 0 && now >= l->restart_at) {
        l->restart_at = -1;
        if (start_upstream(r) == 0) {
            l->sout_open = 1;
            l->started_at = now;
            r->up = relay_replay(r) ? REPLAYING : UP;
            l->replay_at = now + REPLAY_MS;
        } else if (l->restarts < r->o->restart_max) {
            l->restart_at = now + restart_delay(l->restarts);
            l->restarts++;
        } else {
            r->up = FAILED;
        }
    }
    if (r->up == REPLAYING && now >= l->replay_at && r->child.pid) {
        /* The new upstream never answered the replayed initialize: end it;
         * the exit path restarts it again or gives up. */
        log_event(LOG_WARN, "upstream_replay_timeout", "ms=%d", REPLAY_MS);
        kill(-r->child.pid, SIGKILL);
        kill(r->child.pid, SIGKILL);
        l->replay_at = now + REPLAY_MS;
    }
    if (r->exit_after_answer && !r->cout.bytes) {
        l->status = 1;
        l->client_eof = 1;
    }
}

/* Winding down: stdin closed once what the client sent is delivered, then
 * SIGTERM and SIGKILL to the group, GRACE_MS apart. */
static void wind_down(struct loop *l, int64_t now)
{
    struct relay *r = &l->r;
    if (l->client_eof && l->phase == RUNNING) {
        l->phase = CLOSING;
        l->restart_at = -1;
        if (r->up == WAITING)
            r->up = GONE;
        /* Answers still owed to a client that reads get the full grace;
         * with none owed, or nobody left to read them, the upstream has
         * QUIET_GRACE_MS to leave on its own. */
        int owed = pending_any(&r->pend, FROM_CLIENT, ~0u) && !r->cout.failed;
        int young = now - l->started_at < YOUNG_MS; /* still starting: let it */
        l->phase_at = now + (owed || young ? GRACE_MS : QUIET_GRACE_MS);
    }
    if (l->phase != RUNNING && r->child.in_fd >= 0 && (!r->sin.bytes || r->sin.failed || now >= l->phase_at)) {
        close(r->child.in_fd);
        r->child.in_fd = -1;
        outq_free(&r->sin);
    }
    if (l->phase == KILLED && r->child.pid && now >= l->phase_at && l->sout_open)
        close_upstream_out(r, &l->sout_open); /* something outside the group holds its stdout */
    if (l->phase != RUNNING && l->phase != KILLED && r->child.pid && now >= l->phase_at) {
        int sig = l->phase == CLOSING ? SIGTERM : SIGKILL;
        log_event(LOG_INFO, sig == SIGTERM ? "upstream_sigterm" : "upstream_sigkill", "pid=%ld", (long)r->child.pid);
        kill(-r->child.pid, sig);
        kill(r->child.pid, sig);
        l->phase = l->phase == CLOSING ? TERMINATING : KILLED;
        l->phase_at = now + GRACE_MS;
    }
}

int wrap_run(const struct wrap_opts *o)
{
    struct loop l = {.phase = RUNNING, .reap_at = -1, .restart_at = -1, .phase_at = -1, .replay_at = -1};
    struct relay *r = &l.r;
    relay_init(r, o);
    if (relay_open(r) < 0) {
        relay_free(r);
        return 1;
    }
    log_event(LOG_INFO, "wrap_start", "tools=%d overlay=%u max_message_bytes=%zu", r->nexposed, r->ov.parts,
              o->max_message_bytes);
    r->up = start_upstream(r) == 0 ? UP : FAILED;
    l.sout_open = r->up == UP;
    l.started_at = chrono_mono_ms();
    for (;;) {
        if (wait_turn(&l) < 0) {
            l.status = 1;
            break;
        }
        take_signals(&l);
        move_bytes(&l);
        int64_t now = chrono_mono_ms();
        reap_upstream(&l, now);
        restart_upstream(&l, now);
        wind_down(&l, now);
        if (l.phase != RUNNING && !r->child.pid)
            break;
    }
    if (r->up == FAILED && !l.status)
        l.status = 1; /* the upstream never ran */
    if (r->child.out_fd >= 0)
        close(r->child.out_fd);
    relay_close(r, l.status);
    return l.status;
}
