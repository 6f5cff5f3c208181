/* relay.c: the floor for any stdio proxy on this machine.
 *
 *   relay -- CMD [ARGS...]
 *
 * Starts CMD and copies bytes both ways in a poll loop (read what is there,
 * write it all), with no framing and no parsing. make bench compares keel
 * with this, not with an ideal that no process in the middle can reach. */
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
    int in[2], out[2];
    if (pipe(in) < 0 || pipe(out) < 0)
        return 1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[0]), close(in[1]), close(out[0]), close(out[1]);
        execvp(argv[2], argv + 2);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    signal(SIGPIPE, SIG_IGN);
    int client_open = 1;
    for (;;) {
        struct pollfd p[2] = {{client_open ? 0 : -1, POLLIN, 0}, {out[0], POLLIN, 0}};
        if (poll(p, 2, -1) < 0 && errno != EINTR)
            break;
        if (p[0].revents && copy(0, in[1]) < 0) {
            client_open = 0;
            close(in[1]);
        }
        if (p[1].revents && copy(out[0], 1) < 0)
            break;
    }
    int st;
    waitpid(pid, &st, 0);
    return 0;
}
