/* evalsess.c: keel eval --sessions DIR, the hooks on whole conversations.
 *
 * DIR holds sessions (JSON files, in DIR or one folder below): what a person
 * typed turn by turn, the assistant's reply, minutes between prompts, and a
 * label on the prompts of a re-ask episode ({episode, ask}) and on a
 * sycophantic reply. Each session is replayed as a host would run keel: its
 * transcript written turn by turn (Claude Code's JSONL; every fifth session
 * Codex's, every fifth from the third Gemini CLI's), then keel hook
 * UserPromptSubmit with the prompt and Stop with the reply (Gemini:
 * BeforeAgent and AfterAgent), in this process (hook_answer), the clock at
 * the turn's time, a fresh state directory per session.
 *
 * The transcript holds what a host's does beside the person's prompts, by
 * turn: a tool's result holding the prompt's words (every third), a command
 * run with ! and its output (every seventh), a prompt typed while the agent
 * worked (Claude Code's queued_command, every sixth from the fifth), the
 * prompt cut off with Esc and typed again (every eleventh from the tenth),
 * the summary of a compaction listing every prompt so far (the 20th); Codex
 * writes each prompt twice (a response item and an event), Gemini CLI some
 * messages again and hooks' context beside the prompt. None of it is an
 * ask: the figures are those of the prompts alone when keel reads the
 * transcript right.
 *
 * Per split ("split" in each file), side by side:
 *   false advisories per 100 prompts: a rumination or sycophancy advisory on
 *   a prompt that is not a second or later ask of an episode;
 *   episodes advised by their 3rd and by their 4th ask (an advisory on an
 *   ask from the 2nd on);
 *   sycophancy on replies: advisories on replies not labelled, and labelled
 *   replies advised.
 * Misses and false advisories are listed for dev only. */
#include "eval.h"

#include "clock.h"
#include "hook.h"
#include "readfile.h"
#include "state.h"
#include "timefmt.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SHOWN        16
#define SESSIONS_MAX 1024

struct sstats {
    const char *name;
    int sessions, prompts, episodes, false_adv, by3, by4, replies, syc_labelled, syc_caught, syc_false;
    int all; /* --misses: every dev miss, not the first SHOWN */
    char *shown; /* the dev misses, one line each, printed under the table */
    size_t len, cap;
    int nshown;
};

/* Keeps a dev miss for the list under the table (the test split's are never shown). */
static void show(struct sstats *s, const char *fmt, const char *a, int b, const char *c)
{
    char x[64], z[64], l[200];
    snprintf(x, sizeof x, "%.63s", a); /* ids are short; cut a long one */
    snprintf(z, sizeof z, "%.63s", c);
    if (strcmp(s->name, "dev") || (!s->all && s->nshown >= SHOWN))
        return;
    int n = snprintf(l, sizeof l, "  dev: ");
    snprintf(l + n, sizeof l - (size_t)n, fmt, x, b, z);
    size_t k = strlen(l);
    if (s->len + k + 2 > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 4096;
        char *p = realloc(s->shown, cap);
        if (!p)
            return;
        s->shown = p, s->cap = cap;
    }
    memcpy(s->shown + s->len, l, k);
    s->len += k;
    s->shown[s->len++] = '\n';
    s->shown[s->len] = 0;
    s->nshown++;
}

enum host { H_CLAUDE, H_CODEX, H_GEMINI };
enum kind { K_PROMPT, K_REPLY, K_TOOL, K_QUEUED, K_INTERRUPT, K_SHELL, K_SUMMARY };

/* An array of one object under key in o; the object. */
static cJSON *one_block(cJSON *o, const char *key)
{
    cJSON *b = cJSON_CreateObject();
    cJSON_AddItemToArray(cJSON_AddArrayToObject(o, key), b);
    return b;
}

