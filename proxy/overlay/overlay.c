/* overlay.c: detectors on live traffic (see overlay.h); the overrides they
 * honour are applied in override.c.
 *
 * Loop (the agent): each tools/call to the server is known by its identity
 * (tool + canonical arguments, hashed) and, when its result comes back, by
 * the hash of that result. The last loop.window_calls calls of the last
 * loop.window_minutes are kept as hashes and times, nothing of their text.
 * detectors/loop.c decides; a loop advisory rides on the result of the call
 * that completes the loop.
 *
 * Rumination (the person): the person's messages inside
 * sampling/createMessage requests, checked with check_rumination itself
 * against the earlier ones. Tool calls are the agent's work, never compared
 * by their words.
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
 * file has changed (every write bumps a generation that each keel reads from
 * shared memory) and at least every OV_VIEW_MS, so an override one keel
 * answered holds for the next call through any other, and a result costs a
 * clock read and a few comparisons, no system call. */
#include "overlay.h"

#include "detect.h"
#include "log.h"
#include "rules.h"
#include "state.h"
#include "submit.h"
#include "text.h"
#include "timefmt.h"

#include <fnmatch.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unictype.h>
#include <unistr.h>

#define OV_VIEW_MS        2000
#define OV_HARD_REPEAT_MS (15 * 60000LL)

struct overlay *overlay_current;

void overlay_init(struct overlay *ov, const struct profile *p, const char *state_dir, unsigned parts,
                  char **model_tools, int nmodel_tools, char **loop_exempt, int nloop_exempt)
{
    memset(ov, 0, sizeof *ov);
    ov->profile = p;
    ov->state_dir = state_dir;
    struct chrono_now now;
    kerr ke = {0};
    ov->conversation_at = chrono_now(&now, &ke) == 0 ? now.ms : 0; /* keel wrap: the client connection */
    ov->parts = parts;
    if (!p->ov_rumination)
        ov->parts &= ~OV_RUMINATION;
    if (!p->ov_hyperfocus)
        ov->parts &= ~OV_HYPERFOCUS;
    if (!p->ov_sycophancy)
        ov->parts &= ~OV_SYCOPHANCY;
    if (!p->ov_rules)
        ov->parts &= ~OV_RULES;
    if (!p->ov_loop)
        ov->parts &= ~OV_LOOP;
    ov->model_tools = model_tools;
    ov->nmodel_tools = nmodel_tools;
    ov->loop_exempt = loop_exempt;
    ov->nloop_exempt = nloop_exempt;
    loop_default_params(&ov->loop);
    ov->loop.repeat_threshold = p->loop_repeat;
    ov->loop.error_threshold = p->loop_errors;
    ov->loop.reask_threshold = p->loop_reask;
    ov->loop.alternation_calls = p->loop_alternation;
    ov->loop.window_ms = (int64_t)p->loop_window * 60000;
    ov->loop.window_calls = p->loop_calls;
    ov->loop.poll_ms = (int64_t)p->loop_poll * 1000;
    ov->queued = cJSON_CreateArray();
    overlay_current = ov;
}

static void forget_asks(struct overlay *ov, size_t upto)
{
    if (!upto)
        return;
    for (size_t i = 0; i < upto; i++)
        free(ov->asks[i].text);
    memmove(ov->asks, ov->asks + upto, (ov->nasks - upto) * sizeof *ov->asks);
    ov->nasks -= upto;
}

void overlay_free(struct overlay *ov)
{
    forget_asks(ov, ov->nasks);
    free(ov->asks);
    loop_window_free(&ov->calls);
    state_generation_release(ov->gen);
    cJSON_Delete(ov->queued);
    for (int d = 0; d < DET_COUNT; d++)
        cJSON_Delete(ov->last[d]);
    cJSON_Delete(ov->pins_unseen);
    if (overlay_current == ov)
        overlay_current = NULL;
}

static int clock_env(struct overlay *ov, struct chrono_env *env)
{
    kerr e = {0};
    env->profile = ov->profile;
    env->state_dir = ov->state_dir;
    env->conversation_at = ov->conversation_at;
    env->conversation = ov->conversation;
    return chrono_now(&env->now, &e);
}

