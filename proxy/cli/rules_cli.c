/* rules_cli.c: keel rules lint | test | prompt.
 *
 * lint lists every problem of every rule file as file:line: message. test
 * runs each rule's own examples (fires / passes) and the corpus of rules/evals
 * (one YAML file per example: id, text, expected_violations, expected_clean,
 * rationale) and prints, per rule, true and false positives and negatives.
 * prompt prints the text a host appends to its agent's system prompt. check
 * runs the rules over files, as tool results (or messages), and names what fires. */
#include "rules_cli.h"

#include "embed.h"
#include "readfile.h"
#include "submit.h"
#include "text.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

static const char *const where_names[] = {"", "messages", "tool results", "", "sampling answers"};

/* 1 when r fires on text, 0 when not, RULE_SKIPPED when it could not tell
 * within its budget. */
static int fires(const struct rule *r, const char *text)
{
    struct rule_span sp[1];
    int m = rule_match(r, text, strlen(text), sp, 1);
    return m == RULE_SKIPPED ? RULE_SKIPPED : m > 0;
}

int rules_lint(const struct ruleset *rs)
{
    for (int i = 0; i < rs->nproblems; i++)
        printf("%s\n", rs->problems[i]);
    printf("%d rule%s, %d problem%s\n", rs->n, rs->n == 1 ? "" : "s", rs->nproblems, rs->nproblems == 1 ? "" : "s");
    return rs->nproblems ? 1 : 0;
}

struct counts {
    int tp, fp, tn, fn;
};

/* One eval file: which rules must fire on text and which must not. */
struct eval {
    char id[128], file[300];
    char *text;
    char expect_fire[16][96], expect_clean[16][96];
    int nfire, nclean;
};

static void scalar_list(yaml_document_t *doc, const yaml_node_t *v, char out[][96], int *n)
{
    *n = 0;
    if (v && v->type == YAML_SCALAR_NODE && v->data.scalar.length) {
        snprintf(out[(*n)++], 96, "%s", (char *)v->data.scalar.value);
        return;
    }
    if (!v || v->type != YAML_SEQUENCE_NODE)
        return;
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++) {
        const yaml_node_t *e = yaml_document_get_node(doc, *it);
        if (*n == 16) { /* more than an eval file holds: the file is refused, never read in part */
            *n = -1;
            return;
        }
        if (e && e->type == YAML_SCALAR_NODE)
            snprintf(out[(*n)++], 96, "%s", (char *)e->data.scalar.value);
    }
}

static int parse_eval(const char *name, const char *text, size_t n, struct eval *ev)
{
    yaml_parser_t parser;
    yaml_document_t doc;
    memset(ev, 0, sizeof *ev);
    snprintf(ev->file, sizeof ev->file, "%s", name);
    if (!yaml_parser_initialize(&parser))
        return -1;
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, n);
    int ok = yaml_parser_load(&parser, &doc);
    yaml_parser_delete(&parser);
    if (!ok)
        return -1;
    const yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (root && root->type == YAML_MAPPING_NODE)
        for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top; p++) {
            const yaml_node_t *k = yaml_document_get_node(&doc, p->key), *v = yaml_document_get_node(&doc, p->value);
            const char *key = k && k->type == YAML_SCALAR_NODE ? (char *)k->data.scalar.value : "";
            if (!strcmp(key, "id") && v->type == YAML_SCALAR_NODE)
                snprintf(ev->id, sizeof ev->id, "%s", (char *)v->data.scalar.value);
            else if (!strcmp(key, "text") && v->type == YAML_SCALAR_NODE && !ev->text)
                ev->text = rule_copy((char *)v->data.scalar.value, v->data.scalar.length); /* padded: matched */
            else if (!strcmp(key, "expected_violations"))
                scalar_list(&doc, v, ev->expect_fire, &ev->nfire);
            else if (!strcmp(key, "expected_clean"))
                scalar_list(&doc, v, ev->expect_clean, &ev->nclean);
        }
    yaml_document_delete(&doc);
    return ev->text && ev->nfire >= 0 && ev->nclean >= 0 ? 0 : -1; /* over 16 names in a list: refused */
}

static int find_rule(const struct ruleset *rs, const char *name)
{
    for (int i = 0; i < rs->n; i++)
        if (!strcmp(rs->v[i].name, name))
            return i;
    return -1;
}

