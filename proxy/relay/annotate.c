/* annotate.c: the overlay's part of routing in keel wrap.
 *
 * A tools/call on its way upstream is shown to the overlay (the loop detector
 * notes its identity); when its result comes back, the result's hash is taken
 * from the raw line and the overlay's advisories are
 * spliced into the result line: a text block appended to content for the
 * person, and the structured advisories under _meta["keel/advisories"].
 * The splice is byte surgery on the line keel received, so every other byte,
 * structuredContent and the original blocks included, is left as it was, and
 * a large result costs two scans and one copy, not a parse and a print. */
#include "relay.h"

#include "jscan.h"
#include "detect.h"
#include "jsonrpc.h"
#include "log.h"
#include "rulefile.h"
#include "submit.h"
#include "text.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistr.h>

/* --- a call's identity, from its raw arguments ------------------------------ */

struct ident {
    uint64_t id, shape; /* the value; the same with free text blanked */
    int free; /* it holds free text */
};

#define IDENT_DEPTH 64 /* deeper than any tool's arguments: counted as one value */

/* The decoded text of the JSON string raw[0..rn): its bytes when it has no
 * escape, else decoded into *dec (freed by the caller). */
static const char *string_of(const char *raw, size_t rn, char **dec, size_t *len)
{
    *dec = NULL;
    if (!memchr(raw + 1, '\\', rn - 2)) {
        *len = rn - 2;
        return raw + 1;
    }
    *dec = jscan_string_prefix(raw, rn, rn);
    *len = *dec ? strlen(*dec) : 0;
    return *dec ? *dec : "";
}

/* One value's canonical hashes: object members combine in any order (their
 * hashes are added), array elements in theirs; a number by its value, so 1,
 * 1.0 and 1e0 are one number; strings decoded, so "A" and "\u0041" are one. */
static struct ident ident_value(const char *v, size_t n, int depth)
{
    struct ident r = {0, 0, 0};
    char *dec;
    size_t len;
    if (depth > IDENT_DEPTH) {
        r.id = r.shape = 0x44656570;
    } else if (v[0] == '"') {
        const char *s = string_of(v, n, &dec, &len);
        r.id = text_hash(s, len, 0x73);
        r.free = loop_free_text(s, len);
        r.shape = r.free ? 0x54657874 : r.id;
        free(dec);
    } else if (v[0] == '{') {
        uint64_t sum[3] = {0, 0, 0}; /* id, shape, members */
        size_t pos = 0;
        struct jscan_span key, val;
        while (jscan_object_next(v, n, &pos, &key, &val)) {
            const char *k = string_of(key.p, key.n, &dec, &len);
            int dropped = (len == 5 && !memcmp(k, "_meta", 5)) || (len == 13 && !memcmp(k, "progressToken", 13));
            uint64_t kh = text_hash(k, len, 0x6b6579);
            free(dec);
            if (dropped)
                continue;
            struct ident m = ident_value(val.p, val.n, depth + 1);
            sum[0] += text_hash(&m.id, sizeof m.id, kh);
            sum[1] += text_hash(&m.shape, sizeof m.shape, kh);
            sum[2]++;
            r.free |= m.free;
        }
        r.id = text_hash(sum, sizeof sum, 0x7b);
        sum[0] = sum[1];
        r.shape = text_hash(sum, sizeof sum, 0x7b);
    } else if (v[0] == '[') {
        uint64_t id = 0x5b, shape = 0x5b;
        size_t pos = 0;
        const char *e;
        while (jscan_array_next(v, n, &pos, &e)) {
            struct ident m = ident_value(e, jscan_value_end(v, n, pos) - pos, depth + 1);
            id = text_hash(&m.id, sizeof m.id, id);
            shape = text_hash(&m.shape, sizeof m.shape, shape);
            r.free |= m.free;
        }
        r.id = id;
        r.shape = shape;
    } else if (v[0] == 't' || v[0] == 'f' || v[0] == 'n') {
        r.id = r.shape = text_hash(v, 1, 0x6c6974);
    } else {
        char b[64];
        if (n < sizeof b) {
            memcpy(b, v, n);
            b[n] = '\0';
            double d = strtod(b, NULL);
            if (d == 0)
                d = 0; /* -0 is 0 */
            r.id = text_hash(&d, sizeof d, 0x6e);
        } else {
            r.id = text_hash(v, n, 0x4e); /* a number too long to be read exactly: its digits */
        }
        r.shape = r.id;
    }
    return r;
}

void relay_identify(const char *tool, size_t tl, const char *args, size_t an, struct loop_call *c)
{
    c->tool = text_hash(tool, tl, 0x746f6f6c);
    struct ident a = args && an ? ident_value(args, an, 0) : (struct ident){0x6e6f6e65, 0x6e6f6e65, 0};
    c->id = text_hash(&a.id, sizeof a.id, c->tool);
    c->shape = text_hash(&a.shape, sizeof a.shape, c->tool);
    if (a.free)
        c->flags |= LOOP_FREE_TEXT;
    else
        c->flags &= ~LOOP_FREE_TEXT;
}

/* A tools/call on its way upstream: the loop detector notes what it is. */
struct call_data *relay_call_started(struct relay *r, const char *params, size_t pn)
{
    static const char *const keys[] = {"name", "arguments"};
    struct jscan_span sp[2];
    if (!params || params[0] != '{' || jscan_members(params, pn, keys, sp, 2, 0) < 1 || !sp[0].p || sp[0].p[0] != '"')
        return NULL;
    char *dec;
    size_t tl;
    const char *tool = string_of(sp[0].p, sp[0].n, &dec, &tl);
    struct call_data *d = calloc(1, sizeof *d + tl + 1);
    if (d) {
        memcpy(d->tool, tool, tl);
        if ((d->watched = overlay_on_call(&r->ov, d->tool, &d->call)))
            relay_identify(d->tool, tl, sp[1].p, sp[1].n, &d->call);
    }
    free(dec);
    return d;
}

void relay_call_data_free(void *p)
{
    free(p);
}

