/* rules.c: matching and rewriting with PCRE2 (see rules.h).
 *
 * Patterns are compiled by the loader with PCRE2_UTF and matched here with a
 * match-data block per call. The subject's UTF-8 is checked once per rule
 * match, not by PCRE2 at every call (PCRE2_NO_UTF_CHECK, or pcre2_jit_match,
 * which skips the checks, for a pattern with JIT code); text that is not
 * valid UTF-8 matches nothing, as PCRE2's own check had it. A rewrite walks
 * the matches as rule_match does, and has pcre2_substitute expand the
 * replacement of each (PCRE2_SUBSTITUTE_MATCHED), pattern by pattern, so a
 * replacement can use $1 and friends and the budget covers it all. Character
 * limits count code points. */
#include "rules.h"

#include "text.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

size_t rule_words(const char *text, size_t n)
{
    size_t words = 0;
    int in = 0;
    for (size_t i = 0; i < n; i++) {
        int space = isspace((unsigned char)text[i]);
        if (!space && !in)
            words++;
        in = !space;
    }
    return words;
}

const char rule_skipped_why[] = "matching it on this text would take more than its budget";
const char rule_unusable_why[] = "its replacement does not fit what one of its patterns matched (it names a group "
                                 "that pattern lacks); an example for each pattern lets keel rules lint find it";

static pcre2_match_context *mctx; /* the limits, made once (keel is one thread) */
static pcre2_jit_stack *jstack;

pcre2_match_context *rule_limits(void)
{
    if (mctx)
        return mctx;
    if ((mctx = pcre2_match_context_create(NULL))) {
        pcre2_set_match_limit(mctx, RULE_MATCH_LIMIT);
        pcre2_set_heap_limit(mctx, RULE_HEAP_LIMIT_KIB);
        if ((jstack = pcre2_jit_stack_create(32 * 1024, RULE_JIT_STACK, NULL)))
            pcre2_jit_stack_assign(mctx, NULL, jstack);
    }
    return mctx;
}

/* Clock c in ns: CLOCK_MONOTONIC_COARSE (a few ns a read, its resolution of
 * a few ms well inside the budget) or the thread's CPU clock (a system call). */
