/* toml.c: a strict TOML 1.0 reader (see toml.h).
 *
 * One pass over the bytes with a cursor; statements are line by line, values
 * recursive (bounded by TOML_MAX_DEPTH). Members are found through one hash
 * table for the whole document, keyed by (table, name), so a table of a
 * hundred thousand keys costs no more per key than one of ten. Errors carry
 * the offset where they were seen; line and column are worked out once, at
 * the end. */
#include "toml.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistr.h>

struct slot {
    const struct toml_node *table;
    struct toml_node *node;
};

struct parser {
    const char *s;
    size_t n, pos;
    struct toml_node *root;
    struct slot *map;               /* open addressing; size a power of two */
    size_t map_cap, map_used;
    int depth;                      /* values open inside each other */
    int base;                       /* parts of the current [table]'s name */
    size_t err_at;
    char err[200];
    int failed;
};

/* --- errors and positions ------------------------------------------------------ */

__attribute__((format(printf, 3, 4))) static int fail(struct parser *p, size_t at, const char *fmt, ...)
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

int toml_line_of(const char *s, size_t n, size_t at)
{
    int line = 1;
    for (size_t i = 0; i < at && i < n; i++)
        line += s[i] == '\n';
    return line;
}

static void where(const char *s, size_t n, size_t at, int *line, int *col)
{
    size_t start = 0;
    *line = 1;
    for (size_t i = 0; i < at && i < n; i++)
        if (s[i] == '\n') {
            (*line)++;
            start = i + 1;
        }
    *col = 1;
    for (size_t i = start; i < at && i < n; i++)
        *col += ((unsigned char)s[i] & 0xC0) != 0x80;
}

/* --- nodes and the member map --------------------------------------------------- */

static uint64_t key_hash(const struct toml_node *t, const char *k, size_t n)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)(uintptr_t)t;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)k[i]) * 1099511628211ull;
    return h ^ (h >> 29);
}

static struct toml_node *map_find(const struct parser *p, const struct toml_node *t, const char *k, size_t n)
{
    if (!p->map_cap)
        return NULL;
    size_t mask = p->map_cap - 1;
    for (size_t i = key_hash(t, k, n) & mask;; i = (i + 1) & mask) {
        const struct slot *sl = &p->map[i];
        if (!sl->node)
            return NULL;
        if (sl->table == t && sl->node->key_n == n && !memcmp(sl->node->key, k, n))
            return sl->node;
    }
}

static int map_put(struct parser *p, const struct toml_node *t, struct toml_node *node)
{
    if ((p->map_used + 1) * 2 > p->map_cap) {
        size_t cap = p->map_cap ? p->map_cap * 2 : 64;
        struct slot *m = calloc(cap, sizeof *m);
        if (!m)
            return -1;
        for (size_t i = 0; i < p->map_cap; i++) {
            if (!p->map[i].node)
                continue;
            size_t j = key_hash(p->map[i].table, p->map[i].node->key, p->map[i].node->key_n) & (cap - 1);
            while (m[j].node)
                j = (j + 1) & (cap - 1);
            m[j] = p->map[i];
        }
        free(p->map);
        p->map = m;
        p->map_cap = cap;
    }
    size_t mask = p->map_cap - 1, i = key_hash(t, node->key, node->key_n) & mask;
    while (p->map[i].node)
        i = (i + 1) & mask;
    p->map[i] = (struct slot){t, node};
    p->map_used++;
    return 0;
}

static struct toml_node *node_new(struct parser *p, enum toml_type type)
{
    struct toml_node *x = calloc(1, sizeof *x);
    if (!x)
        fail(p, p->pos, "out of memory");
    else
        x->type = type;
    return x;
}

static void append(struct toml_node *parent, struct toml_node *kid)
{
    kid->parent = parent;
    if (parent->last)
        parent->last->next = kid;
    else
        parent->first = kid;
    parent->last = kid;
    parent->nkids++;
}

