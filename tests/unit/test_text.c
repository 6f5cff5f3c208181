/* test_text.c: segmentation and normalisation, in several scripts. */
#include "asking.h"
#include "detect.h"
#include "embed.h"
#include "phrases.h"
#include "stem.h"
#include "text.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

static size_t words(const char *s, struct text_words *w)
{
    w->n = 0;
    assert_int_equal(text_words(s, strlen(s), w), 0);
    return w->n;
}

static uint64_t h(const char *s)
{
    return text_word_hash(s, strlen(s));
}

/* text_hash: the loop detector calls two results the same when their hashes
 * are. A change of one byte anywhere, at any length (the four-lane path from
 * 256 bytes included), or of the length alone, or of the seed, gives another
 * hash; the same bytes give the same hash wherever they lie in memory. */
static void hashes_every_byte(void **state)
{
    (void)state;
    static char a[1100], b[1100 + 7];
    for (size_t i = 0; i < sizeof a; i++)
        a[i] = (char)('a' + i % 23);
    for (size_t n = 1; n <= sizeof a; n += n < 300 ? 1 : 37) {
        uint64_t h = text_hash(a, n, 7);
        memcpy(b + 7, a, n); /* elsewhere, unaligned */
        assert_true(text_hash(b + 7, n, 7) == h);
        assert_true(text_hash(a, n, 8) != h);
        assert_true(text_hash(a, n - 1, 7) != h);
        for (size_t at = 0; at < n; at += 1 + n / 40) {
            b[7 + at] ^= 1;
            if (text_hash(b + 7, n, 7) == h)
                fail_msg("length %zu: a change at byte %zu kept the hash", n, at);
            b[7 + at] ^= 1;
        }
    }
}

/* The hasher for bytes that arrive in pieces gives one value however they
 * are cut (every cut of every length up to 300, in steps of 1 and 7 bytes),
 * and another when a byte, the length or the seed differs. */
static void hashes_in_pieces(void **state)
{
    (void)state;
    static char a[300];
    for (size_t i = 0; i < sizeof a; i++)
        a[i] = (char)('a' + i % 29);
    for (size_t n = 0; n <= sizeof a; n++) {
        uint64_t h = text_hash_pieces(a, n, 5);
        if (n && text_hash_pieces(a, n - 1, 5) == h)
            fail_msg("length %zu: one byte less kept the hash", n);
        assert_true(text_hash_pieces(a, n, 6) != h);
        for (size_t cut = 0; cut <= n; cut++)
            for (size_t step = 1; step <= 7; step += 6) {
                struct text_hasher t;
                text_hasher_init(&t, 5);
                text_hasher_add(&t, a, cut);
                for (size_t at = cut; at < n; at += step)
                    text_hasher_add(&t, a + at, at + step <= n ? step : n - at);
                if (text_hasher_end(&t) != h)
                    fail_msg("length %zu cut at %zu, then %zu at a time: another hash", n, cut, step);
            }
        for (size_t at = 0; at < n; at++) {
            a[at] ^= 1;
            if (text_hash_pieces(a, n, 5) == h)
                fail_msg("length %zu: a change at byte %zu kept the hash", n, at);
            a[at] ^= 1;
        }
    }
}

/* text_ascii_prefix (and so text_valid_utf8's fast path) finds the first
 * byte of 0x80 or more at every position, past each step width (64, 8, 1). */
static void finds_the_first_high_byte(void **state)
{
    (void)state;
    char s[300];
    for (size_t n = 0; n < 200; n++) {
        memset(s, 'a', n);
        assert_int_equal(text_ascii_prefix(s, n), n);
        for (size_t at = 0; at < n; at++) {
            s[at] = (char)0xc3;
            if (text_ascii_prefix(s, n) != at)
                fail_msg("length %zu: high byte at %zu found at %zu", n, at, text_ascii_prefix(s, n));
            if (at + 1 < n) {
                s[at + 1] = (char)0xa9; /* é: valid; a lone 0xc3 before 'a' is not */
                assert_true(text_valid_utf8(s, n));
                s[at + 1] = 'a';
            }
            assert_false(text_valid_utf8(s, n));
            s[at] = 'a';
        }
    }
}

static void splits_ascii_words_with_offsets(void **state)
{
    (void)state;
    struct text_words w = {0};
    const char *s = "Is the plan OK?  You're sure.";
    assert_int_equal(words(s, &w), 6);
    assert_int_equal(w.v[0].start, 0);
    assert_int_equal(w.v[0].end, 2);
    assert_true(w.v[4].hash == h("you're")); /* apostrophe inside a word keeps it whole */
    assert_true(w.v[3].hash == h("ok")); /* case folded */
    assert_int_equal(w.v[3].sentence, 0);
    assert_int_equal(w.v[4].sentence, 1); /* "?" ends a sentence */
    text_words_free(&w);
}