static size_t span_ws(const char *s, size_t i, size_t end)
{
    while (i < end && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n'))
        i++;
    return i;
}

/* A hash of t[0..l) with numbers and ids made one (t is changed): a run of
 * digits, or a hexadecimal id of 8 or more characters (a UUID, a commit),
 * counts as one '#', so "after 3021 ms" and "after 3044 ms" are the same
 * error and two paths that differ only at their end are not. */
static uint64_t norm_hash(char *t, size_t l, uint64_t seed)
{
    size_t w = 0;
    for (size_t i = 0; i < l;) {
        size_t j = i, digits = 0;
        while (j < l && (isxdigit((unsigned char)t[j]) || (t[j] == '-' && j > i)))
            digits += isdigit((unsigned char)t[j++]) != 0;
        int after = j == l || !isalnum((unsigned char)t[j]);
        if (j - i >= 8 && digits && after && (i == 0 || !isalnum((unsigned char)t[i - 1]))) {
            t[w++] = '#';
            i = j;
            continue;
        }
        if (j == i) {
            t[w++] = t[i++];
            continue;
        }
        /* The run is no id: in one pass (a run of hex letters is not read
         * again from each of its letters), its digits made one, and an id
         * may still start after a '-' in it, and end where it ends. */
        while (i < j) {
            if (isdigit((unsigned char)t[i])) {
                while (i < j && isdigit((unsigned char)t[i]))
                    i++, digits--;
                t[w++] = '#';
                continue;
            }
            char c = t[i++];
            t[w++] = c;
            if (c == '-' && i < j && t[i] != '-' && j - i >= 8 && digits && after) {
                t[w++] = '#';
                i = j;
            }
        }
    }
    return text_hash(t, w, seed);
}

/* A hash of a JSON string's whole text (never 0), numbers and ids made one. */
static uint64_t error_hash(const struct jscan_span *raw, uint64_t seed)
{
    char *t = raw && raw->p && raw->p[0] == '"' ? jscan_string_prefix(raw->p, raw->n, raw->n) : NULL;
    uint64_t h = (t ? norm_hash(t, strlen(t), seed) : text_hash("", 0, seed)) | 1;
    free(t);
    return h;
}

/* A failed result's error as the loop compares it (never 0): all it says,
 * every block of content and structuredContent, numbers and ids made one
 * in their first RESULT_HEAD bytes, and byte for byte beyond them (f->rest).
 * 0 when memory runs out: the error is then no error to compare. */
static uint64_t result_error(const struct result_facts *f)
{
    uint64_t h = 0x697345;
    for (int k = 0; k < 2; k++) {
        if (!f->present[k])
            continue;
        if (!f->head[k].p)
            return 0;
        char *t = malloc(f->head[k].n ? f->head[k].n : 1);
        if (!t)
            return 0;
        memcpy(t, f->head[k].p, f->head[k].n);
        h = norm_hash(t, f->head[k].n, h + (uint64_t)k);
        free(t);
        if (f->rest[k])
            h = text_hash(&f->rest[k], sizeof f->rest[k], h);
    }
    return h | 1;
}

/* The outcome of a call, as the loop detector compares it: a hash of what the
 * client gets (content, structuredContent, isError; keel's own additions come
 * later), or of the JSON-RPC error; and, for a failure, of its text. */
static const char *const result_keys[] = {"content", "structuredContent", "isError", "resultType", "_meta"};
#define RESULT_KEYS JSCAN_NRESULT /* in jscan's order */

/* A result object's content, structuredContent, isError, resultType and _meta
 * (spans NULL when absent, or when there is no result object): found while
 * the line was validated (jscan_top.rm), so a large result is not walked again. */
static void result_members(const struct jscan_top *top, struct jscan_span rm[RESULT_KEYS])
{
    memcpy(rm, top->rm, RESULT_KEYS * sizeof *rm);
}

/* A member of a tool result, hashed as the loop detector compares it: the
 * same value whether the member was read whole or in pieces (cut.c). */
#define MEMBER_SEED 0x6d656d626572ULL
#define REST_SEED   0x72657374ULL /* an error's bytes past RESULT_HEAD */

/* The loop detector's view of a result from what was read of its object
 * (f NULL: the result is no object). */
static void outcome_of(const struct result_facts *f, struct loop_call *c)
{
    c->error = 0;
    c->flags &= ~LOOP_EMPTY;
    if (!f) {
        c->result = 0;
        c->flags |= LOOP_EMPTY;
        return;
    }
    uint64_t h = 0x726573756c74;
    for (int k = 0; k < 3; k++)
        if (f->present[k])
            h = text_hash(&f->member[k], sizeof f->member[k], text_hash(result_keys[k], strlen(result_keys[k]), h));
    c->result = h;
    if (!f->has_block && !f->present[1])
        c->flags |= LOOP_EMPTY;
    if (f->is_error)
        c->error = result_error(f);
}

static void outcome(const struct jscan_top *top, const struct jscan_span *sp, struct loop_call *c)
{
    static const char *const err_keys[] = {"code", "message"};
    if (top->result.p && top->result.p[0] == '{') {
        struct result_facts f = {0};
        for (int k = 0; k < 3; k++)
            if ((f.present[k] = sp[k].p != NULL))
                f.member[k] = text_hash_pieces(sp[k].p, sp[k].n, MEMBER_SEED + (uint64_t)k);
        f.has_block = sp[0].p && sp[0].p[0] == '[' && span_ws(sp[0].p, 1, sp[0].n) < sp[0].n - 1;
        f.is_error = sp[2].p && sp[2].n >= 4 && !memcmp(sp[2].p, "true", 4);
        for (int k = 0; k < 2 && f.is_error; k++) /* as a result read in pieces keeps them */
            if (sp[k].p) {
                size_t h = sp[k].n < RESULT_HEAD ? sp[k].n : RESULT_HEAD;
                f.head[k] = (struct jscan_span){sp[k].p, h};
                f.rest[k] = sp[k].n > h ? text_hash_pieces(sp[k].p + h, sp[k].n - h, REST_SEED) | 1 : 0;
            }
        outcome_of(&f, c);
    } else if (top->error.p && top->error.p[0] == '{') {
        struct jscan_span sp[2];
        jscan_members(top->error.p, top->error.n, err_keys, sp, 2, 0);
        c->flags &= ~LOOP_EMPTY;
        c->result = text_hash(top->error.p, top->error.n, 0x6572726f72);
        c->error = error_hash(&sp[1], sp[0].p ? text_hash(sp[0].p, sp[0].n, 0x636f6465) : 0x636f6465);
    } else {
        outcome_of(NULL, c);
    }
}

/* A tool result's resultType (its raw bytes; NULL: none) says the call is
 * over: absent or "complete" (2026-07-28's input_required is not). */
static int call_over(const char *raw, size_t n)
{
    return !raw || (n == 10 && !memcmp(raw, "\"complete\"", 10));
}

void relay_outcome(const struct jscan_top *top, struct loop_call *c)
{
    struct jscan_span rm[RESULT_KEYS];
    result_members(top, rm);
    outcome(top, rm, c);
}

/* The text of a result's text blocks, for a model-backed tool: at most
 * OV_SCAN_MAX characters (the detector's own cap) are decoded, straight from
 * the raw line, so an 8 MiB result costs a scan, not a parse. */
static char *result_text(const struct jscan_span *result)
{
    static const char *const content_key[] = {"content"}, *const block_keys[] = {"type", "text"};
    struct jscan_span c, bk[2];
    const char *b;
    size_t pos = 0, n = 0;
    if (jscan_members(result->p, result->n, content_key, &c, 1, 1) != 1 || c.p[0] != '[')
        return NULL;
    char *out = NULL;
    while (n < (size_t)OV_SCAN_MAX && jscan_array_next(c.p, c.n, &pos, &b)) {
        size_t bn = c.n - (size_t)(b - c.p);
        /* "type" usually comes first; then only the start of "text" is needed. */
        if (b[0] != '{' || jscan_members(b, bn, block_keys, bk, 2, 1) != 2 || bk[0].n < 6 ||
            memcmp(bk[0].p, "\"text\"", 6) || bk[1].p[0] != '"')
            continue;
        char *piece = jscan_string_prefix(bk[1].p, bk[1].n, (size_t)OV_SCAN_MAX * 4);
        if (!piece)
            continue;
        size_t l = strlen(piece), chars = 0, k = 0, room = (size_t)OV_SCAN_MAX - n;
        while (l && !text_valid_utf8(piece, l))
            l--; /* the cut split a character */
        while (k < l && chars < room) { /* whole characters, up to the cap */
            k++;
            while (k < l && ((unsigned char)piece[k] & 0xC0) == 0x80)
                k++;
            chars++;
        }
        char *o = realloc(out, (out ? strlen(out) : 0) + k + 2);
        if (!o) {
            free(piece);
            break;
        }
        if (!out)
            o[0] = '\0';
        out = o;
        size_t have = strlen(out);
        if (have)
            out[have++] = '\n';
        memcpy(out + have, piece, k);
        out[have + k] = '\0';
        n += chars;
        free(piece);
    }
    return out;
}

/* The result line with advisories spliced in, byte surgery only: a text
 * block appended to content and "keel/advisories" added to _meta. Every
 * other byte, structuredContent included, stays as it was. */
char *relay_annotate(const char *line, size_t n, const struct jscan_span *res, const cJSON *adv)
{
    struct jscan_insert ins[2];
    char *text[2] = {NULL, NULL};
    int k = relay_annotation(line, res, NULL, adv, ins, text);
    char *out = k ? jscan_splice(line, n, ins, k, NULL) : NULL;
    free(text[0]);
    free(text[1]);
    return out;
}

/* Where advisories can go in a result object: line offsets. */
struct annot_at {
    size_t r0, r1; /* the result object's braces: r0 its '{', r1 one past its '}' */
    int result_empty;
    int content_given; /* content is there, of any type */
    int content; /* content is an array ... */
    size_t c1; /* ... ending just before c1 */
    int content_empty;
    int meta; /* _meta is given ... */
    int meta_obj; /* ... as an object starting at m0 */
    size_t m0;
    int meta_empty;
    size_t kv0, kvn; /* a "keel/advisories" the server's _meta already holds: its value (kvn 0: none) */
    int at_end; /* new members go last in the result, not first */
};

static int annotation_at(const struct annot_at *a, const cJSON *adv, struct jscan_insert ins[2], char *text[2])
{
    int k = 0;
    char *people = overlay_text(adv), *bj = NULL;
    if (people) {
        cJSON *block = cJSON_CreateObject();
        cJSON_AddStringToObject(block, "type", "text");
        cJSON_AddStringToObject(block, "text", people);
        bj = cJSON_PrintUnformatted(block);
        cJSON_Delete(block);
        free(people);
    }
    /* A result without content gets one. One whose content is no array gets a
     * second only at its start, where a parser keeping the last of two keeps
     * the server's. */
    int new_content = bj && !a->content && !(a->at_end && a->content_given);
    size_t new_at = a->at_end ? a->r1 - 1 : a->r0 + 1; /* where new members go */
    int members = !a->result_empty; /* members before new ones at the end */
    /* At the result's start, _meta comes first: it must precede a new content member. */
    char *aj = cJSON_PrintUnformatted(adv);
    if (aj && a->meta && a->meta_obj &&
        a->kvn) { /* keel's key, given by the server: keel's value in its place, one member */
        if ((text[k] = strdup(aj))) {
            ins[k] = (struct jscan_insert){a->kv0, text[k], a->kvn};
            k++;
        }
    } else if (aj && a->meta && a->meta_obj) {
        size_t l = strlen(aj) + 24;
        if ((text[k] = malloc(l))) {
            snprintf(text[k], l, "\"keel/advisories\":%s%s", aj, a->meta_empty ? "" : ",");
            ins[k] = (struct jscan_insert){a->m0 + 1, text[k], 0};
            k++;
        }
    } else if (aj && !a->meta) {
        size_t l = strlen(aj) + 40;
        if ((text[k] = malloc(l))) {
            if (a->at_end)
                snprintf(text[k], l, "%s\"_meta\":{\"keel/advisories\":%s}", members ? "," : "", aj);
            else
                snprintf(text[k], l, "\"_meta\":{\"keel/advisories\":%s}%s", aj,
                         a->result_empty && !new_content ? "" : ",");
            ins[k] = (struct jscan_insert){new_at, text[k], 0};
            members = 1;
            k++;
        }
    }
    free(aj);
    if (bj && a->content) {
        size_t l = strlen(bj) + 2;
        if ((text[k] = malloc(l))) {
            snprintf(text[k], l, "%s%s", a->content_empty ? "" : ",", bj);
            ins[k] = (struct jscan_insert){a->c1 - 1, text[k], 0};
            k++;
        }
    } else if (new_content) {
        size_t l = strlen(bj) + 16;
        if ((text[k] = malloc(l))) {
            if (a->at_end)
                snprintf(text[k], l, "%s\"content\":[%s]", members ? "," : "", bj);
            else
                snprintf(text[k], l, "\"content\":[%s]%s", bj, a->result_empty ? "" : ",");
            ins[k] = (struct jscan_insert){new_at, text[k], 0};
            k++;
        }
    }
    free(bj);
    return k;
}

int relay_annotation(const char *line, const struct jscan_span *res, const struct jscan_span *known, const cJSON *adv,
                     struct jscan_insert ins[2], char *text[2])
{
    static const char *const keys[] = {"content", "_meta"};
    struct jscan_span sp[2];
    if (known) /* the caller's one pass over the result found them */
        sp[0] = known[0], sp[1] = known[1];
    else
        jscan_members(res->p, res->n, keys, sp, 2, 0); /* one pass over the result */
    struct annot_at a = {0};
    a.r0 = (size_t)(res->p - line);
    a.r1 = a.r0 + res->n;
    a.result_empty = span_ws(line, a.r0 + 1, a.r1) == a.r1 - 1;
    a.content_given = sp[0].p != NULL;
    if ((a.content = sp[0].p && sp[0].p[0] == '[')) {
        size_t c0 = (size_t)(sp[0].p - line);
        a.c1 = c0 + sp[0].n;
        a.content_empty = span_ws(line, c0 + 1, a.c1) == a.c1 - 1;
    }
    if ((a.meta = sp[1].p != NULL) && (a.meta_obj = sp[1].p[0] == '{')) {
        a.m0 = (size_t)(sp[1].p - line);
        a.meta_empty = span_ws(line, a.m0 + 1, a.m0 + sp[1].n) == a.m0 + sp[1].n - 1;
        const char *kv;
        size_t kvn;
        if (jscan_member(sp[1].p, sp[1].n, "keel/advisories", &kv, &kvn) == 1)
            a.kv0 = (size_t)(kv - line), a.kvn = kvn;
    }
    return annotation_at(&a, adv, ins, text);
}

/* A rules advisory: on a result held back, override-once lets the next
 * through; on one noted or changed, the person may quiet the next
 * (override-once) or all of this conversation's (disable-for-session). */
static cJSON *rules_advisory(const char *reason, cJSON *names, int held)
{
    static const char *const tokens[] = {"override-once", "explain-the-match", "disable-for-session"};
    cJSON *a = cJSON_CreateObject();
    cJSON_AddStringToObject(a, "detector", "rules");
    cJSON_AddNumberToObject(a, "confidence", 0.9);
    cJSON_AddStringToObject(a, "reason", reason);
    det_overrides(a, tokens, held ? 2 : 3);
    cJSON_AddItemToObject(
        a, "heuristic", det_heuristic("output_rules", "0.1.0", "keel's YAML output rules (rules/*.yml, --rules DIR)"));
    cJSON_AddItemToObject(a, "rules", names);
    return a;
}

/* A string jscan_string_prefix decoded is matched by the rules as it is. */
_Static_assert(JSCAN_PAD >= RULE_PAD, "jscan_string_prefix pads its text as rule_copy does");

/* 1 when no rule fires on any text block of content (the raw array), so
 * result_rules has nothing to do and need not parse it. Every string under a
 * "text" key of an object element is checked: a superset of what
 * result_rules judges (the first "text" of a block whose type is "text").
 * A string is read as cJSON would decode it: its raw bytes when it has no
 * escapes, else decoded by cJSON (jscan_string_prefix), cut at a NUL as the
 * C string rules_judge gets is. A key written with escapes, or a string that
 * does not decode, answers 0: the full path then decides, as before. */
static int content_quiet(const struct jscan_span *content, const char *tool)
{
    size_t pos = 0;
    const char *b;
    while (jscan_array_next(content->p, content->n, &pos, &b)) {
        if (b[0] != '{')
            continue;
        size_t bn = content->n - (size_t)(b - content->p), mp = 0;
        struct jscan_span k, v;
        while (jscan_object_next(b, bn, &mp, &k, &v)) {
            if (memchr(k.p, '\\', k.n))
                return 0;
            if (k.n == 10 && !memcmp(k.p, "\"resource\"", 10) && v.p[0] == '{')
                return 0; /* an embedded resource's text: read in full */
            if (k.n != 6 || memcmp(k.p, "\"text\"", 6) || v.p[0] != '"')
                continue;
            int quiet;
            if (!memchr(v.p, '\\', v.n)) {
                quiet = rules_quiet(v.p + 1, v.n - 2, RA_TOOL_RESULT, tool);
            } else {
                char *s = jscan_string_prefix(v.p, v.n, v.n);
                if (!s)
                    return 0;
                quiet = rules_quiet(s, strlen(s), RA_TOOL_RESULT, tool);
                free(s);
            }
            if (!quiet)
                return 0;
        }
        size_t end = span_ws(b, mp ? mp : 1, bn);
        if (end >= bn || b[end] != '}')
            return 0; /* not read to its end (the line was validated, so never) */
    }
    return 1;
}

/* 1 when no rule could match structuredContent's text (absent, or its
 * bytes hold nothing a rule looks for; an escape may hide a word: read). */
static int structured_quiet(const struct jscan_span *sc, const char *tool)
{
    return !sc->p || (!memchr(sc->p, '\\', sc->n) && rules_quiet(sc->p, sc->n, RA_TOOL_RESULT, tool));
}

/* s onto buf as a sentence: after a space when buf holds one already, with a
 * full stop when s ends without its own mark ("no bombs" reads "no bombs."). */
static void put_sentence(char *buf, size_t cap, const char *s)
{
    size_t l = strlen(buf), n = s ? strlen(s) : 0;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\n'))
        n--;
    if (!n || l + 1 >= cap)
        return;
    ucs4_t c = 0;
    u8_prev(&c, (const uint8_t *)s + n, (const uint8_t *)s);
    int marked = text_full_stop(c);
    snprintf(buf + l, cap - l, "%s%.*s%s", l ? " " : "", (int)n, s, marked ? "" : ".");
}

/* The string values under v (keys left out), one a line, appended to b;
 * -1 when memory runs out. */
struct sbuf {
    char *p;
    size_t n, cap;
};
static int strings_of(const cJSON *v, struct sbuf *b)
{
    const cJSON *c;
    if (cJSON_IsString(v)) {
        size_t l = strlen(v->valuestring);
        if (b->n + l + 2 > b->cap) {
            size_t cap = b->cap ? b->cap : 256;
            while (cap < b->n + l + 2)
                cap *= 2;
            char *q = realloc(b->p, cap);
            if (!q)
                return -1;
            b->p = q, b->cap = cap;
        }
        if (b->n)
            b->p[b->n++] = '\n';
        memcpy(b->p + b->n, v->valuestring, l + 1);
        b->n += l;
        return 0;
    }
    cJSON_ArrayForEach(c, v)
        if (strings_of(c, b) < 0)
            return -1;
    return 0;
}

/* name added to the array of strings arr unless it is there: 1 added. */
static int add_once(cJSON *arr, const char *name)
{
    const cJSON *x;
    if (!name)
        return 0;
    cJSON_ArrayForEach(x, arr)
        if (!strcmp(cJSON_GetStringValue(x), name))
            return 0;
    cJSON_AddItemToArray(arr, cJSON_CreateString(name));
    return 1;
}

/* The strings of arr as "a, b, c" (malloc'd; NULL out of memory). */
static char *joined(const cJSON *arr)
{
    size_t n = 1;
    const cJSON *x;
    cJSON_ArrayForEach(x, arr)
        n += strlen(cJSON_GetStringValue(x)) + 2;
    char *s = malloc(n);
    if (!s)
        return NULL;
    s[0] = '\0';
    cJSON_ArrayForEach(x, arr) {
        if (s[0])
            strcat(s, ", ");
        strcat(s, cJSON_GetStringValue(x));
    }
    return s;
}

/* Rules on a tool result (keel wrap's hygiene). Returns a replacement line
 * (the result rejected, *held set, or its text blocks rewritten) or NULL,
 * and adds an advisory to *adv saying what was done, unless the person
 * quieted rules here (overlay_rules_speak). */
static char *result_rules(struct relay *r, const char *tool, const char *line, size_t n, const struct jscan_top *top,
                          const struct jscan_span *sp, cJSON **adv, int *held)
{
    *held = 0;
    if (!(r->ov.parts & OV_RULES) || !ruleset_current || n > RULES_MAX_LINE || !top->result.p ||
        top->result.p[0] != '{' || !sp[0].p || sp[0].p[0] != '[' ||
        (content_quiet(&sp[0], tool) && structured_quiet(&sp[1], tool)))
        return NULL;
    cJSON *content = jscan_parse_valid(sp[0].p, sp[0].n), *b;
    cJSON *structured = sp[1].p && sp[1].n <= RULES_MAX_LINE ? jscan_parse_valid(sp[1].p, sp[1].n) : NULL;
    if (jscan_has_dup(content) || jscan_has_dup(structured)) {
        /* keel would judge the first of two texts, a JavaScript client read
         * the last: the result does not go on (the client's request is
         * answered), nor its text into a log */
        cJSON_Delete(content);
        cJSON_Delete(structured);
        log_event(LOG_WARN, "upstream_response_unusable", "reason=a member is given twice bytes=%zu", n);
        *held = 1;
        return jr_reply(top->id.p, top->id.n, "error",
                        jr_error_value(JR_INTERNAL_ERROR,
                                       "the server's answer could not be passed on: a member is given twice",
                                       "UPSTREAM_BAD_RESPONSE"));
    }
    cJSON *rejected = cJSON_CreateArray(), *changed = cJSON_CreateArray(), *noted = cJSON_CreateArray();
    cJSON *where = cJSON_CreateArray(), *skipped = cJSON_CreateArray();
    char guidance[600] = "", found[600] = "", rewrote_why[600] = "";
    int rewrote = 0, block = -1, left = 0;
    /* What the rules read: each text block, each embedded resource's text
     * (a file's or a page's contents), and last the strings of
     * structuredContent (block -1), which is read but never rewritten. */
    struct sbuf sb = {0};
    cJSON *stext = structured && strings_of(structured, &sb) == 0 && sb.n ? cJSON_CreateString(sb.p) : NULL;
    free(sb.p);
    cJSON_Delete(structured);
    int nblocks = cJSON_GetArraySize(content);
    for (b = content ? content->child : NULL;; b = b ? b->next : NULL) {
        cJSON *t;
        if (b) {
            block++;
            const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(b, "type"));
            t = cJSON_GetObjectItemCaseSensitive(b, "text");
            if (type && !strcmp(type, "resource"))
                t = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(b, "resource"), "text");
            else if (!type || strcmp(type, "text"))
                t = NULL;
            if (!cJSON_IsString(t))
                continue;
        } else if (block < nblocks && stext && stext->valuestring[0]) {
            block = nblocks; /* once, after the blocks */
            t = stext;
        } else {
            break;
        }
        int where_block = t == stext ? -1 : block;
        cJSON *j = rules_judge(r->o->profile, t->valuestring, RA_TOOL_RESULT, tool);
        const cJSON *v;
        cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(j, "violations")) {
            if (add_once(rejected, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "rule"))))
                put_sentence(guidance, sizeof guidance,
                             cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "guidance")));
        }
        cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(j, "annotations")) {
            const char *rule = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "rule"));
            const cJSON *spans = cJSON_GetObjectItemCaseSensitive(v, "spans"), *s0 = cJSON_GetArrayItem(spans, 0), *x;
            int nspans = cJSON_GetArraySize(spans);
            if (cJSON_GetObjectItemCaseSensitive(v, "not_applied"))
                left = 1;
            add_once(noted, rule);
            /* Where, as positions only: the matched text stays where it was. */
            cJSON_ArrayForEach(x, spans) {
                cJSON *w = cJSON_CreateObject();
                cJSON_AddStringToObject(w, "rule", rule);
                cJSON_AddNumberToObject(w, "block", where_block);
                cJSON_AddNumberToObject(w, "start", cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(x, "start")));
                cJSON_AddNumberToObject(w, "end", cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(x, "end")));
                cJSON_AddItemToArray(where, w);
            }
            size_t fl = strlen(found);
            snprintf(found + fl, sizeof found - fl, "%sRule %s matched in %s[%d] at bytes %.0f-%.0f%s%.0d%s: %s",
                     fl ? " " : "", rule, where_block < 0 ? "structuredContent" : "content",
                     where_block < 0 ? 0 : block, cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(s0, "start")),
                     cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(s0, "end")), nspans > 1 ? " (and " : "",
                     nspans > 1 ? nspans - 1 : 0, nspans > 1 ? " more)" : "",
                     cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "guidance")));
        }
        /* rules not checked, or not applied, on this block: with why (none:
         * out of budget) */
        static const char *const lists[][2] = {
            {"skipped", NULL}, {"unanswered", "evaluator"}, {"unusable", "replacement"}};
        for (size_t li = 0; li < sizeof lists / sizeof *lists; li++)
            cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(j, lists[li][0])) {
                cJSON *w = cJSON_CreateObject();
                cJSON_AddStringToObject(w, "rule", cJSON_GetStringValue(v));
                cJSON_AddNumberToObject(w, "block", where_block);
                if (lists[li][1])
                    cJSON_AddStringToObject(w, "why", lists[li][1]);
                cJSON_AddItemToArray(skipped, w);
            }
        const cJSON *rw = cJSON_GetObjectItemCaseSensitive(j, "rewritten");
        cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(j, "applied")) {
            if (!add_once(changed, cJSON_GetStringValue(v)))
                continue; /* its guidance is said once, whatever blocks it changed */
            for (int i = 0; i < ruleset_current->n; i++)
                if (!strcmp(ruleset_current->v[i].name, cJSON_GetStringValue(v)))
                    put_sentence(rewrote_why, sizeof rewrote_why, ruleset_current->v[i].guidance);
        }
        if (rw && !sp[1].p) { /* structuredContent must match its schema: never rewritten */
            cJSON_SetValuestring(t, rw->valuestring);
            rewrote = 1;
        }
        cJSON_Delete(j);
        if (!b)
            break;
    }
    cJSON_Delete(stext);
    char *out = NULL, reason[900];
    struct chrono_env env = {{0, 0}, r->o->profile, r->o->state_dir, r->ov.conversation_at, r->ov.conversation};
    kerr e = {0};
    int taken = 0;
    if (cJSON_GetArraySize(rejected) && chrono_now(&env.now, &e) == 0)
        guard_take_once(&env, DET_RULES, &taken, &e);
    if (cJSON_GetArraySize(rejected) && !taken) {
        /* Held back, and said so: an isError result naming the rule, with the way through. */
        char *names = joined(rejected);
        snprintf(reason, sizeof reason,
                 "keel held back this result: rule %s.%s%s If the person wants it anyway, they "
                 "can say override-once (apply_override) and ask again.",
                 names ? names : "", guidance[0] ? " " : "", guidance);
        free(names);
        cJSON *res = cJSON_CreateObject(), *c = cJSON_AddArrayToObject(res, "content"), *blk = cJSON_CreateObject();
        cJSON_AddStringToObject(blk, "type", "text");
        cJSON_AddStringToObject(blk, "text", reason);
        cJSON_AddItemToArray(c, blk);
        cJSON_AddBoolToObject(res, "isError", 1);
        cJSON *advs = cJSON_AddArrayToObject(cJSON_AddObjectToObject(res, "_meta"), "keel/advisories");
        cJSON *ra = rules_advisory(reason, cJSON_Duplicate(rejected, 1), 1);
        overlay_remember(&r->ov, DET_RULES, ra); /* for explain-the-match */
        cJSON_AddItemToArray(advs, ra);
        out = jr_reply(top->id.p, top->id.n, "result", res);
        *held = out != NULL;
        log_event(LOG_INFO, "result_rejected", "rules=%d", cJSON_GetArraySize(rejected));
    } else {
        int n_changed = cJSON_GetArraySize(changed), n_noted = cJSON_GetArraySize(noted);
        int n_skipped = cJSON_GetArraySize(skipped);
        if (rewrote) {
            char *nc = cJSON_PrintUnformatted(content);
            size_t c0 = (size_t)(sp[0].p - line), c1 = c0 + sp[0].n, l = nc ? strlen(nc) : 0;
            if (nc && (out = malloc(n - (c1 - c0) + l + 1))) {
                memcpy(out, line, c0);
                memcpy(out + c0, nc, l);
                memcpy(out + c0 + l, line + c1, n - c1);
                out[n - (c1 - c0) + l] = '\0';
            }
            free(nc);
        }
        if (n_changed || n_noted || taken || n_skipped) {
            char *names = joined(changed);
            size_t l = 0; /* one of the four below writes first, from reason[0] */
            if (taken)
                l += (size_t)snprintf(reason, sizeof reason,
                                      "A rule would have held this result back; override-once "
                                      "let it through. ");
            if (n_changed && l < sizeof reason)
                l += (size_t)snprintf(reason + l, sizeof reason - l, "%s%s%s%s ",
                                      rewrote ? "keel changed this result, by rules "
                                              : "keel would change this result "
                                                "but it carries structuredContent, so it is left as is; rules ",
                                      names ? names : "", rewrote_why[0] ? ": " : ".", rewrote_why);
            if (n_noted && l < sizeof reason)
                l += (size_t)snprintf(reason + l, sizeof reason - l, "%s%s", found,
                                      left ? " The result is as the server sent it: this rule set advises on tool "
                                             "results and does not change them."
                                           : "");
            if (n_skipped && l < sizeof reason) {
                const cJSON *s0 = cJSON_GetArrayItem(skipped, 0);
                const char *rn = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s0, "rule"));
                const char *why0 = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s0, "why"));
                if (why0 && !strcmp(why0, "evaluator"))
                    l += (size_t)snprintf(reason + l, sizeof reason - l,
                                          "%sRule %s%s was not checked on this result: the evaluator gave no answer "
                                          "(a timeout or an error), so it may hold what the rule looks for.",
                                          l ? " " : "", rn, n_skipped > 1 ? " (and others)" : "");
                else if (why0)
                    l += (size_t)snprintf(reason + l, sizeof reason - l,
                                          "%sRule %s%s did not rewrite this result: %s, so it may hold what the "
                                          "rule looks for.",
                                          l ? " " : "", rn, n_skipped > 1 ? " (and others)" : "", rule_unusable_why);
                else
                    l += (size_t)snprintf(reason + l, sizeof reason - l,
                                          "%sRule %s%s was not checked on this result: %s "
                                          "(%d ms), so it may hold what the rule looks for.",
                                          l ? " " : "", rn, n_skipped > 1 ? " (and others)" : "", rule_skipped_why,
                                          RULE_BUDGET_MS);
            }
            while (l && l < sizeof reason && reason[l - 1] == ' ')
                reason[--l] = '\0';
            free(names);
            cJSON *all = cJSON_Duplicate(changed, 1), *x;
            cJSON_ArrayForEach(x, noted)
                cJSON_AddItemToArray(all, cJSON_Duplicate(x, 1));
            cJSON_ArrayForEach(x, rejected)
                cJSON_AddItemToArray(all, cJSON_Duplicate(x, 1));
            cJSON *a = rules_advisory(reason, all, 0);
            if (cJSON_GetArraySize(where))
                cJSON_AddItemToObject(a, "where", cJSON_Duplicate(where, 1));
            if (n_skipped)
                cJSON_AddItemToObject(a, "skipped", cJSON_Duplicate(skipped, 1));
            if (overlay_rules_speak(&r->ov, a) && (*adv || (*adv = cJSON_CreateArray())))
                cJSON_AddItemToArray(*adv, a);
            else
                cJSON_Delete(a);
        }
    }
    cJSON_Delete(content);
    cJSON_Delete(where);
    cJSON_Delete(skipped);
    cJSON_Delete(rejected);
    cJSON_Delete(changed);
    cJSON_Delete(noted);
    return out;
}

