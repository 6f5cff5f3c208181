/* hook.c: keel hook EVENT (see hook.h).
 *
 * The hosts' contracts, as keel uses them:
 *   Claude Code and Codex CLI: UserPromptSubmit {prompt, transcript_path,
 *   session_id, source?}, Stop and SubagentStop {last_assistant_message,
 *   stop_hook_active}, SessionStart; output {hookSpecificOutput: {hookEventName,
 *   additionalContext}, systemMessage} or, to block a stop, {decision:
 *   "block", reason}.
 *   Gemini CLI: BeforeAgent {prompt}, AfterAgent {prompt_response,
 *   stop_hook_active}, SessionStart; the same output fields, "deny" to block.
 * A turn the host starts itself (source "system", a task notification) is not
 * the person's prompt and gets nothing.
 *
 * Per host session (its id hashed, never stored as given) the state file
 * keeps the turn's count of blocked stops and a note for the next prompt: the
 * detectors and rules that spoke about the last reply, never its text. */
#include "hook.h"
#include "text.h"

#include "chrono.h"
#include "guard.h"
#include "jscan.h"
#include "log.h"
#include "loop.h"
#include "overlay.h"
#include "readfile.h"
#include "rulefile.h"
#include "rules.h"
#include "state.h"
#include "submit.h"
#include "timefmt.h"
#include "transcript.h"

#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

enum { EV_OTHER, EV_PROMPT, EV_REPLY, EV_SESSION_START };

static int event_kind(const char *ev)
{
    if (!ev)
        return EV_OTHER;
    if (!strcmp(ev, "UserPromptSubmit") || !strcmp(ev, "BeforeAgent"))
        return EV_PROMPT;
    if (!strcmp(ev, "Stop") || !strcmp(ev, "SubagentStop") || !strcmp(ev, "AfterAgent"))
        return EV_REPLY;
    if (!strcmp(ev, "SessionStart"))
        return EV_SESSION_START;
    return EV_OTHER;
}

static const char *const claude_events[] = {"UserPromptSubmit", "Stop", "SubagentStop", "SessionStart", NULL};
static const char *const gemini_events[] = {"BeforeAgent", "AfterAgent", "SessionStart", NULL};
const struct hook_host hook_hosts[HOOK_NHOSTS] = {
    [HOOK_HOST_AUTO] = {"claude-code", "", claude_events, 10, "last_assistant_message", "block"},
    [HOOK_HOST_CLAUDE] = {"claude-code", "", claude_events, 10, "last_assistant_message", "block"},
    [HOOK_HOST_CODEX] = {"codex", " --host codex", claude_events, 10, "last_assistant_message", "block"},
    [HOOK_HOST_GEMINI] = {"gemini", " --host gemini", gemini_events, 10000, "prompt_response", "deny"},
};

const struct hook_host *hook_host_named(const char *name)
{
    for (int i = HOOK_HOST_CLAUDE; i < HOOK_NHOSTS; i++)
        if (!strcmp(hook_hosts[i].name, name))
            return &hook_hosts[i];
    return NULL;
}

/* An event keel does nothing on: one a host has (PreToolUse, PreCompact...)
 * is ignored quietly; any other name is a mistake in the hook's
 * configuration (UserPromptSubmitted), said on stderr with the names keel
 * knows. The name is the host's or the configuration's, never the person's
 * words, and only a short plain one is shown. */
static void log_unknown_event(const char *name, size_t n)
{
    static const char *const hosts_have[] = {"PreToolUse",  "PostToolUse",       "Notification",        "PreCompact",
                                             "SessionEnd",  "PermissionRequest", "BeforeTool",          "AfterTool",
                                             "BeforeModel", "AfterModel",        "BeforeToolSelection", "PreCompress",
                                             NULL};
    for (int i = 0; name && hosts_have[i]; i++)
        if (!strcmp(name, hosts_have[i])) {
            log_event(LOG_INFO, "hook_event_ignored", "bytes=%zu", n);
            return;
        }
    int plain = name && strlen(name) <= 40;
    for (const char *c = name; plain && *c; c++)
        plain = (*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_';
    fprintf(stderr,
            "keel: warn hook_event_unknown event=%s: keel hook knows UserPromptSubmit, Stop, SubagentStop, "
            "SessionStart (Claude Code, Codex) and BeforeAgent, AfterAgent, SessionStart (Gemini CLI); check the "
            "event name in the host's hook settings\n",
            !name       ? "(none)"
                : plain ? name
                        : "(not shown)");
}

/* --- text for the model and for the person ----------------------------------- */

struct out {
    char ctx[HOOK_TEXT_MAX]; /* for the model: facts */
    char msg[HOOK_TEXT_MAX]; /* for the person */
    char note[512]; /* for the next prompt: names only */
};

/* fmt appended to the text in buf[cap], cut to fit. */
static void append(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void append(char *buf, size_t cap, const char *fmt, ...)
{
    size_t l = strlen(buf);
    if (l + 1 >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + l, cap - l, fmt, ap);
    va_end(ap);
}

/* Appends to buf ("a, b") the words adv offers that buf does not hold yet;
 * never explain-the-match, as the message itself says what matched and a
 * hook keeps nothing to show more (NO_EXPLANATION). */
static void tokens_of(const cJSON *adv, char *buf, size_t cap)
{
    const cJSON *o;
    cJSON_ArrayForEach(o, cJSON_GetObjectItemCaseSensitive(adv, "override_options")) {
        const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "token"));
        char seek[48], have[420];
        snprintf(seek, sizeof seek, ", %s,", t ? t : "");
        snprintf(have, sizeof have, ", %s,", buf);
        if (t && !strstr(have, seek) && strcmp(t, "explain-the-match"))
            append(buf, cap, "%s%s", buf[0] ? ", " : "", t);
    }
}

/* The advisories to put to the person, as keel wrap's text block takes them
 * (overlay_says); a less sure one is logged by name only. A new array,
 * never NULL but out of memory; caller deletes. */
static cJSON *spoken(const cJSON *advs)
{
    cJSON *out = cJSON_CreateArray();
    const cJSON *a;
    cJSON_ArrayForEach(a, advs) {
        if (overlay_says(a)) {
            cJSON *d = out ? cJSON_Duplicate(a, 1) : NULL;
            if (d && !cJSON_AddItemToArray(out, d))
                cJSON_Delete(d);
        } else
            log_event(LOG_INFO, "hook_advisory_quiet", "detector=%s",
                      cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "detector")));
    }
    return out;
}

/* The advisories of one event as one message: for the model as facts, for
 * the person in words, with one list of the words they may answer with
 * (each word once, whichever detectors offer it). */
