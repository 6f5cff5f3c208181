/* rulefile.c: load and lint rule files (see rulefile.h).
 *
 * A file holds `rules:`, a list of mappings. Every key is checked; a value of
 * the wrong type is a problem and the rule keeps its default. Patterns are
 * compiled with PCRE2_UTF (and PCRE2_UCP, so \w and \b know Unicode); a
 * pattern that does not compile is reported with PCRE2's own message and the
 * offset, and its rule is left out. */
#include "rulefile.h"

#include "embed.h"
#include "readfile.h"
#include "text.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <ctype.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

struct ruleset *ruleset_current;

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static void
problem(struct ruleset *rs, const char *file, const yaml_node_t *n, const char *fmt, ...)
{
    rs->nseen++;
    if (rs->nproblems >= RULESET_MAX_PROBLEMS)
        return;
    char *b = rs->problems[rs->nproblems++];
    int k = snprintf(b, sizeof rs->problems[0], "%s:%lu: ", file, n ? (unsigned long)n->start_mark.line + 1 : 1UL);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b + k, sizeof rs->problems[0] - (size_t)k, fmt, ap);
    va_end(ap);
}

static const char *scalar(const yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* A value keel keeps: text of at most RULEFILE_VALUE_MAX bytes, copied. */
static char *keep(struct ruleset *rs, const char *file, const yaml_node_t *v, const char *key)
{
    if (v->data.scalar.length > RULEFILE_VALUE_MAX) {
        problem(rs, file, v, "%s is over %u KiB", key, RULEFILE_VALUE_MAX >> 10);
        return NULL;
    }
    char *c = rule_copy(scalar(v), v->data.scalar.length); /* examples are matched */
    if (!c)
        problem(rs, file, v, "%s: out of memory", key);
    return c;
}

static char *dup_scalar(struct ruleset *rs, const char *file, const yaml_node_t *v, const char *key)
{
    if (!scalar(v)) {
        problem(rs, file, v, "%s must be text", key);
        return NULL;
    }
    return keep(rs, file, v, key);
}

/* A scalar or a sequence of scalars, as a list. */
static char **list_of(struct ruleset *rs, const char *file, yaml_document_t *doc, const yaml_node_t *v, const char *key,
                      int *count)
{
    *count = 0;
    if (scalar(v)) {
        char **l = malloc(sizeof *l);
        if (l && (l[0] = keep(rs, file, v, key)))
            *count = 1;
        return l;
    }
    if (!v || v->type != YAML_SEQUENCE_NODE) {
        problem(rs, file, v, "%s must be a list of text", key);
        return NULL;
    }
    int n = (int)(v->data.sequence.items.top - v->data.sequence.items.start);
    char **l = calloc((size_t)(n ? n : 1), sizeof *l);
    for (yaml_node_item_t *it = v->data.sequence.items.start; l && it < v->data.sequence.items.top; it++) {
        const yaml_node_t *e = yaml_document_get_node(doc, *it);
        if (!scalar(e)) {
            problem(rs, file, e, "%s must be a list of text", key);
            continue;
        }
        if ((l[*count] = keep(rs, file, e, key)))
            (*count)++;
    }
    if (!l)
        problem(rs, file, v, "%s: out of memory", key);
    return l;
}

static long number(struct ruleset *rs, const char *file, const yaml_node_t *v, const char *key)
{
    const char *s = scalar(v);
    char *end;
    long n = s ? strtol(s, &end, 10) : -1;
    if (!s || *end || n < 1 || n > 1000000) {
        problem(rs, file, v, "%s must be a whole number from 1 to 1000000", key);
        return 0;
    }
    return n;
}

static int choice(struct ruleset *rs, const char *file, const yaml_node_t *v, const char *key, const char *const *names,
                  const int *values, int def)
{
    const char *s = scalar(v);
    for (int i = 0; s && names[i]; i++)
        if (!strcmp(s, names[i]))
            return values[i];
    char all[200] = "";
    for (int i = 0; names[i]; i++)
        snprintf(all + strlen(all), sizeof all - strlen(all), "%s%s", i ? ", " : "", names[i]);
    problem(rs, file, v, "%s must be one of %s", key, all);
    return def;
}

static const char *const rule_keys[] = {"name",       "description", "guidance", "rationale", "prompt", "replacement",
                                        "applies_to", "detector",    "action",   "active",    "tools",  "patterns",
                                        "max_words",  "max_chars",   "examples", NULL};

/* A rewrite rule's replacement, tried on each example it fires on for each
 * pattern that matches it: "$2" of a pattern with one group or "${x" is a
 * problem here, where the rule is read, not a rule skipped on every result
 * later. A pattern none of the examples matches is tried when it is used. */
static int replacement_usable(struct ruleset *rs, const char *file, const yaml_node_t *node, const struct rule *r)
{
    const uint32_t how =
        PCRE2_SUBSTITUTE_MATCHED | PCRE2_SUBSTITUTE_REPLACEMENT_ONLY | PCRE2_SUBSTITUTE_OVERFLOW_LENGTH;
    for (int p = 0; p < r->npatterns; p++)
        for (int i = 0; i < r->nfires; i++) {
            const char *t = r->fires[i];
            size_t n = strlen(t);
            if (pcre2_match(r->re[p], (PCRE2_SPTR)t, n, 0, 0, r->md, NULL) < 0)
                continue;
            PCRE2_UCHAR out[64];
            PCRE2_SIZE len = sizeof out;
            int rc = pcre2_substitute(r->re[p], (PCRE2_SPTR)t, n, 0, how, r->md, NULL, (PCRE2_SPTR)r->replacement,
                                      PCRE2_ZERO_TERMINATED, out, &len);
            if (rc < 0 && rc != PCRE2_ERROR_NOMEMORY) {
                PCRE2_UCHAR msg[160];
                pcre2_get_error_message(rc, msg, sizeof msg);
                problem(rs, file, node, "rule %s: its replacement cannot be used with pattern %d: %s", r->name, p + 1,
                        (char *)msg);
                return 0;
            }
            break;
        }
    return 1;
}

static void read_rule(struct ruleset *rs, const char *file, yaml_document_t *doc, const yaml_node_t *node)
{
    static const char *const applies[] = {"message", "tool_result", "sampling_response", "tool_definition", NULL};
    static const int applies_v[] = {RA_MESSAGE, RA_TOOL_RESULT, RA_SAMPLING, RA_TOOL_DEF};
    static const char *const detectors[] = {"regex", "length", "llm", NULL};
    static const int detectors_v[] = {RD_REGEX, RD_LENGTH, RD_LLM};
    static const char *const actions[] = {"annotate", "rewrite", "reject", NULL};
    static const int actions_v[] = {RX_ANNOTATE, RX_REWRITE, RX_REJECT};
    if (node->type != YAML_MAPPING_NODE) {
        problem(rs, file, node, "each rule must be a mapping of keys to values");
        return;
    }
    struct rule r;
    memset(&r, 0, sizeof r);
    r.applies_to = RA_MESSAGE;
    r.action = RX_ANNOTATE;
    r.active = 1;
    snprintf(r.file, sizeof r.file, "%s", file);
    r.line = (int)node->start_mark.line + 1;
    int usable = 1, seen[16] = {0};
    long before = rs->nseen; /* a rule with a problem of its own is left out, whatever the problem */
    const yaml_node_t *patterns = NULL;
    for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top; p++) {
        const yaml_node_t *k = yaml_document_get_node(doc, p->key), *v = yaml_document_get_node(doc, p->value);
        const char *key = scalar(k);
        int known = -1;
        for (int i = 0; key && rule_keys[i]; i++)
            if (!strcmp(key, rule_keys[i]))
                known = i;
        if (known >= 0 && seen[known]) {
            problem(rs, file, k, "%s is given twice in this rule (first on line %d); the first is used", key,
                    seen[known]);
            continue;
        }
        if (known >= 0)
            seen[known] = (int)k->start_mark.line + 1;
        if (!key) {
            problem(rs, file, k, "a rule key must be a plain word");
        } else if (!strcmp(key, "name")) {
            r.name = dup_scalar(rs, file, v, key);
            /* a name is printed to terminals and into the agent's prompt: a
             * word of letters, digits, - _ . (no control characters) */
            for (const char *c = r.name; c && *c; c++)
                if (!isalnum((unsigned char)*c) && !strchr("-_.", *c)) {
                    problem(rs, file, v, "a rule's name is letters, digits and - _ . only");
                    break;
                }
        } else if (!strcmp(key, "description")) {
            r.description = dup_scalar(rs, file, v, key);
        } else if (!strcmp(key, "guidance")) {
            r.guidance = dup_scalar(rs, file, v, key);
        } else if (!strcmp(key, "rationale")) {
            r.rationale = dup_scalar(rs, file, v, key);
        } else if (!strcmp(key, "prompt")) {
            r.prompt = dup_scalar(rs, file, v, key);
        } else if (!strcmp(key, "replacement")) {
            r.replacement = scalar(v) ? keep(rs, file, v, key) : NULL;
            if (!scalar(v))
                problem(rs, file, v, "replacement must be text (empty deletes the match)");
        } else if (!strcmp(key, "applies_to")) {
            r.applies_to = choice(rs, file, v, key, applies, applies_v, RA_MESSAGE);
        } else if (!strcmp(key, "detector")) {
            r.detector = choice(rs, file, v, key, detectors, detectors_v, RD_REGEX);
        } else if (!strcmp(key, "action")) {
            r.action = choice(rs, file, v, key, actions, actions_v, RX_ANNOTATE);
        } else if (!strcmp(key, "active")) {
            /* YAML's ways of saying either (True, yes, on, 1; ~ or nothing
             * is the default, active); anything else is a problem, and a
             * rule with a problem is left out, as lint says */
            const char *s = scalar(v);
            static const char *const offs[] = {"false", "no", "off", "0", NULL}, *const ons[] = {"true", "yes", "on",
                                                                                                 "1",    "~",   "null",
                                                                                                 "",     NULL};
            int off = 0, on = !s;
            for (int i = 0; s && offs[i]; i++)
                off |= !strcasecmp(s, offs[i]);
            for (int i = 0; s && ons[i]; i++)
                on |= !strcasecmp(s, ons[i]);
            if (!off && !on)
                problem(rs, file, v, "active must be true or false; this rule is left out until it is");
            r.active = !off;
        } else if (!strcmp(key, "tools")) {
            r.tools = list_of(rs, file, doc, v, key, &r.ntools);
        } else if (!strcmp(key, "patterns")) {
            patterns = v;
        } else if (!strcmp(key, "max_words")) {
            r.max_words = number(rs, file, v, key);
        } else if (!strcmp(key, "max_chars")) {
            r.max_chars = number(rs, file, v, key);
        } else if (!strcmp(key, "examples")) {
            if (v->type != YAML_MAPPING_NODE) {
                problem(rs, file, v, "examples must be a mapping with fires and passes");
                continue;
            }
            for (yaml_node_pair_t *q = v->data.mapping.pairs.start; q < v->data.mapping.pairs.top; q++) {
                const char *ek = scalar(yaml_document_get_node(doc, q->key));
                const yaml_node_t *ev = yaml_document_get_node(doc, q->value);
                if (ek && (!strcmp(ek, "fires") ? r.fires : !strcmp(ek, "passes") ? r.passes : NULL))
                    problem(rs, file, ev, "examples.%s is given twice in this rule; the first is used", ek);
                else if (ek && !strcmp(ek, "fires"))
                    r.fires = list_of(rs, file, doc, ev, "examples.fires", &r.nfires);
                else if (ek && !strcmp(ek, "passes"))
                    r.passes = list_of(rs, file, doc, ev, "examples.passes", &r.npasses);
                else
                    problem(rs, file, ev, "unknown key examples.%s (fires or passes)", ek ? ek : "?");
            }
        } else {
            problem(rs, file, k, "unknown key %s", key);
        }
    }
    if (!r.name || !*r.name) {
        problem(rs, file, node, "a rule needs a name");
        usable = 0;
    }
    for (int i = 0; usable && i < rs->n; i++)
        if (!strcmp(rs->v[i].name, r.name)) {
            problem(rs, file, node, "duplicate rule name %s (first in %s:%d)", r.name, rs->v[i].file, rs->v[i].line);
            usable = 0;
        }
    if (patterns) {
        r.pattern = list_of(rs, file, doc, patterns, "patterns", &r.npatterns);
        r.re = calloc((size_t)(r.npatterns ? r.npatterns : 1), sizeof *r.re);
        r.jit = calloc((size_t)r.npatterns + 1, 1); /* RJ_FRESH each, and any's last */
        uint32_t groups = 0; /* the most any pattern has: a replacement may use them */
        for (int i = 0; r.re && i < r.npatterns; i++) {
            int err;
            PCRE2_SIZE off;
            r.re[i] = pcre2_compile((PCRE2_SPTR)r.pattern[i], PCRE2_ZERO_TERMINATED,
                                    PCRE2_UTF | PCRE2_UCP | PCRE2_NEVER_BACKSLASH_C, &err, &off, NULL);
            if (!r.re[i]) {
                PCRE2_UCHAR msg[160];
                pcre2_get_error_message(err, msg, sizeof msg);
                problem(rs, file, patterns, "rule %s, pattern %d: %s at offset %zu", r.name ? r.name : "?", i + 1,
                        (char *)msg, (size_t)off);
                usable = 0;
            } else {
                uint32_t g = 0;
                if (pcre2_pattern_info(r.re[i], PCRE2_INFO_CAPTURECOUNT, &g) == 0 && g > groups)
                    groups = g;
                pcre2_match_data *md = pcre2_match_data_create_from_pattern(r.re[i], NULL);
                if (md && pcre2_match(r.re[i], (PCRE2_SPTR) "", 0, 0, 0, md, NULL) >= 0)
                    problem(rs, file, patterns,
                            "rule %s, pattern %d matches an empty string, so it fires where nothing it looks for is",
                            r.name ? r.name : "?", i + 1);
                pcre2_match_data_free(md);
            }
        }
        r.md = pcre2_match_data_create(groups + 1, NULL);
        if (usable)
            rule_combine(&r);
    }
    if (usable && r.detector == RD_REGEX && !r.npatterns) {
        problem(rs, file, node, "rule %s: a regex rule needs patterns", r.name);
        usable = 0;
    }
    if (usable && r.detector == RD_LENGTH && !r.max_words && !r.max_chars) {
        problem(rs, file, node, "rule %s: a length rule needs max_words or max_chars", r.name);
        usable = 0;
    }
    if (usable && r.detector == RD_LLM && !r.prompt) {
        problem(rs, file, node, "rule %s: an llm rule needs a prompt", r.name);
        usable = 0;
    }
    if (usable && r.action == RX_REWRITE && !r.replacement) {
        problem(rs, file, node, "rule %s: a rewrite rule needs a replacement", r.name);
        usable = 0;
    }
    if (usable && r.action == RX_REWRITE && r.detector == RD_REGEX && !replacement_usable(rs, file, node, &r))
        usable = 0;
    if (usable && !r.nfires && !r.npasses)
        problem(rs, file, node, "rule %s has no examples (examples: fires: [...], passes: [...])", r.name);
    if (rs->nseen > before) /* an empty match, an unknown key, a key twice...: as lint says, left out */
        usable = 0;
    if (!usable) {
        rule_free(&r);
        return;
    }
    if (rs->n == rs->cap) {
        int cap = rs->cap ? rs->cap * 2 : 16;
        struct rule *v = realloc(rs->v, (size_t)cap * sizeof *v);
        if (!v) {
            rule_free(&r);
            return;
        }
        rs->v = v;
        rs->cap = cap;
    }
    rs->v[rs->n++] = r;
}

