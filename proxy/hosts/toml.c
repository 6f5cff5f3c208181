/* toml.c: a strict TOML 1.0 reader (see toml.h).
 *
 * One pass over the bytes with a cursor; statements are line by line, values
 * recursive (bounded by TOML_MAX_DEPTH). Members are found through one hash
 * table for the whole document, keyed by (table, name), so a table of a
 * hundred thousand keys costs no more per key than one of ten. Errors carry
 * the offset where they were seen; line and column are worked out once, at
 * the end. */
#include "tomlint.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistr.h>

struct slot {
    const struct toml_node *table;
    struct toml_node *node;
};

/* --- positions ----------------------------------------------------------------- */

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
        tl_fail(p, p->pos, "out of memory");
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
        return tl_fail(p, p->pos, "out of memory");
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

/* --- values -------------------------------------------------------------------- */

static int value(struct parser *p, struct toml_node *x);
static int keyval(struct parser *p, struct toml_node *table, int in_inline, struct toml_node **made);

static void freeze(struct toml_node *x)
{
    x->frozen = 1; /* depth is bounded by TOML_MAX_DEPTH */
    for (struct toml_node *c = x->first; c; c = c->next)
        freeze(c);
}

static int array(struct parser *p, struct toml_node *x)
{
    x->type = TOML_ARRAY;
    p->pos++;
    for (;;) {
        if (tl_skip_ws_nl(p) < 0)
            return -1;
        if (tl_peek(p, 0) == ']') {
            p->pos++;
            return 0;
        }
        struct toml_node *e = node_new(p, TOML_STRING);
        if (!e)
            return -1;
        append(x, e);
        if (value(p, e) < 0)
            return -1;
        if (tl_skip_ws_nl(p) < 0)
            return -1;
        if (tl_peek(p, 0) == ',') {
            p->pos++;
            continue;
        }
        if (tl_peek(p, 0) == ']') {
            p->pos++;
            return 0;
        }
        return tl_fail(p, p->pos, tl_at_end(p) ? "an array that never ends" : "a comma or ] was expected in the array");
    }
}

static int inline_table(struct parser *p, struct toml_node *x)
{
    x->type = TOML_TABLE;
    x->how = TOML_DOTTED; /* its own dotted keys may extend what they make inside it */
    p->pos++;
    tl_skip_ws(p);
    if (tl_peek(p, 0) == '}') {
        p->pos++;
        return 0;
    }
    for (;;) {
        if (keyval(p, x, 1, NULL) < 0)
            return -1;
        tl_skip_ws(p);
        if (tl_peek(p, 0) == ',') {
            p->pos++;
            tl_skip_ws(p);
            if (tl_peek(p, 0) == '}')
                return tl_fail(p, p->pos, "a comma before the } of an inline table");
            continue;
        }
        if (tl_peek(p, 0) == '}') {
            p->pos++;
            return 0;
        }
        return tl_fail(p, p->pos,
                       tl_at_end(p) ? "an inline table that never ends"
                                    : "a comma or } was expected (an inline table stays on one line)");
    }
}

static int value(struct parser *p, struct toml_node *x)
{
    if (++p->depth > TOML_MAX_DEPTH) {
        p->depth--;
        return tl_fail(p, p->pos, "values nested deeper than %d", TOML_MAX_DEPTH);
    }
    x->at = p->pos;
    int c = tl_peek(p, 0), rc;
    if (c == '"' || c == '\'') {
        struct buf b = {0};
        x->type = TOML_STRING;
        rc = tl_string(p, &b, 1);
        if (rc == 0 && !b.p)
            rc = tl_buf_add(p, &b, "", 0);
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
        while (!tl_at_end(p) &&
               (tl_bare_char(tl_peek(p, 0)) || tl_peek(p, 0) == '+' || tl_peek(p, 0) == '.' || tl_peek(p, 0) == ':'))
            p->pos++;
        /* A date and a time may be split by one space. */
        if (p->pos - at == 10 && tl_peek(p, 0) == ' ' && tl_date_part(p->s + at, 10) && tl_is_dec(tl_peek(p, 1)) &&
            tl_is_dec(tl_peek(p, 2)) && tl_peek(p, 3) == ':') {
            p->pos++;
            while (
                !tl_at_end(p) &&
                (tl_bare_char(tl_peek(p, 0)) || tl_peek(p, 0) == '+' || tl_peek(p, 0) == '.' || tl_peek(p, 0) == ':'))
                p->pos++;
        }
        rc = p->pos == at
            ? tl_fail(p, at,
                      tl_at_end(p) || tl_peek(p, 0) == '\n' || tl_peek(p, 0) == '\r'
                          ? "a value was expected after ="
                          : "not a valid value (a number, true, false, a date, a string, an array or an inline table)")
            : tl_scalar(p, x, p->s + at, p->pos - at, at);
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
    tl_skip_ws(p);
    key_at = p->pos;
    if (tl_key(p, &k) < 0)
        return -1;
    if (tl_peek(p, 0) != '=') {
        tl_key_free(&k);
        return tl_fail(p, p->pos, "= was expected after the key");
    }
    p->pos++;
    tl_skip_ws(p);
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
            char *name = tl_key_text(&k, i + 1);
            tl_fail(p, k.at[i], "the key %s is already defined%s", name ? name : "",
                    c->type == TOML_TABLE ? " as a table (a dotted key cannot add to it here)" : "");
            free(name);
            break;
        }
        t = c;
    }
    if (p->failed) {
        tl_key_free(&k);
        return -1;
    }
    int last = k.n - 1;
    if (map_find(p, t, k.part[last], k.len[last])) {
        char *name = tl_key_text(&k, k.n);
        tl_fail(p, k.at[last], "the key %s is defined twice", name ? name : "");
        free(name);
        tl_key_free(&k);
        return -1;
    }
    struct toml_node *x = node_new(p, TOML_STRING);
    if (!x) {
        tl_key_free(&k);
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
    tl_key_free(&k);
    if (add_member(p, t, x, part, plen) < 0) {
        free(x);
        return -1;
    }
    if (made)
        *made = x;
    int parts = k_n_parts;
    if (p->base + p->depth + parts > TOML_MAX_DEPTH)
        return tl_fail(p, key_at, "tables nested deeper than %d", TOML_MAX_DEPTH);
    p->depth += parts;
    int rc = value(p, x);
    p->depth -= parts;
    return rc;
}

