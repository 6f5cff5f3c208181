/* state.c: locked, atomic read-modify-write of state.json (see state.h). */
#include "state.h"

#include "readfile.h"
#include "clock.h"

#include "timefmt.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define STATE_MAX_BYTES (8 << 20)

static int mkdirs(const char *path)
{
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(tmp, 0700) < 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    if (mkdir(tmp, 0700) < 0 && errno != EEXIST)
        return -1;
    return 0;
}

int state_dir(char *buf, size_t n, kerr *e)
{
    const char *own = getenv("KEEL_STATE_DIR"), *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
    if (own && *own && *own != '/') /* never the person's real state file in its place, unsaid */
        return kerr_set(e, "STATE_UNWRITABLE", NULL,
                        "KEEL_STATE_DIR is not an absolute path; set it to one (a relative one would move with "
                        "the directory each keel runs in)");
    const char *var = own && *own == '/' ? "KEEL_STATE_DIR" : xdg && *xdg == '/' ? "XDG_STATE_HOME" : "HOME";
    int w;
    if (own && *own == '/')
        w = snprintf(buf, n, "%s", own);
    else if (xdg && *xdg == '/')
        w = snprintf(buf, n, "%s/keel", xdg);
    else if (home && *home == '/')
        w = snprintf(buf, n, "%s/.local/state/keel", home);
    else
        return kerr_set(e, "STATE_UNWRITABLE", NULL,
                        "no place for the state file: set HOME or XDG_STATE_HOME to an absolute path");
    if (w < 0 || (size_t)w >= n)
        return kerr_set(e, "STATE_UNWRITABLE", NULL,
                        "the state directory's path from %s is over %zu bytes: set KEEL_STATE_DIR to a shorter "
                        "absolute path",
                        var, n - 1);
    return 0;
}

int state_dir_or(const char *dir, char *buf, size_t n, kerr *e)
{
    if (!dir)
        return state_dir(buf, n, e);
    if (strlen(dir) >= n)
        return kerr_set(e, "STATE_UNWRITABLE", NULL,
                        "the state directory's path is over %zu bytes: set KEEL_STATE_DIR to a shorter absolute path",
                        n - 1);
    memcpy(buf, dir, strlen(dir) + 1);
    return 0;
}

/* Opens path for reading if it is a regular file of at most max bytes: never
 * follows a symbolic link, never waits on a FIFO or a device. -1 with errno
 * ENOENT (none), EINVAL (not a regular file, or a link), EFBIG (too large). */