/* Adds kid to table t under the name k (which it takes). */
static int add_member(struct parser *p, struct toml_node *t, struct toml_node *kid, char *k, size_t kn)
{
    kid->key = k;
    kid->key_n = kn;
    if (map_put(p, t, kid) < 0) {
        kid->key = NULL;
        free(k);
        return fail(p, p->pos, "out of memory");
    }
    append(t, kid);
    return 0;
}

void toml_free(struct toml_node *x)
{
    /* Iterative, so depth costs no stack: each node's children are spliced
     * into the list being freed. */
    while (x) {
        if (x->first) {
            x->last->next = x->next;
            x->next = x->first;
            x->first = NULL;
        }
        struct toml_node *next = x->next;
        free(x->key);
        free(x->text);
        free(x);
        x = next;
    }
}

struct toml_node *toml_get(const struct toml_node *t, const char *key)
{
    if (!t || t->type != TOML_TABLE)
        return NULL;
    size_t n = strlen(key);
    for (struct toml_node *k = t->first; k; k = k->next)
        if (k->key_n == n && !memcmp(k->key, key, n))
            return k;
    return NULL;
}

/* --- the cursor ---------------------------------------------------------------- */

static int at_end(const struct parser *p)
{
    return p->pos >= p->n;
}

static int peek(const struct parser *p, size_t ahead)
{
    return p->pos + ahead < p->n ? (unsigned char)p->s[p->pos + ahead] : -1;
}

