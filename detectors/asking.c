/* asking.c: the phrase lists of asking.h (detectors/data/asking.txt). */
#include "asking.h"

#include "phrases.h"
#include "stem.h"
#include "text.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdlib.h>

static struct phrases table;

#define QUESTION_LATIN   256u /* class 8: [question-latin] */
#define EXCUSE           512u /* class 9: [excuse] */
#define RETURN           1024u /* class 10: [return] */
#define ASKVERB          2048u /* class 11: [askverb] */
#define STILL            4096u /* class 12: [still] */
#define UNCLEAR          8192u /* class 13: [unclear] */
#define QUESTION_INPLACE 16384u /* class 14: [question-inplace] */
#define NEAR             6 /* the two words of a pair (ask_kinds) stand this many words apart at most */
#define QUESTION_OPENS   4 /* a question's word stands among the first four */
#define QUESTION_CLOSES  2 /* or a closing particle among the last two */

void ask_load(void)
{
    static int done;
    if (done)
        return;
    done = 1;
    /* class k is ASK_* bit k (ASK_ERROR's is no phrase); "still" or
     * "again" alone say too little to be a re-ask, so a [reask] or [again]
     * phrase has two words at least */
    static const char *const names[] = {"reassurance", "reask",   "command", "question",       "followup",
                                        NULL,          "again",   "tell",    "question-latin", "excuse",
                                        "return",      "askverb", "still",   "unclear",        "question-inplace"};
    static const unsigned char min_words[] = {1, 2, 1, 1, 1, 1, 2, 1, 1, 1, 1, 1, 1, 1, 1};
    _Static_assert(sizeof names / sizeof *names == sizeof min_words, "a fewest-words count for each class");
    phrases_load(&table, "detectors/data/asking.txt", names, (int)(sizeof names / sizeof *names), min_words);
}

/* A span of words [at, end) a phrase took; end 0 while there is none. */
struct span {
    size_t at, end;
};

/* 1 when the spans stand at most NEAR words apart, in either order. */
static int near(struct span a, struct span b)
{
    return a.end && b.end && (a.end <= b.at ? b.at - a.end : b.end <= a.at ? a.at - b.end : 0) <= NEAR;
}

unsigned ask_kinds(const uint64_t *h, size_t stride, size_t n, unsigned char *mark)
{
    ask_load();
    unsigned kinds = 0;
    static const unsigned kinds_of_phrase[] = {ASK_REASSURE, ASK_REASK, ASK_COMMAND, ASK_AGAIN, ASK_TELL};
    const unsigned any =
        ASK_REASSURE | ASK_REASK | ASK_COMMAND | ASK_AGAIN | ASK_TELL | EXCUSE | RETURN | ASKVERB | STILL | UNCLEAR;
    /* Two kinds of word that say "again" when they stand near each other:
     * an excuse or a verb of asking and a word of coming back ("sorry to
     * circle back", "last time, promise", "son bir kez soruyorum"); "still"
     * and a word of not understanding ("I'm still confused", "sigo sin
     * entender", "还是没想通"). For each, the last span of either side. */
    static const unsigned side[2][2] = {{EXCUSE | ASKVERB, RETURN}, {STILL, UNCLEAR}};
    struct span last[2][2] = {{{0, 0}, {0, 0}}, {{0, 0}, {0, 0}}};
    for (size_t i = 0; i < n; i++) {
        if (!phrases_at(&table, h, stride, n, i, any))
            continue; /* most words begin no phrase: one look, not one a kind */
        for (unsigned q = 0; q < sizeof kinds_of_phrase / sizeof *kinds_of_phrase; q++) {
            unsigned kind = kinds_of_phrase[q];
            const struct phrase *p = phrases_at(&table, h, stride, n, i, kind);
            if (!p)
                continue;
            kinds |= kind;
            if (mark && kind != ASK_TELL) /* "explain" may be what is asked about */
                for (size_t k = 0; k < p->len; k++)
                    mark[i + k] |= (unsigned char)kind;
        }
        for (unsigned pr = 0; pr < 2; pr++) {
            for (unsigned sd = 0; sd < 2; sd++) {
                const struct phrase *p = phrases_at(&table, h, stride, n, i, side[pr][sd]);
                if (p)
                    last[pr][sd] = (struct span){i, i + p->len};
            }
            if (!near(last[pr][0], last[pr][1]))
                continue;
            kinds |= ASK_AGAIN; /* as [again]: see ask_again */
            for (unsigned sd = 0; mark && sd < 2; sd++)
                for (size_t k = last[pr][sd].at; k < last[pr][sd].end; k++)
                    mark[k] |= (unsigned char)ASK_AGAIN;
        }
    }
    return kinds;
}

