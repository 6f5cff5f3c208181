/* bake.c: keel-bake OUT.c, run by the build.
 *
 * Reading the phrase lists and the concept groups (detectors/data) took
 * most of a short `keel hook`: every line's words normalised, case-folded,
 * hashed and stemmed, in every process. This reads them as the detectors
 * do and writes what they build out as C: each phrase table the detectors
 * load (phrases.h's struct phrases_baked) and the lexicon with every
 * language's groups (lexicon.h's lex_baked), so the binary holds them
 * ready. It is linked with baked-none.c, so what it loads is read from the
 * files; tests/unit/test_text.c and test_rumination.c prove what is baked
 * equals what is read at run time. Exit 0, or 1 with a line on stderr. */
#include "asking.h"
#include "detect.h"
#include "lexicon.h"
#include "phrases.h"
#include "stem.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void u64s(FILE *f, const char *name, const uint64_t *v, size_t n)
{
    fprintf(f, "static const uint64_t %s[] = {", name);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s%s0x%" PRIx64 "u", i ? "," : "", i % 6 ? " " : "\n    ", v[i]);
    fprintf(f, "\n};\n");
}

/* A table of the lexicon: its slots (empty ones are zero, and not
 * written). */
static void lex_table(FILE *f, const char *name, const struct lex_table *t)
{
    fprintf(f, "static const uint64_t %s_keys[%zu] = {", name, t->cap);
    for (size_t i = 0; i < t->cap; i++)
        if (t->k[i])
            fprintf(f, "\n    [%zu] = 0x%" PRIx64 "u,", i, t->k[i]);
    fprintf(f, "\n};\nstatic const uint32_t %s_values[%zu] = {", name, t->cap);
    for (size_t i = 0; i < t->cap; i++)
        if (t->v[i])
            fprintf(f, "\n    [%zu] = 0x%" PRIx32 "u,", i, t->v[i]);
    fprintf(f, "\n};\n");
}

/* The lexicon: its two tables, the phrase pairs' bits, the stems' prints. */
static void lexicon(FILE *f, const struct lex_state *l)
{
    lex_table(f, "en", &l->en);
    lex_table(f, "other", &l->other);
    fprintf(f, "static const uint64_t lex_pairs[2 * (1u << 16) / 64] = {");
    for (size_t i = 0; i < 2 * (1u << 16) / 64; i++)
        if (l->pair[i])
            fprintf(f, "\n    [%zu] = 0x%" PRIx64 "u,", i, l->pair[i]);
    fprintf(f, "\n};\nstatic const uint64_t lex_prints[%d] = {", STEM_NLANG);
    for (int i = 0; i < STEM_NLANG; i++)
        fprintf(f, "%s0x%" PRIx64 "u", i ? ", " : "", l->print[i]);
    fprintf(f,
            "};\nconst struct lex_state lex_baked = {{en_keys, en_values, %zu, %zu}, {other_keys, other_values, %zu, "
            "%zu}, lex_pairs, %uu, %uu, lex_prints};\n",
            l->en.n, l->en.cap, l->other.n, l->other.cap, l->groups, l->own);
}

/* The three filters, PHRASE_BITS bits each: only their words that hold a
 * bit are written. */
static void filters(FILE *f, const char *name, const struct phrases *t)
{
    const uint64_t *part[3] = {t->bits, t->pairs, t->ones};
    fprintf(f, "static const uint64_t %s[3 * PHRASE_BITS / 64] = {", name);
    for (size_t k = 0; k < 3; k++)
        for (size_t i = 0; i < PHRASE_BITS / 64; i++)
            if (part[k][i])
                fprintf(f, "\n    [%zu] = 0x%" PRIx64 "u,", k * (PHRASE_BITS / 64) + i, part[k][i]);
    fprintf(f, "\n};\n");
}

