/* submit.c: the output filter's tools, and rules on any text.
 *
 * submit_message is the agent's path to the person: the message is judged
 * against the active rules for messages and comes back accepted, rewritten
 * (the rewrite is what to deliver) or rejected (it waits as the pending
 * message, with each violation's guidance). submit_justification argues for
 * the pending message: without a model evaluator, a justification that names
 * every violated rule and gives a reason of its own is accepted, and the
 * message is delivered with a system note saying which rules were set aside
 * and why; anything less is rejected again; after 4 attempts keel fails
 * open and says the rules were bypassed. Never a silent block. */
#include "submit.h"

#include "detect.h"
#include "evaluator.h"
#include "log.h"
#include "clock.h"
#include "rulefile.h"
#include "text.h"

#include <ctype.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* All the rules on one text together: past this, the rules not yet run are
 * reported as not checked, so a set of slow rules cannot hold a reply (or a
 * host's hook, which the host kills at its timeout) for long. */
#define RULES_TOTAL_MS 1000

#define MESSAGE_MAX       16000
#define JUSTIFICATION_MAX 4000
#define ATTEMPTS_MAX      4
#define SPANS_MAX         16

static struct {
    char *pending;
    int attempts;
    long sent;
} mop;

static int applies(const struct rule *r, int where, const char *tool)
{
    if (!r->active || !(r->applies_to & where))
        return 0;
    if (where != RA_TOOL_RESULT || !r->ntools)
        return 1;
    for (int i = 0; i < r->ntools; i++)
        if (tool && fnmatch(r->tools[i], tool, 0) == 0)
            return 1;
    return 0;
}

static const char *const action_names[] = {"annotate", "rewrite", "reject"};

static cJSON *spans_json(const char *text, const struct rule_span *sp, int n)
{
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; i < n && i < SPANS_MAX; i++) {
        cJSON *s = cJSON_CreateObject();
        cJSON_AddNumberToObject(s, "start", (double)sp[i].start);
        cJSON_AddNumberToObject(s, "end", (double)sp[i].end);
        size_t l = sp[i].end - sp[i].start > 200 ? 200 : sp[i].end - sp[i].start;
        while (l && l < sp[i].end - sp[i].start && ((unsigned char)text[sp[i].start + l] & 0xC0) == 0x80)
            l--;
        char *t = malloc(l + 1);
        if (t) {
            memcpy(t, text + sp[i].start, l);
            t[l] = '\0';
            cJSON_AddStringToObject(s, "text", t);
            free(t);
        }
        cJSON_AddItemToArray(arr, s);
    }
    return arr;
}

/* An llm rule: 1 fires, 0 passes, -1 the evaluator could not say (note set).
 * within_ms: what is left of the time the text's llm rules share. */
static int ask_llm(const struct profile *p, long within_ms, const struct rule *r, const char *text, cJSON *notes)
{
    static const char head[] = "You check one rule on a message. The rule: ",
                      tail[] =
                          "\nAnswer with one word: VIOLATES if the message breaks the rule, PASSES if it does not.";
    char answer[256], why[200];
    char *system = malloc(sizeof head + strlen(r->prompt) + sizeof tail);
    if (within_ms <= 0 || !system) {
        char note[320];
        snprintf(note, sizeof note, "rule %s was not checked: %s", r->name,
                 system ? "the time the evaluator is given for this text is spent" : "out of memory");
        cJSON_AddItemToArray(notes, cJSON_CreateString(note));
        free(system);
        return -1;
    }
    sprintf(system, "%s%s%s", head, r->prompt, tail); /* whole: a rule's prompt is never cut */
    int rc = evaluator_ask(p, within_ms, system, text, answer, sizeof answer, why, sizeof why);
    free(system);
    if (rc < 0) {
        char note[320];
        snprintf(note, sizeof note, "rule %s was not checked: %s", r->name, why);
        cJSON_AddItemToArray(notes, cJSON_CreateString(note));
        return -1;
    }
    for (char *c = answer; *c; c++)
        *c = (char)toupper((unsigned char)*c);
    return strstr(answer, "VIOLATES") != NULL;
}