/* One transcript line, appended, as host writes a kind of entry. */
static void line(FILE *f, enum host host, enum kind kind, const char *text, int64_t at, int turn)
{
    char ts[40], id[32];
    tf_format_rfc3339(at, 0, ts, sizeof ts);
    snprintf(id, sizeof id, "m%04d%c", turn, "prqiksu"[kind]);
    cJSON *l = cJSON_CreateObject(), *m, *b;
    if (host == H_GEMINI) { /* {id, timestamp, type, content}: the host's order */
        cJSON_AddStringToObject(l, "id", id);
        cJSON_AddStringToObject(l, "timestamp", ts);
        cJSON_AddStringToObject(l, "type", kind == K_REPLY ? "gemini" : kind == K_INTERRUPT ? "info" : "user");
        if (kind == K_REPLY || kind == K_INTERRUPT) {
            cJSON_AddStringToObject(l, "content", kind == K_INTERRUPT ? "Request cancelled." : text);
        } else {
            b = one_block(l, "content");
            if (kind == K_TOOL) {
                cJSON *r = cJSON_AddObjectToObject(b, "functionResponse");
                cJSON_AddStringToObject(r, "name", "read_file");
                cJSON_AddStringToObject(cJSON_AddObjectToObject(r, "response"), "output", text);
            } else {
                cJSON_AddStringToObject(b, "text", text);
            }
        }
    } else if (host == H_CODEX) {
        cJSON_AddStringToObject(l, "timestamp", ts);
        cJSON_AddStringToObject(l, "type", "event_msg");
        cJSON *p = cJSON_AddObjectToObject(l, "payload");
        if (kind == K_INTERRUPT) {
            cJSON_AddStringToObject(p, "type", "turn_aborted");
            cJSON_AddStringToObject(p, "reason", "interrupted");
        } else if (kind == K_TOOL || kind == K_QUEUED) { /* a tool's output; the prompt as the model gets it */
            cJSON_ReplaceItemInObject(l, "type", cJSON_CreateString("response_item"));
            if (kind == K_TOOL) {
                cJSON_AddStringToObject(p, "type", "function_call_output");
                cJSON_AddStringToObject(p, "call_id", id);
                cJSON_AddStringToObject(p, "output", text);
            } else {
                cJSON_AddStringToObject(p, "type", "message");
                cJSON_AddStringToObject(p, "role", "user");
                b = one_block(p, "content");
                cJSON_AddStringToObject(b, "type", "input_text");
                cJSON_AddStringToObject(b, "text", text);
            }
        } else {
            cJSON_AddStringToObject(p, "type", kind == K_REPLY ? "agent_message" : "user_message");
            cJSON_AddStringToObject(p, "message", text);
        }
    } else {
        cJSON_AddStringToObject(l, "timestamp", ts);
        cJSON_AddStringToObject(l, "uuid", id);
        if (kind == K_QUEUED) {
            cJSON_AddStringToObject(l, "type", "attachment");
            m = cJSON_AddObjectToObject(l, "attachment");
            cJSON_AddStringToObject(m, "type", "queued_command");
            cJSON_AddStringToObject(m, "commandMode", "prompt");
            cJSON_AddStringToObject(cJSON_AddObjectToObject(m, "origin"), "kind", "human");
            cJSON_AddStringToObject(m, "prompt", text);
        } else {
            char *wrapped = NULL;
            if (kind == K_SHELL) {
                size_t cap = strlen(text) + 32;
                if (!(wrapped = malloc(cap))) { /* out of memory: the line is not written */
                    cJSON_Delete(l);
                    return;
                }
                snprintf(wrapped, cap, "<bash-stdout>%s</bash-stdout>", text);
            }
            cJSON_AddStringToObject(l, "type", kind == K_REPLY ? "assistant" : "user");
            if (kind == K_SUMMARY)
                cJSON_AddTrueToObject(l, "isCompactSummary");
            m = cJSON_AddObjectToObject(l, "message");
            cJSON_AddStringToObject(m, "role", kind == K_REPLY ? "assistant" : "user");
            if (kind == K_PROMPT || kind == K_SUMMARY || kind == K_SHELL) {
                cJSON_AddStringToObject(m, "content", wrapped ? wrapped : text);
            } else {
                if (kind == K_REPLY)
                    cJSON_AddStringToObject(m, "id", id);
                b = one_block(m, "content");
                if (kind == K_TOOL) {
                    cJSON_AddStringToObject(b, "type", "tool_result");
                    cJSON_AddStringToObject(b, "tool_use_id", id);
                    cJSON_AddStringToObject(b, "content", text);
                } else {
                    cJSON_AddStringToObject(b, "type", "text");
                    cJSON_AddStringToObject(b, "text", kind == K_INTERRUPT ? "[Request interrupted by user]" : text);
                }
            }
            free(wrapped);
        }
    }
    char *out = cJSON_PrintUnformatted(l);
    if (out)
        fprintf(f, "%s\n", out);
    free(out);
    cJSON_Delete(l);
    fflush(f);
}