/* The upstream answered a tools/call: attach what the overlay has to say. */
char *relay_call_finished(struct relay *r, void *data, const char *line, size_t n, const struct jscan_top *top,
                          int *queued)
{
    *queued = 0;
    struct call_data *d = data;
    char *text = NULL, *out = NULL;
    cJSON *rules_adv = NULL;
    struct jscan_span rm[RESULT_KEYS];
    result_members(top, rm);
    if (!call_over(rm[3].p, rm[3].n)) {
        /* input_required (2026-07-28): the call is not over, and this is not
         * its result; the client sends it again with the input. Untouched. */
        relay_call_data_free(d);
        return NULL;
    }
    /* Its tool held back while the call was on its way (a listing that
     * changed it came in between): what it answered does not go on. */
    char why[1200];
    if (d->tool[0] && pins_held_tool(&r->pins, d->tool, why, sizeof why)) {
        log_event(LOG_WARN, "tool_result_held", "bytes=%zu", n);
        relay_call_data_free(d);
        return jr_reply(top->id.p, top->id.n, "error", jr_error_value(JR_INVALID_PARAMS, why, "TOOL_HELD"));
    }
    if (d->watched)
        outcome(top, rm, &d->call); /* what the server said, before any rule or advisory */
    const struct loop_call *call = d->watched ? &d->call : NULL;
    int held;
    char *ruled = result_rules(r, d->tool, line, n, top, rm, &rules_adv, &held);
    struct jscan_top t2;
    if (ruled && jscan_scan(ruled, strlen(ruled), &t2)) { /* go on from the ruled line */
        line = ruled;
        n = strlen(ruled);
        top = &t2;
    }
    if (held) { /* rejected: the replacement goes as it is */
        cJSON *later = overlay_for_result(&r->ov, d->tool, call, NULL);
        if (later)
            overlay_requeue(&r->ov, later); /* the next result carries them */
        relay_call_data_free(d);
        return ruled;
    }
    if (top->result.p && top->result.p[0] == '{' && overlay_is_model_tool(&r->ov, d->tool))
        text = result_text(&top->result);
    cJSON *adv = overlay_for_result(&r->ov, d->tool, call, text);
    free(text);
    if (rules_adv) {
        if (!adv)
            adv = cJSON_CreateArray();
        while (cJSON_GetArraySize(rules_adv))
            cJSON_AddItemToArray(adv, cJSON_DetachItemFromArray(rules_adv, 0));
        cJSON_Delete(rules_adv);
    }
    if (adv && top->result.p && top->result.p[0] == '{' && !ruled && !r->cout.open) {
        /* The server's line as it is, the advisories put in on the way to
         * the client: no copy of the whole line is made to annotate it. */
        struct jscan_insert ins[2];
        char *t[2] = {NULL, NULL};
        struct jscan_span cm[2] = {rm[0], rm[4]}; /* content and _meta, as found */
        int k = relay_annotation(line, &top->result, ruled ? NULL : cm, adv, ins, t);
        if (k) {
            relay_queue_server_line(r, line, n, ins, k);
            *queued = 1;
        }
        free(t[0]);
        free(t[1]);
        log_event(LOG_INFO, "advisory_attached", "count=%d", cJSON_GetArraySize(adv));
        cJSON_Delete(adv);
    } else if (adv && top->result.p && top->result.p[0] == '{') {
        char *annotated = relay_annotate(line, n, &top->result, adv);
        if (annotated) {
            free(ruled);
            ruled = NULL;
            out = annotated;
        }
        log_event(LOG_INFO, "advisory_attached", "count=%d", cJSON_GetArraySize(adv));
        cJSON_Delete(adv);
    } else if (adv) {
        overlay_requeue(&r->ov, adv); /* an error result: the next result carries them */
    }
    if (!out)
        out = ruled;
    relay_call_data_free(d);
    return out;
}

