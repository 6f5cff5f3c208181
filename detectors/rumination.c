/* rumination.c: check_rumination, heuristic word_overlap_jaccard 0.1.0.
 *
 * The question: has the person asked nearly this same thing several times in
 * the last while? Each prompt becomes the set of its content words (text.h,
 * stoplist removed). A prior prompt is "similar" when the Jaccard index of the
 * two sets, |A ∩ B| / |A ∪ B|, reaches similarity_threshold (default 0.55).
 * Only prompts inside the window (default 90 min back from now) count. The
 * check fires when at least threshold_count (default 3) prior prompts are
 * similar: one or two repeats are ordinary; three is a loop worth naming.
 *
 * Confidence grows with how far the matches clear the similarity bar. History
 * is the caller's and is never kept: the detector is a pure function. */
#include "detect.h"
#include "text.h"
#include "timefmt.h"

#include <stdlib.h>
#include <string.h>

#define RUM_MAX_PROMPT 8000
#define RUM_MAX_HISTORY 500
#define RUM_SKEW_MS 60000   /* history may be this far in the future (clock skew) */

struct match {
    size_t index;
    double sim;
};

static int by_sim(const void *a, const void *b)
{
    const struct match *x = a, *y = b;
    if (x->sim != y->sim)
        return x->sim < y->sim ? 1 : -1;
    return x->index < y->index ? 1 : -1;   /* then the most recent first */
}

static int set_of(const char *s, size_t n, struct text_words *w, struct text_set *set)
{
    w->n = 0;
    if (text_words(s, n, w) < 0)
        return -1;
    return text_set_from_words(w, 1, set);
}

const char rum_description[] = "Content words (NFKC, case-folded, stoplist removed) of this prompt compared with "
                               "each prompt in the window by Jaccard index; fires when threshold_count or more "
                               "reach similarity_threshold.";

double rum_confidence(double mean, double sim_thr)
{
    double excess = sim_thr < 1 ? (mean - sim_thr) / (1 - sim_thr) : 1;
    return 0.6 + 0.39 * (excess < 0 ? 0 : excess > 1 ? 1 : excess);
}

