/* overlay.h: the detectors, run on live traffic in keel wrap.
 *
 * The person gets the nudge without the model having to remember to ask.
 * As messages pass, the overlay keeps (in memory only) the identities and
 * result hashes of recent tool calls for the loop detector, the person's
 * messages inside sampling requests for rumination and reassurance, watches
 * the session's length, and reads the model's text in sampling responses and
 * in results of model-backed tools. What it finds becomes an advisory attached
 * to a tools/call result going to the client: one text block for the person
 * and the same advisories, structured, under _meta["keel/advisories"]. It
 * never blocks, never logs content, never writes it to disk. */
#ifndef KEEL_OVERLAY_H
#define KEEL_OVERLAY_H

#include "chrono.h"
#include "guard.h"
#include "loop.h"
#include "state.h"
#include "text.h"

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

enum {
    OV_RUMINATION = 1u << 0,
    OV_HYPERFOCUS = 1u << 1,
    OV_SYCOPHANCY = 1u << 2,
    OV_RULES = 1u << 3,
    OV_LOOP = 1u << 4,
    OV_ALL = 31u,
};

#define OV_TEXT_MAX  8000 /* characters of a person's message read */
#define OV_SCAN_MAX  16000 /* characters of a model's text read for sycophancy */
/* An advisory less sure than this is not put to the person (keel wrap: in
 * _meta only; keel hook: not said). */
#define OV_SPEAK_MIN 0.5

#define OV_ASKS_MAX    20 /* the person's messages kept, the newest among them */
#define OV_EPISODE_MAX OV_ASKS_MAX

struct ov_ask { /* a message of the person's, from a sampling request */
    char *text;
    int64_t at;
};

struct overlay {
    unsigned parts; /* OV_* switched on */
    const struct profile *profile;
    const char *state_dir;
    char **model_tools; /* globs of model-backed tools */
    int nmodel_tools;
    char **loop_exempt; /* globs of tools the loop detector never counts (--loop-exempt) */
    int nloop_exempt;
    struct loop_params loop;
    struct loop_window calls; /* the loop window, oldest first: hashes and times only */
    cJSON *queued; /* advisories waiting for the next result */
    cJSON *last[DET_COUNT]; /* the last advisory of each detector, with what matched */
    cJSON *pins_unseen; /* a pins advisory still in the queue, with what it names: last[DET_PINS] (what
                           approve-tool approves) once it has gone out */
    struct guard_view view; /* the shared guard, re-read when the file changes */
    int view_warned; /* the guard could not be read, and that was logged */
    int64_t conversation_at; /* when this conversation began: overrides given before it do not hold */
    char conversation[24]; /* which one it is (keel hook: the host's session id, hashed); "" unknown */
    const uint64_t *gen; /* the state file's write generation, mapped (NULL: read every time) */
    int gen_tried;
    uint64_t view_gen; /* the generation view was read at */
    int64_t view_at;
    int view_ok;
    int local_disabled[DET_COUNT]; /* disable-for-session with no session: until keel exits */
    char hyp_key[96]; /* the last hyperfocus rung this process saw advised */
    int hyp_level;
    int64_t hyp_at;
    struct ov_ask *asks; /* the person's recent messages (from sampling), oldest first */
    size_t nasks;
    /* The asks of the last rumination found in this conversation, the prompt
     * it was found on included (hashes of their texts, ov_ask_hash): a later
     * one that matches any of them is the same episode, and its message
     * counts them all. keel hook keeps them in its state file. */
    uint64_t episode[OV_EPISODE_MAX];
    size_t nepisode;
    int episode_changed; /* rumination was found on this prompt: episode is its asks */
};

/* The hash of an ask's text, as episode keeps it. */
uint64_t ov_ask_hash(const char *text, size_t n);

void overlay_init(struct overlay *ov, const struct profile *p, const char *state_dir, unsigned parts,
                  char **model_tools, int nmodel_tools, char **loop_exempt, int nloop_exempt);
void overlay_free(struct overlay *ov);

/* The overlay apply_override reaches (NULL under keel serve). */
extern struct overlay *overlay_current;

/* A tools/call on its way to the upstream: 1 when the loop detector watches
 * it, *c cleared and its time set (the caller adds its identity, and its
 * result when it comes back). */
int overlay_on_call(struct overlay *ov, const char *tool, struct loop_call *c);

/* keel hook: an earlier prompt of the person's (from the host's transcript,
 * oldest first, at in ms), the prompt just submitted (checked as a sampling
 * request's message is: rumination, repeated reassurance), and the model's
 * final reply (sycophancy). Advisories wait in ov->queued; overlay_for_result
 * with no call collects them, and hyperfocus's. */
void overlay_add_ask(struct overlay *ov, const char *text, size_t n, int64_t at);
void overlay_on_prompt(struct overlay *ov, const char *text, size_t n);
void overlay_on_reply(struct overlay *ov, const char *text, size_t n);

/* A sampling/createMessage request from the upstream, and the client's answer. */
void overlay_on_sampling_request(struct overlay *ov, const cJSON *params);
void overlay_on_sampling_result(struct overlay *ov, const cJSON *result);

/* The upstream answered a tools/call for tool: call is its identity with the
 * outcome filled in (NULL when the loop detector does not watch it), text the
 * result's text when the caller read it (model-backed tools). Returns the
 * advisories to attach, or NULL. */
cJSON *overlay_for_result(struct overlay *ov, const char *tool, const struct loop_call *call, const char *text);

/* 1 if tool is model-backed (--model-tools). */
int overlay_is_model_tool(const struct overlay *ov, const char *tool);

/* Tools of this server held back by their pins (judge/pins.h): an advisory
 * for the person, naming them, with approve-tool; it waits for the next
 * result. names: a JSON array of tool names. */
void overlay_pins_held(struct overlay *ov, const char *server, const cJSON *names);

/* Keeps advisories that could not be attached for the next result. */
void overlay_requeue(struct overlay *ov, cJSON *advisories);

/* 1 when an advisory is sure enough to be put to the person (OV_SPEAK_MIN):
 * keel wrap's text block and keel hook's message take only those. */
int overlay_says(const cJSON *advisory);

/* The text block for a person: reasons and override tokens of the advisories
 * overlay_says takes; NULL when none qualifies. Caller frees. */
char *overlay_text(const cJSON *advisories);
/* A rules advisory about to be given (annotate.c, or a sampling answer's):
 * 0 when the person turned rules off in this conversation
 * (disable-for-session) or an override-once for rules waits (taken now);
 * else it is this process's last rules advisory, for explain-the-match,
 * and 1. */
int overlay_rules_speak(struct overlay *ov, const cJSON *a);
/* A copy of advisory a kept as det's last (for explain-the-match), in place
 * of the one before; the copy (NULL when out of memory). */
cJSON *overlay_remember(struct overlay *ov, int det, const cJSON *a);
/* At most max_chars characters and max_words words of UTF-8 s[0..n) into q
 * (cap bytes, NUL-terminated), as plain text the person reads in their
 * terminal: white space, control characters and line breaks as one space,
 * format characters (bidi overrides, zero-width spaces) left out. 1 when s
 * goes on past what was quoted. */
int overlay_quote(const char *s, size_t n, size_t max_chars, size_t max_words, char *q, size_t cap);

/* apply_override, the tool. */
int overlay_apply_override(const cJSON *args, const struct chrono_env *env, cJSON **out, kerr *e);
/* A check tool's result that found something (check_rumination,
 * check_sycophancy, check_hyperfocus past none), kept for explain-the-match
 * in this process. */
void overlay_note_check(int det, const cJSON *result);

#endif