/* --- a result passed on as it arrives (cut.c) ------------------------------ */

void relay_result_begin(struct result_stream *rs)
{
    for (int k = 0; k < 3; k++)
        text_hasher_init(&rs->member[k], MEMBER_SEED + (uint64_t)k);
    rs->small_n[0] = rs->small_n[1] = rs->small_cut[0] = rs->small_cut[1] = 0;
    for (int k = 0; k < 2; k++) {
        rs->head[k] = NULL;
        rs->head_n[k] = 0;
        text_hasher_init(&rs->rest[k], REST_SEED);
        rs->rest_any[k] = rs->head_lost[k] = 0;
    }
}

void relay_result_done(struct result_stream *rs)
{
    for (int k = 0; k < 2; k++) {
        free(rs->head[k]);
        rs->head[k] = NULL;
        rs->head_n[k] = 0;
    }
}

/* The part of p[0..n) (at line offset base) inside member k's value, which
 * may end in a later piece. 0 when none is. */
static size_t member_part(const struct jstream *js, int k, size_t base, size_t n, size_t *from)
{
    if (!js->rm[k].present)
        return 0;
    size_t s0 = js->rm[k].start, s1 = js->rm[k].end ? js->rm[k].end : base + n;
    size_t a = s0 > base ? s0 : base, b = s1 < base + n ? s1 : base + n;
    *from = a - base;
    return b > a ? b - a : 0;
}