static int64_t clock_ns(clockid_t c)
{
    struct timespec t;
    clock_gettime(c, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* RULE_BUDGET_MS bounds a rule's work, not the clock on the wall: a thread
 * the machine set aside past the deadline (a loaded machine) is given another
 * window, unless it spent half the last one on the CPU, up to
 * RULE_BUDGET_WINDOWS. The first window's CPU time is not known (reading it
 * at every start would cost each rule a system call), so a rule that runs
 * away is skipped after two windows, 50 ms. The wall clock is read on every
 * call (a few ns); the thread's CPU clock, a system call, only when a window
 * ends. */
struct budget {
    int64_t end, cpu;
    int windows;
};
#define BUDGET_NS ((int64_t)RULE_BUDGET_MS * 1000000)

static struct budget budget_start(void)
{
    return (struct budget){clock_ns(CLOCK_MONOTONIC_COARSE) + BUDGET_NS, -1, 1};
}

static int budget_spent(struct budget *b)
{
    int64_t now = clock_ns(CLOCK_MONOTONIC_COARSE);
    if (now <= b->end)
        return 0;
    int64_t cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    if ((b->cpu >= 0 && cpu - b->cpu >= BUDGET_NS / 2) || b->windows >= RULE_BUDGET_WINDOWS)
        return 1;
    b->cpu = cpu;
    b->end = now + BUDGET_NS;
    b->windows++;
    return 0;
}

/* 1 when re is to be matched by its JIT code on a text of n bytes, made now
 * if this use calls for it (force: the interpreter ran out of its limits),
 * 0 by the interpreter; *st is its RJ_* state (st NULL: no JIT code). */
static int jit_for(pcre2_code *re, unsigned char *st, size_t n, int force)
{
    if (!st || *st == RJ_NONE)
        return 0;
    if (*st == RJ_FRESH && n < RULE_JIT_TEXT && !force) {
        *st = RJ_USED;
        return 0;
    }
    if (*st != RJ_READY)
        *st = pcre2_jit_compile(re, PCRE2_JIT_COMPLETE) == 0 ? RJ_READY : RJ_NONE;
    return *st == RJ_READY;
}

/* Each pattern's JIT code made, if this use calls for it, before the rule's
 * budget starts: compiling is not matching (a slow machine, valgrind). */
static void jit_prepare(const struct rule *r, size_t n)
{
    for (int p = 0; r->jit && p < r->npatterns; p++)
        jit_for(r->re[p], &r->jit[p], n, 0);
}

/* One match of re at or after at, by its JIT code when it has some; when
 * the interpreter runs out of its match, depth or heap limit, which JIT
 * code counts otherwise, once more by JIT code made now, so that a rule is
 * not skipped on its first use where it would pass on its second. */
static int match_once(pcre2_code *re, unsigned char *st, const char *text, size_t n, size_t at, pcre2_match_data *md,
                      pcre2_match_context *mc)
{
    if (st && *st == RJ_READY)
        return pcre2_jit_match(re, (PCRE2_SPTR)text, n, at, 0, md, mc);
    int rc = pcre2_match(re, (PCRE2_SPTR)text, n, at, PCRE2_NO_UTF_CHECK, md, mc);
    if ((rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT || rc == PCRE2_ERROR_HEAPLIMIT) &&
        jit_for(re, st, n, 1))
        rc = pcre2_jit_match(re, (PCRE2_SPTR)text, n, at, 0, md, mc);
    return rc;
}

/* The next match of pattern p at or after at: 1 (its place in md), 0 none,
 * RULE_SKIPPED past a limit or the budget. at must be on a character
 * boundary, as both calls require. */
static int scan(const struct rule *r, int p, const char *text, size_t n, size_t at, pcre2_match_data *md,
                struct budget *b)
{
    pcre2_match_context *mc = rule_limits();
    if (!mc || budget_spent(b))
        return RULE_SKIPPED;
    int rc = match_once(r->re[p], r->jit ? &r->jit[p] : NULL, text, n, at, md, mc);
    if (rc >= 0) /* 0: a match, more groups than md holds */
        return 1;
    return rc == PCRE2_ERROR_NOMATCH ? 0 : RULE_SKIPPED;
}

/* Where to look after a match: its end, one character on for an empty one. */
static size_t after(const char *text, size_t n, const PCRE2_SIZE *ov)
{
    size_t at = ov[1] > ov[0] ? ov[1] : ov[1] + 1;
    while (at < n && ((unsigned char)text[at] & 0xC0) == 0x80)
        at++;
    return at;
}

static pcre2_match_data *match_data(const struct rule *r)
{
    return r->md ? r->md : pcre2_match_data_create(1, NULL);
}

int rule_match(const struct rule *r, const char *text, size_t n, struct rule_span *spans, int max)
{
    if (r->detector == RD_LENGTH) {
        int over = (r->max_words && rule_words(text, n) > (size_t)r->max_words) ||
            (r->max_chars && text_char_count(text, n) > (size_t)r->max_chars);
        if (over && max > 0)
            spans[0] = (struct rule_span){0, n};
        return over;
    }
    if (r->detector != RD_REGEX || !text_valid_utf8(text, n))
        return 0;
    pcre2_match_data *md = match_data(r);
    if (!md)
        return RULE_SKIPPED;
    jit_prepare(r, n);
    struct budget b = budget_start();
    int found = 0, rc = 0;
    for (int p = 0; p < r->npatterns && rc >= 0; p++) {
        for (size_t at = 0; at <= n && (rc = scan(r, p, text, n, at, md, &b)) == 1;) {
            PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
            if (found < max)
                spans[found] = (struct rule_span){ov[0], ov[1]};
            found++;
            at = after(text, n, ov);
        }
    }
    if (md != r->md)
        pcre2_match_data_free(md);
    return rc < 0 ? RULE_SKIPPED : found;
}

int rule_any_code(pcre2_code *re, unsigned char *jit, pcre2_match_data *md, const char *text, size_t n)
{
    pcre2_match_context *mc = rule_limits();
    if (!mc || !md)
        return RULE_SKIPPED;
    jit_for(re, jit, n, 0);
    int rc = match_once(re, jit, text, n, 0, md, mc);
    return rc >= 0 ? 1 : rc == PCRE2_ERROR_NOMATCH ? 0 : RULE_SKIPPED; /* rc 0: matched, groups past md */
}

int rule_any(const struct rule *r, const char *text, size_t n)
{
    if (r->detector != RD_REGEX || !r->any) {
        int m = rule_match(r, text, n, NULL, 0);
        return m < 0 ? RULE_SKIPPED : m > 0;
    }
    pcre2_match_data *md = match_data(r);
    int rc = rule_any_code(r->any, r->jit ? &r->jit[r->npatterns] : NULL, md, text, n);
    if (md != r->md)
        pcre2_match_data_free(md);
    return rc;
}

pcre2_code *rule_join(char *const *patterns, int n)
{
    static const char *const unsafe[] = {"\\g", "\\k", "\\Q", "(?P", "(?&", "(?R", "(?(", "#", NULL};
    size_t len = 0;
    for (int i = 0; i < n; i++) {
        const char *p = patterns[i];
        for (int u = 0; unsafe[u]; u++)
            if (strstr(p, unsafe[u]))
                return NULL;
        for (const char *b = strchr(p, '\\'); b; b = strchr(b + 2, '\\'))
            if (b[1] >= '1' && b[1] <= '9')
                return NULL; /* \1: a back-reference, numbered within its own pattern */
            else if (!b[1])
                break;
        for (const char *q = strstr(p, "(?"); q; q = strstr(q + 2, "(?"))
            if ((q[2] >= '0' && q[2] <= '9') || q[2] == '+' || q[2] == '-')
                return NULL; /* (?1), (?-1): calls by number */
        len += strlen(p) + 5;
    }
    char *joined = malloc(len + 1), *w = joined;
    if (!joined)
        return NULL;
    *w = '\0';
    for (int i = 0; i < n; i++)
        w += sprintf(w, "%s(?:%s)", i ? "|" : "", patterns[i]);
    int err;
    PCRE2_SIZE off;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)joined, PCRE2_ZERO_TERMINATED,
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_NEVER_BACKSLASH_C, &err, &off, NULL);
    free(joined);
    return re;
}