static int run_eval(const struct ruleset *rs, struct eval *ev, struct counts *c)
{
    int bad = 0;
    for (int k = 0; k < ev->nfire + ev->nclean; k++) {
        int want = k < ev->nfire;
        const char *name = want ? ev->expect_fire[k] : ev->expect_clean[k - ev->nfire];
        int i = find_rule(rs, name);
        if (i < 0) {
            printf("FAIL %s (%s): names rule %s, which is not loaded\n", ev->id, ev->file, name);
            bad++;
            continue;
        }
        int got = fires(&rs->v[i], ev->text);
        if (got == RULE_SKIPPED) {
            bad++, printf("FAIL %s: %s could not be checked on it: %s\n", ev->id, name, rule_skipped_why);
            continue;
        }
        if (got && want)
            c[i].tp++;
        else if (got)
            c[i].fp++, bad++, printf("FAIL %s: %s fired on a text it should pass\n", ev->id, name);
        else if (want)
            c[i].fn++, bad++, printf("FAIL %s: %s did not fire on a text it should catch\n", ev->id, name);
        else
            c[i].tn++;
    }
    return bad;
}

static int eval_dir(const struct ruleset *rs, const char *dir, struct counts *c, int *nevals)
{
    DIR *d = opendir(dir);
    int bad = 0;
    struct dirent *de;
    while (d && (de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if ((l < 5 || strcmp(de->d_name + l - 4, ".yml")) && (l < 6 || strcmp(de->d_name + l - 5, ".yaml")))
            continue; /* .yml and .yaml, as rule files */
        char path[1200];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        size_t got = 0;
        char *buf = read_regular(path, RULEFILE_MAX_BYTES, &got);
        struct eval ev;
        if (buf && parse_eval(path, buf, got, &ev) == 0) {
            bad += run_eval(rs, &ev, c);
            (*nevals)++;
            free(ev.text);
        } else {
            printf("FAIL %s: not an eval file (id, text, expected_violations, expected_clean: at most 16 names each)\n",
                   path);
            bad++;
        }
        free(buf);
    }
    if (d)
        closedir(d);
    return bad;
}

int rules_test(const struct ruleset *rs, char **dirs, int ndirs)
{
    struct counts *c = calloc((size_t)(rs->n ? rs->n : 1), sizeof *c);
    int bad = 0, nevals = 0;
    if (!c)
        return 1;
    for (int i = 0; i < rs->n; i++) { /* each rule's own examples */
        const struct rule *r = &rs->v[i];
        if (r->detector == RD_LLM)
            continue; /* judged by the evaluator, not here */
        for (int k = 0; k < r->nfires + r->npasses; k++) {
            int want = k < r->nfires;
            const char *ex = want ? r->fires[k] : r->passes[k - r->nfires];
            int got = fires(r, ex);
            if (got == RULE_SKIPPED)
                bad++, printf("FAIL %s: example could not be checked (%s): %.80s\n", r->name, rule_skipped_why, ex);
            else if (got == want)
                want ? c[i].tp++ : c[i].tn++;
            else if (want)
                c[i].fn++, bad++, printf("FAIL %s: example should fire: %.80s\n", r->name, ex);
            else
                c[i].fp++, bad++, printf("FAIL %s: example should pass: %.80s\n", r->name, ex);
        }
    }
    for (int i = 0; i < rs->nproblems; i++) /* a rule that could not be read was not tested either */
        printf("FAIL %s\n", rs->problems[i]);
    bad += rs->nproblems;
    for (const struct embed_blob *b = embed_table; b->path; b++) { /* the shipped corpus */
        struct eval ev;
        if (strncmp(b->path, "rules/evals/", 12))
            continue;
        if (parse_eval(b->path, b->data, b->len, &ev) == 0) {
            bad += run_eval(rs, &ev, c);
            nevals++;
            free(ev.text);
        }
    }
    for (int i = 0; i < ndirs; i++) {
        char path[1100];
        snprintf(path, sizeof path, "%s/evals", dirs[i]);
        bad += eval_dir(rs, path, c, &nevals);
    }
    printf("%-36s %5s %5s %5s %5s\n", "rule", "TP", "FP", "TN", "FN");
    for (int i = 0; i < rs->n; i++)
        printf("%-36s %5d %5d %5d %5d%s\n", rs->v[i].name, c[i].tp, c[i].fp, c[i].tn, c[i].fn,
               rs->v[i].detector == RD_LLM ? "   (llm: needs an evaluator)" : "");
    printf("%d rules, %d corpus examples, %d mismatch%s\n", rs->n, nevals, bad, bad == 1 ? "" : "es");
    free(c);
    return bad ? 1 : 0;
}

int rules_prompt(const struct ruleset *rs)
{
    printf("You reach the person only through the submit_message tool. Every message is checked against the rules "
           "below before delivery:\n"
           "- accepted: delivered as you wrote it;\n"
           "- rewritten: the rewritten text is what the person sees;\n"
           "- rejected: nothing is delivered yet. Rewrite the message and submit it again, or call "
           "submit_justification naming each violated rule and your reason; after 4 attempts the message is "
           "delivered with a note that the rules were bypassed.\n"
           "get_rules lists the rules; get_status says whether a message is pending.\n\nRules:\n");
    for (int i = 0; i < rs->n; i++) {
        const struct rule *r = &rs->v[i];
        if (!r->active || !(r->applies_to & RA_MESSAGE))
            continue;
        printf("- %s (%s on %s): %s\n", r->name,
               r->action == RX_REJECT        ? "rejects"
                   : r->action == RX_REWRITE ? "rewrites"
                                             : "notes",
               where_names[RA_MESSAGE],
               r->guidance          ? r->guidance
                   : r->description ? r->description
                                    : "");
    }
    return 0;
}

int rules_check(const struct ruleset *rs, int argc, char **argv)
{
    int where = RA_TOOL_RESULT, files = 0, hit_files = 0, unchecked_files = 0, rc = 0;
    for (int i = 0; i < argc; i++) {
        if ((!strcmp(argv[i], "--as") && i + 1 < argc) || !strncmp(argv[i], "--as=", 5)) {
            const char *w = argv[i][4] == '=' ? argv[i] + 5 : argv[++i];
            where = !strcmp(w, "message")   ? RA_MESSAGE
                : !strcmp(w, "tool_result") ? RA_TOOL_RESULT
                : !strcmp(w, "sampling")    ? RA_SAMPLING
                                            : 0;
            if (!where) {
                fprintf(stderr, "keel: --as takes message, tool_result or sampling\n");
                return 64;
            }
            continue;
        }
        size_t n;
        char *raw = read_regular(argv[i], 16u << 20, &n);
        if (!raw) {
            fprintf(stderr, "keel: %s: %s\n", argv[i], read_regular_why(errno));
            rc = 1;
            continue;
        }
        /* bytes that are not UTF-8 read as U+FFFD, as keel hook reads a reply:
         * the rules read the rest of the file */
        int repaired = 0;
        char *text = text_repair(raw, n, &n, &repaired);
        free(raw);
        if (repaired)
            fprintf(stderr, "keel: %s: bytes that are not UTF-8 were read as U+FFFD\n", argv[i]);
        char *c = text ? rule_copy(text, n) : NULL;
        files++;
        int any = 0;
        char unchecked[512] = "";
        for (int r = 0; c && r < rs->n; r++) {
            struct rule_span sp[1];
            if (!rs->v[r].active || !(rs->v[r].applies_to & where)) /* as keel applies them */
                continue;
            int m = rule_match(&rs->v[r], c, n, sp, 1);
            if (m == RULE_SKIPPED) {
                size_t u = strlen(unchecked);
                snprintf(unchecked + u, sizeof unchecked - u, "%s%s", u ? ", " : "", rs->v[r].name);
                continue;
            }
            if (m <= 0)
                continue;
            printf("%s%s%s", any ? ", " : "", any ? "" : argv[i], any ? rs->v[r].name : ": ");
            if (!any)
                printf("%s", rs->v[r].name);
            any = 1;
        }
        if (any)
            printf("\n");
        if (unchecked[0]) {
            printf("%s: not checked (%s): %s\n", argv[i], rule_skipped_why, unchecked);
            unchecked_files++;
        }
        hit_files += any;
        free(c);
        free(text);
    }
    printf("%d file%s, %d with a rule firing (as %s)", files, files == 1 ? "" : "s", hit_files,
           where == RA_MESSAGE        ? "messages"
               : where == RA_SAMPLING ? "sampling answers"
                                      : "tool results");
    if (unchecked_files)
        printf(", %d with a rule not checked", unchecked_files);
    printf("\n");
    return rc ? rc : unchecked_files ? 2 : 0;
}
