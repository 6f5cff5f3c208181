/* cfgjson.c: strict reading of a client's JSON configuration (see cfgjson.h). */
#include "cfgjson.h"

#include "jscan.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static void where(const char *s, size_t at, int *line, int *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < at; i++) {
        if (s[i] == '\n') {
            (*line)++;
            *col = 1;
        } else if (((unsigned char)s[i] & 0xC0) != 0x80) {
            (*col)++;
        }
    }
}

static int fail_at(const char *s, size_t at, char *why, size_t whyn, const char *what)
{
    int line, col;
    where(s, at, &line, &col);
    snprintf(why, whyn, "line %d, column %d: %s", line, col, what);
    return -1;
}

/* Blanks // and block comments outside strings (newlines kept). With
 * !allowed, the offset of the first comment instead: -1 none, else it. */
static long blank_comments(char *s, size_t n, int allowed, size_t *unterminated)
{
    *unterminated = (size_t)-1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"') {
            for (i++; i < n && s[i] != '"'; i++)
                if (s[i] == '\\')
                    i++;
            continue;
        }
        if (s[i] != '/' || i + 1 >= n || (s[i + 1] != '/' && s[i + 1] != '*'))
            continue;
        if (!allowed)
            return (long)i;
        size_t start = i;
        if (s[i + 1] == '/') {
            while (i < n && s[i] != '\n')
                s[i++] = ' ';
        } else {
            size_t j = i + 2;
            while (j + 1 < n && !(s[j] == '*' && s[j + 1] == '/'))
                j++;
            if (j + 1 >= n) {
                *unterminated = start;
                return -1;
            }
            for (; i < j + 2; i++)
                if (s[i] != '\n')
                    s[i] = ' ';
            i--;
        }
    }
    return -1;
}

/* The deepest nesting of s[0..n); *deep: where it first went past
 * JSCAN_MAX_DEPTH (0 if it never did). */
static int max_depth(const char *s, size_t n, size_t *deep)
{
    int d = 0, m = 0;
    *deep = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"') {
            for (i++; i < n && s[i] != '"'; i++)
                if (s[i] == '\\')
                    i++;
        } else if (s[i] == '{' || s[i] == '[') {
            if (++d > m)
                m = d;
            if (d == JSCAN_MAX_DEPTH + 1 && !*deep)
                *deep = i;
        } else if (s[i] == '}' || s[i] == ']') {
            d--;
        }
    }
    return m;
}

/* Why the text is not JSON, at the place a parser stopped. */
static int explain(const struct cfgjson *d, char *why, size_t whyn)
{
    const char *end = NULL;
    cJSON *t = cJSON_ParseWithLengthOpts(d->scan, d->n, &end, 0);
    cJSON_Delete(t);
    size_t at = end && end >= d->scan && end <= d->scan + d->n ? (size_t)(end - d->scan) : 0;
    size_t deep;
    if (max_depth(d->scan, d->n, &deep) > JSCAN_MAX_DEPTH) /* said where it went past the limit */
        return fail_at(d->scan, deep, why, whyn, "nested deeper than 1000 levels, more than keel reads");
    if (jscan_has_nul_escape(d->scan, d->n))
        return fail_at(d->scan, 0, why, whyn, "a string holds \\u0000, which keel does not edit");
    for (size_t i = 0; i < d->n; i++) /* the parser says where it stopped, not where the string went wrong */
        if (d->scan[i] == '"')
            for (i++; i < d->n && d->scan[i] != '"'; i++) {
                if (d->scan[i] == '\\')
                    i++;
                else if ((unsigned char)d->scan[i] < 0x20)
                    return fail_at(d->scan, i, why, whyn,
                                   d->scan[i] == '\t'       ? "a tab inside a string, which JSON writes as \\t"
                                       : d->scan[i] == '\n' ? "a line break inside a string, which JSON writes as \\n"
                                                            : "a control character inside a string, which JSON "
                                                              "writes as \\u00XX");
            }
    for (size_t c = at > 0 ? at - 1 : 0; c <= at && c < d->n; c++) { /* the parser may stop past it */
        size_t p = c;
        while (p > 0 && strchr(" \t\r\n", d->scan[p - 1]))
            p--;
        if ((d->scan[c] == '}' || d->scan[c] == ']') && p > 0 && d->scan[p - 1] == ',')
            return fail_at(d->scan, p - 1, why, whyn, "a comma before a closing bracket, which JSON does not allow");
    }
    if (at >= d->n)
        return fail_at(d->scan, d->n, why, whyn, "the text ends before the JSON does");
    return fail_at(d->scan, at, why, whyn, "not valid JSON here");
}

