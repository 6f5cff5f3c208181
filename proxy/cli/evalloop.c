/* evalloop.c: keel eval --traces DIR, the loop detector on recorded sessions.
 *
 * DIR holds dev/ and test/, each a set of traces (*.jsonl): one tools/call a
 * line, {at, tool, arguments, result | error, label: work | loop, episode?,
 * kind?}, in the order the agent made them. Each trace is replayed through
 * the same code keel wrap runs: the call's identity (relay_identify), its
 * outcome taken from the response line as the relay sees it (relay_outcome),
 * and the window (loop_observe), with the default parameters.
 *
 * Two figures per split, side by side:
 *   false advisories per 1000 calls labelled work (target 0, at most 1);
 *   the share of loop episodes advised within 2 calls of the threshold: an
 *   episode's threshold is the call at which its pattern reaches the default
 *   threshold (the 4th call of a repeat or a reasked run, the 3rd failure,
 *   the 6th call of an alternation), counting the first, unlabelled call of
 *   the pattern; its calls labelled loop start at the second.
 * Misses and false advisories are listed for dev only: the test split is for
 * measuring, not for looking at. */
#include "eval.h"

#include "jscan.h"
#include "loop.h"
#include "relay.h"
#include "timefmt.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EPISODES_MAX 4096
#define SHOWN        12

struct episode {
    char file[96], id[32];
    int kind; /* LOOP_* from the label */
    int labelled; /* calls labelled loop */
    int advised_at; /* 1-based index among them of the first advisory; 0: none */
};

struct split {
    const char *name;
    int files, calls, work, loops, false_adv;
    int skipped; /* lines that are no labelled call: the traces are not usable */
    struct episode *ep;
    int nep;
    int kinds[5][3]; /* per kind: episodes reaching the threshold, caught in time, short */
    char shown[SHOWN][160];
    int nshown;
};

static int kind_of(const char *s)
{
    for (int k = 1; k <= LOOP_ALTERNATION; k++)
        if (s && !strcmp(s, loop_kind_names[k]))
            return k;
    return LOOP_NONE;
}

/* The labelled call at which an episode reaches the default threshold. */
static int threshold_index(int kind, const struct loop_params *p)
{
    switch (kind) {
    case LOOP_REPEAT:
        return p->repeat_threshold; /* the 4th call: the 3rd repeat */
    case LOOP_SAME_ERROR:
        return p->error_threshold - 1;
    case LOOP_REASKED:
        return p->reask_threshold - 1;
    case LOOP_ALTERNATION:
        return p->alternation_calls - 2; /* labelled from the second A */
    default:
        return 1;
    }
}

static void note(struct split *s, int show, const char *fmt, const char *a, int b, const char *c)
{
    if (show && s->nshown < SHOWN)
        snprintf(s->shown[s->nshown++], sizeof s->shown[0], fmt, a, b, c);
}

static struct episode *episode(struct split *s, const char *file, const char *id, int kind)
{
    for (int i = s->nep; i-- > 0;)
        if (!strcmp(s->ep[i].id, id) && !strcmp(s->ep[i].file, file))
            return &s->ep[i];
    if (s->nep == EPISODES_MAX)
        return NULL;
    struct episode *e = &s->ep[s->nep++];
    memset(e, 0, sizeof *e);
    snprintf(e->file, sizeof e->file, "%s", file);
    snprintf(e->id, sizeof e->id, "%s", id);
    e->kind = kind;
    return e;
}

/* One call of a trace through the detector. Returns 1 if it was advised. */
static int replay_call(struct loop_window *w, const struct loop_params *p, const cJSON *ex)
{
    const char *tool = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ex, "tool"));
    const char *at = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ex, "at"));
    struct loop_call c;
    memset(&c, 0, sizeof c);
    if (!tool || !at || tf_parse_rfc3339(at, &c.at, NULL) < 0)
        return -1;
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(ex, "arguments");
    char *raw = args ? cJSON_PrintUnformatted(args) : NULL;
    relay_identify(tool, strlen(tool), raw, raw ? strlen(raw) : 0, &c);
    free(raw);
    /* The response line as the relay would receive it. */
    cJSON *resp = cJSON_CreateObject();
    cJSON_AddStringToObject(resp, "jsonrpc", "2.0");
    cJSON_AddNumberToObject(resp, "id", 1);
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(ex, "result"),
                *err = cJSON_GetObjectItemCaseSensitive(ex, "error");
    cJSON_AddItemToObject(resp, res ? "result" : "error", cJSON_Duplicate(res ? res : err, 1));
    char *line = cJSON_PrintUnformatted(resp);
    cJSON_Delete(resp);
    struct jscan_top top;
    if (!line || !jscan_scan(line, strlen(line), &top)) {
        free(line);
        return -1;
    }
    relay_outcome(&top, &c);
    free(line);
    struct loop_finding f;
    char other[64];
    if (loop_observe(w, p, &c, tool, &f, other) < 0)
        return -1;
    return f.advise;
}

