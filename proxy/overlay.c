/* overlay.c: detectors on live traffic, and apply_override (see overlay.h).
 *
 * Rumination: every tools/call the client sends upstream is remembered as
 * (tool, content words of its arguments, time) for the profile's window, at
 * most OV_MEMORY_MAX calls, in memory only. A call that repeats at least
 * threshold_count earlier calls of the same tool (Jaccard >= similarity)
 * earns an advisory on its own result. The person's messages inside
 * sampling/createMessage requests count the same way.
 *
 * Hyperfocus: on each result, the open chronometric session (or, with none,
 * the activity session: traffic since the last pause of activity_gap_minutes)
 * is placed on the ladder. An advisory goes out only when the level rises,
 * and at hard at most every 15 minutes; which rung was advised is kept in the
 * shared state, so two keel processes advise once between them.
 *
 * Sycophancy: the model's text in answers to sampling/createMessage and in
 * results of --model-tools is checked, and so are the person's repeated
 * requests for reassurance in sampling requests. Advisories for traffic that
 * does not go to the client ride on the next tools/call result.
 *
 * The guard view (session, overrides) is read from the state file when the
 * file has changed (a stat) and at least every OV_VIEW_MS, so an override one
 * keel answered holds for the next call through any other, and a result
 * costs a clock read, a stat and a few comparisons. */
#include "overlay.h"

#include "detect.h"
#include "log.h"
#include "rules.h"
#include "submit.h"
#include "state.h"
#include "timefmt.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OV_VIEW_MS 2000
#define OV_HARD_REPEAT_MS (15 * 60000LL)
#define OV_ASKS_MAX 20
#define OV_EXPLAIN_CHARS 300

struct overlay *overlay_current;

struct ov_item {
    int64_t at;
    uint64_t tool_hash;              /* compared before the name */
    uint64_t tool_id;                /* the same for every remembered call of one tool name (see tool_id) */
    char tool[64];
    struct text_set set;
    uint64_t sig;                    /* one bit per word of set (see word_sig) */
    size_t excess;                   /* set.n - popcount(sig): words that share a bit with another */
    char *text;                      /* the first OV_EXPLAIN_CHARS bytes, for explain-the-match */
};

static const char *const det_tokens[DET_COUNT][8] = {
    {"fresh-context", "override-once", "disable-for-session", "lower-sensitivity", "explain-the-match", NULL},
    {"snooze-15m", "snooze-once", "commit-and-close", "extend-end-of-day", "override-once", "disable-for-session",
     "explain-the-match", NULL},
    {"i-want-validation", "explain-the-match", "override-once", "fresh-context", "disable-for-session", NULL},
    {"override-once", "explain-the-match", NULL},
};

void overlay_init(struct overlay *ov, const struct profile *p, const char *state_dir, unsigned parts, char **model_tools,
                  int nmodel_tools)
{
    memset(ov, 0, sizeof *ov);
    ov->profile = p;
    ov->state_dir = state_dir;
    ov->parts = parts;
    if (!p->ov_rumination)
        ov->parts &= ~OV_RUMINATION;
    if (!p->ov_hyperfocus)
        ov->parts &= ~OV_HYPERFOCUS;
    if (!p->ov_sycophancy)
        ov->parts &= ~OV_SYCOPHANCY;
    if (!p->ov_rules)
        ov->parts &= ~OV_RULES;
    ov->model_tools = model_tools;
    ov->nmodel_tools = nmodel_tools;
    ov->queued = cJSON_CreateArray();
    overlay_current = ov;
}

static void forget(struct overlay *ov, size_t upto)
{
    if (!upto)
        return;
    for (size_t i = 0; i < upto; i++) {
        text_set_free(&ov->mem[i].set);
        free(ov->mem[i].text);
    }
    ov->mem += upto;                 /* the items move down only when the block is full */
    ov->nmem -= upto;
}

static void forget_asks(struct overlay *ov)
{
    for (size_t i = 0; i < ov->nasks; i++)
        free(ov->asks[i]);
    ov->nasks = 0;
}