static void skip_ws(struct parser *p)
{
    while (!at_end(p) && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t'))
        p->pos++;
}

/* A control character TOML forbids in comments and strings (tab allowed). */
static int bad_control(int c)
{
    return (c >= 0 && c < 0x20 && c != '\t') || c == 0x7f;
}

static int skip_comment(struct parser *p)
{
    if (peek(p, 0) != '#')
        return 0;
    for (p->pos++; !at_end(p) && p->s[p->pos] != '\n'; p->pos++) {
        int c = (unsigned char)p->s[p->pos];
        if (c == '\r' && peek(p, 1) == '\n')
            continue;
        if (bad_control(c))
            return fail(p, p->pos, "a control character (0x%02x) in a comment", c);
    }
    return 0;
}

/* A newline (LF or CR LF) at the cursor: 1 and past it, or 0. */
static int newline(struct parser *p)
{
    if (peek(p, 0) == '\n') {
        p->pos++;
        return 1;
    }
    if (peek(p, 0) == '\r' && peek(p, 1) == '\n') {
        p->pos += 2;
        return 1;
    }
    return 0;
}

/* The end of a statement: blanks, a comment, then a newline or the end. */
static int end_of_line(struct parser *p)
{
    skip_ws(p);
    if (skip_comment(p) < 0)
        return -1;
    if (at_end(p) || newline(p))
        return 0;
    if (peek(p, 0) == '\r')
        return fail(p, p->pos, "a carriage return not followed by a line feed");
    return fail(p, p->pos, "more on the line after a complete statement (one key = value or [table] a line)");
}

/* Blanks, comments and newlines, as inside an array. */
static int skip_ws_nl(struct parser *p)
{
    for (;;) {
        skip_ws(p);
        if (skip_comment(p) < 0)
            return -1;
        if (!newline(p)) {
            if (peek(p, 0) == '\r')
                return fail(p, p->pos, "a carriage return not followed by a line feed");
            return 0;
        }
    }
}

/* --- strings ------------------------------------------------------------------- */

struct buf {
    char *p;
    size_t n, cap;
};

static int buf_add(struct parser *p, struct buf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 32;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *q = realloc(b->p, cap);
        if (!q)
            return fail(p, p->pos, "out of memory");
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
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

static int escape(struct parser *p, struct buf *b)
{
    size_t at = p->pos;
    int c = peek(p, 1);
    static const char from[] = "btnfr\"\\", to[] = "\b\t\n\f\r\"\\";
    const char *e = c > 0 ? strchr(from, c) : NULL;
    if (e && c) {
        p->pos += 2;
        return buf_add(p, b, &to[e - from], 1);
    }
    if (c != 'u' && c != 'U')
        return fail(p, at, "an unknown escape sequence (\\b \\t \\n \\f \\r \\\" \\\\ \\uXXXX \\UXXXXXXXX are TOML's)");
    int len = c == 'u' ? 4 : 8;
    uint32_t cp = 0;
    for (int i = 0; i < len; i++) {
        int h = hexval(peek(p, 2 + (size_t)i));
        if (h < 0)
            return fail(p, at, "\\%c takes exactly %d hexadecimal digits", c, len);
        cp = cp * 16 + (uint32_t)h;
    }
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return fail(p, at, "\\%c names no Unicode scalar value", c);
    if (cp == 0)
        return fail(p, at, "a string holds U+0000, which keel does not edit");
    uint8_t out[4];
    int w = u8_uctomb(out, cp, 4);
    p->pos += 2 + (size_t)len;
    return w > 0 ? buf_add(p, b, (const char *)out, (size_t)w) : fail(p, at, "\\%c: not encodable", c);
}

/* A string of any of the four kinds at the cursor, decoded into b. */
static int string(struct parser *p, struct buf *b, int allow_multi)
{
    size_t at = p->pos;
    char q = p->s[p->pos];
    int multi = peek(p, 1) == q && peek(p, 2) == q;
    if (multi && !allow_multi)
        return fail(p, at, "a key cannot be a multi-line string");
    p->pos += multi ? 3 : 1;
    if (multi)
        newline(p);                         /* a newline right after the opening quotes is not content */
    for (;;) {
        if (at_end(p))
            return fail(p, at, "a string that never ends");
        int c = (unsigned char)p->s[p->pos];
        if (c == q) {
            if (!multi) {
                p->pos++;
                return 0;
            }
            size_t run = 0;
            while (peek(p, run) == q)
                run++;
            if (run >= 3) {
                if (run > 5)
                    return fail(p, p->pos, "too many quotes at the end of a multi-line string");
                if (buf_add(p, b, p->s + p->pos, run - 3) < 0)
                    return -1;
                p->pos += run;
                return 0;
            }
            if (buf_add(p, b, p->s + p->pos, run) < 0)
                return -1;
            p->pos += run;
            continue;
        }
        if (c == '\\' && q == '"') {
            if (multi) {                    /* a line-ending backslash: the line break and blanks after it go */
                size_t k = 1;
                while (peek(p, k) == ' ' || peek(p, k) == '\t')
                    k++;
                if (peek(p, k) == '\n' || (peek(p, k) == '\r' && peek(p, k + 1) == '\n')) {
                    p->pos += k;
                    for (;;) {
                        skip_ws(p);
                        if (!newline(p))
                            break;
                    }
                    continue;
                }
            }
            if (escape(p, b) < 0)
                return -1;
            continue;
        }
        if (c == '\n' || (c == '\r' && peek(p, 1) == '\n')) {
            if (!multi)
                return fail(p, p->pos, "a line break inside a single-line string");
            size_t k = c == '\n' ? 1 : 2;
            if (buf_add(p, b, p->s + p->pos, k) < 0)
                return -1;
            p->pos += k;
            continue;
        }
        if (bad_control(c))
            return fail(p, p->pos, "a control character (0x%02x) in a string", c);
        if (buf_add(p, b, p->s + p->pos, 1) < 0)
            return -1;
        p->pos++;
    }
}

/* --- keys ---------------------------------------------------------------------- */

#define KEY_PARTS_MAX TOML_MAX_DEPTH

struct key {
    char *part[KEY_PARTS_MAX];
    size_t len[KEY_PARTS_MAX];
    size_t at[KEY_PARTS_MAX];
    int n;
    size_t end;
};

static void key_free(struct key *k)
{
    for (int i = 0; i < k->n; i++)
        free(k->part[i]);
    k->n = 0;
}

static int bare_char(int c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

static int key_parts(struct parser *p, struct key *k)
{
    k->n = 0;
    for (;;) {
        skip_ws(p);
        if (k->n == KEY_PARTS_MAX)
            return fail(p, p->pos, "a key of more than %d parts", KEY_PARTS_MAX);
        struct buf b = {0};
        size_t at = p->pos;
        int c = peek(p, 0);
        if (c == '"' || c == '\'') {
            if (string(p, &b, 0) < 0) {
                free(b.p);
                return -1;
            }
            if (!b.p && buf_add(p, &b, "", 0) < 0) {
                free(b.p);
                return -1;
            }
        } else {
            while (bare_char(peek(p, 0)))
                p->pos++;
            if (p->pos == at) {
                free(b.p);
                return fail(p, at, "a key was expected here (letters, digits, _ and -, or a quoted string)");
            }
            if (buf_add(p, &b, p->s + at, p->pos - at) < 0) {
                free(b.p);
                return -1;
            }
        }
        k->part[k->n] = b.p;
        k->len[k->n] = b.n;
        k->at[k->n] = at;
        k->n++;
        k->end = p->pos;
        skip_ws(p);
        if (peek(p, 0) != '.')
            return 0;
        p->pos++;
    }
}

/* A key; on failure nothing of it is left allocated. */
static int key(struct parser *p, struct key *k)
{
    if (key_parts(p, k) == 0)
        return 0;
    key_free(k);
    return -1;
}

static char *key_text(const struct key *k, int upto)
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

static int is_dec(int c) { return c >= '0' && c <= '9'; }
static int is_hex(int c) { return hexval(c) >= 0; }
static int is_oct(int c) { return c >= '0' && c <= '7'; }
static int is_bin(int c) { return c == '0' || c == '1'; }

static int two(const char *s, int *v)
{
    if (!is_dec((unsigned char)s[0]) || !is_dec((unsigned char)s[1]))
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
        while (i < n && is_dec((unsigned char)s[i]))
            i++;
        if (i == d)
            return 0;
    }
    return i;
}

static size_t date_part(const char *s, size_t n)
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
    size_t d = date_part(s, n);
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
        return fail(p, p->pos, "out of memory");
    memcpy(x->text, s, n);
    x->text[n] = '\0';
    x->text_n = n;
    return 0;
}

/* A number, boolean, date or time token s[0..n) (starting at offset at). */
static int scalar(struct parser *p, struct toml_node *x, const char *s, size_t n, size_t at)
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
        return fail(p, at, "a number of more than %zu characters", sizeof clean - 1);
    for (size_t i = 0; i < n; i++)
        if (s[i] != '_')
            clean[cn++] = s[i];
    clean[cn] = '\0';
    if (bn > 2 && b[0] == '0' && (b[1] == 'x' || b[1] == 'o' || b[1] == 'b')) {
        int (*ok)(int) = b[1] == 'x' ? is_hex : b[1] == 'o' ? is_oct : is_bin;
        if (sign || !digits(b + 2, bn - 2, ok))
            return fail(p, at, "not a valid %s integer", b[1] == 'x' ? "hexadecimal" : b[1] == 'o' ? "octal" : "binary");
        errno = 0;
        char *end;
        unsigned long long v = strtoull(clean + 2, &end, b[1] == 'x' ? 16 : b[1] == 'o' ? 8 : 2);
        if (errno || *end || v > INT64_MAX)
            return fail(p, at, "an integer out of the 64-bit range");
        x->type = TOML_INTEGER;
        char t[32];
        snprintf(t, sizeof t, "%llu", v);
        return set_text(p, x, t, strlen(t));
    }
    /* Decimal: an integer part without leading zeros, then an optional
     * fraction and exponent. */
    size_t ip = 0;
    while (ip < bn && (is_dec((unsigned char)b[ip]) || b[ip] == '_'))
        ip++;
    if (!digits(b, ip, is_dec) || (ip > 1 && b[0] == '0'))
        return fail(p, at, "not a valid value (a number, true, false, a date, a string, an array or an inline table)");
    size_t i = ip;
    int is_float = 0;
    if (i < bn && b[i] == '.') {
        size_t f = ++i;
        while (i < bn && (is_dec((unsigned char)b[i]) || b[i] == '_'))
            i++;
        if (!digits(b + f, i - f, is_dec))
            return fail(p, at, "a fraction needs digits on both sides of the point");
        is_float = 1;
    }
    if (i < bn && (b[i] == 'e' || b[i] == 'E')) {
        i++;
        if (i < bn && (b[i] == '+' || b[i] == '-'))
            i++;
        size_t e = i;
        while (i < bn && (is_dec((unsigned char)b[i]) || b[i] == '_'))
            i++;
        if (!digits(b + e, i - e, is_dec))
            return fail(p, at, "an exponent needs digits");
        is_float = 1;
    }
    if (i != bn)
        return fail(p, at, "not a valid value (a number, true, false, a date, a string, an array or an inline table)");
    errno = 0;
    char *end;
    char t[40];
    if (is_float) {
        double v = strtod(clean, &end);
        if (*end)
            return fail(p, at, "not a valid float");
        snprintf(t, sizeof t, "%.17g", v);
        x->type = TOML_FLOAT;
    } else {
        long long v = strtoll(clean, &end, 10);
        if (errno || *end)
            return fail(p, at, "an integer out of the 64-bit range");
        snprintf(t, sizeof t, "%lld", v);
        x->type = TOML_INTEGER;
    }
    return set_text(p, x, t, strlen(t));
}

