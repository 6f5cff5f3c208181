/* pins_cli.c: keel pins, the person's review of pinned tool definitions
 * (judge/pins.h): list, diff, approve, forget. */
#include "pins_cli.h"

#include "pins.h"
#include "state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXIT_USAGE 64

const char pins_help[] = "usage: keel pins [list]\n"
                         "       keel pins diff SERVER [TOOL]...\n"
                         "       keel pins approve SERVER (TOOL... | --all)\n"
                         "       keel pins forget SERVER\n"
                         "\n"
                         "keel wrap pins what each server's tools say (title, description, schemas,\n"
                         "annotations) and its instructions the first time it sees them. A definition\n"
                         "that changes later, or a new tool that appears as a pinned one goes missing,\n"
                         "is held back: left out of tools/list, its calls answered by keel, until you\n"
                         "approve it here. A definition that looks poisoned on first sight is listed\n"
                         "with a warning (or held, with pins: {suspect: hold} in the profile).\n"
                         "\n"
                         "  list     servers, their tools, what is held back or suspect, and since when\n"
                         "  diff     what changed: the approved definition against the one held back\n"
                         "  approve  take the held definitions of these tools (or --all) as approved\n"
                         "  forget   drop a server's pins: everything it says is pinned afresh\n"
                         "\n"
                         "SERVER is the server's command line or URL as keel pins lists it, or any\n"
                         "part of it that names one server. The pins live in pins.json beside the\n"
                         "state file ($KEEL_STATE_DIR, else $XDG_STATE_HOME/keel).\n";

struct job {
    const char *server; /* as given */
    char **tools;
    int ntools, all, forget;
    int found; /* servers matched */
    char name[2048]; /* the one matched */
    int done;
    const char *missing; /* a tool that has no pin */
};

/* The one server whose identity is or holds q; 0 none, 1 one, 2 several. */
static int match(const cJSON *servers, const char *q, char *name, size_t n)
{
    const cJSON *s;
    int k = 0;
    cJSON_ArrayForEach(s, servers)
        if (!strcmp(s->string, q)) {
            snprintf(name, n, "%s", s->string);
            return 1;
        }
    cJSON_ArrayForEach(s, servers)
        if (strstr(s->string, q)) {
            if (!k)
                snprintf(name, n, "%s", s->string);
            k++;
        }
    return k > 1 ? 2 : k;
}

static int read_only(cJSON *all, void *ctx, kerr *e)
{
    (void)e;
    *(cJSON **)ctx = cJSON_Duplicate(all, 1);
    return 0;
}

static cJSON *load(void)
{
    cJSON *all = NULL;
    kerr e = {0};
    if (pins_update(NULL, read_only, &all, &e) < 0) {
        fprintf(stderr, "keel pins: %s\n", e.message);
        return NULL;
    }
    /* A file edited by hand: servers and tools that are not objects are not shown. */
    cJSON *servers = state_obj(all, "servers"), *s;
    cJSON_ArrayForEach(s, servers) {
        cJSON *t = cJSON_GetObjectItemCaseSensitive(s, "tools");
        if (t && !cJSON_IsObject(t))
            cJSON_DeleteItemFromObjectCaseSensitive(s, "tools");
    }
    return all;
}

static const char *str(const cJSON *o, const char *k)
{
    const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
    return s ? s : "";
}

static void list_pin(const char *name, const cJSON *pin)
{
    const cJSON *pend = cJSON_GetObjectItemCaseSensitive(pin, "pending");
    const cJSON *sus = cJSON_GetObjectItemCaseSensitive(pin, "suspect"), *r;
    if (pend && *str(pend, "renamed_from"))
        printf("  held     %-28s new since %s, as '%s' went missing (keel pins diff to read it)\n", name,
               str(pend, "seen_at"), str(pend, "renamed_from"));
    else if (pend && !cJSON_GetObjectItemCaseSensitive(pin, "def"))
        printf("  held     %-28s new since %s\n", name, str(pend, "seen_at"));
    else if (pend)
        printf("  held     %-28s changed %s (approved %.8s, now %.8s)\n", name, str(pend, "seen_at"), str(pin, "hash"),
               str(pend, "hash"));
    if (cJSON_GetArraySize(sus)) {
        printf("  suspect  %-28s since %s:", name, str(pin, "first_seen"));
        cJSON_ArrayForEach(r, sus)
            printf(" %s", r->valuestring);
        printf("\n");
    }
}

