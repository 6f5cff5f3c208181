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

/* A hash of an error's whole text (never 0), numbers and ids made one: a
 * run of digits, or a hexadecimal id of 8 or more characters (a UUID, a
 * commit), counts as one '#', so "after 3021 ms" and "after 3044 ms" are the
 * same error and two paths that differ only at their end are not. */
static uint64_t error_hash(const struct jscan_span *raw, uint64_t seed)
{
    char *t = raw && raw->p && raw->p[0] == '"' ? jscan_string_prefix(raw->p, raw->n, raw->n) : NULL;
    size_t l = t ? strlen(t) : 0, w = 0;
    for (size_t i = 0; i < l;) {
        size_t j = i, digits = 0;
        while (j < l && (isxdigit((unsigned char)t[j]) || (t[j] == '-' && j > i)))
            digits += isdigit((unsigned char)t[j++]) != 0;
        int id = j - i >= 8 && digits && (i == 0 || !isalnum((unsigned char)t[i - 1])) &&
            (j == l || !isalnum((unsigned char)t[j]));
        if (id) {
            t[w++] = '#';
            i = j;
        } else if (isdigit((unsigned char)t[i])) {
            while (i < l && isdigit((unsigned char)t[i]))
                i++;
            t[w++] = '#';
        } else {
            t[w++] = t[i++];
        }
    }
    uint64_t h = text_hash(t ? t : "", w, seed) | 1;
    free(t);
    return h;
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

static void outcome(const struct jscan_top *top, const struct jscan_span *sp, struct loop_call *c)
{
    static const char *const block_keys[] = {"text"}, *const err_keys[] = {"code", "message"};
    c->error = 0;
    c->flags &= ~LOOP_EMPTY;
    if (top->result.p && top->result.p[0] == '{') {
        uint64_t h = 0x726573756c74;
        for (int k = 0; k < 3; k++)
            if (sp[k].p)
                h = text_hash(sp[k].p, sp[k].n, text_hash(result_keys[k], strlen(result_keys[k]), h));
        c->result = h;
        size_t pos = 0;
        const char *first = NULL;
        int has_block = sp[0].p && sp[0].p[0] == '[' && jscan_array_next(sp[0].p, sp[0].n, &pos, &first);
        if (!has_block && !sp[1].p)
            c->flags |= LOOP_EMPTY;
        if (sp[2].p && sp[2].n >= 4 && !memcmp(sp[2].p, "true", 4)) {
            struct jscan_span text = {NULL, 0};
            if (has_block && first[0] == '{')
                jscan_members(first, sp[0].n - (size_t)(first - sp[0].p), block_keys, &text, 1, 0);
            c->error = error_hash(&text, 0x697345);
        }
    } else if (top->error.p && top->error.p[0] == '{') {
        struct jscan_span sp[2];
        jscan_members(top->error.p, top->error.n, err_keys, sp, 2, 0);
        c->result = text_hash(top->error.p, top->error.n, 0x6572726f72);
        c->error = error_hash(&sp[1], sp[0].p ? text_hash(sp[0].p, sp[0].n, 0x636f6465) : 0x636f6465);
    } else {
        c->result = 0;
        c->flags |= LOOP_EMPTY;
    }
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

static size_t span_ws(const char *s, size_t i, size_t end)
{
    while (i < end && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n'))
        i++;
    return i;
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

int relay_annotation(const char *line, const struct jscan_span *res, const struct jscan_span *known, const cJSON *adv,
                     struct jscan_insert ins[2], char *text[2])
{
    int k = 0;
    size_t r0 = (size_t)(res->p - line), r1 = r0 + res->n; /* the result object */
    int empty_result = span_ws(line, r0 + 1, r1) == r1 - 1;
    static const char *const keys[] = {"content", "_meta"};
    struct jscan_span sp[2];
    if (known) /* the caller's one pass over the result found them */
        sp[0] = known[0], sp[1] = known[1];
    else
        jscan_members(res->p, res->n, keys, sp, 2, 0); /* one pass over the result */
    const char *c = sp[0].p, *m = sp[1].p;
    size_t cn = sp[0].n, mn = sp[1].n;
    int has_content = c && c[0] == '[';
    int has_meta = m != NULL;
    char *people = overlay_text(adv), *bj = NULL;
    if (people) {
        cJSON *block = cJSON_CreateObject();
        cJSON_AddStringToObject(block, "type", "text");
        cJSON_AddStringToObject(block, "text", people);
        bj = cJSON_PrintUnformatted(block);
        cJSON_Delete(block);
        free(people);
    }
    int new_content = bj && !has_content; /* a result without content gets one */
    /* _meta first: at the result's start it must precede a new content member. */
    char *aj = cJSON_PrintUnformatted(adv);
    if (aj && has_meta && m[0] == '{') {
        size_t m0 = (size_t)(m - line), l = strlen(aj) + 24;
        if ((text[k] = malloc(l))) {
            snprintf(text[k], l, "\"keel/advisories\":%s%s", aj,
                     span_ws(line, m0 + 1, m0 + mn) == m0 + mn - 1 ? "" : ",");
            ins[k] = (struct jscan_insert){m0 + 1, text[k], 0};
            k++;
        }
    } else if (aj && !has_meta) {
        size_t l = strlen(aj) + 40;
        if ((text[k] = malloc(l))) {
            snprintf(text[k], l, "\"_meta\":{\"keel/advisories\":%s}%s", aj, empty_result && !new_content ? "" : ",");
            ins[k] = (struct jscan_insert){r0 + 1, text[k], 0};
            k++;
        }
    }
    free(aj);
    if (bj && has_content) {
        size_t c0 = (size_t)(c - line), c1 = c0 + cn, l = strlen(bj) + 2;
        if ((text[k] = malloc(l))) {
            snprintf(text[k], l, "%s%s", span_ws(line, c0 + 1, c1) == c1 - 1 ? "" : ",", bj);
            ins[k] = (struct jscan_insert){c1 - 1, text[k], 0};
            k++;
        }
    } else if (new_content) {
        size_t l = strlen(bj) + 16;
        if ((text[k] = malloc(l))) {
            snprintf(text[k], l, "\"content\":[%s]%s", bj, empty_result ? "" : ",");
            ins[k] = (struct jscan_insert){r0 + 1, text[k], 0};
            k++;
        }
    }
    free(bj);
    return k;
}

/* The upstream answered a tools/call: attach what the overlay has to say. */
#define RULES_MAX_LINE (1u << 20) /* larger results are not read by the rules */

/* A rules advisory naming what fired. */
static cJSON *rules_advisory(const char *reason, cJSON *names)
{
    static const char *const tokens[] = {"override-once", "explain-the-match"};
    cJSON *a = cJSON_CreateObject();
    cJSON_AddStringToObject(a, "detector", "rules");
    cJSON_AddNumberToObject(a, "confidence", 0.9);
    cJSON_AddStringToObject(a, "reason", reason);
    det_overrides(a, tokens, 2);
    cJSON_AddItemToObject(
        a, "heuristic", det_heuristic("output_rules", "0.1.0", "keel's YAML output rules (rules/*.yml, --rules DIR)"));
    cJSON_AddItemToObject(a, "rules", names);
    return a;
}

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

/* Rules on a tool result (keel wrap's hygiene). Returns a replacement line
 * (the result rejected, or its text blocks rewritten) or NULL, and adds an
 * advisory to *adv saying what was done. */
static char *result_rules(struct relay *r, const char *tool, const char *line, size_t n, const struct jscan_top *top,
                          const struct jscan_span *sp, cJSON **adv)
{
    if (!(r->ov.parts & OV_RULES) || !ruleset_current || n > RULES_MAX_LINE || !top->result.p ||
        top->result.p[0] != '{' || !sp[0].p || sp[0].p[0] != '[' || content_quiet(&sp[0], tool))
        return NULL;
    cJSON *content = jscan_parse_valid(sp[0].p, sp[0].n), *b;
    cJSON *rejected = cJSON_CreateArray(), *changed = cJSON_CreateArray(), *noted = cJSON_CreateArray();
    cJSON *where = cJSON_CreateArray(), *skipped = cJSON_CreateArray();
    char guidance[600] = "", found[600] = "";
    int rewrote = 0, block = -1, left = 0;
    cJSON_ArrayForEach(b, content) {
        block++;
        const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(b, "type"));
        cJSON *t = cJSON_GetObjectItemCaseSensitive(b, "text");
        if (!type || strcmp(type, "text") || !cJSON_IsString(t))
            continue;
        cJSON *j = rules_judge(r->o->profile, t->valuestring, RA_TOOL_RESULT, tool);
        const cJSON *v;
        cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(j, "violations")) {
            cJSON_AddItemToArray(rejected,
                                 cJSON_CreateString(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "rule"))));
            snprintf(guidance + strlen(guidance), sizeof guidance - strlen(guidance), "%s%s", guidance[0] ? " " : "",
                     cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "guidance")));
        }
        cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(j, "annotations")) {
            const char *rule = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "rule"));
            const cJSON *spans = cJSON_GetObjectItemCaseSensitive(v, "spans"), *s0 = cJSON_GetArrayItem(spans, 0), *x;
            int nspans = cJSON_GetArraySize(spans);
            if (cJSON_GetObjectItemCaseSensitive(v, "not_applied"))
                left = 1;
            cJSON_AddItemToArray(noted, cJSON_CreateString(rule));
            /* Where, as positions only: the matched text stays where it was. */
            cJSON_ArrayForEach(x, spans) {
                cJSON *w = cJSON_CreateObject();
                cJSON_AddStringToObject(w, "rule", rule);
                cJSON_AddNumberToObject(w, "block", block);
                cJSON_AddNumberToObject(w, "start", cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(x, "start")));
                cJSON_AddNumberToObject(w, "end", cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(x, "end")));
                cJSON_AddItemToArray(where, w);
            }
            size_t fl = strlen(found);
            snprintf(found + fl, sizeof found - fl, "%sRule %s matched in content[%d] at bytes %.0f-%.0f%s%.0d%s: %s",
                     fl ? " " : "", rule, block, cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(s0, "start")),
                     cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(s0, "end")), nspans > 1 ? " (and " : "",
                     nspans > 1 ? nspans - 1 : 0, nspans > 1 ? " more)" : "",
                     cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "guidance")));
        }
        cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(j, "skipped")) {
            cJSON *w = cJSON_CreateObject();
            cJSON_AddStringToObject(w, "rule", cJSON_GetStringValue(v));
            cJSON_AddNumberToObject(w, "block", block);
            cJSON_AddItemToArray(skipped, w);
        }
        const cJSON *rw = cJSON_GetObjectItemCaseSensitive(j, "rewritten");
        cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(j, "applied"))
            cJSON_AddItemToArray(changed, cJSON_Duplicate(v, 1));
        if (rw && !sp[1].p) { /* structuredContent must match its schema: never rewritten */
            cJSON_SetValuestring(t, rw->valuestring);
            rewrote = 1;
        }
        cJSON_Delete(j);
    }
    char *out = NULL, reason[900];
    struct chrono_env env = {{0, 0}, r->o->profile, r->o->state_dir, r->ov.conversation_at};
    kerr e = {0};
    int taken = 0;
    if (cJSON_GetArraySize(rejected) && chrono_now(&env.now, &e) == 0)
        guard_take_once(&env, DET_RULES, &taken, &e);
    if (cJSON_GetArraySize(rejected) && !taken) {
        /* Held back, and said so: an isError result naming the rule, with the way through. */
        char *names = cJSON_PrintUnformatted(rejected);
        snprintf(reason, sizeof reason,
                 "keel held back this result: rule %s. %s If the person wants it anyway, they "
                 "can say override-once (apply_override) and ask again.",
                 names ? names : "", guidance);
        free(names);
        cJSON *res = cJSON_CreateObject(), *c = cJSON_AddArrayToObject(res, "content"), *blk = cJSON_CreateObject();
        cJSON_AddStringToObject(blk, "type", "text");
        cJSON_AddStringToObject(blk, "text", reason);
        cJSON_AddItemToArray(c, blk);
        cJSON_AddBoolToObject(res, "isError", 1);
        cJSON *advs = cJSON_AddArrayToObject(cJSON_AddObjectToObject(res, "_meta"), "keel/advisories");
        cJSON_AddItemToArray(advs, rules_advisory(reason, cJSON_Duplicate(rejected, 1)));
        out = jr_reply(top->id.p, top->id.n, "result", res);
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
            char *names = cJSON_PrintUnformatted(changed);
            size_t l = 0;
            reason[0] = '\0';
            if (taken)
                l += (size_t)snprintf(reason, sizeof reason,
                                      "A rule would have held this result back; override-once "
                                      "let it through. ");
            if (n_changed && l < sizeof reason)
                l += (size_t)snprintf(reason + l, sizeof reason - l, "%s%s: %s ",
                                      rewrote ? "keel changed this result, by rules "
                                              : "keel would change this result "
                                                "but it carries structuredContent, so it is left as is; rules ",
                                      names ? names : "", guidance);
            if (n_noted && l < sizeof reason)
                l += (size_t)snprintf(reason + l, sizeof reason - l, "%s%s", found,
                                      left ? " The result is as the server sent it: this rule set advises on tool "
                                             "results and does not change them."
                                           : "");
            if (n_skipped && l < sizeof reason) {
                const cJSON *s0 = cJSON_GetArrayItem(skipped, 0);
                l += (size_t)snprintf(reason + l, sizeof reason - l,
                                      "%sRule %s%s was not checked on this result: %s "
                                      "(%d ms), so it may hold what the rule looks for.",
                                      l ? " " : "", cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s0, "rule")),
                                      n_skipped > 1 ? " (and others)" : "", rule_skipped_why, RULE_BUDGET_MS);
            }
            while (l && l < sizeof reason && reason[l - 1] == ' ')
                reason[--l] = '\0';
            free(names);
            cJSON *all = cJSON_Duplicate(changed, 1), *x;
            cJSON_ArrayForEach(x, noted)
                cJSON_AddItemToArray(all, cJSON_Duplicate(x, 1));
            cJSON_ArrayForEach(x, rejected)
                cJSON_AddItemToArray(all, cJSON_Duplicate(x, 1));
            if (!*adv)
                *adv = cJSON_CreateArray();
            cJSON *a = rules_advisory(reason, all);
            if (cJSON_GetArraySize(where))
                cJSON_AddItemToObject(a, "where", cJSON_Duplicate(where, 1));
            if (n_skipped)
                cJSON_AddItemToObject(a, "skipped", cJSON_Duplicate(skipped, 1));
            cJSON_AddItemToArray(*adv, a);
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

char *relay_call_finished(struct relay *r, void *data, const char *line, size_t n, const struct jscan_top *top,
                          int *queued)
{
    *queued = 0;
    struct call_data *d = data;
    char *text = NULL, *out = NULL;
    cJSON *rules_adv = NULL;
    struct jscan_span rm[RESULT_KEYS];
    result_members(top, rm);
    if (rm[3].p && !(rm[3].n == 10 && !memcmp(rm[3].p, "\"complete\"", 10))) {
        /* input_required (2026-07-28): the call is not over, and this is not
         * its result; the client sends it again with the input. Untouched. */
        relay_call_data_free(d);
        return NULL;
    }
    if (d->watched)
        outcome(top, rm, &d->call); /* what the server said, before any rule or advisory */
    const struct loop_call *call = d->watched ? &d->call : NULL;
    char *ruled = result_rules(r, d->tool, line, n, top, rm, &rules_adv);
    struct jscan_top t2;
    if (ruled && jscan_scan(ruled, strlen(ruled), &t2)) { /* go on from the ruled line */
        line = ruled;
        n = strlen(ruled);
        top = &t2;
    }
    if (ruled && !rules_adv) { /* rejected: the replacement goes as it is */
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
