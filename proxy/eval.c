/* eval.c: keel eval CORPUS, measured detector quality.
 *
 * Reads the labelled corpus (rumination.jsonl, sycophancy.jsonl,
 * hyperfocus.jsonl, one example a line: id, label, rationale, args), runs
 * each detector on each example in process, and prints per detector and per
 * pattern: examples, precision, recall, F1, the confusion counts and the
 * false-positive rate on negatives, then the worst misses by id. The exit
 * status is 1 when a detector falls below its floor:
 *   rumination, sycophancy: precision >= 0.90, recall >= 0.80, FP rate <= 0.05
 *   (the targets), or the floors of a regression file (--floors FILE);
 *   hyperfocus (a specification, not a judgement): every level right. */
#include "eval.h"

#include "detect.h"
#include "timefmt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MISSES_SHOWN 8

struct tally {
    const char *name;
    int tp, fp, tn, fn;
    char misses[MISSES_SHOWN][64];
    int nmisses;
};

static void miss(struct tally *t, const char *id, const char *what)
{
    if (t->nmisses < MISSES_SHOWN)
        snprintf(t->misses[t->nmisses++], sizeof t->misses[0], "%s (%s)", id, what);
}

static double ratio(int a, int b)
{
    return b ? (double)a / b : 1.0;
}

static void row(FILE *out, int md, const struct tally *t)
{
    double p = ratio(t->tp, t->tp + t->fp), r = ratio(t->tp, t->tp + t->fn);
    double f1 = p + r > 0 ? 2 * p * r / (p + r) : 0, fpr = ratio(t->fp, t->fp + t->tn);
    int n = t->tp + t->fp + t->tn + t->fn;
    if (md)
        fprintf(out, "| %s | %d | %.3f | %.3f | %.3f | %d / %d / %d / %d | %.3f |\n", t->name, n, p, r, f1, t->tp, t->fp,
                t->tn, t->fn, t->fp + t->tn ? fpr : 0.0);
    else
        fprintf(out, "%-34s %5d %9.3f %7.3f %6.3f %5d %5d %5d %5d %8.3f\n", t->name, n, p, r, f1, t->tp, t->fp, t->tn,
                t->fn, t->fp + t->tn ? fpr : 0.0);
}

/* Reads one JSONL file; calls fn for each parsed object. -1 if unreadable. */
static int each_line(const char *dir, const char *file, void (*fn)(const cJSON *ex, void *ctx), void *ctx)
{
    char path[1100];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    size_t cap = 1 << 16;
    char *line = malloc(cap);
    size_t n = 0;
    int c;
    while (line) {
        c = fgetc(f);
        if (c == '\n' || c == EOF) {
            line[n] = '\0';
            if (n) {
                cJSON *ex = cJSON_Parse(line);
                if (ex)
                    fn(ex, ctx);
                else
                    fprintf(stderr, "keel: %s: a line that is not JSON was skipped\n", path);
                cJSON_Delete(ex);
            }
            n = 0;
            if (c == EOF)
                break;
            continue;
        }
        if (n + 2 > cap) {
            char *b = realloc(line, cap * 2);
            if (!b)
                break;
            line = b;
            cap *= 2;
        }
        line[n++] = (char)c;
    }
    free(line);
    fclose(f);
    return 0;
}

static const char *str(const cJSON *o, const char *k)
{
    const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
    return s ? s : "";
}

static void score(struct tally *t, int want, int got, const char *id)
{
    if (want && got)
        t->tp++;
    else if (want)
        t->fn++, miss(t, id, "missed");
    else if (got)
        t->fp++, miss(t, id, "false alarm");
    else
        t->tn++;
}

static void rum_one(const cJSON *ex, void *ctx)
{
    struct tally *t = ctx;
    int64_t now;
    int off;
    if (tf_parse_rfc3339(str(ex, "now"), &now, &off) < 0)
        return;
    cJSON *out = NULL;
    kerr e = {0};
    int got = rum_check(cJSON_GetObjectItemCaseSensitive(ex, "args"), now, off, &out, &e) == 0 &&
              cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(out, "detected"));
    if (e.code)
        miss(t, str(ex, "id"), e.code);
    score(t, !strcmp(str(ex, "label"), "repeat"), got, str(ex, "id"));
    cJSON_Delete(out);
}

static const char *const patterns[] = {"unconditional_agreement", "praise_without_evidence", "escalating_validation",
                                       "repeated_reassurance_request"};

struct syc_ctx {
    struct tally all, per[4];
};

