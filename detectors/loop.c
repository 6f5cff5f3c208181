/* loop.c: the agent-loop detector (see loop.h).
 *
 * The window holds hashes and times only, never the text of a call. Each
 * pattern is counted backwards from the newest call, in one pass over at most
 * window_calls entries. */
#include "loop.h"
#include "text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const loop_kind_names[] = {"none", "repeat", "same_error", "reasked", "alternation"};

const char loop_description[] =
    "Calls compared by identity (tool + canonical arguments) and outcome (a hash of the result): the same call with "
    "the same result again, the same error from one tool, the same answer to reworded free text, or A-B-A-B with "
    "nothing changing. Never by shared words.";

void loop_default_params(struct loop_params *p)
{
    p->repeat_threshold = 3;
    p->error_threshold = 3;
    p->reask_threshold = 4;
    p->alternation_calls = 6;
    p->poll_ms = 60000;
    p->window_ms = 30 * 60000LL;
    p->window_calls = 50;
}

/* --- identity ------------------------------------------------------------ */

/* Free text: words a person or model wrote (a query, a question), as opposed
 * to a path, URI, id or one-word value. Needs a space, and is not a path. */
static int has_scheme(const char *s, size_t n)
{
    for (const char *c = s; (c = memchr(c, ':', n - (size_t)(c - s))); c++)
        if ((size_t)(s + n - c) >= 3 && c[1] == '/' && c[2] == '/')
            return 1;
    return 0;
}

int loop_free_text(const char *s, size_t n)
{
    if (!memchr(s, ' ', n) && !memchr(s, '\t', n) && !memchr(s, '\n', n))
        return 0;
    if (s[0] == '/' || s[0] == '~' || s[0] == '.' || has_scheme(s, n) ||
        (n >= 3 && ((s[0] | 32) >= 'a' && (s[0] | 32) <= 'z') && s[1] == ':' && (s[2] == '\\' || s[2] == '/')))
        return 0;
    return 1;
}

/* --- patterns ------------------------------------------------------------ */

/* Advise at the threshold t, then after every step further calls. */
static int due(int count, int t, int step)
{
    return count >= t && (count - t) % (step > 0 ? step : 1) == 0;
}

void loop_check(const struct loop_call *hist, size_t n, const struct loop_call *cur, const struct loop_params *p,
                struct loop_finding *f)
{
    memset(f, 0, sizeof *f); /* every kind sets its own first_at */
    size_t lo = 0;
    if (n >= (size_t)p->window_calls)
        lo = n - ((size_t)p->window_calls - 1);
    while (lo < n && hist[lo].at < cur->at - p->window_ms)
        lo++;

    /* One pass back over the window counts every pattern at once, and finds
     * the last time this call was made (did its answer change?). */
    int rep = 1, rep_on = 1, err = 1, err_on = cur->error != 0, ask = 1, ask_on = !(cur->flags & LOOP_EMPTY),
        ask_ids = 1, seen = 0, changed = 0;
    int64_t rep_at = cur->at, err_at = cur->at, ask_at = cur->at;
    size_t rep_i = n; /* where the last repeat counted is (n: cur) */
    uint64_t last_id = cur->id;
    for (size_t i = n; i-- > lo && (rep_on || err_on || ask_on || !seen);) {
        const struct loop_call *h = &hist[i];
        if (h->id == cur->id) {
            int same = h->result == cur->result && !h->error == !cur->error;
            if (!seen)
                seen = 1, changed = !same;
            if (rep_on && same && !(rep_i == i + 1 && rep_at - h->at >= p->poll_ms))
                rep++, rep_at = h->at, rep_i = i;
            else
                rep_on = 0; /* answered differently (progress), or waited for (a poll) */
        } else if (h->flags & LOOP_CHANGED) {
            rep_on = 0; /* something was seen to change since */
        }
        if (h->tool != cur->tool)
            continue;
        if (err_on) {
            if (!h->error)
                err_on = 0; /* the tool worked before this: the count ends there */
            else if (h->error == cur->error)
                err++, err_at = h->at;
        }
        if (ask_on && h->shape == cur->shape) {
            if (h->result == cur->result && !h->error)
                ask++, ask_at = h->at, ask_ids += h->id != last_id, last_id = h->id;
            else
                ask_on = 0;
        }
    }
    f->changed = changed;

    /* A, B, A, B...: the run of calls ending here that alternate between two
     * identities, each answered as it was the time before. s_k is the call k
     * places back (s_0 is this one). While such a run is on, it alone speaks:
     * its calls also repeat, and one loop earns one advisory. */
    size_t m = n - lo;
    if (m >= 1 && hist[n - 1].id != cur->id) {
        int run = 2;
        for (size_t k = 2; k <= m; k++) {
            const struct loop_call *h = &hist[n - k], *want = k % 2 ? &hist[n - 1] : cur;
            const struct loop_call *prev = k == 2 ? cur : &hist[n - k + 2];
            if (h->id != want->id || h->result != prev->result)
                break;
            run++;
        }
        if (run >= p->alternation_calls) {
            f->kind = LOOP_ALTERNATION, f->count = run,
            f->advise = due(run, p->alternation_calls, p->alternation_calls);
            f->first_at = hist[n - (size_t)run + 1].at, f->other = n - 1, f->confidence = 0.8;
            return;
        }
    }