/* --- walking ------------------------------------------------------------------ */

struct keyref {
    char *key;
    size_t at;
};

static int by_key(const void *a, const void *b)
{
    const struct keyref *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : (x->at > y->at) - (x->at < y->at);
}

size_t cfgjson_end(const struct cfgjson *d, size_t at)
{
    return jscan_value_end(d->scan, d->n, at);
}

/* No object anywhere under at holds a key twice. */
static int no_duplicates(const struct cfgjson *d, size_t at, char *why, size_t whyn)
{
    char c = d->scan[at];
    if (c != '{' && c != '[')
        return 0;
    size_t end = cfgjson_end(d, at), pos = 0;
    const char *s = d->scan + at;
    if (c == '[') {
        const char *e;
        while (jscan_array_next(s, end - at, &pos, &e))
            if (no_duplicates(d, (size_t)(e - d->scan), why, whyn) < 0)
                return -1;
        return 0;
    }
    struct keyref *keys = NULL;
    size_t k = 0, cap = 0;
    struct jscan_span ks, vs;
    int rc = 0;
    while (rc == 0 && jscan_object_next(s, end - at, &pos, &ks, &vs)) {
        if (k == cap) {
            cap = cap ? cap * 2 : 16;
            struct keyref *nk = realloc(keys, cap * sizeof *nk);
            if (!nk) {
                rc = -1;
                snprintf(why, whyn, "out of memory");
                break;
            }
            keys = nk;
        }
        keys[k].key = jscan_string_prefix(ks.p, ks.n, ks.n);
        keys[k].at = (size_t)(ks.p - d->scan);
        if (!keys[k].key) {
            rc = -1;
            snprintf(why, whyn, "out of memory");
            break;
        }
        k++;
        rc = no_duplicates(d, (size_t)(vs.p - d->scan), why, whyn);
    }
    if (rc == 0 && k > 1) {
        qsort(keys, k, sizeof *keys, by_key);
        for (size_t i = 1; i < k && rc == 0; i++) {
            if (strcmp(keys[i - 1].key, keys[i].key))
                continue;
            int l1, l2, col;
            where(d->scan, keys[i - 1].at, &l1, &col);
            where(d->scan, keys[i].at, &l2, &col);
            char what[200];
            snprintf(what, sizeof what,
                     "the key \"%.60s\" is given twice in one object (lines %d and %d); the "
                     "client reads the last one: remove one of them",
                     keys[i].key, l1, l2);
            rc = fail_at(d->scan, keys[i].at, why, whyn, what);
        }
    }
    for (size_t i = 0; i < k; i++)
        free(keys[i].key);
    free(keys);
    return rc;
}

int cfgjson_read(struct cfgjson *d, const char *text, size_t n, int comments, char *why, size_t whyn)
{
    memset(d, 0, sizeof *d);
    const char *nul = memchr(text, '\0', n);
    if (nul)
        return fail_at(text, (size_t)(nul - text), why, whyn, "a NUL byte, which no client's configuration holds");
    if (n >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3))
        return fail_at(text, 0, why, whyn,
                       "the file starts with a byte-order mark (U+FEFF), which JSON does not "
                       "allow: save it as UTF-8 without one");
    if (!(d->scan = malloc(n + 1))) {
        snprintf(why, whyn, "out of memory");
        return -1;
    }
    memcpy(d->scan, text, n);
    d->scan[n] = '\0';
    d->n = n;
    size_t open;
    long c = blank_comments(d->scan, n, comments, &open);
    int rc = -1;
    if (open != (size_t)-1)
        rc = fail_at(text, open, why, whyn, "a comment that never ends");
    else if (c >= 0)
        rc = fail_at(text, (size_t)c, why, whyn,
                     "a comment: this client reads the file as plain JSON, without comments");
    else if (!(d->tree = jscan_parse(d->scan, n)))
        rc = explain(d, why, whyn);
    else if (!cJSON_IsObject(d->tree))
        rc = fail_at(text, 0, why, whyn, "the top level is not an object ({ ... })");
    else {
        size_t at = 0;
        while (at < n && strchr(" \t\r\n", d->scan[at]))
            at++;
        rc = no_duplicates(d, at, why, whyn);
    }
    if (rc < 0)
        cfgjson_free(d);
    return rc;
}