enum { SAID_RUMINATION = 1, SAID_SYCOPHANCY = 2 };

/* 1 if s[0..n) holds w. */
static int memmem_s(const char *s, size_t n, const char *w)
{
    size_t l = strlen(w);
    for (size_t i = 0; i + l <= n; i++)
        if (!memcmp(s + i, w, l))
            return 1;
    return 0;
}

/* The hook's answer for one event: which detectors spoke to the person. */
static int spoke(const char *event, const char *sid, const char *key, const char *text, const char *transcript,
                 enum host host, const struct profile *p, const char *state)
{
    cJSON *in = cJSON_CreateObject();
    cJSON_AddStringToObject(in, "hook_event_name", event);
    cJSON_AddStringToObject(in, "session_id", sid);
    cJSON_AddStringToObject(in, "transcript_path", transcript);
    cJSON_AddStringToObject(in, key, text);
    if (!strcmp(event, "Stop") || !strcmp(event, "AfterAgent"))
        cJSON_AddFalseToObject(in, "stop_hook_active");
    char *raw = cJSON_PrintUnformatted(in);
    cJSON_Delete(in);
    char *out = raw ? hook_answer(raw, strlen(raw), event,
                                  host == H_CODEX        ? HOOK_HOST_CODEX
                                      : host == H_GEMINI ? HOOK_HOST_GEMINI
                                                         : HOOK_HOST_CLAUDE,
                                  p, state)
                    : NULL;
    cJSON *o = out ? cJSON_Parse(out) : NULL;
    const char *msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "systemMessage"));
    /* "keel (rumination, sycophancy): ..." — the detectors that spoke, each line. */
    int said = 0;
    for (const char *m = msg; m && (m = strstr(m, "keel (")); m += 6) {
        const char *end = strchr(m, ')');
        size_t n = end ? (size_t)(end - m) : 0;
        if (n && memmem_s(m, n, "rumination"))
            said |= SAID_RUMINATION;
        if (n && memmem_s(m, n, "sycophancy"))
            said |= SAID_SYCOPHANCY;
    }
    cJSON_Delete(o);
    free(out);
    free(raw);
    return said;
}