static void folds_unicode_forms(void **state)
{
    (void)state;
    assert_true(h("STRASSE") == h("straße")); /* full case folding */
    assert_true(h("ｐｌａｎ") == h("plan")); /* NFKC: fullwidth */
    assert_true(h("you\xE2\x80\x99re") == h("you're")); /* typographic apostrophe */
    assert_true(h("you\xE2\x80\x98re") == h("you're")); /* the left one, as some keyboards type it */
    assert_true(h("don\xCA\xBCt") == h("don't")); /* U+02BC, the modifier letter apostrophe */
    assert_true(h("a\xCA\xBB"
                  "b") != h("a'b")); /* U+02BB, the turned comma, is a letter of its own */
    assert_true(h("a\xE2\x80\x94"
                  "b") != h("a'b")); /* a dash is no apostrophe */
    assert_true(h("ÉCOLE") == h("école"));
    assert_true(h("e\xCC\x81"
                  "cole") == h("école")); /* decomposed é */
    assert_true(h("plan") != h("plans"));
}

/* A word already in its folded form is hashed as it stands (no folding
 * call); it must hash as the same word written in a form that folds to it. */
static void a_folded_word_hashes_as_its_unfolded_forms(void **state)
{
    (void)state;
    assert_true(h("ПРИВЕТ") == h("привет")); /* Cyrillic capitals */
    assert_true(h("ЁЖ") == h("ёж"));
    assert_true(h("е\xCC\x88ж") == h("ёж")); /* decomposed ё */
    assert_true(h("\xEF\xBD\xB6\xEF\xBE\x80\xEF\xBD\xB6\xEF\xBE\x85") == h("カタカナ")); /* halfwidth ｶﾀｶﾅ */
    assert_true(h("\xE3\x81\x8B\xE3\x82\x99") == h("が")); /* か + the combining voiced mark */
    assert_true(h("\xEF\xA4\x80") == h("\xE8\xB1\x88")); /* the compatibility ideograph U+F900 is U+8C48 */
    assert_true(h("\xE1\x84\x92\xE1\x85\xA1\xE1\x86\xAB") == h("한")); /* conjoining jamo */
    assert_true(h("ÀÉÎÕÜ") == h("àéîõü"));
    assert_true(h("ÿ") == h("Ÿ"));
    assert_true(h("straße") != h("straÿe")); /* ß folds, and is not hashed as it stands */
    assert_true(h("東京") != h("京東"));
    /* a word that ends its buffer is read no further than its end (under
     * ASan a byte more is a fault): the copy has no terminating NUL */
    static const char *const ends[] = {"привет", "カタカナ", "한국어", "école", "plan"};
    for (size_t i = 0; i < sizeof ends / sizeof *ends; i++) {
        size_t n = strlen(ends[i]);
        char *b = malloc(n);
        assert_non_null(b);
        memcpy(b, ends[i], n);
        assert_true(text_word_hash(b, n) == h(ends[i]));
        free(b);
    }
}

static void tokenises_other_scripts(void **state)
{
    (void)state;
    struct text_words w = {0};
    assert_int_equal(words("Ist der Plan in Ordnung?", &w), 5);
    assert_true(words("迁移计划可以吗？", &w) >= 2); /* Han splits into words */
    assert_int_equal(words("Это нормальный план.", &w), 3);
    assert_int_equal(words("🙂 🚀 ... !!!", &w), 0); /* no letters, no words */
    assert_int_equal(words("", &w), 0);
    text_words_free(&w);
}

