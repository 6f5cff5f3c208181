/* hookbench.c: make bench's `keel hook` figure.
 *
 *   keel-hookbench KEEL
 *
 * Hosts run the prompt hook before every prompt, so its wall time is what the
 * person waits. This writes a Claude Code transcript of about 5 MB holding
 * 2,000 prompts of the person's (each followed by a reply and a tool result,
 * as real sessions are), then runs `keel hook UserPromptSubmit` on it as a
 * host does (a fresh process, the payload on stdin, output read to the end)
 * 41 times and prints the median and the 90th percentile of the wall time,
 * against the target of 20 ms. The first run creates the state file and is
 * not counted. */
#include "benchutil.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RUNS    41
#define PROMPTS 2000

static const char *const words[] = {"deploy", "plan",   "retry",  "queue", "budget", "vendor", "safe",   "fix",
                                    "test",   "orders", "client", "cache", "schema", "index",  "export", "report"};

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: keel-hookbench KEEL\n");
        return 64;
    }
    char dir[] = "/tmp/keel-hookbench-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    char path[256], state[256], input[600];
    snprintf(path, sizeof path, "%s/transcript.jsonl", dir);
    snprintf(state, sizeof state, "%s/state", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        return 1;
    static char filler[1601];
    memset(filler, 'x', 1600);
    unsigned seed = 7;
    long bytes = 0;
    for (int i = 0; i < PROMPTS; i++) {
        int s = i * 9; /* one prompt every 9 s, ending at 14:59:59 */
        char ts[40], prompt[200] = "";
        snprintf(ts, sizeof ts, "2026-05-15T%02d:%02d:%02d.000Z", 10 + s / 3600, (s / 60) % 60, s % 60);
        for (int w = 0; w < 12; w++) {
            seed = seed * 1103515245 + 12345;
            strcat(prompt, words[(seed >> 16) % 16]);
            strcat(prompt, w < 11 ? " " : "");
        }
        bytes +=
            fprintf(f,
                    "{\"parentUuid\":null,\"isSidechain\":false,\"userType\":\"external\",\"cwd\":\"/home/ana/shop\","
                    "\"sessionId\":\"b1\",\"version\":\"2.1.3\",\"type\":\"user\",\"message\":{\"role\":\"user\","
                    "\"content\":\"%s\"},\"uuid\":\"u%d\",\"timestamp\":\"%s\"}\n",
                    prompt, i, ts);
        bytes += fprintf(f,
                         "{\"type\":\"assistant\",\"message\":{\"id\":\"m%d\",\"role\":\"assistant\",\"content\":"
                         "[{\"type\":\"text\",\"text\":\"%.1200s\"}]},\"timestamp\":\"%s\"}\n",
                         i, filler, ts);
        bytes += fprintf(f,
                         "{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\","
                         "\"tool_use_id\":\"t%d\",\"content\":\"%.1200s\"}]},\"timestamp\":\"%s\"}\n",
                         i, filler, ts);
    }
    fclose(f);
    int n = snprintf(input, sizeof input,
                     "{\"hook_event_name\":\"UserPromptSubmit\",\"session_id\":\"b1\","
                     "\"transcript_path\":\"%s\",\"cwd\":\"/home/ana/shop\","
                     "\"prompt\":\"deploy the orders schema fix and retry the export\"}",
                     path);
    setenv("KEEL_STATE_DIR", state, 1);
    setenv("KEEL_NOW", "2026-05-15T15:00:30Z", 1);
    int64_t t[RUNS + 1];
    for (int r = 0; r <= RUNS; r++) {
        char *hook[] = {argv[1], "--log-level", "error", "hook", "UserPromptSubmit", NULL};
        int to_child, from_child;
        int64_t t0 = bench_now_ns();
        pid_t pid = bench_spawn(hook, 0, &to_child, &from_child);
        if (pid < 0)
            return 1;
        if (write(to_child, input, (size_t)n) != n)
            return 1;
        close(to_child);
        char buf[16384];
        while (read(from_child, buf, sizeof buf) > 0)
            ;
        close(from_child);
        int st;
        waitpid(pid, &st, 0);
        t[r] = bench_now_ns() - t0;
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            fprintf(stderr, "hookbench: keel hook exited %d\n", WEXITSTATUS(st));
    }
    qsort(t + 1, RUNS, sizeof *t, bench_cmp_i64);
    double p50 = t[1 + RUNS / 2] / 1e6, p90 = t[1 + RUNS * 9 / 10] / 1e6;
    printf("\nkeel hook UserPromptSubmit on a %.1f MB transcript with %d prompts (%d runs, a process each):\n",
           bytes / 1e6, PROMPTS, RUNS);
    printf("  wall per call   median %.1f ms, p90 %.1f ms   [<= 20 ms]  %s\n", p50, p90, p50 <= 20 ? "ok" : "MISS");
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : 1;
}
