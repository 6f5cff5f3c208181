/* toml.h: a strict TOML 1.0 reader that remembers where everything is.
 *
 * keel install edits Codex's config.toml by splicing text into the file's
 * own bytes, so it needs more than values: the byte span of every value and
 * key, the line each key/value stands on, and whether a member sits inside
 * an inline table (edited with commas) or in a table's body (edited by
 * lines). Nothing is guessed from lines: the whole document is parsed, every
 * rule of TOML 1.0 enforced (UTF-8, escapes, number and date grammar, keys
 * defined once, tables defined once, inline tables closed for good), and a
 * document that breaks one is refused with its line and column. The same
 * tree, as cJSON, is what an edit is checked against: the parsed result must
 * equal the parsed original plus exactly keel's change. */
#ifndef KEEL_TOML_H
#define KEEL_TOML_H

#include <cjson/cJSON.h>
#include <stddef.h>

enum toml_type {
    TOML_TABLE,
    TOML_ARRAY,
    TOML_STRING,
    TOML_INTEGER,
    TOML_FLOAT,
    TOML_BOOL,
    TOML_DATETIME,
    TOML_DATETIME_LOCAL,
    TOML_DATE_LOCAL,
    TOML_TIME_LOCAL
};

/* How a table came to be: it decides what may extend it later. */
enum toml_how {
    TOML_VALUE, /* not a table, or an inline table's member */
    TOML_IMPLICIT, /* named on the way to a [header]'s table */
    TOML_HEADER, /* [header] or an element of [[header]] */
    TOML_DOTTED, /* created by a dotted key (a.b = 1) */
};

#define TOML_MAX_DEPTH 128 /* tables, arrays and inline tables inside each other */

struct toml_node {
    enum toml_type type;
    unsigned char how; /* enum toml_how */
    unsigned char frozen; /* an inline table or a static array, or inside one */
    unsigned char aot; /* an array made by [[header]] */
    unsigned char in_inline; /* a member of an inline table: edited with commas */
    char *key; /* its name in its table; NULL for array elements */
    size_t key_n;
    char *text; /* a string's decoded bytes; other scalars' canonical text */
    size_t text_n;
    /* Byte offsets in the document. A table made implicitly has no text. */
    size_t at, end; /* the value ([header] line for a header table) */
    size_t key_at, key_end; /* the key of its key/value as written (dotted: whole) */
    size_t last_key_at; /* where the key's last part starts */
    size_t line_at, line_end; /* the key/value's line(s): start of line, past its newline */
    struct toml_node *parent, *first, *last, *next;
    size_t nkids;
};

struct toml_error {
    int line, column; /* 1-based; column in characters */
    char message[200];
};

/* The document s[0..n) as a tree whose root is a table; NULL with err filled
 * when it is not TOML 1.0 (or memory ran out: line 0). */
struct toml_node *toml_parse(const char *s, size_t n, struct toml_error *err);
void toml_free(struct toml_node *root);

/* The member key of table t, or NULL. */
struct toml_node *toml_get(const struct toml_node *t, const char *key);

/* The tree as cJSON. Plain: tables are objects, arrays arrays, strings and
 * booleans as themselves, other scalars raw strings tagged with their type
 * ("i:42", "f:1.5", "d:1979-05-27T07:32:00Z"...), so two documents compare
 * equal exactly when they hold the same data. Tagged: toml-test's form, every
 * scalar {"type": T, "value": V}. NULL when memory ran out. */
cJSON *toml_to_json(const struct toml_node *n, int tagged);

/* The 1-based line of byte offset at in s. */
int toml_line_of(const char *s, size_t n, size_t at);

#endif