static void say(struct out *o, const cJSON *advs, char *dets, size_t dets_cap)
{
    const cJSON *a;
    char names[120] = "", tok[400] = "";
    dets[0] = '\0';
    cJSON_ArrayForEach(a, advs) {
        const char *det = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "detector"));
        append(names, sizeof names, "%s%s", names[0] ? ", " : "", det);
        append(dets, dets_cap, "%s%s", dets[0] ? "," : "", det);
        tokens_of(a, tok, sizeof tok);
    }
    if (!names[0])
        return;
    append(o->ctx, sizeof o->ctx, "%s%s keel, the person's guardrail, noted:", o->ctx[0] ? " " : "",
           TRANSCRIPT_KEEL_MARK);
    append(o->msg, sizeof o->msg, "%skeel (%s):", o->msg[0] ? "\n" : "", names);
    cJSON_ArrayForEach(a, advs) {
        const char *det = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "detector"));
        const char *reason = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "reason"));
        append(o->ctx, sizeof o->ctx, " [%s] %s", det, reason);
        append(o->msg, sizeof o->msg, " %s", reason);
    }
    append(o->ctx, sizeof o->ctx, " The person may answer with one of: %s.", tok);
    append(o->msg, sizeof o->msg, " To change this, start your next prompt with one of: %s.", tok);
}

/* 1 when the comma-separated list holds the name d. */
static int in_list(const char *list, const char *d)
{
    size_t l = strlen(d);
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        if (n == l && !strncmp(p, d, l))
            return 1;
        p += n + (p[n] == ',');
    }
    return 0;
}

/* The state file could not be used: said once a process (a hook reaches
 * for it several times), with what to do about it. */
static void state_unavailable(const kerr *e)
{
    static int said;
    if (said++)
        return;
    const char *code = e->code ? e->code : "";
    const char *hint = !strcmp(code, "STATE_UNWRITABLE")
        ? "set KEEL_STATE_DIR, XDG_STATE_HOME or HOME to an absolute path of a directory of your own (mode 700)"
        : !strcmp(code, "STATE_BUSY") ? "another keel process held the state file; the next hook tries again"
        : !strcmp(code, "STATE_UNREADABLE")
        ? "the state file was moved aside as state.json.corrupt-<time> in keel's state directory; a fresh one starts"
        : "see keel --help";
    log_event(LOG_WARN, "hook_state_unavailable", "code=%s what_to_do=\"%s\"", code, hint);
}

/* --- per-session state: blocked stops in this turn, a note for the next ------ */

/* ST_LAST: the detectors that spoke on the person's prompt, in place of
 * those before; ST_LAST_ADD: those that spoke on the reply, added to those of
 * the same turn (an override word then answers everything said since the
 * person's last prompt). */
enum {
    ST_NEW_TURN,
    ST_BLOCK,
    ST_PASS,
    ST_NOTE,
    ST_LAST,
    ST_LAST_ADD,
    ST_SUB = 0x100 /* or-ed in: a subagent's stop */
};
struct hook_state {
    char key[24]; /* the host's session id, hashed */
    int op;
    int continuing; /* stop_hook_active */
    int64_t now;
    int blocks; /* out: blocked stops so far in this turn */
    int sub; /* in: the stop is a subagent's (SubagentStop), whose blocks count apart from the main reply's */
    char note[512]; /* in (ST_NOTE) or out (ST_NEW_TURN) */
    int64_t started; /* out: when keel first saw this host session */
    char set_last[64]; /* in: the detectors of the advisories just given, a,b */
    char last[64]; /* out: the detectors of the last advisories given */
    const struct chrono_env *touch; /* in: the prompt's time to record too (chrono_touch), in the same write */
    /* the asks of the last rumination found (overlay.h's episode): read
     * (out), and with set_episode (ST_LAST) replaced */
    uint64_t episode[OV_EPISODE_MAX];
    size_t nepisode;
    int set_episode;
};

static int hooks_fn(cJSON *state, void *ctx, kerr *e)
{
    (void)e;
    struct hook_state *h = ctx;
    if (h->touch)
        chrono_touch_state(state, h->touch);
    cJSON *all = cJSON_GetObjectItemCaseSensitive(state, "hooks");
    if (!cJSON_IsObject(all)) {
        cJSON_DeleteItemFromObjectCaseSensitive(state, "hooks");
        all = cJSON_AddObjectToObject(state, "hooks");
    }
    cJSON *s = cJSON_GetObjectItemCaseSensitive(all, h->key);
    if (!cJSON_IsObject(s)) {
        cJSON_DeleteItemFromObjectCaseSensitive(all, h->key);
        if (cJSON_GetArraySize(all) >= HOOK_SESSIONS_MAX) { /* the least recent session goes */
            cJSON *old = NULL, *c;
            cJSON_ArrayForEach(c, all)
                if (!old ||
                    cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(c, "at")) <
                        cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(old, "at")))
                    old = c;
            cJSON_Delete(cJSON_DetachItemViaPointer(all, old));
        }
        s = cJSON_AddObjectToObject(all, h->key);
        cJSON_AddNumberToObject(s, "started", (double)h->now);
    }
    double started = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(s, "started"));
    h->started = started > 0 ? (int64_t)started : 0;
    const char *count = h->sub ? "sub_blocks" : "blocks";
    double blocks = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(s, count));
    h->blocks = blocks > 0 && blocks < 1000 ? (int)blocks : 0;
    const char *note = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "note"));
    const char *last = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "last"));
    snprintf(h->last, sizeof h->last, "%s", last ? last : "");
    if (h->set_episode) {
        cJSON *e = cJSON_CreateArray();
        for (size_t i = 0; i < h->nepisode; i++) {
            char x[17];
            snprintf(x, sizeof x, "%016llx", (unsigned long long)h->episode[i]);
            cJSON_AddItemToArray(e, cJSON_CreateString(x));
        }
        state_set(s, "episode", e);
    } else {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(s, "episode"), *x;
        h->nepisode = 0;
        cJSON_ArrayForEach(x, e) {
            const char *v = cJSON_GetStringValue(x);
            char *end;
            unsigned long long u = v ? strtoull(v, &end, 16) : 0;
            if (v && strlen(v) == 16 && !*end && h->nepisode < OV_EPISODE_MAX)
                h->episode[h->nepisode++] = u;
        }
    }
    double turn = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(s, "turn")),
           last_at = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(s, "last_at"));
    if (h->set_last[0]) {
        char spoke[sizeof h->last];
        snprintf(spoke, sizeof spoke, "%s", h->op == ST_LAST_ADD && last_at >= turn ? h->last : "");
        for (const char *d = h->set_last; *d;) { /* each detector once */
            size_t l = strcspn(d, ",");
            char one[32];
            snprintf(one, sizeof one, "%.*s", (int)l, d);
            if (!in_list(spoke, one))
                append(spoke, sizeof spoke, "%s%s", spoke[0] ? "," : "", one);
            d += l + (d[l] == ',');
        }
        state_set(s, "last", cJSON_CreateString(spoke));
        state_set(s, "last_at", cJSON_CreateNumber((double)h->now));
    }
    switch (h->op) {
    case ST_NEW_TURN:
        snprintf(h->note, sizeof h->note, "%s", note ? note : "");
        h->blocks = 0;
        state_set(s, "sub_blocks", cJSON_CreateNumber(0));
        state_set(s, "turn", cJSON_CreateNumber((double)h->now));
        cJSON_DeleteItemFromObjectCaseSensitive(s, "note");
        break;
    case ST_BLOCK:
        /* The turn's count is keel's own when its prompt hook marked the
         * turn's start (a host that never says stop_hook_active is not
         * blocked without end); else a stop the host does not say continues
         * a blocked one starts a new count. */
        h->blocks = !h->continuing && !(turn > 0) ? 1 : h->blocks <= HOOK_BLOCKS_MAX ? h->blocks + 1 : h->blocks;
        break;
    case ST_PASS:
        h->blocks = 0;
        break;
    case ST_NOTE:
        state_set(s, "note", cJSON_CreateString(h->note));
        break;
    case ST_LAST:
    case ST_LAST_ADD:
        break;
    }
    state_set(s, count, cJSON_CreateNumber(h->blocks));
    state_set(s, "at", cJSON_CreateNumber((double)h->now));
    return 1;
}