static int list(const cJSON *all)
{
    const cJSON *servers = cJSON_GetObjectItemCaseSensitive(all, "servers"), *s, *t;
    if (!cJSON_GetArraySize(servers)) {
        printf("No server's tools are pinned yet: keel wrap pins them the first time it lists them.\n");
        return 0;
    }
    cJSON_ArrayForEach(s, servers) {
        const cJSON *tools = cJSON_GetObjectItemCaseSensitive(s, "tools");
        int held = 0, sus = 0;
        cJSON_ArrayForEach(t, tools) {
            held += cJSON_GetObjectItemCaseSensitive(t, "pending") != NULL;
            sus += cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(t, "suspect")) > 0;
        }
        const cJSON *ins = cJSON_GetObjectItemCaseSensitive(s, "instructions");
        const char *is = !ins                                                      ? ""
            : cJSON_GetObjectItemCaseSensitive(ins, "pending")                     ? "; its instructions held back"
            : cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(ins, "suspect")) ? "; its instructions suspect"
                                                                                   : "; its instructions pinned";
        printf("%s\n  %d tool%s pinned, %d held back, %d suspect%s\n", s->string, cJSON_GetArraySize(tools),
               cJSON_GetArraySize(tools) == 1 ? "" : "s", held, sus, is);
        if (ins)
            list_pin("(instructions)", ins);
        cJSON_ArrayForEach(t, tools)
            list_pin(t->string, t);
    }
    return 0;
}

/* Lines of a definition as a person reads it: indented JSON. */
static char **lines_of(const cJSON *def, int *n)
{
    char *t = def ? cJSON_Print(def) : NULL;
    char **v = NULL;
    *n = 0;
    if (!t)
        return NULL; /* none: no lines */
    size_t cap = 0;
    for (char *s = t, *e; s; s = e ? e + 1 : NULL) {
        e = strchr(s, '\n');
        if ((size_t)*n == cap) {
            char **m = realloc(v, (cap = cap ? cap * 2 : 64) * sizeof *v);
            if (!m)
                break;
            v = m;
        }
        v[(*n)++] = e ? strndup(s, (size_t)(e - s)) : strdup(s);
    }
    free(t);
    return v;
}

/* A line diff (longest common subsequence): "-" approved, "+" held back. */
static void diff(const cJSON *a, const cJSON *b)
{
    int na, nb;
    char **x = lines_of(a, &na), **y = lines_of(b, &nb);
    if (na > 4000 || nb > 4000) {
        printf("  (over 4,000 lines: shown whole)\n");
        for (int j = 0; j < nb; j++)
            printf("+ %s\n", y[j]);
    } else {
        int *L = calloc((size_t)(na + 1) * (size_t)(nb + 1), sizeof *L);
        for (int i = na - 1; L && i >= 0; i--)
            for (int j = nb - 1; j >= 0; j--)
                L[i * (nb + 1) + j] = !strcmp(x[i], y[j])                 ? L[(i + 1) * (nb + 1) + j + 1] + 1
                    : L[(i + 1) * (nb + 1) + j] > L[i * (nb + 1) + j + 1] ? L[(i + 1) * (nb + 1) + j]
                                                                          : L[i * (nb + 1) + j + 1];
        int i = 0, j = 0;
        while (L && (i < na || j < nb)) {
            if (i < na && j < nb && !strcmp(x[i], y[j]))
                printf("  %s\n", x[i]), i++, j++;
            else if (j < nb && (i == na || L[i * (nb + 1) + j + 1] >= L[(i + 1) * (nb + 1) + j]))
                printf("+ %s\n", y[j++]);
            else
                printf("- %s\n", x[i++]);
        }
        free(L);
    }
    for (int i = 0; i < na; i++)
        free(x[i]);
    for (int j = 0; j < nb; j++)
        free(y[j]);
    free(x);
    free(y);
}