unsigned ask_again(unsigned kinds, int question)
{
    return (kinds & ASK_AGAIN) && (question || (kinds & (ASK_REASSURE | ASK_TELL))) ? kinds | ASK_REASK : kinds;
}

int ask_question_mark_at(const char *s, size_t n, size_t i)
{
    const unsigned char *u = (const unsigned char *)s;
    return u[i] == '?' || (i + 3 <= n && u[i] == 0xEF && u[i + 1] == 0xBC && u[i + 2] == 0x9F) || /* U+FF1F */
        (i + 2 <= n && u[i] == 0xD8 && u[i + 1] == 0x9F); /* U+061F */
}

int ask_question_mark(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (ask_question_mark_at(s, n, i))
            return 1;
    return 0;
}

/* An error report pasted from a tool: what asks for help with it though it
 * asks nothing in words ("TypeError: Cannot read properties of undefined",
 * "error[E0382]: borrow of moved value", "Process completed with exit code
 * 137", "npm ERR!", a Python traceback). The names tools print, in the form
 * they print them; never a word of prose ("an error", "it failed"). */
static const char error_pattern[] = /* linear: no run is scanned again from a later start */
    "(?:Error|Exception):" /* TypeError: java.io.IOException: */
    "|\\b(?i:error|fatal|panic)(?:\\[[A-Za-z]{0,8}\\d{1,8}\\])?:" /* error: FATAL: panic: error[E0382]: */
    "|\\bERR!" /* npm ERR! */
    "|\\bexit (?:code|status) \\d"
    "|Traceback \\(most recent call last\\)"
    "|\\bE[A-Z]{3,12}:"; /* ENOENT: EADDRINUSE: */

int ask_error_report(const char *s, size_t n)
{
    static pcre2_code *re;
    static pcre2_match_data *md;
    static int failed;
    if (!re && !failed) {
        int err;
        PCRE2_SIZE off;
        /* bytes, not UTF-8: the pattern is ASCII, and any text may be read */
        re = pcre2_compile((PCRE2_SPTR)error_pattern, PCRE2_ZERO_TERMINATED, 0, &err, &off, NULL);
        md = re ? pcre2_match_data_create_from_pattern(re, NULL) : NULL;
        failed = !re || !md;
        if (!failed)
            pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
    }
    if (failed)
        return 0;
    return pcre2_match(re, (PCRE2_SPTR)s, n, 0, 0, md, NULL) >= 0;
}

int ask_text(const char *s, size_t n, unsigned *kinds)
{
    struct text_words w = {0};
    if (text_words(s, n, &w) < 0) {
        free(w.v);
        return -1;
    }
    *kinds = ask_text_words(s, n, &w);
    free(w.v);
    return 0;
}

unsigned ask_text_words(const char *s, size_t n, const struct text_words *tw)
{
    const struct text_words w = *tw;
    /* the table is read below only when there are words, after ask_kinds has loaded it */
    unsigned k = w.n ? ask_kinds(&w.v[0].hash, sizeof *w.v, w.n, NULL) : 0;
    if (w.n && phrases_at(&table, &w.v[0].hash, sizeof *w.v, w.n, 0, ASK_FOLLOWUP))
        k |= ASK_FOLLOWUP;
    int question = ask_question_mark(s, n);
    /* the Latin ones unless the text reads as English */
    unsigned mask = ASK_QUESTION | QUESTION_LATIN | QUESTION_INPLACE;
    int latin_read = 0; /* its language is read once, at the first Latin question word */
    for (size_t a = 0; a < w.n && !question;) {
        size_t b = a; /* one sentence: words a..b-1 */
        while (b < w.n && w.v[b].sentence == w.v[a].sentence)
            b++;
        for (size_t i = a; i < b && !question; i++) {
            const struct phrase *p = phrases_at(&table, &w.v[a].hash, sizeof *w.v, b - a, i - a, mask);
            if (p && (1u << p->cls) == QUESTION_LATIN && !latin_read) {
                latin_read = 1;
                if (stem_lang_of(s, n) == STEM_EN) {
                    mask = ASK_QUESTION | QUESTION_INPLACE; /* "Come say hi.": English, and "come" asks nothing */
                    p = phrases_at(&table, &w.v[a].hash, sizeof *w.v, b - a, i - a, mask);
                }
            }
            /* a question word where a question has it, not mid-sentence ("write what changed"),
             * or anywhere in a language that leaves it in place ("到底怎么回事") */
            question =
                p && ((1u << p->cls) == QUESTION_INPLACE || i - a < QUESTION_OPENS || i + p->len + QUESTION_CLOSES > b);
        }
        a = b;
    }
    return ask_again(k, question) | (question ? ASK_QUESTION : 0u) | (ask_error_report(s, n) ? ASK_ERROR : 0u);
}
