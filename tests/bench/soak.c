/* soak.c: make soak (not in CI). keel wrap, overlay on, relays a long mixed
 * session, and its memory, descriptors and children must stay flat.
 *
 *   keel-soak KEEL [MESSAGES]        (default 1,000,000 client messages)
 *
 * The upstream is this same program (argv[1] "--server"): it answers every
 * tools/call, and on every 97th call first sends the client a request
 * (sampling/createMessage) and waits for the answer, on every 50th a
 * notification, on every 1000th a line that is not JSON; a call asking for
 * "big" gets a 16 MiB result (every 50,000th call). The client sends calls
 * (their arguments differ, and every 7th repeats an earlier one), some
 * notifications, some malformed lines, and answers every server request.
 * Sampled every 50,000 messages: keel's RSS (VmRSS), its open descriptors
 * (/proc/PID/fd) and its children. Reported: first, last and peak RSS, the
 * descriptor and child counts at the start and the end, and whether every
 * request got exactly one answer. */
#include "benchutil.h"
#include "frame.h"
#include "jscan.h"

#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BIG (16u << 20)

/* --- the upstream -------------------------------------------------------- */

static int server(void)
{
    struct frame_reader r;
    frame_init(&r, 0, 64u << 20);
    char *out = malloc(BIG + 512);
    long calls = 0;
    for (;;) {
        const char *line, *id, *m;
        size_t n, idn, mn;
        enum frame_status st = frame_next(&r, &line, &n);
        if (st == FRAME_EOF)
            return 0;
        if (st == FRAME_NEED) {
            if (frame_fill(&r) < 0)
                return 1;
            continue;
        }
        if (st != FRAME_LINE || jscan_member(line, n, "id", &id, &idn) != 1 ||
            jscan_member(line, n, "method", &m, &mn) != 1)
            continue; /* notifications, answers to our requests */
        char idb[64];
        snprintf(idb, sizeof idb, "%.*s", (int)(idn < 60 ? idn : 60), id);
        int len;
        if (mn == 12 && !memcmp(m, "\"initialize\"", 12)) {
            len = snprintf(out, 512,
                           "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"protocolVersion\":\"2025-06-18\","
                           "\"capabilities\":{\"tools\":{}},\"serverInfo\":{\"name\":\"soak\",\"version\":\"1\"}}}\n",
                           idb);
        } else if (mn == 12 && !memcmp(m, "\"tools/call\"", 12)) {
            calls++;
            static const char note[] = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":"
                                       "{\"level\":\"info\",\"data\":\"tick\"}}\n";
            static const char junk[] = "not json at all\n";
            if (calls % 50 == 0)
                bench_put(1, note, sizeof note - 1);
            if (calls % 1000 == 0)
                bench_put(1, junk, sizeof junk - 1);
            if (calls % 97 == 0) {
                char q[300];
                int ql =
                    snprintf(q, sizeof q,
                             "{\"jsonrpc\":\"2.0\",\"id\":\"s%ld\",\"method\":\"sampling/createMessage\","
                             "\"params\":{\"messages\":[{\"role\":\"user\",\"content\":{\"type\":\"text\",\"text\":"
                             "\"summarise item %ld\"}}],\"maxTokens\":20}}\n",
                             calls, calls);
                bench_put(1, q, (size_t)ql);
            }
            if (bench_contains(line, n, "\"big\"")) {
                len = snprintf(out, 512,
                               "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\","
                               "\"text\":\"",
                               idb);
                memset(out + len, 'x', BIG);
                len += BIG;
                len += snprintf(out + len, 64, "\"}]}}\n");
            } else {
                len = snprintf(out, 512,
                               "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\","
                               "\"text\":\"done %ld\"}]}}\n",
                               idb, bench_contains(line, n, "again") ? 7L : calls);
            }
        } else {
            len = snprintf(out, 512, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{}}\n", idb);
        }
        bench_put(1, out, (size_t)len);
    }
}

/* --- the driver ---------------------------------------------------------- */

