/* inspect.c: self_inspect, heuristic lens_overlap 0.1.0.
 *
 * Thought in, metathought out. The lens table (detectors/data/lenses.csv:
 * lens, rank, tier, question) is read once from its embedded copy. The
 * thought is cut into normalised words (text.h). Each lens scores 3 points
 * for each word of its name in the thought and 1 for each distinct content
 * word of its questions in the thought (stopwords never count). The best
 * lens wins; ties go to core before booster, then to the lens name in
 * alphabetical order. Within it, the question sharing the most content words
 * with the thought wins; ties go to the lowest rank. With no signal at all,
 * a universal question (detectors/data/universal.txt) is chosen by a stable
 * hash of the thought's words, and matched is false. It never returns nothing.
 * No model, no embeddings, no network: the table is the whole heuristic. */
#include "detect.h"
#include "embed.h"
#include "text.h"

#include <stdlib.h>
#include <string.h>

#define THOUGHT_MAX 8000

struct question {
    int lens, rank;
    char *text;
    struct text_set words;
};

struct lens {
    char name[64];
    int core;
    struct text_set name_words, content;
};

static struct lens *lenses;
static struct question *questions;
static int nlenses, nquestions;
static char *universal[16];
static int nuniversal;

static void set_of(const char *s, size_t n, struct text_set *out)
{
    struct text_words w = {0};
    out->v = NULL;
    out->n = 0;
    if (text_words(s, n, &w) == 0)
        text_set_from_words(&w, 1, out);
    text_words_free(&w);
}