static int wanted(const struct job *j, const char *tool)
{
    if (!j->ntools)
        return 1;
    for (int i = 0; i < j->ntools; i++)
        if (!strcmp(j->tools[i], tool))
            return 1;
    return 0;
}

static void diff_pin(const char *name, const cJSON *pin)
{
    const cJSON *pend = cJSON_GetObjectItemCaseSensitive(pin, "pending"), *r;
    const cJSON *sus = cJSON_GetObjectItemCaseSensitive(pin, "suspect");
    if (pend) {
        printf("%s: %s\n", name,
               *str(pend, "renamed_from") ? "new, appeared as a pinned tool went missing; it may be that tool changed"
                   : cJSON_GetObjectItemCaseSensitive(pin, "def") ? "changed since it was approved"
                                                                  : "new, not approved yet");
        printf("--- approved%s\n+++ held back since %s\n",
               cJSON_GetObjectItemCaseSensitive(pin, "def") ? "" : " (none)", str(pend, "seen_at"));
        diff(cJSON_GetObjectItemCaseSensitive(pin, "def"), cJSON_GetObjectItemCaseSensitive(pend, "def"));
    } else if (cJSON_GetArraySize(sus)) {
        printf("%s: suspect on first sight (", name);
        cJSON_ArrayForEach(r, sus)
            printf("%s%s", r == sus->child ? "" : ", ", r->valuestring);
        printf(")\n");
        diff(NULL, cJSON_GetObjectItemCaseSensitive(pin, "def"));
    }
}

static int show_diff(const cJSON *all, struct job *j)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(all, "servers"), j->name), *t;
    int shown = 0;
    const cJSON *ins = cJSON_GetObjectItemCaseSensitive(s, "instructions");
    if (ins && wanted(j, "(instructions)") &&
        (cJSON_GetObjectItemCaseSensitive(ins, "pending") ||
         cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(ins, "suspect"))))
        diff_pin("(instructions)", ins), shown++;
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(s, "tools")) {
        if (!wanted(j, t->string))
            continue;
        if (j->ntools || cJSON_GetObjectItemCaseSensitive(t, "pending") ||
            cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(t, "suspect"))) {
            if (!cJSON_GetObjectItemCaseSensitive(t, "pending") &&
                !cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(t, "suspect")))
                printf("%s: approved %s, nothing held back\n", t->string, str(t, "approved_at"));
            else
                diff_pin(t->string, t);
            shown++;
        }
    }
    if (!shown)
        printf("Nothing held back or suspect for %s.\n", j->name);
    return 0;
}

static int change(cJSON *all, void *ctx, kerr *e)
{
    struct job *j = ctx;
    cJSON *servers = state_obj(all, "servers");
    j->found = match(servers, j->server, j->name, sizeof j->name);
    if (j->found != 1)
        return 0;
    if (j->forget) {
        cJSON_DeleteItemFromObjectCaseSensitive(servers, j->name);
        j->done = 1;
        return 1;
    }
    cJSON *s = cJSON_GetObjectItemCaseSensitive(servers, j->name), *t;
    cJSON *tools = cJSON_GetObjectItemCaseSensitive(s, "tools");
    for (int i = 0; i < j->ntools; i++)
        if (strcmp(j->tools[i], "(instructions)") && !cJSON_GetObjectItemCaseSensitive(tools, j->tools[i])) {
            j->missing = j->tools[i];
            return kerr_set(e, "NO_SUCH_TOOL", NULL, "no tool %s is pinned for this server", j->tools[i]);
        }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    cJSON *ins = cJSON_GetObjectItemCaseSensitive(s, "instructions");
    int want_ins = j->all;
    for (int i = 0; i < j->ntools; i++)
        want_ins |= !strcmp(j->tools[i], "(instructions)");
    if (ins && want_ins &&
        (cJSON_GetObjectItemCaseSensitive(ins, "pending") ||
         cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(ins, "suspect"))))
        pins_approve_entry(ins, now), j->done++;
    cJSON_ArrayForEach(t, tools) {
        if (!j->all && (!j->ntools || !wanted(j, t->string)))
            continue;
        if (cJSON_GetObjectItemCaseSensitive(t, "pending") ||
            cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(t, "suspect")))
            pins_approve_entry(t, now), j->done++;
    }
    return j->done > 0;
}

