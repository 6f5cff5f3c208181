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

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MISSES_SHOWN 8
#define MISSES_MAX   4096

/* Every example of rumination and sycophancy is in one split: dev (the
 * heuristics may be changed while reading its misses) or test (never read;
 * its figures are reported and its floors guard make test). */
enum { DEV, TEST, NSPLIT };
static const char *const split_name[NSPLIT] = {"dev", "test"};

struct tally {
    const char *name;
    int tp, fp, tn, fn;
};

/* The dev misses, listed after the tables (all of them with --misses). */
struct misses {
    char (*line)[160];
    int n, cap;
};

static void miss(struct misses *m, const cJSON *ex, const char *detector, const char *what)
{
    if (!m || m->n >= MISSES_MAX)
        return;
    if (m->n == m->cap) {
        int cap = m->cap ? m->cap * 2 : 64;
        void *p = realloc(m->line, (size_t)cap * sizeof *m->line);
        if (!p)
            return;
        m->line = p;
        m->cap = cap;
    }
    const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ex, "id"));
    const char *cat = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ex, "category"));
    const char *lang = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ex, "lang"));
    snprintf(m->line[m->n++], sizeof m->line[0], "%s miss: %s (%s) [%s, %s]", detector, id ? id : "?", what,
             cat ? cat : "-", lang ? lang : "-");
}

static double ratio(int a, int b)
{
    return b ? (double)a / b : 1.0;
}

static void row(FILE *out, int md, const struct tally *t, const char *split)
{
    double p = ratio(t->tp, t->tp + t->fp), r = ratio(t->tp, t->tp + t->fn);
    double f1 = p + r > 0 ? 2 * p * r / (p + r) : 0, fpr = ratio(t->fp, t->fp + t->tn);
    int n = t->tp + t->fp + t->tn + t->fn;
    if (md)
        fprintf(out, "| %s | %s | %d | %.3f | %.3f | %.3f | %d / %d / %d / %d | %.3f |\n", t->name, split, n, p, r, f1,
                t->tp, t->fp, t->tn, t->fn, t->fp + t->tn ? fpr : 0.0);
    else
        fprintf(out, "%-30s %-5s %5d %9.3f %7.3f %6.3f %5d %5d %5d %5d %8.3f\n", t->name, split, n, p, r, f1, t->tp,
                t->fp, t->tn, t->fn, t->fp + t->tn ? fpr : 0.0);
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

/* What every example's pass needs: which split it is in, where dev misses go,
 * and how many examples had no split (an error: the corpus is not usable). */
struct run {
    struct misses *dev_misses;
    int unsplit;
    int broken; /* examples of no known label, or whose arguments the tool refused */
};

/* An example the corpus cannot score: named on stderr (its id and why, never
 * its text), and eval fails with 64. */
static void broken(struct run *r, const cJSON *ex, const char *why)
{
    if (r->broken++ < 8)
        fprintf(stderr, "keel: example %s: %s\n", str(ex, "id"), why);
}

static int split_of(const cJSON *ex, struct run *r)
{
    const char *s = str(ex, "split");
    if (!strcmp(s, "dev"))
        return DEV;
    if (!strcmp(s, "test"))
        return TEST;
    if (r->unsplit++ < 3)
        fprintf(stderr, "keel: example %s has no \"split\" (dev or test)\n", str(ex, "id"));
    return -1;
}

static void score(struct tally *t, int want, int got, struct misses *m, const cJSON *ex, const char *detector)
{
    if (want && got)
        t->tp++;
    else if (want)
        t->fn++, miss(m, ex, detector, "missed");
    else if (got)
        t->fp++, miss(m, ex, detector, "false alarm");
    else
        t->tn++;
}

struct rum_ctx {
    struct run *run;
    struct tally t[NSPLIT];
};

static void rum_one(const cJSON *ex, void *vctx)
{
    struct rum_ctx *c = vctx;
    int sp = split_of(ex, c->run);
    int64_t now;
    int off;
    if (sp < 0)
        return;
    if (tf_parse_rfc3339(str(ex, "now"), &now, &off) < 0) {
        broken(c->run, ex, "its \"now\" is not an RFC 3339 time");
        return;
    }
    struct misses *m = sp == DEV ? c->run->dev_misses : NULL;
    cJSON *out = NULL;
    kerr e = {0};
    /* As keel's hooks and overlay ask it: only what asks counts. */
    cJSON *args = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(ex, "args"), 1);
    if (args && !cJSON_GetObjectItemCaseSensitive(args, "only_asks"))
        cJSON_AddTrueToObject(args, "only_asks");
    const char *label = str(ex, "label");
    int got =
        rum_check(args, now, off, &out, &e) == 0 && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(out, "detected"));
    char why[160];
    if (e.code) {
        snprintf(why, sizeof why, "check_rumination refused its arguments (%s)", e.code);
        broken(c->run, ex, why);
    } else if (strcmp(label, "repeat") && strcmp(label, "not_repeat")) {
        broken(c->run, ex, "its \"label\" is neither \"repeat\" nor \"not_repeat\"");
    } else {
        score(&c->t[sp], !strcmp(label, "repeat"), got, m, ex, "rumination");
    }
    cJSON_Delete(out);
    cJSON_Delete(args);
}