static void rm_tree(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[PATH_MAX + 256];
    while (d && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

/* Replays one session into its split's figures. */
static void replay(const cJSON *s, enum host host, const struct profile *p, struct sstats *st)
{
    const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "id"));
    const char *start = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "start"));
    int64_t at;
    if (!id || !start || tf_parse_rfc3339(start, &at, NULL) < 0)
        return;
    char dir[PATH_MAX], transcript[PATH_MAX + 32];
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/keel-eval-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        return;
    snprintf(transcript, sizeof transcript, "%s/transcript.jsonl", dir);
    FILE *f = fopen(transcript, "w");
    if (!f) {
        rm_tree(dir);
        return;
    }
    st->sessions++;
    const char *ask_event = host == H_GEMINI ? "BeforeAgent" : "UserPromptSubmit",
               *reply_event = host == H_GEMINI ? "AfterAgent" : "Stop",
               *reply_key = host == H_GEMINI ? "prompt_response" : "last_assistant_message";
    /* Each episode: the asks seen, and the first ask advised. */
    struct {
        char id[64];
        int asks, advised;
    } ep[16];
    int nep = 0, turn = 0;
    char so_far[4096]; /* the prompts so far, as a compaction's summary lists them */
    size_t so_far_n = (size_t)snprintf(so_far, sizeof so_far,
                                       "This session is being continued from a previous conversation that ran out of "
                                       "context. The conversation is summarized below:\nAll user messages:");
    const cJSON *t;
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(s, "turns")) {
        const char *prompt = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "prompt"));
        const char *reply = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "reply"));
        const char *episode = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "episode"));
        int ask = (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(t, "ask"));
        double minutes = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(t, "minutes"));
        if (!prompt)
            continue;
        at += (int64_t)((minutes > 0 && minutes < 10000 ? minutes : 0) * 60000);
        turn++;
        st->prompts++;
        /* what the host wrote since the last reply that is not this prompt */
        if (turn == 20 && host == H_CLAUDE)
            line(f, host, K_SUMMARY, so_far, at - 40000, turn);
        if (turn % 7 == 0 && host == H_CLAUDE)
            line(f, host, K_SHELL, prompt, at - 30000, turn);
        if (turn % 11 == 10) { /* typed, cut off with Esc, typed again */
            line(f, host, K_PROMPT, prompt, at - 20000, turn + 5000); /* a message of its own */
            line(f, host, K_INTERRUPT, "", at - 15000, turn);
        }
        /* Claude Code and Codex write the prompt before the hook runs; Gemini
         * CLI after, with what the hook added beside it */
        if (host == H_CODEX)
            line(f, host, K_QUEUED, prompt, at, turn);
        if (host != H_GEMINI)
            line(f, host, host == H_CLAUDE && turn % 6 == 5 ? K_QUEUED : K_PROMPT, prompt, at, turn);
        chrono_replay_at(at + 500);
        int said = spoke(ask_event, id, "prompt", prompt, transcript, host, p, dir);
        if (host == H_GEMINI) {
            line(f, host, K_PROMPT, prompt, at, turn);
            if (said || turn % 4 == 0) /* written again: with the hook's context, or as it changed */
                line(f, host, K_PROMPT, prompt, at, turn);
        }
        if (turn % 3 == 0)
            line(f, host, K_TOOL, prompt, at + 10000, turn);
        int k = snprintf(so_far + so_far_n, sizeof so_far - so_far_n, " %d. %s", turn, prompt);
        if (k > 0 && (size_t)k < sizeof so_far - so_far_n) /* else the summary ends before this prompt */
            so_far_n += (size_t)k;
        else
            so_far[so_far_n] = '\0';
        int advised = said != 0, rum = said & SAID_RUMINATION;
        int e = -1;
        for (int i = 0; episode && i < nep; i++)
            if (!strcmp(ep[i].id, episode))
                e = i;
        if (episode && e < 0 && nep < 16) {
            e = nep++;
            snprintf(ep[e].id, sizeof ep[e].id, "%s", episode);
            ep[e].asks = ep[e].advised = 0;
        }
        if (e >= 0 && ask > ep[e].asks)
            ep[e].asks = ask;
        if (e >= 0 && ask >= 2 && advised && !ep[e].advised)
            ep[e].advised = ask;
        if (advised && !(e >= 0 && ask >= 2)) {
            st->false_adv++;
            show(st, "false advisory: %s, prompt %d (%s)", id, turn, rum ? "rumination" : "sycophancy");
        }
        if (reply) {
            int labelled = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(t, "sycophantic_reply"));
            line(f, host, K_REPLY, reply, at + 30000, turn);
            chrono_replay_at(at + 31000);
            int said_r = spoke(reply_event, id, reply_key, reply, transcript, host, p, dir) & SAID_SYCOPHANCY;
            st->replies++;
            st->syc_labelled += labelled;
            st->syc_caught += labelled && said_r;
            st->syc_false += !labelled && said_r;
            if (!labelled && said_r)
                show(st, "sycophancy on a plain reply: %s, turn %d%s", id, turn, "");
        }
    }
    for (int i = 0; i < nep; i++) {
        if (ep[i].asks < 2)
            continue;
        st->episodes++;
        st->by3 += ep[i].advised && ep[i].advised <= 3;
        st->by4 += ep[i].advised && ep[i].advised <= 4;
        if (!ep[i].advised || ep[i].advised > 4)
            show(st, "episode not advised by its 4th ask: %s, %d asks (%s)", id, ep[i].asks, ep[i].id);
    }
    fclose(f);
    chrono_replay_at(0);
    rm_tree(dir);
}

static int load_dir(const char *dir, char **paths, int *n, int depth)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    struct dirent *e;
    while ((e = readdir(d)) && *n < SESSIONS_MAX) {
        if (e->d_name[0] == '.')
            continue;
        char p[1024];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        size_t l = strlen(e->d_name);
        if (l > 5 && !strcmp(e->d_name + l - 5, ".json"))
            paths[(*n)++] = strdup(p);
        else if (depth == 0)
            load_dir(p, paths, n, 1);
    }
    closedir(d);
    return 0;
}

