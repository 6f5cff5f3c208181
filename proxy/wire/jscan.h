/* jscan.h: find a top-level member of a JSON object without parsing it.
 *
 * The relay must route messages by "id" and "method" without building a
 * tree for every byte that passes. jscan walks the top level of an object,
 * skipping nested values by counting brackets outside strings, and returns
 * the raw bytes of one member's value. It also works on a truncated prefix
 * (the head of an oversize line): a member that ends inside the prefix is
 * found; one that does not is reported absent. */
#ifndef KEEL_JSCAN_H
#define KEEL_JSCAN_H

#include <stddef.h>
#include <stdint.h>

/* 1 and the value's span if the top-level object has member key;
 * 0 if it does not (or the text ends first); -1 if it is not an object. */
int jscan_member(const char *s, size_t n, const char *key, const char **v, size_t *vn);

/* Several members in one pass: out[k] is keys[k]'s value span (p NULL when
 * absent). With head_only, a found value is not scanned: its span runs to the
 * end of s. Returns how many were found, -1 if s is not an object. */
struct jscan_span;
int jscan_members(const char *s, size_t n, const char *const *keys, struct jscan_span *out, int nkeys, int head_only);

/* 1 if the JSON text holds a \u0000 escape inside a string. C strings end at
 * NUL, so such text would be cut short silently; keel refuses it instead. */
int jscan_has_nul_escape(const char *s, size_t n);
/* Each \\u0000 escape inside a string of s[0..n) written over as \\uFFFD
 * (the same length): a string read is then whole, its NUL a replacement
 * character. The count replaced. */
size_t jscan_nul_escapes_replaced(char *s, size_t n);

/* The one definition of JSON keel reads, shared by its two parsers: s[0..n)
 * is one value by jscan's grammar (so nesting at most JSCAN_MAX_DEPTH, which
 * is cJSON's own limit), parsed by cJSON, with each lone surrogate escape
 * (\ud83d alone: what JavaScript's JSON.stringify writes for a cut emoji)
 * read as U+FFFD, the replacement character, as WHATWG decoders do. NULL
 * when s is not one JSON value (or memory ran out). */
#include <cjson/cJSON.h>
cJSON *jscan_parse(const char *s, size_t n);
/* The same for text jscan_scan has already passed (a span of a scanned line). */
cJSON *jscan_parse_valid(const char *s, size_t n);
/* 1 if an object anywhere in v names a member twice (keel's parse keeps the
 * first, a JavaScript client the last: what keel checks would not be what
 * the client reads), 0 if none does, -1 out of memory. */
int jscan_has_dup(const cJSON *v);

/* The top of one message, found while validating it. */
struct jscan_span {
    const char *p; /* NULL when absent */
    size_t n;
};
/* The members of a top-level "result" object the relay reads (MCP's tool
 * result), found on the same pass: the first of each, by its raw name. */
enum { JSCAN_CONTENT, JSCAN_STRUCTURED, JSCAN_IS_ERROR, JSCAN_RESULT_TYPE, JSCAN_META, JSCAN_NRESULT };
struct jscan_top {
    char first; /* '{' for an object, '[' for a batch... */
    struct jscan_span id, method, params, result, error, jsonrpc;
    /* content, structuredContent, isError, resultType, _meta of result when
     * it is an object (p NULL when absent) */
    struct jscan_span rm[JSCAN_NRESULT];
    int dup; /* one of those given twice (or a short top-level key with escapes) */
};

/* Validates s[0..n) as one JSON value, in one pass, and records the raw
 * values of the top-level members id, method, params, result and error.
 * 1 if valid. */
int jscan_scan(const char *s, size_t n, struct jscan_top *top);

/* Validation in pieces, for a message passed on while it arrives: the same
 * grammar as jscan_scan, and the top-level id and jsonrpc values kept (up to
 * 64 bytes) as their bytes go by. */