static int no_server(const struct job *j)
{
    fprintf(stderr,
            j->found
                ? "keel pins: '%s' names more than one server; give more of its command line (keel pins lists them)\n"
                : "keel pins: no pinned server is or holds '%s' (keel pins lists them)\n",
            j->server);
    return 1;
}

int pins_main(int argc, char **argv)
{
    const char *sub = argc > 0 ? argv[0] : "list";
    /* a help word anywhere asks for help: never a server's name to forget */
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs(pins_help, stdout);
            return 0;
        }
    struct job j = {0};
    if (!strcmp(sub, "list")) {
        if (argc > 1) {
            fprintf(stderr, "keel pins: list takes no argument\n%s", pins_help);
            return EXIT_USAGE;
        }
        cJSON *all = load();
        int rc = all ? list(all) : 1;
        cJSON_Delete(all);
        return rc;
    }
    int diffing = !strcmp(sub, "diff"), approving = !strcmp(sub, "approve");
    j.forget = !strcmp(sub, "forget");
    if (!diffing && !approving && !j.forget) {
        fprintf(stderr, "keel pins: unknown subcommand '%s': list, diff, approve or forget\n", sub);
        return EXIT_USAGE;
    }
    if (argc < 2) {
        fprintf(stderr, "keel pins %s: name the SERVER (keel pins lists them)\n", sub);
        return EXIT_USAGE;
    }
    j.server = argv[1];
    if (j.server[0] == '-') {
        fprintf(stderr, "keel pins %s: '%s' is no option of keel pins; name the SERVER first (keel pins lists them)\n",
                sub, j.server);
        return EXIT_USAGE;
    }
    j.tools = argv + 2;
    j.ntools = argc - 2;
    if (approving && j.ntools == 1 && !strcmp(j.tools[0], "--all"))
        j.all = 1, j.ntools = 0;
    if (approving && !j.all && !j.ntools) {
        fprintf(stderr, "keel pins approve: name the tools to approve, or --all\n");
        return EXIT_USAGE;
    }
    if (j.forget && j.ntools) {
        fprintf(stderr, "keel pins forget: takes the SERVER only\n");
        return EXIT_USAGE;
    }
    if (diffing) {
        cJSON *all = load();
        if (!all)
            return 1;
        j.found = match(cJSON_GetObjectItemCaseSensitive(all, "servers"), j.server, j.name, sizeof j.name);
        int rc = j.found == 1 ? show_diff(all, &j) : no_server(&j);
        cJSON_Delete(all);
        return rc;
    }
    kerr e = {0};
    if (pins_update(NULL, change, &j, &e) < 0) {
        fprintf(stderr, "keel pins: %s\n", e.message);
        return 1;
    }
    if (j.found != 1)
        return no_server(&j);
    if (j.forget)
        printf("Forgot the pins of %s: what it says is pinned afresh the next time keel lists its tools.\n", j.name);
    else if (j.done)
        printf("Approved %d definition%s of %s; a client that lists the tools again sees them.\n", j.done,
               j.done == 1 ? "" : "s", j.name);
    else
        printf("Nothing to approve for %s: nothing held back or suspect%s.\n", j.name,
               j.all ? "" : " among those tools");
    return 0;
}
