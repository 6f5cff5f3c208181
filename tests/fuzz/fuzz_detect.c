/* fuzz_detect.c: the text detectors on any text. The input is pieces cut at
 * NUL bytes: the first is the prompt (or draft), the rest history items (or
 * the person's messages); the first byte of the input picks the detector and
 * its options. Text that is not UTF-8 is made so (each bad byte becomes '?'),
 * since keel's JSON reader hands the detectors valid UTF-8 only.
 * Oracles: no crash, no leak; the same call twice gives the same result;
 * check_rumination counts no more similar prompts than the history has, and
 * fires exactly when the count reaches the threshold; check_sycophancy names
 * one of its patterns, and detects exactly when that is not "none". */
#include "detect.h"
#include "text.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PIECES 24

/* s[0..n) as a NUL-terminated string of valid UTF-8: a byte that starts no
 * valid sequence becomes '?'. */
static char *utf8_of(const uint8_t *s, size_t n)
{
    char *t = malloc(n + 1);
    if (!t)
        abort();
    memcpy(t, s, n);
    t[n] = '\0';
    for (size_t i = 0; i < n;) {
        size_t l = 1;
        while (l <= 4 && i + l <= n && !text_valid_utf8(t + i, l))
            l++;
        if (l > 4 || i + l > n) {
            t[i++] = '?';
            continue;
        }
        i += l;
    }
    return t;
}

static char *run(detector_fn fn, const cJSON *args, int64_t now)
{
    cJSON *out = NULL;
    kerr e = {0};
    if (fn(args, now, 0, &out, &e) < 0) {
        if (!e.code)
            abort(); /* a refusal names its code */
        return strdup(e.code);
    }
    char *s = cJSON_PrintUnformatted(out);
    cJSON_Delete(out);
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned pick = data[0];
    data++, size--;
    const uint8_t *piece[PIECES];
    size_t plen[PIECES], np = 0, start = 0;
    for (size_t i = 0; i <= size && np < PIECES; i++)
        if (i == size || data[i] == 0) {
            piece[np] = data + start;
            plen[np++] = i - start;
            start = i + 1;
        }
    const int64_t now = 1778932800000LL; /* 2026-05-16T12:00:00Z */
    cJSON *a = cJSON_CreateObject();
    char *t = utf8_of(piece[0], plen[0]);
    int rum = pick & 1;
    if (rum) {
        cJSON_AddStringToObject(a, "current_prompt", t);
        cJSON *h = cJSON_AddArrayToObject(a, "history");
        for (size_t k = 1; k < np; k++) {
            char *x = utf8_of(piece[k], plen[k]), at[32];
            snprintf(at, sizeof at, "2026-05-16T11:%02u:00Z", (unsigned)(k * 2));
            cJSON *it = cJSON_CreateObject();
            cJSON_AddStringToObject(it, "text", x);
            cJSON_AddStringToObject(it, "at", at);
            cJSON_AddItemToArray(h, it);
            free(x);
        }
        if (pick & 2)
            cJSON_AddNumberToObject(a, "threshold_count", 2);
        if (pick & 4)
            cJSON_AddNumberToObject(a, "similarity_threshold", (pick >> 3) / 31.0);
    } else {
        if (!(pick & 2) || np == 1)
            cJSON_AddStringToObject(a, "candidate_response", t);
        if (np > 1) {
            cJSON *m = cJSON_AddArrayToObject(a, "recent_user_messages");
            for (size_t k = 1; k < np; k++) {
                char *x = utf8_of(piece[k], plen[k]);
                cJSON *it = cJSON_CreateObject();
                cJSON_AddStringToObject(it, "text", x);
                cJSON_AddItemToArray(m, it);
                free(x);
            }
        }
        if (pick & 4)
            cJSON_AddStringToObject(a, "decision_context", t);
    }
    free(t);
    detector_fn fn = rum ? rum_check : syc_check;
    char *r1 = run(fn, a, now), *r2 = run(fn, a, now);
    if (strcmp(r1, r2) != 0)
        abort(); /* the same call, another answer */
    cJSON *o = cJSON_Parse(r1);
    if (o && rum) {
        int count = cJSON_GetObjectItem(o, "count")->valueint, thr = cJSON_GetObjectItem(o, "threshold")->valueint;
        int det = cJSON_IsTrue(cJSON_GetObjectItem(o, "detected"));
        if (count < 0 || (size_t)count > np - 1 || det != (count >= thr))
            abort();
    } else if (o) {
        const char *p = cJSON_GetObjectItem(o, "pattern")->valuestring;
        int det = cJSON_IsTrue(cJSON_GetObjectItem(o, "detected"));
        if (det != (strcmp(p, "none") != 0))
            abort();
    }
    cJSON_Delete(o);
    free(r1);
    free(r2);
    cJSON_Delete(a);
    return 0;
}