/* --- values -------------------------------------------------------------------- */

static int value(struct parser *p, struct toml_node *x);
static int keyval(struct parser *p, struct toml_node *table, int in_inline, struct toml_node **made);

static void freeze(struct toml_node *x)
{
    x->frozen = 1;                  /* depth is bounded by TOML_MAX_DEPTH */
    for (struct toml_node *c = x->first; c; c = c->next)
        freeze(c);
}

static int array(struct parser *p, struct toml_node *x)
{
    x->type = TOML_ARRAY;
    p->pos++;
    for (;;) {
        if (skip_ws_nl(p) < 0)
            return -1;
        if (peek(p, 0) == ']') {
            p->pos++;
            return 0;
        }
        struct toml_node *e = node_new(p, TOML_STRING);
        if (!e)
            return -1;
        append(x, e);
        if (value(p, e) < 0)
            return -1;
        if (skip_ws_nl(p) < 0)
            return -1;
        if (peek(p, 0) == ',') {
            p->pos++;
            continue;
        }
        if (peek(p, 0) == ']') {
            p->pos++;
            return 0;
        }
        return fail(p, p->pos, at_end(p) ? "an array that never ends" : "a comma or ] was expected in the array");
    }
}

static int inline_table(struct parser *p, struct toml_node *x)
{
    x->type = TOML_TABLE;
    x->how = TOML_DOTTED;               /* its own dotted keys may extend what they make inside it */
    p->pos++;
    skip_ws(p);
    if (peek(p, 0) == '}') {
        p->pos++;
        return 0;
    }
    for (;;) {
        if (keyval(p, x, 1, NULL) < 0)
            return -1;
        skip_ws(p);
        if (peek(p, 0) == ',') {
            p->pos++;
            skip_ws(p);
            if (peek(p, 0) == '}')
                return fail(p, p->pos, "a comma before the } of an inline table");
            continue;
        }
        if (peek(p, 0) == '}') {
            p->pos++;
            return 0;
        }
        return fail(p, p->pos,
                    at_end(p) ? "an inline table that never ends"
                              : "a comma or } was expected (an inline table stays on one line)");
    }
}

