/* rumination.c: check_rumination, heuristic frame_aware_containment 0.2.0.
 *
 * The question: has the person asked nearly this same thing several times in
 * the last while? Each prompt becomes its words (text.h); the content words
 * (stoplist removed, light English suffix stripping: -s -es -ies -ed -ing -ly
 * -ation; Chinese and Japanese characters also as pairs of neighbours) say what
 * it is about. A prior prompt's similarity is the share of this prompt's
 * content words it also holds (containment). But where the two share a run of
 * three or more words in a row ("how do I clear the cache in", "do I need a
 * visa for"), that run is the frame of a question, not its subject: then only
 * the words outside the shared runs are compared, so "clear the cache in
 * Chrome" does not match "clear the cache in npm", while a prompt sent again
 * word for word (nothing left outside the runs) matches fully. A prior prompt
 * is "similar" when this reaches similarity_threshold (default 0.25); only
 * prompts inside the window (default 90 min back from now) count, and the
 * check fires when at least threshold_count (default 3) are similar.
 *
 * Confidence grows with how far the matches clear the similarity bar. History
 * is the caller's and is never kept: the detector is a pure function. */
#include "detect.h"
#include "text.h"
#include "timefmt.h"

#include <stdlib.h>
#include <string.h>
#include <unicase.h>
#include <uninorm.h>

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

/* The word check_rumination's overlay twin (proxy/overlay.c) still compares
 * by Jaccard index; this description is that one. */
const char rum_description[] = "Content words (NFKC, case-folded, stoplist removed) of this prompt compared with "
                               "each prompt in the window by Jaccard index; fires when threshold_count or more "
                               "reach similarity_threshold.";

static const char rum_check_description[] =
    "Share of this prompt's content words (NFKC, case-folded, stoplist removed, light suffix stripping) found in "
    "each prompt in the window; words in a run of 3+ words both share are the question's frame, and then only "
    "the rest is compared. Fires when threshold_count or more reach similarity_threshold.";

double rum_confidence(double mean, double sim_thr)
{
    double excess = sim_thr < 1 ? (mean - sim_thr) / (1 - sim_thr) : 1;
    return 0.6 + 0.39 * (excess < 0 ? 0 : excess > 1 ? 1 : excess);
}

#define FNV_OFFSET 1469598103934665603ULL
#define FNV_PRIME 1099511628211ULL
#define RUN 3                      /* a shared run of this many words is a frame */

static uint64_t mix(uint64_t a, uint64_t b)
{
    uint64_t h = (a ^ (b + 0x9E3779B97F4A7C15ULL + (a << 6) + (a >> 2))) * 0xBF58476D1CE4E5B9ULL;
    h ^= h >> 31;
    return h ? h : 1;
}

/* The content key of an ASCII word: lower-cased, one common English suffix
 * stripped when at least three letters stay (-ations -ation -ings -ing -edly
 * -ed -ies(->y) -es -s -ly, longest first). */
static int ends(const char *b, size_t n, const char *suf, size_t l)
{
    return n >= l + 3 && memcmp(b + n - l, suf, l) == 0;
}

static uint64_t ascii_key(const char *s, size_t n)
{
    char b[64];
    if (n > sizeof b)
        n = sizeof b;
    for (size_t i = 0; i < n; i++)
        b[i] = s[i] >= 'A' && s[i] <= 'Z' ? (char)(s[i] + 32) : s[i];
    int y = 0;
    switch (n > 3 ? b[n - 1] : 0) {
    case 's':
        if (ends(b, n, "ations", 6))
            n -= 6;
        else if (ends(b, n, "ings", 4))
            n -= 4;
        else if (ends(b, n, "ies", 3))
            n -= 3, y = 1;
        else if (ends(b, n, "es", 2))
            n -= 2;
        else if (ends(b, n, "s", 1))
            n -= 1;
        break;
    case 'n':
        if (ends(b, n, "ation", 5))
            n -= 5;
        break;
    case 'g':
        if (ends(b, n, "ing", 3))
            n -= 3;
        break;
    case 'y':
        if (ends(b, n, "edly", 4))
            n -= 4;
        else if (ends(b, n, "ly", 2))
            n -= 2;
        break;
    case 'd':
        if (ends(b, n, "ed", 2))
            n -= 2;
        break;
    default:
        break;
    }
    uint64_t h = FNV_OFFSET;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)b[i];
        h *= FNV_PRIME;
    }
    if (y) {
        h ^= 'y';
        h *= FNV_PRIME;
    }
    return h ? h : 1;
}

/* The content key of a word that is not ASCII: its NFKC case fold, stemmed
 * like an ASCII word when the fold is ASCII (fullwidth letters), else its hash. */
