/* cfgdiff.c: a unified diff from keel's own splices, secrets masked (see cfgdiff.h). */
#include "cfgdiff.h"

#include <stdlib.h>
#include <string.h>

#define CONTEXT   2 /* unchanged lines shown around a change */
#define LONG_LINE 1024 /* longer lines print as the part around the change */
#define AROUND    100
#define PART_MAX  400 /* the most of a long line shown */

char *cfgdiff_apply(const char *a, size_t an, const struct cfg_edit *ed, int ned, size_t *bn)
{
    size_t n = an;
    for (int i = 0; i < ned; i++)
        n = n - ed[i].del + ed[i].len;
    char *b = malloc(n + 1), *w = b;
    if (!b)
        return NULL;
    size_t from = 0;
    for (int i = 0; i < ned; i++) {
        memcpy(w, a + from, ed[i].at - from);
        w += ed[i].at - from;
        memcpy(w, ed[i].text, ed[i].len);
        w += ed[i].len;
        from = ed[i].at + ed[i].del;
    }
    memcpy(w, a + from, an - from);
    w += an - from;
    *w = '\0';
    *bn = n;
    return b;
}

/* Offsets where each line starts; [k] = n for the end. */
static size_t *line_starts(const char *s, size_t n, size_t *k)
{
    size_t c = 1;
    for (size_t i = 0; i < n; i++)
        c += s[i] == '\n' && i + 1 < n;
    size_t *l = malloc((c + 1) * sizeof *l);
    if (!l)
        return NULL;
    size_t j = 0;
    l[j++] = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] == '\n' && i + 1 < n)
            l[j++] = i + 1;
    l[j] = n;
    *k = c;
    return l;
}

