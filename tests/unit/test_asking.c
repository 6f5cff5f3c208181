/* test_asking.c: how a prompt asks (asking.h): question marks in every
 * script to the text's last byte, where a question word must stand, the
 * words a phrase marks, no more, an error report as tools print it, "once
 * more" in an ask and in an instruction, an apology or a verb of asking
 * near a word of coming back, "still" near not understanding, and a question word of another language in an
 * English text. */
#include "asking.h"
#include "text.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

static unsigned kinds_of(const char *s)
{
    unsigned k = 0;
    assert_int_equal(ask_text(s, strlen(s), &k), 0);
    return k;
}

static void question_marks_to_the_last_byte(void **state)
{
    (void)state;
    static const char *const marked[] = {"ok?", "\xEF\xBC\x9F", "merge \xEF\xBC\x9F", "\xD8\x9F", "merge \xD8\x9F"};
    for (size_t i = 0; i < sizeof marked / sizeof *marked; i++) {
        size_t n = strlen(marked[i]);
        assert_int_equal(ask_question_mark(marked[i], n), 1);
        /* cut by one byte, the mark is not whole */
        if (n > 1 && (unsigned char)marked[i][n - 1] >= 0x80)
            assert_int_equal(ask_question_mark(marked[i], n - 1), 0);
    }
    assert_int_equal(ask_question_mark("no mark here", 12), 0);
    /* a mark just past the span is not in it */
    assert_int_equal(ask_question_mark("merge?", 5), 0);
    assert_int_equal(ask_question_mark("", 0), 0);
    /* the Arabic mark is its own sign of a question, at the very end too */
    assert_true(kinds_of("\xD9\x87\xD9\x84 \xD8\xA7\xD9\x84\xD8\xAF\xD9\x85\xD8\xAC \xD8\xA2\xD9\x85\xD9\x86\xD8\x9F") &
                ASK_QUESTION);
}

static void a_question_word_stands_where_questions_have_it(void **state)
{
    (void)state;
    /* among a sentence's first four words */
    assert_true(kinds_of("please now tell why the build fails on main today") & ASK_QUESTION);
    /* the fifth word, mid-sentence: an instruction that says "why" */
    assert_false(kinds_of("please go and write why the build failed in the log today") & ASK_QUESTION);
    /* each sentence is read on its own: the second one opens with it */
    assert_true(kinds_of("The build on main failed again this morning after the merge. Why did it fail") &
                ASK_QUESTION);
    assert_false(kinds_of("Run the whole suite on main. Then commit the change and push it") & ASK_QUESTION);
    /* a closing particle among a sentence's last two words, not its third
     * from last ("this way is fine 吗 me" asks; "... 吗 us" does not) */
    assert_true(kinds_of("\xe8\xbf\x99\xe6\xa0\xb7\xe5\x86\x99\xe5\x8f\xaf\xe4\xbb\xa5\xe5\x90\x97\xe6\x88\x91") &
                ASK_QUESTION);
    assert_false(
        kinds_of("\xe8\xbf\x99\xe6\xa0\xb7\xe5\x86\x99\xe5\x8f\xaf\xe4\xbb\xa5\xe5\x90\x97\xe6\x88\x91\xe4\xbb\xac") &
        ASK_QUESTION);
    /* Chinese leaves its question word in place: "to the end, how is this
     * dependency error" asks with its 9th character; the same error "fixed
     * this morning" asks nothing */
    assert_true(kinds_of("\xe8\xbf\x98\xe6\x98\xaf\xe8\xbf\x99\xe4\xb8\xaa\xe4\xbe\x9d\xe8\xb5\x96\xe6\x8a\xa5\xe9\x94"
                         "\x99\xe5\x88\xb0\xe5\xba\x95\xe6\x80\x8e\xe4\xb9\x88\xe5\x9b\x9e\xe4\xba\x8b") &
                ASK_QUESTION);
    assert_false(kinds_of("\xe8\xbf\x99\xe4\xb8\xaa\xe4\xbe\x9d\xe8\xb5\x96\xe6\x8a\xa5\xe9\x94\x99\xe4\xbb\x8a\xe5\xa4"
                          "\xa9\xe6\x97\xa9\xe4\xb8\x8a\xe4\xbf\xae\xe5\xa5\xbd\xe4\xba\x86") &
                 ASK_QUESTION);
}