void relay_result_piece(struct result_stream *rs, const struct jstream *js, const char *p, size_t n, size_t base)
{
    size_t at, m;
    for (int k = 0; k < 3; k++)
        if ((m = member_part(js, k, base, n, &at)))
            text_hasher_add(&rs->member[k], p + at, m);
    for (int x = 0; x < 2; x++) { /* isError, resultType: small values kept whole */
        if (!(m = member_part(js, JSCAN_IS_ERROR + x, base, n, &at)))
            continue;
        size_t room = sizeof rs->small[x] - rs->small_n[x];
        if (m > room)
            rs->small_cut[x] = 1, m = room;
        memcpy(rs->small[x] + rs->small_n[x], p + at, m);
        rs->small_n[x] += (unsigned char)m;
    }
    for (int k = 0; k < 2; k++) { /* content and structuredContent, kept for an error's text */
        if (!(m = member_part(js, k, base, n, &at)))
            continue;
        size_t h = RESULT_HEAD - rs->head_n[k];
        if (h > m)
            h = m;
        if (h && !rs->head[k] && !(rs->head[k] = malloc(RESULT_HEAD)))
            rs->head_lost[k] = 1;
        if (h && rs->head[k]) {
            memcpy(rs->head[k] + rs->head_n[k], p + at, h);
            rs->head_n[k] += h;
        }
        if (m > h) {
            text_hasher_add(&rs->rest[k], p + at + h, m - h);
            rs->rest_any[k] = 1;
        }
    }
}