static int session_state_at(const char *state_dir, const char *sid, int op, int continuing, int64_t now,
                            const char *note, const struct chrono_env *touch, const struct overlay *ep,
                            struct hook_state *h)
{
    int sub = (op & ST_SUB) != 0;
    op &= ~ST_SUB;
    char set_last[sizeof h->set_last];
    snprintf(set_last, sizeof set_last, "%s", op == ST_LAST || op == ST_LAST_ADD ? note : "");
    memset(h, 0, sizeof *h);
    h->sub = sub;
    if (ep && ep->episode_changed) { /* rumination was found: its asks are the episode now */
        h->set_episode = 1;
        h->nepisode = ep->nepisode;
        memcpy(h->episode, ep->episode, ep->nepisode * sizeof *ep->episode);
    }
    h->touch = touch;
    snprintf(h->set_last, sizeof h->set_last, "%s", set_last);
    if (op == ST_LAST || op == ST_LAST_ADD)
        note = NULL;
    if (note)
        snprintf(h->note, sizeof h->note, "%s", note);
    snprintf(h->key, sizeof h->key, "%016llx",
             (unsigned long long)text_hash(sid ? sid : "", sid ? strlen(sid) : 0, 0x686f6f6b));
    h->op = op;
    h->continuing = continuing;
    h->now = now;
    kerr e = {0};
    if (state_update(state_dir, now, hooks_fn, h, &e) < 0) {
        if (touch)
            log_event(LOG_WARN, "hook_activity_not_recorded", "code=%s", e.code ? e.code : "");
        state_unavailable(&e);
        return -1;
    }
    return 0;
}

static int session_state(const char *state_dir, const char *sid, int op, int continuing, int64_t now, const char *note,
                         struct hook_state *h)
{
    return session_state_at(state_dir, sid, op, continuing, now, note, NULL, NULL, h);
}

/* --- the events ------------------------------------------------------------ */

struct earlier {
    struct overlay *ov;
    char *last; /* held back one (a copy): it may be this very prompt */
    size_t last_n;
    int64_t last_at;
};

static const char *override_rest(const char *prompt, char *token, size_t tcap, char *det, size_t dcap, int *owner);

/* Called with each earlier prompt, oldest first; its text lives only during
 * the call. What it asks is what follows an override word said first (a
 * prompt that was the word alone asks nothing). */
static void add_earlier(const struct transcript_prompt *p, void *ctx)
{
    struct earlier *x = ctx;
    char *t = malloc(p->n + 1), token[32], det[16];
    int owner;
    if (!t)
        return;
    memcpy(t, p->text, p->n);
    t[p->n] = '\0';
    const char *rest = override_rest(t, token, sizeof token, det, sizeof det, &owner);
    if (rest && !*rest) {
        free(t);
        return;
    }
    if (rest)
        memmove(t, rest, strlen(rest) + 1);
    if (x->last)
        overlay_add_ask(x->ov, x->last, x->last_n, x->last_at);
    free(x->last);
    x->last = t;
    x->last_n = strlen(t);
    x->last_at = p->at;
}

/* How long an override holds, as the person reads it: nothing when the
 * effect says it already ("the next rumination advisory will not be shown")
 * or when until is the moment it was given (fresh-context); a time as the
 * clock on the wall shows it ("14:57", at the offset of now); else as it is
 * ("the session ends"). out starts empty. */
static void until_words(const char *until, const char *effect, const struct chrono_env *env, char *out, size_t cap)
{
    int64_t ms;
    int off;
    if (!until || !until[0] || (effect && strstr(effect, until)))
        return;
    if (tf_parse_rfc3339(until, &ms, &off) < 0) {
        snprintf(out, cap, ", until %s", until);
    } else if (ms > env->now.ms) {
        struct tf_civil c;
        tf_civil(ms, chrono_offset_or(ms, off), &c);
        snprintf(out, cap, ", until %02d:%02d", c.hour, c.minute);
    }
}

/* 1 if detector det offers token. */
static int takes_token(int det, const char *token)
{
    for (int i = 0; guard_tokens[det][i]; i++)
        if (!strcmp(guard_tokens[det][i], token))
            return 1;
    return 0;
}

/* The prompt past an override word said at its start ("override-once",
 * "Keel, disable-for-session rumination."), with the word (lower-cased) in
 * token, the detector named after it, if any, in det, and the one detector
 * that takes the word in *owner (-1 when several do); NULL when the prompt
 * does not start with a word some detector takes. */