static int open_regular(const char *path, int flags, off_t max)
{
    int fd = open(path, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
    if (fd < 0) {
        if (errno == ELOOP)
            errno = EINVAL;
        return -1;
    }
    struct stat sb;
    int err = fstat(fd, &sb) < 0 ? errno : !S_ISREG(sb.st_mode) ? EINVAL : max && sb.st_size > max ? EFBIG : 0;
    if (err) {
        close(fd);
        errno = err;
        return -1;
    }
    return fd;
}

/* Reads the whole file (read_all); NULL with errno as open_regular's when it cannot. */
static char *slurp(const char *path, size_t *len)
{
    int fd = open_regular(path, O_RDONLY, STATE_MAX_BYTES);
    if (fd < 0)
        return NULL;
    char *buf = read_all(fd, STATE_MAX_BYTES, len);
    int saved = errno;
    close(fd);
    errno = saved;
    return buf;
}

/* The exclusive lock on fd, waiting at most lock_wait_ms (STATE_LOCK_WAIT_MS
 * unless state_lock_wait said otherwise): a process that holds it longer
 * (stopped, or stuck) costs the others a bounded wait, and after such a wait,
 * for STATE_STUCK_MS, none, in this process and, through the mark in
 * state.lock, in every other (a relay that touches the state on many
 * messages, and a host that starts a hook per prompt, pay the wait once). The wait is the kernel's: a blocking flock, woken
 * when the lock is free, so busy processes take turns (trying without
 * blocking now and then starves a process when others hold the lock nearly
 * all the time). It is cut by a timer whose SIGALRM goes to this thread
 * alone (SIGEV_THREAD_ID), never to a thread libcurl started. -1 with errno
 * EWOULDBLOCK when the lock stayed taken. */
static int64_t stuck_until; /* after a wait ran out: until then, no waiting */
static int lock_wait_ms = STATE_LOCK_WAIT_MS;

void state_lock_wait(int ms)
{
    lock_wait_ms = ms < 0 ? 0 : ms;
}

static int durable = 1;

void state_durable(int on)
{
    durable = on;
}

static void on_alarm(int sig)
{
    (void)sig; /* only to interrupt flock */
}

/* The wall clock, in ms: what the stuck mark in state.lock is kept in, read
 * by other processes (the monotonic clock's zero is per boot, and a test's
 * KEEL_NOW is no time to wait by). */
static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Bytes 8 to 15 of state.lock: until when (wall_ms) no keel process waits
 * for the lock, set by one whose wait ran out, so that the next processes,
 * a hook each, do not each pay the wait again; cleared by the next process
 * that takes the lock. 0: none. */
#define STUCK_AT 8
static int64_t stuck_mark(int fd)
{
    int64_t t = 0;
    return pread(fd, &t, sizeof t, STUCK_AT) == (ssize_t)sizeof t ? t : 0;
}

static void stuck_set(int fd, int64_t until)
{
    if (pwrite(fd, &until, sizeof until, STUCK_AT) != (ssize_t)sizeof until)
        return; /* each process then pays its own wait, as before */
}

static int locked(int fd)
{
    stuck_until = 0;
    if (stuck_mark(fd))
        stuck_set(fd, 0); /* the holder let go: the next wait is a wait again */
    return 0;
}

static int lock_within(int fd)
{
    if (flock(fd, LOCK_EX | LOCK_NB) == 0)
        return locked(fd);
    if (errno != EWOULDBLOCK && errno != EINTR)
        return -1;
    int64_t now = chrono_mono_ms(), wall = wall_ms(), mark = stuck_mark(fd);
    if (lock_wait_ms <= 0 || now < stuck_until || (wall < mark && mark - wall <= STATE_STUCK_MS)) {
        errno = EWOULDBLOCK;
        return -1;
    }
    struct sigaction sa, old_sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm; /* no SA_RESTART: flock returns EINTR */
    sigemptyset(&sa.sa_mask);
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = SIGALRM;
    sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
    timer_t tm;
    if (sigaction(SIGALRM, &sa, &old_sa) < 0)
        return -1;
    if (timer_create(CLOCK_MONOTONIC, &sev, &tm) < 0) {
        sigaction(SIGALRM, &old_sa, NULL);
        return -1;
    }
    long first_ms = lock_wait_ms < 100 ? lock_wait_ms : 100; /* a short budget (keel wrap's tools) is kept */
    struct itimerspec tick = {{0, 100000000}, {first_ms / 1000, first_ms % 1000 * 1000000}};
    timer_settime(tm, 0, &tick, NULL);
    int64_t end = now + lock_wait_ms;
    int rc, err;
    do {
        rc = flock(fd, LOCK_EX);
        err = errno;
    } while (rc < 0 && err == EINTR && chrono_mono_ms() < end);
    timer_delete(tm);
    sigaction(SIGALRM, &old_sa, NULL);
    if (rc < 0 && err == EINTR) {
        stuck_until = chrono_mono_ms() + STATE_STUCK_MS;
        stuck_set(fd, wall_ms() + STATE_STUCK_MS);
        err = EWOULDBLOCK;
    }
    if (rc < 0)
        errno = err;
    else
        locked(fd);
    return rc;
}

/* The state directory is the person's alone, as ssh wants ~/.ssh: created
 * 0700, and one that another user owns or may write to is refused. */
static int dir_safe(const char *dir, kerr *e)
{
    struct stat sb;
    if (stat(dir, &sb) < 0 || !S_ISDIR(sb.st_mode))
        return kerr_set(e, "STATE_UNWRITABLE", NULL, "the state directory %s is not a directory", dir);
    if (sb.st_uid != geteuid())
        return kerr_set(e, "STATE_UNWRITABLE", NULL,
                        "the state directory %s belongs to another user (uid %u); keel keeps no state there: set "
                        "KEEL_STATE_DIR to a directory of your own, or have it given to you (chown)",
                        dir, (unsigned)sb.st_uid);
    if (sb.st_mode & 022)
        return kerr_set(e, "STATE_UNWRITABLE", NULL,
                        "the state directory %s can be changed by other users (mode %04o); keel keeps no state "
                        "there: chmod 700 it, or set KEEL_STATE_DIR to a directory of your own",
                        dir, (unsigned)(sb.st_mode & 07777));
    return 0;
}

/* Temporary files left by a process killed mid-write; safe to remove under the lock. */
static void remove_stale_temps(const char *dir, const char *name)
{
    size_t nl = strlen(name);
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d)))
        if (strncmp(de->d_name, name, nl) == 0 && strncmp(de->d_name + nl, ".tmp.", 5) == 0) {
            char p[1400];
            snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
            unlink(p);
        }
    closedir(d);
}

