/* detbench.c: the detectors in process, as make bench times them.
 *
 * Three generated inputs: check_rumination at its worst (an 8000-character
 * prompt and 500 history items of 8000 characters of varied English prose,
 * all in the window), a typical check_rumination (20 items of 100
 * characters), and check_sycophancy on a 16000-character response. Each time
 * is argument validation plus detection, the median of repetitions. */
#include "detect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const words[] = {
    "plan",    "database", "migration", "review", "schedule", "budget", "team",     "release", "customer", "report",
    "service", "latency",  "cache",     "index",  "query",    "deploy", "rollback", "test",    "design",   "meeting",
    "the",     "a",        "of",        "to",     "and",      "is",     "for",      "with",    "on",       "that"};

static char *prose(unsigned seed, size_t n)
{
    char *s = malloc(n + 1);
    size_t i = 0;
    while (i < n) {
        seed = seed * 1103515245 + 12345;
        const char *w = words[(seed >> 16) % (sizeof words / sizeof words[0])];
        size_t l = strlen(w);
        if (i + l + 2 > n)
            break;
        memcpy(s + i, w, l);
        i += l;
        s[i++] = (seed >> 8) % 13 == 0 ? '.' : ' ';
    }
    while (i < n)
        s[i++] = ' ';
    s[n] = '\0';
    return s;
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median_us(detector_fn fn, const cJSON *args, int reps)
{
    double *t = malloc(sizeof *t * (size_t)reps);
    for (int i = 0; i < reps; i++) {
        cJSON *out = NULL;
        kerr e = {0};
        double t0 = now_us();
        if (fn(args, 1778922000000LL, 0, &out, &e) < 0) {
            fprintf(stderr, "detbench: %s\n", e.message);
            exit(1);
        }
        t[i] = now_us() - t0;
        cJSON_Delete(out);
    }
    qsort(t, (size_t)reps, sizeof *t, cmp);
    double m = t[reps / 2];
    free(t);
    return m;
}

static cJSON *rumination_args(int items, size_t chars)
{
    cJSON *a = cJSON_CreateObject();
    char *p = prose(1, chars);
    cJSON_AddStringToObject(a, "current_prompt", p);
    free(p);
    cJSON *h = cJSON_AddArrayToObject(a, "history");
    for (int i = 0; i < items; i++) {
        cJSON *it = cJSON_CreateObject();
        p = prose((unsigned)i + 2, chars);
        cJSON_AddStringToObject(it, "text", p);
        free(p);
        cJSON_AddStringToObject(it, "at", "2026-05-16T08:30:00Z"); /* within the window of now */
        cJSON_AddItemToArray(h, it);
    }
    return a;
}

int main(void)
{
    cJSON *worst = rumination_args(500, 8000), *typical = rumination_args(20, 100), *syc = cJSON_CreateObject();
    char *p = prose(99, 16000);
    memcpy(p, "Great question! ", 16);
    cJSON_AddStringToObject(syc, "candidate_response", p);
    free(p);
    rum_check(typical, 1778922000000LL, 0, &(cJSON *){NULL}, &(kerr){0}); /* warm the stoplist */
    double w = median_us(rum_check, worst, 7), t = median_us(rum_check, typical, 2001),
           s = median_us(syc_check, syc, 201);
    printf("\ndetectors in process (argument validation + detection, median):\n");
    printf("  %-44s %10s %14s %10s\n", "", "keel", "reference (Python)", "target");
    printf("  %-44s %8.2f ms %13s %7s    %s\n", "check_rumination, 8000 chars + 500 x 8000", w / 1000, "~350 ms",
           "30 ms", w / 1000 <= 30 ? "ok" : "MISS");
    printf("  %-44s %8.1f us %13s %7s    %s\n", "check_rumination, 20 x 100 chars", t, "~230 us", "12 us",
           t <= 12 ? "ok" : "MISS");
    printf("  %-44s %8.1f us %13s %7s    %s\n", "check_sycophancy, 16000 chars", s, "~2400 us", "120 us",
           s <= 120 ? "ok" : "MISS");
    cJSON_Delete(worst);
    cJSON_Delete(typical);
    cJSON_Delete(syc);
    return 0;
}