static const char *override_rest(const char *prompt, char *token, size_t tcap, char *det, size_t dcap, int *owner)
{
    const char *s = prompt;
    while (*s == ' ' || *s == '\t' || *s == '\n')
        s++;
    if (!strncasecmp(s, "keel", 4) && (s[4] == ' ' || s[4] == ':' || s[4] == ',')) {
        s += 4;
        while (*s == ' ' || *s == ':' || *s == ',')
            s++;
    }
    size_t k = 0;
    /* in any case: a phone or an editor may capitalise the first letter */
    while (k + 1 < tcap &&
           ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '-'))
        token[k++] = (char)(*s >= 'A' && *s <= 'Z' ? *s++ | 0x20 : *s++);
    token[k] = '\0';
    if (!k || (*s && !strchr(" \t\n.,;:!", *s)))
        return NULL;
    int owners = 0;
    for (int d = 0; d < DET_COUNT; d++)
        if (takes_token(d, token))
            owners++, *owner = d;
    if (!owners)
        return NULL;
    if (owners > 1)
        *owner = -1;
    while (*s == ' ' || *s == '\t')
        s++;
    det[0] = '\0';
    for (int d = 0; d < DET_COUNT; d++) {
        size_t l = strlen(guard_detector_names[d]);
        if (!strncasecmp(s, guard_detector_names[d], l) && (!s[l] || strchr(" \t\n.,;:!", s[l]))) {
            snprintf(det, dcap, "%s", guard_detector_names[d]);
            s += l;
        }
    }
    while (*s && strchr(" \t\n.,;:!", *s))
        s++;
    return s;
}

/* The index of the detector named name; DET_COUNT when none is. */
static int det_index(const char *name)
{
    int k = 0;
    while (k < DET_COUNT && strcmp(guard_detector_names[k], name))
        k++;
    return k;
}

/* An override word at the start of the person's prompt ("snooze-15m",
 * "keel override-once rumination"), applied as apply_override applies it, so
 * the words an advisory offers work with hooks alone; *rest is what the
 * prompt says after it (the prompt itself when it holds none). 1 if the
 * prompt held nothing else (no detector runs on it), 0 otherwise. */
static int prompt_override(const char *prompt, const char *last, int state_ok, const struct chrono_env *env,
                           struct out *o, const char **rest)
{
    char token[32], det[16];
    int owner;
    const char *s = override_rest(prompt, token, sizeof token, det, sizeof det, &owner);
    *rest = s ? s : prompt;
    if (!s)
        return 0;
    /* Which detectors: the one named, the one the word belongs to, or those
     * of the last advisories given in this host session that take it. No
     * advisory of the hooks offers explain-the-match: each is a process of
     * its own that keeps none of the person's words, and its message already
     * names what it matched. */
    char list[64] = "";
    if (!strcmp(token, "explain-the-match")) {
        append(o->msg, sizeof o->msg,
               "%skeel: explain-the-match: keel's message already says what it matched (when you asked before and "
               "your first words, or the reply's own words); keel keeps none of the conversation between prompts "
               "to show more.",
               o->msg[0] ? "\n" : "");
        log_event(LOG_INFO, "hook_override_refused", "code=NO_EXPLANATION");
    } else if (det[0])
        snprintf(list, sizeof list, "%s", det);
    else if (owner >= 0)
        snprintf(list, sizeof list, "%s", guard_detector_names[owner]);
    else
        snprintf(list, sizeof list, "%s", last ? last : "");
    int applied = 0, refuser = -1; /* a detector of the last advisories that does not take the word */
    for (char *save = NULL, *d = strtok_r(list, ",", &save); d; d = strtok_r(NULL, ",", &save)) {
        int k = det_index(d);
        if (k < DET_COUNT && !takes_token(k, token) && refuser < 0)
            refuser = k;
        if (k == DET_COUNT || !takes_token(k, token))
            continue;
        cJSON *args = cJSON_CreateObject(), *res = NULL;
        cJSON_AddStringToObject(args, "token", token);
        cJSON_AddStringToObject(args, "detector", d);
        kerr e = {0};
        if (overlay_apply_override(args, env, &res, &e) == 0) {
            const char *effect = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(res, "effect"));
            const char *until = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(res, "until"));
            char line[400], how_long[80] = "";
            until_words(until, effect, env, how_long, sizeof how_long);
            /* typed before a question, override-once is that question's
             * first: its advisory, if it raises one, is the one not shown */
            const char *which = *s && !strcmp(token, "override-once") ? " (this prompt's, if it raises one)" : "";
            snprintf(line, sizeof line, "keel (%s): %s applied: %s%s%s.", d, token, effect ? effect : "", which,
                     how_long);
            append(o->msg, sizeof o->msg, "%s%s", o->msg[0] ? "\n" : "", line);
            append(o->ctx, sizeof o->ctx, "%s%s The person used keel's override word; %s", o->ctx[0] ? " " : "",
                   TRANSCRIPT_KEEL_MARK, line);
            log_event(LOG_INFO, "hook_override", "token=%s detector=%s", token, d);
            applied++;
        } else {
            append(o->msg, sizeof o->msg, "%skeel (%s): %s was not applied: ", o->msg[0] ? "\n" : "", d, token);
            append(o->msg, sizeof o->msg, "%s", e.message);
            log_event(LOG_INFO, "hook_override_refused", "code=%s", e.code ? e.code : "");
        }
        cJSON_Delete(res);
        cJSON_Delete(args);
    }
    if (!applied && !o->msg[0] && (det[0] || refuser >= 0)) {
        /* the detector named, or the last advisory's, does not take the word */
        int k = det[0] ? det_index(det) : refuser;
        /* the words a hook takes: not explain-the-match (a hook keeps nothing
         * to show), commit-and-close only while a work session is open */
        char words[160] = "";
        struct guard_view gv;
        kerr ge = {0};
        int open = state_ok && guard_read(env, env->profile->activity_gap, &gv, &ge) == 0 && gv.session_open;
        for (int i = 0; k < DET_COUNT && guard_tokens[k][i]; i++) {
            const char *w = guard_tokens[k][i];
            if (!strcmp(w, "explain-the-match") || (!strcmp(w, "commit-and-close") && !open))
                continue;
            append(words, sizeof words, "%s%s", words[0] ? ", " : "", w);
        }
        if (det[0])
            append(o->msg, sizeof o->msg, "keel: %s does not take %s; its words are: %s.", det, token, words);
        else
            append(o->msg, sizeof o->msg,
                   "keel: the last advisory here came from %s, which does not take %s; its words are: %s.",
                   guard_detector_names[k], token, words);
    } else if (!applied && !o->msg[0] && !state_ok)
        append(o->msg, sizeof o->msg,
               "keel: %s was not applied: keel cannot use its state directory, so it neither knows which advisory "
               "came last nor can keep the word (keel check get_time_context says why).",
               token);
    else if (!applied && !o->msg[0]) {
        char takers[96] = ""; /* only the detectors that take the word */
        for (int k = 0; k < DET_COUNT; k++)
            if (takes_token(k, token))
                append(takers, sizeof takers, "%s%s", takers[0] ? ", " : "", guard_detector_names[k]);
        append(o->msg, sizeof o->msg,
               "keel: %s belongs to several detectors and no advisory was given here yet: "
               "start the prompt with %s and the detector's name (%s).",
               token, token, takers);
    }
    return *s == '\0';
}

