/* detect.h: what every detector shares.
 *
 * Argument readers that validate one field against the contract and fail with
 * the contract's error codes, and builders for the parts every output carries
 * (heuristic, override_options, false_positive_feedback_path). A detector is a
 * pure function from (arguments, now) to a cJSON result or a kerr. */
#ifndef KEEL_DETECT_H
#define KEEL_DETECT_H

#include "kerr.h"

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

/* The signature of every keel tool implementation. now_ms/offset_s is the
 * caller's clock reading; detectors that take time from their arguments
 * ignore it. On success *out is the structured result. *out may borrow
 * strings from args (check_rumination quotes the similar prompts by
 * reference, not by copy): delete *out before args. */
typedef int (*detector_fn)(const cJSON *args, int64_t now_ms, int offset_s, cJSON **out, kerr *e);

int rum_check(const cJSON *args, int64_t now_ms, int offset_s, cJSON **out, kerr *e);
int hyp_check(const cJSON *args, int64_t now_ms, int offset_s, cJSON **out, kerr *e);
int syc_check(const cJSON *args, int64_t now_ms, int offset_s, cJSON **out, kerr *e);
int insp_check(const cJSON *args, int64_t now_ms, int offset_s, cJSON **out, kerr *e);
/* Rumination's core, for callers that hold the prompts as text (the
 * overlay, the hook): check_rumination (rum_check) checks its JSON arguments
 * and calls it. */
struct rum_item {
    const char *t; /* valid UTF-8, at most 8,000 code points */
    size_t n;
    int64_t at; /* when it was asked, ms since the epoch; oldest first */
};
struct rum_query {
    const char *prompt; /* the current prompt, valid UTF-8 */
    size_t n;
    const struct rum_item *hist;
    size_t nhist;
    long window_min; /* 1..1440 */
    long threshold; /* earlier asks that make a detection, 2 and up (the tool: 2..50) */
    long plea_threshold; /* taken instead when below threshold and the prompt
                          * pleads for reassurance or says it asks again; 0: none */
    double similarity; /* 0..1 */
    int only_asks; /* only an ask can be asked again (the person's prompts) */
};
struct rum_match {
    size_t index; /* into hist */
    double sim;
};
enum { RUM_NONE, RUM_SOME, RUM_DETECTED, RUM_COMMAND, RUM_STATEMENT, RUM_FOLLOWUP };
struct rum_result {
    struct rum_match *match; /* in: room for nhist; out: the first count, most similar first when detected */
    size_t count;
    int detected;
    int kind; /* RUM_*: why it is or is not a detection */
    double best, confidence;
    long threshold; /* the earlier asks it took: q->threshold, or q->plea_threshold for a plea */
};
cJSON *rum_heuristic(void); /* its heuristic member, as the tool gives it */
/* 0, or -1 out of memory. */
int rum_run(const struct rum_query *q, int64_t now_ms, struct rum_result *r);

/* Sycophancy's core, for callers that hold the texts (the overlay):
 * check_sycophancy (syc_check) checks its JSON arguments and calls it. */
struct syc_query {
    const char *resp; /* the model's reply, or NULL; valid UTF-8, at most 16,000 code points */
    size_t resp_n;
    const char *ctx; /* the decision, or NULL; at most 2,000 code points */
    size_t ctx_n;
    const char *const *msgs; /* the person's recent messages, oldest first; each at most 8,000 */
    size_t nmsgs; /* at most 200 */
    int has_msgs; /* the messages were given (an empty list is given) */
};
enum { SYC_NONE = -1, SYC_AGREEMENT, SYC_PRAISE, SYC_CASCADE, SYC_REASSURANCE };
struct syc_span {
    int msg; /* -1: the reply; else the message's index */
    size_t a, b; /* bytes */
    int pattern; /* SYC_* */
};
struct syc_result {
    int pattern; /* SYC_*: the strongest that fired */
    double confidence;
    size_t reassure; /* reassurance requests counted on one decision */
    size_t nhits; /* agreement and praise phrases in the reply */
    size_t nspans; /* what fired, when something did */
    struct syc_span span[64 + 200];
};
int syc_run(const struct syc_query *q, struct syc_result *r); /* 0, or -1 out of memory */
/* 1 when a message of the person's is itself a plea to be told a decision
 * is fine: a reassurance phrase, a sign of asking again, a question ending in
 * a tag that asks for yes ("..., right?"), or a verdict word in a sentence
 * that asks ("Is the migration safe to run?"); an "Ok." that acknowledges the
 * last answer before another request is not one. 0, or -1 out of memory. */