/* The shared view, re-read when stale. Memory from before a fresh-context goes. */
static void refresh(struct overlay *ov, const struct chrono_env *env)
{
    /* Another keel may have written an override a moment ago: a changed file
     * is read again at once (its write generation, a load from shared memory).
     * An unchanged one is still read every OV_VIEW_MS, as what it means
     * (sessions, pauses) moves with the clock. */
    if (!ov->gen_tried) {
        ov->gen = state_generation(ov->state_dir);
        ov->gen_tried = 1;
    }
    uint64_t gen = state_generation_now(ov->gen);
    if (ov->view_ok && ov->gen && gen == ov->view_gen && env->now.ms - ov->view_at < OV_VIEW_MS &&
        env->now.ms >= ov->view_at)
        return;
    ov->view_gen = gen;
    kerr e = {0};
    ov->view_ok = guard_read(env, ov->profile->activity_gap, &ov->view, &e) == 0;
    ov->view_at = env->now.ms;
    if (!ov->view_ok || ov->view.read_only) {
        if (!ov->view_warned) /* once while it lasts, not at every look */
            log_event(LOG_WARN, ov->view_ok ? "overlay_state_read_only" : "overlay_state_unreadable", "code=%s",
                      e.code ? e.code : "");
        ov->view_warned = 1;
        if (!ov->view_ok)
            return;
    } else
        ov->view_warned = 0;
    /* A fresh-context, this keel's (apply_override sets view_at to 0, so the
     * next look reads it) or another's: what came before it goes, the
     * person's earlier messages and the calls in loop's window. */
    /* its time is kept in whole seconds: what came in that second goes too */
    int64_t upto = ov->view.fresh_context_at >= 0 ? ov->view.fresh_context_at + 1000 : -1;
    size_t k = 0;
    while (k < ov->nasks && ov->asks[k].at < upto)
        k++;
    forget_asks(ov, k);
    for (k = 0; k < ov->calls.n && ov->calls.v[k].at < upto;)
        k++;
    loop_forget(&ov->calls, k);
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

/* A detector's override-once, if one waits, swallows this advisory; one too
 * unsure to be put to the person (OV_SPEAK_MIN) leaves it for the next. */
static int swallowed(struct overlay *ov, const struct chrono_env *env, int det, double confidence)
{
    int taken = 0;
    kerr e = {0};
    if (confidence >= OV_SPEAK_MIN && ov->view_ok && ov->view.once[det] > 0 &&
        guard_take_once(env, det, &taken, &e) == 0 && taken) {
        ov->view_at = 0; /* re-read: the count changed */
        log_event(LOG_INFO, "advisory_overridden", "detector=%s", guard_detector_names[det]);
    }
    return taken;
}

cJSON *overlay_remember(struct overlay *ov, int det, const cJSON *a)
{
    cJSON_Delete(ov->last[det]);
    return ov->last[det] = cJSON_Duplicate(a, 1);
}

int overlay_rules_speak(struct overlay *ov, const cJSON *a)
{
    struct chrono_env env;
    if (clock_env(ov, &env) == 0) {
        refresh(ov, &env);
        if (silenced(ov, DET_RULES) || swallowed(ov, &env, DET_RULES, OV_SPEAK_MIN)) {
            log_event(LOG_INFO, "advisory_quiet", "detector=rules");
            return 0;
        }
    }
    overlay_remember(ov, DET_RULES, a);
    return 1;
}

/* Appends a text block's text (a string; anything else is not text) to
 * buf, a space before it when buf holds some; buf holds cap bytes with its
 * NUL, and what does not fit is left out. */
static void add_text(const cJSON *v, char *buf, size_t cap, size_t *n)
{
    const char *t = cJSON_GetStringValue(v);
    size_t l = t ? strlen(t) : 0;
    if (*n + l + 2 > cap)
        l = cap > *n + 2 ? cap - *n - 2 : 0;
    if (!l)
        return;
    if (*n)
        buf[(*n)++] = ' ';
    memcpy(buf + *n, t, l);
    *n += l;
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

/* --- loop ---------------------------------------------------------------- */

static int exempt(const struct overlay *ov, const char *tool)
{
    for (int i = 0; i < ov->nloop_exempt; i++)
        if (fnmatch(ov->loop_exempt[i], tool, 0) == 0)
            return 1;
    for (int i = 0; i < ov->profile->nloop_exempt; i++)
        if (fnmatch(ov->profile->loop_exempt[i], tool, 0) == 0)
            return 1;
    return 0;
}

int overlay_on_call(struct overlay *ov, const char *tool, struct loop_call *c)
{
    if (!(ov->parts & OV_LOOP) || exempt(ov, tool))
        return 0;
    memset(c, 0, sizeof *c);
    struct chrono_env env;
    if (clock_env(ov, &env) < 0)
        return 0;
    c->at = env.now.ms;
    return 1;
}

/* The call c (result known) joins the window; an advisory when it completes a loop. */
static cJSON *loop_step(struct overlay *ov, const struct chrono_env *env, const char *tool, const struct loop_call *c)
{
    struct loop_finding f;
    char other[64];
    if (loop_observe(&ov->calls, &ov->loop, c, tool, &f, other) < 0)
        return NULL;
    if (!f.advise || silenced(ov, DET_LOOP))
        return NULL;
    char reason[280];
    loop_reason(&f, tool, other, env->now.ms, reason, sizeof reason);
    cJSON *a = advisory(DET_LOOP, "pattern", loop_kind_names[f.kind], f.confidence, reason, guard_tokens[DET_LOOP], 4,
                        det_heuristic("call_identity", "0.1.0", loop_description));
    cJSON *m = cJSON_AddObjectToObject(overlay_remember(ov, DET_LOOP, a), "matched");
    cJSON_AddStringToObject(m, "tool", tool);
    if (other[0])
        cJSON_AddStringToObject(m, "other_tool", other);
    cJSON_AddNumberToObject(m, "calls", f.count);
    char at[40];
    tf_format_rfc3339(f.first_at, chrono_offset_or(f.first_at, env->now.offset_s), at, sizeof at);
    cJSON_AddStringToObject(m, "first_call_at", at);
    cJSON_AddStringToObject(m, "compared",
                            f.kind == LOOP_SAME_ERROR    ? "the error's whole text, its numbers and ids as one"
                                : f.kind == LOOP_REASKED ? "the result; the arguments but their free text"
                                                         : "the arguments and the result");
    if (swallowed(ov, env, DET_LOOP, f.confidence)) {
        cJSON_Delete(a);
        return NULL;
    }
    log_event(LOG_INFO, "loop_seen", "pattern=%s calls=%d", loop_kind_names[f.kind], f.count);
    return a;
}

/* --- rumination: the person's own messages -------------------------------- */

/* Matches in the order they were asked (history is oldest first). */
static int by_index(const void *a, const void *b)
{
    const struct rum_match *x = a, *y = b;
    return (x->index > y->index) - (x->index < y->index);
}

/* At most max_chars characters and max_words words of UTF-8 s[0..n) into q
 * (cap bytes, NUL-terminated), as a quote the person reads in their terminal:
 * white space, control characters and line breaks as one space, and format
 * characters (bidi overrides, zero-width spaces) left out, so a pasted log's
 * colours or a right-to-left override cannot garble the message. 1 when s
 * goes on past what was quoted. */
int overlay_quote(const char *s, size_t n, size_t max_chars, size_t max_words, char *q, size_t cap)
{
    const uint8_t *c = (const uint8_t *)s, *end = c + n;
    size_t l = 0, chars = 0, words = 0;
    int space = 0, cut = 0;
    while (c < end) {
        ucs4_t u;
        int len = u8_mbtouc(&u, c, (size_t)(end - c));
        if (uc_is_general_category(u, UC_FORMAT)) {
            c += len;
            continue;
        }
        if (uc_is_space(u) || uc_is_general_category(u, UC_CONTROL) || u == 0xFFFD) {
            space = l > 0;
            c += len;
            continue;
        }
        if (space && (++words >= max_words || chars + 1 >= max_chars || l + 2 >= cap)) {
            cut = 1;
            break;
        }
        if (chars >= max_chars || l + (size_t)len + 1 + space >= cap) {
            cut = 1;
            break;
        }
        if (space)
            q[l++] = ' ', chars++;
        space = 0;
        memcpy(q + l, c, (size_t)len);
        l += (size_t)len;
        chars++;
        c += len;
    }
    q[l] = '\0';
    return cut;
}

/* What the person sees: when they asked it before, local times, and the
 * first words of the first ask ("you asked about this at 10:24 ("is it safe
 * to merge..."), 10:31 and 10:38"). Their own words, for them and the model
 * only: an advisory's reason is never logged. */
static void asked_before(const struct rum_item *hist, struct rum_match *m, size_t k, int offset_s, char *out,
                         size_t cap)
{
    qsort(m, k, sizeof *m, by_index);
    size_t n = (size_t)snprintf(out, cap, "You asked about this %zu time%s before in this stretch of work: at", k,
                                k == 1 ? "" : "s");
    for (size_t i = 0; i < k && n < cap; i++) {
        const struct rum_item *h = &hist[m[i].index];
        char hm[8] = "?";
        time_t t = (time_t)(h->at / 1000 + chrono_offset_or(h->at, offset_s));
        struct tm tm;
        if (gmtime_r(&t, &tm))
            strftime(hm, sizeof hm, "%H:%M", &tm);
        n += (size_t)snprintf(out + n, cap - n, "%s %s", i == 0 ? "" : i + 1 == k ? " and" : ",", hm);
        if (i == 0) { /* the first ask, its first words */
            char q[80];
            int cut = overlay_quote(h->t ? h->t : "", h->t ? h->n : 0, 80, 8, q, sizeof q);
            if (n < cap)
                n += (size_t)snprintf(out + n, cap - n, " (\"%s%s\")", q, cut ? "..." : "");
        }
    }
    if (n < cap)
        snprintf(out + n, cap - n,
                 ". Asking again may not bring a new answer; a different angle, or a decision, might.");
}

uint64_t ov_ask_hash(const char *text, size_t n)
{
    return text_hash(text, n, 0x61736b73); /* "asks" */
}

static int in_episode(const struct overlay *ov, uint64_t h)
{
    for (size_t i = 0; i < ov->nepisode; i++)
        if (ov->episode[i] == h)
            return 1;
    return 0;
}

/* check_rumination on the person's message text against the earlier ones. */
static cJSON *rumination(struct overlay *ov, const struct chrono_env *env, const char *text)
{
    if (silenced(ov, DET_RUMINATION))
        return NULL;
    const struct profile *p = ov->profile;
    double sim = p->rum_similarity;
    long thr = p->rum_threshold, pthr = p->rum_plea_threshold;
    if (ov->view_ok && ov->view.lower_sensitivity) {
        sim = sim > 0.75 ? sim : 0.75;
        thr++;
        pthr++;
    }
    size_t nh = ov->nasks ? ov->nasks - 1 : 0; /* the last one is text itself */
    struct rum_item hist[OV_ASKS_MAX];
    struct rum_match m[OV_ASKS_MAX];
    for (size_t i = 0; i < nh; i++)
        hist[i] = (struct rum_item){ov->asks[i].text, strlen(ov->asks[i].text), ov->asks[i].at};
    /* thresholds up to 51 (50 and lower-sensitivity's one more): more than
     * the OV_ASKS_MAX - 1 earlier asks kept, each never fires */
    struct rum_query q = {text, strlen(text), hist, nh, p->rum_window, thr, pthr, sim, 1};
    struct rum_result r = {.match = m};
    if (rum_run(&q, env->now.ms, &r) < 0 || !r.detected)
        return NULL;
    cJSON *matched = cJSON_CreateArray(); /* for self_inspect: what matched, and when */
    char at[40];
    for (size_t k = 0; k < r.count; k++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToObject(o, "text", cJSON_CreateString(hist[m[k].index].t));
        tf_format_rfc3339(hist[m[k].index].at, chrono_offset_or(hist[m[k].index].at, env->now.offset_s), at, sizeof at);
        cJSON_AddStringToObject(o, "at", at);
        cJSON_AddNumberToObject(o, "similarity", det_round(m[k].sim));
        cJSON_AddItemToArray(matched, o);
    }
    /* One episode: when it matches an ask of the last rumination found in
     * this conversation, the asks of that one count too (the person asked
     * them all; the words of this ask may reach only the latest). */
    uint64_t hh[OV_ASKS_MAX];
    size_t k = r.count, linked = 0;
    for (size_t i = 0; i < nh; i++)
        hh[i] = ov_ask_hash(hist[i].t, hist[i].n);
    for (size_t q = 0; q < r.count && !linked; q++)
        linked = in_episode(ov, hh[m[q].index]);
    for (size_t i = 0; linked && i < nh; i++) {
        int had = 0;
        for (size_t q = 0; q < r.count && !had; q++)
            had = m[q].index == i;
        if (!had && in_episode(ov, hh[i]))
            m[k++] = (struct rum_match){.index = i};
    }
    ov->nepisode = 0;
    for (size_t q = 0; q < k && ov->nepisode + 1 < OV_EPISODE_MAX; q++)
        ov->episode[ov->nepisode++] = hh[m[q].index];
    ov->episode[ov->nepisode++] = ov_ask_hash(text, strlen(text));
    ov->episode_changed = 1;
    char reason[600];
    asked_before(hist, m, k, env->now.offset_s, reason, sizeof reason);
    cJSON *a = advisory(DET_RUMINATION, NULL, NULL, det_round(r.confidence), reason, guard_tokens[DET_RUMINATION], 4,
                        rum_heuristic());
    cJSON_AddItemToObject(overlay_remember(ov, DET_RUMINATION, a), "matched", matched);
    if (swallowed(ov, env, DET_RUMINATION, r.confidence)) {
        cJSON_Delete(a);
        a = NULL;
    }
    return a;
}

/* The bytes of s[0..n)'s first max characters (UTF-8 lead bytes counted). */
static size_t first_chars(const char *s, size_t n, size_t max)
{
    size_t i = 0;
    for (size_t c = 0; i < n; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80 && c++ == max)
            break;
    return i;
}

/* The words of the reply that fired, quoted after reason (at most three, each
 * cut to 48 characters): what it matched, for the person to judge. */
static void quote_spans(const struct syc_query *q, const struct syc_result *r, char *reason, size_t cap)
{
    size_t n = 0;
    for (size_t k = 0; k < r->nspans && n < 3; k++) {
        const struct syc_span *sp = &r->span[k];
        if (sp->msg >= 0 || sp->b <= sp->a)
            continue;
        char t[200];
        int cut = overlay_quote(q->resp + sp->a, sp->b - sp->a, 48, SIZE_MAX, t, sizeof t);
        size_t len = strlen(reason);
        snprintf(reason + len, cap - len, "%s\"%s%s\"", n ? ", " : " It said ", t, cut ? "..." : "");
        n++;
    }
    if (n) {
        size_t len = strlen(reason);
        snprintf(reason + len, cap - len, ".");
    }
}

/* Sycophancy on q; an advisory when it fires and may speak. */
static cJSON *sycophancy(struct overlay *ov, const struct chrono_env *env, const struct syc_query *q)
{
    struct syc_result r;
    if (syc_run(q, &r) < 0 || r.pattern < 0 || silenced(ov, DET_SYCOPHANCY) || (ov->view_ok && ov->view.validation_ok))
        return NULL;
    char reason[480];
    syc_reason(q, &r, reason, sizeof reason);
    quote_spans(q, &r, reason, sizeof reason);
    cJSON *a = advisory(DET_SYCOPHANCY, "pattern", syc_pattern_name(r.pattern), det_round(r.confidence), reason,
                        guard_tokens[DET_SYCOPHANCY], 5, syc_heuristic());
    cJSON_AddItemToObject(overlay_remember(ov, DET_SYCOPHANCY, a), "matched", syc_spans(q, &r));
    if (swallowed(ov, env, DET_SYCOPHANCY, r.confidence)) {
        cJSON_Delete(a);
        a = NULL;
    }
    return a;
}

/* Sycophancy on a reply of the model's, on its first OV_SCAN_MAX characters
 * (where a reply agrees or praises, it opens with it), if they are text
 * (valid UTF-8 without NUL; what follows them is not looked at). */
static cJSON *reply_sycophancy(struct overlay *ov, const struct chrono_env *env, const char *text, size_t n)
{
    n = first_chars(text, n, OV_SCAN_MAX);
    if (!n || !text_valid_utf8(text, n) || memchr(text, '\0', n))
        return NULL;
    struct syc_query q = {.resp = text, .resp_n = n};
    return sycophancy(ov, env, &q);
}

/* Sycophancy on the person's first n recent messages (m: room for them). */
static struct syc_query messages_query(const struct overlay *ov, size_t n, const char **m)
{
    for (size_t i = 0; i < n; i++)
        m[i] = ov->asks[i].text;
    return (struct syc_query){.msgs = m, .nmsgs = n, .has_msgs = 1};
}

/* The text of a content value: a block, or an array of blocks. */
static void content_text(const cJSON *content, char *buf, size_t cap, size_t *n)
{
    const cJSON *b = cJSON_IsObject(content) ? content : content ? content->child : NULL;
    for (; b && *n + 2 < cap; b = cJSON_IsObject(content) ? NULL : b->next) {
        const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(b, "type"));
        if (type && !strcmp(type, "text"))
            add_text(cJSON_GetObjectItemCaseSensitive(b, "text"), buf, cap, n);
    }
}

/* Sycophancy on the person's first n recent messages: whether it fires,
 * and its count of reassurance requests on one decision. */
static int reassurance_requests(const struct overlay *ov, size_t n, int *detected)
{
    const char *m[OV_ASKS_MAX];
    struct syc_query q = messages_query(ov, n, m);
    struct syc_result r;
    int ok = syc_run(&q, &r) == 0;
    if (detected)
        *detected = ok && r.pattern >= 0;
    return ok ? (int)r.reassure : 0;
}

/* The same reassurance sought again, and the person's newest message is
 * itself one more plea for it (syc_plea: "Ok. Can you add it to the
 * changelog?" counts towards the group, its "ok" a verdict word in a message
 * with a question mark, but acknowledges an answer and is no moment to
 * advise): only then is the advisory about this message (the messages after
 * a worry, "now translate it", are the work going on). One check in the
 * common case; the others only when it fires. */
static int reassurance_grew(const struct overlay *ov)
{
    int fires = 0;
    int now = ov->nasks ? reassurance_requests(ov, ov->nasks, &fires) : 0;
    if (!fires || now <= reassurance_requests(ov, ov->nasks - 1, NULL))
        return 0;
    const char *t = ov->asks[ov->nasks - 1].text;
    return syc_plea(t, strlen(t)) > 0;
}

/* A message of the person's (text owned, valid UTF-8) joins the recent ones
 * within the rumination window; then it is checked against them: rumination,
 * and repeated requests for reassurance. Advisories wait in ov->queued. */
static void person_said(struct overlay *ov, const struct chrono_env *env, char *buf)
{
    refresh(ov, env);
    int64_t from = env->now.ms - (int64_t)ov->profile->rum_window * 60000;
    size_t old = 0;
    while (old < ov->nasks && (ov->asks[old].at < from || ov->asks[old].at > env->now.ms))
        old++;
    forget_asks(ov, old);
    if (ov->nasks == OV_ASKS_MAX)
        forget_asks(ov, 1);
    if (!ov->asks && !(ov->asks = malloc(OV_ASKS_MAX * sizeof *ov->asks))) {
        free(buf);
        return;
    }
    ov->asks[ov->nasks++] = (struct ov_ask){buf, env->now.ms};
    cJSON *a = ov->parts & OV_RUMINATION ? rumination(ov, env, buf) : NULL;
    if (a)
        cJSON_AddItemToArray(ov->queued, a);
    if (ov->parts & OV_SYCOPHANCY && reassurance_grew(ov)) {
        const char *m[OV_ASKS_MAX];
        struct syc_query q = messages_query(ov, ov->nasks, m);
        cJSON *syc = sycophancy(ov, env, &q);
        if (syc)
            cJSON_AddItemToArray(ov->queued, syc);
    }
}

/* The person's text, cut to what the detectors read; NULL when empty or out
 * of memory. A byte that is not UTF-8 (a paste from another encoding, a
 * truncated character) reads as U+FFFD and a NUL as a space, as a terminal
 * shows them: the rest of what they typed is still read. */
static char *person_text(const char *s, size_t n)
{
    n = utf8_cut(s, n, OV_TEXT_MAX);
    if (!n)
        return NULL;
    size_t len;
    int repaired;
    char *t = text_repair(s, n, &len, &repaired);
    if (t && repaired)
        log_event(LOG_INFO, "person_text_repaired", "bytes=%zu", n);
    return t;
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
    char *buf = malloc(OV_TEXT_MAX * 4 + 1), *text;
    size_t n = 0;
    struct chrono_env env;
    if (buf && last && clock_env(ov, &env) == 0) {
        buf[0] = '\0';
        content_text(cJSON_GetObjectItemCaseSensitive(last, "content"), buf, OV_TEXT_MAX * 4 + 1, &n);
        if ((text = person_text(buf, n)))
            person_said(ov, &env, text);
    }
    free(buf);
}

void overlay_add_ask(struct overlay *ov, const char *text, size_t n, int64_t at)
{
    char *t = person_text(text, n);
    if (!t)
        return;
    if (ov->nasks == OV_ASKS_MAX)
        forget_asks(ov, 1);
    if (!ov->asks && !(ov->asks = malloc(OV_ASKS_MAX * sizeof *ov->asks))) {
        free(t);
        return;
    }
    ov->asks[ov->nasks++] = (struct ov_ask){t, at};
}

void overlay_on_prompt(struct overlay *ov, const char *text, size_t n)
{
    struct chrono_env env;
    char *t;
    if ((ov->parts & (OV_RUMINATION | OV_SYCOPHANCY)) && clock_env(ov, &env) == 0 && (t = person_text(text, n)))
        person_said(ov, &env, t);
}

void overlay_on_reply(struct overlay *ov, const char *text, size_t n)
{
    struct chrono_env env;
    if (!(ov->parts & OV_SYCOPHANCY) || clock_env(ov, &env) < 0)
        return;
    refresh(ov, &env);
    cJSON *s = reply_sycophancy(ov, &env, text, n);
    if (s)
        cJSON_AddItemToArray(ov->queued, s);
}

void overlay_on_sampling_result(struct overlay *ov, const cJSON *result)
{
    if (!(ov->parts & OV_SYCOPHANCY))
        return;
    char *buf = calloc(1, OV_SCAN_MAX * 4 + 1 + RULE_PAD); /* a rule's subject: padded */
    size_t n = 0;
    struct chrono_env env;
    if (buf && clock_env(ov, &env) == 0) {
        buf[0] = '\0';
        content_text(cJSON_GetObjectItemCaseSensitive(result, "content"), buf, OV_SCAN_MAX * 4 + 1, &n);
        refresh(ov, &env);
        if ((ov->parts & OV_RULES) && n && text_valid_utf8(buf, n)) { /* rules for sampling answers */
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
            cJSON *skipped = cJSON_GetObjectItemCaseSensitive(j, "skipped");
            cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(j, "notes"))
                if (cJSON_GetArraySize(skipped))
                    snprintf(reason + strlen(reason), sizeof reason - strlen(reason), "%s%s.", reason[0] ? " " : "",
                             cJSON_GetStringValue(v));
            if (cJSON_GetArraySize(names) || cJSON_GetArraySize(skipped)) {
                static const char *const tokens[] = {"override-once", "explain-the-match"};
                cJSON *a = advisory(DET_RULES, NULL, NULL, 0.9, reason, tokens, 2,
                                    det_heuristic("output_rules", "0.1.0", "keel's YAML output rules"));
                cJSON_AddItemToObject(a, "rules", names);
                if (cJSON_GetArraySize(skipped))
                    cJSON_AddItemToObject(a, "skipped", cJSON_Duplicate(skipped, 1));
                if (overlay_rules_speak(ov, a))
                    cJSON_AddItemToArray(ov->queued, a);
                else
                    cJSON_Delete(a);
            } else {
                cJSON_Delete(names);
            }
            cJSON_Delete(j);
        }
        cJSON *s = reply_sycophancy(ov, &env, buf, n);
        if (s)
            cJSON_AddItemToArray(ov->queued, s);
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
    long g = p->hyp_gentle, nu = p->hyp_nudge, h = p->hyp_hard; /* the profile's ladder in effect */
    struct hyp_eval ev;
    int64_t started = ov->view.focus_started;
    hyp_evaluate(env->now.ms, env->now.offset_s, guard_day_offset(env, started >= 0 ? started : env->now.ms), &started,
                 -1, g, nu, h, guard_end_of_day(env, started >= 0 ? started : env->now.ms, ov->view.eod_extension_min),
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
        return NULL; /* snoozed: this rung waits */
    int emit = 0;
    kerr e = {0};
    if (guard_claim_hyperfocus(env, ov->view.focus_key, ev.level, &emit, &e) < 0 || emit == GUARD_SNOOZED)
        return NULL;
    ov->hyp_level = ev.level;
    ov->hyp_at = env->now.ms;
    ov->view_at = 0;
    if (emit != GUARD_EMIT)
        return NULL;
    char reason[480], base[200];
    hyp_reason(&ev, g, nu, h, !ov->view.session_open, base, sizeof base);
    /* The person's own intent, when they stated one, as a sentence (the view
     * holds one only while their session is open; the activity session has
     * none). */
    char intent[200] = ""; /* as plain text: an intent the model wrote can hold escape codes */
    int cut = ov->view.intent[0]
        ? overlay_quote(ov->view.intent, strlen(ov->view.intent), sizeof intent / 2, SIZE_MAX, intent, sizeof intent)
        : 0;
    size_t il = strlen(intent);
    int stop = il && !strchr(".!?", intent[il - 1]);
    if (il)
        snprintf(reason, sizeof reason, "%s You set out to: %s%s", base, intent, cut ? "..." : stop ? "." : "");
    else
        snprintf(reason, sizeof reason, "%s", base);
    const char *tok[6];
    size_t nt = hyp_tokens(&ev, tok), k = 0;
    /* commit-and-close ends a work session mark_session_start opened; the
     * session of activity alone (the hooks') has none to end */
    for (size_t i = 0; i < nt; i++)
        if (ov->view.session_open || strcmp(tok[i], "commit-and-close"))
            tok[k++] = tok[i];
    nt = k;
    cJSON *a = advisory(DET_HYPERFOCUS, "level", hyp_level_name(ev.level), 0.75, reason, tok, nt,
                        det_heuristic("elapsed_threshold_with_eod", "0.1.0", hyp_description));
    cJSON_AddNumberToObject(overlay_remember(ov, DET_HYPERFOCUS, a), "elapsed_seconds", (double)ev.elapsed_s);
    return a;
}

/* 1 if advisories holds the pins detector's. */
static int holds_pins(const cJSON *advisories)
{
    const cJSON *a;
    cJSON_ArrayForEach(a, advisories) {
        const char *det = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "detector"));
        if (det && !strcmp(det, guard_detector_names[DET_PINS]))
            return 1;
    }
    return 0;
}