static int count_dir(const char *path)
{
    DIR *d = opendir(path);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

static int children(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)pid, (int)pid);
    FILE *f = fopen(path, "r");
    int n = 0, c;
    long x;
    while (f && (c = fscanf(f, "%ld", &x)) == 1)
        n++;
    if (f)
        fclose(f);
    return n;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--server"))
        return server();
    if (argc < 2) {
        fprintf(stderr, "usage: keel-soak KEEL [MESSAGES]\n");
        return 64;
    }
    long total = argc > 2 ? atol(argv[2]) : 1000000;
    char self[4096];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    if (sl <= 0)
        return 1;
    self[sl] = '\0';
    char dir[] = "/tmp/keel-soak-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    setenv("KEEL_STATE_DIR", dir, 1);
    char *wrap[] = {argv[1], "--log-level", "error", "wrap", "--model-tools", "work", "--", self, "--server", NULL};
    int to_child, from_child;
    pid_t pid = bench_spawn(wrap, 0, &to_child, &from_child);
    if (pid < 0)
        return 1;
    struct frame_reader r;
    frame_init(&r, from_child, 64u << 20);
    static const char init[] =
        "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
        "\"2025-06-18\",\"capabilities\":{\"sampling\":{}},\"clientInfo\":{\"name\":\"soak\","
        "\"version\":\"1\"}}}\n";
    bench_put(to_child, init, sizeof init - 1);
    long sent = 0, answered = 0, requests = 0, server_requests = 0, peak = 0, first = -1, last = 0;
    int fds0 = -1, kids0 = -1;
    char line[600], path[64];
    snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
    int64_t t0 = (int64_t)time(NULL);
    int waiting = 1; /* the initialize */
    while (answered < requests + 1 || sent < total) {
        /* Keep a few requests in flight; send non-requests in between. */
        while (sent < total && waiting < 8) {
            int len;
            long k = sent++;
            if (k % 200 == 13) {
                len = snprintf(line, sizeof line,
                               "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\","
                               "\"params\":{\"progressToken\":%ld,\"progress\":1}}\n",
                               k);
            } else if (k % 5000 == 77) {
                len = snprintf(line, sizeof line, "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"tools/call\"\n", k);
                requests++; /* malformed: keel answers it itself */
                waiting++;
            } else {
                int big = k % 50000 == 49999, again = k % 7 == 3;
                len = snprintf(line, sizeof line,
                               "{\"jsonrpc\":\"2.0\",\"id\":%ld,\"method\":\"tools/call\",\"params\":"
                               "{\"name\":\"work\",\"arguments\":{\"query\":\"%s %ld\"}}}\n",
                               k,
                               big         ? "big"
                                   : again ? "again"
                                           : "item",
                               again ? 3L : k);
                requests++;
                waiting++;
            }
            bench_put(to_child, line, (size_t)len);
            if (sent % 50000 == 0) {
                long rss = bench_status_kib(pid, "VmRSS:");
                if (first < 0) {
                    first = rss;
                    fds0 = count_dir(path);
                    kids0 = children(pid);
                }
                last = rss;
                if (rss > peak)
                    peak = rss;
            }
        }
        const char *l;
        size_t n;
        enum frame_status st = frame_next(&r, &l, &n);
        if (st == FRAME_NEED) {
            if (frame_fill(&r) <= 0)
                break;
            continue;
        }
        if (st != FRAME_LINE)
            break;
        const char *id, *m;
        size_t idn, mn;
        if (jscan_member(l, n, "method", &m, &mn) == 1) {
            if (jscan_member(l, n, "id", &id, &idn) == 1) { /* a server request: answer it */
                int len = snprintf(line, sizeof line,
                                   "{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"result\":{\"role\":"
                                   "\"assistant\",\"model\":\"m\",\"content\":{\"type\":\"text\",\"text\":\"ok\"}}}\n",
                                   (int)idn, id);
                bench_put(to_child, line, (size_t)len);
                server_requests++;
            }
            continue;
        }
        answered++;
        waiting--;
    }
    int fds1 = count_dir(path), kids1 = children(pid);
    close(to_child);
    int st;
    waitpid(pid, &st, 0);
    frame_free(&r);
    printf("keel soak: %ld client messages (%ld requests, %ld server requests answered) in %lds\n", sent, requests + 1,
           server_requests, (long)((int64_t)time(NULL) - t0));
    printf("  answers  %ld of %ld requests  %s\n", answered, requests + 1, answered == requests + 1 ? "ok" : "MISS");
    printf("  RSS      first %ld KiB, last %ld KiB, peak %ld KiB  %s\n", first, last, peak,
           last <= first + 1024 ? "flat" : "GROWING");
    printf("  fds      %d at the first sample, %d at the end  %s\n", fds0, fds1, fds1 <= fds0 ? "ok" : "LEAK");
    printf("  children %d at the first sample, %d at the end  %s\n", kids0, kids1, kids1 <= kids0 ? "ok" : "LEAK");
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 && answered == requests + 1 && last <= first + 1024 && fds1 <= fds0 ? 0 : 1;
}
