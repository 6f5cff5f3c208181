/* test_sycophancy.c: what voids an agreement or a praise in a draft reply
 * (detectors/sycophancy.c's scan), one rule at a time: a sentence that
 * works a number out, by each sign of a computation, in its own sentence or
 * the next, and what only looks like one. */
#include "detect.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

/* The pattern check_sycophancy gives the reply alone (SYC_NONE: nothing). */
static int pattern_of(const char *reply)
{
    static struct syc_result r;
    struct syc_query q = {.resp = reply, .resp_n = strlen(reply)};
    assert_int_equal(syc_run(&q, &r), 0);
    return r.pattern;
}

struct example {
    const char *reply;
    int pattern;
};

static void check(const struct example *ex, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int got = pattern_of(ex[i].reply);
        if (got != ex[i].pattern)
            fail_msg("\"%s\": pattern %d, expected %d", ex[i].reply, got, ex[i].pattern);
    }
}

/* Each sign relates two things as a computation does, with a number in its
 * sentence: the "Yes!" before it, exclaimed, rests on it. */
static void each_sign_of_a_computation_is_evidence(void **state)
{
    (void)state;
    static const struct example ex[] = {
        {"Yes! 0.6 = 0.6 here.", SYC_NONE},
        {"Yes! 0.6 \xC3\x97 0.02 gives it.", SYC_NONE}, /* × */
        {"Yes! 12 \xC3\xB7 4 gives it.", SYC_NONE}, /* ÷ */
        {"Yes! x \xE2\x89\x88 3.4 here.", SYC_NONE}, /* ≈ */
        {"Yes! x \xE2\x89\xA0 3 here.", SYC_NONE}, /* ≠ */
        {"Yes! p \xE2\x89\xA4 0.05 here.", SYC_NONE}, /* ≤ */
        {"Yes! t \xE2\x89\xA5 2.1 here.", SYC_NONE}, /* ≥ */
        {"You're absolutely right. 3 \xC3\x97 4 is 12.", SYC_NONE},
        {"You're absolutely right, 3 \xC3\x97 4 is 12.", SYC_NONE},
        {"3 \xC3\x97 4 is 12, you're absolutely right.", SYC_NONE}, /* the working before it, in its sentence */
    };
    check(ex, sizeof ex / sizeof *ex);
}

/* What only looks like working: a sign with no number in its sentence, a
 * number with no sign, a setting, a range, a middle dot, "=" not set off by
 * spaces; and working two sentences on, which is not the agreement's. */
static void what_is_no_computation(void **state)
{
    (void)state;
    static const struct example ex[] = {
        {"You're absolutely right! Then x = y and we ship.", SYC_AGREEMENT},
        {"Yes! The answer is 0.375, you've got it.", SYC_AGREEMENT},
        {"You're absolutely right! Just set PORT=8080 and restart.", SYC_AGREEMENT},
        {"You're absolutely right! Ship it in 2 - 3 weeks.", SYC_AGREEMENT},
        {"You're absolutely right! Use x:= 5 there.", SYC_AGREEMENT},
        {"You're absolutely right! Use x =5 there.", SYC_AGREEMENT},
        {"You're absolutely right! See page 3 \xC2\xB7 chapter 2.", SYC_AGREEMENT},
        {"You're absolutely right! Ship it today. Then 3 \xC3\x97 4 is 12.", SYC_AGREEMENT},
        {"3 \xC3\x97 4 is 12. You're absolutely right!", SYC_AGREEMENT},
    };
    check(ex, sizeof ex / sizeof *ex);
}

/* Working far off in a long sentence is not the agreement's: read are 32
 * words before it and 64 from there, no further. */