void overlay_free(struct overlay *ov)
{
    forget(ov, ov->nmem);
    free(ov->memblock);
    forget_asks(ov);
    free(ov->asks);
    cJSON_Delete(ov->queued);
    for (int d = 0; d < DET_COUNT; d++)
        cJSON_Delete(ov->last[d]);
    text_words_free(&ov->words);
    free(ov->scratch);
    if (overlay_current == ov)
        overlay_current = NULL;
}

void overlay_forget(struct overlay *ov, int det)
{
    if (det == DET_RUMINATION)
        forget(ov, ov->nmem);
    else
        forget_asks(ov);
}

static int clock_env(struct overlay *ov, struct chrono_env *env)
{
    kerr e = {0};
    env->profile = ov->profile;
    env->state_dir = ov->state_dir;
    return chrono_now(&env->now, &e);
}

/* The shared view, re-read when stale. Memory from before a fresh-context goes. */
static void refresh(struct overlay *ov, const struct chrono_env *env)
{
    /* Another keel may have written an override a moment ago: a changed file
     * is read again at once. An unchanged one is still read every OV_VIEW_MS,
     * as what it means (sessions, pauses) moves with the clock. */
    struct state_stamp st;
    int stamped = state_stamp(ov->state_dir, &st) == 0;
    if (ov->view_ok && stamped && !memcmp(&st, &ov->view_stamp, sizeof st) && env->now.ms - ov->view_at < OV_VIEW_MS &&
        env->now.ms >= ov->view_at)
        return;
    ov->view_stamp = st;
    kerr e = {0};
    ov->view_ok = guard_read(env, ov->profile->activity_gap, &ov->view, &e) == 0;
    ov->view_at = env->now.ms;
    if (!ov->view_ok) {
        log_event(LOG_WARN, "overlay_state_unreadable", "code=%s", e.code ? e.code : "");
        return;
    }
    size_t k = 0;
    while (k < ov->nmem && ov->mem[k].at <= ov->view.fresh_context_at)
        k++;
    if (k) {
        forget(ov, k);
        forget_asks(ov);
    }
}

static int silenced(const struct overlay *ov, int det)
{
    return ov->local_disabled[det] || (ov->view_ok && ov->view.disabled[det]);
}

static cJSON *advisory(int det, const char *what_key, const char *what, double confidence, const char *reason,
                       const char *const *tokens, size_t ntok, cJSON *heuristic)
{
    cJSON *a = cJSON_CreateObject();
    cJSON_AddStringToObject(a, "detector", guard_detector_names[det]);
    if (what_key)
        cJSON_AddStringToObject(a, what_key, what);
    cJSON_AddNumberToObject(a, "confidence", det_round(confidence));
    cJSON_AddStringToObject(a, "reason", reason);
    det_overrides(a, tokens, ntok);
    cJSON_AddItemToObject(a, "heuristic", heuristic);
    return a;
}

/* A detector's override-once, if one waits, swallows this advisory. */
static int swallowed(struct overlay *ov, const struct chrono_env *env, int det)
{
    int taken = 0;
    kerr e = {0};
    if (ov->view_ok && ov->view.once[det] > 0 && guard_take_once(env, det, &taken, &e) == 0 && taken) {
        ov->view_at = 0;                 /* re-read: the count changed */
        log_event(LOG_INFO, "advisory_overridden", "detector=%s", guard_detector_names[det]);
    }
    return taken;
}

/* Concatenates the string values of a JSON value, up to OV_TEXT_MAX bytes. */
static void collect(const cJSON *v, char *buf, size_t cap, size_t *n)
{
    if (cJSON_IsString(v) && v->valuestring) {
        size_t l = strlen(v->valuestring);
        if (*n + l + 2 > cap)
            l = cap > *n + 2 ? cap - *n - 2 : 0;
        if (*n && l)
            buf[(*n)++] = ' ';
        memcpy(buf + *n, v->valuestring, l);
        *n += l;
    } else if (cJSON_IsArray(v) || cJSON_IsObject(v)) {
        for (const cJSON *c = v->child; c && *n + 2 < cap; c = c->next)
            collect(c, buf, cap, n);
    }
    buf[*n] = '\0';
}