int rum_check(const cJSON *args, int64_t now_ms, int offset_s, cJSON **out, kerr *e)
{
    (void)offset_s;
    static const char *const keys[] = {"current_prompt", "history", "window_minutes", "threshold_count",
                                       "similarity_threshold", NULL};
    static const char *const item_keys[] = {"text", "at", NULL};
    const char *cur;
    size_t cur_n;
    long window, threshold;
    double sim_thr;
    if (det_known_keys(args, keys, "", e) < 0 ||
        det_string(args, "current_prompt", "current_prompt", 1, NULL, RUM_MAX_PROMPT, &cur, &cur_n, e) < 0 ||
        det_int(args, "window_minutes", "window_minutes", 1, 1440, 90, "WINDOW_OUT_OF_RANGE", &window, e) < 0 ||
        det_int(args, "threshold_count", "threshold_count", 2, 50, 3, NULL, &threshold, e) < 0 ||
        det_number(args, "similarity_threshold", "similarity_threshold", 0, 1, 0.55, &sim_thr, e) < 0)
        return -1;
    const cJSON *hist = cJSON_GetObjectItemCaseSensitive(args, "history");
    if (!hist)
        return kerr_set(e, "INPUT_INVALID", "history", "history is required (an empty array is fine)");
    if (!cJSON_IsArray(hist))
        return kerr_set(e, "INPUT_INVALID", "history", "history must be an array of {text, at}");
    int hn = cJSON_GetArraySize(hist);
    if (hn > RUM_MAX_HISTORY)
        return kerr_set(e, "INPUT_TOO_LARGE", "history", "history has more than %d items; keep the most recent",
                        RUM_MAX_HISTORY);

    /* Validate every item before doing any work. */
    int64_t prev = INT64_MIN, window_start = now_ms - (int64_t)window * 60000;
    int i = 0;
    for (const cJSON *it = hist->child; it; it = it->next, i++) {
        char f[48], pre[48];
        snprintf(pre, sizeof pre, "history[%d].", i);
        snprintf(f, sizeof f, "history[%d]", i);
        if (!cJSON_IsObject(it))
            return kerr_set(e, "INPUT_INVALID", f, "%s must be an object {text, at}", f);
        const char *t;
        size_t tn;
        int64_t at;
        char ft[48], fa[48];
        snprintf(ft, sizeof ft, "history[%d].text", i);
        snprintf(fa, sizeof fa, "history[%d].at", i);
        if (det_known_keys(it, item_keys, pre, e) < 0 ||
            det_string(it, "text", ft, 1, NULL, RUM_MAX_PROMPT, &t, &tn, e) < 0 ||
            det_time(it, "at", fa, &at, NULL, e) < 0)
            return -1;
        if (at < prev)
            return kerr_set(e, "HISTORY_OUT_OF_ORDER", fa, "history must be oldest first; %s is earlier than the item before it", fa);
        if (at > now_ms + RUM_SKEW_MS)
            return kerr_set(e, "HISTORY_OUT_OF_ORDER", fa, "%s is in the future", fa);
        prev = at;
    }

    struct text_words w = {0};
    struct text_set curset = {0}, s = {0};
    struct match *m = malloc(sizeof *m * (size_t)(hn ? hn : 1));
    if (!m || set_of(cur, cur_n, &w, &curset) < 0) {
        free(m);
        text_words_free(&w);
        text_set_free(&curset);
        return kerr_set(e, "INTERNAL_ERROR", NULL, "out of memory");
    }
    size_t count = 0;
    double best = 0, sum = 0;
    i = 0;
    for (const cJSON *it = hist->child; it; it = it->next, i++) {
        int64_t at;
        tf_parse_rfc3339(cJSON_GetObjectItemCaseSensitive(it, "at")->valuestring, &at, NULL);
        if (at < window_start)
            continue;
        const char *t = cJSON_GetObjectItemCaseSensitive(it, "text")->valuestring;
        if (set_of(t, strlen(t), &w, &s) < 0) {
            free(m);
            text_words_free(&w);
            text_set_free(&curset);
            return kerr_set(e, "INTERNAL_ERROR", NULL, "out of memory");
        }
        double j = curset.n ? text_jaccard(&curset, &s) : 0.0;
        text_set_free(&s);
        if (j > best)
            best = j;
        if (j >= sim_thr && j > 0) {
            m[count++] = (struct match){(size_t)i, j};
            sum += j;
        }
    }
    text_words_free(&w);
    text_set_free(&curset);

    int detected = count >= (size_t)threshold;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddBoolToObject(o, "detected", detected);
    cJSON_AddNumberToObject(o, "count", (double)count);
    cJSON_AddNumberToObject(o, "threshold", (double)threshold);
    cJSON_AddNumberToObject(o, "window_seconds", (double)(window * 60));
    cJSON_AddNumberToObject(o, "similarity_threshold", det_round(sim_thr));
    cJSON_AddNumberToObject(o, "best_similarity", det_round(best));
    if (detected) {
        qsort(m, count, sizeof *m, by_sim);
        cJSON *arr = cJSON_AddArrayToObject(o, "similar_prompts");
        for (size_t k = 0; k < count; k++) {
            const cJSON *it = cJSON_GetArrayItem(hist, (int)m[k].index);
            cJSON *p = cJSON_CreateObject();
            cJSON_AddStringToObject(p, "text", cJSON_GetObjectItemCaseSensitive(it, "text")->valuestring);
            cJSON_AddStringToObject(p, "at", cJSON_GetObjectItemCaseSensitive(it, "at")->valuestring);
            cJSON_AddNumberToObject(p, "similarity", det_round(m[k].sim));
            cJSON_AddItemToArray(arr, p);
        }
    }
    free(m);

    char reason[280];
    double confidence;
    if (detected) {
        confidence = rum_confidence(sum / (double)count, sim_thr);
        snprintf(reason, sizeof reason,
                 "This prompt closely matches %zu earlier prompts from the last %ld minutes (best word overlap %d%%). "
                 "Asking again may not bring a new answer; a different angle or a decision might.",
                 count, window, (int)(best * 100 + 0.5));
    } else if (count > 0) {
        confidence = 0.9 - 0.3 * (double)count / (double)threshold;
        snprintf(reason, sizeof reason,
                 "%zu earlier prompt%s from the last %ld minutes look%s similar; a loop is flagged at %ld.",
                 count, count == 1 ? "" : "s", window, count == 1 ? "s" : "", threshold);
    } else {
        confidence = 0.9;
        snprintf(reason, sizeof reason, "No earlier prompt from the last %ld minutes is similar to this one.", window);
    }
    det_common(o, confidence, reason,
               det_heuristic("word_overlap_jaccard", "0.1.0", rum_description));
    static const char *const tokens[] = {"fresh-context", "override-once", "disable-for-session", "lower-sensitivity"};
    det_overrides(o, tokens, detected ? 4 : 0);
    *out = o;
    return 0;
}