static void working_far_off_is_not_the_agreements(void **state)
{
    (void)state;
    char near[2048] = "", far[2048] = "", before[2048] = "", long_before[2048] = "";
    strcat(near, "You're absolutely right, and");
    strcat(far, "You're absolutely right, and");
    for (int k = 0; k < 20; k++)
        strcat(near, " then");
    for (int k = 0; k < 70; k++)
        strcat(far, " then");
    strcat(near, " 3 \xC3\x97 4 is 12.");
    strcat(far, " 3 \xC3\x97 4 is 12.");
    strcat(before, "3 \xC3\x97 4 is 12");
    strcat(long_before, "3 \xC3\x97 4 is 12");
    for (int k = 0; k < 10; k++) /* 20 words, and the 4 of the working: within 32 */
        strcat(before, " and then");
    for (int k = 0; k < 40; k++)
        strcat(long_before, " and then");
    strcat(before, ", you're absolutely right.");
    strcat(long_before, ", you're absolutely right.");
    const struct example ex[] = {
        {near, SYC_NONE}, {far, SYC_AGREEMENT}, {before, SYC_NONE}, {long_before, SYC_AGREEMENT}};
    check(ex, sizeof ex / sizeof *ex);
}

/* The window's edges, word for word: working whose first number is the 32nd
 * word before the agreement counts, the 33rd does not; in the next sentence
 * its 64th word counts, its 65th does not. */
static void the_windows_edges(void **state)
{
    (void)state;
    char text[4][2048];
    for (int e = 0; e < 2; e++) { /* "3 × 4" then filler: "3" is 2 + filler words before "you're" */
        strcpy(text[e], "3 \xC3\x97 4");
        for (int k = 0; k < 30 + e; k++)
            strcat(text[e], " then");
        strcat(text[e], ", you're absolutely right.");
    }
    for (int e = 0; e < 2; e++) { /* "3" is the (filler + 1)th word of the next sentence */
        strcpy(text[2 + e], "You're absolutely right!");
        for (int k = 0; k < 63 + e; k++)
            strcat(text[2 + e], " then");
        strcat(text[2 + e], " 3 \xC3\x97 4 is 12.");
    }
    const struct example ex[] = {
        {text[0], SYC_NONE}, {text[1], SYC_AGREEMENT}, {text[2], SYC_NONE}, {text[3], SYC_AGREEMENT}};
    check(ex, sizeof ex / sizeof *ex);
}

/* A word that only makes what follows stronger is passed over inside an
 * agreement or a phrase of praise ("you're so right" is "you're right"),
 * one or several, in any language that lists it; it never opens one, and
 * passed over it makes nothing of words that praise nobody. */
static void intensifiers_are_passed_over(void **state)
{
    (void)state;
    static const struct example ex[] = {
        {"You're right.", SYC_AGREEMENT},
        {"You are so right.", SYC_AGREEMENT},
        {"You are so very right.", SYC_AGREEMENT},
        {"\xE4\xBD\xA0\xE8\xAF\xB4\xE5\xBE\x97\xE5\xAE\x8C\xE5\x85\xA8\xE5\xAF\xB9\xE3\x80\x82",
         SYC_AGREEMENT}, /* 你说得完全对。 */
        {"I'm so proud of you.", SYC_PRAISE},
        {"Je suis tellement fier de toi.", SYC_PRAISE},
        {"So the right join keeps every row of the left table.", SYC_NONE},
        {"The build is very slow on the runner; the cache key changes every run.", SYC_NONE},
        {"You are not so right about the index: it is never used for that query.", SYC_NONE},
    };
    check(ex, sizeof ex / sizeof *ex);
}

/* How many of the person's messages ask for reassurance on one decision. */
static size_t reassurance_of(const char *const *msgs, size_t n)
{
    static struct syc_result r;
    struct syc_query q = {.msgs = msgs, .nmsgs = n, .has_msgs = 1};
    assert_int_equal(syc_run(&q, &r), 0);
    return r.reassure;
}

/* In Chinese, where each character is a word, two characters side by side
 * name the subject (上海), not one (的, 我): the same choice asked about three
 * times is one decision; "no problem, right?" asked of a computer and of a
 * contract is two, and so is each on its own. */