static void a_phrase_marks_its_own_words(void **state)
{
    (void)state;
    const char *s = "is it safe merging this now";
    struct text_words w = {0};
    assert_int_equal(text_words(s, strlen(s), &w), 0);
    assert_int_equal(w.n, 6);
    unsigned char mark[6] = {0};
    unsigned k = ask_kinds(&w.v[0].hash, sizeof *w.v, w.n, mark);
    assert_true(k & ASK_REASSURE);
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(mark[i], ASK_REASSURE);
    for (size_t i = 3; i < 6; i++)
        assert_int_equal(mark[i], 0);
    text_words_free(&w);
}

/* ask_kinds of w's first n words, their hashes copied to an array of
 * exactly n. */
static unsigned kinds_exactly(const struct text_words *w, size_t n)
{
    uint64_t *h = malloc(n * sizeof *h);
    assert_non_null(h);
    for (size_t i = 0; i < n; i++)
        h[i] = w->v[i].hash;
    unsigned k = ask_kinds(h, sizeof *h, n, NULL);
    free(h);
    return k;
}

/* Only the n words given are read: a phrase that begins right after them
 * (the rest of the caller's array) is not the text's, and one that ends
 * the text is found without reading further. */
static void only_the_words_given_are_read(void **state)
{
    (void)state;
    const char *s = "the build passed continue";
    struct text_words w = {0};
    assert_int_equal(text_words(s, strlen(s), &w), 0);
    assert_int_equal(w.n, 4);
    assert_true(ask_kinds(&w.v[0].hash, sizeof *w.v, 4, NULL) & ASK_COMMAND);
    assert_int_equal(ask_kinds(&w.v[0].hash, sizeof *w.v, 3, NULL), 0);
    /* and nothing past them is read, nor past a phrase that ends them:
     * arrays of exactly 3 and 4 (AddressSanitizer sees a read past) */
    assert_int_equal(kinds_exactly(&w, 3), 0);
    assert_true(kinds_exactly(&w, 4) & ASK_COMMAND);
    text_words_free(&w);
}

/* A pasted error report asks for help with it; prose about errors does not,
 * and a long run of what the pattern looks for costs one pass. */
static void an_error_report_as_tools_print_it(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int report;
    } cases[] = {
        {"TypeError: Cannot read properties of undefined (reading 'map')", 1},
        {"error[E0382]: borrow of moved value: `names`", 1},
        {"Error: Process completed with exit code 137.", 1},
        {"npm ERR! code ERESOLVE", 1},
        {"Traceback (most recent call last):\n  File \"app.py\", line 3", 1},
        {"fatal: not a git repository (or any of the parent directories): .git", 1},
        {"Error: ENOENT: no such file or directory, open 'tsconfig.json'", 1},
        {"ENOENT: no such file or directory", 1},
        {"\xe3\x81\xbe\xe3\x81\xa0 psycopg2.OperationalError: could not connect", 1},
        {"the tests failed again, can you look at the output", 0},
        {"what is an error budget", 0},
        {"EVERYTHING is broken after the merge", 0},
        {"Error handling in Go is verbose", 0},
        {"write the exception handler for the upload route", 0},
        {"my exit plan is to leave in March", 0},
        {"add a check: raise ValueError(\"bad input\") when the id is empty", 0},
        {"throw new Error('bad input') if the id is empty", 0},
        {"", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *t = cases[i].text;
        assert_int_equal(ask_error_report(t, strlen(t)), cases[i].report);
        assert_int_equal((kinds_of(t) & ASK_ERROR) != 0, cases[i].report);
    }
    /* only the bytes given are read */
    assert_int_equal(ask_error_report("TypeError: x", 9), 0);
    size_t n = 8000;
    char *run = malloc(n);
    assert_non_null(run);
    for (size_t i = 0; i < n; i++)
        run[i] = i % 2 ? '.' : 'a';
    assert_int_equal(ask_error_report(run, n), 0);
    memset(run, ' ', n);
    memcpy(run, "Error", 5);
    assert_int_equal(ask_error_report(run, n), 0);
    free(run);
}

