/* asking.c: the phrase lists of asking.h, matched over word hashes. */
#include "asking.h"

#include "embed.h"
#include "text.h"

#include <stdlib.h>
#include <string.h>

#define ASK_MAX_PHRASE 16   /* words: in Chinese and Japanese a character each */

struct aphrase {
    uint64_t h[ASK_MAX_PHRASE];
    unsigned char len, kind;
};

static struct aphrase *ph;
static size_t ph_n, ph_cap;

struct load {
    unsigned kind;
    struct text_words w;
};

static void load_line(const char *line, size_t n, void *vctx)
{
    struct load *c = vctx;
    if (line[0] == '[') {
        c->kind = n == 13 && !memcmp(line, "[reassurance]", 13) ? ASK_REASSURE
                  : n == 7 && !memcmp(line, "[reask]", 7)       ? ASK_REASK
                  : n == 9 && !memcmp(line, "[command]", 9)     ? ASK_COMMAND
                                                                : 0;
        return;
    }
    c->w.n = 0;
    if (!c->kind || text_words(line, n, &c->w) < 0 || c->w.n == 0 || c->w.n > ASK_MAX_PHRASE)
        return;
    if (c->kind == ASK_REASK && c->w.n < 2)
        return;   /* "still", "again" alone are too common to say it */
    if (ph_n == ph_cap) {
        size_t cap = ph_cap ? ph_cap * 2 : 256;
        struct aphrase *v = realloc(ph, cap * sizeof *v);
        if (!v)
            return;
        ph = v;
        ph_cap = cap;
    }
    struct aphrase *p = &ph[ph_n++];
    memset(p, 0, sizeof *p);
    p->len = (unsigned char)c->w.n;
    p->kind = (unsigned char)c->kind;
    for (size_t i = 0; i < c->w.n; i++)
        p->h[i] = c->w.v[i].hash;
}

static int by_first(const void *a, const void *b)
{
    const struct aphrase *x = a, *y = b;
    if (x->h[0] != y->h[0])
        return x->h[0] < y->h[0] ? -1 : 1;
    return (int)y->len - (int)x->len;
}

static void ask_init(void)
{
    static int done;
    if (done)
        return;
    done = 1;
    const struct embed_blob *b = embed_find("detectors/data/asking.txt");
    struct load c = {0, {0}};
    if (b)
        text_each_line(b->data, load_line, &c);
    text_words_free(&c.w);
    if (ph)
        qsort(ph, ph_n, sizeof *ph, by_first);
}

/* The first phrase whose first word is h, or ph_n. */
static size_t first_of(uint64_t h)
{
    size_t lo = 0, hi = ph_n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ph[mid].h[0] < h)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

unsigned ask_kinds(const uint64_t *h, size_t n, unsigned char *mark)
{
    ask_init();
    unsigned kinds = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t k = first_of(h[i]); k < ph_n && ph[k].h[0] == h[i]; k++) {
            const struct aphrase *p = &ph[k];
            if (i + p->len > n)
                continue;
            size_t q = 1;
            while (q < p->len && h[i + q] == p->h[q])
                q++;
            if (q < p->len)
                continue;
            kinds |= p->kind;
            if (!mark)
                break;
            for (q = 0; q < p->len; q++)
                mark[i + q] |= p->kind;
        }
    return kinds;
}

int ask_question_mark(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '?')
            return 1;
        if (c == 0xEF && i + 2 < n && (unsigned char)s[i + 1] == 0xBC && (unsigned char)s[i + 2] == 0x9F)
            return 1;   /* U+FF1F FULLWIDTH QUESTION MARK */
        if (c == 0xD8 && i + 1 < n && (unsigned char)s[i + 1] == 0x9F)
            return 1;   /* U+061F ARABIC QUESTION MARK */
    }
    return 0;
}
