/* httpbench.c: make bench, remote servers. One table from one run.
 *
 *   keel-httpbench KEEL [NODE MCP_REMOTE_JS] [REPS]
 *   keel-httpbench --serve      the server alone (its port on stdout), for profiling
 *
 * A minimal MCP server over Streamable HTTP (forked from this program: one
 * thread, poll, HTTP/1.1 keep-alive, a JSON answer to every POST) on
 * loopback, reached three ways:
 *   - directly, by a libcurl client reusing its connection (the floor);
 *   - through keel wrap --url, by a client on keel's stdio;
 *   - through mcp-remote (npm), the usual stdio-to-HTTP bridge, likewise.
 * For each, interleaved over REPS repetitions (default 3), medians of:
 *   - serial tools/call, one at a time (SERIAL of them): p50 and p99 round
 *     trip; "added p50" is that minus the direct client's;
 *   - pipelined tools/call, WINDOW in flight (CALLS of them): calls/s and
 *     the bridge's CPU per call (utime+stime from /proc/PID/stat, all of
 *     its threads);
 *   - the bridge's RSS idle after initialize, and its peak (VmHWM).
 * keel wrap runs as users run it: the overlay on, keel's core tools exposed.
 * mcp-remote is skipped when its path is not given or not there. */
#include "benchutil.h"
#include "frame.h"
#include "jscan.h"

#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define SERIAL  2000
#define CALLS   10000
#define WINDOW  16
#define MAXREPS 9
#define CONNS   64

/* ---- the server ---- */

struct conn {
    int fd;
    char *buf;
    size_t n, cap;
};

/* Head and body in one write: two small writes meet Nagle and delayed ACKs. */
static void reply(int fd, int status, const char *body, size_t bn)
{
    char out[1024];
    int hn = snprintf(out, sizeof out,
                      "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n%.*s", status,
                      status == 200       ? "OK"
                          : status == 202 ? "Accepted"
                                          : "Method Not Allowed",
                      bn, (int)bn, body ? body : "");
    bench_put(fd, out, (size_t)hn);
}

/* One whole request at c->buf: answered; how many bytes it took, 0 if not whole yet. */
static size_t serve_one(struct conn *c)
{
    char *end = NULL;
    for (size_t i = 0; i + 3 < c->n; i++)
        if (!memcmp(c->buf + i, "\r\n\r\n", 4)) {
            end = c->buf + i + 4;
            break;
        }
    if (!end)
        return 0;
    size_t hl = (size_t)(end - c->buf), bl = 0;
    for (char *p = c->buf; p < end; p++)
        if ((p == c->buf || p[-1] == '\n') && !strncasecmp(p, "content-length:", 15))
            bl = strtoul(p + 15, NULL, 10);
    if (c->n < hl + bl)
        return 0;
    const char *body = end, *id, *m;
    size_t idn, mn;
    if (strncmp(c->buf, "POST ", 5)) {
        reply(c->fd, 405, NULL, 0);
    } else if (jscan_member(body, bl, "id", &id, &idn) != 1 || jscan_member(body, bl, "method", &m, &mn) != 1) {
        reply(c->fd, 202, NULL, 0);
    } else {
        char out[512];
        int on = mn == 12 && !memcmp(m, "\"initialize\"", 12)
            ? snprintf(out, sizeof out,
                       "{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"result\":{\"protocolVersion\":\"2025-06-18\","
                       "\"capabilities\":{\"tools\":{}},\"serverInfo\":{\"name\":\"bench\",\"version\":\"1\"}}}",
                       (int)idn, id)
            : mn == 12 && !memcmp(m, "\"tools/list\"", 12)
            ? snprintf(out, sizeof out,
                       "{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"result\":{\"tools\":[{\"name\":\"echo\","
                       "\"inputSchema\":{\"type\":\"object\"}}]}}",
                       (int)idn, id)
            : snprintf(out, sizeof out,
                       "{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"result\":{\"content\":[{\"type\":\"text\","
                       "\"text\":\"ok\"}]}}",
                       (int)idn, id);
        reply(c->fd, 200, out, (size_t)on);
    }
    return hl + bl;
}

