/* tomllex.c: the tokens of TOML 1.0 (see tomlint.h): the first error and
 * where it was seen, the cursor, comments and line ends, the four kinds of
 * string with their escapes, keys bare, quoted and dotted, and the grammar
 * of numbers, dates and times. */
#include "tomlint.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistr.h>

/* --- errors -------------------------------------------------------------------- */

__attribute__((format(printf, 3, 4))) int tl_fail(struct parser *p, size_t at, const char *fmt, ...)
{
    if (!p->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->err, sizeof p->err, fmt, ap);
        va_end(ap);
        p->err_at = at;
        p->failed = 1;
    }
    return -1;
}

/* --- the cursor ---------------------------------------------------------------- */

int tl_at_end(const struct parser *p)
{
    return p->pos >= p->n;
}

int tl_peek(const struct parser *p, size_t ahead)
{
    return p->pos + ahead < p->n ? (unsigned char)p->s[p->pos + ahead] : -1;
}

void tl_skip_ws(struct parser *p)
{
    while (!tl_at_end(p) && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t'))
        p->pos++;
}

/* A control character TOML forbids in comments and strings (tab allowed). */
static int bad_control(int c)
{
    return (c >= 0 && c < 0x20 && c != '\t') || c == 0x7f;
}

static int skip_comment(struct parser *p)
{
    if (tl_peek(p, 0) != '#')
        return 0;
    for (p->pos++; !tl_at_end(p) && p->s[p->pos] != '\n'; p->pos++) {
        int c = (unsigned char)p->s[p->pos];
        if (c == '\r' && tl_peek(p, 1) == '\n')
            continue;
        if (bad_control(c))
            return tl_fail(p, p->pos, "a control character (0x%02x) in a comment", c);
    }
    return 0;
}

/* A newline (LF or CR LF) at the cursor: 1 and past it, or 0. */
int tl_newline(struct parser *p)
{
    if (tl_peek(p, 0) == '\n') {
        p->pos++;
        return 1;
    }
    if (tl_peek(p, 0) == '\r' && tl_peek(p, 1) == '\n') {
        p->pos += 2;
        return 1;
    }
    return 0;
}

/* The end of a statement: blanks, a comment, then a newline or the end. */
int tl_end_of_line(struct parser *p)
{
    tl_skip_ws(p);
    if (skip_comment(p) < 0)
        return -1;
    if (tl_at_end(p) || tl_newline(p))
        return 0;
    if (tl_peek(p, 0) == '\r')
        return tl_fail(p, p->pos, "a carriage return not followed by a line feed");
    return tl_fail(p, p->pos, "more on the line after a complete statement (one key = value or [table] a line)");
}

/* Blanks, comments and newlines, as inside an array. */
int tl_skip_ws_nl(struct parser *p)
{
    for (;;) {
        tl_skip_ws(p);
        if (skip_comment(p) < 0)
            return -1;
        if (!tl_newline(p)) {
            if (tl_peek(p, 0) == '\r')
                return tl_fail(p, p->pos, "a carriage return not followed by a line feed");
            return 0;
        }
    }
}

/* --- strings ------------------------------------------------------------------- */

int tl_buf_add(struct parser *p, struct buf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 32;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *q = realloc(b->p, cap);
        if (!q)
            return tl_fail(p, p->pos, "out of memory");
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
    return 0;
}

static int hexval(int c)
{
    return c >= '0' && c <= '9' ? c - '0'
        : c >= 'a' && c <= 'f'  ? c - 'a' + 10
        : c >= 'A' && c <= 'F'  ? c - 'A' + 10
                                : -1;
}

static int escape(struct parser *p, struct buf *b)
{
    size_t at = p->pos;
    int c = tl_peek(p, 1);
    static const char from[] = "btnfr\"\\", to[] = "\b\t\n\f\r\"\\";
    const char *e = c > 0 ? strchr(from, c) : NULL;
    if (e && c) {
        p->pos += 2;
        return tl_buf_add(p, b, &to[e - from], 1);
    }
    if (c != 'u' && c != 'U')
        return tl_fail(p, at,
                       "an unknown escape sequence (\\b \\t \\n \\f \\r \\\" \\\\ \\uXXXX \\UXXXXXXXX are TOML's)");
    int len = c == 'u' ? 4 : 8;
    uint32_t cp = 0;
    for (int i = 0; i < len; i++) {
        int h = hexval(tl_peek(p, 2 + (size_t)i));
        if (h < 0)
            return tl_fail(p, at, "\\%c takes exactly %d hexadecimal digits", c, len);
        cp = cp * 16 + (uint32_t)h;
    }
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return tl_fail(p, at, "\\%c names no Unicode scalar value", c);
    if (cp == 0)
        return tl_fail(p, at, "a string holds U+0000, which keel does not edit");
    uint8_t out[4];
    int w = u8_uctomb(out, cp, 4);
    p->pos += 2 + (size_t)len;
    return w > 0 ? tl_buf_add(p, b, (const char *)out, (size_t)w) : tl_fail(p, at, "\\%c: not encodable", c);
}

/* A string of any of the four kinds at the cursor, decoded into b. */
int tl_string(struct parser *p, struct buf *b, int allow_multi)
{
    size_t at = p->pos;
    char q = p->s[p->pos];
    int multi = tl_peek(p, 1) == q && tl_peek(p, 2) == q;
    if (multi && !allow_multi)
        return tl_fail(p, at, "a key cannot be a multi-line string");
    p->pos += multi ? 3 : 1;
    if (multi)
        tl_newline(p); /* a newline right after the opening quotes is not content */
    for (;;) {
        if (tl_at_end(p))
            return tl_fail(p, at, "a string that never ends");
        int c = (unsigned char)p->s[p->pos];
        if (c == q) {
            if (!multi) {
                p->pos++;
                return 0;
            }
            size_t run = 0;
            while (tl_peek(p, run) == q)
                run++;
            if (run >= 3) {
                if (run > 5)
                    return tl_fail(p, p->pos, "too many quotes at the end of a multi-line string");
                if (tl_buf_add(p, b, p->s + p->pos, run - 3) < 0)
                    return -1;
                p->pos += run;
                return 0;
            }
            if (tl_buf_add(p, b, p->s + p->pos, run) < 0)
                return -1;
            p->pos += run;
            continue;
        }
        if (c == '\\' && q == '"') {
            if (multi) { /* a line-ending backslash: the line break and blanks after it go */
                size_t k = 1;
                while (tl_peek(p, k) == ' ' || tl_peek(p, k) == '\t')
                    k++;
                if (tl_peek(p, k) == '\n' || (tl_peek(p, k) == '\r' && tl_peek(p, k + 1) == '\n')) {
                    p->pos += k;
                    for (;;) {
                        tl_skip_ws(p);
                        if (!tl_newline(p))
                            break;
                    }
                    continue;
                }
            }
            if (escape(p, b) < 0)
                return -1;
            continue;
        }
        if (c == '\n' || (c == '\r' && tl_peek(p, 1) == '\n')) {
            if (!multi)
                return tl_fail(p, p->pos, "a line break inside a single-line string");
            size_t k = c == '\n' ? 1 : 2;
            if (tl_buf_add(p, b, p->s + p->pos, k) < 0)
                return -1;
            p->pos += k;
            continue;
        }
        if (bad_control(c))
            return tl_fail(p, p->pos, "a control character (0x%02x) in a string", c);
        if (tl_buf_add(p, b, p->s + p->pos, 1) < 0)
            return -1;
        p->pos++;
    }
}

/* --- keys ---------------------------------------------------------------------- */

void tl_key_free(struct key *k)
{
    for (int i = 0; i < k->n; i++)
        free(k->part[i]);
    k->n = 0;
}

int tl_bare_char(int c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

static int key_parts(struct parser *p, struct key *k)
{
    k->n = 0;
    for (;;) {
        tl_skip_ws(p);
        if (k->n == KEY_PARTS_MAX)
            return tl_fail(p, p->pos, "a key of more than %d parts", KEY_PARTS_MAX);
        struct buf b = {0};
        size_t at = p->pos;
        int c = tl_peek(p, 0);
        if (c == '"' || c == '\'') {
            if (tl_string(p, &b, 0) < 0) {
                free(b.p);
                return -1;
            }
            if (!b.p && tl_buf_add(p, &b, "", 0) < 0) {
                free(b.p);
                return -1;
            }
        } else {
            while (tl_bare_char(tl_peek(p, 0)))
                p->pos++;
            if (p->pos == at) {
                free(b.p);
                return tl_fail(p, at, "a key was expected here (letters, digits, _ and -, or a quoted string)");
            }
            if (tl_buf_add(p, &b, p->s + at, p->pos - at) < 0) {
                free(b.p);
                return -1;
            }
        }
        k->part[k->n] = b.p;
        k->len[k->n] = b.n;
        k->at[k->n] = at;
        k->n++;
        k->end = p->pos;
        tl_skip_ws(p);
        if (tl_peek(p, 0) != '.')
            return 0;
        p->pos++;
    }
}

/* A key; on failure nothing of it is left allocated. */
int tl_key(struct parser *p, struct key *k)
{
    if (key_parts(p, k) == 0)
        return 0;
    tl_key_free(k);
    return -1;
}

char *tl_key_text(const struct key *k, int upto)
{
    size_t n = 0;
    for (int i = 0; i < upto; i++)
        n += k->len[i] + 1;
    char *s = malloc(n + 1), *w = s;
    if (!s)
        return NULL;
    for (int i = 0; i < upto; i++) {
        if (i)
            *w++ = '.';
        memcpy(w, k->part[i], k->len[i]);
        w += k->len[i];
    }
    *w = '\0';
    return s;
}

/* --- numbers and dates ---------------------------------------------------------- */

static int digits(const char *s, size_t n, int (*ok)(int))
{
    /* digit (_? digit)*: underscores only between digits */
    if (!n || !ok((unsigned char)s[0]) || !ok((unsigned char)s[n - 1]))
        return 0;
    for (size_t i = 1; i < n; i++)
        if (s[i] == '_' ? s[i - 1] == '_' : !ok((unsigned char)s[i]))
            return 0;
    return 1;
}

int tl_is_dec(int c)
{
    return c >= '0' && c <= '9';
}
static int is_hex(int c)
{
    return hexval(c) >= 0;
}
static int is_oct(int c)
{
    return c >= '0' && c <= '7';
}
static int is_bin(int c)
{
    return c == '0' || c == '1';
}

static int two(const char *s, int *v)
{
    if (!tl_is_dec((unsigned char)s[0]) || !tl_is_dec((unsigned char)s[1]))
        return 0;
    *v = (s[0] - '0') * 10 + (s[1] - '0');
    return 1;
}

/* HH:MM:SS(.frac)? at s: its length, or 0. */
static size_t time_part(const char *s, size_t n)
{
    int h, m, sec;
    if (n < 8 || !two(s, &h) || s[2] != ':' || !two(s + 3, &m) || s[5] != ':' || !two(s + 6, &sec) || h > 23 ||
        m > 59 || sec > 59)
        return 0;
    size_t i = 8;
    if (i < n && s[i] == '.') {
        size_t d = ++i;
        while (i < n && tl_is_dec((unsigned char)s[i]))
            i++;
        if (i == d)
            return 0;
    }
    return i;
}

size_t tl_date_part(const char *s, size_t n)
{
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int y1, y2, mo, d;
    if (n < 10 || !two(s, &y1) || !two(s + 2, &y2) || s[4] != '-' || !two(s + 5, &mo) || s[7] != '-' ||
        !two(s + 8, &d) || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1])
        return 0;
    int y = y1 * 100 + y2;
    if (mo == 2 && d == 29 && !(y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)))
        return 0;
    return 10;
}