static uint64_t folded_key(const char *s, size_t n, uint64_t hash)
{
    uint8_t buf[64];
    size_t len = sizeof buf;
    uint8_t *f = u8_casefold((const uint8_t *)s, n, NULL, UNINORM_NFKC, buf, &len);
    uint64_t k = mix(hash, 11);
    if (!f)
        return k;
    size_t j = 0;
    while (j < len && f[j] < 0x80)
        j++;
    if (j == len)
        k = ascii_key((const char *)f, len);
    if (f != buf)
        free(f);
    return k;
}

/* A Han, Hiragana or Katakana character standing alone as a word. */
static int ideograph(const char *s, size_t n)
{
    if (n != 3)
        return 0;
    unsigned c = ((unsigned)(s[0] & 0x0F) << 12) | ((unsigned)(s[1] & 0x3F) << 6) | (unsigned)(s[2] & 0x3F);
    return ((unsigned char)s[0] & 0xF0) == 0xE0 &&
           ((c >= 0x3040 && c <= 0x30FF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x4E00 && c <= 0x9FFF));
}

/* One prompt as a word sequence: each word's hash, its content key (0 for a
 * stopword), a second key for a pair of ideographs, and the hash of the run
 * of RUN words starting at it. */
struct tok {
    uint64_t h, key, key2, run;
};

struct toks {
    struct tok *v;
    size_t n, cap;
};

static int tokens(const char *s, size_t n, struct text_words *w, struct toks *t)
{
    w->n = 0;
    if (text_words(s, n, w) < 0)
        return -1;
    if (w->n > t->cap) {
        struct tok *v = realloc(t->v, w->n * sizeof *v);
        if (!v)
            return -1;
        t->v = v;
        t->cap = w->n;
    }
    t->n = w->n;
    int prev_ideo = 0;
    for (size_t i = 0; i < w->n; i++) {
        const struct text_word *x = &w->v[i];
        const char *a = s + x->start;
        size_t l = x->end - x->start;
        struct tok *k = &t->v[i];
        k->h = x->hash;
        k->key = k->key2 = 0;
        int ideo = ideograph(a, l);
        if (ideo) {
            k->key = mix(x->hash, 7);
            if (prev_ideo && w->v[i - 1].end == x->start)
                k->key2 = mix(w->v[i - 1].hash, x->hash);
        } else if (!text_is_stopword(x->hash)) {
            size_t j = 0;
            while (j < l && (unsigned char)a[j] < 0x80)
                j++;
            k->key = j == l ? ascii_key(a, l) : folded_key(a, l, x->hash);
        }
        prev_ideo = ideo;
        k->run = i + RUN <= w->n ? mix(mix(x->hash, w->v[i + 1].hash), w->v[i + 2].hash) : 0;
    }
    return 0;
}

/* An open-addressing map from 64-bit values (never 0) to dense indices. */
struct map {
    uint64_t *k;
    uint32_t *v;
    size_t mask, n;
};

static int map_init(struct map *m, size_t want)
{
    size_t cap = 16;
    while (cap < want * 2)
        cap <<= 1;
    m->k = calloc(cap, sizeof *m->k);
    m->v = malloc(cap * sizeof *m->v);
    m->mask = cap - 1;
    m->n = 0;
    return m->k && m->v ? 0 : -1;
}

static void map_free(struct map *m)
{
    free(m->k);
    free(m->v);
}

/* Index of key, added when add is set; -1 when absent. */
static long map_get(struct map *m, uint64_t key, int add)
{
    size_t j = key & m->mask;
    while (m->k[j]) {
        if (m->k[j] == key)
            return m->v[j];
        j = (j + 1) & m->mask;
    }
    if (!add)
        return -1;
    m->k[j] = key;
    m->v[j] = (uint32_t)m->n;
    return (long)m->n++;
}

/* The current prompt, prepared once for comparing with every history item. */
struct cur {
    struct toks t;
    struct map keys, runs;
    long *ki, *ki2, *ri;         /* per word: key index, pair-key index, run index */
    uint32_t *key_h, *key_c, *run_h;   /* stamps: key seen in the item, key counted, run seen */
};

static void cur_free(struct cur *c)
{
    free(c->t.v);
    map_free(&c->keys);
    map_free(&c->runs);
    free(c->ki);
    free(c->ki2);
    free(c->ri);
    free(c->key_h);
    free(c->key_c);
    free(c->run_h);
}

static int cur_init(struct cur *c, const char *s, size_t n, struct text_words *w)
{
    memset(c, 0, sizeof *c);
    if (tokens(s, n, w, &c->t) < 0)
        return -1;
    size_t m = c->t.n ? c->t.n : 1;
    if (map_init(&c->keys, 2 * m) < 0 || map_init(&c->runs, m) < 0)
        return -1;
    c->ki = malloc(m * sizeof *c->ki);
    c->ki2 = malloc(m * sizeof *c->ki2);
    c->ri = malloc(m * sizeof *c->ri);
    if (!c->ki || !c->ki2 || !c->ri)
        return -1;
    for (size_t i = 0; i < c->t.n; i++) {
        const struct tok *k = &c->t.v[i];
        c->ki[i] = k->key ? map_get(&c->keys, k->key, 1) : -1;
        c->ki2[i] = k->key2 ? map_get(&c->keys, k->key2, 1) : -1;
        c->ri[i] = k->run ? map_get(&c->runs, k->run, 1) : -1;
    }
    c->key_h = calloc(c->keys.n + 1, sizeof *c->key_h);
    c->key_c = calloc(c->keys.n + 1, sizeof *c->key_c);
    c->run_h = calloc(c->runs.n + 1, sizeof *c->run_h);
    return c->key_h && c->key_c && c->run_h ? 0 : -1;
}

