/* loop.h: is the agent going round in circles with its tools?
 *
 * A tool call is the agent's action, not the person's question, so calls are
 * compared by what they do, never by the words they share: a call is its
 * tool and canonical arguments (object keys sorted, numbers in one form,
 * _meta and progress tokens dropped), hashed; its outcome is a hash of the
 * result the client gets, or of the error. Reading twenty different files is
 * twenty different calls. The same call answered the same way again and again
 * is a loop; answered differently each time (a job being polled, a file that
 * changed, the next page) it is progress.
 *
 * Four patterns, over a window the caller keeps (time and count bounded):
 *   repeat       the same call, the same result, for the Nth time in a row
 *                (of that call), with nothing seen to change in between: a
 *                call made earlier whose answer came back different (a
 *                debugger's next step, a file read after it was written) ends
 *                the count, and so does a wait of poll_ms or more with no
 *                other call in it (a job polled now and then is waited on,
 *                not looped on);
 *   same_error   the same tool failing with the same error text (all of it,
 *                numbers and ids made one), whatever the arguments, with no
 *                success of that tool in between;
 *   reasked      the same tool giving the same non-empty result to calls that
 *                differ only in free text (a question reworded, the answer
 *                the same), every path, id, number and one-word value equal;
 *   alternation  A, B, A, B, A, B, each call's result unchanged.
 * The first advisory comes when a pattern reaches its threshold; while it
 * goes on, the next only after as many further repeats again.
 *
 * Pure: no clock, no state of its own. The caller hands in the window (the
 * calls before this one, oldest first) and the call. */
#ifndef KEEL_LOOP_H
#define KEEL_LOOP_H

#include <stddef.h>
#include <stdint.h>

enum { LOOP_NONE, LOOP_REPEAT, LOOP_SAME_ERROR, LOOP_REASKED, LOOP_ALTERNATION };
extern const char *const loop_kind_names[]; /* "none", "repeat", "same_error", "reasked", "alternation" */

enum {
    LOOP_EMPTY = 1u << 0, /* the result carries nothing (no content, no structuredContent) */
    LOOP_FREE_TEXT = 1u << 1, /* the arguments hold free text (shape differs from id) */
    LOOP_CHANGED = 1u << 2, /* set by loop_observe: this call's answer differs from the last
                                      * time it was made, so the world it reads has moved */
};

struct loop_call {
    int64_t at; /* when it was made, ms */
    uint64_t tool; /* hash of the tool's name */
    uint64_t id; /* tool + canonical arguments */
    uint64_t shape; /* the same with free-text strings blanked */
    uint64_t result; /* the outcome: result or JSON-RPC error */
    uint64_t error; /* hash of the error's text; 0: it did not fail */
    unsigned flags; /* LOOP_* */
};

struct loop_params {
    int repeat_threshold; /* repeats: the call comes back this many times more (3: the 4th) */
    int error_threshold; /* failures with one error (3) */
    int reask_threshold; /* same answers to reworded calls (4) */
    int alternation_calls; /* A, B, A, B... calls (6) */
    int64_t poll_ms; /* the same call again after this long, nothing else made in
                                      * between, is a poll, not a repeat (60 s) */
    int64_t window_ms; /* only calls this recent count (30 min) */
    int window_calls; /* and only this many of the last ones (50; 2 at least: the profile allows 5 to 200) */
};
void loop_default_params(struct loop_params *p);

struct loop_finding {
    int kind; /* LOOP_* when advised, or a same error (2+) or an alternation under way; else LOOP_NONE */
    int count; /* calls in the pattern, this one included */
    int advise; /* 1 when this call should carry an advisory */
    int64_t first_at; /* when the pattern's first call was made (0 with LOOP_NONE) */
    size_t other; /* alternation: index in hist of a call of the other tool */
    double confidence;
    int changed; /* the last time this call was made it was answered differently */
};

/* hist: the window before cur, oldest first (entries older than the window
 * or beyond its count are ignored). */
void loop_check(const struct loop_call *hist, size_t n, const struct loop_call *cur, const struct loop_params *p,
                struct loop_finding *f);

/* The window a caller keeps: the calls, oldest first, as hashes and times,
 * with their tool names for the reason. No text of any call is kept. */
struct loop_window {
    struct loop_call *v; /* the n calls, oldest first */
    char (*tool)[64];
    size_t n;
    struct loop_call *base; /* v points into base[0..cap) */
    char (*tool_base)[64];
    size_t cap;
};

/* Drops calls older than the window, checks c against the rest, and adds it
 * (dropping the oldest past window_calls). *other gets the other tool of an
 * alternation. -1 when out of memory (nothing added, f says no loop). */
int loop_observe(struct loop_window *w, const struct loop_params *p, const struct loop_call *c, const char *tool,
                 struct loop_finding *f, char other[64]);
/* Forgets the first upto calls (all: the window is empty). */
void loop_forget(struct loop_window *w, size_t upto);
void loop_window_free(struct loop_window *w);

/* 1 if the string s[0..n) is free text: words a person or model wrote (it
 * holds a space and is not a path or URI), blanked in a call's shape. The
 * caller that reads a call's arguments (relay_identify) builds id and shape:
 * tool + canonical arguments, object members in any order, numbers by value,
 * _meta and progressToken left out. */
int loop_free_text(const char *s, size_t n);

/* The plain-language reason for a finding: tool (and other_tool for an
 * alternation) named, the count and how long it took. */
void loop_reason(const struct loop_finding *f, const char *tool, const char *other_tool, int64_t now_ms, char *buf,
                 size_t n);

extern const char loop_description[];

#endif