static int value(struct parser *p, struct toml_node *x)
{
    if (++p->depth > TOML_MAX_DEPTH) {
        p->depth--;
        return fail(p, p->pos, "values nested deeper than %d", TOML_MAX_DEPTH);
    }
    x->at = p->pos;
    int c = peek(p, 0), rc;
    if (c == '"' || c == '\'') {
        struct buf b = {0};
        x->type = TOML_STRING;
        rc = string(p, &b, 1);
        if (rc == 0 && !b.p)
            rc = buf_add(p, &b, "", 0);
        x->text = b.p;
        x->text_n = b.n;
    } else if (c == '[') {
        rc = array(p, x);
        if (rc == 0)
            freeze(x);
    } else if (c == '{') {
        rc = inline_table(p, x);
        if (rc == 0)
            freeze(x);
    } else {
        size_t at = p->pos;
        while (!at_end(p) && (bare_char(peek(p, 0)) || peek(p, 0) == '+' || peek(p, 0) == '.' || peek(p, 0) == ':'))
            p->pos++;
        /* A date and a time may be split by one space. */
        if (p->pos - at == 10 && peek(p, 0) == ' ' && date_part(p->s + at, 10) && is_dec(peek(p, 1)) &&
            is_dec(peek(p, 2)) && peek(p, 3) == ':') {
            p->pos++;
            while (!at_end(p) && (bare_char(peek(p, 0)) || peek(p, 0) == '+' || peek(p, 0) == '.' || peek(p, 0) == ':'))
                p->pos++;
        }
        rc = p->pos == at ? fail(p, at, at_end(p) || peek(p, 0) == '\n' || peek(p, 0) == '\r'
                                            ? "a value was expected after ="
                                            : "not a valid value (a number, true, false, a date, a string, an array or an inline table)")
                          : scalar(p, x, p->s + at, p->pos - at, at);
    }
    x->end = p->pos;
    p->depth--;
    return rc;
}