/* Cuts s to at most max bytes without splitting a UTF-8 sequence. */
static size_t utf8_cut(const char *s, size_t n, size_t max)
{
    if (n <= max)
        return n;
    while (max && ((unsigned char)s[max] & 0xC0) == 0x80)
        max--;
    return max;
}

/* Bits set in x (SWAR: no libgcc call where the CPU's popcnt is not assumed). */
static unsigned bit_count(uint64_t x)
{
    x = x - ((x >> 1) & 0x5555555555555555ULL);
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
    return (unsigned)((x * 0x0101010101010101ULL) >> 56);
}

/* A 64-bit signature of a word set: one bit per word hash h, picked by the top
 * bits of h mixed (word hashes that differ in one letter share their top
 * bits; the mix spreads them). Two
 * sets share at most popcount(sig_a & sig_b) + min(excess_a, excess_b) words,
 * where excess is the number of a set's words whose bit another of its words
 * already set: a word in both sets sets its bit in both signatures, and the
 * shared words of a set map onto distinct bits but for at most its excess.
 * That bound rules most remembered calls out before any merge of the sets. */
static uint64_t word_sig(const struct text_set *set, size_t *excess)
{
    uint64_t sig = 0;
    for (size_t i = 0; i < set->n; i++) {
        uint64_t h = set->v[i];
        h ^= h >> 33;
        h *= 0xFF51AFD7ED558CCDULL;            /* MurmurHash3's finaliser step */
        h ^= h >> 33;
        sig |= (uint64_t)1 << (h >> 58);
    }
    *excess = set->n - bit_count(sig);
    return sig;
}

/* The id remembered calls of tool name carry: the one an earlier call of the
 * same name has (every call of one name shares it), 0 when none is
 * remembered. Comparing ids in the window replaces a strcmp per item. */
static uint64_t tool_id(const struct overlay *ov, const char *name, uint64_t hash)
{
    for (size_t i = ov->nmem; i-- > 0;)
        if (ov->mem[i].tool_hash == hash && strcmp(ov->mem[i].tool, name) == 0)
            return ov->mem[i].tool_id;
    return 0;
}