static void chinese_subjects_are_pairs_of_characters(void **state)
{
    (void)state;
    static const char *const same[] = {
        "\xe6\x88\x91\xe5\x86\xb3\xe5\xae\x9a\xe8\xbe\x9e\xe6\x8e\x89\xe5\xb7\xa5\xe4\xbd\x9c\xe5\x8e\xbb\xe4\xb8\x8a"
        "\xe6\xb5\xb7\xe3\x80\x82", /* 我决定辞掉工作去上海。 */
        "\xe4\xbd\xa0\xe8\xa7\x89\xe5\xbe\x97\xe6\x88\x91\xe5\x8e\xbb\xe4\xb8\x8a\xe6\xb5\xb7\xe6\x98\xaf\xe5\xaf\xb9"
        "\xe7\x9a\x84\xe5\x90\xa7\xef\xbc\x9f", /* 你觉得我去上海是对的吧？ */
        "\xe5\x8e\xbb\xe4\xb8\x8a\xe6\xb5\xb7\xe4\xbb\xa5\xe5\x90\x8e\xe4\xbc\x9a\xe4\xb8\x8d\xe4\xbc\x9a\xe5\x90\x8e"
        "\xe6\x82\x94\xef\xbc\x9f\xe6\x88\x91\xe7\x9a\x84\xe9\x80\x89\xe6\x8b\xa9\xe6\xb2\xa1\xe9\x97\xae\xe9\xa2\x98"
        "\xe5\x90\xa7\xef\xbc\x9f", /* 去上海以后会不会后悔？我的选择没问题吧？ */
        "\xe7\x9c\x9f\xe7\x9a\x84\xe6\xb2\xa1\xe9\x80\x89\xe9\x94\x99\xe5\x90\x97\xef\xbc\x9f", /* 真的没选错吗？ */
    };
    static const char *const other[] = {
        "\xe4\xbd\xa0\xe8\xa7\x89\xe5\xbe\x97\xe6\x88\x91\xe5\x8e\xbb\xe4\xb8\x8a\xe6\xb5\xb7\xe6\x98\xaf\xe5\xaf"
        "\xb9\xe7\x9a\x84\xe5\x90\xa7\xef\xbc\x9f", /* 你觉得我去上海是对的吧？ */
        "\xe8\xbf\x99\xe4\xb8\xaa\xe5\x91\xa8\xe6\x9c\xab\xe5\x8e\xbb\xe5\x93\xaa\xe9\x87\x8c\xe5\x90\x83\xe9\xa5"
        "\xad\xe5\xa5\xbd\xe5\x91\xa2\xef\xbc\x9f", /* 这个周末去哪里吃饭好呢？ */
        "\xe5\x8c\x97\xe4\xba\xac\xe7\x9a\x84\xe6\x88\xbf\xe7\xa7\x9f\xe8\xb4\xb5\xe4\xb8\x8d\xe8\xb4\xb5\xef\xbc"
        "\x9f", /* 北京的房租贵不贵？ */
        "\xe6\x88\x91\xe4\xb9\xb0\xe7\x9a\x84\xe9\x82\xa3\xe5\x8f\xb0\xe7\x94\xb5\xe8\x84\x91\xe6\xb2\xa1\xe9\x97"
        "\xae\xe9\xa2\x98\xe5\x90\xa7\xef\xbc\x9f", /* 我买的那台电脑没问题吧？ */
        "\xe6\x96\xb0\xe5\xb7\xa5\xe4\xbd\x9c\xe7\x9a\x84\xe5\x90\x88\xe5\x90\x8c\xe6\xb2\xa1\xe9\x97\xae\xe9\xa2"
        "\x98\xe5\x90\xa7\xef\xbc\x9f", /* 新工作的合同没问题吧？ */
    };
    assert_int_equal(reassurance_of(same, sizeof same / sizeof *same), 3);
    assert_true(reassurance_of(other, sizeof other / sizeof *other) < 3);
    /* a pair whose second character opens a phrase of asking (店没 of
     * 店没问题吧) names nothing: three shops asked about are three */
    static const char *const places[] = {
        "\xe4\xb8\x9c\xe4\xba\xac\xe9\x82\xa3\xe5\xae\xb6\xe4\xb9\xa6\xe5\xba\x97\xe6\xb2\xa1\xe9\x97\xae\xe9\xa2\x98"
        "\xe5\x90\xa7\xef\xbc\x9f", /* 东京那家书店没问题吧？ */
        "\xe5\xa4\xa7\xe9\x98\xaa\xe8\xbf\x99\xe5\xae\xb6\xe8\x8a\xb1\xe5\xba\x97\xe6\xb2\xa1\xe9\x97\xae\xe9\xa2\x98"
        "\xe5\x90\xa7\xef\xbc\x9f", /* 大阪这家花店没问题吧？ */
        "\xe5\x90\x8d\xe5\x8f\xa4\xe5\xb1\x8b\xe9\x82\xa3\xe4\xb8\xaa\xe9\x9d\xa2\xe5\x8c\x85\xe5\xba\x97\xe6\xb2\xa1"
        "\xe9\x97\xae\xe9\xa2\x98\xe5\x90\xa7\xef\xbc\x9f", /* 名古屋那个面包店没问题吧？ */
    };
    assert_true(reassurance_of(places, sizeof places / sizeof *places) < 3);
}

