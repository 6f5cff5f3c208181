/* jscan.c: top-level member lookup (see jscan.h). */
#include "jscan.h"

#include <cjson/cJSON.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
    size_t st = i;   /* number or literal */
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
        if (which >= 0 && head_only) {            /* the value's start is enough */
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

/* Validation: one JSON value (RFC 8259) and nothing but whitespace around it.
 * Iterative, with the open containers kept as a bit stack (1 = object), so
 * hostile nesting costs bits, not stack frames. No allocation. String bodies,
 * where big messages spend their bytes, are skipped eight bytes at a time: a
 * word is searched for '"', '\\' and control bytes with the usual SWAR
 * tricks, and only a word that may hold one is looked at byte by byte. */
#define JV_MAX_DEPTH 4096
#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

static inline uint64_t has_byte(uint64_t x, unsigned char b)
{
    uint64_t y = x ^ (ONES * b);
    return (y - ONES) & ~y & HIGHS;
}

static size_t skip_string(const char *s, size_t n, size_t i)
{
    /* s[i] == '"'; returns the index after the closing quote, or 0. */
    for (i++;;) {
        while (i + 8 <= n) {
            uint64_t x;
            memcpy(&x, s + i, 8);
            if (has_byte(x, '"') | has_byte(x, '\\') | ((x - ONES * 0x20) & ~x & HIGHS))
                break;
            i += 8;
        }
        if (i >= n)
            return 0;
        unsigned char c = (unsigned char)s[i];
        if (c == '"')
            return i + 1;
        if (c < 0x20)
            return 0;
        if (c == '\\') {
            if (++i >= n)
                return 0;
            switch (s[i]) {
            case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
                break;
            case 'u':
                if (i + 4 >= n)
                    return 0;
                for (int k = 1; k <= 4; k++)
                    if (!s[i + k] || !strchr("0123456789abcdefABCDEF", s[i + k]))
                        return 0;
                i += 4;
                break;
            default:
                return 0;
            }
        }
        i++;
    }
}

static size_t skip_number(const char *s, size_t n, size_t i)
{
    size_t st = i;
    if (i < n && s[i] == '-')
        i++;
    if (i < n && s[i] == '0')
        i++;
    else if (i < n && s[i] >= '1' && s[i] <= '9')
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
    else
        return 0;
    if (i < n && s[i] == '.') {
        size_t d = ++i;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i == d)
            return 0;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        size_t d = i;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i == d)
            return 0;
    }
    return i > st ? i : 0;
}

/* The member at top level whose key is s[a..b) (quotes included), if wanted. */
static struct jscan_span *wanted(struct jscan_top *t, const char *s, size_t a, size_t b)
{
    size_t k = b - a;
    if (k == 4 && !memcmp(s + a, "\"id\"", 4))
        return &t->id;
    if (k == 8 && !memcmp(s + a, "\"method\"", 8))
        return &t->method;
    if (k == 8 && !memcmp(s + a, "\"params\"", 8))
        return &t->params;
    if (k == 8 && !memcmp(s + a, "\"result\"", 8))
        return &t->result;
    if (k == 7 && !memcmp(s + a, "\"error\"", 7))
        return &t->error;
    if (k == 9 && !memcmp(s + a, "\"jsonrpc\"", 9))
        return &t->jsonrpc;
    return NULL;
}

int jscan_scan(const char *s, size_t n, struct jscan_top *top)
{
    uint64_t stack[JV_MAX_DEPTH / 64];
    int depth = 0;
    struct jscan_span *slot = NULL;     /* the top-level member being read */
    size_t vstart = 0;
    if (top)
        memset(top, 0, sizeof *top);
    size_t i = ws(s, n, 0);
    if (top && i < n)
        top->first = s[i];
    for (;;) {
        /* Expect a value (or, just after an opening bracket, its close). */
        if (i >= n)
            return 0;
        char c = s[i];
        if (depth == 1 && slot)
            vstart = i;
        if (c == '{' || c == '[') {
            if (depth >= JV_MAX_DEPTH)
                return 0;
            if (c == '{')
                stack[depth / 64] |= 1ull << (depth % 64);
            else
                stack[depth / 64] &= ~(1ull << (depth % 64));
            depth++;
            i = ws(s, n, i + 1);
            if (i < n && s[i] == (c == '{' ? '}' : ']')) {
                depth--;
                i++;
                goto after_value;
            }
            if (c == '{')
                goto member;
            continue;
        }
        if (c == '"')
            i = skip_string(s, n, i);
        else if (c == '-' || (c >= '0' && c <= '9'))
            i = skip_number(s, n, i);
        else if (n - i >= 4 && !memcmp(s + i, "true", 4))
            i += 4;
        else if (n - i >= 5 && !memcmp(s + i, "false", 5))
            i += 5;
        else if (n - i >= 4 && !memcmp(s + i, "null", 4))
            i += 4;
        else
            return 0;
        if (!i)
            return 0;
    after_value:
        if (depth == 1 && slot) {
            if (!slot->p) {              /* the first of duplicate keys wins, as in cJSON */
                slot->p = s + vstart;
                slot->n = i - vstart;
            }
            slot = NULL;
        }
        i = ws(s, n, i);
        if (depth == 0)
            return i == n;
        {
            int obj = (stack[(depth - 1) / 64] >> ((depth - 1) % 64)) & 1;
            if (i < n && s[i] == ',') {
                i = ws(s, n, i + 1);
                if (obj)
                    goto member;
                continue;
            }
            if (i < n && s[i] == (obj ? '}' : ']')) {
                depth--;
                i++;
                goto after_value;
            }
            return 0;
        }
    member:
        {
            size_t k = i;
            if (i >= n || s[i] != '"' || !(i = skip_string(s, n, i)))
                return 0;
            if (depth == 1 && top)
                slot = wanted(top, s, k, i);
        }
        i = ws(s, n, i);
        if (i >= n || s[i] != ':')
            return 0;
        i = ws(s, n, i + 1);
    }
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
    if (s[i - 1] == '"') {                        /* a string: find its opening quote */
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
    } else {                                      /* a number */
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
    for (int a = 1; a < k; a++)                   /* by offset: k is tiny */
        for (int b = a; b > 0 && ins[b].at < ins[b - 1].at; b--) {
            struct jscan_insert t = ins[b];
            ins[b] = ins[b - 1];
            ins[b - 1] = t;
        }
    size_t total = n;
    for (int i = 0; i < k; i++)
        total += strlen(ins[i].text);
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
        from = ins[i].at;
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
        i = ws(s, n, 1);                          /* the first element */
    } else {
        size_t e = value_end(s, n, *pos);         /* step over the previous one */
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
    cJSON *v = cJSON_ParseWithLength(tok, i + 1);
    free(tok);
    char *out = cJSON_IsString(v) ? strdup(v->valuestring) : NULL;
    cJSON_Delete(v);
    return out;
}