static int write_atomic(const char *dir, const char *file, const char *text, kerr *e)
{
    char tmp[1200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", file, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return kerr_set(e, "STATE_UNWRITABLE", NULL, "cannot write %s: %s", file, strerror(errno));
    size_t len = strlen(text), off = 0;
    while (off < len) { /* a regular file: a write may be short, never interrupted (EINTR) */
        ssize_t w = write(fd, text + off, len - off);
        if (w <= 0) /* 0: no progress, never a loop */
            break;
        off += (size_t)w;
    }
    int ok = off == len && (!durable || fsync(fd) == 0);
    int saved = errno;
    if (close(fd) != 0)
        ok = 0;
    if (!ok || rename(tmp, file) != 0) {
        saved = ok ? errno : saved;
        unlink(tmp);
        return kerr_set(e, "STATE_UNWRITABLE", NULL, "cannot write %s: %s", file, strerror(saved));
    }
    int dfd = durable ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1; /* make the rename durable */
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return 0;
}

static int valid_state(const cJSON *s)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(s, "version");
    return cJSON_IsObject(s) && cJSON_IsNumber(v) && v->valuedouble == STATE_VERSION;
}

/* The generation lives in state.lock, which every writer holds anyway: eight
 * bytes, bumped under the lock after each write, read through a shared
 * mapping by every keel process that wants to know whether to read again. */
static void bump_generation(int lfd)
{
    uint64_t g = 0;
    if (pread(lfd, &g, sizeof g, 0) != (ssize_t)sizeof g)
        g = 0;
    g++;
    if (pwrite(lfd, &g, sizeof g, 0) != (ssize_t)sizeof g)
        return; /* readers fall back on reading every time */
}

/* A state file keel cannot use is moved aside, never deleted, and reported;
 * the next access starts afresh. */
static int move_aside(const char *file, int64_t now_ms, const char *why, kerr *e)
{
    char aside[1200], stamp[40];
    tf_format_rfc3339(now_ms, 0, stamp, sizeof stamp);
    stamp[19] = '\0'; /* YYYY-MM-DDTHH:MM:SS */
    for (char *p = stamp; *p; p++)
        if (*p == ':')
            *p = '-';
    snprintf(aside, sizeof aside, "%s.corrupt-%sZ-%ld", file, stamp, (long)getpid());
    if (rename(file, aside) != 0)
        return kerr_set(e, "STATE_UNREADABLE", NULL, "%s is %s and could not be moved aside: %s", file, why,
                        strerror(errno));
    return kerr_set(e, "STATE_UNREADABLE", NULL, "%s was %s; it was moved to %s and a fresh one starts now", file, why,
                    aside);
}

cJSON *state_obj(cJSON *parent, const char *key)
{
    cJSON *o = cJSON_GetObjectItemCaseSensitive(parent, key);
    if (!cJSON_IsObject(o)) {
        cJSON_DeleteItemFromObjectCaseSensitive(parent, key);
        o = cJSON_AddObjectToObject(parent, key);
    }
    return o;
}