/* A rule that ran out of budget on this text: said so, never "no match". */
static void skip(cJSON *skipped, cJSON *notes, const struct rule *r)
{
    char note[320];
    snprintf(note, sizeof note, "rule %s was not checked: %s (%d ms)", r->name, rule_skipped_why, RULE_BUDGET_MS);
    cJSON_AddItemToArray(notes, cJSON_CreateString(note));
    cJSON_AddItemToArray(skipped, cJSON_CreateString(r->name));
    log_event(LOG_WARN, "rule_skipped", "budget_ms=%d", RULE_BUDGET_MS);
}

/* A rewrite rule whose replacement does not fit what its pattern matched:
 * the text is left as it was, and that is said, with where to look. */
static void unrewritten(cJSON *unusable, cJSON *notes, const struct rule *r)
{
    char note[320];
    snprintf(note, sizeof note, "rule %s did not rewrite this text: %s", r->name, rule_unusable_why);
    cJSON_AddItemToArray(notes, cJSON_CreateString(note));
    cJSON_AddItemToArray(unusable, cJSON_CreateString(r->name));
    log_event(LOG_WARN, "rule_replacement_unusable", "what_to_do=\"keel rules lint\"");
}

int rules_quiet(const char *text, size_t n, int where, const char *tool)
{
    struct ruleset *rs = ruleset_current;
    int valid = -1; /* the text is valid UTF-8: checked once, for the first regex rule */
    for (int i = 0; rs && i < rs->n; i++) {
        const struct rule *r = &rs->v[i];
        if (!applies(r, where, tool))
            continue;
        if (r->detector == RD_REGEX && valid < 0)
            valid = text_valid_utf8(text, n);
        if (r->detector == RD_LLM || (r->detector == RD_REGEX && !valid))
            return 0; /* the full judgement decides */
        if (rule_any(r, text, n) != 0)
            return 0; /* fired, or skipped: the full judgement says which */
    }
    return 1; /* nothing fired, so nothing was rewritten either: the text judged stays as it came */
}

