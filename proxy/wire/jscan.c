/* jscan.c: top-level member lookup (see jscan.h). */
#include "jscan.h"

#include <cjson/cJSON.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

static size_t ws(const char *s, size_t n, size_t i)
{
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n'))
        i++;
    return i;
}

static size_t skip_string(const char *s, size_t n, size_t i);

/* End of the string starting at s[i] == '"' (index after the closing quote), or 0. */
static size_t str_end(const char *s, size_t n, size_t i)
{
    return skip_string(s, n, i);
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
    size_t st = i; /* number or literal */
    while (i < n && !strchr(",}] \t\r\n", s[i]))
        i++;
    return i < n && i > st ? i : 0;
}

int jscan_members(const char *s, size_t n, const char *const *keys, struct jscan_span *out, int nkeys, int head_only)
{
    for (int k = 0; k < nkeys; k++)
        out[k] = (struct jscan_span){NULL, 0};
    size_t i = ws(s, n, 0);
    if (i >= n || s[i] != '{')
        return -1;
    int found = 0;
    i = ws(s, n, i + 1);
    while (i < n && s[i] == '"') {
        size_t ke = str_end(s, n, i);
        if (!ke)
            return found;
        int which = -1;
        for (int k = 0; k < nkeys; k++)
            if (!out[k].p && ke - i - 2 == strlen(keys[k]) && memcmp(s + i + 1, keys[k], ke - i - 2) == 0)
                which = k;
        i = ws(s, n, ke);
        if (i >= n || s[i] != ':')
            return found;
        i = ws(s, n, i + 1);
        if (which >= 0 && head_only) { /* the value's start is enough */
            out[which] = (struct jscan_span){s + i, n - i};
            if (++found == nkeys)
                return found;
        }
        size_t ve = value_end(s, n, i);
        if (!ve)
            return found;
        if (which >= 0 && !head_only) {
            out[which] = (struct jscan_span){s + i, ve - i};
            if (++found == nkeys)
                return found;
        }
        i = ws(s, n, ve);
        if (i >= n || s[i] != ',')
            return found;
        i = ws(s, n, i + 1);
    }
    return found;
}

int jscan_member(const char *s, size_t n, const char *key, const char **v, size_t *vn)
{
    struct jscan_span sp;
    int rc = jscan_members(s, n, &key, &sp, 1, 0);
    if (rc < 0)
        return -1;
    if (!sp.p)
        return 0;
    *v = sp.p;
    *vn = sp.n;
    return 1;
}

/* The \\u0000 escapes inside strings of s[0..n): counted, and written over
 * as \\uFFFD when w is s itself (NULL: only counted). */
static size_t nul_escapes(const char *s, size_t n, char *w)
{
    size_t k = 0;
    if (!memchr(s, '\\', n)) /* no escape at all: most texts */
        return 0;
    int in = 0;
    for (size_t i = 0; i < n; i++) {
        if (!in) {
            in = s[i] == '"';
        } else if (s[i] == '\\') {
            if (i + 5 < n && s[i + 1] == 'u' && !memcmp(s + i + 2, "0000", 4)) {
                if (!w)
                    return 1;
                memcpy(w + i + 2, "FFFD", 4);
                k++;
            }
            i++;
        } else if (s[i] == '"') {
            in = 0;
        }
    }
    return k;
}

int jscan_has_nul_escape(const char *s, size_t n)
{
    return nul_escapes(s, n, NULL) > 0;
}

size_t jscan_nul_escapes_replaced(char *s, size_t n)
{
    return nul_escapes(s, n, s);
}

/* Validation: one JSON value (RFC 8259) and nothing but whitespace around it,
 * as a state machine that can stop at any byte and go on with the next piece
 * (jscan.h, struct jstream). The open containers are kept as a bit stack
 * (1 = object), so hostile nesting costs bits, not stack frames. String
 * bodies, where big messages spend their bytes, are searched for '"', '\\'
 * and control bytes a vector at a time (string_run), and only where one may
 * be are the bytes looked at one by one. */