/* --- statements ---------------------------------------------------------------- */

static size_t line_start(const struct parser *p, size_t at)
{
    while (at > 0 && p->s[at - 1] != '\n')
        at--;
    return at;
}

/* key = value into table (in_inline: inside an inline table's braces). */
static int keyval(struct parser *p, struct toml_node *table, int in_inline, struct toml_node **made)
{
    struct key k;
    size_t key_at = p->pos;
    skip_ws(p);
    key_at = p->pos;
    if (key(p, &k) < 0)
        return -1;
    if (peek(p, 0) != '=') {
        key_free(&k);
        return fail(p, p->pos, "= was expected after the key");
    }
    p->pos++;
    skip_ws(p);
    struct toml_node *t = table;
    for (int i = 0; i + 1 < k.n; i++) {
        struct toml_node *c = map_find(p, t, k.part[i], k.len[i]);
        if (!c) {
            if (!(c = node_new(p, TOML_TABLE)))
                break;
            c->how = TOML_DOTTED;
            c->in_inline = (unsigned char)in_inline;
            char *part = k.part[i];
            k.part[i] = NULL;
            if (add_member(p, t, c, part, k.len[i]) < 0) {
                free(c);
                break;
            }
        } else if (c->type != TOML_TABLE || c->how != TOML_DOTTED || c->frozen) {
            char *name = key_text(&k, i + 1);
            fail(p, k.at[i], "the key %s is already defined%s", name ? name : "",
                 c->type == TOML_TABLE ? " as a table (a dotted key cannot add to it here)" : "");
            free(name);
            break;
        }
        t = c;
    }
    if (p->failed) {
        key_free(&k);
        return -1;
    }
    int last = k.n - 1;
    if (map_find(p, t, k.part[last], k.len[last])) {
        char *name = key_text(&k, k.n);
        fail(p, k.at[last], "the key %s is defined twice", name ? name : "");
        free(name);
        key_free(&k);
        return -1;
    }
    struct toml_node *x = node_new(p, TOML_STRING);
    if (!x) {
        key_free(&k);
        return -1;
    }
    x->in_inline = (unsigned char)in_inline;
    x->key_at = key_at;
    x->key_end = k.end;
    x->last_key_at = k.at[last];
    x->line_at = line_start(p, key_at);
    char *part = k.part[last];
    k.part[last] = NULL;
    size_t plen = k.len[last];
    int k_n_parts = k.n - 1;
    key_free(&k);
    if (add_member(p, t, x, part, plen) < 0) {
        free(x);
        return -1;
    }
    if (made)
        *made = x;
    int parts = k_n_parts;
    if (p->base + p->depth + parts > TOML_MAX_DEPTH)
        return fail(p, key_at, "tables nested deeper than %d", TOML_MAX_DEPTH);
    p->depth += parts;
    int rc = value(p, x);
    p->depth -= parts;
    return rc;
}