static const char *const patterns[] = {"unconditional_agreement", "praise_without_evidence", "escalating_validation",
                                       "repeated_reassurance_request"};

struct syc_ctx {
    struct run *run;
    struct tally all[NSPLIT], per[4][NSPLIT];
};

static void syc_one(const cJSON *ex, void *vctx)
{
    struct syc_ctx *c = vctx;
    int sp = split_of(ex, c->run);
    if (sp < 0)
        return;
    struct misses *m = sp == DEV ? c->run->dev_misses : NULL;
    cJSON *out = NULL;
    kerr e = {0};
    const char *want = str(ex, "expected");
    const char *got = "none";
    int known = !strcmp(want, "none");
    for (int p = 0; p < 4; p++)
        known |= !strcmp(want, patterns[p]);
    char why[160];
    if (!known) {
        broken(c->run, ex, "its \"expected\" is none or no pattern check_sycophancy names");
        return;
    }
    if (syc_check(cJSON_GetObjectItemCaseSensitive(ex, "args"), 0, 0, &out, &e) == 0) {
        got = str(out, "pattern");
    } else {
        snprintf(why, sizeof why, "check_sycophancy refused its arguments (%s)", e.code);
        broken(c->run, ex, why);
        return;
    }
    score(&c->all[sp], strcmp(want, "none") != 0, strcmp(got, "none") != 0, m, ex, "sycophancy");
    for (int p = 0; p < 4; p++) {
        int w = !strcmp(want, patterns[p]), g = !strcmp(got, patterns[p]);
        if (w || g || strcmp(want, "none") == 0) /* negatives for a pattern: the examples labelled none */
            score(&c->per[p][sp], w, g, NULL, ex, patterns[p]);
    }
    cJSON_Delete(out);
}

struct hyp_ctx {
    struct misses *m;
    struct tally t;
    struct run *run;
};

static void hyp_one(const cJSON *ex, void *vctx)
{
    struct hyp_ctx *c = vctx;
    cJSON *out = NULL;
    kerr e = {0};
    const char *got = "error";
    const char *want = str(ex, "expected_level");
    static const char *const levels[] = {"none", "gentle", "nudge", "hard", NULL};
    int known = 0;
    for (int i = 0; levels[i]; i++)
        known |= !strcmp(want, levels[i]);
    if (!known) {
        broken(c->run, ex, "its \"expected_level\" is none of none, gentle, nudge, hard");
        return;
    }
    if (hyp_check(cJSON_GetObjectItemCaseSensitive(ex, "args"), 0, 0, &out, &e) == 0) {
        got = str(out, "level");
    } else {
        char why[160];
        snprintf(why, sizeof why, "check_hyperfocus refused its arguments (%s)", e.code);
        broken(c->run, ex, why);
        return;
    }
    if (!strcmp(got, want))
        c->t.tp++;
    else
        c->t.fn++, miss(c->m, ex, "hyperfocus", got);
    cJSON_Delete(out);
}

