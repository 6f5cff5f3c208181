/* platform.c: Linux-only calls, each with a portable fallback (see platform.h). */
#include "platform.h"

#include <signal.h>
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
