/* kerr.h: errors are values.
 *
 * A function that can fail returns 0 on success or -1 and fills a kerr with a
 * stable code (an UPPER_SNAKE string the wire contract names, such as
 * INPUT_TOO_LARGE), a sentence for a person, and, when one argument is to
 * blame, its path ("history[3].at"). Messages never quote user content: they
 * name the field and the bound, not the value. */
#ifndef KEEL_KERR_H
#define KEEL_KERR_H

#include <stdarg.h>
#include <stdio.h>

typedef struct kerr {
    const char *code; /* static string; NULL when no error */
    char message[240];
    char field[96]; /* empty when not about one argument */
} kerr;

#if defined(__GNUC__)
#define KERR_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define KERR_PRINTF(a, b)
#endif

/* Fill e (if not NULL) and return -1, so callers can `return kerr_set(...)`. */
int kerr_set(kerr *e, const char *code, const char *field, const char *fmt, ...) KERR_PRINTF(4, 5);

#endif