cJSON *rules_judge(const struct profile *p, const char *text, int where, const char *tool)
{
    struct ruleset *rs = ruleset_current;
    cJSON *out = cJSON_CreateObject();
    cJSON *violations = cJSON_AddArrayToObject(out, "violations");
    cJSON *applied = cJSON_AddArrayToObject(out, "applied");
    cJSON *notes = cJSON_AddArrayToObject(out, "notes");
    cJSON *annotations = cJSON_AddArrayToObject(out, "annotations");
    cJSON *skipped = cJSON_AddArrayToObject(out, "skipped");
    cJSON *unusable = cJSON_AddArrayToObject(out, "unusable");
    cJSON *unasked = cJSON_AddArrayToObject(out, "unanswered"); /* llm rules the evaluator did not judge */
    size_t n = strlen(text), *origin = NULL; /* origin: for each place of cur, its place in text (once rewritten) */
    char *cur = rule_copy(text, n);
    int64_t end = chrono_mono_ms() + RULES_TOTAL_MS,
            llm_end = chrono_mono_ms() + (p && p->eval_timeout_ms > 0 ? p->eval_timeout_ms : 5000); /* all llm rules */
    for (int i = 0; rs && cur && i < rs->n; i++) {
        const struct rule *r = &rs->v[i];
        if (!applies(r, where, tool))
            continue;
        if (r->detector == RD_REGEX && chrono_mono_ms() > end) { /* the set's time is spent */
            skip(skipped, notes, r);
            continue;
        }
        struct rule_span sp[SPANS_MAX];
        int hits;
        if (r->detector == RD_LLM) { /* its wait is the evaluator's time, not the regex rules' */
            int64_t t0 = chrono_mono_ms();
            int said = ask_llm(p, (long)(llm_end - t0), r, cur, notes);
            if (said < 0 && evaluator_enabled(p)) /* (none configured: rules lint says so, not every result) */
                cJSON_AddItemToArray(unasked, cJSON_CreateString(r->name));
            hits = said > 0;
            end += chrono_mono_ms() - t0;
        } else {
            hits = rule_match(r, cur, n, sp, SPANS_MAX);
        }
        if (r->detector == RD_LLM && hits)
            sp[0] = (struct rule_span){0, n};
        if (hits == RULE_SKIPPED) {
            skip(skipped, notes, r);
            continue;
        }
        if (hits <= 0)
            continue;
        /* On a tool result, a rule changes nothing unless its file opted in
         * (tool_results: modify): the server's content may be what the agent
         * edits and writes back. It says what it found and where instead. */
        int action = r->action, held = where == RA_TOOL_RESULT && !r->modify_results && action != RX_ANNOTATE;
        if (held)
            action = RX_ANNOTATE;
        cJSON *v = cJSON_CreateObject();
        cJSON_AddStringToObject(v, "rule", r->name);
        cJSON_AddStringToObject(v, "guidance",
                                held && r->description ? r->description
                                    : r->guidance      ? r->guidance
                                                       : (r->description ? r->description : ""));
        /* Spans are offsets into the text as it was given: after a rewrite,
         * each end is taken back through the rewrites to where it came from */
        if (origin) {
            int kept = 0;
            for (int k = 0; k < hits; k++) {
                size_t a = origin[sp[k].start], e = sp[k].end, z = origin[e];
                /* an end inside text a rewrite put in: on to where that
                 * text ends, whose place is the replaced text's end */
                while (z <= a && e < n)
                    z = origin[++e];
                struct rule_span m = {a, z > a ? z : a};
                int twice = 0; /* two matches in one replacement are one span of the text given */
                for (int q = 0; q < kept && !twice; q++)
                    twice = sp[q].start == m.start && sp[q].end == m.end;
                if (!twice)
                    sp[kept++] = m;
            }
            cJSON_AddItemToObject(v, "spans", spans_json(text, sp, kept));
        } else {
            cJSON_AddItemToObject(v, "spans", spans_json(cur, sp, hits));
        }
        if (held)
            cJSON_AddStringToObject(v, "not_applied", action_names[r->action]);
        if (action == RX_REJECT) {
            cJSON_AddItemToArray(violations, v);
        } else if (action == RX_REWRITE) {
            int over;
            if (!origin && (origin = malloc((n + 1) * sizeof *origin))) /* where each byte stands in text */
                for (size_t k = 0; k <= n; k++)
                    origin[k] = k;
            size_t *before = origin; /* kept until the rewrite is taken */
            char *rw = origin ? rule_rewrite_mapped(r, cur, n, &over, &origin) : NULL;
            if (!origin) /* out of memory: not rewritten, and said as a rule skipped */
                over = 1;
            cJSON_Delete(v);
            if (over) {
                if (over == 2)
                    unrewritten(unusable, notes, r);
                else
                    skip(skipped, notes, r);
                continue;
            }
            if (rw &&
                strlen(rw) > 4 * strlen(text) + 4096) { /* rewrites that multiply the text: this one is not applied */
                char note[320];
                snprintf(note, sizeof note,
                         "rule %s did not rewrite this text: the rewrites would make it over four times as long",
                         r->name);
                cJSON_AddItemToArray(notes, cJSON_CreateString(note));
                cJSON_AddItemToArray(unusable, cJSON_CreateString(r->name));
                free(rw);
                free(origin);
                origin = before;
                continue;
            }
            if (origin != before)
                free(before);
            cJSON_AddItemToArray(applied, cJSON_CreateString(r->name));
            if (rw) {
                free(cur);
                cur = rw;
                n = strlen(cur);
            }
        } else {
            cJSON_AddItemToArray(annotations, v);
        }
    }
    if (cur && strcmp(cur, text))
        cJSON_AddStringToObject(out, "rewritten", cur);
    free(cur);
    free(origin);
    return out;
}