/* Words are stemmed in the language the prompt's function words say. */
static void tells_the_language(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        enum stem_lang lang;
    } v[] = {
        {"Is it safe to merge this change before the release, or should I wait?", STEM_EN},
        {"Ist es sicher, den Branch heute noch zu mergen, oder soll ich warten?", STEM_DE},
        {"Est-ce que c'est sûr de déployer ça aujourd'hui, ou je dois attendre ?", STEM_FR},
        {"¿Es seguro desplegar esto hoy, o debería esperar a mañana?", STEM_ES},
        {"È sicuro fare il merge di questo cambiamento prima del rilascio?", STEM_IT},
        {"É seguro fazer o deploy disso hoje, ou devo esperar até amanhã?", STEM_PT},
        {"Is het veilig om deze wijziging vandaag nog te mergen, of moet ik wachten?", STEM_NL},
        {"Zij zijn zo blij, ze zullen zich haasten.", STEM_NL}, /* its function words all hold a z */
        {"Är det säkert att slå ihop den här ändringen i dag, eller ska jag vänta?", STEM_SV},
        {"Безопасно ли сливать эту ветку сегодня?", STEM_RU},
        {"क्या आज इस बदलाव को मर्ज करना सुरक्षित है?", STEM_HI},
        {"Είναι ασφαλές να συγχωνεύσω αυτή την αλλαγή σήμερα;", STEM_EL},
        {"هل من الآمن دمج هذا التغيير اليوم؟", STEM_AR},
        {"\xF0\xA0\xAE\xB7\xF0\xA0\xAE\xB7\xF0\xA0\xAE\xB7\xF0\xA0\xAE\xB7 ok",
         STEM_NONE}, /* Han past U+FFFF: 4 bytes each */
        {"İstifa mektubu bu ton ile çok mu sert, sence daha yumuşak mı olmalı?", STEM_TR},
        {"ile kosztuje wymiana baterii w kuchni?", STEM_EN}, /* Polish "ile" is not Turkish's */
        {"ik ben er niet zeker van", STEM_NL}, /* nor Dutch "ben" */
        {"Powiedz mu, że jutro nie przyjdę", STEM_EN}, /* nor Polish "mu" */
        {"fix nan in mu_loss", STEM_EN}, /* nor an identifier */
        {"Plot mu vs sigma", STEM_EN},
        {"şimdi deploy yap", STEM_EN}, /* one Turkish word is not Turkish yet */
        {"şimdi deploy yap, sonra?", STEM_TR}, /* two are */
        {"주문 요청이 왜 두 번 나가요?", STEM_KO},
        {"注文のリクエストが二回送られます", STEM_NONE},
        {"この에러", STEM_NONE}, /* 2 Hangul of 4: not more than half */
        {"이 에러 why 두 번?", STEM_KO}, /* 5 Hangul, 3 Latin */
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        assert_int_equal(stem_lang_of(v[i].s, strlen(v[i].s)), v[i].lang);
    /* Letters with marks are Latin letters: Vietnamese (11 plain, 9 marked)
     * naming a company in Cyrillic (12) is not Russian. */
    const char *vi = "Tôi đã hỏi về hợp đồng với Газпромнефть";
    assert_int_not_equal(stem_lang_of(vi, strlen(vi)), STEM_RU);
    /* The first STEM_LANG_WORDS words decide: none of 64 names is a
     * function word, so the German after them is not read. */
    char text[1024] = "";
    for (int i = 0; i < STEM_LANG_WORDS; i++)
        strcat(text, "Kubernetes ");
    strcat(text, "ist das nicht sicher und gut?");
    assert_int_equal(stem_lang_of(text, strlen(text)), STEM_EN);
    assert_int_equal(stem_lang_of(text + 11, strlen(text + 11)), STEM_DE); /* 63 names: German is read */
}

/* Texts read together, in the order given: a short one says little alone,
 * the texts after it more; the first STEM_LANG_WORDS words of them all
 * decide, as in one text. */
static void tells_the_language_of_texts_together(void **state)
{
    (void)state;
    const char *t[] = {"Rassure-moi stp", "Tu crois que je vais le regretter ?", "J'ai bien fait de partir ?"};
    size_t n[] = {strlen(t[0]), strlen(t[1]), strlen(t[2])};
    assert_int_equal(stem_lang_of(t[0], n[0]), STEM_EN);
    assert_int_equal(stem_lang_of_texts(t, n, 3), STEM_FR);
    assert_int_equal(stem_lang_of_texts(t, n, 1), STEM_EN);
    assert_int_equal(stem_lang_of_texts(t, n, 0), STEM_EN);
    /* two letters of Latin, then Russian: the script of the most letters */
    const char *w[] = {"\xC3\xA9\xC3\xA9", "Безопасно ли сливать эту ветку сегодня?"};
    size_t wn[] = {4, strlen(w[1])};
    assert_int_equal(stem_lang_of_texts(w, wn, 2), STEM_RU);
    /* a text's end ends its word: "ist" and "das" are two words */
    const char *g[] = {"ist", "das", "nicht"};
    size_t gn[] = {3, 3, 5};
    assert_int_equal(stem_lang_of_texts(g, gn, 3), STEM_DE);
    /* 64 words across texts, none a function word: the German after them is not read */
    char names[1024] = "";
    for (int i = 0; i < STEM_LANG_WORDS - 1; i++)
        strcat(names, "Kubernetes ");
    const char *u[] = {names, "Kubernetes", "ist das nicht sicher und gut?"};
    size_t un[] = {strlen(names), 10, strlen(u[2])};
    assert_int_equal(stem_lang_of_texts(u, un, 3), STEM_EN);
    const char *v[] = {names, u[2]};
    size_t vn[] = {un[0], un[2]};
    assert_int_equal(stem_lang_of_texts(v, vn, 2), STEM_DE); /* 63 names, then the German: it is read */
}

