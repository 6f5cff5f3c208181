/* overlay.h: the detectors, run on live traffic in keel wrap.
 *
 * The person gets the nudge without the model having to remember to ask.
 * As messages pass, the overlay remembers (in memory only) the tool calls of
 * the rumination window, watches the session's length, and reads the model's
 * text in sampling responses and in results of model-backed tools. What it
 * finds becomes an advisory attached to the next tools/call result going to
 * the client: one text block for the person and the same advisories,
 * structured, under _meta["keel/advisories"]. It never blocks, never logs
 * content, never writes it to disk. */
#ifndef KEEL_OVERLAY_H
#define KEEL_OVERLAY_H

#include "chrono.h"
#include "guard.h"
#include "state.h"
#include "text.h"

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

enum { OV_RUMINATION = 1u << 0, OV_HYPERFOCUS = 1u << 1, OV_SYCOPHANCY = 1u << 2, OV_RULES = 1u << 3, OV_ALL = 15u };

#define OV_MEMORY_MAX 128        /* remembered calls, at most */
#define OV_TEXT_MAX 8000         /* characters of arguments or text read per message */
#define OV_SCAN_MAX 16000        /* characters of a model's text read for sycophancy */

struct ov_item;

struct overlay {
    unsigned parts;                  /* OV_* switched on */
    const struct profile *profile;
    const char *state_dir;
    char **model_tools;              /* globs of model-backed tools */
    int nmodel_tools;
    struct ov_item *mem;             /* the rumination window, oldest first: mem[0 .. nmem) */
    struct ov_item *memblock;        /* where mem lives; forgetting moves mem on, not the items */
    size_t nmem, capmem;
    uint64_t next_tool_id;           /* the last tool id handed out (ov_item.tool_id) */
    cJSON *queued;                   /* advisories waiting for the next result */
    cJSON *last[DET_COUNT];          /* the last advisory of each detector, with what matched */
    struct guard_view view;          /* the shared guard, re-read when the file changes */
    struct state_stamp view_stamp;   /* the state file as view was read from it */
    int64_t view_at;
    int view_ok;
    int local_disabled[DET_COUNT];   /* disable-for-session with no session: until keel exits */
    char hyp_key[96];                /* the last hyperfocus rung this process saw advised */
    int hyp_level;
    int64_t hyp_at;
    char **asks;                     /* the person's recent messages (from sampling), for reassurance */
    size_t nasks;
    struct text_words words;         /* scratch, reused */
    char *scratch;                   /* OV_TEXT_MAX * 4 + 1 bytes, reused */
};

void overlay_init(struct overlay *ov, const struct profile *p, const char *state_dir, unsigned parts, char **model_tools,
                  int nmodel_tools);
void overlay_free(struct overlay *ov);

/* The overlay apply_override reaches (NULL under keel serve). */
extern struct overlay *overlay_current;

/* A tools/call to the upstream: remembered; returns the advisories it earns
 * (to go on its result), or NULL. */
cJSON *overlay_on_call(struct overlay *ov, const char *tool, const cJSON *arguments);

/* A sampling/createMessage request from the upstream, and the client's answer. */
void overlay_on_sampling_request(struct overlay *ov, const cJSON *params);
void overlay_on_sampling_result(struct overlay *ov, const cJSON *result);

/* The upstream answered a tools/call (for tool; earned: what overlay_on_call
 * returned, taken over). Returns the advisories to attach, or NULL. text is
 * the result's text, when the caller read it (model-backed tools). */
cJSON *overlay_for_result(struct overlay *ov, const char *tool, cJSON *earned, const char *text);

/* 1 if tool is model-backed (--model-tools). */
int overlay_is_model_tool(const struct overlay *ov, const char *tool);

/* Keeps advisories that could not be attached for the next result. */
void overlay_requeue(struct overlay *ov, cJSON *advisories);

/* The text block for a person: reasons and override tokens of the advisories
 * with confidence >= 0.5; NULL when none qualifies. Caller frees. */
char *overlay_text(const cJSON *advisories);

/* fresh-context: forgets the remembered calls (rumination) or requests for
 * reassurance (sycophancy) of this process at once. */
void overlay_forget(struct overlay *ov, int det);

/* apply_override, the tool. */
int overlay_apply_override(const cJSON *args, const struct chrono_env *env, cJSON **out, kerr *e);

#endif
