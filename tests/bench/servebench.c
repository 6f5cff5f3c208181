/* servebench.c: make bench's `keel serve` row.
 *
 *   keel-servebench KEEL [BENCH_SERVER]
 *
 * A typical check_rumination (a prompt and two earlier ones) end to end
 * through `keel serve`, one call at a time over its pipes: the median round
 * trip, against the same check run in process (rum_check), so the difference
 * is what serving costs: framing, validation, the reply, the pipes, and any
 * state file write. Target: at most 30 us above the detector. The same
 * round trip to the bench server (BENCH_SERVER, if given), which answers
 * without parsing, is the floor of the pipes and the scheduler: what keel
 * itself adds is the rest. */
#include "benchutil.h"
#include "detect.h"
#include "frame.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CALLS 2000

static const char args[] =
    "{\"current_prompt\":\"is the orders migration safe to run on friday afternoon\","
    "\"history\":[{\"text\":\"is it safe to run the migration on friday\",\"at\":\"2026-05-16T10:00:00Z\"},"
    "{\"text\":\"should we run the orders migration friday\",\"at\":\"2026-05-16T10:20:00Z\"}]}";

/* The median round trip of CALLS lines to argv's process, one at a time. */
static double round_trips(char *const argv[], int64_t *t)
{
    int to_child, from_child;
    pid_t pid = bench_spawn(argv, 0, &to_child, &from_child);
    if (pid < 0)
        exit(1);
    struct frame_reader r;
    frame_init(&r, from_child, 1 << 20);
    char line[2048];
    for (int i = 0; i <= CALLS; i++) {
        int n = snprintf(line, sizeof line,
                         "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":"
                         "{\"name\":\"check_rumination\",\"arguments\":%s}}\n",
                         i, args);
        int64_t t0 = bench_now_ns();
        if (write(to_child, line, (size_t)n) != n)
            exit(1);
        const char *l;
        size_t ln;
        enum frame_status st;
        while ((st = frame_next(&r, &l, &ln)) == FRAME_NEED)
            if (frame_fill(&r) < 0)
                exit(1);
        if (st != FRAME_LINE)
            exit(1);
        if (i) /* the first call also writes the state file */
            t[i - 1] = bench_now_ns() - t0;
    }
    close(to_child);
    waitpid(pid, NULL, 0);
    frame_free(&r);
    qsort(t, CALLS, sizeof *t, bench_cmp_i64);
    return t[CALLS / 2] / 1e3;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: keel-servebench KEEL [BENCH_SERVER]\n");
        return 64;
    }
    static int64_t t[CALLS];
    /* The detector alone, in process. */
    cJSON *a = cJSON_Parse(args);
    for (int i = 0; i < CALLS; i++) {
        cJSON *out = NULL;
        kerr e = {0};
        int64_t t0 = bench_now_ns();
        int rc = rum_check(a, 1778932800000LL, 0, &out, &e); /* 2026-05-16T12:00:00Z */
        t[i] = bench_now_ns() - t0;
        if (rc < 0) {
            fprintf(stderr, "servebench: check_rumination refused the arguments: %s\n", e.code ? e.code : "?");
            return 1;
        }
        cJSON_Delete(out);
    }
    cJSON_Delete(a);
    qsort(t, CALLS, sizeof *t, bench_cmp_i64);
    double det = t[CALLS / 2] / 1e3;

    char dir[] = "/tmp/keel-servebench-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    setenv("KEEL_STATE_DIR", dir, 1);
    setenv("KEEL_NOW", "2026-05-16T12:00:00Z", 1);
    char *serve[] = {argv[1], "--log-level", "error", "serve", NULL};
    double p50 = round_trips(serve, t), p99 = t[CALLS * 99 / 100] / 1e3;
    printf("\nkeel serve, a typical check_rumination one call at a time (%d calls):\n", CALLS);
    printf("  round trip p50 %.1f us, p99 %.1f us; the detector in process %.1f us\n", p50, p99, det);
    if (argc > 2) {
        char *floor_argv[] = {argv[2], NULL};
        double floor = round_trips(floor_argv, t);
        printf("  the same round trip to a server that parses nothing: p50 %.1f us (pipes and scheduling)\n", floor);
        printf("  keel's own work: %.1f us beyond that and the detector\n", p50 - floor - det);
    }
    printf("  serving adds %.1f us   [<= 30 us]  %s\n", p50 - det, p50 - det <= 30 ? "ok" : "MISS");
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : 1;
}