size_t relay_result_hold_point(const struct jstream *js)
{
    size_t hp = SIZE_MAX;
    if (!js->result_obj)
        return hp;
    if (js->rm[JSCAN_META].present && js->rm[JSCAN_META].first == '{')
        hp = js->rm[JSCAN_META].start + 1;
    if (js->rm[JSCAN_CONTENT].present && js->rm[JSCAN_CONTENT].first == '[' && js->rm[JSCAN_CONTENT].end &&
        js->rm[JSCAN_CONTENT].end - 1 < hp)
        hp = js->rm[JSCAN_CONTENT].end - 1;
    if (js->top[JSCAN_RESULT].end && js->top[JSCAN_RESULT].end - 1 < hp)
        hp = js->top[JSCAN_RESULT].end - 1;
    return hp;
}

/* The loop detector's view of a result read in pieces. */
static void streamed_outcome(const struct jstream *js, struct result_stream *rs, struct loop_call *c)
{
    if (!js->result_obj) {
        outcome_of(NULL, c);
        return;
    }
    struct result_facts f = {0};
    for (int k = 0; k < 3; k++)
        if ((f.present[k] = js->rm[k].present))
            f.member[k] = text_hasher_end(&rs->member[k]);
    int array = js->rm[JSCAN_CONTENT].present && js->rm[JSCAN_CONTENT].first == '[';
    f.has_block = array && js->rm[JSCAN_CONTENT].items;
    f.is_error = js->rm[JSCAN_IS_ERROR].present && rs->small_n[0] >= 4 && !memcmp(rs->small[0], "true", 4);
    for (int k = 0; k < 2 && f.is_error; k++)
        if (f.present[k] && !rs->head_lost[k]) {
            f.head[k] = (struct jscan_span){rs->head[k] ? rs->head[k] : "", rs->head_n[k]};
            f.rest[k] = rs->rest_any[k] ? text_hasher_end(&rs->rest[k]) | 1 : 0;
        }
    outcome_of(&f, c);
}