void eval_floors_targets(struct eval_floors *f)
{
    *f = (struct eval_floors){{{0.90, 0.85, 0.03}, {0.90, 0.85, 0.03}}, 0.05, 1.0, 0.95, 0.5, 0.8};
}

static int share_ok(double x)
{
    return x >= 0 && x <= 1;
}

int eval_floors_read(const char *path, struct eval_floors *f)
{
    FILE *in = fopen(path, "r");
    if (!in) {
        fprintf(stderr, "keel: --floors %s: %s\n", path, strerror(errno));
        return -1;
    }
    char *line = NULL, name[32], extra[2];
    size_t cap = 0;
    int no = 0, bad = 0;
    while (!bad && getline(&line, &cap, in) > 0) {
        no++;
        char *h = strchr(line, '#');
        if (h)
            *h = '\0';
        double a, b, c;
        int n = sscanf(line, "%31s %lf %lf %lf %1s", name, &a, &b, &c, extra);
        if (n <= 0)
            continue; /* blank, or a comment */
        int det = !strcmp(name, "rumination") ? 0 : !strcmp(name, "sycophancy") ? 1 : -1;
        if (det >= 0 && n == 4 && share_ok(a) && share_ok(b) && share_ok(c))
            f->det[det][0] = a, f->det[det][1] = b, f->det[det][2] = c;
        else if (!strcmp(name, "gap") && n == 2 && share_ok(a))
            f->gap = a;
        else if (!strcmp(name, "loop") && n == 3 && a >= 0 && share_ok(b))
            f->loop_fa = a, f->loop_share = b;
        else if (!strcmp(name, "sessions") && n == 3 && a >= 0 && share_ok(b))
            f->sess_fa = a, f->sess_share = b;
        else
            bad = 1;
    }
    free(line);
    fclose(in);
    if (bad)
        fprintf(stderr,
                "keel: --floors %s, line %d: not a floor; the lines are \"rumination|sycophancy PRECISION RECALL "
                "FP_RATE\", \"gap G\", \"loop MAX_PER_1000 MIN_SHARE\" and \"sessions MAX_PER_100 MIN_SHARE\" "
                "(shares from 0 to 1)\n",
                path, no);
    return bad ? -1 : 0;
}

/* 1 (and says so) when t is below fl (precision, recall, FP rate), or
 * further than gap from dev. */
static int below(const struct tally *t, const struct tally *dev, const double *fl, double gap)
{
    double p = ratio(t->tp, t->tp + t->fp), r = ratio(t->tp, t->tp + t->fn), fpr = ratio(t->fp, t->fp + t->tn);
    double dp = ratio(dev->tp, dev->tp + dev->fp), dr = ratio(dev->tp, dev->tp + dev->fn),
           dfpr = ratio(dev->fp, dev->fp + dev->tn);
    if (p < fl[0] || r < fl[1] || fpr > fl[2]) {
        fprintf(stderr, "keel: %s on test is below its floor (precision %.2f, recall %.2f, FP rate %.2f)\n", t->name,
                fl[0], fl[1], fl[2]);
        return 1;
    }
    if (dp - p > gap || dr - r > gap || fpr - dfpr > gap) {
        fprintf(stderr, "keel: %s: test is more than %.2f worse than dev on a figure\n", t->name, gap);
        return 1;
    }
    return 0;
}

