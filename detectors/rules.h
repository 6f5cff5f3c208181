/* rules.h: the output filter's rule engine.
 *
 * A rule is a small, readable judgement on a piece of text: a set of PCRE2
 * patterns (detector regex), a word or character limit (length), or a
 * question for a language model (llm, judged by the caller). What to do when
 * it fires is the action: annotate (say so), rewrite (apply the
 * replacement), or reject (refuse the text, with guidance). The engine is
 * pure: rules come in compiled, text goes in, spans and rewritten text come
 * out. Loading rule files is the caller's business (proxy/judge/rulefile.c). */
#ifndef KEEL_RULES_H
#define KEEL_RULES_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stddef.h>

enum { RA_MESSAGE = 1, RA_TOOL_RESULT = 2, RA_SAMPLING = 4, RA_TOOL_DEF = 8 };
enum { RD_REGEX, RD_LENGTH, RD_LLM };
enum { RX_ANNOTATE, RX_REWRITE, RX_REJECT };

struct rule {
    char *name, *description, *guidance, *rationale, *prompt;
    char *replacement; /* NULL: none; "" deletes the match */
    int applies_to; /* RA_* */
    int detector; /* RD_* */
    int action; /* RX_* */
    int active;
    int modify_results; /* its file says tool_results: modify (else a tool_result rule only advises) */
    int shipped; /* one of keel's own rules/ (not a file of the person's) */
    char **tools; /* globs, for tool results */
    int ntools;
    pcre2_code **re;
    unsigned char *jit; /* jit[i]: re[i]'s RJ_* state, jit[npatterns] any's (NULL: never JIT code) */
    pcre2_match_data *md; /* one, reused by every match (keel is one thread) */
    pcre2_code *any; /* the patterns as one alternation, to ask "anywhere?" (NULL: not built) */
    char **pattern;
    int npatterns;
    long max_words, max_chars; /* 0: no limit */
    char **fires, **passes; /* examples */
    int nfires, npasses;
    char file[256]; /* where it was defined */
    int line;
};

struct rule_span {
    size_t start, end; /* byte offsets */
};

/* The work one rule may do on one text. Each PCRE2 call is bounded by the
 * match, depth and heap limits and a JIT stack of RULE_JIT_STACK bytes; all
 * the calls of one rule on one text (every match, every pattern) together
 * by RULE_BUDGET_MS of the clock, a window the rule gets again while it
 * spent under half the last on the CPU (the machine was busy elsewhere), at
 * most RULE_BUDGET_WINDOWS in all. A rule past its budget is skipped for
 * that text, and says so: RULE_SKIPPED, never "no match". */
#define RULE_MATCH_LIMIT    2000000u
#define RULE_HEAP_LIMIT_KIB 65536u
#define RULE_JIT_STACK      (1u << 20)
#define RULE_BUDGET_MS      25
#define RULE_BUDGET_WINDOWS 8
#define RULE_SKIPPED        (-1)
/* A pattern is compiled to machine code (PCRE2's JIT) the second time it is
 * used, or the first when the text has RULE_JIT_TEXT bytes or more: a
 * process that checks one short reply (keel hook) matches each pattern
 * once, and compiling them all took longer than the matching it saves. */
#define RULE_JIT_TEXT       4096
enum { RJ_FRESH, RJ_USED, RJ_READY, RJ_NONE }; /* not used yet; used once; JIT code; none to be had */
/* Zeroed bytes a subject buffer holds past its end: PCRE2's JIT reads a few
 * bytes ahead (harmless, but valgrind rightly reports it on a buffer cut to
 * size). rule_copy makes such a copy. */
#define RULE_PAD 16
char *rule_copy(const char *text, size_t n);
extern const char rule_skipped_why[];
extern const char rule_unusable_why[]; /* a rewrite whose replacement failed */
/* The match context with those limits (NULL: out of memory), for any other
 * pattern keel matches on someone's behalf. */
pcre2_match_context *rule_limits(void); /* what a skipped rule tells the person */

/* The places rule r fires in text (up to max spans); 0 when it does not,
 * RULE_SKIPPED when it could not tell within its budget. For RD_LENGTH the
 * span is the whole text; RD_LLM never fires here. */
int rule_match(const struct rule *r, const char *text, size_t n, struct rule_span *spans, int max);

/* 1 if r fires anywhere in text, 0 if not, RULE_SKIPPED: rule_match's
 * answer without the spans, from one pass when rule_combine built r->any.
 * text must be valid UTF-8 (the caller checks once for every rule). */
int rule_any(const struct rule *r, const char *text, size_t n);
/* Builds r->any from r's compiled patterns (rule_join). */
void rule_combine(struct rule *r);
/* The patterns as one alternation, compiled, or NULL when joining them
 * could change what one of them means (back-references, calls by number or
 * name, \Q, comments: they depend on group numbers or on where the pattern
 * ends), or it does not compile. */
pcre2_code *rule_join(char *const *patterns, int n);
/* rule_any's answer for one compiled pattern and a match data to use; jit
 * is the pattern's RJ_* state (NULL: no JIT code). */
int rule_any_code(pcre2_code *re, unsigned char *jit, pcre2_match_data *md, const char *text, size_t n);

/* text with r's replacement applied to every match, or NULL when nothing
 * changed (or r has no replacement, or *skipped, and the text is left as it
 * was: 1 it ran out of budget, 2 its replacement does not fit what a
 * pattern matched, "$2" of a pattern with one group). Caller frees. */
char *rule_rewrite(const struct rule *r, const char *text, size_t n, int *skipped);
/* rule_rewrite, and where each byte of the new text came from: *map (n + 1
 * entries in, the new text's length + 1 out: a new array, the one given
 * still the caller's)
 * gives for each place of the text a place in the text it was rewritten
 * from at the start (a replacement's bytes: where what it replaced began).
 * On NULL *map is left as it was. */
char *rule_rewrite_mapped(const struct rule *r, const char *text, size_t n, int *skipped, size_t **map);

/* Word count by whitespace, as max_words counts. */
size_t rule_words(const char *text, size_t n);

void rule_free(struct rule *r);

#endif