static int header(struct parser *p, struct toml_node **current)
{
    size_t at = p->pos;
    int aot = peek(p, 1) == '[';
    p->pos += aot ? 2 : 1;
    struct key k;
    if (key(p, &k) < 0)
        return -1;
    if (peek(p, 0) != ']' || (aot && peek(p, 1) != ']')) {
        key_free(&k);
        return fail(p, p->pos, aot ? "]] was expected to close the [[table]] header" : "] was expected to close the [table] header");
    }
    p->pos += aot ? 2 : 1;
    int k_parts = k.n + aot;
    if (k.n > TOML_MAX_DEPTH) {
        key_free(&k);
        return fail(p, at, "tables nested deeper than %d", TOML_MAX_DEPTH);
    }
    struct toml_node *t = p->root;
    for (int i = 0; i < k.n && !p->failed; i++) {
        int final = i + 1 == k.n;
        struct toml_node *c = map_find(p, t, k.part[i], k.len[i]);
        char *name = NULL;
        if (c && c->type == TOML_ARRAY && c->aot && !final) {
            t = c->last;
            continue;
        }
        if (c && final && aot) {
            if (c->type != TOML_ARRAY || !c->aot) {
                name = key_text(&k, i + 1);
                fail(p, at, "[[%s]]: the key is already defined, not as an array of tables", name ? name : "");
                free(name);
                break;
            }
            t = c;
            continue;
        } else if (c && final) {
            if (c->type != TOML_TABLE || c->how != TOML_IMPLICIT || c->frozen) {
                name = key_text(&k, i + 1);
                fail(p, at, "the table [%s] is defined twice (or its key is already a value)", name ? name : "");
                free(name);
                break;
            }
            c->how = TOML_HEADER;
            c->at = at;
            c->line_at = at;
            t = c;
            continue;
        } else if (c) {
            if (c->type != TOML_TABLE || c->frozen) {
                name = key_text(&k, i + 1);
                fail(p, k.at[i], "%s is a value, so a [table] cannot add to it", name ? name : "");
                free(name);
                break;
            }
            t = c;
            continue;
        }
        /* A new table (or the array of tables). */
        if (!(c = node_new(p, final && aot ? TOML_ARRAY : TOML_TABLE)))
            break;
        c->how = final ? TOML_HEADER : TOML_IMPLICIT;
        c->aot = (unsigned char)(final && aot);
        if (final) {
            c->at = at;
            c->line_at = at;
        }
        char *part = k.part[i];
        k.part[i] = NULL;
        if (add_member(p, t, c, part, k.len[i]) < 0) {
            free(c);
            break;
        }
        t = c;
    }
    key_free(&k);
    if (p->failed)
        return -1;
    if (aot) {                                  /* a new element of the array */
        t->end = p->pos;                        /* the array's span: its first [[header]] to its last */
        struct toml_node *e = node_new(p, TOML_TABLE);
        if (!e)
            return -1;
        e->how = TOML_HEADER;
        e->at = at;
        e->line_at = at;
        append(t, e);
        t = e;
    }
    t->end = p->pos;
    p->base = k_parts;
    *current = t;
    return 0;
}