/* "Once more" and its kind say that a question, a plea or a request to be
 * told is asked again; in an instruction they are the work going on. */
static void again_asks_again_only_in_an_ask(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int reask;
    } cases[] = {
        {"run the whole suite once more", 0},
        {"testa o downgrade e upgrade de novo", 0},
        {"proofread the about us one last time", 0},
        {"once more, is it safe to merge", 1}, /* a plea and a question word, no mark */
        {"one more time, nothing will blow up?", 1}, /* a question mark */
        {"explica idempotência mais uma vez, com um exemplo", 1}, /* a request to be told */
        {"noch einmal: ist das sicher", 1},
        {"sorry to ask again, the staging thing", 1}, /* [reask] says it whatever the rest */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        unsigned k = kinds_of(cases[i].text);
        assert_int_equal((k & ASK_REASK) != 0, cases[i].reask);
    }
    /* the rule itself */
    assert_int_equal(ask_again(ASK_AGAIN, 0), ASK_AGAIN);
    assert_int_equal(ask_again(ASK_AGAIN, 1), ASK_AGAIN | ASK_REASK);
    assert_int_equal(ask_again(ASK_AGAIN | ASK_REASSURE, 0), ASK_AGAIN | ASK_REASSURE | ASK_REASK);
    assert_int_equal(ask_again(ASK_AGAIN | ASK_TELL, 0), ASK_AGAIN | ASK_TELL | ASK_REASK);
    assert_int_equal(ask_again(ASK_TELL, 1), ASK_TELL);
    assert_int_equal(ask_again(ASK_COMMAND, 1), ASK_COMMAND);
}

/* A text, and whether it says "again" (ASK_AGAIN) and is asked again
 * (ASK_REASK). */
struct again_case {
    const char *text;
    int again, reask;
};

static void expect_again(const struct again_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned k = kinds_of(cases[i].text);
        assert_int_equal((k & ASK_AGAIN) != 0, cases[i].again);
        assert_int_equal((k & ASK_REASK) != 0, cases[i].reask);
    }
}

/* An apology, a promise or a verb of asking within a few words of a word of
 * coming back says "again" as [again] does: in a question or a plea it is
 * asked again, in an instruction it is the work going on, and the two far
 * apart say nothing of the kind. */
