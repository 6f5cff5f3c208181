/* stem.h: word forms by Snowball (libstemmer), in the language a text's
 * function words say.
 *
 * A text's language is guessed from its script (Cyrillic: Russian, Greek,
 * Arabic, Devanagari: Hindi, Hangul: Korean) or, in Latin script, from which language's most
 * common function words it holds most of among its first STEM_LANG_WORDS
 * words ("the", "is"; "der", "ist"; "le", "est"; "bir", "için"; ...); English when none
 * says otherwise. Words are then stemmed with that language's Snowball
 * stemmer: "rewriting" and "rewrite" are "rewrit", "mudança" and "mudanças"
 * are "mudanc". Korean, which Snowball lacks, has the particles written onto
 * a noun taken off ("요청이", "요청을" and "요청" are "요청"). Text in Chinese or
 * Japanese is left as it is. libstemmer is loaded on first use (a relaying keel does not carry
 * it), the stemmers are made once per process, and the stems of short
 * words are kept in a 64 KiB table, so a word seen again costs a lookup;
 * neither is thread-safe: keel's detectors run on one thread. */
#ifndef KEEL_STEM_H
#define KEEL_STEM_H

#include <stddef.h>

#define STEM_LANG_WORDS 64

enum stem_lang {
    STEM_NONE = 0, /* leave words as they are */
    STEM_EN,
    STEM_DE,
    STEM_FR,
    STEM_ES,
    STEM_IT,
    STEM_PT,
    STEM_NL,
    STEM_SV,
    STEM_RU,
    STEM_EL,
    STEM_AR,
    STEM_HI,
    STEM_TR,
    STEM_KO, /* no Snowball stemmer: particles are taken off (stem.c) */
    STEM_NLANG
};

/* The language of s[0..n) (valid UTF-8). */
enum stem_lang stem_lang_of(const char *s, size_t n);

/* The language of k texts read as one, in the order given (the first
 * STEM_LANG_WORDS words of them all): a short text ("Rassure-moi stp",
 * "sûr ?") says little alone, the texts around it more. t[i][0..n[i]) is
 * valid UTF-8. */
enum stem_lang stem_lang_of_texts(const char *const *t, const size_t *n, size_t k);

/* The stem of the lower-case word w[0..n) (UTF-8) in language lang: a
 * pointer to *len bytes, valid until the next call; w itself when lang is
 * STEM_NONE or its stemmer cannot be had. */
const char *stem_word(enum stem_lang lang, const char *w, size_t n, size_t *len);
/* 1 when libstemmer can be loaded (keel-bake needs it: the groups it bakes
 * are stemmed), else 0. */
int stem_ready(void);

#endif
