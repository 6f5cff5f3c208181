/* test_rules.c: "does this rule fire anywhere?" asked of all of a rule's
 * patterns at once (rule_any, the quick check every tool result gets) gives
 * the answer asking pattern by pattern (rule_match) gives, on every example
 * of every shipped rule; and patterns whose meaning depends on their own
 * group numbers are never joined. */
#include "rulefile.h"
#include "rules.h"
#include "submit.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void agree(const struct rule *r, const char *text)
{
    size_t n = strlen(text);
    char *c = rule_copy(text, n);
    assert_non_null(c);
    int m = rule_match(r, c, n, NULL, 0);
    assert_int_equal(rule_any(r, c, n), m < 0 ? RULE_SKIPPED : m > 0);
    free(c);
}

static void shipped_rules_answer_alike_either_way(void **state)
{
    (void)state;
    struct ruleset rs;
    memset(&rs, 0, sizeof rs);
    ruleset_load(&rs, NULL, NULL, 0);
    assert_true(rs.n > 0);
    int joined = 0, checked = 0;
    for (int i = 0; i < rs.n; i++) {
        const struct rule *r = &rs.v[i];
        joined += r->any != NULL;
        /* every example of every rule against this rule: fires and passes alike */
        for (int j = 0; j < rs.n; j++) {
            for (int k = 0; k < rs.v[j].nfires; k++, checked++)
                agree(r, rs.v[j].fires[k]);
            for (int k = 0; k < rs.v[j].npasses; k++, checked++)
                agree(r, rs.v[j].passes[k]);
        }
        agree(r, "");
    }
    assert_true(joined >= 3); /* the hygiene rules take the quick path */
    assert_true(checked > 100);
    ruleset_free(&rs);
}

/* keel wrap's quick check of a tool result (every rule at once) is quiet
 * exactly when no rule on tool results fires, rule by rule. */
static void a_quiet_result_is_one_no_rule_fires_on(void **state)
{
    (void)state;
    struct ruleset rs;
    memset(&rs, 0, sizeof rs);
    ruleset_load(&rs, NULL, NULL, 0);
    struct ruleset *was = ruleset_current;
    ruleset_current = &rs;
    int quiet = 0, loud = 0;
    for (int j = 0; j < rs.n; j++)
        for (int k = 0; k < rs.v[j].nfires + rs.v[j].npasses; k++) {
            const char *t = k < rs.v[j].nfires ? rs.v[j].fires[k] : rs.v[j].passes[k - rs.v[j].nfires];
            size_t n = strlen(t);
            char *c = rule_copy(t, n);
            int fires = 0;
            for (int i = 0; i < rs.n; i++)
                if (rs.v[i].active && (rs.v[i].applies_to & RA_TOOL_RESULT))
                    fires |= rule_match(&rs.v[i], c, n, NULL, 0) != 0;
            assert_int_equal(rules_quiet(c, n, RA_TOOL_RESULT, "read_file"), !fires);
            quiet += !fires;
            loud += fires;
            free(c);
        }
    assert_true(quiet > 20 && loud >= 10); /* every fires example of the hygiene rules */
    ruleset_current = was;
    ruleset_free(&rs);
}

static void group_numbers_keep_patterns_apart(void **state)
{
    (void)state;
    static const char yml[] = "rules:\n"
                              "  - name: doubled\n"
                              "    applies_to: tool_result\n"
                              "    detector: regex\n"
                              "    patterns: ['(a)\\1', '(b)\\1']\n"
                              "    action: annotate\n"
                              "    guidance: g\n"
                              "    examples: {fires: [aa, bb], passes: [ab]}\n"
                              "  - name: plain\n"
                              "    applies_to: tool_result\n"
                              "    detector: regex\n"
                              "    patterns: ['(?i)x+y', 'z{2}']\n"
                              "    action: annotate\n"
                              "    guidance: g\n"
                              "    examples: {fires: [XXy, zz], passes: [z]}\n"
                              "  - name: hashed\n"
                              "    applies_to: tool_result\n"
                              "    detector: regex\n"
                              "    patterns: ['(?x) q # a comment', 'w']\n"
                              "    action: annotate\n"
                              "    guidance: g\n"
                              "    examples: {fires: [q, w], passes: [e]}\n"
                              "  - name: escaped\n"
                              "    applies_to: tool_result\n"
                              "    patterns: ['\\s(c)\\1', 'd']\n"
                              "    action: annotate\n"
                              "    guidance: g\n"
                              "    examples: {fires: [' cc', d], passes: [c]}\n"
                              "  - name: nested\n"
                              "    applies_to: tool_result\n"
                              "    patterns: ['f(?0)?g', 'h']\n"
                              "    action: annotate\n"
                              "    guidance: g\n"
                              "    examples: {fires: [ffgg, h], passes: [f]}\n";
    struct ruleset rs;
    memset(&rs, 0, sizeof rs);
    ruleset_load_text(&rs, "t.yml", yml, sizeof yml - 1);
    assert_int_equal(rs.n, 5);
    assert_null(rs.v[0].any); /* back-references: never joined */
    assert_non_null(rs.v[1].any);
    assert_null(rs.v[2].any); /* a comment could swallow what follows */
    assert_null(rs.v[3].any); /* a back-reference after another escape */
    assert_null(rs.v[4].any); /* a call of the whole pattern, (?0) */
    const char *texts[] = {"aa", "bb", "ab", "ba",  "XXY", "xy",  "zz",   "z",
                           "q",  "w",  "e",  " q ", "",    " cc", "ffgg", "h"};
    for (int i = 0; i < rs.n; i++)
        for (size_t t = 0; t < sizeof texts / sizeof *texts; t++)
            agree(&rs.v[i], texts[t]);
    ruleset_free(&rs);
}