static cJSON *rumination(struct overlay *ov, const struct chrono_env *env, const char *tool, const char *text, size_t n)
{
    const struct profile *p = ov->profile;
    n = utf8_cut(text, n, OV_TEXT_MAX);
    if (!text_valid_utf8(text, n))
        return NULL;
    struct text_set cur = {0};
    ov->words.n = 0;
    if (text_words(text, n, &ov->words) < 0 || text_set_from_words(&ov->words, 1, &cur) < 0)
        return NULL;
    int64_t now = env->now.ms, from = now - (int64_t)p->rum_window * 60000;
    size_t old = 0;
    while (old < ov->nmem && ov->mem[old].at < from)
        old++;
    forget(ov, old);
    double sim = p->rum_similarity;
    long thr = p->rum_threshold;
    if (ov->view_ok && ov->view.lower_sensitivity) {
        sim = sim > 0.75 ? sim : 0.75;
        thr++;
    }
    size_t count = 0, first = 0;
    double best = 0, sum = 0;
    cJSON *matched = cJSON_CreateArray();
    char name[sizeof ov->mem->tool];
    snprintf(name, sizeof name, "%s", tool);
    uint64_t tool_hash = text_word_hash(name, strlen(name));
    uint64_t id = tool_id(ov, name, tool_hash);
    size_t excess;
    uint64_t sig = word_sig(&cur, &excess);
    double share = sim / (1.0 + sim);
    for (size_t i = 0; id && cur.n && i < ov->nmem; i++) {
        const struct ov_item *past = &ov->mem[i];
        if (past->tool_id != id)
            continue;
        /* Jaccard >= sim needs |A∩B| >= sim (|A| + |B|) / (1 + sim) (the test
         * text_jaccard_at_least stops its merge by, with the same slack):
         * when the signature bound falls short, the merge could only say no. */
        double need = share * (double)(cur.n + past->set.n) - 1e-9;
        size_t bound = bit_count(sig & past->sig) + (excess < past->excess ? excess : past->excess);
        if ((double)bound < need)
            continue;
        double j;
        if (text_jaccard_at_least(&cur, &past->set, sim, &j)) {
            if (!count++)
                first = i;
            sum += j;
            best = j > best ? j : best;
            cJSON *m = cJSON_CreateObject();
            cJSON_AddStringToObject(m, "text", ov->mem[i].text ? ov->mem[i].text : "");
            cJSON_AddNumberToObject(m, "similarity", det_round(j));
            cJSON_AddItemToArray(matched, m);
        }
    }
    /* Remember this call. */
    if (ov->nmem == OV_MEMORY_MAX)
        forget(ov, 1);
    size_t head = ov->mem ? (size_t)(ov->mem - ov->memblock) : 0;
    if (head + ov->nmem == ov->capmem && head >= OV_MEMORY_MAX) {
        memmove(ov->memblock, ov->mem, ov->nmem * sizeof *ov->mem);   /* once per OV_MEMORY_MAX calls */
        ov->mem = ov->memblock;
    } else if (head + ov->nmem == ov->capmem) {
        size_t cap = ov->capmem ? ov->capmem * 2 : 64;
        struct ov_item *m = realloc(ov->memblock, cap * sizeof *m);
        if (!m) {
            text_set_free(&cur);
            cJSON_Delete(matched);
            return NULL;
        }
        ov->memblock = m;
        ov->mem = m + head;
        ov->capmem = cap;
    }
    struct ov_item *it = &ov->mem[ov->nmem++];
    it->at = now;
    memcpy(it->tool, name, sizeof name);
    it->tool_hash = tool_hash;
    it->tool_id = id ? id : ++ov->next_tool_id;
    it->set = cur;
    it->sig = sig;
    it->excess = excess;
    size_t keep = utf8_cut(text, n, OV_EXPLAIN_CHARS);
    it->text = malloc(keep + 1);
    if (it->text) {
        memcpy(it->text, text, keep);
        it->text[keep] = '\0';
    }
    if (count < (size_t)thr || silenced(ov, DET_RUMINATION)) {
        cJSON_Delete(matched);
        return NULL;
    }
    long mins = (long)((now - ov->mem[first].at + 59999) / 60000);
    char reason[280];
    snprintf(reason, sizeof reason,
             "This is call number %zu to %s for nearly the same thing in the last %ld minute%s (best word overlap "
             "%d%%). Asking again may not bring a new answer; a different angle or a decision might.",
             count + 1, tool, mins < 1 ? 1 : mins, mins == 1 ? "" : "s", (int)(best * 100 + 0.5));
    double conf = rum_confidence(sum / (double)count, sim);
    cJSON *a = advisory(DET_RUMINATION, NULL, NULL, conf, reason, det_tokens[DET_RUMINATION], 4,
                        det_heuristic("word_overlap_jaccard", "0.1.0", rum_description));
    cJSON_Delete(ov->last[DET_RUMINATION]);
    ov->last[DET_RUMINATION] = cJSON_Duplicate(a, 1);
    cJSON_AddItemToObject(ov->last[DET_RUMINATION], "matched", matched);
    if (swallowed(ov, env, DET_RUMINATION)) {
        cJSON_Delete(a);
        return NULL;
    }
    return a;
}

cJSON *overlay_on_call(struct overlay *ov, const char *tool, const cJSON *arguments)
{
    if (!(ov->parts & OV_RUMINATION))
        return NULL;
    struct chrono_env env;
    if (clock_env(ov, &env) < 0)
        return NULL;
    refresh(ov, &env);
    if (!ov->scratch && !(ov->scratch = malloc(OV_TEXT_MAX * 4 + 1)))
        return NULL;
    char *buf = ov->scratch;
    size_t n = 0;
    buf[0] = '\0';
    collect(arguments, buf, OV_TEXT_MAX * 4 + 1, &n);
    cJSON *a = n ? rumination(ov, &env, tool, buf, n) : NULL;
    if (!a)
        return NULL;
    cJSON *arr = cJSON_CreateArray();
    cJSON_AddItemToArray(arr, a);
    return arr;
}