static void an_excuse_near_a_return_word_says_again(void **state)
{
    (void)state;
    static const struct again_case cases[] = {
        {"sorry to circle back: is the rollout safe?", 1, 1},
        {"last time I ask, promise: will the lease hold?", 1, 1},
        {"perdona que vuelva a lo mismo, \xc2\xbf"
         "es seguro?",
         1, 1},
        {"\xd0\xb8\xd0\xb7\xd0\xb2\xd0\xb8\xd0\xbd\xd0\xb8, \xd0\xbe\xd0\xbf\xd1\x8f\xd1\x82\xd1\x8c "
         "\xd0\xbe\xd0\xb1 \xd1\x8d\xd1\x82\xd0\xbe\xd0\xbc?",
         1, 1}, /* Russian "sorry, again about this?" */
        {"son bir kez soruyorum, bu g\xc3\xbcvenli mi?", 1, 1}, /* a verb of asking, not an apology */
        {"\xe6\x9c\x80\xe5\xbe\x8c\xe3\x81\xab\xe8\x81\x9e\xe3\x81\x8f\xe3\x81\x91\xe3\x81\xa9\xe3\x80\x81\xe6\x9c\xac"
         "\xe5\xbd\x93\xe3\x81\xab\xe5\xa4\xa7\xe4\xb8\x88\xe5\xa4\xab\xef\xbc\x9f",
         1, 1}, /* 最後に聞くけど、本当に大丈夫？ */
        {"\xeb\xa7\x88\xec\xa7\x80\xeb\xa7\x89\xec\x9c\xbc\xeb\xa1\x9c "
         "\xeb\xac\xbc\xec\x96\xb4\xeb\xb3\xbc\xea\xb2\x8c\xec\x9a\x94, \xec\xa0\x95\xeb\xa7\x90 "
         "\xea\xb4\x9c\xec\xb0\xae\xec\x95\x84\xec\x9a\x94?",
         1, 1}, /* 마지막으로 물어볼게요, 정말 괜찮아요? */
        {"\xe6\x9c\x80\xe5\xbe\x8c\xe3\x81\xab\xe3\x83\x86\xe3\x82\xb9\xe3\x83\x88\xe3\x82\x92\xe5\xae\x9f\xe8\xa1\x8c"
         "\xe3\x81\x97\xe3\x81\xa6",
         0, 0}, /* 最後にテストを実行して: "lastly", an instruction */
        {"sorry, run the checklist script again", 1, 0}, /* an instruction */
        {"again one more question: what does the flag do?", 0, 0}, /* "question" is no verb of asking */
        {"scusa, ancora una domanda: come si fa il deploy?", 0, 0}, /* "ancora", "encore": one more, a new one */
        {"pardon, encore une question : comment on lance les tests ?", 0, 0},
        {"sorry for the typo in the message I sent this morning about the form. will the surveyor come out again?", 0,
         0},
    };
    expect_again(cases, sizeof cases / sizeof *cases);
    /* six words between them at most, in either order */
    assert_true(kinds_of("sorry alpha bravo charlie delta echo foxtrot again?") & ASK_REASK);
    assert_false(kinds_of("sorry alpha bravo charlie delta echo foxtrot golf again?") & ASK_REASK);
    assert_true(kinds_of("again alpha bravo charlie delta echo foxtrot sorry?") & ASK_REASK);
    assert_false(kinds_of("again alpha bravo charlie delta echo foxtrot golf sorry?") & ASK_REASK);
    /* both phrases are marked, and no word between or beyond them */
    const char *s = "sorry to circle back on it";
    struct text_words w = {0};
    assert_int_equal(text_words(s, strlen(s), &w), 0);
    assert_int_equal(w.n, 6);
    unsigned char mark[6] = {0};
    assert_true(ask_kinds(&w.v[0].hash, sizeof *w.v, w.n, mark) & ASK_AGAIN);
    static const unsigned char want[6] = {ASK_AGAIN, 0, ASK_AGAIN, ASK_AGAIN, 0, 0};
    assert_memory_equal(mark, want, sizeof want);
    text_words_free(&w);
}

/* "Still" near a word of not understanding says the person is stuck on what
 * was answered: "again" as [again] says it; "still" alone says nothing of
 * the kind. */
static void still_near_not_understanding_says_again(void **state)
{
    (void)state;
    static const struct again_case cases[] = {
        {"I'm still confused: why divide by n-1?", 1, 1},
        {"sigo sin entender, \xc2\xbf"
         "por qu\xc3\xa9 n-1?",
         1, 1},
        {"\xe6\x88\x91\xe8\xbf\x98\xe6\x98\xaf\xe6\xb2\xa1\xe6\x83\xb3\xe9\x80\x9a\xef\xbc\x9f", 1,
         1}, /* 我还是没想通？ */
        {"the logs are still confusing", 1, 0}, /* no ask */
        {"is it still running?", 0, 0},
        {"still failing: why?", 0, 0},
        {"is the deploy still stuck on step 3?", 0, 0}, /* a job stuck is no person stuck */
        {"still, the docs say the flag is safe. am I confused about what it does?", 0, 0}, /* far apart */
    };
    expect_again(cases, sizeof cases / sizeof *cases);
}