/* The host's field key: its string, or NULL. One present but not a string
 * (a host's bug) is said on stderr by name, never read as absent. */
static const char *field_str(const cJSON *in, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(in, key);
    if (v && !cJSON_IsString(v) && !cJSON_IsNull(v))
        log_event(LOG_WARN, "hook_field_invalid", "field=%s expected=string", key);
    return cJSON_GetStringValue(v);
}

static void on_prompt(const cJSON *in, const struct profile *p, const char *state_dir, struct chrono_now now,
                      struct out *o)
{
    const char *prompt = field_str(in, "prompt");
    const char *source = field_str(in, "source");
    if (!prompt || (source && !strcmp(source, "system")) || !strncmp(prompt, "<task-notification>", 19)) {
        log_event(LOG_INFO, "hook_not_the_person", "bytes=%zu", prompt ? strlen(prompt) : 0);
        return;
    }
    struct chrono_env env = {now, p, state_dir, 0, NULL};
    struct hook_state h;
    const char *sid = field_str(in, "session_id");
    /* the prompt's time and the new turn, in one write */
    int state_ok = session_state_at(state_dir, sid, ST_NEW_TURN, 0, env.now.ms, NULL, &env, NULL, &h) == 0;
    if (state_ok && h.note[0]) {
        append(o->ctx, sizeof o->ctx, "%s keel, the person's guardrail, noted about the previous reply: %s.",
               TRANSCRIPT_KEEL_MARK, h.note);
    }
    env.conversation_at = h.started; /* this host session: a new chat starts clean, */
    env.conversation = h.key; /* and another chat's overrides are not this one's */
    const char *asked; /* the prompt past an override word said first: what the person asks */
    if (prompt_override(prompt, h.last, state_ok, &env, o, &asked))
        return;
    prompt = asked;

    struct overlay ov;
    overlay_init(&ov, p, state_dir, OV_RUMINATION | OV_HYPERFOCUS | OV_SYCOPHANCY, NULL, 0, NULL, 0);
    ov.conversation_at = h.started;
    snprintf(ov.conversation, sizeof ov.conversation, "%s", h.key);
    ov.nepisode = h.nepisode;
    memcpy(ov.episode, h.episode, h.nepisode * sizeof *h.episode);
    size_t n = strlen(prompt);
    const char *path = field_str(in, "transcript_path");
    struct earlier x = {&ov, NULL, 0, 0};
    int got = transcript_prompts(path, env.now.ms - (int64_t)p->rum_window * 60000, 21, add_earlier, &x);
    if (got < 0)
        log_event(LOG_INFO, "hook_transcript_unreadable", "present=%d", path != NULL);
    /* The host may have written this prompt already: the newest line, the
     * same text, a moment ago, is this one, not an earlier one. */
    if (x.last && !(x.last_n == n && !memcmp(x.last, prompt, n) && env.now.ms - x.last_at < 10000))
        overlay_add_ask(&ov, x.last, x.last_n, x.last_at);
    free(x.last);
    overlay_on_prompt(&ov, prompt, n);
    cJSON *all = overlay_for_result(&ov, "", NULL, NULL), *advs = spoken(all);
    cJSON_Delete(all);
    char dets[64];
    say(o, advs, dets, sizeof dets);
    if (dets[0] || ov.episode_changed)
        session_state_at(state_dir, sid, ST_LAST, 0, env.now.ms, dets, NULL, &ov, &h);
    log_event(LOG_INFO, "hook_prompt", "earlier=%d advisories=%d", got > 0 ? got : 0, cJSON_GetArraySize(advs));
    cJSON_Delete(advs);
    overlay_free(&ov);
}

/* A rule from the person's own files (--rules, the profile's rules.dirs), not
 * one keel ships: only those may block a reply. */
static int persons_rule(const char *name)
{
    for (int i = 0; name && ruleset_current && i < ruleset_current->n; i++)
        if (!strcmp(ruleset_current->v[i].name, name))
            return !ruleset_current->v[i].shipped;
    return 0;
}

