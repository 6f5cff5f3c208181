/* profile.c: load and check the YAML profile (see profile.h).
 *
 * libyaml builds the document tree; this file walks it against the known
 * keys. Every value is checked for type and range; a bad value keeps its
 * default and becomes a problem ("line 4: chronometric.end_of_day_local must
 * be HH:MM"), so one typo never disables the rest of the profile. Values are
 * never quoted back in problems: a profile may hold private text. */
#include "profile.h"
#include "text.h"

#include "readfile.h"

#include "timefmt.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>

#define PROFILE_MAX_BYTES (1u << 20)

const char *const profile_zone_names[ZONE_COUNT] = {"morning_peak", "midday", "afternoon_dip", "evening_quiet",
                                                    "night_owl_caution"};

static const char *const day_names[7] = {"sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"};

static void defaults(struct profile *p)
{
    char path[sizeof p->path];
    memcpy(path, p->path, sizeof path);
    memset(p, 0, sizeof *p);
    memcpy(p->path, path, sizeof path);
    p->eod = -1;
    static const int bands[ZONE_COUNT][2] = {{300, 720}, {720, 840}, {840, 990}, {990, 1170}, {1170, 300}};
    for (int i = 0; i < ZONE_COUNT; i++)
        p->zones[i] = (struct profile_zone){1, bands[i][0], bands[i][1]};
    p->rum_window = 150; /* the hooks see a conversation: one worry's asks span hours */
    p->rum_threshold = 3;
    p->rum_plea_threshold = 2; /* a plea for reassurance asked a third time */
    /* Half the prompt's words, not check_rumination's 0.28: the hooks and the
     * overlay compare every prompt of a working session, whose follow-up
     * questions share its topic's words all the time; asks of one worry
     * are linked by what they say (a plea, "again"), which no bar holds back. */
    p->rum_similarity = 0.5;
    p->hyp_gentle = 60;
    p->hyp_nudge = 90;
    p->hyp_hard = 120;
    p->ov_rumination = p->ov_hyperfocus = p->ov_sycophancy = p->ov_rules = p->ov_loop = 1;
    p->loop_repeat = 3;
    p->loop_errors = 3;
    p->loop_reask = 4;
    p->loop_alternation = 6;
    p->loop_window = 30;
    p->loop_calls = 50;
    p->loop_poll = 60;
    p->pins_on = 1;
    p->activity_gap = 30;
    p->eval_timeout_ms = 5000;
    snprintf(p->activity_intent, sizeof p->activity_intent, "this stretch of work (no intent was stated)");
}

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void
problem(struct profile *p, const yaml_node_t *n, const char *fmt, ...)
{
    if (p->nproblems >= PROFILE_MAX_PROBLEMS)
        return;
    char *buf = p->problems[p->nproblems++];
    int k = n ? snprintf(buf, sizeof p->problems[0], "line %lu: ", (unsigned long)n->start_mark.line + 1) : 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + k, sizeof p->problems[0] - (size_t)k, fmt, ap);
    va_end(ap);
}

struct walk {
    struct profile *p;
    yaml_document_t *doc;
};