static int header(struct parser *p, struct toml_node **current)
{
    size_t at = p->pos;
    int aot = tl_peek(p, 1) == '[';
    p->pos += aot ? 2 : 1;
    struct key k;
    if (tl_key(p, &k) < 0)
        return -1;
    if (tl_peek(p, 0) != ']' || (aot && tl_peek(p, 1) != ']')) {
        tl_key_free(&k);
        return tl_fail(p, p->pos,
                       aot ? "]] was expected to close the [[table]] header"
                           : "] was expected to close the [table] header");
    }
    p->pos += aot ? 2 : 1;
    int k_parts = k.n + aot;
    if (k.n > TOML_MAX_DEPTH) {
        tl_key_free(&k);
        return tl_fail(p, at, "tables nested deeper than %d", TOML_MAX_DEPTH);
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
                name = tl_key_text(&k, i + 1);
                tl_fail(p, at, "[[%s]]: the key is already defined, not as an array of tables", name ? name : "");
                free(name);
                break;
            }
            t = c;
            continue;
        } else if (c && final) {
            if (c->type != TOML_TABLE || c->how != TOML_IMPLICIT || c->frozen) {
                name = tl_key_text(&k, i + 1);
                tl_fail(p, at, "the table [%s] is defined twice (or its key is already a value)", name ? name : "");
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
                name = tl_key_text(&k, i + 1);
                tl_fail(p, k.at[i], "%s is a value, so a [table] cannot add to it", name ? name : "");
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
    tl_key_free(&k);
    if (p->failed)
        return -1;
    if (aot) { /* a new element of the array */
        t->end = p->pos; /* the array's span: its first [[header]] to its last */
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
    if (n >= 3 && !memcmp(s, "\xEF\xBB\xBF", 3)) {
        err->line = err->column = 1;
        snprintf(err->message, sizeof err->message,
                 "the file starts with a byte-order mark (U+FEFF), which TOML does not allow: save it as UTF-8 "
                 "without one");
        return NULL;
    }
    p.root = node_new(&p, TOML_TABLE);
    struct toml_node *current = p.root;
    if (p.root)
        p.root->how = TOML_HEADER;
    while (!p.failed && !tl_at_end(&p)) {
        tl_skip_ws(&p);
        int c = tl_peek(&p, 0);
        struct toml_node *made = NULL;
        if (c == '[') {
            if (header(&p, &current) < 0)
                break;
        } else if (c != '#' && c != '\n' && c != '\r' && c != -1) {
            if (keyval(&p, current, 0, &made) < 0)
                break;
        }
        if (tl_end_of_line(&p) < 0)
            break;
        if (made)
            made->line_end = p.pos; /* deleting the key/value removes its line */
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
    case TOML_STRING:
        return "string";
    case TOML_INTEGER:
        return "integer";
    case TOML_FLOAT:
        return "float";
    case TOML_BOOL:
        return "bool";
    case TOML_DATETIME:
        return "datetime";
    case TOML_DATETIME_LOCAL:
        return "datetime-local";
    case TOML_DATE_LOCAL:
        return "date-local";
    case TOML_TIME_LOCAL:
        return "time-local";
    default:
        return "";
    }
}

static cJSON *scalar_json(const struct toml_node *x, int tagged)
{
    if (tagged) {
        cJSON *o = cJSON_CreateObject();
        if (o &&
            (!cJSON_AddStringToObject(o, "type", type_name(x->type)) ||
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
    snprintf(raw, n, "%c:%s",
             x->type == TOML_INTEGER     ? 'i'
                 : x->type == TOML_FLOAT ? 'f'
                                         : 'd',
             x->text ? x->text : "");
    cJSON *r = cJSON_CreateString(raw);
    free(raw);
    if (r)
        r->type = cJSON_Raw; /* never printed: compared only */
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
