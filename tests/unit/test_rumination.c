/* test_rumination.c: check_rumination's fast paths give what its plain ones
 * give.
 *
 * Text that is all ASCII is cut into words from bitmaps and each history
 * item is compared in passes over those words; any other text goes through
 * libunistring and the word-by-word comparison. This file includes
 * rumination.c to reach both. */
#define rum_check      test_rum_check
#define rum_confidence test_rum_confidence
#include "../../detectors/rumination.c"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <cmocka.h>

static unsigned seed = 2026;

static unsigned rnd(unsigned n)
{
    seed = seed * 1103515245 + 12345;
    return (seed >> 16) % n;
}

struct hashes {
    uint64_t v[4096];
    size_t n;
};

static void collect(void *ctx, struct word *w)
{
    struct hashes *h = ctx;
    if (h->n < 4096)
        h->v[h->n++] = w->raw;
}

/* rumination's ASCII cutting finds the words libunistring finds (text.h),
 * across 64-byte blocks, joiners, digits, underscores and the text's end. */
static void ascii_words_are_unicode_words(void **state)
{
    (void)state;
    static const char alphabet[] = "abcXYZ019_.':,;!? \n\t-\"()/";
    struct text_words tw = {0};
    static struct hashes h;
    char buf[400];
    for (int round = 0; round < 20000; round++) {
        size_t n = (size_t)(round % 300);
        for (size_t i = 0; i < n; i++)
            buf[i] = alphabet[rnd(sizeof alphabet - 1)];
        _Alignas(16) char stack[4096];
        struct arena ar;
        ar_init(&ar, stack, sizeof stack);
        h.n = 0;
        assert_int_equal(words_ascii(buf, n, &ar, collect, &h), 0);
        ar_release(&ar);
        tw.n = 0;
        assert_int_equal(text_words_unicode(buf, n, &tw), 0);
        if (h.n != tw.n)
            fail_msg("round %d: %zu words vs %zu in \"%.*s\"", round, h.n, tw.n, (int)n, buf);
        for (size_t i = 0; i < h.n; i++)
            if (h.v[i] != tw.v[i].hash)
                fail_msg("round %d word %zu differs in \"%.*s\"", round, i, (int)n, buf);
    }
    text_words_free(&tw);
}

/* Words that exercise what the comparison does: stopwords, suffixes,
 * prefixes (auth, authentication), typos (revew), a concept phrase (turn
 * down), joined words and numbers, words longer than 16 and 64 bytes. */
static const char *const vocab[] = {
    "the",
    "a",
    "of",
    "to",
    "how",
    "do",
    "i",
    "is",
    "should",
    "clear",
    "cache",
    "caches",
    "clearing",
    "auth",
    "authentication",
    "authenticate",
    "revew",
    "review",
    "reviews",
    "turn",
    "down",
    "decline",
    "say",
    "no",
    "plan",
    "planning",
    "database",
    "databse",
    "migration",
    "migrate",
    "deploy",
    "rollback",
    "1,000",
    "3.5",
    "don't",
    "e.g",
    "x_y",
    "__",
    "visa",
    "trip",
    "internationalisation",
    "internationalization",
    "pneumonoultramicroscopicsilicovolcanoconiosisandthensomemorelettersthatpasssixtyfourbytes"};
static const char *const seps[] = {" ", " ", " ", ", ", ". ", "? ", "\n", ": ", " - "};

static size_t text(char *buf, size_t cap, size_t words)
{
    size_t n = 0;
    for (size_t i = 0; i < words; i++) {
        const char *w = vocab[rnd(sizeof vocab / sizeof vocab[0])], *s = seps[rnd(sizeof seps / sizeof seps[0])];
        size_t lw = strlen(w), ls = strlen(s);
        if (n + lw + ls + 8 >= cap)
            break;
        memcpy(buf + n, w, lw);
        n += lw;
        if (i + 1 < words) {
            memcpy(buf + n, s, ls);
            n += ls;
        }
    }
    buf[n] = '\0';
    return n;
}

/* The similarities as "index:similarity ..." for comparing two results. */
static void sims(const cJSON *out, char *buf, size_t n)
{
    size_t used = (size_t)snprintf(buf, n, "best %.6f:", cJSON_GetObjectItem(out, "best_similarity")->valuedouble);
    const cJSON *arr = cJSON_GetObjectItem(out, "similar_prompts"), *p;
    cJSON_ArrayForEach(p, arr) {
        if (used >= n)
            break;
        used += (size_t)snprintf(buf + used, n - used, " %s=%.6f", cJSON_GetObjectItem(p, "at")->valuestring,
                                 cJSON_GetObjectItem(p, "similarity")->valuedouble);
    }
}

static cJSON *args_of(const char *prompt, char items[][600], int nitems, const char *tail)
{
    cJSON *a = cJSON_CreateObject();
    char b[8192];
    snprintf(b, sizeof b, "%s%s", prompt, tail);
    cJSON_AddStringToObject(a, "current_prompt", b);
    cJSON_AddNumberToObject(a, "similarity_threshold", 0);
    cJSON_AddNumberToObject(a, "threshold_count", 2);
    cJSON_AddNumberToObject(a, "window_minutes", 1440);
    cJSON *h = cJSON_AddArrayToObject(a, "history");
    for (int i = 0; i < nitems; i++) {
        cJSON *it = cJSON_CreateObject();
        snprintf(b, sizeof b, "%s%s", items[i], tail);
        cJSON_AddStringToObject(it, "text", b);
        char at[32];
        snprintf(at, sizeof at, "2026-05-16T10:%02d:00Z", i);
        cJSON_AddStringToObject(it, "at", at);
        cJSON_AddItemToArray(h, it);
    }
    return a;
}

