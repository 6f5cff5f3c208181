/* cfgfile.c: compare-and-swap edits of a person's configuration files (see cfgfile.h). */
#include "cfgfile.h"
#include "clock.h"

#include "platform.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The same file, untouched: identity, size and both times. */
static int same_file(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
        a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
        a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* The whole of a regular file, its stat taken before and after the read so
 * a read torn by a writer is noticed. 0, 1 torn (try again), -1 errno. */
static int read_whole(const char *path, struct stat *st, char **text, size_t *n)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return -1;
    struct stat after;
    char *buf = NULL;
    int rc = -1;
    if (fstat(fd, st) < 0)
        goto out;
    if (!S_ISREG(st->st_mode)) {
        errno = EINVAL;
        goto out;
    }
    if (st->st_size > (off_t)CFG_MAX) {
        errno = EFBIG;
        goto out;
    }
    size_t cap = (size_t)st->st_size + 1, got = 0;
    if (!(buf = malloc(cap + 1)))
        goto out;
    for (;;) {
        ssize_t r = read(fd, buf + got, cap - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            goto out;
        if (r == 0)
            break;
        got += (size_t)r;
        if (got == cap) { /* it grew while being read */
            rc = 1;
            goto out;
        }
    }
    if (fstat(fd, &after) < 0)
        goto out;
    if (!same_file(st, &after) || got != (size_t)st->st_size) {
        rc = 1;
        goto out;
    }
    buf[got] = '\0';
    *text = buf;
    *n = got;
    buf = NULL;
    rc = 0;
out:
    free(buf);
    close(fd);
    return rc;
}

void cfg_release(struct cfg_file *f)
{
    free(f->text);
    free(f->late);
    f->text = f->late = NULL;
    f->n = f->late_n = 0;
}

int cfg_load(struct cfg_file *f, const char *path, char *why, size_t whyn)
{
    char *late = f->late; /* kept for the caller, if it has not taken it */
    size_t late_n = f->late_n;
    f->late = NULL;
    cfg_release(f);
    memset(f, 0, sizeof *f);
    f->late = late;
    f->late_n = late_n;
    snprintf(f->path, sizeof f->path, "%s", path);
    snprintf(f->real, sizeof f->real, "%s", path);
    struct stat lst;
    if (lstat(path, &lst) < 0) {
        if (errno != ENOENT) {
            snprintf(why, whyn, "%s: cannot be read: %s", path, strerror(errno));
            return -1;
        }
        f->text = calloc(1, 1); /* not there yet */
        return f->text ? 0 : -1;
    }
    if (!realpath(path, f->real)) {
        snprintf(why, whyn,
                 S_ISLNK(lst.st_mode) ? "%s is a symbolic link to a file that cannot be reached (%s)" : "%s: %s", path,
                 strerror(errno));
        return -1;
    }
    for (int tries = 0; tries < 20; tries++) {
        int rc = read_whole(f->real, &f->st, &f->text, &f->n);
        if (rc == 0) {
            f->exists = 1;
            return 0;
        }
        if (rc < 0) {
            snprintf(why, whyn, "%s: %s", path,
                     errno == EINVAL      ? "not a regular file"
                         : errno == EFBIG ? "larger than 256 MiB"
                                          : strerror(errno));
            return -1;
        }
    }
    snprintf(why, whyn, "%s kept changing while keel read it; try again in a moment", path);
    return -1;
}

/* 1 if the file is still exactly what f read (or still absent). */
static int unchanged(const struct cfg_file *f)
{
    struct stat st;
    if (!f->exists)
        return lstat(f->real, &st) < 0 && errno == ENOENT;
    char *now = NULL;
    size_t n = 0;
    int same =
        read_whole(f->real, &st, &now, &n) == 0 && same_file(&st, &f->st) && n == f->n && !memcmp(now, f->text, n);
    free(now);
    return same;
}

static void sync_dir(const char *file)
{
    char d[PATH_MAX];
    snprintf(d, sizeof d, "%s", file);
    int fd = open(dirname(d), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

static int write_all(int fd, const char *s, size_t n)
{
    while (n) {
        ssize_t w = write(fd, s, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Run as root (sudo) in a directory of another user's: fd, a file keel
 * just made there, goes to that user, so their client can read it and their
 * own keel uninstall can change it. 0, or -1 with errno. */
static int own_like_dir(int fd, const char *dir)
{
    struct stat ds;
    if (geteuid() != 0 || stat(dir, &ds) < 0 || ds.st_uid == 0)
        return 0;
    return fchown(fd, ds.st_uid, ds.st_gid);
}

/* A new file beside f->real holding text, with f's mode and owner, on disk. */
static int temp_beside(const struct cfg_file *f, const char *text, size_t n, int sync, char *tmp, size_t tmpn,
                       char *why, size_t whyn)
{
    char d[PATH_MAX], b[PATH_MAX];
    snprintf(d, sizeof d, "%s", f->real);
    snprintf(b, sizeof b, "%s", f->real);
    const char *dir = dirname(d);
    if ((size_t)snprintf(tmp, tmpn, "%s/.%s.keel-XXXXXX", dir, basename(b)) >= tmpn) {
        snprintf(why, whyn, "%s: the path is too long", f->path);
        return -1;
    }
    int fd = mkstemp(tmp);
    if (fd < 0) {
        snprintf(why, whyn, "%s: cannot create a file beside it: %s", f->path, strerror(errno));
        return -1;
    }
    (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
    mode_t mode = f->exists ? f->st.st_mode & 07777 : 0600;
    int bad = write_all(fd, text, n) < 0 || fchmod(fd, mode) < 0;
    if (!bad && f->exists && (f->st.st_uid != geteuid() || f->st.st_gid != getegid()) &&
        fchown(fd, f->st.st_uid, f->st.st_gid) < 0) { /* the new file keeps its owner and group, or none is written */
        if (errno == EPERM && f->st.st_uid != geteuid())
            snprintf(why, whyn, "%s belongs to another user (uid %u), so keel left it as it is: run keel as that user",
                     f->path, (unsigned)f->st.st_uid);
        else if (errno == EPERM)
            snprintf(why, whyn,
                     "%s has a group you are not in (gid %u), which keel could not keep on the edited file, so it "
                     "left it as it is: chgrp it to one of yours, or run keel as a member",
                     f->path, (unsigned)f->st.st_gid);
        else
            snprintf(why, whyn, "%s: cannot be written: %s", f->path, strerror(errno));
        close(fd);
        unlink(tmp);
        return -1;
    } else if (!bad && !f->exists) {
        bad = own_like_dir(fd, dir) < 0; /* a new file (a hooks file, a side file) is its directory's owner's */
    }
    if (bad || (sync && fsync(fd) < 0)) {
        snprintf(why, whyn, "%s: cannot be written: %s", f->path, strerror(errno));
        close(fd);
        unlink(tmp);
        return -1;
    }
    if (close(fd) < 0) {
        snprintf(why, whyn, "%s: cannot be written: %s", f->path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* A writer that opened the file before keel replaced it may still write to
 * it, and what it writes would reach no name. Where the system tells who
 * holds the file replaced (fd) open for writing, keel waits for the last
 * such writer to close it, CFG_WRITER_WAIT_MS at most; where it cannot tell,
 * the file is watched for CFG_SETTLE_MS. When its size or mtime has moved
 * from what keel read (st), its whole content is handed back: 1 then, 0 not. */
static int late_write(int fd, const struct stat *st, char **text, size_t *n)
{
    struct stat now;
    int64_t t0 = chrono_mono_ms();
    for (;;) {
        int writers = platform_writers(fd);
        if (fstat(fd, &now) < 0)
            return 0;
        int moved = now.st_size != st->st_size || now.st_mtim.tv_sec != st->st_mtim.tv_sec ||
            now.st_mtim.tv_nsec != st->st_mtim.tv_nsec;
        if (writers == 0) { /* nobody can write to it any more: what it holds is final */
            if (!moved)
                return 0;
            break;
        }
        if (writers < 0 && moved) {
            struct timespec settle = {0, 1000000}; /* let the writer finish what it writes */
            nanosleep(&settle, NULL);
            break;
        }
        /* by the clock: a process held off the CPU still gets the whole wait */
        if (chrono_mono_ms() - t0 >= (writers > 0 ? CFG_WRITER_WAIT_MS : CFG_SETTLE_MS)) {
            if (!moved)
                return 0;
            break;
        }
        struct timespec nap = {0, 500000};
        nanosleep(&nap, NULL);
    }
    if (fstat(fd, &now) < 0 || now.st_size > (off_t)CFG_MAX)
        return 0;
    char *b = malloc((size_t)now.st_size + 1);
    size_t got = 0;
    while (b && got < (size_t)now.st_size) {
        ssize_t r = pread(fd, b + got, (size_t)now.st_size - got, (off_t)got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    if (!b)
        return 0;
    b[got] = '\0';
    free(*text);
    *text = b;
    *n = got;
    return 1;
}

/* The file now at path, which keel just put there: on disk. */
static void sync_file(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

int cfg_commit(struct cfg_file *f, const char *text, size_t n, char *why, size_t whyn)
{
    return cfg_commit_as(f, text, n, 0, why, whyn);
}

/* 1 (and why) when the person made f read-only: keel neither rewrites nor
 * removes it. */
static int read_only(const struct cfg_file *f, char *why, size_t whyn)
{
    if (!f->exists || (f->st.st_mode & S_IWUSR))
        return 0;
    snprintf(why, whyn,
             "%s is read-only (mode %04o), so keel left it as it is: make it writable (chmod u+w) and run keel again",
             f->path, (unsigned)(f->st.st_mode & 07777));
    return 1;
}

int cfg_commit_as(struct cfg_file *f, const char *text, size_t n, int sync_after, char *why, size_t whyn)
{
    if (read_only(f, why, whyn))
        return -1;
    char tmp[PATH_MAX + 32];
    if (temp_beside(f, text, n, !sync_after, tmp, sizeof tmp, why, whyn) < 0)
        return -1;
    if (!unchanged(f)) {
        unlink(tmp);
        return 1;
    }
    if (!f->exists) { /* created: never over a file that appeared meanwhile */
        int rc = link(tmp, f->real);
        int e = errno;
        unlink(tmp);
        if (rc < 0 && e == EEXIST)
            return 1;
        if (rc < 0) {
            snprintf(why, whyn, "%s: cannot be created: %s", f->path, strerror(e));
            return -1;
        }
        if (sync_after)
            sync_file(f->real);
        sync_dir(f->real);
        return 0;
    }
    if (platform_swap(tmp, f->real) == 0) {
        /* The file displaced must be the one checked: same identity, size and
         * modification time (a rename changes its ctime, not its mtime). */
        struct stat old;
        if (lstat(tmp, &old) == 0 && old.st_ino == f->st.st_ino && old.st_dev == f->st.st_dev &&
            old.st_size == f->st.st_size && old.st_mtim.tv_sec == f->st.st_mtim.tv_sec &&
            old.st_mtim.tv_nsec == f->st.st_mtim.tv_nsec) {
            int fd = open(tmp, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
            unlink(tmp);
            if (sync_after)
                sync_file(f->real);
            sync_dir(f->real);
            int late = fd >= 0 && late_write(fd, &f->st, &f->late, &f->late_n);
            if (fd >= 0)
                close(fd);
            return late ? 2 : 0;
        }
        (void)platform_swap(tmp, f->real); /* written in between: theirs goes back */
        unlink(tmp);
        return 1;
    }
    if (errno != ENOSYS && errno != EINVAL && errno != ENOTSUP) {
        snprintf(why, whyn, "%s: cannot be replaced: %s", f->path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    if (rename(tmp, f->real) < 0) {
        snprintf(why, whyn, "%s: cannot be replaced: %s", f->path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    if (sync_after)
        sync_file(f->real);
    sync_dir(f->real);
    return 0;
}

int cfg_remove(struct cfg_file *f, char *why, size_t whyn)
{
    if (read_only(f, why, whyn)) /* the person made it read-only: it stays, as a commit would leave it */
        return -1;
    if (!unchanged(f))
        return 1;
    if (unlink(f->real) < 0 && errno != ENOENT) {
        snprintf(why, whyn, "%s: cannot be removed: %s", f->path, strerror(errno));
        return -1;
    }
    sync_dir(f->real);
    return 0;
}

/* The order of a backup's name past its prefix, as cfg_backup makes it:
 * YYYYMMDD-HHMMSS, then -2 ... -99 for more in the same second (none is 1),
 * as one number (the time's digits, then the count); -1 for a name
 * cfg_backup does not make (the person's own file). */
#define BACKUPS_PER_SECOND 99
static long long backup_order(const char *tail)
{
    long long v = 0;
    for (int i = 0; i < 15; i++) {
        if (i == 8 ? tail[i] != '-' : !isdigit((unsigned char)tail[i]))
            return -1;
        if (i != 8)
            v = v * 10 + (tail[i] - '0');
    }
    int n = 1, k = 16;
    if (tail[15] == '-') { /* -2 to -99: no leading zero, and "-1" is never made (the first has no number) */
        for (n = 0; k < 18 && isdigit((unsigned char)tail[k]) && (n || tail[k] != '0'); k++)
            n = n * 10 + tail[k] - '0';
        if (n < 2 || tail[k])
            return -1;
    } else if (tail[15]) {
        return -1;
    }
    return v * 100 + n;
}

struct backup {
    char *name;
    long long order;
};

static int by_order(const void *a, const void *b)
{
    const struct backup *x = a, *y = b;
    return (x->order > y->order) - (x->order < y->order);
}

static int keep_as_of(const char *path, time_t when, char *backup, size_t n);

void cfg_tidy(const char *path)
{
    char d[PATH_MAX], b[PATH_MAX], temp[PATH_MAX + 16], pending[PATH_MAX + 32], partial[PATH_MAX + 32];
    snprintf(d, sizeof d, "%s", path);
    snprintf(b, sizeof b, "%s", path);
    const char *dir = dirname(d);
    snprintf(temp, sizeof temp, ".%s.keel-", basename(b)); /* cfg_commit's new text, before its rename */
    snprintf(pending, sizeof pending, "%s.keel-backup-pending-", basename(b));
    snprintf(partial, sizeof partial, "%s.keel-backup-partial-", basename(b)); /* cut short: never a backup */
    size_t tl = strlen(temp), ql = strlen(pending), rl = strlen(partial);
    time_t now = time(NULL);
    DIR *dh = opendir(dir);
    if (!dh)
        return;
    struct dirent *e;
    while ((e = readdir(dh))) {
        size_t el = strlen(e->d_name);
        int is_temp = !strncmp(e->d_name, temp, tl) && el >= tl + 6 && /* the file's, or a side file's */
            (el == tl + 6 || (el > 12 && !strncmp(e->d_name + el - 12, ".keel-", 6))),
            is_pending = !strncmp(e->d_name, pending, ql) && el == ql + 6,
            is_partial = !strncmp(e->d_name, partial, rl) && el == rl + 6;
        is_temp |= is_partial;
        if (!is_temp && !is_pending)
            continue;
        char p[PATH_MAX * 2];
        struct stat st;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (lstat(p, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || now - st.st_mtime < 3600)
            continue; /* another run's, at work now, or not keel's */
        if (is_temp)
            unlink(p);
        else /* named for when it was taken, so it sorts among the older ones */
            keep_as_of(path, st.st_mtime, p, sizeof p);
    }
    closedir(dh);
}

void cfg_backups_prune(const char *path, const char *mine)
{
    const char *own = mine ? strrchr(mine, '/') : NULL; /* its name: it is never dropped */
    own = own ? own + 1 : mine;
    char d[PATH_MAX], b[PATH_MAX], prefix[PATH_MAX + 16];
    snprintf(d, sizeof d, "%s", path);
    snprintf(b, sizeof b, "%s", path);
    const char *dir = dirname(d);
    snprintf(prefix, sizeof prefix, "%s.keel-backup-", basename(b));
    size_t pl = strlen(prefix);
    DIR *dh = opendir(dir);
    if (!dh)
        return;
    struct backup *names = NULL;
    size_t k = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(dh))) {
        long long o = strncmp(e->d_name, prefix, pl) ? -1 : backup_order(e->d_name + pl);
        if (o <= 0)
            continue;
        if (k == cap) {
            struct backup *grown = realloc(names, (cap = cap ? cap * 2 : 16) * sizeof *names);
            if (!grown) { /* out of memory: none is dropped, rather than one that should stay */
                while (k)
                    free(names[--k].name);
                free(names);
                closedir(dh);
                return;
            }
            names = grown;
        }
        if ((names[k].name = strdup(e->d_name)))
            names[k++].order = o;
    }
    closedir(dh);
    if (k)
        qsort(names, k, sizeof *names, by_order);
    for (size_t i = 0; i < k; i++) {
        if (i + CFG_BACKUPS < k && !(own && *own && !strcmp(names[i].name, own))) {
            char victim[PATH_MAX * 2];
            snprintf(victim, sizeof victim, "%s/%s", dir, names[i].name);
            unlink(victim);
        }
        free(names[i].name);
    }
    free(names);
}

/* The i-th backup of path made in the second stamp: no number for the first. */
static void backup_name(char *out, size_t outn, const char *path, const char *stamp, int i)
{
    if (i == 1)
        snprintf(out, outn, "%s.keel-backup-%s", path, stamp);
    else
        snprintf(out, outn, "%s.keel-backup-%s-%d", path, stamp, i);
}

/* The first free backup name of path for this second, after the highest
 * this second has (a name pruned below it is not taken again: it would
 * sort as the oldest), into out; 0, or -1 with errno EEXIST when the
 * second's names are taken. */
static int backup_free_name(const char *path, time_t now, char *out, size_t outn)
{
    if (strlen(path) + sizeof ".keel-backup-YYYYMMDD-HHMMSS-99" > outn) {
        errno = ENAMETOOLONG;
        return -1;
    }
    struct tm tm;
    char stamp[32];
    gmtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    int top = 0; /* the highest this second has */
    for (int i = BACKUPS_PER_SECOND; i >= 1 && !top; i--) {
        struct stat st;
        backup_name(out, outn, path, stamp, i);
        if (lstat(out, &st) == 0)
            top = i;
    }
    if (top == BACKUPS_PER_SECOND) {
        errno = EEXIST;
        return -1;
    }
    backup_name(out, outn, path, stamp, top + 1);
    return 0;
}

int cfg_backup(const struct cfg_file *f, char *out, size_t outn)
{
    if (!f->exists)
        return 0;
    if (backup_free_name(f->path, time(NULL), out, outn) < 0) /* none free now: refused before anything is written */
        return -1;
    /* written as partial, and pending only once whole: a run killed while
     * writing leaves a partial one, which is never named as a backup */
    char part[PATH_MAX + 64];
    if ((size_t)snprintf(out, outn, "%s.keel-backup-pending-XXXXXX", f->path) >= outn ||
        (size_t)snprintf(part, sizeof part, "%s.keel-backup-partial-XXXXXX", f->path) >= sizeof part) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = mkstemp(part); /* mode 0600 */
    if (fd < 0)
        return -1;
    memcpy(out + strlen(out) - 6, part + strlen(part) - 6, 6);
    (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
    /* the person's config, as theirs: keel run by root (sudo) in their home
     * leaves them a backup they can read */
    int bad = write_all(fd, f->text, f->n) < 0 || fsync(fd) < 0 ||
        (f->st.st_uid != geteuid() && fchown(fd, f->st.st_uid, f->st.st_gid) < 0); /* 0600: its group is no matter */
    if (close(fd) < 0 || bad || link(part, out) < 0) { /* link: never over another run's pending one */
        int err = errno;
        unlink(part);
        errno = err;
        return -1;
    }
    unlink(part);
    return 0;
}

/* cfg_backup_keep, the name's time given. */
static int keep_as_of(const char *path, time_t when, char *backup, size_t n)
{
    char final[PATH_MAX];
    for (int tries = 0; tries < BACKUPS_PER_SECOND; tries++) {
        if (backup_free_name(path, when, final, sizeof final) < 0)
            return -1;
        if (link(backup, final) == 0) {
            unlink(backup);
            sync_dir(final);
            snprintf(backup, n, "%s", final);
            return 0;
        }
        if (errno != EEXIST)
            return -1; /* kept under its pending name */
    }
    return -1;
}

int cfg_backup_keep(const char *path, char *backup, size_t n)
{
    return keep_as_of(path, time(NULL), backup, n);
}

int cfg_side_exists(const char *path, const char *suffix)
{
    char p[PATH_MAX + 64];
    struct stat st;
    snprintf(p, sizeof p, "%s%s", path, suffix);
    return lstat(p, &st) == 0;
}