/* A rewrite rule of these patterns (a YAML flow list) and replacement turns
 * text into want. */
/* One rewrite rule for tool results, loaded into rs: its patterns (a YAML
 * list), replacement and the examples it fires on (a YAML list's items). */
static void rewrite_rule(struct ruleset *rs, const char *patterns, const char *replacement, const char *fires)
{
    char yml[512];
    snprintf(yml, sizeof yml,
             "rules:\n  - name: mine\n    applies_to: tool_result\n    patterns: %s\n    action: rewrite\n"
             "    replacement: '%s'\n    guidance: g\n    examples: {fires: [%s], passes: []}\n",
             patterns, replacement, fires);
    memset(rs, 0, sizeof *rs);
    ruleset_load_text(rs, "mine.yml", yml, strlen(yml));
}

/* How many rules of one rewrite rule load (0 or 1), and with how many
 * problems. */
static void rewrite_loads(const char *patterns, const char *replacement, const char *fires, int rules, int problems)
{
    struct ruleset rs;
    rewrite_rule(&rs, patterns, replacement, fires);
    assert_int_equal(rs.n, rules);
    assert_int_equal(rs.nproblems, problems);
    ruleset_free(&rs);
}

static void rewrites_to(const char *patterns, const char *replacement, const char *text, const char *want)
{
    char fires[300];
    snprintf(fires, sizeof fires, "'%s'", text);
    struct ruleset mine;
    rewrite_rule(&mine, patterns, replacement, fires);
    assert_int_equal(mine.n, 1);
    int skipped = 0;
    char *out = rule_rewrite(&mine.v[0], text, strlen(text), &skipped);
    assert_int_equal(skipped, 0);
    assert_non_null(out);
    assert_string_equal(out, want);
    free(out);
    ruleset_free(&mine);
}

/* A rule with several patterns rewrites with each in turn, each on the text
 * the one before left: two credentials of two kinds, both redacted, the rest
 * as it was. And a text that is not UTF-8 is not matched at all. */