/* The size of node n with every alias written out (scalars' bytes, one more
 * per node), at most cap: a small file of aliases to one large anchor could
 * otherwise become gigabytes of rules. Each node is sized once (memo). */
static size_t expanded(yaml_document_t *doc, yaml_node_t *n, size_t *memo, int depth, size_t cap)
{
    if (!n || depth > 64)
        return cap;
    size_t i = (size_t)(n - doc->nodes.start);
    if (memo[i])
        return memo[i] - 1;
    size_t sum = 1;
    if (n->type == YAML_SCALAR_NODE)
        sum += n->data.scalar.length;
    else if (n->type == YAML_SEQUENCE_NODE)
        for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top && sum < cap; it++)
            sum += expanded(doc, yaml_document_get_node(doc, *it), memo, depth + 1, cap);
    else if (n->type == YAML_MAPPING_NODE)
        for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top && sum < cap; p++)
            sum += expanded(doc, yaml_document_get_node(doc, p->key), memo, depth + 1, cap) +
                expanded(doc, yaml_document_get_node(doc, p->value), memo, depth + 1, cap);
    if (sum > cap)
        sum = cap;
    memo[i] = sum + 1;
    return sum;
}

void ruleset_load_text(struct ruleset *rs, const char *name, const char *text, size_t n)
{
    yaml_parser_t parser;
    yaml_document_t doc;
    if (text_yaml_flow_depth(text, n, 64) > 64) { /* libyaml's time grows with the square of the depth */
        rs->nseen++;
        if (rs->nproblems < RULESET_MAX_PROBLEMS)
            snprintf(rs->problems[rs->nproblems++], sizeof rs->problems[0],
                     "%s: its [ ] and { } nest over 64 deep; it is not read", name);
        return;
    }
    if (!yaml_parser_initialize(&parser))
        return;
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, n);
    if (!yaml_parser_load(&parser, &doc)) {
        /* a reader error (a byte that is not UTF-8) has an offset, not a mark: its line is counted */
        unsigned long line = (unsigned long)parser.problem_mark.line + 1;
        if (parser.error == YAML_READER_ERROR) {
            line = 1;
            for (size_t i = 0; i < parser.problem_offset && i < n; i++)
                line += text[i] == '\n';
        }
        rs->nseen++;
        if (rs->nproblems < RULESET_MAX_PROBLEMS)
            snprintf(rs->problems[rs->nproblems++], sizeof rs->problems[0], "%s:%lu: not valid YAML: %s", name, line,
                     parser.problem ? parser.problem : "parse error");
        yaml_parser_delete(&parser);
        return;
    }
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    size_t *memo = calloc((size_t)(doc.nodes.top - doc.nodes.start) + 1, sizeof *memo);
    size_t size = memo && root ? expanded(&doc, root, memo, 0, RULEFILE_EXPANDED_MAX + 1) : 0;
    free(memo);
    if (!memo || size > RULEFILE_EXPANDED_MAX) {
        problem(rs, name, root,
                !memo ? "out of memory"
                      : "with its aliases written out this file is over %u MiB "
                        "(or nested over 64 deep); it is not read",
                RULEFILE_EXPANDED_MAX >> 20);
        yaml_document_delete(&doc);
        yaml_parser_delete(&parser);
        return;
    }
    const yaml_node_t *list = NULL;
    int modify = 0, seen_rules = 0, seen_mode = 0;
    if (root && root->type == YAML_MAPPING_NODE)
        for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top; p++) {
            const yaml_node_t *k = yaml_document_get_node(&doc, p->key), *v = yaml_document_get_node(&doc, p->value);
            int *seen = scalar(k) && !strcmp(scalar(k), "rules")  ? &seen_rules
                : scalar(k) && !strcmp(scalar(k), "tool_results") ? &seen_mode
                                                                  : NULL;
            if (seen && (*seen)++) {
                problem(rs, name, k, "%s is given twice in this file; the first is used", scalar(k));
                continue;
            }
            if (scalar(k) && !strcmp(scalar(k), "rules"))
                list = v;
            else if (scalar(k) && !strcmp(scalar(k), "tool_results")) {
                if (scalar(v) && !strcmp(scalar(v), "modify"))
                    modify = 1;
                else if (!scalar(v) || strcmp(scalar(v), "advise"))
                    problem(rs, name, v, "tool_results must be advise (the default) or modify");
            } else
                problem(rs, name, k, "unknown key %s (a rule file holds rules: and may set tool_results:)",
                        scalar(k) ? scalar(k) : "?");
        }
    int first = rs->n;
    if (!list || list->type != YAML_SEQUENCE_NODE)
        problem(rs, name, root, "a rule file holds rules:, a list of rules");
    else
        for (yaml_node_item_t *it = list->data.sequence.items.start; it < list->data.sequence.items.top; it++)
            read_rule(rs, name, &doc, yaml_document_get_node(&doc, *it));
    for (int i = first; i < rs->n; i++)
        rs->v[i].modify_results = modify;
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void load_dir(struct ruleset *rs, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        if (rs->nproblems < RULESET_MAX_PROBLEMS)
            snprintf(rs->problems[rs->nproblems++], sizeof rs->problems[0], "%s: cannot read this rules directory",
                     dir);
        return;
    }
    char *names[256];
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) && n < 256) {
        size_t l = strlen(de->d_name);
        if ((l > 4 && !strcmp(de->d_name + l - 4, ".yml")) || (l > 5 && !strcmp(de->d_name + l - 5, ".yaml")))
            if ((names[n] = strdup(de->d_name)))
                n++;
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, by_name);
    for (int i = 0; i < n; i++) {
        char path[1200];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        free(names[i]);
        size_t got;
        char *buf = read_regular(path, RULEFILE_MAX_BYTES, &got);
        if (buf)
            ruleset_load_text(rs, path, buf, got);
        else
            problem(rs, path, NULL, "not read: it %s%s", read_regular_why(errno),
                    errno == EFBIG ? " (a rule file is at most 1 MiB)" : "");
        free(buf);
    }
}

void ruleset_load(struct ruleset *rs, const struct profile *p, char **dirs, int ndirs)
{
    memset(rs, 0, sizeof *rs);
    for (const struct embed_blob *b = embed_table; b->path; b++)
        if (!strncmp(b->path, "rules/", 6) && !strchr(b->path + 6, '/') && strstr(b->path, ".yml"))
            ruleset_load_text(rs, b->path, b->data, b->len);
    for (int i = 0; i < rs->n; i++)
        rs->v[i].shipped = 1;
    for (int i = 0; p && i < p->nrule_dirs; i++)
        load_dir(rs, p->rule_dirs[i]);
    for (int i = 0; i < ndirs; i++)
        load_dir(rs, dirs[i]);
}

void ruleset_free(struct ruleset *rs)
{
    for (int i = 0; i < rs->n; i++)
        rule_free(&rs->v[i]);
    free(rs->v);
    rs->v = NULL;
    rs->n = rs->cap = 0;
    if (ruleset_current == rs)
        ruleset_current = NULL;
}