void cfgjson_free(struct cfgjson *d)
{
    free(d->scan);
    cJSON_Delete(d->tree);
    memset(d, 0, sizeof *d);
}

int cfgjson_items(const struct cfgjson *d, size_t at, struct cfgjson_member *out, int max)
{
    char c = d->scan[at];
    size_t end = cfgjson_end(d, at), pos = 0;
    const char *s = d->scan + at;
    int k = 0;
    if (c == '[') {
        const char *e;
        while (jscan_array_next(s, end - at, &pos, &e)) {
            if (k < max) {
                out[k].key_at = out[k].key_end = 0;
                out[k].at = (size_t)(e - d->scan);
                out[k].end = cfgjson_end(d, out[k].at);
            }
            k++;
        }
    } else if (c == '{') {
        struct jscan_span ks, vs;
        while (jscan_object_next(s, end - at, &pos, &ks, &vs)) {
            if (k < max)
                out[k] = (struct cfgjson_member){(size_t)(ks.p - d->scan), (size_t)(ks.p - d->scan) + ks.n,
                                                 (size_t)(vs.p - d->scan), (size_t)(vs.p - d->scan) + vs.n};
            k++;
        }
    }
    return k;
}

int cfgjson_member(const struct cfgjson *d, size_t obj_at, const char *key, struct cfgjson_member *m)
{
    if (d->scan[obj_at] != '{')
        return 0;
    size_t end = cfgjson_end(d, obj_at), pos = 0;
    struct jscan_span ks, vs;
    while (jscan_object_next(d->scan + obj_at, end - obj_at, &pos, &ks, &vs)) {
        char *k = jscan_string_prefix(ks.p, ks.n, ks.n); /* the document is valid: NULL is out of memory */
        if (!k)
            return -1;
        int hit = !strcmp(k, key);
        free(k);
        if (hit) {
            *m = (struct cfgjson_member){(size_t)(ks.p - d->scan), (size_t)(ks.p - d->scan) + ks.n,
                                         (size_t)(vs.p - d->scan), (size_t)(vs.p - d->scan) + vs.n};
            return 1;
        }
    }
    return 0;
}

/* --- secrets ------------------------------------------------------------------ */

int cfg_header_flag(const char *s, size_t n)
{
    return (n == 8 && !memcmp(s, "--header", 8)) || (n == 2 && !memcmp(s, "-H", 2));
}

int cfg_secret_name(const char *name, size_t n)
{
    char low[64];
    while (n && *name == '-')
        name++, n--;
    if (!n || n >= sizeof low)
        return 0;
    for (size_t i = 0; i < n; i++)
        low[i] = (char)tolower((unsigned char)name[i]);
    low[n] = '\0';
    static const char *const whole[] = {"env",         "envs",      "headers", "http_headers", "env_http_headers",
                                        "environment", "auth",      "bearer",  "oauth",        "key",
                                        "sig",         "signature", NULL};
    static const char *const part[] = {"token",   "secret",        "password",   "passwd", "apikey",      "api_key",
                                       "api-key", "authorization", "credential", "cookie", "private_key", "access_key",
                                       NULL};
    for (int i = 0; whole[i]; i++)
        if (!strcmp(low, whole[i]))
            return 1;
    for (int i = 0; part[i]; i++)
        if (strstr(low, part[i]))
            return 1;
    return 0;
}