void state_set(cJSON *o, const char *key, cJSON *v)
{
    if (!v)
        cJSON_DeleteItemFromObjectCaseSensitive(o, key);
    else if (!(cJSON_GetObjectItemCaseSensitive(o, key) ? cJSON_ReplaceItemInObjectCaseSensitive(o, key, v)
                                                        : cJSON_AddItemToObject(o, key, v)))
        cJSON_Delete(v);
}

int state_exclusive(const char *in, const char *name, int wait_ms, kerr *e)
{
    char dir[1024], path[1100];
    if (in) {
        snprintf(dir, sizeof dir, "%s", in);
    } else {
        if (state_dir_or(NULL, dir, sizeof dir, e) < 0)
            return -1;
        if (mkdirs(dir) < 0)
            return kerr_set(e, "STATE_UNWRITABLE", NULL, "cannot create the state directory %s: %s", dir,
                            strerror(errno));
        if (dir_safe(dir, e) < 0)
            return -1;
    }
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open_regular(path, O_RDWR | O_CREAT, 0);
    if (fd < 0)
        return kerr_set(e, "STATE_UNWRITABLE", NULL, "cannot open %s: %s", path, strerror(errno));
    for (int64_t end = chrono_mono_ms() + wait_ms;;) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0)
            return fd;
        if (errno != EWOULDBLOCK && errno != EINTR) {
            int err = errno;
            close(fd);
            return kerr_set(e, "STATE_UNWRITABLE", NULL, "cannot lock %s: %s", path, strerror(err));
        }
        if (chrono_mono_ms() >= end) {
            close(fd);
            return kerr_set(e, "STATE_BUSY", NULL, "another keel process has held %s for over %d s", path,
                            wait_ms / 1000);
        }
        struct timespec pause = {0, 20000000};
        nanosleep(&pause, NULL);
    }
}

int state_update(const char *dir, int64_t now_ms, state_fn fn, void *ctx, kerr *e)
{
    return state_update_file(dir, "state.json", now_ms, fn, ctx, e);
}

int state_update_file(const char *dir_in, const char *name, int64_t now_ms, state_fn fn, void *ctx, kerr *e)
{
    char dir[1024], file[1100], lock[1100];
    if (state_dir_or(dir_in, dir, sizeof dir, e) < 0)
        return -1;
    if (mkdirs(dir) < 0)
        return kerr_set(e, "STATE_UNWRITABLE", NULL, "cannot create the state directory %s: %s", dir, strerror(errno));
    snprintf(file, sizeof file, "%s/%s", dir, name);
    snprintf(lock, sizeof lock, "%s/state.lock", dir);
    if (dir_safe(dir, e) < 0)
        return -1;
    int lfd = open_regular(lock, O_RDWR | O_CREAT, 0);
    if (lfd < 0)
        return kerr_set(e, "STATE_UNWRITABLE", NULL, "cannot open %s: %s%s", lock, strerror(errno),
                        errno == EINVAL ? " (not a regular file: remove it)" : "");
    int rc;
    if (lock_within(lfd) < 0) {
        int busy = errno == EWOULDBLOCK;
        close(lfd);
        if (busy)
            return kerr_set(e, "STATE_BUSY", NULL,
                            "another keel process has held %s for over %d s; nothing was "
                            "read or changed: try again",
                            lock, STATE_LOCK_WAIT_MS / 1000);
        return kerr_set(e, "STATE_UNWRITABLE", NULL, "cannot lock %s: %s", lock, strerror(errno));
    }
    remove_stale_temps(dir, name);

    size_t len = 0;
    char *text = slurp(file, &len);
    cJSON *state = NULL;
    if (!text && errno != ENOENT && errno != EINVAL && errno != EFBIG) {
        rc = kerr_set(e, "STATE_UNREADABLE", NULL, "cannot read %s: %s", file, strerror(errno));
        goto out;
    }
    if (text || errno != ENOENT) {
        const char *why = !text ? (errno == EFBIG ? "over 8 MiB" : "not a regular file") : "not a keel state file";
        if (text)
            state = cJSON_ParseWithLength(text, len);
        if (!valid_state(state)) {
            cJSON_Delete(state);
            state = NULL;
            rc = move_aside(file, now_ms, why, e);
            goto out;
        }
    } else {
        state = cJSON_CreateObject();
        cJSON_AddNumberToObject(state, "version", STATE_VERSION);
    }
    rc = fn(state, ctx, e);
    if (rc > 0) {
        char *out = cJSON_Print(state);
        if (!out)
            rc = kerr_set(e, "INTERNAL_ERROR", NULL, "out of memory");
        else if (strlen(out) > STATE_MAX_BYTES) /* it would not be read back: moved aside, all of it lost */
            rc = kerr_set(e, "STATE_TOO_LARGE", NULL,
                          "%s would be %zu bytes, over the %d MiB keel reads back; the file was left as it was", file,
                          strlen(out), STATE_MAX_BYTES >> 20);
        else if (!text || strlen(out) != len || memcmp(out, text, len)) { /* else it is there already */
            rc = write_atomic(dir, file, out, e);
            if (rc == 0 && !strcmp(name, "state.json"))
                bump_generation(lfd);
        }
        free(out);
    }
out:
    free(text);
    cJSON_Delete(state);
    flock(lfd, LOCK_UN);
    close(lfd);
    return rc < 0 ? -1 : 0;
}