static void server(int lfd)
{
    struct conn c[CONNS];
    int nc = 0;
    signal(SIGPIPE, SIG_IGN);
    for (;;) {
        struct pollfd pf[CONNS + 1];
        pf[0] = (struct pollfd){lfd, nc < CONNS ? POLLIN : 0, 0};
        for (int i = 0; i < nc; i++)
            pf[i + 1] = (struct pollfd){c[i].fd, POLLIN, 0};
        if (poll(pf, (nfds_t)nc + 1, -1) < 0)
            continue;
        for (int i = nc - 1; i >= 0; i--) {
            if (!pf[i + 1].revents)
                continue;
            if (c[i].n + 65536 > c[i].cap) {
                c[i].cap = c[i].cap ? c[i].cap * 2 : 131072;
                c[i].buf = realloc(c[i].buf, c[i].cap);
            }
            ssize_t got = read(c[i].fd, c[i].buf + c[i].n, c[i].cap - c[i].n);
            if (got <= 0) {
                close(c[i].fd);
                free(c[i].buf);
                c[i] = c[--nc];
                continue;
            }
            c[i].n += (size_t)got;
            size_t took;
            while ((took = serve_one(&c[i]))) {
                memmove(c[i].buf, c[i].buf + took, c[i].n - took);
                c[i].n -= took;
            }
        }
        if (pf[0].revents & POLLIN) {
            int fd = accept(lfd, NULL, NULL);
            if (fd >= 0) {
                int one = 1;
                setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                c[nc++] = (struct conn){fd, NULL, 0, 0};
            }
        }
    }
}

static pid_t start_server(int *port)
{
    int lfd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(lfd, (struct sockaddr *)&a, sizeof a) < 0 || listen(lfd, 128) < 0 ||
        getsockname(lfd, (struct sockaddr *)&a, &al) < 0) {
        perror("httpbench: server");
        exit(1);
    }
    *port = ntohs(a.sin_port);
    pid_t pid = fork();
    if (pid == 0) {
        server(lfd);
        _exit(0);
    }
    close(lfd);
    return pid;
}

/* ---- measuring ---- */

static int64_t cpu_ns(pid_t pid) /* every thread of the process */
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    unsigned long ut = 0, st = 0;
    if (f) {
        if (fscanf(f, "%*d %*s %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
            ut = st = 0;
        fclose(f);
    }
    return (int64_t)(ut + st) * (1000000000 / sysconf(_SC_CLK_TCK));
}

struct result {
    double p50_us, p99_us, calls_s, cpu_us, rss_kib, peak_kib;
};

static const char CALL_FMT[] =
    "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
    "\"arguments\":{\"text\":\"call %ld\"}}}";

static size_t write_cb(char *p, size_t s, size_t n, void *ud)
{
    (void)p;
    *(size_t *)ud += s * n;
    return s * n;
}

static void direct(const char *url, struct result *r)
{
    CURL *e = curl_easy_init();
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    h = curl_slist_append(h, "Accept: application/json, text/event-stream");
    size_t got = 0;
    char body[256];
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, write_cb);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &got);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
    static int64_t lat[SERIAL];
    for (long i = -200; i < SERIAL; i++) {
        snprintf(body, sizeof body, CALL_FMT, i + 1000, i);
        int64_t t0 = bench_now_ns();
        if (curl_easy_perform(e) != CURLE_OK) {
            fprintf(stderr, "httpbench: direct client failed\n");
            exit(1);
        }
        if (i >= 0)
            lat[i] = bench_now_ns() - t0;
    }
    qsort(lat, SERIAL, sizeof lat[0], bench_cmp_i64);
    r->p50_us = lat[SERIAL / 2] / 1e3;
    r->p99_us = lat[SERIAL * 99 / 100] / 1e3;
    curl_slist_free_all(h);
    curl_easy_cleanup(e);
}

struct bridge {
    pid_t pid;
    int in, out;
    struct frame_reader fr;
};