static void every_pattern_rewrites_what_the_last_left(void **state)
{
    (void)state;
    struct ruleset rs;
    memset(&rs, 0, sizeof rs);
    ruleset_load(&rs, NULL, NULL, 0);
    const struct rule *r = NULL;
    for (int i = 0; i < rs.n; i++)
        if (!strcmp(rs.v[i].name, "redact-credentials"))
            r = &rs.v[i];
    assert_non_null(r);
    const char *text = "aws AKIA2Q4RT6YU8IO0PLKM then gh ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8 and the end";
    int skipped = 0;
    char *out = rule_rewrite(r, text, strlen(text), &skipped);
    assert_int_equal(skipped, 0);
    assert_non_null(out);
    assert_string_equal(out, "aws [REDACTED] then gh [REDACTED] and the end");
    free(out);
    /* the same with where each byte came from: " then gh " and " and the
     * end" from their places in the text, a replacement from where what it
     * replaced began, and the end from the text's end */
    size_t n = strlen(text), *map = malloc((n + 1) * sizeof *map);
    for (size_t k = 0; k <= n; k++)
        map[k] = k;
    size_t *given = map;
    out = rule_rewrite_mapped(r, text, n, &skipped, &map);
    assert_non_null(out);
    assert_true(map != given);
    free(given);
    size_t m = strlen(out);
    const char *then = strstr(out, " then"), *and = strstr(out, " and"), *t2 = strstr(text, " then"),
               *a2 = strstr(text, " and");
    assert_int_equal(map[0], 0);
    assert_int_equal(map[4], 4); /* [REDACTED]: where AKIA... began */
    assert_int_equal(map[13], 4);
    assert_int_equal(map[then - out], (size_t)(t2 - text));
    assert_int_equal(map[and-out], (size_t)(a2 - text));
    assert_int_equal(map[m], n);
    free(map);
    free(out);
    /* a replacement longer than its match: the next pattern reads all of it */
    rewrites_to("['a', 'z']", "LONGER", "a to z", "LONGER to LONGER");
    /* a match that ends the text is followed by one more scan there: an
     * empty match at the end is rewritten too, as a global replace does
     * (a pattern that matches an empty text is left out, so this one does
     * only after a "b") */
    rewrites_to("['b|(?<=b)$']", "X", "ab", "aXX");
    /* not UTF-8: no match, and not "skipped" either */
    assert_int_equal(rule_match(r, "\xff AKIA2Q4RT6YU8IO0PLKM", 22, NULL, 0), 0);
    ruleset_free(&rs);
}

/* A rewrite whose replacement does not fit its pattern ("$2" of a pattern
 * with one group, "${x" unclosed) is a problem where the rule is read, when
 * an example shows it; a pattern no example matches finds out when used,
 * and says so (2), not "over budget" (1), leaving the text as it was. */
static void a_replacement_that_cannot_fit_is_named(void **state)
{
    (void)state;
    rewrite_loads("['token=(\\w+)']", "token=[$2]", "'token=abc'", 0, 1);
    rewrite_loads("['key=(\\w+)']", "key=${x", "'key=abc'", 0, 1);
    rewrite_loads("['a=(\\w)(\\d)', 'b=(\\w+)']", "[$2]", "'a=x1'", 1, 0);
    /* an example another pattern matches is no trial of this one's: the
     * one it matches is ('zzz', which the second pattern matches with two
     * groups, then 'a=1' shows that the first has no $2) */
    rewrite_loads("['a=(\\d)', '(z)(z)z']", "[$2]", "'zzz', 'a=1'", 0, 1);
    rewrite_loads("['a=(\\d)', 'b=(\\w+)']", "[$1]", "'b=xyz'", 1, 0);
    struct ruleset rs;
    rewrite_rule(&rs, "['a=(\\w)(\\d)', 'b=(\\w+)']", "[$2]", "'a=x1'");
    int skipped = 0;
    char *out = rule_rewrite(&rs.v[0], "a=x1 b=zzz", 10, &skipped);
    assert_null(out);
    assert_int_equal(skipped, 2);
    out = rule_rewrite(&rs.v[0], "only a=x1", 9, &skipped);
    assert_int_equal(skipped, 0);
    assert_non_null(out);
    assert_string_equal(out, "only [1]");
    free(out);
    ruleset_free(&rs);
}

/* A length rule counts characters, not bytes, and words between runs of
 * white space; its limit itself is not over it. A pattern that matches
 * empty steps on by a character. A joined check of patterns
 * with a group each (more groups than one pattern's match data holds) still
 * fires. A pattern that backtracks deep (a group repeated 20,000 times) has
 * the JIT stack it needs and is matched, not skipped. */
