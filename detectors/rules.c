/* rules.c: matching and rewriting with PCRE2 (see rules.h).
 *
 * Patterns are compiled by the loader with PCRE2_UTF and matched here with a
 * match-data block per call. The subject's UTF-8 is checked once per rule
 * match, not by PCRE2 at every call (PCRE2_NO_UTF_CHECK, or pcre2_jit_match,
 * which skips the checks, for a pattern with JIT code); text that is not
 * valid UTF-8 matches nothing, as PCRE2's own check had it. A rewrite is
 * pcre2_substitute with PCRE2_SUBSTITUTE_GLOBAL, applied pattern by pattern,
 * so a replacement can use $1 and friends. Character limits count code
 * points. */
#include "rules.h"

#include "text.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

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
    int found = 0;
    pcre2_match_data *md = r->md ? r->md : pcre2_match_data_create(1, NULL);   /* only the whole match is read */
    if (!md)
        return 0;
    for (int p = 0; p < r->npatterns; p++) {
        size_t at = 0;
        while (at <= n) {
            /* at is on a character boundary (see below), as both calls require. */
            int rc = r->jit && r->jit[p] ? pcre2_jit_match(r->re[p], (PCRE2_SPTR)text, n, at, 0, md, NULL)
                                         : pcre2_match(r->re[p], (PCRE2_SPTR)text, n, at, PCRE2_NO_UTF_CHECK, md, NULL);
            if (rc < 0)
                break;
            PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
            if (found < max)
                spans[found] = (struct rule_span){ov[0], ov[1]};
            found++;
            at = ov[1] > ov[0] ? ov[1] : ov[1] + 1;   /* never loop on an empty match */
            while (at < n && ((unsigned char)text[at] & 0xC0) == 0x80)
                at++;                                 /* stay on a character boundary */
        }
    }
    if (md != r->md)
        pcre2_match_data_free(md);
    return found;
}

char *rule_rewrite(const struct rule *r, const char *text, size_t n)
{
    if (r->detector != RD_REGEX || !r->replacement)
        return NULL;
    char *cur = malloc(n + 1);
    if (!cur)
        return NULL;
    memcpy(cur, text, n);
    cur[n] = '\0';
    size_t cur_n = n;
    int changed = 0;
    for (int p = 0; p < r->npatterns; p++) {
        PCRE2_SIZE out_n = cur_n * 2 + 256;
        for (int tries = 0; tries < 4; tries++) {
            char *out = malloc(out_n);
            if (!out)
                break;
            PCRE2_SIZE len = out_n;
            int rc = pcre2_substitute(r->re[p], (PCRE2_SPTR)cur, cur_n, 0,
                                      PCRE2_SUBSTITUTE_GLOBAL | PCRE2_SUBSTITUTE_OVERFLOW_LENGTH, NULL, NULL,
                                      (PCRE2_SPTR)r->replacement, PCRE2_ZERO_TERMINATED, (PCRE2_UCHAR *)out, &len);
            if (rc == PCRE2_ERROR_NOMEMORY) {     /* len now says how much is needed */
                free(out);
                out_n = len + 1;
                continue;
            }
            if (rc > 0) {
                free(cur);
                cur = out;
                cur_n = len;
                changed = 1;
            } else {
                free(out);
            }
            break;
        }
    }
    if (!changed) {
        free(cur);
        return NULL;
    }
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
    pcre2_match_data_free(r->md);
    free_list(r->pattern, r->npatterns);
    free_list(r->fires, r->nfires);
    free_list(r->passes, r->npasses);
    memset(r, 0, sizeof *r);
}