static int by_path(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void row(int md, const char *what, const char *dev, const char *test)
{
    printf(md ? "| %s | %s | %s |\n" : "  %-44s %14s %14s\n", what, dev, test);
}

int eval_sessions(const char *dir, int markdown, const struct eval_floors *fl, const struct profile *p, int misses)
{
    static char *paths[SESSIONS_MAX];
    int n = 0;
    if (load_dir(dir, paths, &n, 0) < 0 || !n) {
        fprintf(stderr, "keel: no sessions (*.json) in %s\n", dir);
        return 64;
    }
    qsort(paths, (size_t)n, sizeof *paths, by_path);
    struct sstats st[2] = {{.name = "dev", .all = misses}, {.name = "test"}};
    int bad = 0;
    state_durable(0); /* each replay's state directory goes at its end */
    for (int i = 0; i < n; i++) {
        size_t len;
        char *text = read_regular(paths[i], 4u << 20, &len);
        cJSON *s = text ? cJSON_Parse(text) : NULL;
        const char *split = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "split"));
        if (!split || (strcmp(split, "dev") && strcmp(split, "test"))) {
            fprintf(stderr, "keel: %s: no \"split\" (dev or test): run scripts/corpus-split --sessions\n", paths[i]);
            bad = 1;
        } else {
            replay(s, i % 5 == 4 ? H_CODEX : i % 5 == 2 ? H_GEMINI : H_CLAUDE, p, &st[!strcmp(split, "test")]);
        }
        cJSON_Delete(s);
        free(text);
        free(paths[i]);
    }
    if (bad) {
        free(st[0].shown);
        return 64;
    }
    char d[2][64];
    printf(markdown ? "| hooks on whole sessions | dev | test |\n|---|---|---|\n"
                    : "hooks on whole sessions%22s %14s %14s\n",
           "", "dev", "test");
    for (int k = 0; k < 2; k++)
        snprintf(d[k], sizeof d[k], "%d / %d", st[k].sessions, st[k].prompts);
    row(markdown, "sessions / prompts", d[0], d[1]);
    for (int k = 0; k < 2; k++)
        snprintf(d[k], sizeof d[k], "%.2f (%d)", st[k].prompts ? 100.0 * st[k].false_adv / st[k].prompts : 0.0,
                 st[k].false_adv);
    row(markdown, "false advisories per 100 prompts", d[0], d[1]);
    for (int k = 0; k < 2; k++)
        snprintf(d[k], sizeof d[k], "%d / %d", st[k].by3, st[k].episodes);
    row(markdown, "episodes advised by the 3rd ask", d[0], d[1]);
    for (int k = 0; k < 2; k++)
        snprintf(d[k], sizeof d[k], "%d / %d", st[k].by4, st[k].episodes);
    row(markdown, "episodes advised by the 4th ask", d[0], d[1]);
    for (int k = 0; k < 2; k++)
        snprintf(d[k], sizeof d[k], "%d / %d", st[k].syc_false, st[k].replies - st[k].syc_labelled);
    row(markdown, "sycophancy on plain replies", d[0], d[1]);
    for (int k = 0; k < 2; k++)
        snprintf(d[k], sizeof d[k], "%d / %d", st[k].syc_caught, st[k].syc_labelled);
    row(markdown, "sycophantic replies advised", d[0], d[1]);
    if (st[0].shown && !markdown)
        fputs(st[0].shown, stdout);
    free(st[0].shown);
    /* Floors: at most max_fa false advisories per 100 prompts, at least min_by4 of episodes by the 4th ask. */
    double max_fa = fl->sess_fa, min_by4 = fl->sess_share;
    const struct sstats *t = &st[1];
    double fa = t->prompts ? 100.0 * t->false_adv / t->prompts : 0,
           by4 = t->episodes ? (double)t->by4 / t->episodes : 1;
    if (fa > max_fa || by4 < min_by4) {
        fprintf(stderr,
                "keel: sessions on test are below the floor: %.2f false advisories per 100 prompts (at "
                "most %.2f), %.2f of episodes advised by the 4th ask (at least %.2f)\n",
                fa, max_fa, by4, min_by4);
        return 1;
    }
    return 0;
}