static size_t line_of(const size_t *l, size_t k, size_t at)
{
    size_t lo = 0, hi = k; /* the last start <= at */
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (l[mid] <= at)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

static size_t utf8_back(const char *s, size_t at, size_t floor)
{
    while (at > floor && ((unsigned char)s[at] & 0xC0) == 0x80)
        at--;
    return at;
}

/* s[from..to) with secret spans shown as "***". */
static void put_masked(FILE *out, const char *s, size_t from, size_t to, const struct cfg_span *sp, int nsp)
{
    size_t i = from;
    while (i < to) {
        int hit = -1;
        for (int k = 0; k < nsp && hit < 0; k++)
            if (sp[k].at <= i && i < sp[k].end)
                hit = k;
        if (hit >= 0) {
            fputs("\"***\"", out);
            i = sp[hit].end;
            continue;
        }
        size_t next = to; /* up to the next secret */
        for (int k = 0; k < nsp; k++)
            if (sp[k].at > i && sp[k].at < next)
                next = sp[k].at;
        fwrite(s + i, 1, next - i, out);
        i = next;
    }
}

/* One line of s, with its prefix; focus [f0, f1) is the changed part. A
 * line too long to read whole is shown around the change, said so, and
 * marked "~" before its prefix: the diff is then for reading, and patch(1)
 * refuses it rather than write the part shown into the file. */
static void put_line(FILE *out, char prefix, const char *s, size_t ls, size_t le, size_t f0, size_t f1,
                     const struct cfg_span *sp, int nsp)
{
    if (le > ls && s[le - 1] == '\n')
        le--;
    if (le - ls <= LONG_LINE) {
        fputc(prefix, out);
        put_masked(out, s, ls, le, sp, nsp);
    } else {
        fputc('~', out);
        fputc(prefix, out);
        if (f0 < ls || f0 > le)
            f0 = f1 = ls;
        if (f1 > le)
            f1 = le;
        size_t from = f0 > ls + AROUND ? utf8_back(s, f0 - AROUND, ls) : ls;
        size_t to = f1 + AROUND < le ? utf8_back(s, f1 + AROUND, ls) : le;
        if (to - from > PART_MAX)
            to = utf8_back(s, from + PART_MAX, ls);
        fprintf(out, "%s", from > ls ? "..." : "");
        put_masked(out, s, from, to, sp, nsp);
        fprintf(out, "%s  (a line of %zu bytes, shown in part)", to < le ? "..." : "", le - ls);
    }
    fputc('\n', out);
}

/* The lines one group of edits touches, on each side: first and last, the
 * last one before the first when a side has none (whole lines put in or
 * taken out). */
struct block {
    long a0, a1, b0, b1; /* old and new */
    size_t fa0, fa1, fb0, fb1; /* the changed bytes, old and new */
};

/* The line that starts at or holds pos: k (one past the last) at the end of
 * a text that ends its last line. */
static long line_at(const size_t *l, size_t k, const char *s, size_t n, size_t pos)
{
    return pos == n && n && s[n - 1] == '\n' ? (long)k : (long)line_of(l, k, pos < n ? pos : (n ? n - 1 : 0));
}

void cfgdiff_print(FILE *out, const char *path, const char *a, size_t an, const struct cfg_span *sa, int nsa,
                   const char *b, size_t bn, const struct cfg_span *sb, int nsb, const struct cfg_edit *ed, int ned)
{
    size_t ka, kb;
    size_t *la = line_starts(a, an, &ka), *lb = line_starts(b, bn, &kb);
    struct block *bl = calloc((size_t)ned + 1, sizeof *bl);
    if (!la || !lb || !bl || !ned) {
        free(la), free(lb), free(bl);
        return;
    }
    /* Edits touching the same lines make one block. */
    int nb = 0;
    long shift = 0;
    for (int i = 0; i < ned; i++) {
        size_t at = ed[i].at, bat = (size_t)((long)at + shift), del = ed[i].del, len = ed[i].len;
        /* Whole lines put in or taken out at a line's start touch no line
         * on the other side: that side's range is empty there. */
        int start = at == 0 || a[at - 1] == '\n';
        int lines_out = start && del && !len && a[at + del - 1] == '\n';
        int lines_in = start && len && !del && ed[i].text[len - 1] == '\n';
        struct block x = {0, 0, 0, 0, at, at + del, bat, bat + len};
        x.a0 = line_at(la, ka, a, an, at);
        x.a1 = lines_in ? x.a0 - 1 : (long)line_of(la, ka, del ? at + del - 1 : at < an ? at : (an ? an - 1 : 0));
        x.b0 = line_at(lb, kb, b, bn, bat);
        x.b1 = lines_out ? x.b0 - 1 : (long)line_of(lb, kb, len ? bat + len - 1 : bat < bn ? bat : (bn ? bn - 1 : 0));
        if (!lines_in && x.a0 > x.a1) /* a change inside the last line of a text that ends it */
            x.a0 = x.a1;
        if (!lines_out && x.b0 > x.b1)
            x.b0 = x.b1;
        shift += (long)len - (long)del;
        if (nb && x.a0 <= bl[nb - 1].a1) {
            struct block *y = &bl[nb - 1];
            y->a1 = x.a1 > y->a1 ? x.a1 : y->a1;
            y->b1 = x.b1 > y->b1 ? x.b1 : y->b1;
            y->fa1 = x.fa1;
            y->fb1 = x.fb1;
        } else {
            bl[nb++] = x;
        }
    }
    /* A block's lines the same on both sides at its edges are context: at
     * its start, and at its end; one side may end with none, never both. */
    for (int i = 0; i < nb; i++) {
        struct block *x = &bl[i];
        while ((x->a0 < x->a1 || x->b0 < x->b1) && x->a0 <= x->a1 && x->b0 <= x->b1 &&
               la[x->a0 + 1] - la[x->a0] == lb[x->b0 + 1] - lb[x->b0] &&
               !memcmp(a + la[x->a0], b + lb[x->b0], la[x->a0 + 1] - la[x->a0]))
            x->a0++, x->b0++;
        while ((x->a0 < x->a1 || x->b0 < x->b1) && x->a0 <= x->a1 && x->b0 <= x->b1 &&
               la[x->a1 + 1] - la[x->a1] == lb[x->b1 + 1] - lb[x->b1] &&
               !memcmp(a + la[x->a1], b + lb[x->b1], la[x->a1 + 1] - la[x->a1]))
            x->a1--, x->b1--;
    }
    fprintf(out, "--- a%s\n+++ b%s\n", path, path);
    int a_empty = an == 0, b_empty = bn == 0;
    long last = an ? (long)ka - 1 : -1; /* an empty text has no line */
    for (int i = 0; i < nb;) {
        int j = i; /* blocks within 2 x CONTEXT lines share a hunk */
        while (j + 1 < nb && bl[j + 1].a0 <= bl[j].a1 + 2 * CONTEXT + 1)
            j++;
        long c0 = bl[i].a0 > CONTEXT ? bl[i].a0 - CONTEXT : 0;
        long c1 = bl[j].a1 + CONTEXT < last ? bl[j].a1 + CONTEXT : last;
        long olds = c1 - c0 + 1, news = olds;
        for (int k = i; k <= j; k++)
            news = news - (bl[k].a1 - bl[k].a0 + 1) + (bl[k].b1 - bl[k].b0 + 1);
        long bstart = bl[i].b0 - (bl[i].a0 - c0);
        /* a side with no line in the hunk starts at the line before it (0 at the top) */
        fprintf(out, "@@ -%ld,%ld +%ld,%ld @@\n",
                a_empty    ? 0
                    : olds ? c0 + 1
                           : c0,
                a_empty ? 0 : olds,
                b_empty    ? 0
                    : news ? bstart + 1
                           : bstart,
                b_empty ? 0 : news);
        long l = c0;
        for (int k = i; k <= j; k++) {
            for (; l < bl[k].a0; l++)
                put_line(out, ' ', a, la[l], la[l + 1], 0, 0, sa, nsa);
            if (!a_empty)
                for (long m = bl[k].a0; m <= bl[k].a1; m++)
                    put_line(out, '-', a, la[m], la[m + 1], bl[k].fa0, bl[k].fa1, sa, nsa);
            if (!b_empty)
                for (long m = bl[k].b0; m <= bl[k].b1; m++)
                    put_line(out, '+', b, lb[m], lb[m + 1], bl[k].fb0, bl[k].fb1, sb, nsb);
            l = bl[k].a1 + 1 > l ? bl[k].a1 + 1 : l;
        }
        for (; l <= c1 && !a_empty; l++)
            put_line(out, ' ', a, la[l], la[l + 1], 0, 0, sa, nsa);
        i = j + 1;
    }
    free(la);
    free(lb);
    free(bl);
}