static void add_row(const char *line, size_t n, void *ctx)
{
    (void)ctx;
    const char *f[4];
    size_t fl[4];
    int k = 0;
    const char *p = line, *end = line + n;
    while (k < 4) {
        const char *c = k < 3 ? memchr(p, ',', (size_t)(end - p)) : NULL;
        f[k] = p;
        fl[k] = c ? (size_t)(c - p) : (size_t)(end - p);
        k++;
        if (!c)
            break;
        p = c + 1;
    }
    if (k != 4 || (fl[0] == 4 && !memcmp(f[0], "lens", 4)))
        return; /* the header, or a malformed row */
    int li;
    for (li = 0; li < nlenses; li++)
        if (strlen(lenses[li].name) == fl[0] && !memcmp(lenses[li].name, f[0], fl[0]))
            break;
    if (li == nlenses) {
        struct lens *v = realloc(lenses, (size_t)(nlenses + 1) * sizeof *v);
        if (!v || fl[0] >= sizeof v->name)
            return;
        lenses = v;
        memset(&lenses[li], 0, sizeof lenses[li]);
        memcpy(lenses[li].name, f[0], fl[0]);
        lenses[li].core = fl[2] == 4 && !memcmp(f[2], "core", 4);
        char words[64];
        memcpy(words, f[0], fl[0]);
        words[fl[0]] = '\0';
        for (char *c = words; *c; c++)
            if (*c == '_')
                *c = ' ';
        set_of(words, fl[0], &lenses[li].name_words);
        nlenses++;
    }
    struct question *q = realloc(questions, (size_t)(nquestions + 1) * sizeof *q);
    if (!q)
        return;
    questions = q;
    q = &questions[nquestions++];
    q->lens = li;
    q->rank = atoi(f[1]);
    q->text = strndup(f[3], fl[3]);
    set_of(f[3], fl[3], &q->words);
    /* The lens's content words: the union of its questions'. */
    struct text_set *u = &lenses[li].content;
    uint64_t *v = realloc(u->v, (u->n + q->words.n + 1) * sizeof *v);
    if (!v)
        return;
    u->v = v;
    for (size_t i = 0; i < q->words.n; i++) {
        size_t j = 0;
        while (j < u->n && u->v[j] != q->words.v[i])
            j++;
        if (j == u->n)
            u->v[u->n++] = q->words.v[i];
    }
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void add_universal(const char *line, size_t n, void *ctx)
{
    (void)ctx;
    if (nuniversal < 16)
        universal[nuniversal++] = strndup(line, n);
}

static void load(void)
{
    static int done;
    if (done)
        return;
    done = 1;
    const struct embed_blob *b = embed_find("detectors/data/lenses.csv");
    if (b)
        text_each_line(b->data, add_row, NULL);
    for (int i = 0; i < nlenses; i++)
        qsort(lenses[i].content.v, lenses[i].content.n, sizeof(uint64_t), cmp_u64);
    b = embed_find("detectors/data/universal.txt");
    if (b)
        text_each_line(b->data, add_universal, NULL);
}

int insp_check(const cJSON *args, int64_t now_ms, int offset_s, cJSON **out, kerr *e)
{
    (void)now_ms;
    (void)offset_s;
    static const char *const keys[] = {"thought", NULL};
    const char *t;
    size_t n;
    if (det_known_keys(args, keys, "", e) < 0 ||
        det_string(args, "thought", "thought", 1, NULL, THOUGHT_MAX, &t, &n, e) < 0)
        return -1;
    if (!n)
        return kerr_set(e, "INPUT_INVALID", "thought",
                        "thought must not be empty: describe what you are doing or believe");
    load();
    struct text_words w = {0};
    struct text_set th = {0};
    if (text_words(t, n, &w) < 0 || text_set_from_words(&w, 1, &th) < 0) {
        text_words_free(&w);
        return kerr_set(e, "INTERNAL_ERROR", NULL, "out of memory");
    }
    int best = -1;
    size_t best_score = 0;
    for (int i = 0; i < nlenses; i++) {
        size_t score = 3 * text_set_intersect(&th, &lenses[i].name_words) + text_set_intersect(&th, &lenses[i].content);
        if (!score)
            continue;
        if (best < 0 || score > best_score ||
            (score == best_score &&
             (lenses[i].core > lenses[best].core ||
              (lenses[i].core == lenses[best].core && strcmp(lenses[i].name, lenses[best].name) < 0)))) {
            best = i;
            best_score = score;
        }
    }
    cJSON *o = cJSON_CreateObject();
    char id[96];
    if (best >= 0) {
        int bq = -1;
        size_t bs = 0;
        for (int k = 0; k < nquestions; k++) {
            if (questions[k].lens != best)
                continue;
            size_t s = text_set_intersect(&th, &questions[k].words);
            if (bq < 0 || s > bs || (s == bs && questions[k].rank < questions[bq].rank)) {
                bq = k;
                bs = s;
            }
        }
        snprintf(id, sizeof id, "%s-%d", lenses[best].name, questions[bq].rank);
        cJSON_AddStringToObject(o, "id", id);
        cJSON_AddStringToObject(o, "lens", lenses[best].name);
        cJSON_AddStringToObject(o, "question", questions[bq].text);
        cJSON_AddStringToObject(o, "tier", lenses[best].core ? "core" : "booster");
        cJSON_AddBoolToObject(o, "matched", 1);
    } else {
        /* No lens: a universal question, by a stable hash of the words (FNV-1a). */
        uint64_t h = 1469598103934665603ULL;
        for (size_t i = 0; i < w.n; i++) {
            h ^= w.v[i].hash;
            h *= 1099511628211ULL;
        }
        int k = nuniversal ? (int)(h % (uint64_t)nuniversal) : 0;
        snprintf(id, sizeof id, "universal-%d", k + 1);
        cJSON_AddStringToObject(o, "id", id);
        cJSON_AddStringToObject(o, "lens", "universal");
        cJSON_AddStringToObject(o, "question", nuniversal ? universal[k] : "What am I assuming?");
        cJSON_AddStringToObject(o, "tier", "core");
        cJSON_AddBoolToObject(o, "matched", 0);
    }
    text_words_free(&w);
    text_set_free(&th);
    *out = o;
    return 0;
}