/* Runs check_sycophancy on args; an advisory when it fires and may speak. */
static cJSON *sycophancy(struct overlay *ov, const struct chrono_env *env, cJSON *args)
{
    cJSON *out = NULL;
    kerr e = {0};
    cJSON *a = NULL;
    if (syc_check(args, env->now.ms, env->now.offset_s, &out, &e) == 0 &&
        cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(out, "detected")) && !silenced(ov, DET_SYCOPHANCY) &&
        !(ov->view_ok && ov->view.validation_ok)) {
        const char *pattern = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(out, "pattern"));
        a = advisory(DET_SYCOPHANCY, "pattern", pattern,
                     cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(out, "confidence")),
                     cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(out, "reason")),
                     det_tokens[DET_SYCOPHANCY], 5,
                     cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(out, "heuristic"), 1));
        cJSON_Delete(ov->last[DET_SYCOPHANCY]);
        ov->last[DET_SYCOPHANCY] = cJSON_Duplicate(a, 1);
        cJSON_AddItemToObject(ov->last[DET_SYCOPHANCY], "matched",
                              cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(out, "matched_spans"), 1));
        if (swallowed(ov, env, DET_SYCOPHANCY)) {
            cJSON_Delete(a);
            a = NULL;
        }
    }
    cJSON_Delete(out);
    return a;
}

/* The text of a content value: a block, or an array of blocks. */
static void content_text(const cJSON *content, char *buf, size_t cap, size_t *n)
{
    const cJSON *b = cJSON_IsObject(content) ? content : content ? content->child : NULL;
    for (; b && *n + 2 < cap; b = cJSON_IsObject(content) ? NULL : b->next) {
        const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(b, "type"));
        if (type && !strcmp(type, "text"))
            collect(cJSON_GetObjectItemCaseSensitive(b, "text"), buf, cap, n);
    }
}

void overlay_on_sampling_request(struct overlay *ov, const cJSON *params)
{
    if (!(ov->parts & (OV_RUMINATION | OV_SYCOPHANCY)))
        return;
    const cJSON *msgs = cJSON_GetObjectItemCaseSensitive(params, "messages"), *last = NULL, *m;
    cJSON_ArrayForEach(m, msgs) {
        const char *role = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "role"));
        if (role && !strcmp(role, "user"))
            last = m;
    }
    char *buf = malloc(OV_TEXT_MAX * 4 + 1);
    size_t n = 0;
    if (!buf || !last) {
        free(buf);
        return;
    }
    buf[0] = '\0';
    content_text(cJSON_GetObjectItemCaseSensitive(last, "content"), buf, OV_TEXT_MAX * 4 + 1, &n);
    n = utf8_cut(buf, n, OV_TEXT_MAX);
    buf[n] = '\0';
    struct chrono_env env;
    if (n && clock_env(ov, &env) == 0) {
        refresh(ov, &env);
        cJSON *a = ov->parts & OV_RUMINATION ? rumination(ov, &env, "sampling/createMessage", buf, n) : NULL;
        if (a)
            cJSON_AddItemToArray(ov->queued, a);
        if ((ov->parts & OV_SYCOPHANCY) && text_valid_utf8(buf, n)) {
            if (ov->nasks == OV_ASKS_MAX) {
                free(ov->asks[0]);
                memmove(ov->asks, ov->asks + 1, (OV_ASKS_MAX - 1) * sizeof *ov->asks);
                ov->nasks--;
            }
            char **v = ov->asks ? ov->asks : malloc(OV_ASKS_MAX * sizeof *v);
            if (v) {
                ov->asks = v;
                v[ov->nasks++] = strdup(buf);
                cJSON *args = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(args, "recent_user_messages");
                for (size_t i = 0; i < ov->nasks; i++) {
                    cJSON *o = cJSON_CreateObject();
                    cJSON_AddStringToObject(o, "text", v[i] ? v[i] : "");
                    cJSON_AddItemToArray(arr, o);
                }
                cJSON *s = sycophancy(ov, &env, args);
                if (s)
                    cJSON_AddItemToArray(ov->queued, s);
                cJSON_Delete(args);
            }
        }
    }
    free(buf);
}