static void on_reply(const cJSON *in, int host, int subagent, const struct profile *p, const char *state_dir,
                     int64_t now, struct out *o, char *block, size_t block_cap)
{
    int sub = subagent ? ST_SUB : 0; /* a subagent's blocks count apart from the main reply's */
    const char *reply = field_str(in, hook_hosts[host].reply);
    if (!reply)
        reply = field_str(in, "prompt_response");
    if (!reply || !*reply) { /* an older host, or a turn that ended in a tool call: nothing to read */
        log_event(LOG_INFO, "hook_reply_missing", "present=%d", reply != NULL);
        return;
    }
    const char *sid = field_str(in, "session_id");
    const cJSON *active = cJSON_GetObjectItemCaseSensitive(in, "stop_hook_active");
    if (active && !cJSON_IsBool(active))
        log_event(LOG_WARN, "hook_field_invalid", "field=stop_hook_active expected=boolean");
    int continuing = cJSON_IsTrue(active);
    /* Bytes that are not UTF-8 read as U+FFFD, as a person's prompt's do:
     * the rules and sycophancy still read the rest of the reply. */
    size_t n;
    int repaired;
    char *clean = text_repair(reply, strlen(reply), &n, &repaired);
    char *text = clean ? rule_copy(clean, n) : NULL;
    free(clean);
    if (!text)
        return;
    if (repaired)
        log_event(LOG_INFO, "hook_reply_repaired", "bytes=%zu", n);
    cJSON *j = ruleset_current ? rules_judge(p, text, RA_MESSAGE, NULL) : NULL, *v;
    char names[256] = "", guidance[2000] = "", soft[256] = "";
    cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(j, "violations")) {
        const char *rule = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "rule"));
        if (!persons_rule(rule)) { /* a shipped reject rule speaks, never blocks */
            append(soft, sizeof soft, "%s%s", soft[0] ? ", " : "", rule);
            continue;
        }
        append(names, sizeof names, "%s%s", names[0] ? ", " : "", rule);
        append(guidance, sizeof guidance, "%s%s", guidance[0] ? " " : "",
               cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "guidance")));
    }
    struct hook_state h;
    int pass = 0; /* the count of blocks ends: a reply that follows the rules */
    char lead[800] = ""; /* what keel says before any advisory's reason: one message in all */
    if (names[0]) {
        int counted = session_state(state_dir, sid, ST_BLOCK | sub, continuing, now, NULL, &h) == 0;
        if (counted && h.blocks <= HOOK_BLOCKS_MAX) {
            snprintf(block, block_cap,
                     "%s This reply breaks the person's rules (%s): %s Revise the reply so it "
                     "follows them; this is attempt %d of %d.",
                     TRANSCRIPT_KEEL_MARK, names, guidance, h.blocks, HOOK_BLOCKS_MAX);
            log_event(LOG_INFO, "hook_reply_blocked", "attempt=%d", h.blocks);
            cJSON_Delete(j);
            free(text);
            return;
        }
        if (counted) { /* let through: the turn's blocks stay spent (no pass), so its later stops pass too */
            append(lead, sizeof lead,
                   "%s broke your rules (%s) and was let through after %d blocked "
                   "attempts; the rules were bypassed.",
                   sub ? "a subagent's reply" : "the reply", names, HOOK_BLOCKS_MAX);
        } else { /* no count, no block: a block that cannot be counted could repeat forever */
            append(lead, sizeof lead,
                   "the reply broke your rules (%s) and was let through unblocked: keel could not "
                   "count its attempts, as its state directory is not usable (keel check get_time_context says why).",
                   names);
        }
        append(o->note, sizeof o->note, "%sthe %s %s %s bypassed", o->note[0] ? "; " : "",
               strchr(names, ',') ? "rules" : "rule", names, strchr(names, ',') ? "were" : "was");
        log_event(LOG_INFO, "hook_rules_bypassed", "attempts=%d", HOOK_BLOCKS_MAX);
    } else {
        pass = continuing;
    }
    /* Annotate rules, rewrite rules (the reply is already written) and
     * shipped reject rules: a message and a note, never a block; quieted by
     * the person's disable-for-session or override-once for rules, said in
     * this host session's conversation. */
    static const char *const lists[] = {"annotations", "applied"};
    for (int l = 0; l < 2; l++)
        cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(j, lists[l])) {
            const char *rule =
                cJSON_IsString(v) ? v->valuestring : cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "rule"));
            append(soft, sizeof soft, "%s%s", soft[0] ? ", " : "", rule);
        }
    struct hook_state seen;
    int known = session_state(state_dir, sid, (pass ? ST_PASS : ST_LAST) | sub, 0, now, "", &seen) == 0;
    if (soft[0] && known) {
        struct chrono_env env = {{now, 0}, p, state_dir, seen.started, seen.key};
        struct guard_view gv;
        kerr e = {0};
        int taken = 0;
        if (chrono_now(&env.now, &e) == 0 && guard_read(&env, p->activity_gap, &gv, &e) == 0 &&
            (gv.disabled[DET_RULES] ||
             (gv.once[DET_RULES] > 0 && guard_take_once(&env, DET_RULES, &taken, &e) == 0 && taken))) {
            log_event(LOG_INFO, "hook_rules_quiet", "disabled=%d", gv.disabled[DET_RULES]);
            soft[0] = '\0';
        }
    }
    /* Each rule in its own words (its description, else its guidance), then
     * sycophancy's reason: one message with one list of words when both
     * speak, as a prompt's advisories are. */
    char said[1600] = "", tok[200] = "";
    if (soft[0]) {
        append(said, sizeof said, "the reply matched %s", strchr(soft, ',') ? "these rules:" : "the rule");
        for (char *r = soft, *next; r && *r; r = next) {
            next = strstr(r, ", ");
            if (next)
                *next = '\0', next += 2;
            const char *words = NULL;
            for (int i = 0; ruleset_current && i < ruleset_current->n && !words; i++)
                if (!strcmp(ruleset_current->v[i].name, r))
                    words = ruleset_current->v[i].description ? ruleset_current->v[i].description
                                                              : ruleset_current->v[i].guidance;
            size_t wl = words ? strlen(words) : 0;
            while (wl && strchr(". \n", words[wl - 1]))
                wl--; /* the sentence ends below */
            if (wl)
                append(said, sizeof said, " %s (%.*s)%s", r, (int)wl, words, next ? ";" : ".");
            else
                append(said, sizeof said, " %s%s", r, next ? ";" : ".");
            append(o->note, sizeof o->note, "%sit matched the rule %s", o->note[0] ? "; " : "", r);
        }
        append(tok, sizeof tok, "override-once, disable-for-session");
    }
    /* A rule that could not be checked on this reply within its time budget
     * was not applied: said so, never taken for a reply that passed it. */
    char unchecked[256] = "";
    int nun = 0;
    cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(j, "skipped"))
        if (cJSON_IsString(v) && nun++ < 5)
            append(unchecked, sizeof unchecked, "%s%s", unchecked[0] ? ", " : "", v->valuestring);
    if (nun > 5)
        append(unchecked, sizeof unchecked, " and %d more", nun - 5);
    if (nun)
        append(lead, sizeof lead,
               "%s%s %s %s could not be checked on this reply in time, and %s not applied (a pattern "
               "that backtracks, or too many slow rules: keel rules test names them).",
               lead[0] ? " " : "", lead[0] ? "The" : "the", nun > 1 ? "rules" : "rule", unchecked,
               nun > 1 ? "were" : "was");
    cJSON_Delete(j);
    /* Sycophancy on the reply, in this host session's conversation. */
    struct overlay ov;
    overlay_init(&ov, p, state_dir, OV_SYCOPHANCY, NULL, 0, NULL, 0);
    if (known) {
        ov.conversation_at = seen.started;
        snprintf(ov.conversation, sizeof ov.conversation, "%s", seen.key);
    }
    overlay_on_reply(&ov, text, n);
    cJSON *advs = spoken(ov.queued);
    const cJSON *a;
    cJSON_ArrayForEach(a, advs) {
        const char *why = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "reason"));
        append(said, sizeof said, "%s%s", said[0] ? " " : "", why ? why : "");
        tokens_of(a, tok, sizeof tok);
        append(o->note, sizeof o->note, "%sit showed %s (sycophancy)", o->note[0] ? "; " : "",
               cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "pattern")));
    }
    int nsyc = cJSON_GetArraySize(advs);
    if (said[0] && lead[0] && said[0] >= 'a' && said[0] <= 'z')
        said[0] = (char)(said[0] - 'a' + 'A'); /* a sentence of its own after what comes first */
    if (said[0])
        append(o->msg, sizeof o->msg, "%skeel (%s): %s%s%s To change this, start your next prompt with one of: %s.",
               o->msg[0] ? "\n" : "",
               (soft[0] || lead[0]) && nsyc ? "rules, sycophancy"
                   : soft[0] || lead[0]     ? "rules"
                                            : "sycophancy",
               lead, lead[0] ? " " : "", said, tok);
    else if (lead[0])
        append(o->msg, sizeof o->msg, "%skeel: %s", o->msg[0] ? "\n" : "", lead);
    /* the detectors that spoke, for an override word said next without one */
    char spoke[32] = "";
    if (soft[0])
        append(spoke, sizeof spoke, "rules");
    if (nsyc)
        append(spoke, sizeof spoke, "%ssycophancy", spoke[0] ? "," : "");
    if (spoke[0])
        session_state(state_dir, sid, ST_LAST_ADD | sub, 0, now, spoke, &h);
    cJSON_Delete(advs);
    overlay_free(&ov);
    free(text);
    if (o->note[0])
        session_state(state_dir, sid, ST_NOTE | sub, 0, now, o->note, &h);
    log_event(LOG_INFO, "hook_reply", "bytes=%zu", n);
}