cJSON *overlay_for_result(struct overlay *ov, const char *tool, const struct loop_call *call, const char *text)
{
    cJSON *all = cJSON_CreateArray();
    while (cJSON_GetArraySize(ov->queued) > 0)
        cJSON_AddItemToArray(all, cJSON_DetachItemFromArray(ov->queued, 0));
    if (ov->pins_unseen && holds_pins(all)) { /* it goes out: what it names may be approved */
        cJSON_Delete(ov->last[DET_PINS]);
        ov->last[DET_PINS] = ov->pins_unseen;
        ov->pins_unseen = NULL;
    }
    struct chrono_env env;
    if ((call || (ov->parts & (OV_HYPERFOCUS | OV_SYCOPHANCY))) && clock_env(ov, &env) == 0) {
        refresh(ov, &env);
        cJSON *l = call ? loop_step(ov, &env, tool, call) : NULL;
        if (l)
            cJSON_AddItemToArray(all, l);
        cJSON *h = ov->parts & OV_HYPERFOCUS ? hyperfocus(ov, &env) : NULL;
        if (h)
            cJSON_AddItemToArray(all, h);
        if (text && *text) {
            cJSON *s = reply_sycophancy(ov, &env, text, strlen(text));
            if (s)
                cJSON_AddItemToArray(all, s);
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
    if (!ov->pins_unseen && ov->last[DET_PINS] && holds_pins(advisories)) { /* it did not go out after all */
        ov->pins_unseen = ov->last[DET_PINS];
        ov->last[DET_PINS] = NULL;
    }
    while (cJSON_GetArraySize(advisories) > 0)
        cJSON_AddItemToArray(ov->queued, cJSON_DetachItemFromArray(advisories, 0));
    cJSON_Delete(advisories);
}

int overlay_says(const cJSON *advisory)
{
    return cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(advisory, "confidence")) >= OV_SPEAK_MIN;
}

/* The text block the person and the model read: one message for all that
 * speaks on this result, whatever detectors it comes from, "keel advisory
 * (loop, repeat; rules): " each reason, and one list of the words the
 * person may say, each word once. */
char *overlay_text(const cJSON *advisories)
{
    char head[200] = "", tokens[400] = "";
    size_t hn = 0, tn = 0, rn = 0, cap = 4096;
    char *reasons = malloc(cap);
    if (!reasons)
        return NULL;
    reasons[0] = '\0';
    const cJSON *a;
    cJSON_ArrayForEach(a, advisories) {
        if (!overlay_says(a))
            continue; /* low confidence: _meta only */
        const char *what = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "level"));
        if (!what)
            what = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "pattern"));
        int w = snprintf(head + hn, sizeof head - hn, "%s%s%s%s", hn ? "; " : "",
                         cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "detector")), what ? ", " : "",
                         what ? what : "");
        if (w > 0 && (size_t)w < sizeof head - hn)
            hn += (size_t)w;
        w = snprintf(reasons + rn, cap - rn, "%s%s", rn ? "\n\n" : "",
                     cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "reason")));
        if (w > 0 && (size_t)w < cap - rn)
            rn += (size_t)w;
        const cJSON *o;
        cJSON_ArrayForEach(o, cJSON_GetObjectItemCaseSensitive(a, "override_options")) {
            const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "token"));
            size_t l = t ? strlen(t) : 0;
            int have = 0; /* said once, though several detectors take it */
            for (const char *p = tokens; l && (p = strstr(p, t)) && !have; p += l)
                have = (p == tokens || p[-1] == ' ') && (p[l] == ',' || p[l] == '\0');
            if (l && !have && tn + l + 3 < sizeof tokens)
                tn += (size_t)snprintf(tokens + tn, sizeof tokens - tn, "%s%s", tn ? ", " : "", t);
        }
    }
    char *buf = NULL;
    if (rn && (buf = malloc(hn + rn + tn + 64)))
        sprintf(buf, "keel advisory (%s): %s\nIf you want, say one of: %s.", head, reasons, tokens);
    free(reasons);
    return buf;
}