void overlay_on_sampling_result(struct overlay *ov, const cJSON *result)
{
    if (!(ov->parts & OV_SYCOPHANCY))
        return;
    char *buf = malloc(OV_SCAN_MAX * 4 + 1);
    size_t n = 0;
    struct chrono_env env;
    if (buf && clock_env(ov, &env) == 0) {
        buf[0] = '\0';
        content_text(cJSON_GetObjectItemCaseSensitive(result, "content"), buf, OV_SCAN_MAX * 4 + 1, &n);
        refresh(ov, &env);
        if ((ov->parts & OV_RULES) && n && text_valid_utf8(buf, n)) {   /* rules for sampling answers */
            cJSON *j = rules_judge(ov->profile, buf, RA_SAMPLING, NULL), *names = cJSON_CreateArray(), *v;
            char reason[600] = "";
            const char *lists[] = {"violations", "annotations"};
            for (int l = 0; l < 2; l++)
                cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(j, lists[l])) {
                    cJSON_AddItemToArray(names, cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(v, "rule"), 1));
                    snprintf(reason + strlen(reason), sizeof reason - strlen(reason), "%s%s",
                             reason[0] ? " " : "The model's answer broke a rule: ",
                             cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "guidance")));
                }
            if (cJSON_GetArraySize(names)) {
                static const char *const tokens[] = {"override-once", "explain-the-match"};
                cJSON *a = advisory(DET_RULES, NULL, NULL, 0.9, reason, tokens, 2,
                                    det_heuristic("output_rules", "0.1.0", "keel's YAML output rules"));
                cJSON_AddItemToObject(a, "rules", names);
                cJSON_AddItemToArray(ov->queued, a);
            } else {
                cJSON_Delete(names);
            }
            cJSON_Delete(j);
        }
        cJSON *args = cJSON_CreateObject();
        cJSON_AddStringToObject(args, "candidate_response", buf);
        cJSON *s = n && text_valid_utf8(buf, n) && text_char_count(buf, n) <= OV_SCAN_MAX ? sycophancy(ov, &env, args) : NULL;
        if (s)
            cJSON_AddItemToArray(ov->queued, s);
        cJSON_Delete(args);
    }
    free(buf);
}

int overlay_is_model_tool(const struct overlay *ov, const char *tool)
{
    if (!(ov->parts & OV_SYCOPHANCY))
        return 0;
    for (int i = 0; i < ov->nmodel_tools; i++)
        if (fnmatch(ov->model_tools[i], tool, 0) == 0)
            return 1;
    return 0;
}

static cJSON *hyperfocus(struct overlay *ov, const struct chrono_env *env)
{
    const struct profile *p = ov->profile;
    if (!ov->view_ok || ov->view.session_started < 0 || silenced(ov, DET_HYPERFOCUS))
        return NULL;
    long g = p->hyp_gentle, nu = p->hyp_nudge, h = p->hyp_hard;
    if (p->break_minutes) {
        g = (p->break_minutes * 2 + 1) / 3;
        nu = p->break_minutes;
        h = (p->break_minutes * 4 + 1) / 3;
    }
    struct hyp_eval ev;
    int64_t started = ov->view.focus_started;
    hyp_evaluate(env->now.ms, env->now.offset_s, &started, g, nu, h, guard_end_of_day(env, ov->view.eod_extension_min),
                 0, &ev);
    if (strcmp(ov->hyp_key, ov->view.focus_key) != 0) {
        snprintf(ov->hyp_key, sizeof ov->hyp_key, "%s", ov->view.focus_key);
        ov->hyp_level = HYP_NONE;
    }
    if (ev.level == HYP_NONE)
        return NULL;
    if (!(ev.level > ov->hyp_level || (ev.level == HYP_HARD && env->now.ms - ov->hyp_at >= OV_HARD_REPEAT_MS)))
        return NULL;
    if (ov->view.snooze_until > env->now.ms)
        return NULL;                      /* snoozed: this rung waits */
    int emit = 0;
    kerr e = {0};
    if (guard_claim_hyperfocus(env, ov->view.focus_key, ev.level, &emit, &e) < 0 || emit == GUARD_SNOOZED)
        return NULL;
    ov->hyp_level = ev.level;
    ov->hyp_at = env->now.ms;
    ov->view_at = 0;
    if (emit != GUARD_EMIT)
        return NULL;
    char reason[280], base[200];
    hyp_reason(&ev, g, nu, h, base, sizeof base);
    const char *intent = ov->view.session_open && ov->view.intent[0] ? ov->view.intent : p->activity_intent;
    snprintf(reason, sizeof reason, "%s You set out to: %.*s", base, (int)(sizeof reason - strlen(base) - 20), intent);
    const char *tok[6];
    size_t nt = hyp_tokens(&ev, tok);
    cJSON *a = advisory(DET_HYPERFOCUS, "level", hyp_level_name(ev.level), 0.75, reason, tok, nt,
                        det_heuristic("elapsed_threshold_with_eod", "0.1.0", hyp_description));
    cJSON_Delete(ov->last[DET_HYPERFOCUS]);
    ov->last[DET_HYPERFOCUS] = cJSON_Duplicate(a, 1);
    cJSON_AddNumberToObject(ov->last[DET_HYPERFOCUS], "elapsed_seconds", (double)ev.elapsed_s);
    return a;
}