/* Is word i of the current prompt inside a run it shares with the item? */
static int cur_framed(const struct cur *c, size_t i, uint32_t stamp)
{
    for (size_t k = i >= RUN - 1 ? i - (RUN - 1) : 0; k <= i; k++)
        if (c->ri[k] >= 0 && c->run_h[c->ri[k]] == stamp)
            return 1;
    return 0;
}

/* Similarity of the current prompt to one item (its words in t; framed is
 * scratch of t->n bytes). stamp is unique to the item. */
static double similarity(struct cur *c, const struct toks *t, unsigned char *framed, uint32_t stamp)
{
    if (c->keys.n == 0)
        return 0.0;
    memset(framed, 0, t->n);
    for (size_t j = 0; j < t->n; j++) {
        long r = t->v[j].run ? map_get(&c->runs, t->v[j].run, 0) : -1;
        if (r >= 0) {
            c->run_h[r] = stamp;
            memset(framed + j, 1, RUN);
        }
    }
    int frame = 0;
    for (size_t i = 0; i < c->t.n && !frame; i++)
        if ((c->ki[i] >= 0 || c->ki2[i] >= 0) && cur_framed(c, i, stamp))
            frame = 1;
    size_t rest = 0;    /* content words of the item outside the frame */
    for (size_t j = 0; j < t->n; j++) {
        if (frame && framed[j])
            continue;
        rest += t->v[j].key || t->v[j].key2;
        long k = t->v[j].key ? map_get(&c->keys, t->v[j].key, 0) : -1;
        if (k >= 0)
            c->key_h[k] = stamp;
        k = t->v[j].key2 ? map_get(&c->keys, t->v[j].key2, 0) : -1;
        if (k >= 0)
            c->key_h[k] = stamp;
    }
    size_t have = 0, shared = 0;
    for (size_t i = 0; i < c->t.n; i++) {
        if (frame && cur_framed(c, i, stamp))
            continue;
        long ks[2] = {c->ki[i], c->ki2[i]};
        for (int q = 0; q < 2; q++) {
            long k = ks[q];
            if (k < 0 || c->key_c[k] == stamp)
                continue;
            c->key_c[k] = stamp;
            have++;
            shared += c->key_h[k] == stamp;
        }
    }
    if (have == 0 || (frame && rest == 0))
        return frame ? 1.0 : 0.0;      /* one holds the other word for word */
    return (double)shared / (double)have;
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
        det_number(args, "similarity_threshold", "similarity_threshold", 0, 1, 0.25, &sim_thr, e) < 0)
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
    struct cur c = {0};
    struct toks t = {0};
    unsigned char *framed = NULL;
    size_t framed_cap = 0;
    struct match *m = malloc(sizeof *m * (size_t)(hn ? hn : 1));
    int oom = !m || cur_init(&c, cur, cur_n, &w) < 0;
    size_t count = 0;
    double best = 0, sum = 0;
    i = 0;
    for (const cJSON *it = hist->child; it && !oom; it = it->next, i++) {
        int64_t at;
        tf_parse_rfc3339(cJSON_GetObjectItemCaseSensitive(it, "at")->valuestring, &at, NULL);
        if (at < window_start)
            continue;
        const char *tx = cJSON_GetObjectItemCaseSensitive(it, "text")->valuestring;
        if (tokens(tx, strlen(tx), &w, &t) < 0) {
            oom = 1;
            break;
        }
        if (t.n > framed_cap) {
            unsigned char *f = realloc(framed, t.n + RUN);
            if (!f) {
                oom = 1;
                break;
            }
            framed = f;
            framed_cap = t.n;
        }
        double j = similarity(&c, &t, framed, (uint32_t)i + 1);
        if (j > best)
            best = j;
        if (j >= sim_thr && j > 0) {
            m[count++] = (struct match){(size_t)i, j};
            sum += j;
        }
    }
    text_words_free(&w);
    free(t.v);
    free(framed);
    cur_free(&c);
    if (oom) {
        free(m);
        return kerr_set(e, "INTERNAL_ERROR", NULL, "out of memory");
    }

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
               det_heuristic("frame_aware_containment", "0.2.0", rum_check_description));
    static const char *const tokens[] = {"fresh-context", "override-once", "disable-for-session", "lower-sensitivity"};
    det_overrides(o, tokens, detected ? 4 : 0);
    *out = o;
    return 0;
}