#define ONES  0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

static inline uint64_t has_byte(uint64_t x, unsigned char b)
{
    uint64_t y = x ^ (ONES * b);
    return (y - ONES) & ~y & HIGHS;
}

#if defined(__x86_64__) && defined(__GNUC__)
#define RUN_AVX2 1
/* Thirty-two bytes at a time where the processor has AVX2 (asked once). */
__attribute__((target("avx2"))) static size_t string_run_avx2(const char *s, size_t n, size_t i)
{
    const __m256i quote = _mm256_set1_epi8('"'), bslash = _mm256_set1_epi8('\\'), ctl = _mm256_set1_epi8(0x1f);
    while (i + 32 <= n) {
        __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(s + i));
        __m256i hit = _mm256_or_si256(_mm256_or_si256(_mm256_cmpeq_epi8(x, quote), _mm256_cmpeq_epi8(x, bslash)),
                                      _mm256_cmpeq_epi8(_mm256_min_epu8(x, ctl), x)); /* x <= 0x1f */
        unsigned mask = (unsigned)_mm256_movemask_epi8(hit);
        if (mask)
            return i + (size_t)__builtin_ctz(mask);
        i += 32;
    }
    return i;
}
#endif

#ifdef __SSE2__
/* The '"', '\\' and bytes below 0x20 of the sixteen at p, as a bit mask. */
static inline int run_stops(const char *p)
{
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\'), ctl = _mm_set1_epi8(0x1f);
    __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
    return _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, bslash)),
                                          _mm_cmpeq_epi8(_mm_min_epu8(x, ctl), x))); /* x <= 0x1f */
}
#endif

#ifdef RUN_AVX2
/* A string still running after 64 bytes is a long one: thirty-two bytes a
 * step where the processor has AVX2 (asked once). */
static size_t long_run(const char *s, size_t n, size_t i)
{
    static int avx2 = -1;
    if (avx2 < 0)
        avx2 = __builtin_cpu_supports("avx2") != 0;
    return avx2 ? string_run_avx2(s, n, i) : i;
}
#endif

/* The first index >= i that may end a plain run of string bytes: sixteen
 * bytes at a time with SSE2 (every x86-64), thirty-two with AVX2 once a
 * string has run past 64 bytes (most end before: keys, ids, short values),
 * else eight. */
static inline __attribute__((always_inline)) size_t string_run(const char *s, size_t n, size_t i)
{
#ifdef __SSE2__
#ifdef RUN_AVX2
    size_t wide = i + 64;
#endif
    while (i + 16 <= n) {
        int mask = run_stops(s + i);
        if (mask)
            return i + (size_t)__builtin_ctz((unsigned)mask);
        i += 16;
#ifdef RUN_AVX2
        if (i == wide) /* once: it jumps past wide, or stays to step on by 16 */
            i = long_run(s, n, i);
#endif
    }
#endif
    while (i + 8 <= n) {
        uint64_t x;
        memcpy(&x, s + i, 8);
        if (has_byte(x, '"') | has_byte(x, '\\') | ((x - ONES * 0x20) & ~x & HIGHS))
            break;
        i += 8;
    }
    return i;
}

static size_t skip_string(const char *s, size_t n, size_t i)
{
    /* s[i] == '"'; returns the index after the closing quote, or 0. */
    for (i++;;) {
        i = string_run(s, n, i);
        if (i >= n || (unsigned char)s[i] < 0x20)
            return 0;
        if (s[i] == '"')
            return i + 1;
        i += s[i] == '\\' ? 2 : 1; /* a backslash skips what it escapes */
    }
}

/* What the stream expects next. JS_DONE: the value ended at depth 0. */
enum {
    JS_VALUE,
    JS_ARR_FIRST,
    JS_OBJ_FIRST,
    JS_KEY,
    JS_COLON,
    JS_AFTER,
    JS_DONE,
    JS_STRING,
    JS_NUMBER,
    JS_LITERAL,
    JS_ERROR
};
enum { N_MINUS, N_ZERO, N_INT, N_DOT, N_FRAC, N_E, N_ESIGN, N_EXP };
#define N_ACCEPTS(sub) ((sub) == N_ZERO || (sub) == N_INT || (sub) == N_FRAC || (sub) == N_EXP)