char *relay_call_streamed(struct relay *r, void *data, const struct jstream *js, struct result_stream *rs,
                          const char *tail, size_t tn, size_t at, size_t *out_n)
{
    struct call_data *d = data;
    char *out = NULL;
    if (js->rm[JSCAN_RESULT_TYPE].present && (rs->small_cut[1] || !call_over(rs->small[1], rs->small_n[1]))) {
        relay_call_data_free(d); /* input_required: not the call's result (see relay_call_finished) */
        return NULL;
    }
    if (d->watched)
        streamed_outcome(js, rs, &d->call);
    cJSON *adv = overlay_for_result(&r->ov, d->tool, d->watched ? &d->call : NULL, NULL);
    if (adv && js->result_obj) {
        /* New members go last in the result: its start has long gone by. */
        struct annot_at a = {0};
        a.r1 = js->top[JSCAN_RESULT].end;
        a.result_empty = !js->result_any;
        a.at_end = 1;
        a.content_given = js->rm[JSCAN_CONTENT].present;
        if ((a.content = js->rm[JSCAN_CONTENT].present && js->rm[JSCAN_CONTENT].first == '[')) {
            a.c1 = js->rm[JSCAN_CONTENT].end;
            a.content_empty = !js->rm[JSCAN_CONTENT].items;
        }
        if ((a.meta = js->rm[JSCAN_META].present) && (a.meta_obj = js->rm[JSCAN_META].first == '{')) {
            a.m0 = js->rm[JSCAN_META].start;
            a.meta_empty = !js->rm[JSCAN_META].items;
        }
        struct jscan_insert ins[2];
        char *t[2] = {NULL, NULL};
        int k = annotation_at(&a, adv, ins, t), fits = 1;
        for (int i = 0; i < k; i++) {
            fits &= ins[i].at >= at && ins[i].at - at <= tn;
            ins[i].at -= at;
        }
        if (k && fits)
            out = jscan_splice(tail, tn, ins, k, out_n);
        free(t[0]);
        free(t[1]);
        if (out) {
            log_event(LOG_INFO, "advisory_attached", "count=%d", cJSON_GetArraySize(adv));
            cJSON_Delete(adv);
            adv = NULL;
        }
    }
    if (adv)
        overlay_requeue(&r->ov, adv); /* nowhere to put them: the next result carries them */
    relay_call_data_free(d);
    return out;
}