cJSON *overlay_for_result(struct overlay *ov, const char *tool, cJSON *earned, const char *text)
{
    (void)tool;
    cJSON *all = earned ? earned : cJSON_CreateArray();
    while (cJSON_GetArraySize(ov->queued) > 0)
        cJSON_AddItemToArray(all, cJSON_DetachItemFromArray(ov->queued, 0));
    struct chrono_env env;
    if ((ov->parts & (OV_HYPERFOCUS | OV_SYCOPHANCY)) && clock_env(ov, &env) == 0) {
        refresh(ov, &env);
        cJSON *h = ov->parts & OV_HYPERFOCUS ? hyperfocus(ov, &env) : NULL;
        if (h)
            cJSON_AddItemToArray(all, h);
        if (text && *text) {
            cJSON *args = cJSON_CreateObject();
            cJSON_AddStringToObject(args, "candidate_response", text);
            cJSON *s = sycophancy(ov, &env, args);
            if (s)
                cJSON_AddItemToArray(all, s);
            cJSON_Delete(args);
        }
    }
    /* One advisory per detector: the most confident. */
    for (int d = 0; d < DET_COUNT; d++) {
        cJSON *best = NULL, *a = all->child;
        while (a) {
            cJSON *next = a->next;
            const char *det = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "detector"));
            if (det && !strcmp(det, guard_detector_names[d])) {
                double c = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(a, "confidence"));
                if (!best || c > cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(best, "confidence"))) {
                    if (best)
                        cJSON_Delete(cJSON_DetachItemViaPointer(all, best));
                    best = a;
                } else {
                    cJSON_Delete(cJSON_DetachItemViaPointer(all, a));
                }
            }
            a = next;
        }
    }
    if (!cJSON_GetArraySize(all)) {
        cJSON_Delete(all);
        return NULL;
    }
    return all;
}

void overlay_requeue(struct overlay *ov, cJSON *advisories)
{
    while (cJSON_GetArraySize(advisories) > 0)
        cJSON_AddItemToArray(ov->queued, cJSON_DetachItemFromArray(advisories, 0));
    cJSON_Delete(advisories);
}

char *overlay_text(const cJSON *advisories)
{
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    if (!buf)
        return NULL;
    buf[0] = '\0';
    const cJSON *a;
    cJSON_ArrayForEach(a, advisories) {
        if (cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(a, "confidence")) < 0.5)
            continue;                     /* low confidence: _meta only */
        char tokens[400] = "";
        const cJSON *o;
        cJSON_ArrayForEach(o, cJSON_GetObjectItemCaseSensitive(a, "override_options")) {
            size_t t = strlen(tokens);
            snprintf(tokens + t, sizeof tokens - t, "%s%s", t ? ", " : "",
                     cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "token")));
        }
        const char *what = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "level"));
        if (!what)
            what = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "pattern"));
        int w = snprintf(buf + n, cap - n, "%skeel advisory (%s%s%s): %s\nIf you want, say one of: %s.",
                         n ? "\n\n" : "", cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "detector")),
                         what ? ", " : "", what ? what : "",
                         cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "reason")), tokens);
        if (w > 0 && (size_t)w < cap - n)
            n += (size_t)w;
    }
    if (!n) {
        free(buf);
        return NULL;
    }
    return buf;
}