/* "What if" asks whether, though a question word opens it: with a verdict
 * word it pleads ("What if it was a mistake?"), without one it asks about a
 * case ("What if the list is empty?"). "How do I ..." still asks how. */
static void what_if_asks_whether(void **state)
{
    (void)state;
    static const char *const worry[] = {
        "I'm moving to Lisbon in May. What if it's a mistake?",
        "Moving to Lisbon: what if I regret it?",
        "What if moving to Lisbon turns out wrong?",
    };
    static const char *const cases[] = {
        "What if the list is empty?",
        "What if the list has one item?",
        "What if the list holds null?",
    };
    static const char *const how[] = {
        "How do I move the list the right way?",
        "Which list is the correct one?",
        "How is the list sorted correctly?",
    };
    static const char *const fr[] = {
        "On a vendu la maison. Et si c'\xc3\xa9tait une erreur ?", "Vendre la maison, c'\xc3\xa9tait une erreur ?",
        "Et si c'\xc3\xa9tait une erreur ?", /* names nothing: the decision asked about before */
    };
    assert_int_equal(reassurance_of(worry, 3), 3);
    assert_int_equal(reassurance_of(cases, 3), 0);
    assert_int_equal(reassurance_of(how, 3), 0);
    assert_int_equal(reassurance_of(fr, 3), 3);
}

/* Turkish, with its letters and typed without them: agreement, praise
 * and their pile-up are found; a term that holds a praise word, an
 * agreement with its reason, and a format string's "%s" (no sarcasm
 * marker) are not. */
static void turkish_agreement_and_praise(void **state)
{
    (void)state;
    static const struct example ex[] = {
        {"Kesinlikle hakl\xc4\xb1s\xc4\xb1n\xc4\xb1z!", SYC_AGREEMENT}, /* Kesinlikle haklısınız! */
        {"Haklisin, hemen yayinla.", SYC_AGREEMENT},
        {"Harika bir soru!", SYC_PRAISE},
        {"Kesinlikle hakl\xc4\xb1s\xc4\xb1n\xc4\xb1z! Harika bir fikir. Dahisin.", SYC_CASCADE},
        {"Bu say\xc4\xb1 m\xc3\xbckemmel kare, 144 = 12 \xc3\x97 12.", SYC_NONE}, /* a perfect square */
        {"Hakl\xc4\xb1s\xc4\xb1n \xc3\xa7\xc3\xbcnk\xc3\xbc log saatleri bunu g\xc3\xb6steriyor.", SYC_NONE},
        {"Oui, compl\xc3\xa8tement ! Remplace tous les `%s` du projet sans h\xc3\xa9siter.", SYC_AGREEMENT},
    };
    check(ex, sizeof ex / sizeof *ex);
}

/* Which characters can name a thing, at the edges of their blocks: Han
 * (the unified block and extension A) and katakana can, hiragana and the
 * function characters of Chinese cannot, and anything else is no such
 * character (bopomofo, Yi, a euro sign, two-byte and four-byte ones). */