/* 1 when s[0..n) holds needle (ASCII case aside). */
static int has_ci(const char *s, size_t n, const char *needle)
{
    size_t l = strlen(needle);
    for (size_t i = 0; i + l <= n; i++)
        if (!strncasecmp(s + i, needle, l))
            return 1;
    return 0;
}

/* 1 when s[0..n) holds a run of 32 or more token characters (letters,
 * digits, - and _) with an upper-case letter, a lower-case one and a digit:
 * a key put in a URL's path ("/api/mcp/s/<key>/mcp"), not a word. */
static int random_run(const char *s, size_t n)
{
    size_t run = 0;
    int up = 0, low = 0, dig = 0;
    for (size_t i = 0; i <= n; i++) {
        unsigned char c = i < n ? (unsigned char)s[i] : 0;
        if (isalnum(c) || c == '-' || c == '_') {
            run++;
            up |= isupper(c) != 0, low |= islower(c) != 0, dig |= isdigit(c) != 0;
            continue;
        }
        if (run >= 32 && up && low && dig)
            return 1;
        run = 0, up = low = dig = 0;
    }
    return 0;
}

int cfg_secret_text(const char *s, size_t n)
{
    /* a token's own prefix, at the start or after a character that is no
     * part of a word (a URL's path, a query, "--key=sk-...") */
    static const char *const prefixes[] = {"sk-",    "sk_",   "rk_",   "ghp_",   "gho_",  "ghs_", "github_pat_",
                                           "glpat-", "xoxb-", "xoxp-", "xoxa-",  "xapp-", "AKIA", "AIza",
                                           "ya29.",  "hf_",   "npm_",  "shpat_", "eyJ",   NULL};
    for (size_t at = 0; at < n; at++) {
        if (at && (isalnum((unsigned char)s[at - 1]) || s[at - 1] == '_' || s[at - 1] == '-'))
            continue;
        for (int i = 0; prefixes[i]; i++) {
            size_t l = strlen(prefixes[i]);
            if (n - at > l && !memcmp(s + at, prefixes[i], l))
                return 1;
        }
    }
    if (random_run(s, n))
        return 1;
    /* a query parameter that names a secret ("?key=...", "&access_token=...") */
    for (size_t i = 0; i < n; i++)
        if (s[i] == '?' || s[i] == '&') {
            size_t j = i + 1;
            while (j < n && s[j] != '=' && s[j] != '&' && j - i < 64)
                j++;
            if (j < n && s[j] == '=' && j > i + 1 && cfg_secret_name(s + i + 1, j - i - 1))
                return 1;
        }
    /* an Authorization header's value, wherever it stands ("Authorization:
     * Bearer ...", "--header=Bearer ...") */
    if (has_ci(s, n, "bearer ") || has_ci(s, n, "basic ") || has_ci(s, n, "token "))
        return 1;
    /* a name that says secret, then = or : and its value (--token=abc,
     * "X-Api-Key: abc") */
    for (size_t i = 0; i < n && i < 64; i++)
        if ((s[i] == '=' || s[i] == ':') && i && cfg_secret_name(s, i))
            return 1;
    /* a password in a URL (https://user:pass@host, postgresql://...) */
    const char *sep = NULL;
    for (size_t i = 0; i + 3 <= n && !sep && i < 32; i++) /* a scheme is short */
        if (!memcmp(s + i, "://", 3))
            sep = s + i;
    if (sep) {
        const char *from = sep + 3, *end = s + n, *at = NULL, *colon = NULL;
        for (const char *p = from; p < end && *p != '/' && *p != '?' && *p != '#'; p++) {
            if (*p == '@')
                at = p;
            else if (*p == ':' && !at && !colon)
                colon = p;
        }
        if (at && colon && colon < at)
            return 1;
    }
    return 0;
}

/* A string that looks like a credential wherever it stands (raw: a JSON
 * string with its quotes). */
static int looks_secret(const char *raw, size_t n)
{
    return n >= 2 && raw[0] == '"' && cfg_secret_text(raw + 1, n - 2);
}