static void table(FILE *f, size_t i, const struct phrases_baked *b)
{
    const struct phrases *t = &b->table;
    char name[32];
    snprintf(name, sizeof name, "pool%zu", i);
    if (t->npool)
        u64s(f, name, t->pool, t->npool);
    if (t->n) {
        snprintf(name, sizeof name, "first%zu", i);
        u64s(f, name, t->first, t->n);
        fprintf(f, "static const struct phrase v%zu[] = {", i);
        for (size_t k = 0; k < t->n; k++)
            fprintf(f, "%s%s{%" PRIu32 ", %u, %u}", k ? "," : "", k % 4 ? " " : "\n    ", t->v[k].off, t->v[k].len,
                    t->v[k].cls);
        fprintf(f, "\n};\n");
    }
    snprintf(name, sizeof name, "words%zu", i);
    u64s(f, name, t->words, t->nwords);
    snprintf(name, sizeof name, "bits%zu", i);
    filters(f, name, t);
    fprintf(f, "static const char *const names%zu[] = {", i);
    for (int k = 0; k < b->nnames; k++)
        fprintf(f, b->names[k] ? "%s\"%s\"" : "%sNULL", k ? ", " : "", b->names[k]);
    fprintf(f, "};\n");
    if (b->min_words) {
        fprintf(f, "static const unsigned char fewest%zu[] = {", i);
        for (int k = 0; k < b->nnames; k++)
            fprintf(f, "%s%u", k ? ", " : "", b->min_words[k]);
        fprintf(f, "};\n");
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: keel-bake OUT.c\n");
        return 1;
    }
    if (!stem_ready()) {
        fprintf(stderr,
                "keel-bake: libstemmer.so.0d cannot be loaded (Debian: libstemmer0d; scripts/bootstrap "
                "installs it)\n");
        return 1;
    }
    ask_load();
    syc_load();
    struct lex_state lex;
    if (lex_read_all(&lex) < 0 || !lex.en.n || !lex.other.n || !lex.own) {
        fprintf(stderr, "keel-bake: the concept groups could not be read whole\n");
        return 1;
    }
    const struct phrases_baked *v;
    size_t n = phrases_loaded(&v);
    if (n < 3) { /* asking.txt's, and sycophancy.txt's two */
        fprintf(stderr, "keel-bake: %zu of the 3 phrase tables could be read\n", n);
        return 1;
    }
    for (size_t i = 0; i < n; i++)
        if (!v[i].table.n) {
            fprintf(stderr, "keel-bake: %s: no phrase loaded\n", v[i].path);
            return 1;
        }
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]) >= (int)sizeof tmp) {
        fprintf(stderr, "keel-bake: the output path is too long\n");
        return 1;
    }
    FILE *f = fopen(tmp, "w");
    if (!f) {
        perror("keel-bake");
        return 1;
    }
    fprintf(f,
            "/* Written by keel-bake (detectors/bake.c) at build time: the phrase\n"
            " * tables and the lexicon of detectors/data, as the detectors read them. */\n"
            "#include \"phrases.h\"\n#include \"lexicon.h\"\n\n#include <stddef.h>\n\n");
    for (size_t i = 0; i < n; i++)
        table(f, i, &v[i]);
    fprintf(f, "\nconst struct phrases_baked phrases_baked[] = {\n");
    for (size_t i = 0; i < n; i++) {
        const struct phrases *t = &v[i].table;
        fprintf(f, "    {\"%s\", %d, names%zu, ", v[i].path, v[i].nnames, i);
        if (v[i].min_words)
            fprintf(f, "fewest%zu,", i);
        else
            fprintf(f, "NULL,");
        fprintf(f,
                "\n     {v%zu, %zu, pool%zu, %zu, first%zu, bits%zu, bits%zu + PHRASE_BITS / 64, bits%zu + 2 * "
                "PHRASE_BITS / 64, words%zu, %zu, {0}}},\n",
                i, t->n, i, t->npool, i, i, i, i, i, t->nwords);
    }
    fprintf(f, "};\nconst size_t phrases_baked_n = %zu;\n\n", n);
    lexicon(f, &lex);
    if (ferror(f) | fclose(f) || rename(tmp, argv[1])) {
        perror("keel-bake");
        remove(tmp);
        return 1;
    }
    return 0;
}