/* The scalar token s[0..n) as a date or time: its type, or -1. */
static int datetime(const char *s, size_t n)
{
    if (time_part(s, n) == n)
        return TOML_TIME_LOCAL;
    size_t d = tl_date_part(s, n);
    if (!d)
        return -1;
    if (d == n)
        return TOML_DATE_LOCAL;
    if (s[d] != 'T' && s[d] != 't' && s[d] != ' ')
        return -1;
    size_t t = time_part(s + d + 1, n - d - 1);
    if (!t)
        return -1;
    size_t i = d + 1 + t;
    if (i == n)
        return TOML_DATETIME_LOCAL;
    if ((s[i] == 'Z' || s[i] == 'z') && i + 1 == n)
        return TOML_DATETIME;
    int oh, om;
    if ((s[i] == '+' || s[i] == '-') && n - i == 6 && two(s + i + 1, &oh) && s[i + 3] == ':' && two(s + i + 4, &om) &&
        oh <= 23 && om <= 59)
        return TOML_DATETIME;
    return -1;
}

static int set_text(struct parser *p, struct toml_node *x, const char *s, size_t n)
{
    x->text = malloc(n + 1);
    if (!x->text)
        return tl_fail(p, p->pos, "out of memory");
    memcpy(x->text, s, n);
    x->text[n] = '\0';
    x->text_n = n;
    return 0;
}