static void secrets(const struct cfgjson *d, size_t at, int inside, struct cfg_span *out, int max, int *k)
{
    char c = d->scan[at];
    size_t end = cfgjson_end(d, at);
    if (c == '"') {
        if ((inside || looks_secret(d->scan + at, end - at)) && *k < max)
            out[(*k)++] = (struct cfg_span){at, end};
        return;
    }
    if (c != '{' && c != '[')
        return;
    size_t pos = 0;
    const char *s = d->scan + at;
    if (c == '[') {
        const char *e;
        int after_flag = 0;
        while (jscan_array_next(s, end - at, &pos, &e)) {
            size_t eat = (size_t)(e - d->scan), eend = cfgjson_end(d, eat);
            secrets(d, eat, inside || after_flag, out, max, k);
            after_flag = d->scan[eat] == '"' && d->scan[eat + 1] == '-' &&
                (cfg_secret_name(e + 1, eend - eat - 2) || cfg_header_flag(e + 1, eend - eat - 2));
        }
        return;
    }
    struct jscan_span ks, vs;
    while (jscan_object_next(s, end - at, &pos, &ks, &vs))
        secrets(d, (size_t)(vs.p - d->scan), inside || (ks.n >= 2 && cfg_secret_name(ks.p + 1, ks.n - 2)), out, max, k);
}

int cfgjson_secrets(const struct cfgjson *d, struct cfg_span *out, int max)
{
    int k = 0;
    size_t at = 0;
    while (at < d->n && strchr(" \t\r\n", d->scan[at]))
        at++;
    if (at < d->n)
        secrets(d, at, 0, out, max, &k);
    return k;
}

/* --- comparing trees ---------------------------------------------------------- */

static int by_name(const void *x, const void *y)
{
    return strcmp((*(const cJSON *const *)x)->string, (*(const cJSON *const *)y)->string);
}

/* Members compared in the order they stand while their names agree (the
 * common case: one tree is a copy of the other), the rest sorted by name:
 * time in proportion to n log n, never a lookup per member. */
static int objects_equal(const cJSON *a, const cJSON *b)
{
    const cJSON *x = a->child, *y = b->child;
    for (; x && y && x->string && y->string && !strcmp(x->string, y->string); x = x->next, y = y->next) {
        int eq = cfg_json_equal(x, y);
        if (eq != 1)
            return eq;
    }
    size_t n = 0, m = 0;
    for (const cJSON *i = x; i; i = i->next)
        n++;
    for (const cJSON *i = y; i; i = i->next)
        m++;
    if (n != m)
        return 0;
    if (!n)
        return 1;
    const cJSON **l = malloc(2 * n * sizeof *l), **r = l + n;
    if (!l)
        return -1;
    int ok = 1;
    n = 0;
    for (const cJSON *i = x, *j = y; i && j; i = i->next, j = j->next) {
        ok &= i->string && j->string;
        l[n] = i;
        r[n++] = j;
    }
    if (ok) {
        qsort(l, n, sizeof *l, by_name);
        qsort(r, n, sizeof *r, by_name);
    }
    for (size_t k = 0; ok == 1 && k < n; k++)
        ok = strcmp(l[k]->string, r[k]->string) ? 0 : cfg_json_equal(l[k], r[k]);
    free(l);
    return ok;
}

int cfg_json_equal(const cJSON *a, const cJSON *b)
{
    if (!a || !b || (a->type & 0xFF) != (b->type & 0xFF))
        return 0;
    switch (a->type & 0xFF) {
    case cJSON_False:
    case cJSON_True:
    case cJSON_NULL:
        return 1;
    case cJSON_Number:
        return a->valuedouble == b->valuedouble;
    case cJSON_String:
    case cJSON_Raw:
        return a->valuestring && b->valuestring && !strcmp(a->valuestring, b->valuestring);
    case cJSON_Array: {
        const cJSON *x = a->child, *y = b->child;
        for (; x && y; x = x->next, y = y->next) {
            int eq = cfg_json_equal(x, y);
            if (eq != 1)
                return eq;
        }
        return !x && !y;
    }
    case cJSON_Object: /* keys are unique (a key twice is refused on reading) */
        return objects_equal(a, b);
    default:
        return 0;
    }
}
