/* platform.c: Linux-only calls, each with a portable fallback (see platform.h). */
#define _GNU_SOURCE /* renameat2 */
#include "platform.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifdef __linux__
#include <fcntl.h>
#include <sys/prctl.h>
#endif

int platform_die_with_parent(int parent_pid)
{
#ifdef __linux__
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
        return 0;
#endif
    return getppid() == parent_pid ? 0 : -1;
}

void platform_grow_pipe(int fd)
{
#if defined(__linux__) && defined(F_SETPIPE_SZ)
    if (fd >= 0)
        (void)fcntl(fd, F_SETPIPE_SZ, 1 << 20);
#else
    (void)fd;
#endif
}

void platform_prefault(void *p, size_t n)
{
#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), a = (uintptr_t)p & ~(page - 1),
              b = ((uintptr_t)p + n + page - 1) & ~(page - 1);
    (void)madvise((void *)a, b - a, MADV_POPULATE_WRITE);
#else
    (void)p;
    (void)n;
#endif
}

int platform_self_path(const char *argv0, char *buf, size_t n)
{
#ifdef __linux__
    ssize_t l = readlink("/proc/self/exe", buf, n - 1);
    if (l > 0 && (size_t)l < n - 1) {
        buf[l] = '\0';
        return 0;
    }
#endif
    char tmp[PATH_MAX];
    if (!argv0)
        return -1;
    if (strchr(argv0, '/')) {
        if (!realpath(argv0, tmp))
            return -1;
    } else { /* found through PATH */
        const char *path = getenv("PATH");
        int found = 0;
        while (path && *path && !found) {
            size_t dl = strcspn(path, ":");
            char cand[PATH_MAX];
            snprintf(cand, sizeof cand, "%.*s/%s", (int)dl, path, argv0);
            found = access(cand, X_OK) == 0 && realpath(cand, tmp) != NULL;
            path += dl + (path[dl] == ':');
        }
        if (!found)
            return -1;
    }
    if (strlen(tmp) >= n)
        return -1;
    strcpy(buf, tmp);
    return 0;
}

int platform_swap(const char *a, const char *b)
{
#if defined(__linux__) && defined(RENAME_EXCHANGE)
    return renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE);
#else
    (void)a;
    (void)b;
    errno = ENOSYS;
    return -1;
#endif
}

int platform_writers(int fd)
{
#if defined(__linux__) && defined(F_SETLEASE)
    /* A read lease is granted only while nobody holds the file open for
     * writing; given back at once, it is only a question. (While it is held,
     * an open for writing would break it with a SIGIO: callers ask about a
     * file that no longer has a name, which nobody can open.) */
    if (fcntl(fd, F_SETLEASE, F_RDLCK) == 0) {
        (void)fcntl(fd, F_SETLEASE, F_UNLCK);
        return 0;
    }
    return errno == EAGAIN ? 1 : -1;
#else
    (void)fd;
    return -1;
#endif
}