/* An item compared by the ASCII passes scores what it scores through
 * libunistring and the word-by-word comparison: the same texts with an emoji
 * (no word) after them take that way. Lower case only: a capitalised name
 * inside a sentence is told only in ASCII text. */
static void ascii_items_score_as_unicode_items(void **state)
{
    (void)state;
    static char items[12][600];
    char prompt[600], x[4096], y[4096];
    for (int round = 0; round < 1500; round++) {
        text(prompt, sizeof prompt, 1 + rnd(40));
        int nitems = 1 + (int)rnd(12);
        for (int i = 0; i < nitems; i++) {
            if (rnd(3) == 0) { /* the prompt again, with some words changed */
                memcpy(items[i], prompt, strlen(prompt) + 1);
                for (char *p = items[i]; *p; p++)
                    if (rnd(40) == 0)
                        *p = 'e';
            } else {
                text(items[i], sizeof items[i], 1 + rnd(60));
            }
        }
        cJSON *a = args_of(prompt, items, nitems, ""), *b = args_of(prompt, items, nitems, " \xF0\x9F\x99\x82");
        cJSON *oa = NULL, *ob = NULL;
        kerr ea = {0}, eb = {0};
        assert_int_equal(test_rum_check(a, 1778932800000LL, 0, &oa, &ea), 0);
        assert_int_equal(test_rum_check(b, 1778932800000LL, 0, &ob, &eb), 0);
        sims(oa, x, sizeof x);
        sims(ob, y, sizeof y);
        if (strcmp(x, y))
            fail_msg("round %d: \"%s\" scores\n  %s\nin ASCII, and\n  %s\nthrough libunistring", round, prompt, x, y);
        cJSON_Delete(oa);
        cJSON_Delete(ob);
        cJSON_Delete(a);
        cJSON_Delete(b);
    }
}

/* Words from several scripts, and names, for order_does_not_matter: Han
 * and kana alone and in pairs, forms that normalise to them (halfwidth ｱ is
 * ア, U+F900 is U+8C48) without being them, Latin with accents, capitals. */
static const char *const mixed[] = {
    "ア",         "ｱ",      "猫",        "犬",        "豈",           "豈",       "魚",
    "東京",       "天気",   "Straße",    "STRASSE",   "école",        "ÉCOLE",    "Japan",
    "Canada",     "visa",   "for",       "a",         "the",          "auth",     "authentication",
    "authorize",  "author", "authority", "authentic", "authenticity", "authored", "authoring",
    "authorship", "review", "revew",     "turn",      "down",         "decline",  "plan"};

static size_t mixed_text(char *buf, size_t cap, size_t words)
{
    size_t n = 0;
    for (size_t i = 0; i < words; i++) {
        const char *w = mixed[rnd(sizeof mixed / sizeof mixed[0])];
        const char *sep = rnd(4) ? " " : rnd(2) ? ". " : "";
        size_t lw = strlen(w), ls = strlen(sep);
        if (n + lw + ls + 1 >= cap)
            break;
        memcpy(buf + n, w, lw);
        n += lw;
        memcpy(buf + n, sep, ls);
        n += ls;
    }
    buf[n] = '\0';
    return n;
}

/* What an earlier prompt scores depends on it and the current prompt only,
 * not on the other prompts of the history or their order: each item scored
 * alone scores what it scores among the others. The memo is shared by all
 * the items of a call, so this is what keeps it honest. */
static void order_does_not_matter(void **state)
{
    (void)state;
    static char items[12][600];
    char prompt[600];
    for (int round = 0; round < 800; round++) {
        if (rnd(2))
            mixed_text(prompt, sizeof prompt, 1 + rnd(12));
        else
            text(prompt, sizeof prompt, 1 + rnd(30));
        int nitems = 2 + (int)rnd(10);
        for (int i = 0; i < nitems; i++) {
            if (rnd(2))
                mixed_text(items[i], sizeof items[i], 1 + rnd(12));
            else
                text(items[i], sizeof items[i], 1 + rnd(30));
        }
        cJSON *all = args_of(prompt, items, nitems, ""), *out = NULL;
        kerr e = {0};
        assert_int_equal(test_rum_check(all, 1778932800000LL, 0, &out, &e), 0);
        for (int i = 0; i < nitems; i++) {
            cJSON *one = args_of(prompt, items + i, 1, ""), *o1 = NULL;
            assert_int_equal(test_rum_check(one, 1778932800000LL, 0, &o1, &e), 0);
            double alone = cJSON_GetObjectItem(o1, "best_similarity")->valuedouble, among = 0;
            const cJSON *p;
            cJSON_ArrayForEach(p, cJSON_GetObjectItem(out, "similar_prompts")) {
                char want[32];
                snprintf(want, sizeof want, "2026-05-16T10:%02d:00Z", i);
                if (!strcmp(cJSON_GetObjectItem(p, "at")->valuestring, want))
                    among = cJSON_GetObjectItem(p, "similarity")->valuedouble;
            }
            if (nitems >= 2 && cJSON_IsTrue(cJSON_GetObjectItem(out, "detected")) && alone != among)
                fail_msg("round %d: \"%s\" against \"%s\": %.3f alone, %.3f among the others", round, prompt, items[i],
                         alone, among);
            cJSON_Delete(o1);
            cJSON_Delete(one);
        }
        cJSON_Delete(out);
        cJSON_Delete(all);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ascii_words_are_unicode_words),
        cmocka_unit_test(ascii_items_score_as_unicode_items),
        cmocka_unit_test(order_does_not_matter),
    };
    cmocka_set_message_output(CM_OUTPUT_TAP);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