static cJSON *drop_empty(cJSON *o, const char *key)
{
    if (!cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(o, key)))
        cJSON_DeleteItemFromObjectCaseSensitive(o, key);
    return o;
}

int submit_message(const cJSON *args, const struct chrono_env *env, cJSON **out, kerr *e)
{
    static const char *const keys[] = {"message", NULL};
    const char *msg;
    size_t n;
    if (det_known_keys(args, keys, "", e) < 0 ||
        det_string(args, "message", "message", 1, NULL, MESSAGE_MAX, &msg, &n, e) < 0)
        return -1;
    cJSON *j = rules_judge(env->profile, msg, RA_MESSAGE, NULL);
    free(mop.pending); /* a new message replaces a pending one */
    mop.pending = NULL;
    mop.attempts = 0;
    cJSON *o = cJSON_CreateObject();
    const cJSON *rewritten = cJSON_GetObjectItemCaseSensitive(j, "rewritten");
    if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "violations"))) {
        mop.pending = strdup(msg);
        cJSON_AddStringToObject(o, "verdict", "rejected");
        cJSON_AddItemToObject(o, "violations", cJSON_DetachItemFromObjectCaseSensitive(j, "violations"));
        cJSON_AddNumberToObject(o, "attempts_left", ATTEMPTS_MAX);
        cJSON_AddStringToObject(o, "next",
                                "Rewrite the message and submit it again, or call submit_justification naming each "
                                "violated rule and your reason.");
    } else if (rewritten) {
        cJSON_AddStringToObject(o, "verdict", "rewritten");
        cJSON_AddStringToObject(o, "text", msg);
        cJSON_AddStringToObject(o, "rewritten", rewritten->valuestring);
        cJSON_AddItemToObject(o, "applied", cJSON_DetachItemFromObjectCaseSensitive(j, "applied"));
        mop.sent++;
    } else {
        cJSON_AddStringToObject(o, "verdict", "accepted");
        cJSON_AddStringToObject(o, "text", msg);
        mop.sent++;
    }
    cJSON_AddItemToObject(o, "annotations", cJSON_DetachItemFromObjectCaseSensitive(j, "annotations"));
    cJSON_AddItemToObject(o, "notes", cJSON_DetachItemFromObjectCaseSensitive(j, "notes"));
    drop_empty(drop_empty(o, "annotations"), "notes");
    cJSON_AddBoolToObject(o, "pending", mop.pending != NULL);
    cJSON_Delete(j);
    log_event(LOG_INFO, "message_judged", "verdict=%s bytes=%zu",
              cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "verdict")), n);
    *out = o;
    return 0;
}

/* Does the justification name rule (case-insensitively)? */
static int names(const char *just, const char *rule)
{
    size_t rn = strlen(rule);
    for (const char *p = just; *p; p++)
        if (!strncasecmp(p, rule, rn))
            return 1;
    return 0;
}