static void lengths_groups_and_deep_patterns(void **state)
{
    (void)state;
    static const char yml[] = "rules:\n"
                              "  - name: chars\n"
                              "    detector: length\n"
                              "    max_chars: 10\n"
                              "    action: reject\n"
                              "    guidance: g\n"
                              "    examples: {fires: [abcdefghijk], passes: [abc]}\n"
                              "  - name: words\n"
                              "    detector: length\n"
                              "    max_words: 3\n"
                              "    action: reject\n"
                              "    guidance: g\n"
                              "    examples: {fires: [a b c d], passes: [a b c]}\n"
                              "  - name: grouped\n"
                              "    applies_to: tool_result\n"
                              "    patterns: ['(TOP) SECRET', '(EYES) ONLY']\n"
                              "    action: annotate\n"
                              "    guidance: g\n"
                              "    examples: {fires: [EYES ONLY], passes: [eyes]}\n"
                              "  - name: empty\n"
                              "    applies_to: tool_result\n"
                              "    patterns: ['(?=x)|(?<=x)']\n"
                              "    action: annotate\n"
                              "    guidance: g\n"
                              "    examples: {fires: [x], passes: []}\n"
                              "  - name: deep\n"
                              "    applies_to: tool_result\n"
                              "    patterns: ['^(?:a|b)*c$']\n"
                              "    action: annotate\n"
                              "    guidance: g\n"
                              "    examples: {fires: [abc], passes: [abd]}\n";
    struct ruleset rs;
    memset(&rs, 0, sizeof rs);
    ruleset_load_text(&rs, "t.yml", yml, sizeof yml - 1);
    assert_int_equal(rs.n, 5);
    const char *ten =
        "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xe2\x82\xac"; /* 10 characters, 21 bytes */
    assert_int_equal(rule_match(&rs.v[0], ten, strlen(ten), NULL, 0), 0);
    assert_int_equal(rule_match(&rs.v[0], "abcdefghijk", 11, NULL, 0), 1);
    const char *three = " one\t two \n three ";
    assert_int_equal(rule_match(&rs.v[1], three, strlen(three), NULL, 0), 0);
    assert_int_equal(rule_match(&rs.v[1], "one two three four", 18, NULL, 0), 1);
    assert_non_null(rs.v[2].any);
    assert_int_equal(rule_any(&rs.v[2], "for your EYES ONLY", 18), 1);
    agree(&rs.v[2], "for your EYES ONLY");
    /* a pattern that matches nothing moves on a character after each empty
     * match: "\xc3\xa9x\xc3\xa9" holds two, before the "x" and after it
     * (a pattern that matches an empty text is left out: this one does not) */
    struct rule_span sp[8];
    char *c = rule_copy("\xc3\xa9x\xc3\xa9", 5);
    assert_non_null(c);
    assert_int_equal(rule_match(&rs.v[3], c, 5, sp, 8), 2);
    assert_int_equal(sp[0].start, 2);
    assert_int_equal(sp[0].end, 2);
    assert_int_equal(sp[1].start, 3);
    assert_int_equal(sp[1].end, 3);
    free(c);
    size_t n = 20000;
    char *deep = malloc(n + 2);
    assert_non_null(deep);
    for (size_t i = 0; i < n; i++)
        deep[i] = i % 2 ? 'a' : 'b';
    deep[n] = 'c';
    deep[n + 1] = '\0';
    assert_int_equal(rule_match(&rs.v[4], deep, n + 1, NULL, 0), 1);
    free(deep);
    ruleset_free(&rs);
}

/* A pattern is matched by the interpreter the first time on a short text,
 * by its JIT code from the second use or on a long text, and finds the same
 * places either way; "anywhere?" keeps its own state. */
