/* test_rumination.c: check_rumination's parts, each against what it is
 * meant to do.
 *
 * Its fast paths give what its plain ones give: text that is all ASCII is
 * cut into words in one pass and each history item is compared in passes
 * over those words; any other text goes through libunistring and the
 * word-by-word comparison. The frame worked out on bitmaps is the frame
 * worked out word by word. What a text names (objects_of), prefixes, typos,
 * phrases and names hold as they are described, in prompts of any length.
 * This file includes rumination.c and the files of its parts to reach them. */
#define rum_check      test_rum_check
#define rum_confidence test_rum_confidence
#include "../../detectors/rumcompare.c"
#include "../../detectors/rumination.c"
#include "../../detectors/rumobjects.c"
#include "../../detectors/rumtables.c"
#include "../../detectors/rumwords.c"

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

/* Words as a cutter gives them: their hashes, and whether each names a
 * thing. */
struct hashes {
    uint64_t v[4096];
    unsigned name[4096];
    size_t n;
};

static void collect(void *ctx, struct word *w)
{
    struct hashes *h = ctx;
    if (h->n < 4096) {
        h->name[h->n] = w->name;
        h->v[h->n++] = w->raw;
    }
}

/* rumination's ASCII cutting finds the words libunistring finds (text.h),
 * across 64-byte blocks, joiners, digits, underscores and the text's end;
 * and the same words name things (capitalised inside a sentence) whichever
 * path cuts them. */
