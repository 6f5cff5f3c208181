/* bench.c: make bench. One table from one run.
 *
 *   keel-bench SERVER RELAY KEEL [REPS]
 *
 * Four ways for a client to reach the same server: directly, through the
 * no-parse relay (64 KiB buffers, one poll loop: the floor for any stdio
 * proxy here), through keel wrap as a pure relay (--overlay none), and
 * through keel wrap as users run it, its defaults (the overlay on): every
 * small call's identity and result through the loop detector, the hygiene
 * rules on every result, hyperfocus on the clock. The small calls are an
 * echo whose text differs in every call (a counter), so no result repeats;
 * the large results are the same call each time, so the loop detector sees
 * a repeat and annotates it.
 * The configurations are interleaved over REPS repetitions (default 11: with
 * 5, the CPU ratios of one run swung from 0.94 to 1.38 on the 2-core VM) and
 * the table shows medians:
 *   - pipelined small tools/call: 20000 calls, 64 in flight: calls/s and CPU
 *     time per call of the process in the middle (/proc/PID/schedstat, ns);
 *   - the same calls one at a time, 5000 of them: p50 and p99 latency, the
 *     time a process in the middle adds to a round trip (with 32 in flight
 *     latency is mostly queueing: Little's law makes it 64 / throughput);
 *   - an 8 MiB result, 10 times: MB/s and CPU ms per result;
 *   - the middle process's RSS when idle after initialize, and its peak.
 * Wall-clock figures swing from run to run on a 2-core machine: compare keel
 * with the relay, and trust CPU time most. */
#include "benchutil.h"
#include "frame.h"
#include "jscan.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CALLS   20000
#define SERIAL  5000
#define WINDOW  64
#define BIGS    10
#define MAXREPS 15

enum { DIRECT, RELAY, KEEL, OVERLAY, NCFG };
static const char *const cfg_names[NCFG] = {"direct", "relay (floor)", "keel wrap", "keel + overlay"};

struct proc {
    pid_t pid;
    int in, out;
    struct frame_reader r;
};

static void spawn(struct proc *p, char *const argv[])
{
    p->pid = bench_spawn(argv, 0, &p->in, &p->out);
    if (p->pid < 0)
        exit(1);
    frame_init(&p->r, p->out, 64u << 20);
}

static void put(struct proc *p, const char *s, size_t n)
{
    while (n) {
        ssize_t w = write(p->in, s, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            fprintf(stderr, "bench: write failed\n");
            exit(1);
        }
        s += w;
        n -= (size_t)w;
    }
}

static const char *get(struct proc *p, size_t *n)
{
    for (;;) {
        const char *line;
        enum frame_status st = frame_next(&p->r, &line, n);
        if (st == FRAME_LINE)
            return line;
        if (st == FRAME_EOF || st == FRAME_OVERSIZE || (st == FRAME_NEED && frame_fill(&p->r) <= 0)) {
            fprintf(stderr, "bench: the other side went away\n");
            exit(1);
        }
    }
}

static long id_of(const char *line, size_t n)
{
    const char *id;
    size_t idn;
    return jscan_member(line, n, "id", &id, &idn) == 1 ? strtol(id, NULL, 10) : -1;
}