int syc_plea(const char *t, size_t n);
void syc_load(void); /* loads the phrase tables now, as the first check would */
/* What s[0..n) is when it is one Han or kana character, a word of its own in
 * text.h and a part of a word to a reader: SYC_CJK_NAMES when it can be part
 * of a name for a thing (a Han character, katakana), SYC_CJK_GRAMMAR when not
 * (hiragana, the particles and function characters of Chinese); 0 when it is
 * no such character. A reassurance request's subject words in Chinese and
 * Japanese are pairs of the first kind. */
enum { SYC_CJK_NAMES = 1, SYC_CJK_GRAMMAR = 2 };
int syc_cjk_kind(const char *s, size_t n);
const char *syc_pattern_name(int pattern); /* "none" for SYC_NONE */
void syc_reason(const struct syc_query *q, const struct syc_result *r, char *buf, size_t n);
cJSON *syc_spans(const struct syc_query *q, const struct syc_result *r); /* matched_spans; NULL out of memory */
cJSON *syc_heuristic(void);

/* A day of the person's begins at 05:00 local: the hours before are the
 * evening of the day before (an end of day of "01:30" on a Saturday falls in
 * the small hours of Sunday). */
#define HYP_DAY_START_MIN 300

/* End of day for check_hyperfocus and get_time_context: has now passed the
 * end of day (eod_min, local minutes) of the day the session started (or of
 * today without a session; a day begins at HYP_DAY_START_MIN, its date read
 * in offset off), placed in offset eod_off (the offset the day began in: the
 * hour a clock goes back repeats no end of day passed)? A session started
 * after that end of day is past it from its start. Sets *since_s to the
 * seconds since. */
int hyp_past_eod(int64_t now_ms, int off, int eod_off, const int64_t *started_ms, int eod_min, int64_t *since_s);

/* The hyperfocus ladder on its own, for check_hyperfocus and the overlay. */
enum { HYP_NONE, HYP_GENTLE, HYP_NUDGE, HYP_HARD };
struct hyp_eval {
    int level; /* HYP_* */
    int raised; /* one rung firmer for the end of day */
    int past_eod;
    int64_t since_eod_s;
    int64_t elapsed_s;
    int stepped_down; /* the person is away: a level became none */
};
extern const char hyp_description[];
/* elapsed_s: the caller's measure of the session's length (-1: now - started). */
void hyp_evaluate(int64_t now_ms, int off, int eod_off, const int64_t *started_ms, int64_t elapsed_s, long gentle,
                  long nudge, long hard, int eod_min, int away, struct hyp_eval *ev);
void hyp_reason(const struct hyp_eval *ev, long gentle, long nudge, long hard, int activity, char *buf, size_t n);
size_t hyp_tokens(const struct hyp_eval *ev, const char **tok); /* tok holds 6 */
const char *hyp_level_name(int level);

/* Confidence of a detection whose matches average mean_sim against threshold. */
double rum_confidence(double mean_sim, double threshold);

/* Rejects members of obj not in the NULL-terminated list (INPUT_INVALID). */
int det_known_keys(const cJSON *obj, const char *const *keys, const char *prefix, kerr *e);

/* A string member. Returns 1 when present (s, n set), 0 when absent and not
 * required, -1 on error: wrong type or bad UTF-8 (INPUT_INVALID), missing
 * (missing_code), more than max_chars code points (INPUT_TOO_LARGE). */
int det_string(const cJSON *obj, const char *key, const char *field, int required, const char *missing_code,
               size_t max_chars, const char **s, size_t *n, kerr *e);

/* An integer member in [lo, hi], def when absent; range_code when outside. */
int det_int(const cJSON *obj, const char *key, const char *field, long lo, long hi, long def, const char *range_code,
            long *out, kerr *e);

/* A number member in [lo, hi], def when absent. */
int det_number(const cJSON *obj, const char *key, const char *field, double lo, double hi, double def, double *out,
               kerr *e);

/* An RFC 3339 timestamp member (required). */
int det_time(const cJSON *obj, const char *key, const char *field, int64_t *ms, int *off, kerr *e);

/* name, version and description must be static text: they are referenced,
 * not copied. The result is that object as raw JSON, printed once per process. */
cJSON *det_heuristic(const char *name, const char *version, const char *description);
/* Adds "override_options": [{token, description}...] for the given tokens. */
void det_overrides(cJSON *out, const char *const *tokens, size_t n);
void det_common(cJSON *out, double confidence, const char *reason, cJSON *heuristic);
double det_round(double x); /* to 3 decimals, for stable output */

#endif