static void ascii_words_are_unicode_words(void **state)
{
    (void)state;
    static const char alphabet[] = "abcAXYZ019_.':,;!? \n\t-\"()/@[`{";
    struct text_words tw = {0}, tw2 = {0};
    static struct hashes h, u;
    char buf[400];
    for (int round = 0; round < 20000; round++) {
        size_t n = (size_t)(round % 300);
        for (size_t i = 0; i < n; i++)
            buf[i] = alphabet[rnd(sizeof alphabet - 1)];
        _Alignas(16) char stack[4096];
        struct arena ar;
        ar_init(&ar, stack, sizeof stack);
        h.n = 0;
        char *exact = malloc(n ? n : 1); /* the text alone in its block: a read past it is seen (ASan) */
        assert_non_null(exact);
        memcpy(exact, buf, n);
        assert_int_equal(words_ascii(exact, n, &ar, collect, &h), 0);
        free(exact);
        ar_release(&ar);
        tw.n = 0;
        assert_int_equal(text_words_unicode(buf, n, &tw), 0);
        if (h.n != tw.n)
            fail_msg("round %d: %zu words vs %zu in \"%.*s\"", round, h.n, tw.n, (int)n, buf);
        for (size_t i = 0; i < h.n; i++)
            if (h.v[i] != tw.v[i].hash)
                fail_msg("round %d word %zu differs in \"%.*s\"", round, i, (int)n, buf);
        u.n = 0;
        assert_int_equal(words_unicode(buf, n, &tw2, NULL, collect, &u), 0);
        assert_int_equal(u.n, h.n);
        for (size_t i = 0; i < h.n; i++)
            if (h.name[i] != u.name[i])
                fail_msg("round %d word %zu: name %u (ASCII) but %u (unicode) in \"%.*s\"", round, i, h.name[i],
                         u.name[i], (int)n, buf);
    }
    text_words_free(&tw);
    text_words_free(&tw2);
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

/* objects_of(text) holds exactly want's things, in their order; a trailing #
 * marks a number. */
static void objs_are(const char *text, const char *const *want)
{
    struct objs got, exp;
    memset(&got, 0, sizeof got);
    memset(&exp, 0, sizeof exp);
    objects_of(text, strlen(text), &got);
    for (; *want; want++) {
        size_t l = strlen(*want);
        int num = l && (*want)[l - 1] == '#';
        obj_add(&exp, *want, l - (size_t)num, num);
    }
    if (got.many || got.n != exp.n || got.num != exp.num || memcmp(got.h, exp.h, got.n * sizeof got.h[0]))
        fail_msg("\"%s\": %u things (numbers %#llx, many %d), want %u (numbers %#llx)", text, got.n,
                 (unsigned long long)got.num, got.many, exp.n, (unsigned long long)exp.num);
}
#define OBJS(text, ...) objs_are(text, (const char *const[]){__VA_ARGS__, NULL})
#define NO_OBJS(text)   objs_are(text, (const char *const[]){NULL})

/* What a text names, by which the same question about two things is told
 * apart: numbers however written, code-like tokens, camelCase, quoted
 * spans, Latin words in text mostly in another script. */
static void objects_are_what_a_text_names(void **state)
{
    (void)state;
    OBJS("Rename getUserName in src/app.ts", "getUserName", "src/app.ts");
    OBJS("Is PR 412 merged?", "412#");
    OBJS("5,000 or 5k users, order 05", "5000#", "05#");
    OBJS("a 50-minute talk on 2GB of RAM", "50#", "2#");
    OBJS("Alpha_Beta or alpha_beta", "alpha_beta"); /* case folded, A too */
    OBJS("bump v0 to v1", "v0", "v1");
    OBJS("use getAll or aToken", "getAll", "aToken"); /* camel at A, lower at a */
    NO_OBJS("foo_ and bar_ or ab.c"); /* punctuation at a token's end, a short tail */
    OBJS("a_b and ab.cd", "a_b", "ab.cd");
    OBJS("the 1990's 'legacy' mode", "1990's", "legacy"); /* no quote after a digit */
    OBJS("\"`npm test` fails\"", "`npm test` fails", "npm test");
    OBJS("\"\" then \"ab\"", "ab"); /* an empty span opens nothing */
    NO_OBJS("```\ncode\n```");
    /* Latin words of three letters or more, in text mostly in another script */
    OBJS("東京駅 の abc", "abc");
    NO_OBJS("東京駅 の ab");
    NO_OBJS("日本語 abc"); /* as many letters as characters of the other script */
    /* a script that writes no space between words, or joins its particles
     * to them, ends a name as a space does: a sentence is not one thing */
    OBJS("健康診断でALTが52って出たんですけど", "ALT", "52#");
    OBJS("何度もごめんなさい。ALTの52って本当に大丈夫？", "ALT", "52#");
    OBJS("E0502가 또 나와요", "E0502");
    /* each range's first and last character end a name; the ones just
     * outside them (and any other of three bytes or four) do not */
    static const struct {
        const char *c;
        int joins;
    } edge[] = {
        {"\xe2\xb9\xbf", 0},     {"\xe2\xba\x80", 1}, /* U+2E7F, U+2E80 */
        {"\xe9\xbf\xbf", 1},     {"\xea\x80\x80", 0}, /* U+9FFF, U+A000 */
        {"\xea\xaf\xbf", 0},     {"\xea\xb0\x80", 1}, /* U+ABFF, U+AC00 */
        {"\xed\x9e\xaf", 1},     {"\xed\x9e\xb0", 0}, /* U+D7AF, U+D7B0 */
        {"\xef\xa3\xbf", 0},     {"\xef\xa4\x80", 1}, /* U+F8FF, U+F900 */
        {"\xef\xab\xbf", 1},     {"\xef\xac\x80", 0}, /* U+FAFF, U+FB00 */
        {"\xef\xbb\xbf", 0},     {"\xef\xbc\x80", 1}, /* U+FEFF, U+FF00 */
        {"\xef\xbf\xaf", 1},     {"\xef\xbf\xb0", 0}, /* U+FFEF, U+FFF0 */
        {"\xf0\x9f\xbf\xbf", 0}, {"\xf0\xa0\x80\x80", 1}, /* U+1FFFF, U+20000 */
        {"\xf0\xbf\xbf\xbf", 1}, {"\xf1\x80\x80\x80", 0}, /* U+3FFFF, U+40000 */
        {"\xe2\x82\xac", 0}, /* U+20AC, the euro sign */
    };
    for (size_t k = 0; k < sizeof edge / sizeof edge[0]; k++) {
        char t[32];
        snprintf(t, sizeof t, "a1%sb2", edge[k].c);
        if (edge[k].joins)
            OBJS(t, "a1", "b2");
        else
            OBJS(t, t);
    }
    OBJS("还是这个ERESOLVE报错（第10行），怎么回事", "ERESOLVE", "10#");
    /* a pasted text is not compared by what it names */
    char big[OBJ_TEXT_MAX + 2];
    memset(big, ' ', sizeof big);
    memcpy(big, "a_b", 3);
    big[OBJ_TEXT_MAX] = '\0';
    OBJS(big, "a_b");
    big[OBJ_TEXT_MAX] = ' ', big[OBJ_TEXT_MAX + 1] = '\0';
    struct objs o;
    objects_of(big, OBJ_TEXT_MAX + 1, &o);
    assert_true(o.many);
}

static void objs(struct objs *o, const char *text)
{
    objects_of(text, strlen(text), o); /* o is reused as rum_run reuses it: its old hashes stay past n */
}

/* Two texts name different things when each names one the other does not
 * and they share numbers at most; the same things when they share a name or
 * all they name. The structures are reused, as rum_run reuses them. */
static void objects_differ_or_match(void **state)
{
    (void)state;
    struct objs a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    objs(&a, "chapter 3");
    objs(&b, "chapter 4");
    assert_true(objects_differ(&a, &b));
    assert_false(objects_same(&a, &b));
    objs(&a, "3 intro.md");
    objs(&b, "chapter 3"); /* b names nothing a does not */
    assert_false(objects_differ(&a, &b));
    objs(&b, "chapter 3 and 4");
    objs(&a, "chapter 3"); /* a's old intro.md stays past its end */
    assert_false(objects_differ(&a, &b));
    assert_false(objects_same(&a, &b));
    objs(&a, "xx.ts yy.ts");
    objs(&a, "zz.ts");
    objs(&b, "yy.ts");
    assert_false(objects_same(&a, &b));
    objs(&b, "yy.ts ww.ts");
    objs(&b, "qq.ts");
    objs(&a, "ww.ts");
    assert_false(objects_same(&a, &b));
    objs(&b, "ww.ts and 3");
    assert_true(objects_same(&a, &b)); /* a name both hold */
    objs(&a, "chapter 3 and 4");
    objs(&b, "4, then 3");
    assert_true(objects_same(&a, &b)); /* all they name */
    assert_true(all_numbers(&a));
    objs(&a, "chapter 3 in ab.ts");
    assert_false(all_numbers(&a));
    objs(&a, "chapter three");
    assert_false(all_numbers(&a));
}

/* A lone kana or Han character is a word of its own kind, from the first
 * letter of each block; a number is one word to runs of words. */
static void characters_and_numbers(void **state)
{
    (void)state;
    assert_int_equal(ideograph("\xE3\x81\x81", 3), IDEO_HIRA); /* U+3041 */
    assert_int_equal(ideograph("\xE3\x82\x9F", 3), IDEO_HIRA); /* U+309F */
    assert_int_equal(ideograph("\xE3\x82\xA1", 3), IDEO_KATA); /* U+30A1 */
    assert_int_equal(ideograph("\xE3\x90\x80", 3), IDEO_HAN); /* U+3400 */
    assert_int_equal(ideograph("\xE4\xB8\x80", 3), IDEO_HAN); /* U+4E00 */
    assert_int_equal(ideograph("\xE3\x80\xBF", 3), 0); /* U+303F */
    assert_int_equal(ideograph("\xE4\xB7\x80", 3), 0); /* U+4DC0 */
    assert_true(run_word("1,000", 5, 7) == RUN_NUMBER);
    assert_true(run_word("3.5", 3, 7) == RUN_NUMBER);
    assert_true(run_word("v1", 2, 7) == 7);
    assert_true(run_word("1;0", 3, 7) == 7);
}

/* A capitalised word inside a sentence names something; the first word of
 * a sentence does not. */
static void names_inside_a_sentence(void **state)
{
    (void)state;
    static const char t[] = "we fly to Austin. Then Boston and Zurich: Amsterdam";
    _Alignas(16) char stack[4096];
    struct arena ar;
    ar_init(&ar, stack, sizeof stack);
    static struct hashes f;
    f.n = 0;
    assert_int_equal(words_ascii(t, sizeof t - 1, &ar, collect, &f), 0);
    ar_release(&ar);
    static const unsigned want[] = {0, 0, 0, 1, 0, 1, 0, 1, 0};
    assert_int_equal(f.n, 9);
    for (size_t i = 0; i < 9; i++)
        if (f.name[i] != want[i])
            fail_msg("word %zu of \"%s\": name %u", i, t, f.name[i]);
    /* in text that is not all ASCII: a capital letter that is not ASCII
     * names (Köln), and a CJK full stop, question or exclamation mark right
     * before a word ends a sentence as . ? ! do */
    static const char u[] = "nach Köln。Paris und Lyon？Bonn！Ulm";
    struct text_words tw = {0};
    f.n = 0;
    assert_int_equal(words_unicode(u, sizeof u - 1, &tw, NULL, collect, &f), 0);
    text_words_free(&tw);
    static const unsigned uwant[] = {0, 1, 0, 0, 1, 0, 0};
    assert_int_equal(f.n, 7);
    for (size_t i = 0; i < 7; i++)
        if (f.name[i] != uwant[i])
            fail_msg("word %zu of \"%s\": name %u", i, u, f.name[i]);
}

static double best_of(const char *prompt, const char *item)
{
    cJSON *a = cJSON_CreateObject(), *o = NULL;
    cJSON_AddStringToObject(a, "current_prompt", prompt);
    cJSON_AddNumberToObject(a, "similarity_threshold", 0);
    cJSON_AddNumberToObject(a, "window_minutes", 1440);
    cJSON *it = cJSON_CreateObject();
    cJSON_AddStringToObject(it, "text", item);
    cJSON_AddStringToObject(it, "at", "2026-05-16T10:00:00Z");
    cJSON_AddItemToArray(cJSON_AddArrayToObject(a, "history"), it);
    kerr e = {0};
    assert_int_equal(test_rum_check(a, 1778932800000LL, 0, &o, &e), 0);
    double b = cJSON_GetObjectItem(o, "best_similarity")->valuedouble;
    cJSON_Delete(o);
    cJSON_Delete(a);
    return b;
}

/* A phrase of the lexicon is its concept (turn down is decline); a name
 * matches a name it begins (BER, Berlin) either way round; another name
 * (DUB) makes it the same question about another place. */
static void phrases_and_short_names(void **state)
{
    (void)state;
    assert_true(best_of("should I turn down the offer", "should I decline the offer") == 1.0);
    assert_true(best_of("should I decline the offer", "should I turn down the offer") == 1.0);
    /* its words give way to the concept, and only its own */
    assert_true(best_of("cache turn down", "cache") == 0.5);
    /* a prompt of a phrase says two words: an earlier one saying two things
     * more (nervous, tomorrow) says more than it; one saying one thing more
     * does not, its phrase's words shared */
    assert_true(best_of("that job interview?", "so nervous, tomorrow job interview?") == 0.0);
    assert_true(best_of("that job interview?", "job interview tomorrow?") == 1.0);
    /* and its stopwords ("hand in my notice") say nothing */
    assert_true(best_of("hand in my notice?", "so nervous, tomorrow hand in my notice?") == 0.0);
    static const char *const city[] = {"is my flight to Berlin delayed or on time today",
                                       "the flight to Berlin: delayed today or on time"},
                             *code[] = {"the %s flight: delayed today or on time",
                                        "is my %s flight delayed or on time today"};
    /* a prompt of names only is no frame about another name: the names
     * shared count */
    assert_true(best_of("so Berlin and Dublin?", "so Dublin and Paris?") == 0.5);
    for (int k = 0; k < 2; k++) {
        char ber[128], dub[128];
        snprintf(ber, sizeof ber, code[k], "BER");
        snprintf(dub, sizeof dub, code[k], "DUB");
        double b = k ? best_of(ber, city[k]) : best_of(city[k], ber),
               d = k ? best_of(dub, city[k]) : best_of(city[k], dub);
        if (!(b > 0.5 && d == 0))
            fail_msg("%s scores %.3f with BER, %.3f with DUB", city[k], b, d);
    }
    /* the same with a letter that is not ASCII anywhere in the text: the
     * same question about another place, whichever path cut the words */
    assert_true(best_of("fait-il froid à Montréal en janvier ?", "fait-il froid à Québec en janvier ?") == 0.0);
    assert_true(best_of("fait-il froid a Montreal en janvier ?", "fait-il froid a Quebec en janvier ?") == 0.0);
    assert_true(best_of("fait-il froid à Montréal en janvier ?", "fait-il très froid à Montréal en janvier ?") > 0.5);
}

/* A word of random letters, 3 to 12 of them. */
static size_t random_word(char *b)
{
    size_t l = 3 + rnd(10);
    for (size_t i = 0; i < l; i++)
        b[i] = (char)('a' + rnd(26));
    return l;
}

/* A prompt scores 1 against itself however many words it has: its tables
 * grow from 16 entries as its words come, and nothing is lost on the way;
 * nor are the words of a long history in the memo. */
static void a_prompt_matches_itself(void **state)
{
    (void)state;
    static char p[8000], h[1000];
    for (int round = 0; round < 40; round++) {
        size_t words = 8 + rnd(round < 20 ? 200 : 1500), n = 0;
        for (size_t i = 0; i < words && n + 16 < sizeof p; i++) {
            n += random_word(p + n);
            p[n++] = i % 9 == 8 ? '.' : ' ';
        }
        p[n] = '\0';
        cJSON *a = cJSON_CreateObject();
        cJSON_AddStringToObject(a, "current_prompt", p);
        cJSON_AddNumberToObject(a, "threshold_count", 2);
        cJSON_AddNumberToObject(a, "window_minutes", 1440);
        cJSON *hist = cJSON_AddArrayToObject(a, "history");
        for (int k = 0; k < 30; k++) { /* other words first, then the prompt again */
            size_t m = 0;
            for (size_t i = 0; i < 60; i++) {
                m += random_word(h + m);
                h[m++] = ' ';
            }
            h[m] = '\0';
            cJSON *it = cJSON_CreateObject();
            cJSON_AddStringToObject(it, "text", k == 29 ? p : h);
            char at[32];
            snprintf(at, sizeof at, "2026-05-16T10:%02d:00Z", k);
            cJSON_AddStringToObject(it, "at", at);
            cJSON_AddItemToArray(hist, it);
        }
        cJSON *o = NULL;
        kerr e = {0};
        assert_int_equal(test_rum_check(a, 1778932800000LL, 0, &o, &e), 0);
        double best = cJSON_GetObjectItem(o, "best_similarity")->valuedouble;
        if (best != 1.0)
            fail_msg("round %d: a prompt of %zu words scores %.4f against itself", round, words, best);
        cJSON_Delete(o);
        cJSON_Delete(a);
    }
}

struct runhs {
    uint64_t v[4096];
    unsigned char content[4096];
    size_t n;
};

/* An item's words as the comparison sees them: what runs see, whether each
 * is a content word, and the prompt's keys each occurrence holds (its own,
 * by word_hits, and a phrase's concept or a character pair ending there). */
struct iwords {
    struct runhs r;
    struct cur *c;
    long keys[4096][PENDING_MAX + 2];
    unsigned nk[4096];
    uint64_t raw[4096];
    unsigned char foreign[4096]; /* a content word holding no key of the prompt, and none of its names */
    unsigned char name[4096];
};

static void collect_item_word(void *ctx, struct word *w)
{
    struct iwords *x = ctx;
    struct runhs *r = &x->r;
    if (r->n >= 4096)
        return;
    struct pending p;
    p.n = 0;
    if (w->key)
        word_hits(x->c, &p, w);
    unsigned n = 0;
    for (unsigned q = 0; q < p.n; q++)
        x->keys[r->n][n++] = p.k[q];
    long k2 = w->key2 ? map_get(&x->c->keys, w->key2) : -1, kc = w->concept ? map_get(&x->c->keys, w->concept) : -1;
    if (k2 >= 0)
        x->keys[r->n][n++] = k2;
    if (kc >= 0)
        x->keys[r->n][n++] = kc;
    x->nk[r->n] = n;
    x->raw[r->n] = w->raw;
    x->foreign[r->n] = w->key && !p.n && !(w->p3 && map_get(&x->c->name3, w->p3) >= 0);
    x->name[r->n] = (unsigned char)w->name;
    r->content[r->n] = w->key != 0;
    r->v[r->n++] = w->runh;
}

/* The frame worked out on bitmaps, 64 words at a time, is the frame the
 * words make one by one: a word is framed when one of the RUN runs through
 * it is shared and has at most FRAME_MAXC content words (counted where that
 * run stands last in the prompt), or one of the runs that start the
 * LONG_RUNS + RUN - 1 words up to it begins LONG_RUNS shared runs in a row;
 * the covered words are those of shared runs; a content word is one with a
 * key or a pair key. Shared runs are found here from the words' hashes. */
static void frames_are_word_by_word(void **state)
{
    (void)state;
    static char prompt[6000], item[6000];
    static unsigned char pframed[4096]; /* the prompt's content words in its frame */
    unsigned char *held = malloc(4096);
    uint64_t *runh = malloc(4096 * sizeof *runh);
    assert_non_null(held);
    assert_non_null(runh);
    int compared = 0;
    for (int round = 0; round < 300; round++) {
        size_t n =
            round % 2 ? text(prompt, sizeof prompt, 20 + rnd(400)) : mixed_text(prompt, sizeof prompt, 20 + rnd(300));
        if (round % 6 == 0) { /* a kana, which is no key alone, then a Han character: the first key is the pair's */
            memmove(prompt + 10, prompt, n + 1);
            memcpy(prompt, "\xE3\x81\xAE\xE6\x9D\xB1\xE4\xBA\xAC ", 10); /* の東京 */
            n += 10;
        }
        /* the prompt again with words changed, dropped or added here and there */
        size_t m = 0;
        for (size_t i = 0; i < n && m + 40 < sizeof item; i++) {
            unsigned r = rnd(60);
            if (r == 0 && prompt[i] != ' ')
                item[m++] = 'q';
            else if (r == 1)
                m += (size_t)snprintf(item + m, sizeof item - m, " then ");
            else if (r != 2)
                item[m++] = prompt[i];
        }
        item[m] = '\0';
        _Alignas(16) char stack[32768];
        struct arena ar;
        ar_init(&ar, stack, sizeof stack);
        struct text_words tw = {0};
        struct cur c;
        memset(&c, 0, sizeof c);
        lex_init(STEM_EN);
        rum_lang = STEM_EN;
        assert_int_equal(cur_init(&c, prompt, n, &tw, &ar), 0);
        double sim;
        assert_int_equal(cur_similarity(&c, item, m, &tw, 1, &sim), 0);
        /* the item's words, once for both sides */
        static struct iwords ix;
        struct runhs *iw = &ix.r;
        iw->n = 0;
        ix.c = &c;
        assert_int_equal(each_word(item, m, &tw, &ar, collect_item_word, &ix), 0);
        memset(pframed, 0, sizeof pframed);
        if (c.o.any_run && c.nw < 4096) {
            compared++;
            size_t nw = c.nw, covered = 0;
            /* the runs of three words the item shares, by where they start in the prompt */
            memset(held, 0, nw);
            for (size_t p = 0; p + RUN <= nw; p++) {
                runh[p] = run_hash(c.w[p].runh * RUN_A, c.w[p + 1].runh * RUN_B, c.w[p + 2].runh);
                for (size_t q = 0; q + RUN <= iw->n && !held[p]; q++)
                    held[p] = runh[p] == run_hash(iw->v[q] * RUN_A, iw->v[q + 1] * RUN_B, iw->v[q + 2]);
            }
            for (size_t p = 0; p < nw; p++) {
                int framed = 0, content = c.ki[p] >= 0 || c.ki2[p] >= 0;
                for (size_t t = 0; t < RUN && t <= p; t++) {
                    size_t s = p - t, nc = 0;
                    if (!held[s])
                        continue;
                    /* its content words where the same run stands last (a
                     * pair key depends on the word before the run) */
                    size_t last = s;
                    for (size_t q = s + 1; q + RUN <= nw; q++)
                        if (runh[q] == runh[s])
                            last = q;
                    for (size_t q = last; q < last + RUN; q++)
                        nc += c.ki[q] >= 0 || c.ki2[q] >= 0;
                    framed |= nc <= FRAME_MAXC;
                }
                for (size_t t = 0; t < LONG_RUNS + RUN - 1 && t <= p; t++) {
                    size_t s = p - t, k = 0;
                    while (k < LONG_RUNS && s + k < nw && held[s + k])
                        k++;
                    framed |= k == LONG_RUNS;
                }
                covered += held[p] || (p >= 1 && held[p - 1]) || (p >= 2 && held[p - 2]);
                if (!!(c.bcont[p / 64] >> (p % 64) & 1) != content)
                    fail_msg("round %d: word %zu of %zu: content %d", round, p, nw, content);
                if (!!(c.bfr[p / 64] >> (p % 64) & 1) != framed)
                    fail_msg("round %d: word %zu of %zu: framed %d on the bitmaps, %d word by word", round, p, nw,
                             !framed, framed);
                pframed[p] = (unsigned char)(framed && content);
            }
            if (covered != c.o.covered)
                fail_msg("round %d: %zu words covered on the bitmaps, %zu word by word", round, c.o.covered, covered);
        }
        if (c.keys.n) {
            /* The item's side, as its words stream past: a shared run frames
             * its RUN words when it has at most FRAME_MAXC content words, and
             * LONG_RUNS or more shared runs in a row frame all their words
             * (MARK_BACK back at most); its content words outside frames are
             * its rest; PASTE_RUNS in a row are a passage. */
            memset(held, 0, iw->n);
            unsigned streak = 0;
            int passage = 0;
            for (size_t j = RUN - 1; j < iw->n; j++) {
                long r = map_get(&c.runs, run_hash(iw->v[j - 2] * RUN_A, iw->v[j - 1] * RUN_B, iw->v[j]));
                streak = r >= 0 ? streak + 1 : 0;
                passage |= streak >= PASTE_RUNS;
                size_t back = r < 0 ? 0 : streak >= LONG_RUNS ? streak + RUN - 1 : c.run_c[r] <= FRAME_MAXC ? RUN : 0;
                for (size_t q = 0; q < back && q < MARK_BACK; q++)
                    held[j - q] = 1;
            }
            size_t rest = 0, shared = 0, nfk = 0;
            for (size_t j = 0; j < iw->n; j++)
                rest += iw->content[j] && !held[j];
            if (rest != c.o.rest || passage != c.o.passage)
                fail_msg("round %d: the item's rest %zu and passage %d as it streams, %zu and %d word by word", round,
                         c.o.rest, c.o.passage, rest, passage);
            /* the prompt's keys the item holds, and those it holds outside its frames */
            unsigned char *any = calloc(c.keys.n, 1), *out = calloc(c.keys.n, 1);
            assert_non_null(any);
            assert_non_null(out);
            for (size_t j = 0; j < iw->n; j++)
                for (unsigned q = 0; q < ix.nk[j]; q++) {
                    any[ix.keys[j][q]] = 1;
                    out[ix.keys[j][q]] |= !held[j];
                }
            for (size_t k = 0; k < c.keys.n; k++)
                shared += any[k], nfk += out[k];
            if (shared != c.shared || nfk != c.nfk)
                fail_msg(
                    "round %d: the item holds %zu keys, %zu outside frames, as it streams; %zu and %zu word by word",
                    round, c.shared, c.nfk, shared, nfk);
            /* Its distinct words that hold nothing of the prompt where they
             * first stand, and whether a name is among them (ASCII items:
             * a word is its lower-cased bytes) */
            if (text_ascii_prefix(item, m) == m) {
                size_t only = 0;
                int foreign = 0;
                for (size_t j = 0; j < iw->n; j++) {
                    int fresh = ix.foreign[j] && !ix.nk[j], first = 1;
                    for (size_t q = 0; q < j && first; q++)
                        first = ix.raw[q] != ix.raw[j];
                    only += fresh && first;
                    foreign |= fresh && ix.name[j];
                }
                if (only != c.o.only || foreign != c.o.foreign)
                    fail_msg("round %d: %zu words hold nothing of the prompt (a name among them: %d) as it streams; "
                             "%zu (%d) word by word",
                             round, c.o.only, c.o.foreign, only, foreign);
            }
            /* The similarity: the share of the prompt's keys the item holds;
             * with a frame, of the keys with a place outside the prompt's
             * frame, those the item holds outside its own. */
            if (!c.other) {
                size_t gone = 0, gone_shared = 0, places, framed_places, any_frame = 0;
                for (size_t p = 0; p < c.nw && p < 4096; p++)
                    any_frame |= pframed[p];
                for (size_t k = 0; k < c.keys.n; k++) {
                    places = framed_places = 0;
                    for (size_t p = 0; p < c.nw && p < 4096; p++)
                        if (c.ki[p] == (long)k || c.ki2[p] == (long)k)
                            places++, framed_places += pframed[p];
                    if (places && places == framed_places)
                        gone++, gone_shared += out[k];
                }
                double want = !any_frame                ? (double)shared / (double)c.keys.n
                    : c.keys.n == gone || c.o.rest == 0 ? 1.0
                                                        : (double)(nfk - gone_shared) / (double)(c.keys.n - gone);
                if (sim != want)
                    fail_msg("round %d: similarity %.6f, %.6f word by word", round, sim, want);
            }
            free(any);
            free(out);
        }
        text_words_free(&tw);
        ar_release(&ar);
    }
    free(held);
    free(runh);
    assert_true(compared > 200);
}

/* Word i of a prompt: consonants only, 4 to 11 of them, which no stemmer
 * changes (its stem is itself), the first two its own (no word of the
 * prompt begins another). */
static size_t plain_word(char *b, size_t i)
{
    static const char cons[] = "bcdfghjklmnpqrtvwxz";
    size_t l = 4 + rnd(8), k = sizeof cons - 1;
    b[0] = cons[i / k % k];
    b[1] = cons[i % k];
    for (size_t q = 2; q < l; q++)
        b[q] = cons[rnd((unsigned)k)];
    return l;
}

/* An earlier prompt holds the prompt's words that begin its own or that
 * its own begin (auth, authentication), and those one typo away (a byte
 * left out, added, changed, or two swapped, in stems of five bytes or
 * more), however many words the prompt has. */
static void prefixes_and_typos_hold(void **state)
{
    (void)state;
    static char p[8000], longer[8000], typo[8000];
    for (int round = 0; round < 120; round++) {
        size_t words = 1 + rnd(round < 60 ? 30 : 361), n = 0, nl = 0, nt = 0;
        for (size_t i = 0; i < words && nl + 40 < sizeof longer; i++) {
            char w[16];
            size_t l = plain_word(w, i);
            memcpy(p + n, w, l);
            n += l;
            p[n++] = ' ';
            memcpy(longer + nl, w, l); /* the word with more letters after it */
            nl += l;
            nl += (size_t)snprintf(longer + nl, sizeof longer - nl, "zqx ");
            /* the word with one typo; the first word's first byte left out
             * every other round */
            size_t at = round % 2 == 0 && i == 0 ? 0 : 2 + rnd((unsigned)l - 2);
            unsigned kind = round % 2 == 0 && i == 0 ? 0 : rnd(4);
            if (l < TYPO_MIN + 1)
                kind = 4; /* too short for typos: as it is */
            for (size_t q = 0; q < l; q++) {
                if (q == at && kind == 0)
                    continue;
                if (q == at && kind == 1)
                    typo[nt++] = 'x';
                if (q == at && kind == 2) {
                    typo[nt++] = w[q] == 'b' ? 'c' : 'b';
                    continue;
                }
                if (q == at && kind == 3 && q + 1 < l && w[q] != w[q + 1]) {
                    typo[nt++] = w[q + 1];
                    typo[nt++] = w[q];
                    q++;
                    continue;
                }
                typo[nt++] = w[q];
            }
            typo[nt++] = ' ';
        }
        p[n] = longer[nl] = typo[nt] = '\0';
        double a = best_of(p, longer), b = best_of(longer, p), t = best_of(p, typo);
        if (a != 1.0 || b != 1.0 || t != 1.0)
            fail_msg("round %d, %zu words: %.4f with longer words, %.4f the other way round, %.4f with typos", round,
                     words, a, b, t);
    }
}

/* A typo in a word's first two bytes is found as one further on is: a byte
 * left out, added, changed, or the two swapped (word_hits looks for one only
 * where a stem of the prompt could be one edit away by its length and first
 * two bytes). */
static void typos_at_the_start_hold(void **state)
{
    (void)state;
    static const char *const words[] = {"zanfolth", "brixtomp", "quorvenk", "mellicath", "trandorth"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        const char *w = words[i];
        size_t l = strlen(w);
        for (size_t at = 0; at < 2; at++)
            for (int kind = 0; kind < 4; kind++) {
                char t[32];
                size_t n = 0;
                for (size_t q = 0; q < l; q++) {
                    if (q == at && kind == 0)
                        continue; /* left out */
                    if (q == at && kind == 1)
                        t[n++] = 'x'; /* added */
                    if (q == at && kind == 2) {
                        t[n++] = 'x'; /* changed */
                        continue;
                    }
                    if (q == at && kind == 3) { /* swapped */
                        t[n++] = w[q + 1];
                        t[n++] = w[q];
                        q++;
                        continue;
                    }
                    t[n++] = w[q];
                }
                t[n] = '\0';
                if (best_of(w, t) != 1.0 || best_of(t, w) != 1.0)
                    fail_msg("%s and %s: %.3f, %.3f", w, t, best_of(w, t), best_of(t, w));
            }
    }
}

/* The memo's key for an ASCII word is the same wherever the word stands
 * (near the text's end or not) and whatever its case. */
static void a_word_has_one_key(void **state)
{
    (void)state;
    char w[48], up[48], far[128];
    for (int round = 0; round < 4000; round++) {
        size_t n = 1 + rnd(40);
        for (size_t i = 0; i < n; i++) {
            w[i] = (char)('a' + rnd(26));
            up[i] = rnd(2) ? (char)(w[i] - 32) : w[i];
        }
        memcpy(far, w, n);
        memset(far + n, ' ', sizeof far - n);
        const unsigned char *a = (const unsigned char *)w, *b = (const unsigned char *)up,
                            *f = (const unsigned char *)far;
        uint64_t k = ascii_key(a, n, a + n);
        if (ascii_key(f, n, f + sizeof far) != k || ascii_key(b, n, b + n) != k)
            fail_msg("\"%.*s\" has two keys", (int)n, w);
    }
}

/* A prompt that names its subject in a word or two is matched only by an
 * item that says no more about other things than they share; a pair of Han
 * characters is a word of its own, so the same characters in another order
 * share less. */
static void thin_prompts_and_character_pairs(void **state)
{
    (void)state;
    assert_true(best_of("why is login failing?", "is login failing again?") == 1.0);
    assert_true(best_of("why is login failing?", "what are the upsides of login failing hard, and of retries?") == 0);
    double pairs = best_of("\xE6\x9D\xB1\xE4\xBA\xAC\xE3\x81\xAE\xE5\xA4\xA9\xE6\xB0\x97", /* 東京の天気 */
                           "\xE4\xBA\xAC\xE6\x9D\xB1\xE3\x81\xAE\xE6\xB0\x97\xE5\xA4\xA9"); /* 京東の気天 */
    if (!(pairs > 0 && pairs < 1))
        fail_msg("the same characters in another order score %.3f", pairs);
}

/* A French or Italian elision is not part of the word it is glued to: "l'asthme
 * d'effort" names what "asthme effort" names, typed with ’ too and in a text
 * that is not all ASCII; "c'est" is the stopword "est" and shares nothing. */
static void an_elision_is_not_the_word(void **state)
{
    (void)state;
    assert_true(best_of("l'asthme d'effort", "asthme effort") == 1.0);
    assert_true(best_of("asthme effort", "l'asthme d'effort") == 1.0);
    assert_true(best_of("l\xE2\x80\x99"
                        "asthme d\xE2\x80\x99"
                        "effort",
                        "asthme effort") == 1.0);
    assert_true(best_of("l'asthme d'effort de l'\xC3\xA9l\xC3\xA8ve", "asthme effort \xC3\xA9l\xC3\xA8ve") == 1.0);
    assert_true(best_of("c'est quand", "c'est combien") == 0.0);
}

/* A language's own concept groups (concepts-de.txt) join its words
 * ("Besprechung", "Meeting"), and only in its prompts: an English prompt
 * after a German one reads them apart. Every language's groups are read in
 * (the lexicon grows for them). */
static void a_language_has_its_own_groups(void **state)
{
    (void)state;
    assert_true(best_of("Wann ist unsere Besprechung morgen?", "Wann ist unser Meeting morgen?") == 1.0);
    assert_true(best_of("Wann ist unser Meeting morgen?", "Wann ist unsere Besprechung morgen?") == 1.0);
    assert_true(best_of("when is our telko tomorrow?", "when is our sitzung tomorrow?") == 0.5);
    for (int l = STEM_EN; l < STEM_NLANG; l++)
        lex_init((enum stem_lang)l);
    /* the last groups of a file are read too, after the lexicon grew, and
     * each language's in its own words (Italian read in the loop above) */
    assert_true(best_of("Warum bin ich so enttäuscht von der Note?", "Warum bin ich so ernüchtert von der Note?") ==
                1.0);
    assert_true(best_of("Sono troppo ansioso per l'esame?", "Sono troppo preoccupato per l'esame?") == 1.0);
    if (!(lex_room() > LEX_SIZE && lex_size() > LEX_SIZE / 2 && lex_size() <= lex_room() / 2))
        fail_msg("the lexicon holds %zu entries in %zu slots", lex_size(), lex_room());
}

/* The lexicon the build baked is the one read from the files now, slot for
 * slot: a group edited after the build, or a word stemmed otherwise at run
 * time, would show here. An entry put into the baked lexicon moves it to
 * the heap and keeps every entry. */
static int same_table(const struct lex_table *a, const struct lex_table *b)
{
    return a->n == b->n && a->cap == b->cap && !memcmp(a->k, b->k, b->cap * sizeof *b->k) &&
        !memcmp(a->v, b->v, b->cap * sizeof *b->v);
}

static void the_baked_lexicon_is_the_files(void **state)
{
    (void)state;
    const size_t baked_n = lex_baked.en.n + lex_baked.other.n;
    if (!lex_baked.en.cap) { /* a build with KEEL_BAKE off: the files are read at the first prompt */
        lex_init(STEM_EN);
        assert_true(!lex_baked_in && lex_size() > LEX_SIZE / 2 && lex_own >> STEM_DE & 1);
        assert_true(best_of("Wann ist unsere Besprechung morgen?", "Wann ist unser Meeting morgen?") == 1.0);
        return;
    }
    /* English's table is the small one an English prompt looks in */
    assert_true(lex_baked.en.n > LEX_SIZE / 8 && lex_baked.other.n > lex_baked.en.n);
    lex_init(STEM_EN);
    assert_int_equal(lex_size(), baked_n); /* the baked one, as every test before this found it */
    assert_int_equal(lex_room(), lex_baked.en.cap + lex_baked.other.cap);
    assert_true(best_of("Wann ist unsere Besprechung morgen?", "Wann ist unser Meeting morgen?") == 1.0);
    size_t slot = 0;
    while (!lex_baked.en.k[slot])
        slot++;
    lex_put(0x5EED5EED5EEDULL, LEX_END);
    assert_int_equal(lex_size(), baked_n + 1);
    assert_true(best_of("Wann ist unsere Besprechung morgen?", "Wann ist unser Meeting morgen?") == 1.0);
    assert_int_equal(lex_get(0x5EED5EED5EEDULL), LEX_END); /* the next prompt kept it */
    assert_int_equal(lex_get(lex_baked.en.k[slot]), lex_baked.en.v[slot]);
    assert_int_equal(lex_get(0x5EED5EED5EEEULL), 0);
    struct lex_state b = lex_baked, r;
    assert_int_equal(lex_read_all(&r), 0);
    assert_true(same_table(&r.en, &b.en) && same_table(&r.other, &b.other));
    assert_int_equal(r.groups, b.groups);
    assert_int_equal(r.own, b.own);
    assert_memory_equal(r.pair, b.pair, 2 * (1u << 16) / 8);
    /* this process stems every language as the build did */
    for (int l = 0; l < STEM_NLANG; l++)
        assert_true(lex_print((enum stem_lang)l) == lex_baked.print[l]);
    assert_true(lex_baked.print[STEM_EN] && lex_baked.print[STEM_DE] && !lex_baked.print[STEM_NONE]);
    /* one whose stemmer stems German otherwise (a libstemmer missing, or of
     * another version): the baked lexicon serves English prompts, and a
     * German prompt has the files read and stemmed here */
    uint64_t pr[STEM_NLANG];
    memcpy(pr, lex_baked.print, sizeof pr);
    pr[STEM_DE] ^= 1;
    struct lex_state other = lex_baked;
    other.print = pr;
    lex_read_all(&r); /* lets go of the heap copy */
    lex_done = 0, lex_checked = 0;
    lex_use(&other, STEM_EN);
    assert_true(lex_baked_in && lex_en.k == lex_baked.en.k && lex_other.k == lex_baked.other.k);
    lex_use(&other, STEM_DE);
    assert_true(!lex_baked_in && lex_en.k != lex_baked.en.k && lex_other.k != lex_baked.other.k &&
                lex_size() == baked_n);
    assert_true(best_of("Wann ist unsere Besprechung morgen?", "Wann ist unser Meeting morgen?") == 1.0);
    /* read again over what it read: the same, not twice the count */
    struct lex_state r2;
    lex_done = 0; /* as in a process whose first lexicon is read from the files */
    assert_int_equal(lex_read_all(&r2), 0);
    assert_true(same_table(&r2.en, &b.en) && same_table(&r2.other, &b.other));
    assert_int_equal(r2.groups, b.groups);
    /* and the next prompt keeps the lexicon read, not the baked one again */
    assert_true(best_of("should I turn down the offer", "should I decline the offer") == 1.0);
    assert_true(!lex_baked_in && lex_en.k != lex_baked.en.k);
    assert_true(best_of("Wann ist unsere Besprechung morgen?", "Wann ist unser Meeting morgen?") == 1.0);
}

/* The lexicon grows as entries come, and keeps every one. */
static void the_lexicon_grows(void **state)
{
    (void)state;
    lex_init(STEM_EN);
    size_t before = lex_size(), n = 3 * LEX_SIZE;
    for (size_t i = 1; i <= n; i++)
        lex_put(i * 0x9E3779B97F4A7C15ULL ^ 0x5EED, LEX_END);
    size_t found = 0;
    for (size_t i = 1; i <= n; i++)
        found += lex_get(i * 0x9E3779B97F4A7C15ULL ^ 0x5EED) == LEX_END;
    assert_int_equal(found, n);
    assert_int_equal(lex_size(), before + n);
    assert_true(lex_size() <= lex_room() / 2);
    assert_true(best_of("should I turn down the offer", "should I decline the offer") == 1.0);
    /* a later prompt's lexicon is the grown one, not the baked one again */
    assert_int_equal(lex_get(3 * 0x9E3779B97F4A7C15ULL ^ 0x5EED), LEX_END);
    assert_int_equal(lex_size(), before + n);
}

/* The same sentence with a word or two swapped for others asks about
 * another thing; three swapped are more than a swap, and compared as
 * words. */
static void a_word_or_two_swapped(void **state)
{
    (void)state;
    assert_true(best_of("how do I configure retries in the client", "how do I configure logging in the client") == 0.0);
    assert_true(best_of("how do I configure retries and timeouts in the payments client for staging",
                        "how do I configure logging and metrics in the payments client for staging") == 0.0);
    assert_true(best_of("how do I configure retries timeouts backoff in the payments client for staging",
                        "how do I configure logging metrics tracing in the payments client for staging") > 0.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ascii_words_are_unicode_words),
        cmocka_unit_test(ascii_items_score_as_unicode_items),
        cmocka_unit_test(order_does_not_matter),
        cmocka_unit_test(objects_are_what_a_text_names),
        cmocka_unit_test(objects_differ_or_match),
        cmocka_unit_test(characters_and_numbers),
        cmocka_unit_test(names_inside_a_sentence),
        cmocka_unit_test(phrases_and_short_names),
        cmocka_unit_test(a_prompt_matches_itself),
        cmocka_unit_test(frames_are_word_by_word),
        cmocka_unit_test(prefixes_and_typos_hold),
        cmocka_unit_test(typos_at_the_start_hold),
        cmocka_unit_test(a_word_has_one_key),
        cmocka_unit_test(an_elision_is_not_the_word),
        cmocka_unit_test(thin_prompts_and_character_pairs),
        cmocka_unit_test(the_baked_lexicon_is_the_files),
        cmocka_unit_test(a_language_has_its_own_groups),
        cmocka_unit_test(the_lexicon_grows),
        cmocka_unit_test(a_word_or_two_swapped),
    };
    cmocka_set_message_output(CM_OUTPUT_TAP);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