/* The script with the most letters decides, Latin on a tie; each script
 * from the first code point of its block (U+0400, U+0370, U+0600, U+0900,
 * U+3040); function words count whatever their capitals ("Auf", "Auch"). */
static void the_script_with_most_letters(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        enum stem_lang lang;
    } v[] = {
        {"\xd0\x80\xd0\x80\xd0\x80", STEM_RU}, /* U+0400 */
        {"\xcd\xb0\xcd\xb0\xcd\xb0", STEM_EL}, /* U+0370 */
        {"\xd8\x80\xd8\x80\xd8\x80", STEM_AR}, /* U+0600 */
        {"\xe0\xa4\x80\xe0\xa4\x80\xe0\xa4\x80", STEM_HI}, /* U+0900 */
        {"\xe3\x81\x80\xe3\x81\x80\xe3\x81\x80", STEM_NONE}, /* U+3040 */
        {"\xea\xb0\x80\xea\xb0\x80\xea\xb0\x80", STEM_KO}, /* U+AC00, the first Hangul syllable */
        {"\xed\x9e\xaf\xed\x9e\xaf\xed\x9e\xaf", STEM_KO}, /* U+D7AF */
        {"\xed\x9e\xb0\xed\x9e\xb0\xed\x9e\xb0", STEM_NONE}, /* U+D7B0: past the syllables */
        {"\xea\xaf\xbf\xea\xaf\xbf\xea\xaf\xbf", STEM_NONE}, /* U+ABFF: before them */
        {"\xe3\x84\xb0\xe3\x84\xb0\xe3\x84\xb0", STEM_KO}, /* U+3130, Hangul letters ("ㅠㅠ") */
        {"\xe3\x86\x8f\xe3\x86\x8f\xe3\x86\x8f", STEM_KO}, /* U+318F */
        {"\xe3\x86\x90\xe3\x86\x90\xe3\x86\x90", STEM_NONE}, /* U+3190 */
        {"\xea\xb0\x80\xea\xb0\x80 \xe6\x97\xa5\xe6\x97\xa5", STEM_NONE}, /* 2 Hangul, 2 Han: a tie is not Korean */
        {"abc \xd0\xb3\xd0\xb4\xd0\xb5", STEM_EN}, /* 3 Latin, 3 Cyrillic */
        {"abc \xce\xb1\xce\xb2\xce\xb3", STEM_EN}, /* 3 Greek */
        {"abc \xd9\x85\xd9\x86\xd9\x87", STEM_EN}, /* 3 Arabic */
        {"abc \xe0\xa4\x95\xe0\xa4\x96\xe0\xa4\x97", STEM_EN}, /* 3 Devanagari */
        {"abc \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e", STEM_EN}, /* 3 Han */
        {"Auf Auch Auf Auch", STEM_DE},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        if (stem_lang_of(v[i].s, strlen(v[i].s)) != v[i].lang)
            fail_msg("case %zu: %d, not %d", i, (int)stem_lang_of(v[i].s, strlen(v[i].s)), (int)v[i].lang);
}

/* Korean: the particles written onto a word are taken off, longest first
 * and again until none is left; a one-syllable particle leaves two
 * characters at least, a longer one leaves one. */
static void korean_particles_come_off(void **state)
{
    (void)state;
    static const struct {
        const char *w, *stem;
    } v[] = {
        {"요청이", "요청"},
        {"요청을", "요청"},
        {"요청", "요청"},
        {"서버에서는", "서버"},
        {"서버에서", "서버"},
        {"집에서", "집"},
        {"고양이가", "고양"},
        {"고양이", "고양"},
        {"나이", "나이"},
        {"나이를", "나이"},
        {"정도", "정도"},
        {"에서", "에서"},
        {"strictmode를", "strictmode"},
        {"api가", "api"},
        {"바나나를", "바나나"},
        {"정상이에요", "정상"},
        {"학교예요", "학교"},
        {"집에", "집에"},
        {"이", "이"},
        {"나가요", "나가요"},
        {"나이랑", "나이"},
        {"경로는", "경로"},
        {"경로를", "경로"},
        {"나라는", "나라"},
        {"카메라는", "카메라"},
        {"카메라가", "카메라"},
        {"사랑", "사랑"},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        size_t len;
        const char *st = stem_word(STEM_KO, v[i].w, strlen(v[i].w), &len);
        if (st != v[i].w || len != strlen(v[i].stem) || memcmp(st, v[i].stem, len))
            fail_msg("case %zu (%s): %.*s, not %s", i, v[i].w, (int)len, st, v[i].stem);
    }
}