void jstream_init(struct jstream *j)
{
    /* The bit stack and the raw buffers are written before they are read. */
    j->depth = 0;
    j->st = JS_VALUE;
    j->sub = j->inkey = j->keyn = j->trailing = j->dup = 0;
    j->lit = NULL;
    j->off = j->cap_from = j->key_from = 0;
    j->slot = j->next_slot = -1;
    j->first = 0;
    j->in_result = j->result_obj = j->result_any = 0;
    j->rm_slot = j->rm_next = -1;
    for (int x = 0; x < JSCAN_NRESULT; x++) {
        j->rm[x].start = j->rm[x].end = 0;
        j->rm[x].present = j->rm[x].items = 0;
        j->rm[x].first = 0;
    }
    for (int x = 0; x < JSCAN_NSLOTS; x++) {
        j->top[x].start = j->top[x].end = 0;
        j->top[x].present = j->top[x].cut = j->top[x].rawn = 0;
    }
}

static int is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* A member name jscan records, zero-padded as a key being read is. */
struct name {
    char s[24];
    size_t n;
};
#define NAME(lit)                                                                                                      \
    {                                                                                                                  \
        lit, sizeof lit - 1                                                                                            \
    }

/* Which of names[0..count) the key k (zero-padded to 24 bytes) of n bytes is, or -1. */
static int name_of(const struct name *names, int count, const char *k, size_t n)
{
    for (int x = 0; x < count; x++)
        if (names[x].n == n && !memcmp(names[x].s, k, sizeof names[x].s)) /* a fixed size: compared inline */
            return x;
    return -1;
}

/* The top-level member whose key is k[0..n), if it is one jscan records. */
static int slot_of(const char *k, size_t n)
{
    static const struct name names[JSCAN_NSLOTS] = {NAME("id"),     NAME("method"), NAME("params"),
                                                    NAME("result"), NAME("error"),  NAME("jsonrpc")};
    return name_of(names, JSCAN_NSLOTS, k, n);
}

/* The member of a top-level result whose key is k[0..n), if it is one jscan records. */
static int rm_of(const char *k, size_t n)
{
    static const struct name names[JSCAN_NRESULT] = {NAME("content"), NAME("structuredContent"), NAME("isError"),
                                                     NAME("resultType"), NAME("_meta")};
    return name_of(names, JSCAN_NRESULT, k, n);
}

/* Keeps s[a..b) of a top-level value being captured, up to the buffer. */
static void capture(struct jstream *j, const char *s, size_t a, size_t b)
{
    if ((j->slot != JSCAN_ID && j->slot != JSCAN_JSONRPC) || b <= a)
        return;
    struct jstream_slot *t = &j->top[j->slot];
    size_t room = sizeof t->raw - t->rawn;
    if (b - a > room) {
        t->cut = 1;
        b = a + room;
    }
    memcpy(t->raw + t->rawn, s + a, b - a);
    t->rawn += (unsigned char)(b - a);
}

/* Same for the key being read. */
static void capture_key(struct jstream *j, const char *s, size_t a, size_t b)
{
    if (!j->inkey || b <= a)
        return;
    if (j->keyn + (b - a) > sizeof j->key) {
        j->keyn = sizeof j->key + 1; /* too long to be one we want */
        return;
    }
    memcpy(j->key + j->keyn, s + a, b - a);
    j->keyn += (unsigned char)(b - a);
}