#define JSCAN_MAX_DEPTH 1000 /* = CJSON_NESTING_LIMIT: both parsers take the same */
enum { JSCAN_ID, JSCAN_METHOD, JSCAN_PARAMS, JSCAN_RESULT, JSCAN_ERROR, JSCAN_JSONRPC, JSCAN_NSLOTS };
struct jstream_slot {
    size_t start, end; /* offsets of the value from the first byte fed */
    unsigned char present; /* its value has started */
    unsigned char cut; /* raw holds only the first bytes */
    unsigned char rawn;
    char raw[64]; /* the value's bytes (id and jsonrpc only) */
};
struct jstream {
    uint64_t stack[(JSCAN_MAX_DEPTH + 63) / 64]; /* open containers, 1 = object */
    int depth;
    unsigned char st, sub, inkey, keyn;
    unsigned char trailing; /* the error was more text after a whole value */
    unsigned char dup; /* a kept top-level member given twice */
    const char *lit;
    size_t off; /* bytes fed so far */
    size_t cap_from, key_from; /* within the piece being fed */
    int slot, next_slot; /* the top-level member being read */
    char first; /* the value's first byte */
    char key[24];
    struct jstream_slot top[JSCAN_NSLOTS];
    unsigned char in_result; /* inside the top-level "result" object */
    unsigned char result_obj, result_any; /* "result" is an object; it has a member */
    signed char rm_slot, rm_next; /* the member of it being read, or -1 */
    struct {
        size_t start, end; /* end 0 while it is being read */
        unsigned char present;
        unsigned char items; /* an array or object member holding something */
        char first; /* its first byte */
    } rm[JSCAN_NRESULT];
};
void jstream_init(struct jstream *j);
/* Feeds the next n bytes. 0 while they are valid so far (*used = n); -1 at
 * the first byte that cannot be JSON (*used = its index). */
int jstream_feed(struct jstream *j, const char *s, size_t n, size_t *used);
/* 1 when what was fed is one complete value (whitespace after it allowed). */
int jstream_end(const struct jstream *j);
/* The top of a value jstream_end found complete, s being its first byte fed
 * (as jscan_scan gives it). */
void jstream_top(const struct jstream *j, const char *s, struct jscan_top *top);

/* 1 if s[0..n) is exactly one valid JSON value (RFC 8259), whitespace around
 * it allowed; nesting deeper than 4096 counts as invalid. No allocation. */
int jscan_valid(const char *s, size_t n);

/* Iterates the elements of the array s[0..n) (s[0] == '['): *pos starts at 0.
 * 1 and where the next element starts, or 0 at the end. An element is
 * scanned over only when the next one is asked for. */
int jscan_array_next(const char *s, size_t n, size_t *pos, const char **v);

/* Where the value starting at s[at] ends (one past its last byte), or 0 if
 * none starts there. */
size_t jscan_value_end(const char *s, size_t n, size_t at);

/* Iterates the members of the object s[0..n) (s[0] == '{'): *pos starts at 0.
 * 1 with the raw key (quotes included) and value spans, or 0 at the end (or
 * where the object stops being readable). */
int jscan_object_next(const char *s, size_t n, size_t *pos, struct jscan_span *key, struct jscan_span *val);

/* The decoded text of the JSON string starting at raw (raw[0] == '"',
 * raw[0..rn) readable), reading at most max_bytes of it: a long string is
 * cut, never mid-escape; the cut may split a UTF-8 character, which the caller
 * trims. NULL when it is not a string. The text is followed by JSCAN_PAD zero
 * bytes past its NUL, so a rule can match it as it is (RULE_PAD, rules.h). */
#define JSCAN_PAD 16
char *jscan_string_prefix(const char *raw, size_t rn, size_t max_bytes);

/* The id of a message whose last member is "id" (as the MCP SDKs write
 * responses), read from the tail of a line: 1 and its raw span, or 0. */
int jscan_tail_id(const char *s, size_t n, const char **v, size_t *vn);

/* 1 if the message's top is a JSON-RPC 2.0 message: "jsonrpc":"2.0", and a
 * method, or an id with a result or an error. */
int jscan_is_jsonrpc(const struct jscan_top *top);

/* Text inserted at a byte offset of a line. */
struct jscan_insert {
    size_t at;
    const char *text;
    size_t del; /* bytes of s at `at` the text replaces (0: an insertion) */
};
/* A new NUL-terminated copy of s with the insertions and replacements (in any
 * order; their spans must not overlap) made. */
char *jscan_splice(const char *s, size_t n, struct jscan_insert *ins, int k, size_t *out_n);

#endif