int submit_justification(const cJSON *args, const struct chrono_env *env, cJSON **out, kerr *e)
{
    static const char *const keys[] = {"justification", NULL};
    const char *just;
    size_t n;
    if (det_known_keys(args, keys, "", e) < 0 ||
        det_string(args, "justification", "justification", 1, NULL, JUSTIFICATION_MAX, &just, &n, e) < 0)
        return -1;
    if (!mop.pending)
        return kerr_set(e, "NO_PENDING_MESSAGE", NULL, "no message is waiting; submit_message sends one");
    mop.attempts++;
    cJSON *j = rules_judge(env->profile, mop.pending, RA_MESSAGE, NULL);
    cJSON *violations = cJSON_DetachItemFromObjectCaseSensitive(j, "violations");
    cJSON *notes = cJSON_DetachItemFromObjectCaseSensitive(j, "notes");
    /* what is delivered if it goes: the message with the rewrite rules
     * applied, as a message that broke none would be */
    const char *rewritten = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j, "rewritten"));
    /* The deterministic judge: every violated rule named, and words of its own. */
    int all_named = 1;
    size_t named_chars = 0, list_n = 1, guide_n = 1;
    const cJSON *v;
    cJSON_ArrayForEach(v, violations) {
        const char *rule = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "rule"));
        const char *g = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "guidance"));
        list_n += strlen(rule) + 2;
        guide_n += strlen(rule) + 4 + (g ? strlen(g) : 0);
    }
    char *list = calloc(list_n, 1), *guidance = calloc(guide_n, 1); /* whole: every rule named */
    if (!list || !guidance) {
        free(list);
        free(guidance);
        cJSON_Delete(violations);
        cJSON_Delete(notes);
        cJSON_Delete(j);
        mop.attempts--;
        return kerr_set(e, "INTERNAL_ERROR", NULL, "out of memory");
    }
    cJSON_ArrayForEach(v, violations) {
        const char *rule = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "rule"));
        const char *g = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "guidance"));
        if (!names(just, rule))
            all_named = 0;
        named_chars += strlen(rule);
        sprintf(list + strlen(list), "%s%s", list[0] ? ", " : "", rule);
        sprintf(guidance + strlen(guidance), "%s%s: %s", guidance[0] ? "; " : "", rule, g ? g : "");
    }
    int accept = all_named && rule_words(just, n) >= 6 && n > named_chars + 20;
    if (evaluator_enabled(env->profile)) {
        static const char sys_head[] = "An agent's message broke these rules: ",
                          sys_tail[] = ". It asks to deliver the message anyway. Judge the justification: answer "
                                       "ACCEPT if it gives a real reason the rules should not apply here, else REJECT.";
        char answer[128], why[200];
        size_t un = strlen(mop.pending) + n + 64;
        char *system = malloc(sizeof sys_head + strlen(guidance) + sizeof sys_tail), *user = malloc(un);
        if (system && user) { /* whole, never cut inside a character: the justification last */
            sprintf(system, "%s%s%s", sys_head, guidance, sys_tail);
            snprintf(user, un, "Message:\n%s\n\nJustification:\n%s", mop.pending, just);
        }
        if (system && user &&
            evaluator_ask(env->profile, 0, system, user, answer, sizeof answer, why, sizeof why) == 0) {
            for (char *c = answer; *c; c++)
                *c = (char)toupper((unsigned char)*c);
            accept = strstr(answer, "ACCEPT") != NULL;
        } else {
            char note[320];
            snprintf(note, sizeof note, "the evaluator was not used (%s); keel's own judgement stands",
                     system && user ? why : "out of memory");
            cJSON_AddItemToArray(notes, cJSON_CreateString(note));
        }
        free(system);
        free(user);
    }
    cJSON *o = cJSON_CreateObject();
    if (accept || mop.attempts >= ATTEMPTS_MAX) {
        cJSON_AddStringToObject(o, "verdict", accept ? "accepted" : "accepted_failed_open");
        cJSON_AddStringToObject(o, "text", rewritten ? rewritten : mop.pending);
        size_t sn = strlen(list) + n + 200;
        char *sys = malloc(sn);
        if (sys && accept)
            snprintf(sys, sn, "Delivered over keel's rule%s %s. The agent's reason: %s", strchr(list, ',') ? "s" : "",
                     list, just);
        else if (sys)
            snprintf(sys, sn, "keel's rules were bypassed after %d attempts to justify this message: %s.", ATTEMPTS_MAX,
                     list);
        cJSON_AddStringToObject(o, "system_note", sys ? sys : "keel's rules were set aside (out of memory)");
        free(sys);
        free(mop.pending);
        mop.pending = NULL;
        mop.sent++;
        cJSON_Delete(violations);
    } else {
        cJSON_AddStringToObject(o, "verdict", "rejected");
        cJSON_AddItemToObject(o, "violations", violations);
        cJSON_AddStringToObject(o, "next",
                                all_named ? "Give a reason in your own words, not only the rule names."
                                          : "Name each violated rule and say why it should not apply here.");
    }
    free(list);
    free(guidance);
    cJSON_Delete(j);
    cJSON_AddNumberToObject(o, "attempts", mop.attempts);
    cJSON_AddNumberToObject(o, "attempts_left", mop.pending ? ATTEMPTS_MAX - mop.attempts : 0);
    cJSON_AddItemToObject(o, "notes", notes);
    drop_empty(o, "notes");
    cJSON_AddBoolToObject(o, "pending", mop.pending != NULL);
    log_event(LOG_INFO, "justification_judged", "verdict=%s attempt=%d",
              cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "verdict")), mop.attempts);
    *out = o;
    return 0;
}