/* A value starts at s[i] (offset base + i). */
static void value_starts(struct jstream *j, const char *s, size_t base, size_t i)
{
    if (j->depth == 1 && j->next_slot >= 0) {
        j->slot = j->next_slot;
        j->next_slot = -1;
        j->top[j->slot].start = base + i;
        j->top[j->slot].present = 1;
        j->top[j->slot].rawn = 0;
        j->cap_from = i;
    } else if (j->depth == 2 && j->in_result) {
        j->result_any = 1;
        if (j->rm_next >= 0) {
            j->rm_slot = j->rm_next;
            j->rm_next = -1;
            j->rm[j->rm_slot].start = base + i;
            j->rm[j->rm_slot].present = 1;
            j->rm[j->rm_slot].first = s[i];
        }
    } else if (j->depth == 3 && j->rm_slot >= 0) {
        j->rm[j->rm_slot].items = 1;
    }
}

/* A value ended just before s[i]. */
static void value_ends(struct jstream *j, const char *s, size_t base, size_t i)
{
    if (j->depth == 1 && j->slot >= 0) {
        capture(j, s, j->cap_from, i);
        j->top[j->slot].end = base + i;
        j->in_result = 0;
        j->slot = -1;
    } else if (j->depth == 2 && j->rm_slot >= 0) {
        j->rm[j->rm_slot].end = base + i;
        j->rm_slot = -1;
    }
    j->st = j->depth == 0 ? JS_DONE : JS_AFTER;
}