/* A duration as get_time_context gives it (PT51H5M3S: hours, minutes,
 * seconds) in words for a person ("2 days 3 h", "1 h 5 min", "40 s"); 0 when
 * it is zero or not one. */
static int human_duration(const char *iso, char *out, size_t cap)
{
    long h = 0, m = 0, sec = 0, v = 0;
    int any = 0;
    if (strncmp(iso, "PT", 2) != 0)
        return 0;
    for (iso += 2; *iso; iso++) {
        if (*iso >= '0' && *iso <= '9') {
            v = v * 10 + (*iso - '0');
            any = 1;
            if (v > 100000000)
                return 0;
            continue;
        }
        if (*iso == 'H')
            h = v;
        else if (*iso == 'M')
            m = v;
        else if (*iso == 'S')
            sec = v;
        else
            return 0;
        v = 0;
    }
    out[0] = '\0';
    if (!any || (!h && !m && !sec))
        return 0;
    long d = h / 24;
    h %= 24;
    if (d)
        append(out, cap, "%ld day%s", d, d == 1 ? "" : "s");
    if (h)
        append(out, cap, "%s%ld h", out[0] ? " " : "", h);
    if (m && !d)
        append(out, cap, "%s%ld min", out[0] ? " " : "", m);
    if (!d && !h && !m)
        append(out, cap, "%ld s", sec);
    return 1;
}

static void on_session_start(const struct profile *p, const char *state_dir, struct out *o)
{
    struct chrono_env env = {{0, 0}, p, state_dir, 0, NULL};
    kerr e = {0};
    cJSON *args = cJSON_CreateObject(), *t = NULL;
    if (chrono_now(&env.now, &e) == 0 && chrono_get_time_context(args, &env, &t, &e) == 0) {
        const char *now = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "now"));
        const char *day = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "day_of_week"));
        const char *zone = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "energy_zone"));
        const char *since = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "time_since_last_prompt"));
        const cJSON *open = cJSON_GetObjectItemCaseSensitive(t, "session_open");
        snprintf(o->ctx, sizeof o->ctx, "%s The time, from keel: it is %s, a %c%s", TRANSCRIPT_KEEL_MARK,
                 now ? now : "?", day && *day ? toupper((unsigned char)*day) : '?', day && *day ? day + 1 : "");
        if (zone)
            append(o->ctx, sizeof o->ctx, " (energy zone: %s)", zone);
        append(o->ctx, sizeof o->ctx, ".");
        char words[48];
        if (since && human_duration(since, words, sizeof words)) /* none on a fresh state file */
            append(o->ctx, sizeof o->ctx, " The person's last prompt was %s ago.", words);
        if (cJSON_IsTrue(open)) {
            /* get_time_context does not give the intent: the state file does */
            kerr se = {0};
            cJSON *st = chrono_read_state(&env, &se);
            const char *intent = cJSON_GetStringValue(
                cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(st, "open_session"), "intent"));
            const char *len = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "current_session_length"));
            if (!len || !human_duration(len, words, sizeof words))
                snprintf(words, sizeof words, "just begun");
            else
                append(words, sizeof words, " so far");
            append(o->ctx, sizeof o->ctx, " A work session is open (%s)", words);
            char plain[400]; /* as plain text: the model may have written escape codes into it */
            if (intent && intent[0] &&
                (overlay_quote(intent, strlen(intent), 150, SIZE_MAX, plain, sizeof plain), plain[0]))
                append(o->ctx, sizeof o->ctx, "; its stated intent: %s", plain);
            append(o->ctx, sizeof o->ctx, ".");
            cJSON_Delete(st);
        } else {
            append(o->ctx, sizeof o->ctx, " No work session is open.");
        }
    } else {
        log_event(LOG_WARN, "hook_time_unavailable", "code=%s", e.code ? e.code : "");
    }
    cJSON_Delete(t);
    cJSON_Delete(args);
}

/* --- the host's output ---------------------------------------------------- */

/* The host's JSON (with room for a newline after it), or NULL: nothing to say. */
static char *emit(const char *event, int host, int kind, const struct out *o, const char *block)
{
    cJSON *r = cJSON_CreateObject();
    if (block && block[0]) {
        cJSON_AddStringToObject(r, "decision", hook_hosts[host].block);
        cJSON_AddStringToObject(r, "reason", block);
    }
    if (o->ctx[0] && kind != EV_REPLY) {
        cJSON *h = cJSON_AddObjectToObject(r, "hookSpecificOutput");
        cJSON_AddStringToObject(h, "hookEventName", event);
        cJSON_AddStringToObject(h, "additionalContext", o->ctx);
    }
    if (o->msg[0])
        cJSON_AddStringToObject(r, "systemMessage", o->msg);
    char *s = NULL;
    if (cJSON_GetArraySize(r)) {
        char *t = cJSON_PrintUnformatted(r);
        size_t l = t ? strlen(t) : 0;
        if (t && (s = malloc(l + 2)))
            memcpy(s, t, l + 1);
        free(t);
    }
    cJSON_Delete(r);
    return s;
}

/* What is left of fd's input read and dropped, until its end or the clock
 * reaches end: a host writing a payload keel will not read is not left
 * writing into a closed pipe (EPIPE breaks a host that does not expect it). */
#define DRAIN_IDLE_MS  100 /* a host still writing writes on; one that keeps its end open idle is not waited for */
#define DRAIN_AFTER_MS 10 /* after a whole value: the newline a host writes after it, apart, is read too */
static void drain_idle(int fd, int64_t end, int idle_ms)
{
    char scratch[1 << 16];
    for (;;) {
        int64_t left = end - chrono_mono_ms();
        struct pollfd pf = {fd, POLLIN, 0};
        int r = left > 0 ? poll(&pf, 1, left < idle_ms ? (int)left : idle_ms) : 0;
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0 || read(fd, scratch, sizeof scratch) <= 0)
            return;
    }
}