    int rt = p->repeat_threshold + 1;
    if (cur->error && err >= 2)
        f->kind = LOOP_SAME_ERROR, f->count = err, f->first_at = err_at, f->confidence = 0.85,
        f->advise = due(err, p->error_threshold, p->error_threshold - 1);
    else if (!cur->error && due(rep, rt, rt - 1))
        f->kind = LOOP_REPEAT, f->count = rep, f->first_at = rep_at, f->confidence = 0.9, f->advise = 1;
    else if (!cur->error && (cur->flags & LOOP_FREE_TEXT) && ask_ids > 1 &&
             due(ask, p->reask_threshold, p->reask_threshold - 1))
        f->kind = LOOP_REASKED, f->count = ask, f->first_at = ask_at, f->confidence = 0.7, f->advise = 1;
}

void loop_forget(struct loop_window *w, size_t upto)
{
    if (upto > w->n)
        upto = w->n;
    if (!upto)
        return; /* an empty window may have no array yet */
    w->v += upto;
    w->tool += upto;
    w->n -= upto;
}

void loop_window_free(struct loop_window *w)
{
    free(w->base);
    free(w->tool_base);
    memset(w, 0, sizeof *w);
}

int loop_observe(struct loop_window *w, const struct loop_params *p, const struct loop_call *c, const char *tool,
                 struct loop_finding *f, char other[64])
{
    size_t keep = (size_t)p->window_calls, old = 0;
    other[0] = '\0';
    while (old < w->n && w->v[old].at < c->at - p->window_ms)
        old++;
    loop_forget(w, old);
    if (!w->base) {
        /* Twice the window: the calls move back to the start once per keep calls. */
        w->cap = 2 * keep;
        w->v = w->base = malloc(w->cap * sizeof *w->base);
        w->tool = w->tool_base = malloc(w->cap * sizeof *w->tool_base);
        if (!w->base || !w->tool_base) {
            loop_window_free(w);
            memset(f, 0, sizeof *f);
            return -1;
        }
    }
    loop_check(w->v, w->n, c, p, f);
    if (f->kind == LOOP_ALTERNATION)
        memcpy(other, w->tool[f->other], 64);
    if (w->n >= keep)
        loop_forget(w, w->n - keep + 1);
    if (w->v + w->n == w->base + w->cap) {
        memmove(w->base, w->v, w->n * sizeof *w->v);
        memmove(w->tool_base, w->tool, w->n * sizeof *w->tool);
        w->v = w->base;
        w->tool = w->tool_base;
    }
    w->v[w->n] = *c;
    if (f->changed)
        w->v[w->n].flags |= LOOP_CHANGED;
    else
        w->v[w->n].flags &= ~LOOP_CHANGED;
    size_t tl = strnlen(tool, 63);
    memcpy(w->tool[w->n], tool, tl);
    w->tool[w->n][tl] = '\0';
    w->n++;
    return 0;
}

static void span(int64_t ms, char *buf, size_t n)
{
    long s = (long)(ms / 1000);
    if (s < 60)
        snprintf(buf, n, "under a minute");
    else if (s < 3600)
        snprintf(buf, n, "%ld minute%s", (s + 30) / 60, (s + 30) / 60 == 1 ? "" : "s");
    else
        snprintf(buf, n, "%ld h %02ld min", s / 3600, (s % 3600) / 60);
}

void loop_reason(const struct loop_finding *f, const char *tool, const char *other_tool, int64_t now_ms, char *buf,
                 size_t n)
{
    char t[40];
    span(now_ms - f->first_at, t, sizeof t);
    switch (f->kind) {
    case LOOP_REPEAT:
        snprintf(buf, n,
                 "%.60s with the same arguments returned the same result %d times in %s; the answer will not "
                 "change until something else does.",
                 tool, f->count, t);
        break;
    case LOOP_SAME_ERROR:
        snprintf(buf, n,
                 "%.60s failed %d times in %s with the same error; trying again the same way is unlikely to "
                 "help.",
                 tool, f->count, t);
        break;
    case LOOP_REASKED:
        snprintf(buf, n,
                 "%.60s gave the same answer %d times in %s to reworded requests; asking again in other words "
                 "will likely get it again.",
                 tool, f->count, t);
        break;
    case LOOP_ALTERNATION:
        snprintf(buf, n,
                 "The agent went back and forth between %.60s and %.60s %d times in %s, each returning what it "
                 "returned before.",
                 tool, other_tool ? other_tool : "another tool", f->count, t);
        break;
    default:
        snprintf(buf, n, "No loop.");
    }
}
