/* asking.c: the phrase lists of asking.h (detectors/data/asking.txt). */
#include "asking.h"

#include "phrases.h"
#include "text.h"

#include <stdlib.h>

static struct phrases table;

#define QUESTION_OPENS  4 /* a question's word stands among the first four */
#define QUESTION_CLOSES 2 /* or a closing particle among the last two */

static void ask_init(void)
{
    static int done;
    if (done)
        return;
    done = 1;
    /* class k is ASK_* bit k; "still" or "again" alone say too little to
     * be a re-ask, so a [reask] phrase has two words at least */
    static const char *const names[] = {"reassurance", "reask", "command", "question", "followup"};
    static const unsigned char min_words[] = {1, 2, 1, 1, 1};
    phrases_load(&table, "detectors/data/asking.txt", names, 5, min_words);
}

unsigned ask_kinds(const uint64_t *h, size_t stride, size_t n, unsigned char *mark)
{
    ask_init();
    unsigned kinds = 0;
    for (size_t i = 0; i < n; i++)
        for (unsigned k = 0; k < 3; k++) {
            const struct phrase *p = phrases_at(&table, h, stride, n, i, 1u << k);
            if (!p)
                continue;
            kinds |= 1u << k;
            if (mark)
                for (size_t q = 0; q < p->len; q++)
                    mark[i + q] |= (unsigned char)(1u << k);
        }
    return kinds;
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

int ask_text(const char *s, size_t n, unsigned *kinds)
{
    ask_init();
    struct text_words w = {0};
    if (text_words(s, n, &w) < 0) {
        free(w.v);
        return -1;
    }
    unsigned k = w.n ? ask_kinds(&w.v[0].hash, sizeof *w.v, w.n, NULL) : 0;
    if (w.n && phrases_at(&table, &w.v[0].hash, sizeof *w.v, w.n, 0, ASK_FOLLOWUP))
        k |= ASK_FOLLOWUP;
    int question = ask_question_mark(s, n);
    for (size_t a = 0; a < w.n && !question;) {
        size_t b = a; /* one sentence: words a..b-1 */
        while (b < w.n && w.v[b].sentence == w.v[a].sentence)
            b++;
        for (size_t i = a; i < b && !question; i++) {
            const struct phrase *p = phrases_at(&table, &w.v[a].hash, sizeof *w.v, b - a, i - a, ASK_QUESTION);
            /* a question word where a question has it, not mid-sentence ("write what changed") */
            question = p && (i - a < QUESTION_OPENS || i + p->len + QUESTION_CLOSES > b);
        }
        a = b;
    }
    free(w.v);
    *kinds = k | (question ? ASK_QUESTION : 0u);
    return 0;
}