static void replay_file(struct split *s, const char *path, const char *name, const struct loop_params *p, int show)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return;
    s->files++;
    struct loop_window w = {0};
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    int lineno = 0;
    while ((got = getline(&line, &cap, f)) > 0) {
        lineno++;
        if (strspn(line, " \t\r\n") == (size_t)got)
            continue; /* a blank line: nothing, as in the corpus files */
        cJSON *ex = cJSON_ParseWithLength(line, (size_t)got);
        if (!ex) {
            fprintf(stderr, "keel: %s:%d: not JSON\n", path, lineno);
            s->skipped++;
            continue;
        }
        int adv = replay_call(&w, p, ex);
        const char *label = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ex, "label"));
        if (adv < 0 || !label) {
            fprintf(stderr, "keel: %s:%d: not a labelled call (tool, at, result or error, label)\n", path, lineno);
            s->skipped++;
            cJSON_Delete(ex);
            continue;
        }
        s->calls++;
        if (!strcmp(label, "loop")) {
            s->loops++;
            const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ex, "episode"));
            struct episode *e = episode(s, name, id ? id : "?",
                                        kind_of(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ex, "kind"))));
            if (e) {
                e->labelled++;
                if (adv && !e->advised_at)
                    e->advised_at = e->labelled;
            }
        } else {
            s->work++;
            if (adv) {
                s->false_adv++;
                note(s, show, "false advisory: %s:%d (%s)", name, lineno,
                     cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ex, "tool")));
            }
        }
        cJSON_Delete(ex);
    }
    free(line);
    fclose(f);
    loop_window_free(&w);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* 0; -1 no such folder (or out of memory), -2 its traces are not usable (said). */
static int replay_split(struct split *s, const char *dir, const struct loop_params *p, int show)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, s->name);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    char *names[1024];
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) && n < 1024) {
        size_t l = strlen(de->d_name);
        if (l > 6 && !strcmp(de->d_name + l - 6, ".jsonl"))
            names[n++] = strdup(de->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, by_name);
    for (int i = 0; i < n; i++) {
        char file[1300];
        snprintf(file, sizeof file, "%s/%s", path, names[i]);
        replay_file(s, file, names[i], p, show);
        free(names[i]);
    }
    if (s->skipped || !s->calls) {
        fprintf(stderr, "keel: %s: %s\n", path,
                s->skipped ? "lines that are no labelled call (above): fix or remove them" : "no labelled call");
        return -2;
    }
    for (int i = 0; i < s->nep; i++) {
        const struct episode *e = &s->ep[i];
        int t = threshold_index(e->kind, p);
        if (e->labelled < t) {
            s->kinds[e->kind][2]++; /* never reached the threshold */
            continue;
        }
        s->kinds[e->kind][0]++;
        if (e->advised_at && e->advised_at <= t + 2)
            s->kinds[e->kind][1]++;
        else
            note(s, show,
                 e->advised_at ? "late: %s (first advised at its loop call %d, %s)"
                               : "missed: %s (%d calls labelled loop, %s)",
                 e->file, e->advised_at ? e->advised_at : e->labelled, loop_kind_names[e->kind]);
    }
    return 0;
}

static double per_1000(int a, int b)
{
    return b ? 1000.0 * a / b : 0;
}

static void totals(const struct split *s, int *reach, int *caught, int *shorts)
{
    *reach = *caught = *shorts = 0;
    for (int k = 1; k <= LOOP_ALTERNATION; k++) {
        *reach += s->kinds[k][0];
        *caught += s->kinds[k][1];
        *shorts += s->kinds[k][2];
    }
}

int eval_traces(const char *dir, int md, const struct eval_floors *fl)
{
    double max_fa = fl->loop_fa, min_recall = fl->loop_share;
    struct loop_params p;
    loop_default_params(&p);
    struct split sp[2] = {{.name = "dev"}, {.name = "test"}};
    for (int i = 0; i < 2; i++) {
        sp[i].ep = calloc(EPISODES_MAX, sizeof *sp[i].ep);
        int got = sp[i].ep ? replay_split(&sp[i], dir, &p, i == 0) : -1;
        if (got < 0) {
            if (got == -1)
                fprintf(stderr, "keel: eval --traces needs dev/ and test/ of *.jsonl traces in %s\n", dir);
            free(sp[0].ep);
            free(sp[1].ep);
            return 64;
        }
    }
    int fail = 0;
    if (md)
        printf("| loop (tool calls) | traces | calls | work / loop calls | false advisories per 1000 work calls | loop "
               "episodes advised within 2 calls of the threshold | below the threshold |\n"
               "|---|---|---|---|---|---|---|\n");
    else
        printf("\n%-6s %6s %6s %12s %18s %24s %6s\n", "loop", "traces", "calls", "work/loop", "false adv/1000 work",
               "episodes advised in time", "short");
    for (int i = 0; i < 2; i++) {
        const struct split *s = &sp[i];
        int reach, caught, shorts;
        totals(s, &reach, &caught, &shorts);
        double fa = per_1000(s->false_adv, s->work), rec = reach ? (double)caught / reach : 1.0;
        if (md)
            printf("| %s | %d | %d | %d / %d | %.2f (%d) | %.3f (%d of %d) | %d |\n", s->name, s->files, s->calls,
                   s->work, s->loops, fa, s->false_adv, rec, caught, reach, shorts);
        else
            printf("%-6s %6d %6d %5d/%-6d %11.2f (%d) %14.3f (%d/%d) %8d\n", s->name, s->files, s->calls, s->work,
                   s->loops, fa, s->false_adv, rec, caught, reach, shorts);
        if (fa > max_fa || rec < min_recall) {
            fprintf(stderr,
                    "keel: loop on %s is below its floor (at most %.2f false advisories per 1000 work calls, "
                    "at least %.2f of episodes advised in time)\n",
                    s->name, max_fa, min_recall);
            fail = 1;
        }
    }
    if (!md) {
        for (int k = 1; k <= LOOP_ALTERNATION; k++)
            printf("  %-12s dev %d of %d in time (%d short), test %d of %d (%d short)\n", loop_kind_names[k],
                   sp[0].kinds[k][1], sp[0].kinds[k][0], sp[0].kinds[k][2], sp[1].kinds[k][1], sp[1].kinds[k][0],
                   sp[1].kinds[k][2]);
        for (int i = 0; i < sp[0].nshown; i++)
            printf("loop dev %s\n", sp[0].shown[i]);
    }
    free(sp[0].ep);
    free(sp[1].ep);
    return fail;
}