static void drain(int fd, int64_t end)
{
    drain_idle(fd, end, DRAIN_IDLE_MS);
}

/* The host's payload on fd: read up to the end of the first complete JSON
 * value, the end of input or HOOK_INPUT_MS, whichever comes first (a host
 * that keeps its end of the pipe open is not waited for). NULL when more
 * than max bytes come before the value ends (*too_large; the rest is read
 * and dropped, as it is after a payload that is no JSON or a value with more
 * after it), or memory runs out. */
static char *read_payload(int fd, size_t max, size_t *n, int *too_large)
{
    *too_large = 0;
    size_t cap = 1u << 16, len = 0;
    char *buf = malloc(cap + 1);
    struct jstream j;
    jstream_init(&j);
    int64_t end = chrono_mono_ms() + HOOK_INPUT_MS;
    while (buf) {
        int64_t left = end - chrono_mono_ms();
        struct pollfd pf = {fd, POLLIN, 0};
        int r = left > 0 ? poll(&pf, 1, (int)left) : 0;
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            log_event(LOG_WARN, "hook_input_unfinished", "bytes=%zu waited_ms=%d", len, HOOK_INPUT_MS);
            break;
        }
        if (len == cap) {
            int full = cap >= max;
            char *b = full ? NULL : realloc(buf, (cap *= 2) + 1);
            if (!b) {
                free(buf);
                if ((*too_large = full))
                    drain(fd, end);
                return NULL;
            }
            buf = b;
        }
        /* poll said there is input: a read of a pipe or file with input
         * does not wait, so no signal can interrupt it (EINTR) */
        ssize_t got = read(fd, buf + len, cap - len);
        if (got <= 0)
            break;
        size_t used;
        int rc = jstream_feed(&j, buf + len, (size_t)got, &used);
        len += (size_t)got;
        if (rc < 0) {
            if (j.trailing) /* a whole value, then more: the value */
                len -= (size_t)got - used;
            drain(fd, end); /* what the host still writes, read and dropped: its write never fails (EPIPE) */
            break;
        }
        if (jstream_end(&j)) {
            drain_idle(fd, end, DRAIN_AFTER_MS); /* what follows the value (a newline written apart) */
            break;
        }
    }
    if (!buf)
        return NULL;
    buf[len] = '\0';
    *n = len;
    return buf;
}

int hook_run(const char *event, int host, const struct profile *p, const char *state_dir)
{
    signal(SIGPIPE, SIG_IGN); /* a host that closed its end: the write fails, keel exits 0 */
    size_t n = 0;
    int too_large;
    char *raw = read_payload(STDIN_FILENO, HOOK_INPUT_MAX, &n, &too_large);
    if (!raw) {
        if (too_large)
            log_event(LOG_WARN, "hook_input_too_large", "limit=%u", HOOK_INPUT_MAX);
        else
            log_event(LOG_WARN, "hook_input_unreadable", "reason=out_of_memory");
        return 0;
    }
    char *out = hook_answer(raw, n, event, host, p, state_dir);
    free(raw);
    if (out) {
        size_t l = strlen(out);
        out[l] = '\n'; /* hook_answer leaves room for it */
        ssize_t w = write(STDOUT_FILENO, out, l + 1);
        (void)w;
        free(out);
    }
    return 0;
}

char *hook_answer(const char *raw, size_t n, const char *event, int host, const struct profile *p,
                  const char *state_dir)
{
    /* a \u0000 would cut a string short (two session ids read as one, a
     * reply's rest unread by the rules): read as U+FFFD, as a byte that is
     * not UTF-8 is, so the string stays whole */
    char *whole = NULL;
    int has_nul = jscan_has_nul_escape(raw, n);
    if (has_nul && (whole = malloc(n + 1))) {
        memcpy(whole, raw, n);
        whole[n] = '\0';
        log_event(LOG_INFO, "hook_nul_read_as_fffd", "count=%zu", jscan_nul_escapes_replaced(whole, n));
    }
    int nul = has_nul && !whole; /* out of memory for the copy */
    cJSON *in = nul ? NULL : jscan_parse(whole ? whole : raw, n);
    free(whole);
    if (!cJSON_IsObject(in)) {
        log_event(LOG_WARN, "hook_input_invalid", "bytes=%zu%s", n, nul ? " reason=out_of_memory" : "");
        cJSON_Delete(in);
        return NULL;
    }
    const char *name = event ? event : cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(in, "hook_event_name"));
    int kind = event_kind(name);
    if (host == HOOK_HOST_AUTO)
        host =
            name && (!strcmp(name, "BeforeAgent") || !strcmp(name, "AfterAgent")) ? HOOK_HOST_GEMINI : HOOK_HOST_CLAUDE;
    struct chrono_env env = {{0, 0}, p, state_dir, 0, NULL};
    kerr e = {0};
    static struct out o;
    char block[4000] = "";
    memset(&o, 0, sizeof o);
    int utc = 0; /* TZ names no zone: the times are UTC's, and the person is told */
    if (chrono_now(&env.now, &e) < 0 && !chrono_zone_ok()) {
        chrono_zone_as_utc();
        utc = 1;
        e = (kerr){0};
        log_event(LOG_WARN, "hook_zone_unknown", "reading=utc");
    }
    if (e.code || (utc && chrono_now(&env.now, &e) < 0)) {
        log_event(LOG_WARN, "hook_clock_unavailable", "code=%s", e.code ? e.code : "");
    } else if (kind == EV_PROMPT) {
        on_prompt(in, p, state_dir, env.now, &o);
    } else if (kind == EV_REPLY) {
        on_reply(in, host, name && !strcmp(name, "SubagentStop"), p, state_dir, env.now.ms, &o, block, sizeof block);
    } else if (kind == EV_SESSION_START) {
        on_session_start(p, state_dir, &o);
    } else {
        log_unknown_event(name, n);
    }
    if (utc && kind != EV_OTHER)
        append(o.msg, sizeof o.msg,
               "%skeel: TZ names no time zone installed here (see /usr/share/zoneinfo), so keel "
               "reads the time as UTC; set TZ to your zone (TZ=Europe/Berlin, say) or unset it.",
               o.msg[0] ? "\n" : "");
    char *out = emit(name ? name : "", host, kind, &o, block);
    cJSON_Delete(in);
    return out;
}
