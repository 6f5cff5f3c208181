/* pinbench.c: what pinning tool definitions costs tools/list (make bench).
 *
 *   keel-pinbench KEEL BENCH_SERVER
 *
 * keel wrap around the bench server with 200 tools (BENCH_TOOLS), pinning
 * on (the default) and off (the profile's pins: {enabled: false}): the
 * median round trip of 101 tools/list after the first (pins known), and the
 * first one alone (every tool pinned and written). Target: pinning adds at
 * most 1 ms to a listing. */
#include "benchutil.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define REPS 101

static char buf[1 << 20];

/* Sends one line and reads until a line holding "id":ID comes back. */
static int64_t round_trip(int to, int from, const char *line, int id)
{
    char want[32];
    snprintf(want, sizeof want, "\"id\":%d,", id);
    int64_t t0 = bench_now_ns();
    bench_put(to, line, strlen(line));
    size_t n = 0;
    for (;;) {
        ssize_t r = read(from, buf + n, sizeof buf - 1 - n);
        if (r <= 0)
            exit(1);
        n += (size_t)r;
        buf[n] = '\0';
        char *nl;
        while ((nl = memchr(buf, '\n', n))) {
            size_t len = (size_t)(nl - buf) + 1;
            int mine = bench_contains(buf, len, want);
            memmove(buf, nl + 1, n - len);
            n -= len;
            if (mine)
                return bench_now_ns() - t0;
        }
    }
}

static void one(const char *keel, const char *server, int pins, double *first_ms, double *median_ms)
{
    char dir[] = "/tmp/keel-pinbench-XXXXXX", prof[300];
    if (!mkdtemp(dir))
        exit(1);
    snprintf(prof, sizeof prof, "%s/profile.yaml", dir);
    FILE *f = fopen(prof, "w");
    if (!f)
        exit(1);
    fprintf(f, "pins:\n  enabled: %s\n", pins ? "true" : "false");
    fclose(f);
    setenv("KEEL_STATE_DIR", dir, 1);
    setenv("KEEL_PROFILE", prof, 1);
    setenv("BENCH_TOOLS", "200", 1);
    char *argv[] = {(char *)keel, "--log-level", "error", "wrap", "--", (char *)server, NULL};
    int to, from;
    pid_t pid = bench_spawn(argv, 0, &to, &from);
    if (pid < 0)
        exit(1);
    char line[200];
    round_trip(to, from,
               "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\","
               "\"capabilities\":{},\"clientInfo\":{\"name\":\"b\",\"version\":\"1\"}}}\n",
               0);
    int64_t t[REPS];
    snprintf(line, sizeof line, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}\n");
    *first_ms = (double)round_trip(to, from, line, 1) / 1e6;
    for (int i = 0; i < REPS; i++) {
        snprintf(line, sizeof line, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/list\"}\n", i + 2);
        t[i] = round_trip(to, from, line, i + 2);
    }
    qsort(t, REPS, sizeof *t, bench_cmp_i64);
    *median_ms = (double)t[REPS / 2] / 1e6;
    close(to);
    close(from);
    waitpid(pid, NULL, 0);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "pinbench: could not remove %s\n", dir);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: keel-pinbench KEEL BENCH_SERVER\n");
        return 64;
    }
    signal(SIGPIPE, SIG_IGN);
    double f_on[3], m_on[3], f_off[3], m_off[3];
    for (int r = 0; r < 3; r++) { /* interleaved: the machine's drift hits both */
        one(argv[1], argv[2], 0, &f_off[r], &m_off[r]);
        one(argv[1], argv[2], 1, &f_on[r], &m_on[r]);
    }
    double added = 0, first = 0;
    for (int r = 0; r < 3; r++) {
        added += (m_on[r] - m_off[r]) / 3;
        first += (f_on[r] - f_off[r]) / 3;
    }
    printf("pinned tool definitions, tools/list of 200 tools through keel wrap (3 interleaved runs)\n");
    printf("  %-44s %8.3f ms  %8.3f ms\n", "median listing, pins off / on", (m_off[0] + m_off[1] + m_off[2]) / 3,
           (m_on[0] + m_on[1] + m_on[2]) / 3);
    printf("  %-44s %8.3f ms   target <= 1 ms  %s\n", "pinning adds, per listing", added, added <= 1.0 ? "ok" : "MISS");
    printf("  %-44s %8.3f ms   (every tool pinned and written once)\n", "the first listing, pinning adds", first);
    return 0;
}