static void machine_code_when_it_pays(void **state)
{
    (void)state;
    uint32_t can = 0;
    pcre2_config(PCRE2_CONFIG_JIT, &can);
    const unsigned char ready = can ? RJ_READY : RJ_NONE;
    for (int pass = 0; pass < 2; pass++) { /* short texts, then long ones */
        struct ruleset rs;
        memset(&rs, 0, sizeof rs);
        ruleset_load(&rs, NULL, NULL, 0);
        int seen = 0;
        for (int i = 0; i < rs.n; i++) {
            struct rule *r = &rs.v[i];
            if (r->detector != RD_REGEX || !r->nfires)
                continue;
            char text[RULE_JIT_TEXT + 512];
            snprintf(text, sizeof text, "%s", r->fires[0]);
            while (pass && strlen(text) < RULE_JIT_TEXT) /* an opener stays first */
                strcat(text, " And nothing more to see here.");
            size_t n = strlen(text);
            char *c = rule_copy(text, n);
            assert_non_null(c);
            for (int p = 0; p < r->npatterns; p++)
                assert_int_equal(r->jit[p], RJ_FRESH);
            struct rule_span a[8], b[8];
            int m1 = rule_match(r, c, n, a, 8);
            /* its example fires; padded out, all but a whole-text pattern's */
            if (m1 < 0 || (m1 == 0 && !pass))
                fail_msg("rule %s: %d", r->name, m1);
            for (int p = 0; p < r->npatterns; p++)
                assert_int_equal(r->jit[p], pass ? ready : RJ_USED);
            int m2 = rule_match(r, c, n, b, 8);
            assert_int_equal(m1, m2);
            assert_memory_equal(a, b, (size_t)(m1 < 8 ? m1 : 8) * sizeof *a);
            for (int p = 0; p < r->npatterns; p++)
                assert_int_equal(r->jit[p], ready);
            if (r->any) {
                assert_int_equal(r->jit[r->npatterns], RJ_FRESH);
                assert_int_equal(rule_any(r, c, n), m1 > 0);
                assert_int_equal(r->jit[r->npatterns], pass ? ready : RJ_USED);
                assert_int_equal(rule_any(r, c, n), m1 > 0);
                assert_int_equal(r->jit[r->npatterns], ready);
            }
            free(c);
            seen += m1 > 0;
        }
        assert_true(seen >= 5);
        ruleset_free(&rs);
    }
    /* the bound: a text of RULE_JIT_TEXT bytes gets the code at once, one
     * byte less does not; a pattern with none to be had keeps to the
     * interpreter and finds the same places */
    struct ruleset rs;
    memset(&rs, 0, sizeof rs);
    ruleset_load(&rs, NULL, NULL, 0);
    struct rule *r = NULL;
    for (int i = 0; i < rs.n && !r; i++)
        if (rs.v[i].detector == RD_REGEX && rs.v[i].nfires && rs.v[i].npatterns >= 2)
            r = &rs.v[i];
    assert_non_null(r);
    char *text = calloc(RULE_JIT_TEXT + 1 + RULE_PAD, 1);
    assert_non_null(text);
    memset(text, ' ', RULE_JIT_TEXT);
    memcpy(text, r->fires[0], strlen(r->fires[0]));
    struct rule_span a[8], b[8];
    int m = rule_match(r, text, RULE_JIT_TEXT - 1, a, 8);
    for (int p = 0; p < r->npatterns; p++)
        assert_int_equal(r->jit[p], RJ_USED);
    memset(r->jit, RJ_FRESH, (size_t)r->npatterns + 1);
    assert_int_equal(rule_match(r, text, RULE_JIT_TEXT, b, 8), m);
    for (int p = 0; p < r->npatterns; p++)
        assert_int_equal(r->jit[p], ready);
    int at = (int)(r - rs.v);
    ruleset_free(&rs); /* again, with no JIT code made yet */
    memset(&rs, 0, sizeof rs);
    ruleset_load(&rs, NULL, NULL, 0);
    r = &rs.v[at];
    memset(r->jit, RJ_NONE, (size_t)r->npatterns + 1);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(rule_match(r, text, RULE_JIT_TEXT, b, 8), m);
        assert_memory_equal(a, b, (size_t)(m < 8 ? m : 8) * sizeof *a);
        if (r->any)
            assert_int_equal(rule_any(r, text, RULE_JIT_TEXT), m > 0);
        for (int p = 0; p <= r->npatterns; p++)
            assert_int_equal(r->jit[p], RJ_NONE);
    }
    free(text);
    ruleset_free(&rs);
    /* a pattern the interpreter gives up on within its limits (a nested
     * repeat over 28 letters) is matched by JIT code made there and then:
     * the same answer on its first use as on its second */
    static const char yml[] = "rules:\n  - name: nested\n    applies_to: tool_result\n"
                              "    patterns: ['^(?:(a|aa)+$|a+!)']\n    action: annotate\n    guidance: g\n"
                              "    examples: {fires: [aa], passes: [b]}\n";
    struct ruleset mine;
    memset(&mine, 0, sizeof mine);
    ruleset_load_text(&mine, "mine.yml", yml, strlen(yml));
    assert_int_equal(mine.n, 1);
    char deep[64];
    memset(deep, 'a', 28);
    strcpy(deep + 28, "!");
    char *c = rule_copy(deep, 29);
    assert_non_null(c);
    assert_int_equal(mine.v[0].jit[0], RJ_FRESH);
    assert_int_equal(rule_match(&mine.v[0], c, 29, NULL, 0), 1);
    assert_int_equal(mine.v[0].jit[0], ready);
    assert_int_equal(rule_match(&mine.v[0], c, 29, NULL, 0), 1);
    free(c);
    ruleset_free(&mine);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(shipped_rules_answer_alike_either_way),
        cmocka_unit_test(group_numbers_keep_patterns_apart),
        cmocka_unit_test(a_quiet_result_is_one_no_rule_fires_on),
        cmocka_unit_test(every_pattern_rewrites_what_the_last_left),
        cmocka_unit_test(a_replacement_that_cannot_fit_is_named),
        cmocka_unit_test(lengths_groups_and_deep_patterns),
        cmocka_unit_test(machine_code_when_it_pays),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
