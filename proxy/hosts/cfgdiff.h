/* cfgdiff.h: the diff keel install and uninstall print, with secrets masked.
 *
 * keel knows exactly what it changed (a list of splices), so the diff is
 * worked out from them rather than by diffing two whole files: each splice's
 * lines before and after, a little context, hunks merged when they touch.
 * Strings that may be secrets (env and header values, tokens: cfgjson.h)
 * print as "***"; a line longer than a screen prints as the part around the
 * change, so a configuration written on one line is not shown whole. */
#ifndef KEEL_CFGDIFF_H
#define KEEL_CFGDIFF_H

#include "cfgjson.h"

#include <stdio.h>

struct cfg_edit {
    size_t at, del; /* in the old text: del bytes at `at` replaced */
    const char *text; /* by these */
    size_t len;
};

/* Prints the unified diff of old a -> new b made by ed (sorted by at, not
 * overlapping), labelled with path; sa / sb the secret spans of each side. */
void cfgdiff_print(FILE *out, const char *path, const char *a, size_t an, const struct cfg_span *sa, int nsa,
                   const char *b, size_t bn, const struct cfg_span *sb, int nsb, const struct cfg_edit *ed, int ned);

/* b: a with the edits made (sorted, not overlapping), NUL-terminated; NULL
 * when memory ran out. */
char *cfgdiff_apply(const char *a, size_t an, const struct cfg_edit *ed, int ned, size_t *bn);

#endif