/* A number, boolean, date or time token s[0..n) (starting at offset at). */
int tl_scalar(struct parser *p, struct toml_node *x, const char *s, size_t n, size_t at)
{
    if ((n == 4 && !memcmp(s, "true", 4)) || (n == 5 && !memcmp(s, "false", 5))) {
        x->type = TOML_BOOL;
        return set_text(p, x, s, n);
    }
    int dt = datetime(s, n);
    if (dt >= 0) {
        x->type = dt;
        if (set_text(p, x, s, n) < 0)
            return -1;
        if (n > 10 && (x->text[10] == 't' || x->text[10] == ' '))
            x->text[10] = 'T';
        if (x->text[n - 1] == 'z')
            x->text[n - 1] = 'Z';
        return 0;
    }
    const char *b = s;
    size_t bn = n;
    int sign = 0;
    if (bn && (b[0] == '+' || b[0] == '-')) {
        sign = b[0];
        b++, bn--;
    }
    if (bn == 3 && (!memcmp(b, "inf", 3) || !memcmp(b, "nan", 3))) {
        x->type = TOML_FLOAT;
        char t[8];
        snprintf(t, sizeof t, "%s%.3s", sign == '-' && b[0] == 'i' ? "-" : "", b);
        return set_text(p, x, t, strlen(t));
    }
    char clean[128];
    size_t cn = 0;
    if (n >= sizeof clean)
        return tl_fail(p, at, "a number of more than %zu characters", sizeof clean - 1);
    for (size_t i = 0; i < n; i++)
        if (s[i] != '_')
            clean[cn++] = s[i];
    clean[cn] = '\0';
    if (bn > 2 && b[0] == '0' && (b[1] == 'x' || b[1] == 'o' || b[1] == 'b')) {
        int (*ok)(int) = b[1] == 'x' ? is_hex : b[1] == 'o' ? is_oct : is_bin;
        if (sign || !digits(b + 2, bn - 2, ok))
            return tl_fail(p, at, "not a valid %s integer",
                           b[1] == 'x'       ? "hexadecimal"
                               : b[1] == 'o' ? "octal"
                                             : "binary");
        errno = 0;
        char *end;
        unsigned long long v = strtoull(clean + 2, &end, b[1] == 'x' ? 16 : b[1] == 'o' ? 8 : 2);
        if (errno || *end || v > INT64_MAX)
            return tl_fail(p, at, "an integer out of the 64-bit range");
        x->type = TOML_INTEGER;
        char t[32];
        snprintf(t, sizeof t, "%llu", v);
        return set_text(p, x, t, strlen(t));
    }
    /* Decimal: an integer part without leading zeros, then an optional
     * fraction and exponent. */
    size_t ip = 0;
    while (ip < bn && (tl_is_dec((unsigned char)b[ip]) || b[ip] == '_'))
        ip++;
    if (!digits(b, ip, tl_is_dec) || (ip > 1 && b[0] == '0'))
        return tl_fail(p, at,
                       "not a valid value (a number, true, false, a date, a string, an array or an inline table)");
    size_t i = ip;
    int is_float = 0;
    if (i < bn && b[i] == '.') {
        size_t f = ++i;
        while (i < bn && (tl_is_dec((unsigned char)b[i]) || b[i] == '_'))
            i++;
        if (!digits(b + f, i - f, tl_is_dec))
            return tl_fail(p, at, "a fraction needs digits on both sides of the point");
        is_float = 1;
    }
    if (i < bn && (b[i] == 'e' || b[i] == 'E')) {
        i++;
        if (i < bn && (b[i] == '+' || b[i] == '-'))
            i++;
        size_t e = i;
        while (i < bn && (tl_is_dec((unsigned char)b[i]) || b[i] == '_'))
            i++;
        if (!digits(b + e, i - e, tl_is_dec))
            return tl_fail(p, at, "an exponent needs digits");
        is_float = 1;
    }
    if (i != bn)
        return tl_fail(p, at,
                       "not a valid value (a number, true, false, a date, a string, an array or an inline table)");
    errno = 0;
    char *end;
    char t[40];
    if (is_float) {
        double v = strtod(clean, &end);
        if (*end)
            return tl_fail(p, at, "not a valid float");
        snprintf(t, sizeof t, "%.17g", v);
        x->type = TOML_FLOAT;
    } else {
        long long v = strtoll(clean, &end, 10);
        if (errno || *end)
            return tl_fail(p, at, "an integer out of the 64-bit range");
        snprintf(t, sizeof t, "%lld", v);
        x->type = TOML_INTEGER;
    }
    return set_text(p, x, t, strlen(t));
}