/* CPU time of a process in ns: schedstat when the kernel has it, else stat ticks. */
static int64_t cpu_ns(pid_t pid)
{
    char path[64];
    long long ns;
    snprintf(path, sizeof path, "/proc/%d/schedstat", (int)pid);
    FILE *f = fopen(path, "r");
    if (f) {
        int ok = fscanf(f, "%lld", &ns) == 1;
        fclose(f);
        if (ok)
            return ns;
    }
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    f = fopen(path, "r");
    unsigned long ut = 0, st = 0;
    if (f) {
        if (fscanf(f, "%*d %*s %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
            ut = st = 0;
        fclose(f);
    }
    return (int64_t)(ut + st) * (1000000000 / sysconf(_SC_CLK_TCK));
}

static void handshake(struct proc *p)
{
    static const char init[] =
        "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
        "\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"bench\",\"version\":\"1\"}}}\n"
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";
    size_t n;
    put(p, init, sizeof init - 1);
    get(p, &n);
}

static void finish(struct proc *p)
{
    close(p->in);
    int st;
    waitpid(p->pid, &st, 0);
    close(p->out);
    frame_free(&p->r);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static double cmp_d_median(double *v, int n)
{
    for (int i = 1; i < n; i++) /* insertion sort: n is tiny */
        for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return n ? (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2) : 0;
}

struct result {
    double calls_s, p50_us, p99_us, cpu_us_call, mb_s, cpu_ms_big, cpu_ms_later, idle_kb, peak_kb;
};

static void run(char *const argv[], int middle, struct result *res)
{
    static int64_t sent[CALLS + 1], lat[CALLS];
    struct proc p;
    char line[256];
    size_t n;
    spawn(&p, argv);
    handshake(&p);
    usleep(100000);
    res->idle_kb = middle ? (double)bench_status_kib(p.pid, "VmRSS:") : 0;

    /* Pipelined small calls. */
    int64_t c0 = cpu_ns(p.pid), t0 = bench_now_ns();
    int next = 1, done = 0, inflight = 0;
    while (done < CALLS) {
        while (inflight < WINDOW && next <= CALLS) {
            int len = snprintf(line, sizeof line,
                               "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":\"work\","
                               "\"arguments\":{\"query\":\"status of job %d\"}}}\n",
                               next, next);
            sent[next] = bench_now_ns();
            put(&p, line, (size_t)len);
            next++;
            inflight++;
        }
        const char *r = get(&p, &n);
        long id = id_of(r, n);
        if (id >= 1 && id <= CALLS) {
            lat[done++] = bench_now_ns() - sent[id];
            inflight--;
        }
    }
    int64_t t1 = bench_now_ns(), c1 = cpu_ns(p.pid);
    res->calls_s = CALLS / ((double)(t1 - t0) / 1e9);
    res->cpu_us_call = middle ? (double)(c1 - c0) / 1000 / CALLS : 0;

    /* One at a time: the latency a hop adds. */
    for (int i = 0; i < SERIAL; i++) {
        int len = snprintf(line, sizeof line,
                           "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":\"work\","
                           "\"arguments\":{\"query\":\"status of job %d\"}}}\n",
                           i + 1, i + 1);
        int64_t s0 = bench_now_ns();
        put(&p, line, (size_t)len);
        get(&p, &n);
        lat[i] = bench_now_ns() - s0;
    }
    qsort(lat, SERIAL, sizeof lat[0], cmp_i64);
    res->p50_us = (double)lat[SERIAL / 2] / 1000;
    res->p99_us = (double)lat[SERIAL * 99 / 100] / 1000;

    /* 8 MiB results. */
    size_t bytes = 0;
    c0 = cpu_ns(p.pid);
    t0 = bench_now_ns();
    int64_t c_first = 0;
    for (int k = 0; k < BIGS; k++) {
        if (k == 1)
            c_first = cpu_ns(p.pid);
        int len = snprintf(line, sizeof line,
                           "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":\"bigwork\","
                           "\"arguments\":{\"size\":\"big\"}}}\n",
                           SERIAL + 1 + k);
        put(&p, line, (size_t)len);
        get(&p, &n);
        bytes += n;
    }
    t1 = bench_now_ns();
    c1 = cpu_ns(p.pid);
    res->mb_s = (double)bytes / (1 << 20) / ((double)(t1 - t0) / 1e9);
    res->cpu_ms_big = middle ? (double)(c1 - c0) / 1e6 / BIGS : 0;
    res->cpu_ms_later = middle ? (double)(c1 - c_first) / 1e6 / (BIGS - 1) : 0;
    res->peak_kb = middle ? (double)bench_status_kib(p.pid, "VmHWM:") : 0;
    finish(&p);
}

/* What touching 8 MiB of fresh pages costs this machine (a VM's can be tens of ms). */
static double first_touch_ms(void)
{
    size_t n = 8u << 20;
    int64_t t0 = bench_now_ns();
    char *volatile p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return 0;
    for (size_t i = 0; i < n; i += 4096)
        p[i] = 1;
    double ms = (double)(bench_now_ns() - t0) / 1e6;
    munmap(p, n);
    return ms;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: keel-bench SERVER RELAY KEEL [REPS]\n");
        return 64;
    }
    int reps = argc > 4 ? atoi(argv[4]) : 11;
    if (reps < 1 || reps > MAXREPS)
        reps = 5;
    signal(SIGPIPE, SIG_IGN);
    char *argvs[NCFG][12] = {
        {argv[1], NULL},
        {argv[2], "--", argv[1], NULL},
        {argv[3], "--log-level", "error", "wrap", "--overlay", "none", "--", argv[1], NULL},
        {argv[3], "--log-level", "error", "wrap", "--", argv[1], NULL},
    };
    /* keel keeps its state in a directory of its own for the run. */
    static char dir[] = "/tmp/keel-bench-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    setenv("KEEL_STATE_DIR", dir, 1);
    setenv("KEEL_PROFILE", "/nonexistent/keel-bench-profile.yaml", 1);
    static struct result all[NCFG][MAXREPS];
    for (int rep = 0; rep < reps; rep++)
        for (int k = 0; k < NCFG; k++) {
            int c = (k + rep) % NCFG; /* interleave, rotating who goes first */
            run(argvs[c], c != DIRECT, &all[c][rep]);
            fprintf(stderr, "bench: rep %d/%d %s\n", rep + 1, reps, cfg_names[c]);
        }
    struct result med[NCFG];
    for (int c = 0; c < NCFG; c++) {
        double v[MAXREPS];
#define MED(field)                                                                                                     \
    for (int i = 0; i < reps; i++)                                                                                     \
        v[i] = all[c][i].field;                                                                                        \
    med[c].field = cmp_d_median(v, reps);
        MED(calls_s)
        MED(p50_us) MED(p99_us) MED(cpu_us_call) MED(mb_s) MED(cpu_ms_big) MED(cpu_ms_later) MED(idle_kb) MED(peak_kb)
    }
    printf("keel bench: %d calls pipelined %d deep (calls/s, CPU), %d one at a time (latency), %d x 8 MiB results;\n"
           "medians of %d interleaved runs\n\n",
           CALLS, WINDOW, SERIAL, BIGS, reps);
    printf("%-14s %9s %8s %8s %12s %9s %13s %10s %10s\n", "", "calls/s", "p50 us", "p99 us", "CPU us/call", "MB/s",
           "CPU ms/8MiB", "idle KiB", "peak KiB");
    for (int c = 0; c < NCFG; c++) {
        printf("%-14s %9.0f %8.1f %8.1f", cfg_names[c], med[c].calls_s, med[c].p50_us, med[c].p99_us);
        if (c == DIRECT)
            printf(" %12s %9.0f %13s %10s %10s\n", "-", med[c].mb_s, "-", "-", "-");
        else
            printf(" %12.2f %9.0f %13.2f %10.0f %10.0f\n", med[c].cpu_us_call, med[c].mb_s, med[c].cpu_ms_big,
                   med[c].idle_kb, med[c].peak_kb);
    }
    const struct result *k = &med[KEEL], *r = &med[RELAY], *d = &med[DIRECT], *ov = &med[OVERLAY];
    printf("\nrelay vs direct: %.2fx calls/s, %.2fx MB/s, +%.1f us p50\n", r->calls_s / d->calls_s, r->mb_s / d->mb_s,
           r->p50_us - d->p50_us);
    printf("keel vs relay (targets in brackets):\n");
    printf("  calls/s      %.2fx   [>= 0.9x]  %s\n", k->calls_s / r->calls_s,
           k->calls_s >= 0.9 * r->calls_s ? "ok" : "MISS");
    printf("  MB/s         %.2fx   [>= 0.9x]  %s\n", k->mb_s / r->mb_s, k->mb_s >= 0.9 * r->mb_s ? "ok" : "MISS");
    printf("  p50 added    %+.1f us [<= 8 us]  %s\n", k->p50_us - r->p50_us,
           k->p50_us - r->p50_us <= 8 ? "ok" : "MISS");
    printf("  CPU/call     %.2fx   [<= 1.5x]  %s\n", k->cpu_us_call / r->cpu_us_call,
           k->cpu_us_call <= 1.5 * r->cpu_us_call ? "ok" : "MISS");
    printf("  idle RSS     %.0f KiB [<= 4096]  %s\n", k->idle_kb, k->idle_kb <= 4096 ? "ok" : "MISS");
    printf("  peak RSS     %.0f KiB [<= 3 x 8 MiB + 4 MiB = 28672]  %s\n", k->peak_kb,
           k->peak_kb <= 28672 ? "ok" : "MISS");
    printf("  CPU/call, overlay off  %.2fx the relay's  [<= 1.3x]  %s\n", k->cpu_us_call / r->cpu_us_call,
           k->cpu_us_call <= 1.3 * r->cpu_us_call ? "ok" : "MISS");
    printf("keel + overlay (the default: loop, hyperfocus, sycophancy, rules on every call):\n");
    printf("  calls/s      %.2fx the relay's  [>= 0.7x]  %s\n", ov->calls_s / r->calls_s,
           ov->calls_s >= 0.7 * r->calls_s ? "ok" : "MISS");
    printf("  CPU/call     %.2fx the relay's  [<= 2x]    %s\n", ov->cpu_us_call / r->cpu_us_call,
           ov->cpu_us_call <= 2 * r->cpu_us_call ? "ok" : "MISS");
    printf("  8 MiB result, repeated (annotated): %.1f ms CPU, %.2fx the relay's  [<= 2.5x]  %s\n", ov->cpu_ms_big,
           ov->cpu_ms_big / r->cpu_ms_big, ov->cpu_ms_big <= 2.5 * r->cpu_ms_big ? "ok" : "MISS");
    /* The overlay holds a result whole to annotate it; the first 8 MiB result
     * is where keel's buffer first touches its pages, which the relay's 64
     * KiB never do. Shown apart, with what first touch costs here. */
    printf("    after the first: %.1f ms CPU, %.2fx the relay's; first touch of 8 MiB here: %.1f ms\n",
           ov->cpu_ms_later, ov->cpu_ms_later / r->cpu_ms_later, first_touch_ms());
    printf("  peak RSS     %.0f KiB [<= 3 x 8 MiB + 4 MiB = 28672]  %s\n", ov->peak_kb,
           ov->peak_kb <= 28672 ? "ok" : "MISS");
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : 1;
}