void rule_combine(struct rule *r)
{
    if (r->detector != RD_REGEX || r->npatterns < 2 || r->any)
        return;
    for (int i = 0; i < r->npatterns; i++)
        if (!r->re[i])
            return;
    r->any = rule_join(r->pattern, r->npatterns);
}

char *rule_copy(const char *text, size_t n)
{
    char *c = malloc(n + 1 + RULE_PAD);
    if (c) {
        memcpy(c, text, n);
        memset(c + n, 0, 1 + RULE_PAD);
    }
    return c;
}

struct buf {
    char *p;
    size_t n, cap;
    int failed;
};

static void put(struct buf *b, const char *s, size_t n)
{
    if (b->failed)
        return;
    if (b->n + n + 1 + RULE_PAD > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1 + RULE_PAD)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->failed = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    memset(b->p + b->n, 0, 1 + RULE_PAD);
}

/* The replacement for the match in md ($1 and friends expanded) onto out. */
static int put_replacement(const struct rule *r, int p, const char *text, size_t n, pcre2_match_data *md,
                           struct buf *out)
{
    char small[256], *big = NULL;
    PCRE2_SIZE len = sizeof small;
    const uint32_t how =
        PCRE2_SUBSTITUTE_MATCHED | PCRE2_SUBSTITUTE_REPLACEMENT_ONLY | PCRE2_SUBSTITUTE_OVERFLOW_LENGTH;
    int rc = pcre2_substitute(r->re[p], (PCRE2_SPTR)text, n, 0, how, md, NULL, (PCRE2_SPTR)r->replacement,
                              PCRE2_ZERO_TERMINATED, (PCRE2_UCHAR *)small, &len);
    if (rc == PCRE2_ERROR_NOMEMORY && (big = malloc(len + 1)))
        rc = pcre2_substitute(r->re[p], (PCRE2_SPTR)text, n, 0, how, md, NULL, (PCRE2_SPTR)r->replacement,
                              PCRE2_ZERO_TERMINATED, (PCRE2_UCHAR *)big, &len);
    if (rc >= 0)
        put(out, big ? big : small, len);
    free(big);
    return rc >= 0 ? 0 : -1;
}

/* to[k..k+len) come from where from[at..at+len) came from; a replacement
 * (same = 0) all from where from[at] came from. 0, or -1 out of memory. */