struct toml_node *toml_parse(const char *s, size_t n, struct toml_error *err)
{
    struct parser p = {.s = s, .n = n};
    memset(err, 0, sizeof *err);
    const uint8_t *bad = u8_check((const uint8_t *)s, n);
    if (bad) {
        where(s, n, (size_t)((const char *)bad - s), &err->line, &err->column);
        snprintf(err->message, sizeof err->message, "not UTF-8 text");
        return NULL;
    }
    p.root = node_new(&p, TOML_TABLE);
    struct toml_node *current = p.root;
    if (p.root)
        p.root->how = TOML_HEADER;
    while (!p.failed && !at_end(&p)) {
        skip_ws(&p);
        int c = peek(&p, 0);
        struct toml_node *made = NULL;
        if (c == '[') {
            if (header(&p, &current) < 0)
                break;
        } else if (c != '#' && c != '\n' && c != '\r' && c != -1) {
            if (keyval(&p, current, 0, &made) < 0)
                break;
        }
        if (end_of_line(&p) < 0)
            break;
        if (made)
            made->line_end = p.pos;     /* deleting the key/value removes its line */
    }
    free(p.map);
    if (p.failed) {
        where(s, n, p.err_at, &err->line, &err->column);
        snprintf(err->message, sizeof err->message, "%s", p.err);
        toml_free(p.root);
        return NULL;
    }
    return p.root;
}

/* --- as JSON -------------------------------------------------------------------- */

static const char *type_name(enum toml_type t)
{
    switch (t) {
    case TOML_STRING: return "string";
    case TOML_INTEGER: return "integer";
    case TOML_FLOAT: return "float";
    case TOML_BOOL: return "bool";
    case TOML_DATETIME: return "datetime";
    case TOML_DATETIME_LOCAL: return "datetime-local";
    case TOML_DATE_LOCAL: return "date-local";
    case TOML_TIME_LOCAL: return "time-local";
    default: return "";
    }
}

static cJSON *scalar_json(const struct toml_node *x, int tagged)
{
    if (tagged) {
        cJSON *o = cJSON_CreateObject();
        if (o && (!cJSON_AddStringToObject(o, "type", type_name(x->type)) ||
                  !cJSON_AddStringToObject(o, "value", x->text ? x->text : ""))) {
            cJSON_Delete(o);
            return NULL;
        }
        return o;
    }
    if (x->type == TOML_STRING)
        return cJSON_CreateString(x->text ? x->text : "");
    if (x->type == TOML_BOOL)
        return cJSON_CreateBool(x->text && x->text[0] == 't');
    size_t n = x->text_n + 3;
    char *raw = malloc(n);
    if (!raw)
        return NULL;
    snprintf(raw, n, "%c:%s", x->type == TOML_INTEGER ? 'i' : x->type == TOML_FLOAT ? 'f' : 'd', x->text ? x->text : "");
    cJSON *r = cJSON_CreateString(raw);
    free(raw);
    if (r)
        r->type = cJSON_Raw;            /* never printed: compared only */
    return r;
}

cJSON *toml_to_json(const struct toml_node *x, int tagged)
{
    if (x->type != TOML_TABLE && x->type != TOML_ARRAY)
        return scalar_json(x, tagged);
    cJSON *o = x->type == TOML_TABLE ? cJSON_CreateObject() : cJSON_CreateArray();
    for (const struct toml_node *k = x->first; o && k; k = k->next) {
        cJSON *v = toml_to_json(k, tagged);
        if (!v) {
            cJSON_Delete(o);
            return NULL;
        }
        if (x->type == TOML_TABLE) {
            cJSON_AddItemToObject(o, k->key, v);
        } else {
            cJSON_AddItemToArray(o, v);
        }
    }
    return o;
}