static const char *scalar(const yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static int is_null(const yaml_node_t *n)
{
    const char *s = scalar(n);
    return s && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
        (!*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL"));
}

static int get_bool(struct walk *w, const yaml_node_t *n, const char *key, int *out)
{
    const char *s = scalar(n);
    static const char *const yes[] = {"true", "True", "TRUE", "yes", "Yes", "on", "On", NULL};
    static const char *const no[] = {"false", "False", "FALSE", "no", "No", "off", "Off", NULL};
    for (int i = 0; s && yes[i]; i++)
        if (!strcmp(s, yes[i]))
            return *out = 1, 0;
    for (int i = 0; s && no[i]; i++)
        if (!strcmp(s, no[i]))
            return *out = 0, 0;
    problem(w->p, n, "%s must be true or false", key);
    return -1;
}

static int get_int(struct walk *w, const yaml_node_t *n, const char *key, int lo, int hi, int *out)
{
    const char *s = scalar(n);
    char *end;
    errno = 0;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || !*s || *end || errno || v < lo || v > hi) {
        problem(w->p, n, "%s must be a whole number from %d to %d", key, lo, hi);
        return -1;
    }
    *out = (int)v;
    return 0;
}

static int get_number(struct walk *w, const yaml_node_t *n, const char *key, double lo, double hi, double *out)
{
    const char *s = scalar(n);
    char *end;
    double v = s ? strtod(s, &end) : 0;
    if (!s || !*s || *end || !(v >= lo && v <= hi)) {
        problem(w->p, n, "%s must be a number from %g to %g", key, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

/* "HH:MM", or null for none (-1) when allow_null. */
static int get_hhmm(struct walk *w, const yaml_node_t *n, const char *key, int allow_null, int *out)
{
    if (allow_null && is_null(n))
        return *out = -1, 0;
    if (tf_parse_hhmm(scalar(n), out) < 0) {
        problem(w->p, n, "%s must be a 24-hour time HH:MM%s", key, allow_null ? " or null" : "");
        return -1;
    }
    return 0;
}

typedef void (*member_fn)(struct walk *w, const char *key, const yaml_node_t *v, void *ctx);

struct keyline {
    const char *key;
    size_t at; /* its pair's place */
    const yaml_node_t *node;
};

static int by_keyline(const void *a, const void *b)
{
    const struct keyline *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : (x->at > y->at) - (x->at < y->at);
}

/* Calls fn for each key: value of a mapping; reports a non-mapping. */
static void each_member(struct walk *w, const yaml_node_t *n, const char *where, member_fn fn, void *ctx)
{
    if (!n || is_null(n))
        return;
    if (n->type != YAML_MAPPING_NODE) {
        problem(w->p, n, "%s must be a mapping of keys to values", where);
        return;
    }
    /* a key given twice: the first holds, as in a rule file (found sorted:
     * time in proportion to n log n, whatever the mapping's size) */
    size_t np = (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
    struct keyline *kl = np > 1 ? calloc(np, sizeof *kl) : NULL;
    unsigned char *skip = np > 1 ? calloc(np, 1) : NULL;
    if (kl && skip) {
        size_t m = 0;
        for (size_t i = 0; i < np; i++) {
            const yaml_node_t *k = yaml_document_get_node(w->doc, n->data.mapping.pairs.start[i].key);
            if (scalar(k))
                kl[m++] = (struct keyline){scalar(k), i, k};
        }
        qsort(kl, m, sizeof *kl, by_keyline);
        for (size_t i = 1; i < m; i++)
            if (!strcmp(kl[i].key, kl[i - 1].key)) {
                size_t first = i - 1;
                while (first > 0 && !strcmp(kl[first - 1].key, kl[i].key))
                    first--;
                skip[kl[i].at] = 1;
                problem(w->p, kl[i].node, "%s%s%s is given twice (first on line %lu); the first holds", where,
                        *where ? "." : "", kl[i].key, (unsigned long)kl[first].node->start_mark.line + 1);
            }
    }
    for (yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top; pr++) {
        const yaml_node_t *k = yaml_document_get_node(w->doc, pr->key);
        const yaml_node_t *v = yaml_document_get_node(w->doc, pr->value);
        const char *ks = scalar(k);
        if (!ks) {
            problem(w->p, k, "%s has a key that is not a plain word", where);
            continue;
        }
        if (!skip || !skip[pr - n->data.mapping.pairs.start])
            fn(w, ks, v, ctx);
    }
    free(kl);
    free(skip);
}

static void unknown(struct walk *w, const yaml_node_t *v, const char *where, const char *key)
{
    problem(w->p, v, "unknown key %s%s%s", where, *where ? "." : "", key);
}

struct zones_ctx {
    struct profile_zone *zones;
    const struct profile_zone *fallback; /* a band given wrong keeps this one */
    const char *where;
};

static void zone_member(struct walk *w, const char *key, const yaml_node_t *v, void *vctx)
{
    struct zones_ctx *c = vctx;
    int i;
    for (i = 0; i < ZONE_COUNT; i++)
        if (!strcmp(key, profile_zone_names[i]))
            break;
    if (i == ZONE_COUNT) {
        unknown(w, v, c->where, key);
        return;
    }
    const char *s = scalar(v);
    int a, b;
    char first[6], second[6];
    if (s && strlen(s) == 11 && s[5] == '-') {
        memcpy(first, s, 5);
        first[5] = '\0';
        memcpy(second, s + 6, 5);
        second[5] = '\0';
        if (tf_parse_hhmm(first, &a) == 0 && tf_parse_hhmm(second, &b) == 0 && a != b) {
            c->zones[i] = (struct profile_zone){1, a, b};
            return;
        }
    }
    problem(w->p, v, "%s.%s must be a range \"HH:MM-HH:MM\" (it may cross midnight); the one before holds", c->where,
            key);
    c->zones[i] = c->fallback[i];
}

/* The zones given (they replace the table); 0 when v is no mapping, which
 * keeps the table as it was, as a bad value keeps its default. */
static int read_zones(struct walk *w, const yaml_node_t *v, const char *where, struct profile_zone *zones,
                      const struct profile_zone *fallback)
{
    if (v && !is_null(v) && v->type != YAML_MAPPING_NODE) {
        problem(w->p, v, "%s must be a mapping of zone names to ranges; the zones before hold", where);
        return 0;
    }
    struct profile_zone z[ZONE_COUNT] = {{0}};
    struct zones_ctx c = {z, fallback, where};
    each_member(w, v, where, zone_member, &c);
    memcpy(zones, z, sizeof z);
    return 1;
}

static void day_member(struct walk *w, const char *key, const yaml_node_t *v, void *vctx)
{
    struct profile_day *d = vctx;
    char where[64];
    snprintf(where, sizeof where, "chronometric.weekday_overrides.%s", day_names[d - w->p->days]);
    if (!strcmp(key, "end_of_day_local")) {
        if (get_hhmm(w, v, "end_of_day_local", 1, &d->eod) == 0)
            d->eod_set = 1;
    } else if (!strcmp(key, "zones")) {
        char zw[80];
        snprintf(zw, sizeof zw, "%s.zones", where);
        d->zones_set |= read_zones(w, v, zw, d->zones, w->p->zones);
    } else {
        unknown(w, v, where, key);
    }
}

static void weekday_member(struct walk *w, const char *key, const yaml_node_t *v, void *ctx)
{
    (void)ctx;
    for (int i = 0; i < 7; i++)
        if (!strcmp(key, day_names[i])) {
            each_member(w, v, key, day_member, &w->p->days[i]);
            return;
        }
    unknown(w, v, "chronometric.weekday_overrides", key);
}

static void chrono_member(struct walk *w, const char *key, const yaml_node_t *v, void *ctx)
{
    (void)ctx;
    struct profile *p = w->p;
    if (!strcmp(key, "end_of_day_local")) {
        get_hhmm(w, v, "chronometric.end_of_day_local", 1, &p->eod);
    } else if (!strcmp(key, "session_overlap_policy")) {
        const char *s = scalar(v);
        if (s && !strcmp(s, "auto_close"))
            p->overlap_error = 0;
        else if (s && !strcmp(s, "error"))
            p->overlap_error = 1;
        else
            problem(p, v, "chronometric.session_overlap_policy must be auto_close or error");
    } else if (!strcmp(key, "hyperfocus_break_minutes")) {
        get_int(w, v, "chronometric.hyperfocus_break_minutes", 15, 480, &p->break_minutes);
    } else if (!strcmp(key, "zones")) {
        struct profile_zone before[ZONE_COUNT];
        memcpy(before, p->zones, sizeof before);
        p->zones_custom |= read_zones(w, v, "chronometric.zones", p->zones, before);
    } else if (!strcmp(key, "weekday_overrides")) {
        each_member(w, v, "chronometric.weekday_overrides", weekday_member, NULL);
    } else {
        unknown(w, v, "chronometric", key);
    }
}

static void thresholds_member(struct walk *w, const char *key, const yaml_node_t *v, void *ctx)
{
    (void)ctx;
    struct profile *p = w->p;
    int *slot = !strcmp(key, "gentle") ? &p->hyp_gentle
        : !strcmp(key, "nudge")        ? &p->hyp_nudge
        : !strcmp(key, "hard")         ? &p->hyp_hard
                                       : NULL;
    if (!slot) {
        unknown(w, v, "guardrails.hyperfocus.escalation_thresholds", key);
    } else {
        get_int(w, v, key, 1, 1440, slot);
        p->hyp_given |= slot == &p->hyp_gentle ? 1 : slot == &p->hyp_nudge ? 2 : 4;
    }
}

static void hyperfocus_member(struct walk *w, const char *key, const yaml_node_t *v, void *ctx)
{
    (void)ctx;
    if (!strcmp(key, "escalation_thresholds"))
        each_member(w, v, "guardrails.hyperfocus.escalation_thresholds", thresholds_member, NULL);
    else
        unknown(w, v, "guardrails.hyperfocus", key);
}

static void rumination_member(struct walk *w, const char *key, const yaml_node_t *v, void *ctx)
{
    (void)ctx;
    struct profile *p = w->p;
    if (!strcmp(key, "window_minutes"))
        get_int(w, v, "guardrails.rumination.window_minutes", 1, 1440, &p->rum_window);
    else if (!strcmp(key, "threshold_count"))
        get_int(w, v, "guardrails.rumination.threshold_count", 2, 50, &p->rum_threshold);
    else if (!strcmp(key, "plea_threshold_count"))
        get_int(w, v, "guardrails.rumination.plea_threshold_count", 2, 50, &p->rum_plea_threshold);
    else if (!strcmp(key, "similarity_threshold"))
        get_number(w, v, "guardrails.rumination.similarity_threshold", 0, 1, &p->rum_similarity);
    else
        unknown(w, v, "guardrails.rumination", key);
}

static void guardrails_member(struct walk *w, const char *key, const yaml_node_t *v, void *ctx)
{
    (void)ctx;
    if (!strcmp(key, "rumination"))
        each_member(w, v, "guardrails.rumination", rumination_member, NULL);
    else if (!strcmp(key, "hyperfocus"))
        each_member(w, v, "guardrails.hyperfocus", hyperfocus_member, NULL);
    else
        unknown(w, v, "guardrails", key);
}

static void privacy_member(struct walk *w, const char *key, const yaml_node_t *v, void *ctx)
{
    (void)ctx;
    struct profile *p = w->p;
    if (!strcmp(key, "os_idle_consent")) {
        get_bool(w, v, "privacy.os_idle_consent", &p->idle_consent);
    } else if (!strcmp(key, "idle_probe_command")) {
        const char *s = scalar(v);
        if (!s || strlen(s) >= sizeof p->idle_probe)
            problem(p, v, "privacy.idle_probe_command must be a command line under %zu bytes", sizeof p->idle_probe);
        else
            snprintf(p->idle_probe, sizeof p->idle_probe, "%s", s);
    } else {
        unknown(w, v, "privacy", key);
    }
}

static void overlay_member(struct walk *w, const char *key, const yaml_node_t *v, void *ctx)
{
    (void)ctx;
    struct profile *p = w->p;
    int *flag = !strcmp(key, "rumination") ? &p->ov_rumination
        : !strcmp(key, "hyperfocus")       ? &p->ov_hyperfocus
        : !strcmp(key, "sycophancy")       ? &p->ov_sycophancy
        : !strcmp(key, "rules")            ? &p->ov_rules
        : !strcmp(key, "loop")             ? &p->ov_loop
                                           : NULL;
    char full[64];
    snprintf(full, sizeof full, "overlay.%s", key);
    if (flag) {
        get_bool(w, v, full, flag);
    } else if (!strcmp(key, "activity_gap_minutes")) {
        get_int(w, v, full, 5, 720, &p->activity_gap);
    } else if (!strcmp(key, "activity_intent")) {
        const char *s = scalar(v);
        if (!s || !*s || strlen(s) >= sizeof p->activity_intent)
            problem(p, v, "overlay.activity_intent must be a short text (under 200 bytes)");
        else
            snprintf(p->activity_intent, sizeof p->activity_intent, "%s", s);
    } else {
        unknown(w, v, "overlay", key);
    }
}

static void loop_member(struct walk *w, const char *key, const yaml_node_t *v, void *ctx)
{
    (void)ctx;
    struct profile *p = w->p;
    if (!strcmp(key, "repeat_threshold"))
        get_int(w, v, "loop.repeat_threshold", 1, 20, &p->loop_repeat);
    else if (!strcmp(key, "error_threshold"))
        get_int(w, v, "loop.error_threshold", 2, 20, &p->loop_errors);
    else if (!strcmp(key, "reask_threshold"))
        get_int(w, v, "loop.reask_threshold", 2, 20, &p->loop_reask);
    else if (!strcmp(key, "alternation_calls"))
        get_int(w, v, "loop.alternation_calls", 4, 40, &p->loop_alternation);
    else if (!strcmp(key, "window_minutes"))
        get_int(w, v, "loop.window_minutes", 1, 1440, &p->loop_window);
    else if (!strcmp(key, "window_calls"))
        get_int(w, v, "loop.window_calls", 5, 200, &p->loop_calls);
    else if (!strcmp(key, "poll_seconds"))
        get_int(w, v, "loop.poll_seconds", 5, 3600, &p->loop_poll);
    else if (!strcmp(key, "exempt")) {
        if (v->type != YAML_SEQUENCE_NODE) {
            problem(p, v, "loop.exempt must be a list of tool name globs");
            return;
        }
        for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++) {
            const char *g = scalar(yaml_document_get_node(w->doc, *it));
            if (!g || !*g || strlen(g) >= sizeof p->loop_exempt[0] || p->nloop_exempt == 16)
                problem(p, v, "loop.exempt holds at most 16 globs, each under 128 bytes");
            else
                snprintf(p->loop_exempt[p->nloop_exempt++], sizeof p->loop_exempt[0], "%s", g);
        }
    } else
        unknown(w, v, "loop", key);
}

static void evaluator_member(struct walk *w, const char *key, const yaml_node_t *v, void *ctx)
{
    (void)ctx;
    struct profile *p = w->p;
    char *dst = !strcmp(key, "url")   ? p->eval_url
        : !strcmp(key, "model")       ? p->eval_model
        : !strcmp(key, "api_key_env") ? p->eval_key_env
                                      : NULL;
    size_t cap = dst == p->eval_url ? sizeof p->eval_url
        : dst == p->eval_model      ? sizeof p->eval_model
                                    : sizeof p->eval_key_env;
    if (!strcmp(key, "timeout_ms")) {
        get_int(w, v, "rules.evaluator.timeout_ms", 100, 120000, &p->eval_timeout_ms);
    } else if (!dst) {
        unknown(w, v, "rules.evaluator", key);
    } else if (!scalar(v) || strlen(scalar(v)) >= cap) {
        problem(p, v, "rules.evaluator.%s must be text under %zu bytes", key, cap);
    } else {
        snprintf(dst, cap, "%s", scalar(v));
    }
}

static void rules_member(struct walk *w, const char *key, const yaml_node_t *v, void *ctx)
{
    (void)ctx;
    struct profile *p = w->p;
    if (!strcmp(key, "dirs")) {
        if (v->type != YAML_SEQUENCE_NODE) {
            problem(p, v, "rules.dirs must be a list of directories");
            return;
        }
        for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++) {
            const char *s = scalar(yaml_document_get_node(w->doc, *it));
            struct stat st;
            if (!s || strlen(s) >= sizeof p->rule_dirs[0] || p->nrule_dirs == 8)
                problem(p, v, "rules.dirs holds at most 8 paths, each under 512 bytes");
            else {
                if (stat(s, &st) < 0 || !S_ISDIR(st.st_mode)) /* as keel rules lint says of it too */
                    problem(p, yaml_document_get_node(w->doc, *it), "rules.dirs: %s is not a directory keel can read",
                            s);
                snprintf(p->rule_dirs[p->nrule_dirs++], sizeof p->rule_dirs[0], "%s", s);
            }
        }
    } else if (!strcmp(key, "evaluator")) {
        each_member(w, v, "rules.evaluator", evaluator_member, NULL);
    } else {
        unknown(w, v, "rules", key);
    }
}

static void pins_member(struct walk *w, const char *key, const yaml_node_t *v, void *ctx)
{
    (void)ctx;
    struct profile *p = w->p;
    const char *s = scalar(v);
    if (!strcmp(key, "enabled"))
        get_bool(w, v, "pins.enabled", &p->pins_on);
    else if (!strcmp(key, "suspect")) {
        if (s && (!strcmp(s, "warn") || !strcmp(s, "hold")))
            p->pins_hold_suspect = !strcmp(s, "hold");
        else
            problem(p, v, "pins.suspect must be warn or hold");
    } else
        unknown(w, v, "pins", key);
}

static void top_member(struct walk *w, const char *key, const yaml_node_t *v, void *ctx)
{
    (void)ctx;
    if (!strcmp(key, "rules")) {
        each_member(w, v, "rules", rules_member, NULL);
        return;
    }
    if (!strcmp(key, "overlay")) {
        each_member(w, v, "overlay", overlay_member, NULL);
        return;
    }
    if (!strcmp(key, "loop")) {
        each_member(w, v, "loop", loop_member, NULL);
        return;
    }
    if (!strcmp(key, "pins")) {
        each_member(w, v, "pins", pins_member, NULL);
        return;
    }
    if (!strcmp(key, "chronometric"))
        each_member(w, v, "chronometric", chrono_member, NULL);
    else if (!strcmp(key, "guardrails"))
        each_member(w, v, "guardrails", guardrails_member, NULL);
    else if (!strcmp(key, "privacy"))
        each_member(w, v, "privacy", privacy_member, NULL);
    else
        unknown(w, v, "", key);
}

#define PROFILE_FLOW_MAX 64 /* [ ] and { } nested: past it the profile is not read */

void profile_load_text(struct profile *p, const char *yaml, size_t n)
{
    defaults(p);
    p->found = 1;
    yaml_parser_t parser;
    yaml_document_t doc;
    if (text_yaml_flow_depth(yaml, n, PROFILE_FLOW_MAX) > PROFILE_FLOW_MAX) {
        p->unreadable = 1; /* libyaml's time grows with the square of the depth */
        snprintf(p->error, sizeof p->error, "its [ ] and { } nest over %d deep; a profile needs a few",
                 PROFILE_FLOW_MAX);
        return;
    }
    if (!yaml_parser_initialize(&parser)) {
        p->unreadable = 1;
        snprintf(p->error, sizeof p->error, "out of memory");
        return;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)yaml, n);
    if (!yaml_parser_load(&parser, &doc)) {
        p->unreadable = 1;
        snprintf(p->error, sizeof p->error, "not valid YAML at line %lu: %s",
                 (unsigned long)parser.problem_mark.line + 1, parser.problem ? parser.problem : "parse error");
        yaml_parser_delete(&parser);
        return;
    }
    struct walk w = {p, &doc};
    const yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (root && !is_null(root)) {
        if (root->type != YAML_MAPPING_NODE) {
            p->unreadable = 1;
            snprintf(p->error, sizeof p->error,
                     "the profile must be a mapping (keys chronometric, guardrails, privacy)");
        } else {
            each_member(&w, root, "profile", top_member, NULL);
        }
    }
    /* One ladder, as check_hyperfocus reads the same two: each rung
     * escalation_thresholds gives, the rest from hyperfocus_break_minutes B
     * (B*2/3, B, B*4/3), or 60/90/120 without it. */
    int base[3] = {60, 90, 120};
    if (p->break_minutes)
        base[0] = (p->break_minutes * 2 + 1) / 3, base[1] = p->break_minutes, base[2] = (p->break_minutes * 4 + 1) / 3;
    int *rung[3] = {&p->hyp_gentle, &p->hyp_nudge, &p->hyp_hard};
    for (int k = 0; k < 3; k++)
        if (!(p->hyp_given >> k & 1))
            *rung[k] = base[k];
    if (!(p->hyp_gentle < p->hyp_nudge && p->hyp_nudge < p->hyp_hard)) {
        problem(p, NULL, "guardrails.hyperfocus.escalation_thresholds must be strictly ascending; using %d/%d/%d",
                base[0], base[1], base[2]);
        p->hyp_gentle = base[0], p->hyp_nudge = base[1], p->hyp_hard = base[2];
    }
    yaml_document_delete(&doc);
    /* a second document ("---" and more): keel reads the first only */
    yaml_document_t next;
    if (!p->unreadable) {
        if (yaml_parser_load(&parser, &next)) {
            const yaml_node_t *r2 = yaml_document_get_root_node(&next);
            if (r2 && !is_null(r2)) /* a "---" with nothing after it is no document */
                problem(p, r2, "the profile holds a second YAML document, which keel does not read: keep one%s", "");
            yaml_document_delete(&next);
        } else {
            problem(p, NULL, "after the profile, a second YAML document that is not valid YAML (line %lu): keep one",
                    (unsigned long)parser.problem_mark.line + 1);
        }
    }
    yaml_parser_delete(&parser);
}

void profile_load(struct profile *p, const char *explicit_path)
{
    const char *env = getenv("KEEL_PROFILE");
    if (explicit_path && *explicit_path)
        snprintf(p->path, sizeof p->path, "%s", explicit_path);
    else if (env && *env)
        snprintf(p->path, sizeof p->path, "%s", env);
    else {
        const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
        if (xdg && *xdg == '/')
            snprintf(p->path, sizeof p->path, "%s/keel/profile.yaml", xdg);
        else if (home && *home)
            snprintf(p->path, sizeof p->path, "%s/.config/keel/profile.yaml", home);
        else
            p->path[0] = '\0';
    }
    size_t len = 0;
    char *buf = p->path[0] ? read_regular(p->path, PROFILE_MAX_BYTES, &len) : NULL;
    if (!buf) {
        int missing = errno == ENOENT || !p->path[0];
        defaults(p);
        if (!missing) {
            p->found = 1;
            p->unreadable = 1;
            snprintf(p->error, sizeof p->error, "cannot be read: it %s%s", read_regular_why(errno),
                     errno == EFBIG ? " (a profile is at most 1 MiB)" : "");
        }
        return;
    }
    profile_load_text(p, buf, len);
    free(buf);
}

int profile_eod_for(const struct profile *p, int wday)
{
    return p->days[wday].eod_set ? p->days[wday].eod : p->eod;
}

const struct profile_zone *profile_zones_for(const struct profile *p, int wday)
{
    return p->days[wday].zones_set ? p->days[wday].zones : p->zones;
}

static void add_hhmm(cJSON *o, const char *key, int m)
{
    if (m < 0) {
        cJSON_AddNullToObject(o, key);
        return;
    }
    char b[32];
    snprintf(b, sizeof b, "%02d:%02d", m / 60 % 24, m % 60);
    cJSON_AddStringToObject(o, key, b);
}

static void add_zones(cJSON *o, const struct profile_zone *z)
{
    cJSON *zs = cJSON_AddObjectToObject(o, "zones");
    for (int i = 0; i < ZONE_COUNT; i++)
        if (z[i].defined) {
            char b[48];
            snprintf(b, sizeof b, "%02d:%02d-%02d:%02d", z[i].start / 60, z[i].start % 60, z[i].end / 60,
                     z[i].end % 60);
            cJSON_AddStringToObject(zs, profile_zone_names[i], b);
        }
}

cJSON *profile_to_json(const struct profile *p)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "path", p->path);
    cJSON_AddBoolToObject(o, "found", p->found);
    if (p->unreadable)
        cJSON_AddStringToObject(o, "unreadable", p->error);
    cJSON *c = cJSON_AddObjectToObject(o, "chronometric");
    add_hhmm(c, "end_of_day_local", p->eod);
    cJSON_AddStringToObject(c, "session_overlap_policy", p->overlap_error ? "error" : "auto_close");
    if (p->break_minutes)
        cJSON_AddNumberToObject(c, "hyperfocus_break_minutes", p->break_minutes);
    else
        cJSON_AddNullToObject(c, "hyperfocus_break_minutes");
    add_zones(c, p->zones);
    cJSON *wd = cJSON_AddObjectToObject(c, "weekday_overrides");
    for (int i = 0; i < 7; i++) {
        if (!p->days[i].eod_set && !p->days[i].zones_set)
            continue;
        cJSON *d = cJSON_AddObjectToObject(wd, day_names[i]);
        if (p->days[i].eod_set)
            add_hhmm(d, "end_of_day_local", p->days[i].eod);
        if (p->days[i].zones_set)
            add_zones(d, p->days[i].zones);
    }
    cJSON *g = cJSON_AddObjectToObject(o, "guardrails");
    cJSON *r = cJSON_AddObjectToObject(g, "rumination");
    cJSON_AddNumberToObject(r, "window_minutes", p->rum_window);
    cJSON_AddNumberToObject(r, "threshold_count", p->rum_threshold);
    cJSON_AddNumberToObject(r, "plea_threshold_count", p->rum_plea_threshold);
    cJSON_AddNumberToObject(r, "similarity_threshold", p->rum_similarity);
    cJSON *h = cJSON_AddObjectToObject(cJSON_AddObjectToObject(g, "hyperfocus"), "escalation_thresholds");
    cJSON_AddNumberToObject(h, "gentle", p->hyp_gentle);
    cJSON_AddNumberToObject(h, "nudge", p->hyp_nudge);
    cJSON_AddNumberToObject(h, "hard", p->hyp_hard);
    cJSON *ov = cJSON_AddObjectToObject(o, "overlay");
    cJSON_AddBoolToObject(ov, "rumination", p->ov_rumination);
    cJSON_AddBoolToObject(ov, "hyperfocus", p->ov_hyperfocus);
    cJSON_AddBoolToObject(ov, "sycophancy", p->ov_sycophancy);
    cJSON_AddBoolToObject(ov, "rules", p->ov_rules);
    cJSON_AddBoolToObject(ov, "loop", p->ov_loop);
    cJSON_AddNumberToObject(ov, "activity_gap_minutes", p->activity_gap);
    cJSON_AddStringToObject(ov, "activity_intent", p->activity_intent);
    cJSON *lp = cJSON_AddObjectToObject(o, "loop");
    cJSON_AddNumberToObject(lp, "repeat_threshold", p->loop_repeat);
    cJSON_AddNumberToObject(lp, "error_threshold", p->loop_errors);
    cJSON_AddNumberToObject(lp, "reask_threshold", p->loop_reask);
    cJSON_AddNumberToObject(lp, "alternation_calls", p->loop_alternation);
    cJSON_AddNumberToObject(lp, "window_minutes", p->loop_window);
    cJSON_AddNumberToObject(lp, "window_calls", p->loop_calls);
    cJSON_AddNumberToObject(lp, "poll_seconds", p->loop_poll);
    cJSON *ex = cJSON_AddArrayToObject(lp, "exempt");
    for (int i = 0; i < p->nloop_exempt; i++)
        cJSON_AddItemToArray(ex, cJSON_CreateString(p->loop_exempt[i]));
    cJSON *pn = cJSON_AddObjectToObject(o, "pins");
    cJSON_AddBoolToObject(pn, "enabled", p->pins_on);
    cJSON_AddStringToObject(pn, "suspect", p->pins_hold_suspect ? "hold" : "warn");
    cJSON *ru = cJSON_AddObjectToObject(o, "rules");
    cJSON *dirs = cJSON_AddArrayToObject(ru, "dirs");
    for (int i = 0; i < p->nrule_dirs; i++)
        cJSON_AddItemToArray(dirs, cJSON_CreateString(p->rule_dirs[i]));
    if (p->eval_url[0]) {
        cJSON *ev = cJSON_AddObjectToObject(ru, "evaluator");
        cJSON_AddStringToObject(ev, "url", p->eval_url);
        cJSON_AddStringToObject(ev, "model", p->eval_model);
        cJSON_AddStringToObject(ev, "api_key_env", p->eval_key_env);
        cJSON_AddNumberToObject(ev, "timeout_ms", p->eval_timeout_ms);
    }
    cJSON *pv = cJSON_AddObjectToObject(o, "privacy");
    cJSON_AddBoolToObject(pv, "os_idle_consent", p->idle_consent);
    cJSON_AddStringToObject(pv, "idle_probe_command",
                            p->idle_probe[0] ? p->idle_probe : "xprintidle (when DISPLAY is set)");
    return o;
}
