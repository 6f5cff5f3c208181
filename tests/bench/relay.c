/* relay.c: the floor for any stdio proxy on this machine.
 *
 *   relay -- CMD [ARGS...]
 *
 * Starts CMD and copies bytes both ways in a poll loop (read what is there,
 * write it all), with no framing and no parsing. make bench compares keel
 * with this, not with an ideal that no process in the middle can reach. */
#include "benchutil.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int copy(int from, int to)
{
    static char buf[1 << 16];
    ssize_t n = read(from, buf, sizeof buf);
    if (n <= 0)
        return -1;
    for (ssize_t off = 0; off < n;) {
        ssize_t w = write(to, buf + off, (size_t)(n - off));
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        off += w;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3 || strcmp(argv[1], "--")) {
        fprintf(stderr, "usage: relay -- CMD [ARGS...]\n");
        return 64;
    }
    int to_child, from_child;
    pid_t pid = bench_spawn(argv + 2, 1, &to_child, &from_child);
    if (pid < 0)
        return 1;
    signal(SIGPIPE, SIG_IGN);
    int client_open = 1;
    for (;;) {
        struct pollfd p[2] = {{client_open ? 0 : -1, POLLIN, 0}, {from_child, POLLIN, 0}};
        if (poll(p, 2, -1) < 0 && errno != EINTR)
            break;
        if (p[0].revents && copy(0, to_child) < 0) {
            client_open = 0;
            close(to_child);
        }
        if (p[1].revents && copy(from_child, 1) < 0)
            break;
    }
    int st;
    waitpid(pid, &st, 0);
    return 0;
}