/* A word in no language, or one out of range, is left as it is. */
static void stems_only_in_a_language(void **state)
{
    (void)state;
    size_t len;
    const char *st = stem_word(STEM_EN, "merging", 7, &len);
    assert_int_equal(len, 4);
    assert_memory_equal(st, "merg", 4);
    static const char *const tr[][2] = {{"istifamı", "istifa"}, {"istifayı", "istifa"}, {"mektubumu", "mektup"}};
    for (size_t i = 0; i < sizeof tr / sizeof tr[0]; i++) { /* Turkish, since 0.6.6 */
        st = stem_word(STEM_TR, tr[i][0], strlen(tr[i][0]), &len);
        assert_int_equal(len, strlen(tr[i][1]));
        assert_memory_equal(st, tr[i][1], len);
    }
    const char *w = "merging";
    assert_ptr_equal(stem_word(STEM_NONE, w, 7, &len), w);
    assert_ptr_equal(stem_word(STEM_NLANG, w, 7, &len), w);
    assert_int_equal(len, 7);
}

static void content_words_and_what_two_share(void **state)
{
    (void)state;
    struct text_words w = {0};
    struct text_set a, b;
    words("Is the migration plan okay?", &w);
    text_set_from_words(&w, 1, &a);
    assert_int_equal(a.n, 2); /* migration, plan */
    words("the plan for the migration", &w);
    text_set_from_words(&w, 1, &b);
    assert_int_equal(b.n, 2);
    assert_int_equal(text_set_intersect(&a, &b), 2);
    text_set_free(&b);
    words("the plan for lunch", &w);
    text_set_from_words(&w, 1, &b);
    assert_int_equal(text_set_intersect(&a, &b), 1); /* plan */
    assert_int_equal(text_set_intersect(&b, &a), 1);
    text_set_free(&b);
    words("is it and the", &w); /* only stopwords */
    text_set_from_words(&w, 1, &b);
    assert_int_equal(b.n, 0);
    text_set_free(&b);
    /* every language of the list */
    words("les que para della het \xd0\xb2\xd0\xb0\xd1\x81", &w);
    text_set_from_words(&w, 1, &b);
    assert_int_equal(b.n, 0);
    assert_int_equal(text_set_intersect(&a, &b), 0);
    text_set_free(&a);
    text_set_free(&b);
    text_words_free(&w);
}

static void stop_line(const char *line, size_t n, void *ctx)
{
    size_t *missing = ctx;
    *missing += !text_is_stopword(text_word_hash(line, n));
}

/* Every word of the stoplist is a stopword, the last as much as the first
 * (the set once held the first 1,024 and dropped Turkish). */
static void every_listed_word_is_a_stopword(void **state)
{
    (void)state;
    const struct embed_blob *b = embed_find("detectors/data/stopwords.txt");
    assert_non_null(b);
    size_t missing = 0, lines = text_each_line(b->data, stop_line, &missing);
    assert_true(lines > 1000);
    assert_int_equal(missing, 0);
    assert_true(text_is_stopword(text_word_hash("zaten", 5))); /* the list's last word */
    assert_false(text_is_stopword(text_word_hash("migration", 9)));
}

/* How deep YAML's flow collections nest: quotes and comments hold none,
 * and an apostrophe inside a word opens no quote (or a deep file would
 * hide behind "don't"). */
static void yaml_flow_depth(void **state)
{
    (void)state;
    assert_int_equal(text_yaml_flow_depth("[[a]]", 5, 64), 2);
    assert_int_equal(text_yaml_flow_depth("a: {b: [c, d]}\n", 15, 64), 2);
    const char *hid = "a: don't\nb: [[x]]\n";
    assert_int_equal(text_yaml_flow_depth(hid, strlen(hid), 64), 2);
    const char *q = "a: '[[[ it''s ['\nb: \"[\\\"[\"\n# [[[[\n";
    assert_int_equal(text_yaml_flow_depth(q, strlen(q), 64), 0);
    const char *hash = "x: a#[[b\n"; /* a # starts a comment only after a space */
    assert_int_equal(text_yaml_flow_depth(hash, strlen(hash), 64), 2);
    char deep[300];
    memset(deep, '[', 100);
    memset(deep + 100, ']', 100);
    assert_int_equal(text_yaml_flow_depth(deep, 200, 64), 65); /* past max: max + 1 */
}

