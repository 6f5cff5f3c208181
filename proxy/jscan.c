/* jscan.c: top-level member lookup (see jscan.h). */
#include "jscan.h"

#include <string.h>

static size_t ws(const char *s, size_t n, size_t i)
{
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n'))
        i++;
    return i;
}

/* End of the string starting at s[i] == '"' (index after the closing quote), or 0. */
static size_t str_end(const char *s, size_t n, size_t i)
{
    for (i++; i < n; i++) {
        if (s[i] == '\\')
            i++;
        else if (s[i] == '"')
            return i + 1;
    }
    return 0;
}

/* End of the value starting at s[i], or 0 if it does not end within n. */
static size_t value_end(const char *s, size_t n, size_t i)
{
    if (i >= n)
        return 0;
    if (s[i] == '"')
        return str_end(s, n, i);
    if (s[i] == '{' || s[i] == '[') {
        size_t depth = 0;
        for (; i < n; i++) {
            char c = s[i];
            if (c == '"') {
                size_t e = str_end(s, n, i);
                if (!e)
                    return 0;
                i = e - 1;
            } else if (c == '{' || c == '[') {
                depth++;
            } else if (c == '}' || c == ']') {
                if (--depth == 0)
                    return i + 1;
            }
        }
        return 0;
    }
    size_t st = i;   /* number or literal */
    while (i < n && !strchr(",}] \t\r\n", s[i]))
        i++;
    return i < n && i > st ? i : 0;
}

int jscan_member(const char *s, size_t n, const char *key, const char **v, size_t *vn)
{
    size_t klen = strlen(key);
    size_t i = ws(s, n, 0);
    if (i >= n || s[i] != '{')
        return -1;
    i = ws(s, n, i + 1);
    while (i < n && s[i] == '"') {
        size_t ke = str_end(s, n, i);
        if (!ke)
            return 0;
        int match = ke - i - 2 == klen && memcmp(s + i + 1, key, klen) == 0;
        i = ws(s, n, ke);
        if (i >= n || s[i] != ':')
            return 0;
        i = ws(s, n, i + 1);
        size_t ve = value_end(s, n, i);
        if (!ve)
            return 0;
        if (match) {
            *v = s + i;
            *vn = ve - i;
            return 1;
        }
        i = ws(s, n, ve);
        if (i >= n || s[i] != ',')
            return 0;
        i = ws(s, n, i + 1);
    }
    return 0;
}

int jscan_has_nul_escape(const char *s, size_t n)
{
    int in = 0;
    for (size_t i = 0; i < n; i++) {
        if (!in) {
            in = s[i] == '"';
        } else if (s[i] == '\\') {
            if (i + 5 < n && s[i + 1] == 'u' && !memcmp(s + i + 2, "0000", 4))
                return 1;
            i++;
        } else if (s[i] == '"') {
            in = 0;
        }
    }
    return 0;
}
