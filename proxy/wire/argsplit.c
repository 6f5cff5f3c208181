/* argsplit.c: see argsplit.h. Two passes over the string: count, then copy. */
#include "argsplit.h"

#include <stdlib.h>
#include <string.h>

/* Splits s; writes words into out (NUL-separated) when out is not NULL.
 * Returns the number of words, or -1 on an unterminated quote. */
static long split(const char *s, char *out, size_t *bytes)
{
    long words = 0;
    size_t o = 0;
    const char *p = s;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n')
            p++;
        if (!*p)
            break;
        words++;
        while (*p && *p != ' ' && *p != '\t' && *p != '\n') {
            if (*p == '\'') {
                const char *e = strchr(p + 1, '\'');
                if (!e)
                    return -1;
                if (out)
                    memcpy(out + o, p + 1, (size_t)(e - p - 1));
                o += (size_t)(e - p - 1);
                p = e + 1;
            } else if (*p == '"') {
                for (p++; *p != '"'; p++) {
                    if (!*p)
                        return -1;
                    if (*p == '\\' && p[1] && strchr("\"\\$`", p[1]))
                        p++;
                    if (out)
                        out[o] = *p;
                    o++;
                }
                p++;
            } else {
                if (*p == '\\' && p[1])
                    p++;
                if (out)
                    out[o] = *p;
                o++;
                p++;
            }
        }
        if (out)
            out[o] = '\0';
        o++;
    }
    *bytes = o;
    return words;
}

char **argsplit(const char *s, const char **err)
{
    size_t bytes;
    long n = split(s, NULL, &bytes);
    if (n < 0) {
        *err = "unterminated quote";
        return NULL;
    }
    if (n == 0) {
        *err = "empty command";
        return NULL;
    }
    char **argv = malloc(sizeof(char *) * (size_t)(n + 1) + bytes);
    if (!argv) {
        *err = "out of memory";
        return NULL;
    }
    char *text = (char *)(argv + n + 1);
    split(s, text, &bytes);
    for (long i = 0; i < n; i++) {
        argv[i] = text;
        text += strlen(text) + 1;
    }
    argv[n] = NULL;
    return argv;
}
