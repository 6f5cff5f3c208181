/* tomlint.h: what the two halves of the TOML reader share (see toml.h):
 * toml.c builds the tree (tables, keys defined once, values, statements);
 * tomllex.c reads the tokens (the cursor, strings, keys, numbers, dates)
 * and keeps the first error, with where it was seen. Private to the reader. */
#ifndef KEEL_TOMLINT_H
#define KEEL_TOMLINT_H

#include "toml.h"

#include <stddef.h>
#include <stdint.h>

struct slot;

struct parser {
    const char *s;
    size_t n, pos;
    struct toml_node *root;
    struct slot *map; /* open addressing; size a power of two */
    size_t map_cap, map_used;
    int depth; /* values open inside each other */
    int base; /* parts of the current [table]'s name */
    size_t err_at;
    char err[200];
    int failed;
};

struct buf {
    char *p;
    size_t n, cap;
};

#define KEY_PARTS_MAX TOML_MAX_DEPTH

struct key {
    char *part[KEY_PARTS_MAX];
    size_t len[KEY_PARTS_MAX];
    size_t at[KEY_PARTS_MAX];
    int n;
    size_t end;
};

/* The first error only, with where it was seen: -1, so callers return it. */
__attribute__((format(printf, 3, 4))) int tl_fail(struct parser *p, size_t at, const char *fmt, ...);

int tl_at_end(const struct parser *p);
int tl_peek(const struct parser *p, size_t ahead); /* the byte ahead of the cursor, or -1 */
void tl_skip_ws(struct parser *p);
int tl_newline(struct parser *p); /* LF or CR LF: 1 and past it, or 0 */
int tl_end_of_line(struct parser *p); /* blanks, a comment, a newline or the end */
int tl_skip_ws_nl(struct parser *p); /* blanks, comments and newlines */
int tl_buf_add(struct parser *p, struct buf *b, const char *s, size_t n);
int tl_string(struct parser *p, struct buf *b, int allow_multi); /* any of the four kinds, decoded */
int tl_key(struct parser *p, struct key *k); /* on failure nothing of it stays allocated */
void tl_key_free(struct key *k);
char *tl_key_text(const struct key *k, int upto);
int tl_bare_char(int c);
int tl_is_dec(int c);
size_t tl_date_part(const char *s, size_t n); /* YYYY-MM-DD at s: 10, or 0 */
/* A number, boolean, date or time token s[0..n) (at offset at) into x. */
int tl_scalar(struct parser *p, struct toml_node *x, const char *s, size_t n, size_t at);

#endif