int jstream_feed(struct jstream *j, const char *s, size_t n, size_t *used)
{
    size_t base = j->off, i = 0;
    j->cap_from = 0;
    while (i < n) {
        char c = s[i];
        switch (j->st) {
        case JS_ARR_FIRST:
            if (c == ']') {
                j->depth--;
                i++;
                value_ends(j, s, base, i);
                continue;
            }
            /* fall through */
        case JS_VALUE:
            if (is_ws(c)) {
                i++;
                continue;
            }
            value_starts(j, s, base, i);
            if (!j->first)
                j->first = c;
            if (c == '{' || c == '[') {
                if (j->depth >= JSCAN_MAX_DEPTH)
                    goto bad;
                if (c == '{' && j->depth == 1 && j->slot == JSCAN_RESULT)
                    j->in_result = j->result_obj = 1;
                if (c == '{')
                    j->stack[j->depth / 64] |= 1ull << (j->depth % 64);
                else
                    j->stack[j->depth / 64] &= ~(1ull << (j->depth % 64));
                j->depth++;
                j->st = c == '{' ? JS_OBJ_FIRST : JS_ARR_FIRST;
            } else if (c == '"') {
                j->st = JS_STRING;
                j->sub = 0;
                j->inkey = 0;
            } else if (c == '-' || (c >= '0' && c <= '9')) {
                j->st = JS_NUMBER;
                j->sub = c == '-' ? N_MINUS : c == '0' ? N_ZERO : N_INT;
            } else if (c == 't' || c == 'f' || c == 'n') {
                j->st = JS_LITERAL;
                j->lit = c == 't' ? "true" : c == 'f' ? "false" : "null";
                j->sub = 1;
            } else {
                goto bad;
            }
            i++;
            continue;
        case JS_OBJ_FIRST:
        case JS_KEY:
            if (is_ws(c)) {
                i++;
                continue;
            }
            if (c == '}' && j->st == JS_OBJ_FIRST) {
                j->depth--;
                i++;
                value_ends(j, s, base, i);
                continue;
            }
            if (c != '"')
                goto bad;
            j->st = JS_STRING;
            j->sub = 0;
            /* 1: a top-level key, 3: a key of result's, both kept */
            j->inkey = j->depth == 1 ? 1 : j->depth == 2 && j->in_result ? 3 : 2;
            j->keyn = 0;
            memset(j->key, 0, sizeof j->key); /* zero-padded, as the names it is compared with */
            j->key_from = i + 1;
            i++;
            continue;
        case JS_COLON:
            if (is_ws(c)) {
                i++;
                continue;
            }
            if (c != ':')
                goto bad;
            j->st = JS_VALUE;
            i++;
            continue;
        case JS_AFTER:
        case JS_DONE:
            if (is_ws(c)) {
                i++;
                continue;
            }
            if (j->st == JS_DONE) {
                j->trailing = 1;
                goto bad;
            }
            {
                int obj = (j->stack[(j->depth - 1) / 64] >> ((j->depth - 1) % 64)) & 1;
                if (c == ',') {
                    j->st = obj ? JS_KEY : JS_VALUE;
                    i++;
                    continue;
                }
                if (c != (obj ? '}' : ']'))
                    goto bad;
                j->depth--;
                i++;
                value_ends(j, s, base, i);
                continue;
            }
        case JS_STRING:
            if (j->sub == 0) {
                i = string_run(s, n, i);
                while (i < n && (unsigned char)s[i] >= 0x20 && s[i] != '"' && s[i] != '\\')
                    i++;
                if (i >= n)
                    break;
                unsigned char u = (unsigned char)s[i];
                if (u == '"') {
                    i++;
                    if (j->inkey) {
                        if (j->inkey == 1) {
                            capture_key(j, s, j->key_from, i - 1);
                            j->next_slot = (size_t)j->keyn <= sizeof j->key ? slot_of(j->key, j->keyn) : -1;
                            if (j->next_slot >= 0 && j->top[j->next_slot].present) {
                                j->next_slot = -1; /* the first of duplicate keys wins, as in cJSON */
                                j->dup = 1;
                            }
                            if (j->keyn <= sizeof j->key && memchr(j->key, '\\', j->keyn))
                                j->dup = 1; /* "\u0069d": a name in disguise */
                        } else if (j->inkey == 3) {
                            capture_key(j, s, j->key_from, i - 1);
                            j->rm_next = (size_t)j->keyn <= sizeof j->key ? (signed char)rm_of(j->key, j->keyn) : -1;
                            if (j->rm_next >= 0 && j->rm[j->rm_next].present) {
                                j->rm_next = -1; /* the first wins, and the message is refused: */
                                j->dup = 1; /* peers keep the last ("content" twice) */
                            }
                        }
                        j->inkey = 0;
                        j->st = JS_COLON;
                    } else {
                        value_ends(j, s, base, i);
                    }
                    continue;
                }
                if (u < 0x20)
                    goto bad;
                if (u == '\\')
                    j->sub = 1;
                i++;
            } else if (j->sub == 1) {
                if (c == 'u')
                    j->sub = 2;
                else if (strchr("\"\\/bfnrt", c) && c)
                    j->sub = 0;
                else
                    goto bad;
                i++;
            } else {
                if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
                    goto bad;
                j->sub = j->sub == 5 ? 0 : j->sub + 1;
                i++;
            }
            continue;
        case JS_NUMBER: {
            int digit = c >= '0' && c <= '9';
            unsigned char to = 255;
            switch (j->sub) {
            case N_MINUS:
                to = c == '0' ? N_ZERO : digit ? N_INT : 255;
                break;
            case N_ZERO:
            case N_INT:
                to = c == '.' ? N_DOT : (c == 'e' || c == 'E') ? N_E : (digit && j->sub == N_INT) ? N_INT : 254;
                break;
            case N_DOT:
                to = digit ? N_FRAC : 255;
                break;
            case N_FRAC:
                to = digit ? N_FRAC : (c == 'e' || c == 'E') ? N_E : 254;
                break;
            case N_E:
                to = (c == '+' || c == '-') ? N_ESIGN : digit ? N_EXP : 255;
                break;
            case N_ESIGN:
                to = digit ? N_EXP : 255;
                break;
            case N_EXP:
                to = digit ? N_EXP : 254;
                break;
            }
            if (to == 255)
                goto bad;
            if (to == 254) { /* the number ended before c */
                value_ends(j, s, base, i);
                continue;
            }
            j->sub = to;
            i++;
            continue;
        }
        case JS_LITERAL:
            if (c != j->lit[j->sub])
                goto bad;
            i++;
            if (!j->lit[++j->sub])
                value_ends(j, s, base, i);
            continue;
        default:
            goto bad;
        }
    }
    /* The piece ended: keep what belongs to a value or key still open. */
    capture(j, s, j->cap_from, n);
    if (j->st == JS_STRING && (j->inkey == 1 || j->inkey == 3))
        capture_key(j, s, j->key_from, n);
    j->key_from = 0;
    j->off += n;
    *used = n;
    return 0;
bad:
    j->st = JS_ERROR;
    j->off += i;
    *used = i;
    return -1;
}

