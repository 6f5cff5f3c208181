/* cfgjson.h: a client's JSON configuration, read strictly and edited in place.
 *
 * keel install edits JSON by splicing text into the file's own bytes; this
 * is what it stands on. cfgjson_read checks the whole file before anything
 * is touched: one JSON object, no member given twice at any depth (a client
 * reads the last, an editor would change the first), comments only where the
 * client itself takes them (Gemini CLI), and a line and column for anything
 * wrong. Comments are blanked to spaces in a copy, so offsets found in the
 * copy are offsets in the file and the comments stay where they were. */
#ifndef KEEL_CFGJSON_H
#define KEEL_CFGJSON_H

#include <cjson/cJSON.h>
#include <stddef.h>

struct cfgjson {
    char *scan; /* the text, comments blanked: what offsets refer to */
    size_t n;
    cJSON *tree; /* the whole document */
};

/* 0, or -1 with a sentence in why (line and column included). */
int cfgjson_read(struct cfgjson *d, const char *text, size_t n, int comments, char *why, size_t whyn);
void cfgjson_free(struct cfgjson *d);

/* The value of member key in the object at s[at..] (offsets into d->scan):
 * 1 with its span and the key's, 0 when there is none, -1 out of memory. */
struct cfgjson_member {
    size_t key_at, key_end, at, end;
};
int cfgjson_member(const struct cfgjson *d, size_t obj_at, const char *key, struct cfgjson_member *m);

/* The elements (arrays) or members' values (objects) of the container at
 * obj_at: up to max spans into at/end (keys into key_at for objects).
 * Returns how many there are (may be more than max). */
int cfgjson_items(const struct cfgjson *d, size_t at, struct cfgjson_member *out, int max);

/* Where the value at `at` ends. */
size_t cfgjson_end(const struct cfgjson *d, size_t at);

/* Spans of string values that may be secrets (members of env, headers and
 * their kin at any depth, members named like a token or password, command
 * line words after --token and the like), for a printed diff to mask. */
struct cfg_span {
    size_t at, end;
};
int cfgjson_secrets(const struct cfgjson *d, struct cfg_span *out, int max);

/* 1 if a and b hold the same data: types, numbers by value, strings (and
 * raw values) by bytes, arrays element by element, objects member by member
 * whatever their order (keys are unique: cfgjson_read refuses twice-given
 * ones): in the order they stand while their keys agree, the rest sorted by
 * key, so each pair is compared once and an object of n members costs n log
 * n, not n squared (cJSON_Compare compares each object pair twice over,
 * which doubles at every level of nesting). 1 equal, 0 not, -1 out of
 * memory. */
int cfg_json_equal(const cJSON *a, const cJSON *b);

/* 1 if a member or argument named name holds secrets ("env", "headers",
 * "api_key", "--token"...). Shared with the TOML side. */
int cfg_secret_name(const char *name, size_t n);
/* 1 when a string's text s[0..n) looks like a credential wherever it stands:
 * a known token prefix, an Authorization value (Bearer, Basic, Token), a
 * secret name then = or : and a value, a URL with a password in it. */
int cfg_secret_text(const char *s, size_t n);
/* 1 for --header and -H, whose next argument is a header (and its value may
 * be a credential). */
int cfg_header_flag(const char *s, size_t n);

#endif