static void validates_utf8(void **state)
{
    (void)state;
    assert_true(text_valid_utf8("plain", 5));
    assert_true(text_valid_utf8("é", 2));
    assert_false(text_valid_utf8("\xC3", 1));
    assert_false(text_valid_utf8("\xED\xA0\x80", 3)); /* a surrogate */
    assert_int_equal(text_char_count("héllo", strlen("héllo")), 5);
}

static void ascii_path_equals_unicode_path(void **state)
{
    (void)state;
    static const char alphabet[] = "abcXYZ019_.':,;!? \n\t-\"()/";
    struct text_words a = {0}, b = {0};
    unsigned seed = 12345;
    char buf[200];
    for (int round = 0; round < 20000; round++) {
        size_t n = (size_t)(round % 60);
        for (size_t i = 0; i < n; i++) {
            seed = seed * 1103515245 + 12345;
            buf[i] = alphabet[(seed >> 16) % (sizeof alphabet - 1)];
        }
        a.n = b.n = 0;
        assert_int_equal(text_words(buf, n, &a), 0);
        assert_int_equal(text_words_unicode(buf, n, &b), 0);
        if (a.n != b.n)
            fail_msg("round %d: %zu words vs %zu in \"%.*s\"", round, a.n, b.n, (int)n, buf);
        for (size_t i = 0; i < a.n; i++)
            if (a.v[i].start != b.v[i].start || a.v[i].end != b.v[i].end || a.v[i].hash != b.v[i].hash ||
                a.v[i].sentence != b.v[i].sentence)
                fail_msg("round %d word %zu differs in \"%.*s\"", round, i, (int)n, buf);
    }
    text_words_free(&a);
    text_words_free(&b);
}

static void collect_line(const char *line, size_t n, void *ctx)
{
    char *out = ctx;
    strncat(out, line, n);
    strcat(out, "|");
}

static void reads_data_lines(void **state)
{
    (void)state;
    char got[128] = "";
    /* blanks and comments skipped, ends trimmed, the last line without its newline kept */
    assert_int_equal(text_each_line("one\n\n# a comment\n  two \t\r\nthree", collect_line, got), 3);
    assert_string_equal(got, "one|two|three|");
    got[0] = '\0';
    assert_int_equal(text_each_line("", collect_line, got), 0);
    assert_int_equal(text_each_line("last", collect_line, got), 1);
    assert_string_equal(got, "last|");
}

/* An elision opens a French or Italian word: "l'asthme" is "asthme" after
 * it, "c'est" is "est"; an English contraction, a word that only begins like
 * an elision, or an apostrophe with nothing after it is no elision. */