/* "Still" alone, in any language and however many words it takes, and "one
 * last thing" say nothing of asking again: the work goes on, or the next
 * thing is asked. */
static void still_alone_or_a_last_thing_is_no_reask(void **state)
{
    (void)state;
    static const char *const texts[] = {
        "it's good but still too formal. we're a tiny org",
        "\xd1\x81\xd0\xb4\xd0\xb5\xd0\xbb\xd0\xb0\xd0\xbb. pg_wal \xd0\xb2\xd1\x81\xd1\x91 \xd0\xb5\xd1\x89\xd1\x91 "
        "212G", /* сделал. pg_wal всё ещё 212G */
        "das Deployment l\xc3\xa4uft immer noch",
        "\xd0\x98 \xd0\xbf\xd0\xbe\xd1\x81\xd0\xbb\xd0\xb5\xd0\xb4\xd0\xbd\xd0\xb5\xd0\xb5 \xd0\xbd\xd0\xb0 "
        "\xd1\x81\xd0\xb5\xd0\xb3\xd0\xbe\xd0\xb4\xd0\xbd\xd1\x8f", /* И последнее на сегодня */
        "\xc3\xbaltima pregunta: \xc2\xbf"
        "cu\xc3\xa1nto cuesta el env\xc3\xado?", /* última pregunta: ¿cuánto cuesta el envío? */
    };
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++)
        assert_false(kinds_of(texts[i]) & ASK_REASK);
    assert_true(kinds_of("sorry, still confused about the n-1 thing") & ASK_REASK); /* with not understanding it does */
}

/* Another Latin-script language's question word asks only in a text that
 * does not read as English: Italian "come", German "was", French "comment"
 * are English words too. */
static void a_latin_question_word_asks_in_its_own_language(void **state)
{
    (void)state;
    assert_false(kinds_of("Come say hi. We'll be the ones covered in flour") & ASK_QUESTION);
    assert_false(kinds_of("thanks, that was stressful") & ASK_QUESTION);
    assert_false(kinds_of("ok comment that line out") & ASK_QUESTION);
    assert_true(kinds_of("come si fa il deploy su staging") & ASK_QUESTION);
    assert_true(kinds_of("was ist der unterschied zwischen den beiden") & ASK_QUESTION);
    assert_true(kinds_of("comment je fais pour lancer les tests") & ASK_QUESTION);
    /* English's own, in an English text */
    assert_true(kinds_of("was it the migration that broke the build") & ASK_QUESTION);
    /* Turkish closes with its particle and its ending; Swedish opens */
    assert_true(kinds_of("28 net ile mühendislik olur mu ya, bi daha söyler misin") & ASK_QUESTION);
    assert_true(kinds_of("bu kadar ilaç almak normal mi") & ASK_QUESTION);
    assert_true(kinds_of("varför startar inte tjänsten efter omstart") & ASK_QUESTION);
    /* "mi" and "mu" alone are other languages' words: no question */
    assert_false(kinds_of("mi jefe dice que el informe va tarde") & ASK_QUESTION);
    assert_false(kinds_of("powiedz mu że jutro wyślę raport") & ASK_QUESTION);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(question_marks_to_the_last_byte),
        cmocka_unit_test(a_question_word_stands_where_questions_have_it),
        cmocka_unit_test(a_phrase_marks_its_own_words),
        cmocka_unit_test(only_the_words_given_are_read),
        cmocka_unit_test(an_error_report_as_tools_print_it),
        cmocka_unit_test(again_asks_again_only_in_an_ask),
        cmocka_unit_test(an_excuse_near_a_return_word_says_again),
        cmocka_unit_test(still_near_not_understanding_says_again),
        cmocka_unit_test(still_alone_or_a_last_thing_is_no_reask),
        cmocka_unit_test(a_latin_question_word_asks_in_its_own_language),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