static const char *next_line(struct bridge *b, size_t *n)
{
    for (;;) {
        const char *line;
        enum frame_status st = frame_next(&b->fr, &line, n);
        if (st == FRAME_LINE)
            return line;
        if (st != FRAME_NEED || frame_fill(&b->fr) <= 0) {
            fprintf(stderr, "httpbench: the bridge went away\n");
            exit(1);
        }
    }
}

/* The next answer (notifications skipped); its id. An error is no answer
 * to measure: the run stops. */
static long answer(struct bridge *b)
{
    for (;;) {
        size_t n;
        const char *l = next_line(b, &n), *id, *res;
        size_t idn, rn;
        if (jscan_member(l, n, "id", &id, &idn) != 1)
            continue;
        if (jscan_member(l, n, "result", &res, &rn) != 1) {
            fprintf(stderr, "httpbench: an answer that is not a result: %.*s\n", (int)(n > 300 ? 300 : n), l);
            exit(1);
        }
        return strtol(id, NULL, 10);
    }
}

static void send_call(struct bridge *b, long id)
{
    char line[256];
    int n = snprintf(line, sizeof line, CALL_FMT, id, id);
    line[n++] = '\n';
    bench_put(b->in, line, (size_t)n);
}

static void via(char *const argv[], struct result *r)
{
    struct bridge b;
    b.pid = bench_spawn(argv, 0, &b.in, &b.out);
    if (b.pid < 0)
        exit(1);
    frame_init(&b.fr, b.out, 64u << 20);
    static const char init[] =
        "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
        "\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"bench\",\"version\":\"1\"}}}\n";
    static const char inited[] = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";
    bench_put(b.in, init, sizeof init - 1);
    answer(&b);
    bench_put(b.in, inited, sizeof inited - 1);
    long id = 1;
    for (int i = 0; i < 200; i++) { /* warm: connections, JIT */
        send_call(&b, id++);
        answer(&b);
    }
    usleep(200000);
    r->rss_kib = (double)bench_status_kib(b.pid, "VmRSS:");
    static int64_t lat[SERIAL];
    for (int i = 0; i < SERIAL; i++) {
        int64_t t0 = bench_now_ns();
        send_call(&b, id++);
        answer(&b);
        lat[i] = bench_now_ns() - t0;
    }
    qsort(lat, SERIAL, sizeof lat[0], bench_cmp_i64);
    r->p50_us = lat[SERIAL / 2] / 1e3;
    r->p99_us = lat[SERIAL * 99 / 100] / 1e3;
    int64_t c0 = cpu_ns(b.pid), t0 = bench_now_ns();
    long sent = 0, got = 0;
    while (sent < WINDOW)
        send_call(&b, id + sent++);
    while (got < CALLS) {
        answer(&b);
        got++;
        if (sent < CALLS)
            send_call(&b, id + sent++);
    }
    int64_t wall = bench_now_ns() - t0, cpu = cpu_ns(b.pid) - c0;
    r->calls_s = CALLS / (wall / 1e9);
    r->cpu_us = cpu / 1e3 / CALLS;
    r->peak_kib = (double)bench_status_kib(b.pid, "VmHWM:");
    close(b.in);
    int64_t until = bench_now_ns() + 3000000000LL;
    int st;
    while (waitpid(b.pid, &st, WNOHANG) == 0) {
        if (bench_now_ns() > until) {
            kill(b.pid, SIGKILL);
            waitpid(b.pid, &st, 0);
            break;
        }
        usleep(10000);
    }
    close(b.out);
    frame_free(&b.fr);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return v[n / 2];
}