void overlay_pins_held(struct overlay *ov, const char *server, const cJSON *names)
{
    if (!ov->parts)
        return;
    /* what an earlier listing held and this one does not: an advisory about
     * it not yet gone out is stale (a tool back to its approved definition) */
    for (cJSON *a = ov->queued ? ov->queued->child : NULL, *next; a; a = next) {
        next = a->next;
        const char *det = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "detector"));
        if (det && !strcmp(det, guard_detector_names[DET_PINS]))
            cJSON_Delete(cJSON_DetachItemViaPointer(ov->queued, a));
    }
    cJSON_Delete(ov->pins_unseen);
    ov->pins_unseen = NULL;
    if (!cJSON_GetArraySize(names))
        return;
    char list[400] = "", reason[900];
    const cJSON *n;
    size_t k = 0;
    cJSON_ArrayForEach(n, names)
        if (k < sizeof list)
            k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", k ? ", " : "", n->valuestring);
    int many = cJSON_GetArraySize(names) > 1;
    snprintf(reason, sizeof reason,
             "keel held back %d tool%s of this server (%s): %s since you approved %s, or %s as an approved one "
             "went missing. %s not listed, and calls to %s are answered by keel. Read what changed with: keel pins "
             "diff '%s'. To approve, run keel pins approve, or say approve-tool.",
             cJSON_GetArraySize(names), many ? "s" : "", list,
             many ? "their definitions changed" : "its definition changed", many ? "them" : "it",
             many ? "appeared" : "it appeared", many ? "They are" : "It is", many ? "them" : "it", server);
    static const char *const tokens[] = {"approve-tool", "explain-the-match"};
    cJSON *a = advisory(DET_PINS, NULL, NULL, 0.9, reason, tokens, 2,
                        det_heuristic("pinned_definitions", "0.1.0",
                                      "Each tool's definition (title, description, schemas, annotations) compared as "
                                      "canonical JSON with the one the person approved; a new name while an approved "
                                      "one went missing is a rename"));
    /* approve-tool approves what this advisory names only once it has gone
     * out: the person (or the model) cannot approve what nobody was shown */
    ov->pins_unseen = cJSON_Duplicate(a, 1);
    cJSON *m = cJSON_AddObjectToObject(ov->pins_unseen, "matched");
    cJSON_AddStringToObject(m, "server", server);
    cJSON_AddItemToObject(m, "tools", cJSON_Duplicate(names, 1));
    cJSON_AddItemToArray(ov->queued, a);
}