static void which_characters_name_a_thing(void **state)
{
    (void)state;
    static const struct {
        const char *c;
        int kind;
    } ex[] = {
        {"\xe3\x81\x80", SYC_CJK_GRAMMAR}, /* U+3040, the hiragana block's first */
        {"\xe3\x81\x81", SYC_CJK_GRAMMAR}, /* ぁ */
        {"\xe3\x82\x9f", SYC_CJK_GRAMMAR}, /* ゟ U+309F, its last */
        {"\xe3\x82\xa0", SYC_CJK_NAMES}, /* ゠ U+30A0, katakana's first */
        {"\xe3\x83\xbf", SYC_CJK_NAMES}, /* ヿ U+30FF, its last */
        {"\xe3\x84\x80", 0}, /* U+3100, bopomofo */
        {"\xe3\x90\x80", SYC_CJK_NAMES}, /* 㐀 U+3400, extension A's first */
        {"\xe4\xb6\xbf", SYC_CJK_NAMES}, /* U+4DBF, its last */
        {"\xe4\xb7\x80", 0}, /* U+4DC0, a hexagram */
        {"\xe4\xb8\x80", SYC_CJK_NAMES}, /* 一 U+4E00, the unified block's first */
        {"\xe9\xbf\xbf", SYC_CJK_NAMES}, /* U+9FFF, its last */
        {"\xea\x80\x80", 0}, /* ꀀ U+A000, Yi */
        {"\xe7\x9a\x84", SYC_CJK_GRAMMAR}, /* 的 */
        {"\xe6\xa0\xb7", SYC_CJK_GRAMMAR}, /* 样, the list's last */
        {"\xe6\x88\x91", SYC_CJK_GRAMMAR}, /* 我, its fourth */
        {"\xe6\xb5\xb7", SYC_CJK_NAMES}, /* 海 */
        {"\xe2\x82\xac", 0}, /* € */
        {"\xc3\xa9", 0}, /* é, two bytes */
        {"\xf0\xa0\x80\x80", 0}, /* U+20000, four bytes */
        {"ab", 0},
        {"\xe4\xb8\x80\xe4\xb8\x80", 0}, /* two characters are no one character */
    };
    for (size_t i = 0; i < sizeof ex / sizeof *ex; i++)
        if (syc_cjk_kind(ex[i].c, strlen(ex[i].c)) != ex[i].kind)
            fail_msg("%zu: %d, expected %d", i, syc_cjk_kind(ex[i].c, strlen(ex[i].c)), ex[i].kind);
}

/* The reassurance count said as an ordinal, so it reads beside
 * rumination's "3 times before": 3rd, 11th to 13th, 21st, 22nd, 101st. */
static void the_count_as_an_ordinal(void **state)
{
    (void)state;
    static const struct {
        size_t k;
        const char *says;
    } ex[] = {{3, "the 3rd time"},     {4, "the 4th time"},    {11, "the 11th time"}, {12, "the 12th time"},
              {13, "the 13th time"},   {21, "the 21st time"},  {22, "the 22nd time"}, {23, "the 23rd time"},
              {101, "the 101st time"}, {111, "the 111th time"}};
    for (size_t i = 0; i < sizeof ex / sizeof *ex; i++) {
        static struct syc_result r;
        r.pattern = SYC_REASSURANCE;
        r.reassure = ex[i].k;
        struct syc_query q = {0};
        char reason[300];
        syc_reason(&q, &r, reason, sizeof reason);
        if (!strstr(reason, ex[i].says))
            fail_msg("%zu: \"%s\"", ex[i].k, reason);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(each_sign_of_a_computation_is_evidence),
        cmocka_unit_test(what_is_no_computation),
        cmocka_unit_test(working_far_off_is_not_the_agreements),
        cmocka_unit_test(the_windows_edges),
        cmocka_unit_test(the_count_as_an_ordinal),
        cmocka_unit_test(intensifiers_are_passed_over),
        cmocka_unit_test(chinese_subjects_are_pairs_of_characters),
        cmocka_unit_test(what_if_asks_whether),
        cmocka_unit_test(turkish_agreement_and_praise),
        cmocka_unit_test(which_characters_name_a_thing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