int jstream_end(const struct jstream *j)
{
    return j->st == JS_DONE || (j->st == JS_NUMBER && j->depth == 0 && N_ACCEPTS(j->sub));
}

int jscan_scan(const char *s, size_t n, struct jscan_top *top)
{
    struct jstream j;
    jstream_init(&j);
    size_t used;
    if (jstream_feed(&j, s, n, &used) < 0 || !jstream_end(&j)) {
        if (top)
            memset(top, 0, sizeof *top);
        return 0;
    }
    if (top)
        jstream_top(&j, s, top);
    return 1;
}

void jstream_top(const struct jstream *j, const char *s, struct jscan_top *top)
{
    top->first = j->first;
    top->dup = j->dup;
    struct jscan_span *out[JSCAN_NSLOTS] = {&top->id,     &top->method, &top->params,
                                            &top->result, &top->error,  &top->jsonrpc};
    for (int x = 0; x < JSCAN_NSLOTS; x++)
        *out[x] = j->top[x].present ? (struct jscan_span){s + j->top[x].start, j->top[x].end - j->top[x].start}
                                    : (struct jscan_span){NULL, 0};
    if (!j->top[JSCAN_RESULT].present) {
        memset(top->rm, 0, sizeof top->rm);
        return;
    }
    for (int x = 0; x < JSCAN_NRESULT; x++)
        top->rm[x] = j->rm[x].present ? (struct jscan_span){s + j->rm[x].start, j->rm[x].end - j->rm[x].start}
                                      : (struct jscan_span){NULL, 0};
}

int jscan_valid(const char *s, size_t n)
{
    return jscan_scan(s, n, NULL);
}

int jscan_tail_id(const char *s, size_t n, const char **v, size_t *vn)
{
    /* ... "id" : VALUE } : walked backwards from the end. */
    size_t i = n;
    while (i && strchr(" \t\r\n", s[i - 1]))
        i--;
    if (!i || s[--i] != '}')
        return 0;
    while (i && strchr(" \t\r\n", s[i - 1]))
        i--;
    size_t end = i, start;
    if (!i)
        return 0;
    if (s[i - 1] == '"') { /* a string: find its opening quote */
        size_t k = i - 1;
        for (;;) {
            if (!k)
                return 0;
            k--;
            if (s[k] == '"') {
                size_t bs = 0;
                while (k > bs && s[k - 1 - bs] == '\\')
                    bs++;
                if (!(bs & 1))
                    break;
            }
        }
        start = k;
    } else { /* a number */
        start = i;
        while (start && strchr("0123456789+-.eE", s[start - 1]))
            start--;
        if (start == end)
            return 0;
    }
    i = start;
    while (i && strchr(" \t\r\n", s[i - 1]))
        i--;
    if (!i || s[--i] != ':')
        return 0;
    while (i && strchr(" \t\r\n", s[i - 1]))
        i--;
    if (i < 4 || memcmp(s + i - 4, "\"id\"", 4))
        return 0;
    i -= 4;
    while (i && strchr(" \t\r\n", s[i - 1]))
        i--;
    if (!i || (s[i - 1] != ',' && s[i - 1] != '{'))
        return 0;
    *v = s + start;
    *vn = end - start;
    return 1;
}

int jscan_is_jsonrpc(const struct jscan_top *top)
{
    if (top->first != '{' || !top->jsonrpc.p || top->jsonrpc.n != 5 || memcmp(top->jsonrpc.p, "\"2.0\"", 5))
        return 0;
    return top->method.p || (top->id.p && (top->result.p || top->error.p));
}

