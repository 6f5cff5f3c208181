/* benchutil.c: see benchutil.h. */
#include "benchutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int64_t bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int bench_cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

void bench_put(int fd, const char *s, size_t n)
{
    while (n) {
        ssize_t w = write(fd, s, n);
        if (w <= 0)
            exit(0);
        s += w;
        n -= (size_t)w;
    }
}

int bench_contains(const char *s, size_t n, const char *w)
{
    size_t wn = strlen(w);
    for (size_t i = 0; i + wn <= n; i++)
        if (!memcmp(s + i, w, wn))
            return 1;
    return 0;
}

pid_t bench_spawn(char *const argv[], int path_search, int *to_child, int *from_child)
{
    int in[2], out[2];
    if (pipe(in) < 0 || pipe(out) < 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[0]), close(in[1]), close(out[0]), close(out[1]);
        if (path_search)
            execvp(argv[0], argv);
        else
            execv(argv[0], argv);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    *to_child = in[1];
    *from_child = out[0];
    return pid;
}

long bench_status_kib(pid_t pid, const char *field)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    long v = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, field, strlen(field)))
            v = strtol(line + strlen(field), NULL, 10);
    if (f)
        fclose(f);
    return v;
}