static void syc_one(const cJSON *ex, void *vctx)
{
    struct syc_ctx *c = vctx;
    cJSON *out = NULL;
    kerr e = {0};
    const char *want = str(ex, "expected");
    const char *got = "none";
    if (syc_check(cJSON_GetObjectItemCaseSensitive(ex, "args"), 0, 0, &out, &e) == 0)
        got = str(out, "pattern");
    else
        miss(&c->all, str(ex, "id"), e.code);
    score(&c->all, strcmp(want, "none") != 0, strcmp(got, "none") != 0, str(ex, "id"));
    for (int p = 0; p < 4; p++) {
        int w = !strcmp(want, patterns[p]), g = !strcmp(got, patterns[p]);
        if (w || g || strcmp(want, "none") == 0)   /* negatives for a pattern: the examples labelled none */
            score(&c->per[p], w, g, str(ex, "id"));
    }
    cJSON_Delete(out);
}

static void hyp_one(const cJSON *ex, void *ctx)
{
    struct tally *t = ctx;
    cJSON *out = NULL;
    kerr e = {0};
    const char *got = "error";
    if (hyp_check(cJSON_GetObjectItemCaseSensitive(ex, "args"), 0, 0, &out, &e) == 0)
        got = str(out, "level");
    const char *want = str(ex, "expected_level");
    if (!strcmp(got, want))
        t->tp++;
    else
        t->fn++, miss(t, str(ex, "id"), got);
    cJSON_Delete(out);
}

/* Floors: the targets, or a regression file's "detector precision recall fp_rate" lines. */
struct floors {
    double p, r, fpr;
};

static void read_floors(const char *path, struct floors *rum, struct floors *syc)
{
    FILE *f = path ? fopen(path, "r") : NULL;
    char name[64];
    double p, r, fpr;
    while (f && fscanf(f, "%63s %lf %lf %lf", name, &p, &r, &fpr) == 4) {
        if (!strcmp(name, "rumination"))
            *rum = (struct floors){p, r, fpr};
        else if (!strcmp(name, "sycophancy"))
            *syc = (struct floors){p, r, fpr};
    }
    if (f)
        fclose(f);
}

int eval_run(const char *dir, int markdown, const char *floors_file)
{
    struct floors fl[2] = {{0.90, 0.80, 0.05}, {0.90, 0.80, 0.05}};
    if (floors_file)
        read_floors(floors_file, &fl[0], &fl[1]);
    struct tally rum = {"rumination", 0, 0, 0, 0, {{0}}, 0};
    struct syc_ctx syc;
    memset(&syc, 0, sizeof syc);
    syc.all.name = "sycophancy (any pattern)";
    for (int p = 0; p < 4; p++)
        syc.per[p].name = patterns[p];
    struct tally hyp = {"hyperfocus (levels right)", 0, 0, 0, 0, {{0}}, 0};
    if (each_line(dir, "rumination.jsonl", rum_one, &rum) < 0 || each_line(dir, "sycophancy.jsonl", syc_one, &syc) < 0 ||
        each_line(dir, "hyperfocus.jsonl", hyp_one, &hyp) < 0) {
        fprintf(stderr, "keel: eval needs rumination.jsonl, sycophancy.jsonl and hyperfocus.jsonl in %s\n", dir);
        return 64;
    }
    FILE *o = stdout;
    if (markdown)
        fprintf(o, "| detector / pattern | examples | precision | recall | F1 | TP / FP / TN / FN | FP rate |\n"
                   "|---|---|---|---|---|---|---|\n");
    else
        fprintf(o, "%-34s %5s %9s %7s %6s %5s %5s %5s %5s %8s\n", "detector / pattern", "n", "precision", "recall", "F1",
                "TP", "FP", "TN", "FN", "FP rate");
    row(o, markdown, &rum);
    row(o, markdown, &syc.all);
    for (int p = 0; p < 4; p++)
        row(o, markdown, &syc.per[p]);
    int hn = hyp.tp + hyp.fn;
    if (markdown)
        fprintf(o, "| hyperfocus | %d | levels right: %d of %d | | | | |\n", hn, hyp.tp, hn);
    else
        fprintf(o, "%-34s %5d   levels right: %d of %d\n", "hyperfocus", hn, hyp.tp, hn);
    if (!markdown) {
        const struct tally *all[] = {&rum, &syc.all, &hyp};
        for (int i = 0; i < 3; i++)
            for (int k = 0; k < all[i]->nmisses; k++)
                printf("%s miss: %s\n", all[i]->name, all[i]->misses[k]);
    }
    int fail = 0;
    const struct tally *floors[] = {&rum, &syc.all};
    for (int i = 0; i < 2; i++) {
        const struct tally *t = floors[i];
        if (ratio(t->tp, t->tp + t->fp) < fl[i].p || ratio(t->tp, t->tp + t->fn) < fl[i].r ||
            ratio(t->fp, t->fp + t->tn) > fl[i].fpr) {
            fprintf(stderr, "keel: %s is below its floor (precision %.2f, recall %.2f, FP rate %.2f)\n", t->name,
                    fl[i].p, fl[i].r, fl[i].fpr);
            fail = 1;
        }
    }
    if (hyp.fn) {
        fprintf(stderr, "keel: hyperfocus got %d level%s wrong\n", hyp.fn, hyp.fn == 1 ? "" : "s");
        fail = 1;
    }
    return fail;
}