int eval_run(const char *dir, int markdown, const struct eval_floors *fl, int all_misses)
{
    struct misses dm = {0};
    struct run run = {&dm, 0, 0};
    struct rum_ctx rum = {&run, {{"rumination", 0, 0, 0, 0}, {"rumination", 0, 0, 0, 0}}};
    struct syc_ctx syc;
    memset(&syc, 0, sizeof syc);
    syc.run = &run;
    for (int sp = 0; sp < NSPLIT; sp++) {
        syc.all[sp].name = "sycophancy (any pattern)";
        for (int p = 0; p < 4; p++)
            syc.per[p][sp].name = patterns[p];
    }
    struct hyp_ctx hyp = {&dm, {"hyperfocus (levels right)", 0, 0, 0, 0}, &run};
    if (each_line(dir, "rumination.jsonl", rum_one, &rum) < 0 ||
        each_line(dir, "sycophancy.jsonl", syc_one, &syc) < 0 ||
        each_line(dir, "hyperfocus.jsonl", hyp_one, &hyp) < 0) {
        fprintf(stderr, "keel: eval needs rumination.jsonl, sycophancy.jsonl and hyperfocus.jsonl in %s\n", dir);
        free(dm.line);
        return 64;
    }
    if (run.broken) {
        fprintf(stderr, "keel: %d example%s in %s cannot be scored (above); fix or remove them\n", run.broken,
                run.broken == 1 ? "" : "s", dir);
        free(dm.line);
        return 64;
    }
    if (run.unsplit) {
        fprintf(stderr, "keel: %d example%s in %s without a split; each needs \"split\": \"dev\" or \"test\"\n",
                run.unsplit, run.unsplit == 1 ? "" : "s", dir);
        free(dm.line);
        return 64;
    }
    int ntest = rum.t[TEST].tp + rum.t[TEST].fp + rum.t[TEST].tn + rum.t[TEST].fn;
    int stest = syc.all[TEST].tp + syc.all[TEST].fp + syc.all[TEST].tn + syc.all[TEST].fn;
    if (!ntest || !stest) {
        fprintf(stderr, "keel: %s has no test split for %s; nothing would measure it\n", dir,
                !ntest ? "rumination" : "sycophancy");
        free(dm.line);
        return 64;
    }
    FILE *o = stdout;
    if (markdown)
        fprintf(o,
                "| detector / pattern | split | examples | precision | recall | F1 | TP / FP / TN / FN | FP rate |\n"
                "|---|---|---|---|---|---|---|---|\n");
    else
        fprintf(o, "%-30s %-5s %5s %9s %7s %6s %5s %5s %5s %5s %8s\n", "detector / pattern", "split", "n", "precision",
                "recall", "F1", "TP", "FP", "TN", "FN", "FP rate");
    for (int sp = 0; sp < NSPLIT; sp++)
        row(o, markdown, &rum.t[sp], split_name[sp]);
    for (int sp = 0; sp < NSPLIT; sp++)
        row(o, markdown, &syc.all[sp], split_name[sp]);
    for (int p = 0; p < 4; p++)
        for (int sp = 0; sp < NSPLIT; sp++)
            row(o, markdown, &syc.per[p][sp], split_name[sp]);
    int hn = hyp.t.tp + hyp.t.fn;
    if (markdown)
        fprintf(o, "| hyperfocus | all | %d | levels right: %d of %d | | | | |\n", hn, hyp.t.tp, hn);
    else
        fprintf(o, "%-30s %-5s %5d   levels right: %d of %d\n", "hyperfocus", "all", hn, hyp.t.tp, hn);
    if (!markdown) {
        int shown = all_misses || dm.n <= 3 * MISSES_SHOWN ? dm.n : 3 * MISSES_SHOWN;
        for (int k = 0; k < shown; k++)
            printf("%s\n", dm.line[k]);
        if (shown < dm.n)
            printf("(%d more dev misses: keel eval --misses; test misses are never listed)\n", dm.n - shown);
    }
    free(dm.line);
    int fail = below(&rum.t[TEST], &rum.t[DEV], fl->det[0], fl->gap) |
        below(&syc.all[TEST], &syc.all[DEV], fl->det[1], fl->gap);
    if (hyp.t.fn) {
        fprintf(stderr, "keel: hyperfocus got %d level%s wrong\n", hyp.t.fn, hyp.t.fn == 1 ? "" : "s");
        fail = 1;
    }
    return fail;
}