static int map_put(size_t **to, size_t *cap, size_t k, const size_t *from, size_t at, size_t len, int same)
{
    if (k + len + 1 > *cap) {
        size_t c = *cap ? *cap : 64;
        while (c < k + len + 1)
            c *= 2;
        size_t *t = realloc(*to, c * sizeof *t);
        if (!t)
            return -1;
        *to = t, *cap = c;
    }
    for (size_t i = 0; i < len; i++)
        (*to)[k + i] = from[same ? at + i : at];
    return 0;
}

static char *rewrite(const struct rule *r, const char *text, size_t n, int *skipped, size_t **map);

char *rule_rewrite(const struct rule *r, const char *text, size_t n, int *skipped)
{
    return rewrite(r, text, n, skipped, NULL);
}

char *rule_rewrite_mapped(const struct rule *r, const char *text, size_t n, int *skipped, size_t **map)
{
    return rewrite(r, text, n, skipped, map);
}

static char *rewrite(const struct rule *r, const char *text, size_t n, int *skipped, size_t **map)
{
    *skipped = 0;
    if (r->detector != RD_REGEX || !r->replacement || !text_valid_utf8(text, n))
        return NULL;
    pcre2_match_data *md = match_data(r);
    if (!md) {
        *skipped = 1;
        return NULL;
    }
    jit_prepare(r, n);
    struct budget b = budget_start();
    size_t grow_max = 4 * n + 4096; /* the most a rule's rewrite may make of the text */
    char *cur = NULL; /* each pattern rewrites what the one before left */
    size_t cur_n = n, *cur_map = map ? *map : NULL;
    int changed = 0;
    for (int p = 0; p < r->npatterns && !*skipped; p++) {
        const char *src = cur ? cur : text;
        struct buf out = {0};
        size_t at = 0, copied = 0, *om = NULL, ocap = 0; /* om: out's map, when one is kept */
        int rc = 0, hits = 0, mfail = 0;
        while (at <= cur_n && (rc = scan(r, p, src, cur_n, at, md, &b)) == 1) {
            PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
            size_t k = out.n;
            put(&out, src + copied, ov[0] - copied);
            if (cur_map)
                mfail |= map_put(&om, &ocap, k, cur_map, copied, ov[0] - copied, 1) < 0;
            k = out.n;
            if (put_replacement(r, p, src, cur_n, md, &out) < 0)
                out.failed = 1;
            if (cur_map)
                mfail |= map_put(&om, &ocap, k, cur_map, ov[0], out.n - k, 0) < 0;
            copied = ov[1];
            at = after(src, cur_n, ov);
            hits++;
            if (out.n > grow_max) { /* a replacement that multiplies the text: past the rule's budget */
                rc = -1;
                break;
            }
        }
        if (rc < 0) /* the loop ends on a scan's answer, or past the text with rc 1 */
            *skipped = 1;
        size_t k = out.n;
        put(&out, src + copied, cur_n - copied);
        if (cur_map)
            mfail |= map_put(&om, &ocap, k, cur_map, copied, cur_n - copied + 1, 1) < 0; /* and the end */
        if (*skipped || out.failed || mfail || !hits) {
            if (out.failed && !*skipped)
                *skipped = 2; /* the replacement does not fit what the pattern matched */
            else if (mfail && !*skipped)
                *skipped = 1;
            free(out.p);
            free(om);
            continue;
        }
        free(cur);
        cur = out.p;
        cur_n = out.n;
        if (cur_map) {
            if (cur_map != (map ? *map : NULL))
                free(cur_map);
            cur_map = om;
        }
        changed = 1;
    }
    if (md != r->md)
        pcre2_match_data_free(md);
    if (*skipped || !changed) {
        if (map && cur_map != *map)
            free(cur_map);
        free(cur);
        return NULL;
    }
    if (map)
        *map = cur_map; /* the one given stays the caller's */
    return cur;
}

static void free_list(char **v, int n)
{
    for (int i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

void rule_free(struct rule *r)
{
    free(r->name);
    free(r->description);
    free(r->guidance);
    free(r->rationale);
    free(r->prompt);
    free(r->replacement);
    free_list(r->tools, r->ntools);
    for (int i = 0; i < r->npatterns; i++)
        pcre2_code_free(r->re[i]);
    free(r->re);
    free(r->jit);
    pcre2_code_free(r->any);
    pcre2_match_data_free(r->md);
    free_list(r->pattern, r->npatterns);
    free_list(r->fires, r->nfires);
    free_list(r->passes, r->npasses);
    memset(r, 0, sizeof *r);
}