char *jscan_splice(const char *s, size_t n, struct jscan_insert *ins, int k, size_t *out_n)
{
    for (int a = 1; a < k; a++) /* by offset: k is tiny */
        for (int b = a; b > 0 && ins[b].at < ins[b - 1].at; b--) {
            struct jscan_insert t = ins[b];
            ins[b] = ins[b - 1];
            ins[b - 1] = t;
        }
    size_t total = n;
    for (int i = 0; i < k; i++)
        total += strlen(ins[i].text) - ins[i].del;
    char *out = malloc(total + 1);
    if (!out)
        return NULL;
    size_t o = 0, from = 0;
    for (int i = 0; i < k; i++) {
        memcpy(out + o, s + from, ins[i].at - from);
        o += ins[i].at - from;
        size_t l = strlen(ins[i].text);
        memcpy(out + o, ins[i].text, l);
        o += l;
        from = ins[i].at + ins[i].del;
    }
    memcpy(out + o, s + from, n - from);
    out[total] = '\0';
    if (out_n)
        *out_n = total;
    return out;
}

int jscan_array_next(const char *s, size_t n, size_t *pos, const char **v)
{
    if (!n || s[0] != '[')
        return 0;
    size_t i;
    if (!*pos) {
        i = ws(s, n, 1); /* the first element */
    } else {
        size_t e = value_end(s, n, *pos); /* step over the previous one */
        if (!e)
            return 0;
        i = ws(s, n, e);
        if (i >= n || s[i] != ',')
            return 0;
        i = ws(s, n, i + 1);
    }
    if (i >= n || s[i] == ']')
        return 0;
    *v = s + i;
    *pos = i;
    return 1;
}

size_t jscan_value_end(const char *s, size_t n, size_t at)
{
    return value_end(s, n, ws(s, n, at));
}

int jscan_object_next(const char *s, size_t n, size_t *pos, struct jscan_span *key, struct jscan_span *val)
{
    size_t i;
    if (!*pos) {
        if (!n || s[0] != '{')
            return 0;
        i = ws(s, n, 1); /* the first member */
    } else {
        i = ws(s, n, *pos); /* after the previous value */
        if (i >= n || s[i] != ',')
            return 0;
        i = ws(s, n, i + 1);
    }
    if (i >= n || s[i] != '"')
        return 0;
    size_t ke = str_end(s, n, i);
    if (!ke)
        return 0;
    size_t v = ws(s, n, ke);
    if (v >= n || s[v] != ':')
        return 0;
    v = ws(s, n, v + 1);
    size_t ve = value_end(s, n, v);
    if (!ve)
        return 0;
    *key = (struct jscan_span){s + i, ke - i};
    *val = (struct jscan_span){s + v, ve - v};
    *pos = ve;
    return 1;
}

/* s[0..n), a NUL and JSCAN_PAD zero bytes, malloc'd. */
static char *padded_copy(const char *s, size_t n)
{
    char *c = malloc(n + 1 + JSCAN_PAD);
    if (c) {
        memcpy(c, s, n);
        memset(c + n, 0, 1 + JSCAN_PAD);
    }
    return c;
}

char *jscan_string_prefix(const char *raw, size_t rn, size_t max_bytes)
{
    if (rn < 2 || raw[0] != '"')
        return NULL;
    size_t i = 1;
    while (i < rn && raw[i] != '"' && i - 1 < max_bytes) {
        size_t step = raw[i] == '\\' ? (i + 1 < rn && raw[i + 1] == 'u' ? 6 : 2) : 1;
        if (i - 1 + step > max_bytes || i + step > rn)
            break;
        i += step;
    }
    char *tok = malloc(i + 2);
    if (!tok)
        return NULL;
    memcpy(tok, raw, i);
    tok[i] = '"';
    tok[i + 1] = '\0';
    cJSON *v = jscan_parse(tok, i + 1);
    free(tok);
    char *out = cJSON_IsString(v) ? padded_copy(v->valuestring, strlen(v->valuestring)) : NULL; /* a rule's subject */
    cJSON_Delete(v);
    return out;
}