static void finds_the_elision_a_word_opens_with(void **state)
{
    (void)state;
    static const struct {
        const char *w;
        size_t e;
    } cases[] = {
        {"l'asthme", 2},
        {"L'Asthme", 2},
        {"c'est", 2},
        {"qu'il", 3},
        {"jusqu'ici", 6},
        {"dell'anno", 5},
        {"un'altra", 3},
        {"c'\xC3\xA8", 2},
        {"l\xE2\x80\x99"
         "enfant",
         4},
        {"it's", 0},
        {"don't", 0},
        {"o'clock", 0},
        {"l'", 0},
        {"lo'", 0},
        {"asthme", 0},
        {"", 0},
        {"abcdefgh'x", 0},
        {"dall'anno", 5},
        {"lorsqu'il", 7},
        {"quest'anno", 6},
        {"l\xE2\x82\xAC"
         "uro",
         0}, /* another sign than ’ */
        {"1'a", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        assert_int_equal(text_elision(cases[i].w, strlen(cases[i].w)), cases[i].e);
    /* only the bytes given: "l" of "l'a" cut before its apostrophe */
    assert_int_equal(text_elision("l'a", 1), 0);
    assert_int_equal(text_elision("l'a", 2), 0);
}

/* phrases_at: the longest phrase of the classes asked for, whether or not
 * the word after the first begins a longer one, at the end of the text too;
 * a phrase longer than what is left of the text is not there. */
static const struct phrase *phrase_in(const struct phrases *p, const char *s, size_t i, unsigned mask,
                                      struct text_words *w)
{
    words(s, w);
    return phrases_at(p, &w->v[0].hash, sizeof *w->v, w->n, i, mask);
}

static void finds_the_longest_phrase(void **state)
{
    (void)state;
    enum { QUESTION, FOLLOWUP, REASSURANCE };
    static const char *const names[] = {"question", "followup", "reassurance"};
    struct phrases p;
    assert_int_equal(phrases_load(&p, "detectors/data/asking.txt", names, 3, NULL), 0);
    struct text_words w = {0};
    const unsigned all = 1u << QUESTION | 1u << FOLLOWUP | 1u << REASSURANCE;
    const struct phrase *f = phrase_in(&p, "what", 0, all, &w);
    assert_non_null(f);
    assert_int_equal(f->len, 1);
    assert_int_equal(f->cls, QUESTION);
    f = phrase_in(&p, "so what", 1, all, &w); /* the last word */
    assert_true(f && f->len == 1 && f->cls == QUESTION);
    f = phrase_in(&p, "what is it", 0, all, &w); /* no phrase goes on with "is" */
    assert_true(f && f->len == 1 && f->cls == QUESTION);
    f = phrase_in(&p, "what about it", 0, all, &w);
    assert_true(f && f->len == 2 && f->cls == FOLLOWUP);
    f = phrase_in(&p, "what about it", 0, 1u << QUESTION, &w);
    assert_true(f && f->len == 1 && f->cls == QUESTION);
    f = phrase_in(&p, "what are the chances of rain", 0, all, &w);
    assert_true(f && f->len == 4 && f->cls == REASSURANCE);
    assert_null(phrase_in(&p, "what are the", 0, 1u << REASSURANCE, &w)); /* cut short */
    assert_null(phrase_in(&p, "what about it", 0, 1u << REASSURANCE, &w));
    assert_null(phrase_in(&p, "chances what", 0, all, &w));
    assert_null(phrase_in(&p, "about what", 0, all, &w));
    /* the last of 64 words, as many as the words' array holds: nothing past
     * it is read (ASan) */
    char text[64 * 2 + 8] = "";
    for (int k = 0; k < 63; k++)
        strcat(text, "x ");
    strcat(text, "what");
    f = phrase_in(&p, text, 63, all, &w);
    assert_int_equal(w.n, 64);
    assert_int_equal(w.cap, 64);
    assert_true(f && f->len == 1 && f->cls == QUESTION);
    /* the phrase whose first word sorts last, asked for no class: the search
     * ends at the table's end and reads nothing past it (ASan) */
    const struct phrase *last = &p.v[p.n - 1];
    const uint64_t *lw = phrase_words(&p, last);
    assert_null(phrases_at(&p, lw, sizeof *lw, last->len, 0, 0));
    assert_true(phrases_at(&p, lw, sizeof *lw, last->len, 0, all) != NULL);
    text_words_free(&w);
    phrases_free(&p);
}

/* The tables the detectors load are in the binary (nothing is parsed at
 * start), and each equals the table parsed from its file now: a list edited
 * after the build, or words hashed otherwise at run time, would show here. */
/* A text that is not valid UTF-8 reads as a terminal shows it: each bad
 * byte U+FFFD, a NUL a space, the rest as it was; valid text is copied. */
static void repairs_what_is_not_utf8(void **state)
{
    (void)state;
    size_t n;
    int repaired;
    char *t = text_repair("a\xff"
                          "b\0c\xc3",
                          6, &n, &repaired);
    assert_non_null(t);
    assert_int_equal(repaired, 1);
    assert_int_equal(n, 10);
    assert_memory_equal(t,
                        "a\xef\xbf\xbd"
                        "b c\xef\xbf\xbd",
                        11);
    free(t);
    t = text_repair("caf\xc3\xa9", 5, &n, &repaired);
    assert_non_null(t);
    assert_int_equal(repaired, 0);
    assert_int_equal(n, 5);
    assert_string_equal(t, "caf\xc3\xa9");
    free(t);
}

static void baked_tables_equal_the_lists(void **state)
{
    (void)state;
    const struct phrases_baked *parsed;
    size_t before = phrases_loaded(&parsed);
    if (!phrases_baked_n) { /* a build with KEEL_BAKE off: each table parsed at its first use */
        ask_load();
        syc_load();
        size_t n = phrases_loaded(&parsed), asking = 0, syc = 0;
        for (size_t i = 0; i < n; i++) {
            asking += !strcmp(parsed[i].path, "detectors/data/asking.txt") && parsed[i].table.n > 100;
            syc += !strcmp(parsed[i].path, "detectors/data/sycophancy.txt") && parsed[i].table.n > 100;
        }
        assert_true(asking >= 1 && syc == 2);
        return;
    }
    ask_load();
    syc_load();
    assert_int_equal(phrases_loaded(&parsed), before);
    assert_int_equal(phrases_baked_n, 4); /* asking.txt; sycophancy.txt's asking, intensifier and draft tables */
    for (size_t i = 0; i < phrases_baked_n; i++) {
        const struct phrases_baked *b = &phrases_baked[i];
        const struct phrases *t = &b->table;
        struct phrases p;
        assert_int_equal(phrases_load(&p, b->path, b->names, b->nnames, b->min_words), 0);
        assert_ptr_equal(p.v, t->v); /* loaded as the detectors load it: the baked table */
        assert_int_equal(phrases_loaded(&parsed), before);
        assert_int_equal(phrases_parse(&p, b->path, b->names, b->nnames, b->min_words), 0);
        assert_true(p.n > 50); /* none empty: the intensifiers are the fewest, some ninety */
        assert_int_equal(t->n, p.n);
        assert_int_equal(t->npool, p.npool);
        assert_int_equal(t->nwords, p.nwords);
        for (size_t k = 0; k < p.n; k++) {
            assert_int_equal(t->v[k].off, p.v[k].off);
            assert_int_equal(t->v[k].len, p.v[k].len);
            assert_int_equal(t->v[k].cls, p.v[k].cls);
        }
        assert_memory_equal(t->pool, p.pool, p.npool * sizeof *p.pool);
        assert_memory_equal(t->first, p.first, p.n * sizeof *p.first);
        assert_memory_equal(t->words, p.words, p.nwords * sizeof *p.words);
        assert_memory_equal(t->bits, p.bits, PHRASE_BITS / 8);
        assert_memory_equal(t->pairs, p.pairs, PHRASE_BITS / 8);
        assert_memory_equal(t->ones, p.ones, PHRASE_BITS / 8);
        /* a baked table owns nothing to free */
        for (size_t k = 0; k < sizeof t->mem / sizeof *t->mem; k++)
            assert_null(t->mem[k]);
        phrases_free(&p);
        assert_int_equal(p.n, 0);
        assert_false(phrase_bit_has(p.bits, 1)); /* an empty table reads no bit */
    }
    /* a table the build did not bake is parsed, and found the same way */
    static const char *const names[] = {"question"};
    struct phrases q;
    assert_int_equal(phrases_load(&q, "detectors/data/asking.txt", names, 1, NULL), 0);
    assert_int_equal(phrases_loaded(&parsed), before + 1);
    assert_string_equal(parsed[before].names[0], "question");
    assert_true(q.n > 0 && q.mem[0] != NULL);
    phrases_free(&q);
    assert_int_equal(phrases_loaded(&parsed), before); /* freed, it is no longer one of them */
    memset(&q, 0xA5, sizeof q); /* what a caller's stack may hold */
    assert_int_equal(phrases_load(&q, "detectors/data/none.txt", names, 1, NULL), -1);
    assert_int_equal(q.n, 0);
    assert_null(phrases_at(&q, &(uint64_t){1}, sizeof(uint64_t), 1, 0, 1));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ascii_path_equals_unicode_path),
        cmocka_unit_test(hashes_every_byte),
        cmocka_unit_test(hashes_in_pieces),
        cmocka_unit_test(finds_the_first_high_byte),
        cmocka_unit_test(splits_ascii_words_with_offsets),
        cmocka_unit_test(folds_unicode_forms),
        cmocka_unit_test(a_folded_word_hashes_as_its_unfolded_forms),
        cmocka_unit_test(tokenises_other_scripts),
        cmocka_unit_test(tells_the_language),
        cmocka_unit_test(tells_the_language_of_texts_together),
        cmocka_unit_test(the_script_with_most_letters),
        cmocka_unit_test(korean_particles_come_off),
        cmocka_unit_test(stems_only_in_a_language),
        cmocka_unit_test(content_words_and_what_two_share),
        cmocka_unit_test(validates_utf8),
        cmocka_unit_test(reads_data_lines),
        cmocka_unit_test(every_listed_word_is_a_stopword),
        cmocka_unit_test(yaml_flow_depth),
        cmocka_unit_test(finds_the_elision_a_word_opens_with),
        cmocka_unit_test(finds_the_longest_phrase),
        cmocka_unit_test(repairs_what_is_not_utf8),
        cmocka_unit_test(baked_tables_equal_the_lists),
    };
    cmocka_set_message_output(CM_OUTPUT_TAP);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