int submit_get_rules(const cJSON *args, const struct chrono_env *env, cJSON **out, kerr *e)
{
    (void)env;
    static const char *const keys[] = {"filter", NULL};
    const char *filter = NULL;
    size_t fn;
    if (det_known_keys(args, keys, "", e) < 0 ||
        det_string(args, "filter", "filter", 0, NULL, 500, &filter, &fn, e) < 0)
        return -1;
    pcre2_code *re = NULL;
    if (filter) {
        int err;
        PCRE2_SIZE off;
        re = pcre2_compile((PCRE2_SPTR)filter, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_CASELESS, &err, &off, NULL);
        if (!re) {
            PCRE2_UCHAR msg[160];
            pcre2_get_error_message(err, msg, sizeof msg);
            return kerr_set(e, "INPUT_INVALID", "filter", "filter is not a valid regular expression: %s at offset %zu",
                            (char *)msg, (size_t)off);
        }
    }
    static const char *const where[] = {"", "message", "tool_result",    "", "sampling_response", "",
                                        "", "",        "tool_definition"};
    static const char *const act[] = {"annotate", "rewrite", "reject"};
    static const char *const det[] = {"regex", "length", "llm"};
    cJSON *o = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(o, "rules");
    pcre2_match_data *md = re ? pcre2_match_data_create_from_pattern(re, NULL) : NULL;
    for (int i = 0; ruleset_current && i < ruleset_current->n; i++) {
        const struct rule *r = &ruleset_current->v[i];
        const char *g = r->guidance ? r->guidance : "";
        if (re) {
            int a = pcre2_match(re, (PCRE2_SPTR)r->name, PCRE2_ZERO_TERMINATED, 0, 0, md, rule_limits());
            int b = a >= 0 ? a : pcre2_match(re, (PCRE2_SPTR)g, PCRE2_ZERO_TERMINATED, 0, 0, md, rule_limits());
            if ((a < 0 && a != PCRE2_ERROR_NOMATCH) || (b < 0 && b != PCRE2_ERROR_NOMATCH)) {
                pcre2_match_data_free(md);
                pcre2_code_free(re);
                cJSON_Delete(o);
                return kerr_set(e, "INPUT_INVALID", "filter",
                                "filter needs more backtracking than keel allows a "
                                "pattern; use a simpler one (no nested repeats like (\\w+\\s?)*)");
            }
            if (a < 0 && b < 0)
                continue;
        }
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "name", r->name);
        cJSON_AddStringToObject(x, "description", r->description ? r->description : "");
        cJSON_AddStringToObject(x, "applies_to", where[r->applies_to]);
        cJSON_AddStringToObject(x, "detector", det[r->detector]);
        cJSON_AddStringToObject(x, "action", act[r->action]);
        cJSON_AddStringToObject(x, "guidance", g);
        cJSON_AddBoolToObject(x, "active", r->active);
        cJSON_AddItemToArray(arr, x);
    }
    pcre2_match_data_free(md);
    pcre2_code_free(re);
    *out = o;
    return 0;
}

int submit_get_status(const cJSON *args, const struct chrono_env *env, cJSON **out, kerr *e)
{
    (void)env;
    static const char *const keys[] = {NULL};
    if (det_known_keys(args, keys, "", e) < 0)
        return -1;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddBoolToObject(o, "pending", mop.pending != NULL);
    cJSON_AddNumberToObject(o, "justification_attempts", mop.attempts);
    cJSON_AddNumberToObject(o, "messages_sent", (double)mop.sent);
    *out = o;
    return 0;
}