_Static_assert(JSCAN_MAX_DEPTH == CJSON_NESTING_LIMIT, "jscan and cJSON must nest alike");

static int hex4(const char *p, unsigned *v)
{
    *v = 0;
    for (int k = 0; k < 4; k++) {
        int c = p[k],
            d = c >= '0' && c <= '9'             ? c - '0'
            : (c | 32) >= 'a' && (c | 32) <= 'f' ? (c | 32) - 'a' + 10
                                                 : -1;
        if (d < 0)
            return 0;
        *v = *v << 4 | (unsigned)d;
    }
    return 1;
}

cJSON *jscan_parse(const char *s, size_t n)
{
    return jscan_scan(s, n, NULL) ? jscan_parse_valid(s, n) : NULL;
}

cJSON *jscan_parse_valid(const char *s, size_t n)
{
    char *copy = NULL; /* made at the first lone surrogate: the same length */
    /* In valid JSON a backslash is always an escape inside a string. */
    for (size_t i = 0; i + 1 < n; i++) {
        const char *b = memchr(s + i, '\\', n - 1 - i);
        if (!b)
            break;
        i = (size_t)(b - s);
        unsigned u, lo;
        if (s[i + 1] != 'u' || i + 6 > n || !hex4(s + i + 2, &u) || u < 0xD800 || u > 0xDFFF) {
            i++;
            continue;
        }
        if (u < 0xDC00 && i + 12 <= n && s[i + 6] == '\\' && s[i + 7] == 'u' && hex4(s + i + 8, &lo) && lo >= 0xDC00 &&
            lo <= 0xDFFF) {
            i += 11; /* a pair: kept */
            continue;
        }
        if (!copy) {
            if (!(copy = malloc(n)))
                return NULL;
            memcpy(copy, s, n);
        }
        memcpy(copy + i, "\\ufffd", 6);
        i += 5;
    }
    cJSON *v = cJSON_ParseWithLength(copy ? copy : s, n);
    free(copy);
    return v;
}

static int key_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* 1 if the object's members hold a name twice. */
static int object_dup(const cJSON *o)
{
    size_t n = 0, i = 0;
    const cJSON *c;
    for (c = o->child; c; c = c->next)
        n++;
    if (n < 2)
        return 0;
    if (n <= 8) { /* the usual: a few members, compared pairwise */
        for (c = o->child; c; c = c->next)
            for (const cJSON *d = c->next; d; d = d->next)
                if (c->string && d->string && !strcmp(c->string, d->string))
                    return 1;
        return 0;
    }
    const char **k = malloc(n * sizeof *k);
    if (!k)
        return -1;
    for (c = o->child; c; c = c->next)
        k[i++] = c->string ? c->string : "";
    qsort(k, n, sizeof *k, key_cmp);
    int dup = 0;
    for (i = 1; i < n && !dup; i++)
        dup = !strcmp(k[i - 1], k[i]);
    free(k);
    return dup;
}

int jscan_has_dup(const cJSON *v)
{
    /* depth first without recursion: at each level, the next member to
     * look at (nesting is at most JSCAN_MAX_DEPTH, so is the stack) */
    const cJSON *next[JSCAN_MAX_DEPTH + 2];
    size_t d = 0;
    if (!v || !(cJSON_IsObject(v) || cJSON_IsArray(v)))
        return 0;
    int r = cJSON_IsObject(v) ? object_dup(v) : 0;
    if (r)
        return r;
    next[d++] = v->child;
    while (d) {
        const cJSON *c = next[d - 1];
        if (!c) {
            d--;
            continue;
        }
        next[d - 1] = c->next;
        if (!(cJSON_IsObject(c) || cJSON_IsArray(c)) || !c->child)
            continue;
        if (cJSON_IsObject(c) && (r = object_dup(c)))
            return r;
        if (d == sizeof next / sizeof *next)
            return -1;
        next[d++] = c->child;
    }
    return 0;
}