int state_read(const char *dir_in, state_fn fn, void *ctx, kerr *e)
{
    char dir[1024], file[1100];
    if (state_dir_or(dir_in, dir, sizeof dir, e) < 0 || dir_safe(dir, e) < 0)
        return -1;
    snprintf(file, sizeof file, "%s/state.json", dir);
    size_t len = 0;
    char *text = slurp(file, &len);
    int err = errno, had = text != NULL;
    cJSON *state = NULL;
    if (text)
        state = cJSON_ParseWithLength(text, len);
    else if (err == ENOENT && (state = cJSON_CreateObject()))
        cJSON_AddNumberToObject(state, "version", STATE_VERSION);
    free(text);
    if (!valid_state(state)) {
        cJSON_Delete(state);
        return kerr_set(e, "STATE_UNREADABLE", NULL, "cannot read %s: %s", file,
                        had ? "not a keel state file" : strerror(err));
    }
    int rc = fn(state, ctx, e); /* what fn changes is not kept */
    cJSON_Delete(state);
    return rc < 0 ? -1 : 0;
}

const uint64_t *state_generation(const char *dir_in)
{
    char dir[1024], lock[1100];
    kerr e = {0};
    if (state_dir_or(dir_in, dir, sizeof dir, &e) < 0)
        return NULL;
    if (mkdirs(dir) < 0)
        return NULL;
    snprintf(lock, sizeof lock, "%s/state.lock", dir);
    kerr ignored = {0};
    int fd = dir_safe(dir, &ignored) == 0 ? open_regular(lock, O_RDWR | O_CREAT, 0) : -1;
    if (fd < 0)
        return NULL;
    struct stat sb;
    if (fstat(fd, &sb) == 0 && sb.st_size < (off_t)sizeof(uint64_t)) {
        /* Mapped past its end a file faults: give it its eight bytes first. */
        if (lock_within(fd) < 0) {
            close(fd);
            return NULL;
        }
        uint64_t zero = 0;
        if (fstat(fd, &sb) == 0 && sb.st_size < (off_t)sizeof zero &&
            pwrite(fd, &zero, sizeof zero, 0) != (ssize_t)sizeof zero)
            sb.st_size = 0;
        else
            sb.st_size = sizeof zero;
        flock(fd, LOCK_UN);
    }
    void *m =
        sb.st_size >= (off_t)sizeof(uint64_t) ? mmap(NULL, sizeof(uint64_t), PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
    close(fd);
    return m == MAP_FAILED ? NULL : (const uint64_t *)m;
}

uint64_t state_generation_now(const uint64_t *g)
{
    return g ? __atomic_load_n(g, __ATOMIC_ACQUIRE) : 0;
}

void state_generation_release(const uint64_t *g)
{
    if (g)
        munmap((void *)(uintptr_t)g, sizeof *g);
}