enum { DIRECT, KEEL, REMOTE, NCFG };

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "--serve")) { /* the server alone, for profiling */
        int port;
        pid_t srv = start_server(&port);
        printf("{\"port\":%d}\n", port);
        fflush(stdout);
        waitpid(srv, NULL, 0);
        return 0;
    }
    if (argc < 2) {
        fprintf(stderr, "usage: keel-httpbench KEEL [NODE MCP_REMOTE_JS] [REPS]\n");
        return 2;
    }
    int remote = argc >= 4 && access(argv[3], R_OK) == 0;
    int reps = argc >= 5 ? atoi(argv[4]) : 3;
    if (reps < 1 || reps > MAXREPS)
        reps = 3;
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int port;
    pid_t srv = start_server(&port);
    char url[64], home[64] = "/tmp/keel-httpbench-XXXXXX";
    snprintf(url, sizeof url, "http://127.0.0.1:%d/mcp", port);
    if (!mkdtemp(home)) {
        perror("httpbench: mkdtemp");
        return 1;
    }
    setenv("HOME", home, 1); /* mcp-remote keeps its auth state under HOME */
    setenv("KEEL_STATE_DIR", home, 1);
    char *keel_argv[] = {argv[1], "--log-level", "error", "wrap", "--url", url, NULL};
    char *remote_argv[] = {remote ? argv[2] : NULL,
                           remote ? argv[3] : NULL,
                           url,
                           "--transport",
                           "http-only",
                           "--allow-http",
                           "--silent",
                           NULL};
    struct result all[NCFG][MAXREPS];
    memset(all, 0, sizeof all);
    for (int k = 0; k < reps; k++) {
        direct(url, &all[DIRECT][k]);
        via(keel_argv, &all[KEEL][k]);
        if (remote)
            via(remote_argv, &all[REMOTE][k]);
    }
    static const char *const names[NCFG] = {"direct (libcurl)", "keel wrap --url", "mcp-remote"};
    struct result med[NCFG];
    for (int c = 0; c < NCFG; c++) {
        double v[6][MAXREPS];
        for (int k = 0; k < reps; k++) {
            v[0][k] = all[c][k].p50_us, v[1][k] = all[c][k].p99_us, v[2][k] = all[c][k].calls_s;
            v[3][k] = all[c][k].cpu_us, v[4][k] = all[c][k].rss_kib, v[5][k] = all[c][k].peak_kib;
        }
        med[c] = (struct result){median(v[0], reps), median(v[1], reps), median(v[2], reps),
                                 median(v[3], reps), median(v[4], reps), median(v[5], reps)};
    }
    printf("\nremote server on loopback (Streamable HTTP, JSON answers), medians of %d runs\n", reps);
    printf("%-18s %9s %9s %11s %11s %11s %10s %10s\n", "client reaches it", "p50 us", "p99 us", "added p50", "calls/s",
           "CPU us/call", "RSS KiB", "peak KiB");
    for (int c = 0; c < NCFG; c++) {
        if (c == REMOTE && !remote) {
            printf("%-18s (not installed: npm ci in tests/)\n", names[c]);
            continue;
        }
        if (c == DIRECT)
            printf("%-18s %9.1f %9.1f %11s %11s %11s %10s %10s\n", names[c], med[c].p50_us, med[c].p99_us, "-", "-",
                   "-", "-", "-");
        else
            printf("%-18s %9.1f %9.1f %+11.1f %11.0f %11.1f %10.0f %10.0f\n", names[c], med[c].p50_us, med[c].p99_us,
                   med[c].p50_us - med[DIRECT].p50_us, med[c].calls_s, med[c].cpu_us, med[c].rss_kib, med[c].peak_kib);
    }
    if (remote) {
        double x = med[KEEL].calls_s / med[REMOTE].calls_s, rss = med[KEEL].rss_kib / med[REMOTE].rss_kib,
               add = med[KEEL].p50_us - med[DIRECT].p50_us;
        printf("keel vs mcp-remote: %.1fx the calls/s (target >= 5) %s, %.3f of its RSS (target <= 0.100) %s; "
               "added p50 %.1f us (target <= 50) %s\n",
               x, x >= 5 ? "ok" : "MISS", rss, rss <= 0.1 ? "ok" : "MISS", add, add <= 50 ? "ok" : "MISS");
    }
    kill(srv, SIGKILL);
    waitpid(srv, NULL, 0);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", home);
    if (system(cmd) != 0)
        fprintf(stderr, "httpbench: could not remove %s\n", home);
    curl_global_cleanup();
    return 0;
}
