/* annotate.c: the overlay's part of routing in keel wrap.
 *
 * A tools/call on its way upstream is shown to the overlay (rumination
 * remembers it); when its result comes back, the overlay's advisories are
 * spliced into the result line: a text block appended to content for the
 * person, and the structured advisories under _meta["keel/advisories"].
 * The splice is byte surgery on the line keel received, so every other byte,
 * structuredContent and the original blocks included, is left as it was, and
 * a large result costs two scans and one copy, not a parse and a print. */
#include "relay.h"

#include "jscan.h"
#include "log.h"
#include "text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A tools/call on its way upstream: what the overlay makes of it. */
struct call_data *relay_call_started(struct relay *r, const char *params, size_t pn)
{
    cJSON *p = cJSON_ParseWithLength(params, pn);
    const char *tool = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "name"));
    struct call_data *d = NULL;
    if (tool && (d = malloc(sizeof *d + strlen(tool) + 1))) {
        strcpy(d->tool, tool);
        d->earned = overlay_on_call(&r->ov, tool, cJSON_GetObjectItemCaseSensitive(p, "arguments"));
    }
    cJSON_Delete(p);
    return d;
}

void relay_call_data_free(void *p)
{
    struct call_data *d = p;
    if (d)
        cJSON_Delete(d->earned);
    free(d);
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
            l--;                                          /* the cut split a character */
        while (k < l && chars < room) {                   /* whole characters, up to the cap */
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
    int k = 0;
    size_t r0 = (size_t)(res->p - line), r1 = r0 + res->n;     /* the result object */
    int empty_result = span_ws(line, r0 + 1, r1) == r1 - 1;
    static const char *const keys[] = {"content", "_meta"};
    struct jscan_span sp[2];
    jscan_members(res->p, res->n, keys, sp, 2, 0);      /* one pass over the result */
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
    int new_content = bj && !has_content;        /* a result without content gets one */
    /* _meta first: at the result's start it must precede a new content member. */
    char *aj = cJSON_PrintUnformatted(adv);
    if (aj && has_meta && m[0] == '{') {
        size_t m0 = (size_t)(m - line), l = strlen(aj) + 24;
        if ((text[k] = malloc(l))) {
            snprintf(text[k], l, "\"keel/advisories\":%s%s", aj,
                     span_ws(line, m0 + 1, m0 + mn) == m0 + mn - 1 ? "" : ",");
            ins[k] = (struct jscan_insert){m0 + 1, text[k]};
            k++;
        }
    } else if (aj && !has_meta) {
        size_t l = strlen(aj) + 40;
        if ((text[k] = malloc(l))) {
            snprintf(text[k], l, "\"_meta\":{\"keel/advisories\":%s}%s", aj, empty_result && !new_content ? "" : ",");
            ins[k] = (struct jscan_insert){r0 + 1, text[k]};
            k++;
        }
    }
    free(aj);
    if (bj && has_content) {
        size_t c0 = (size_t)(c - line), c1 = c0 + cn, l = strlen(bj) + 2;
        if ((text[k] = malloc(l))) {
            snprintf(text[k], l, "%s%s", span_ws(line, c0 + 1, c1) == c1 - 1 ? "" : ",", bj);
            ins[k] = (struct jscan_insert){c1 - 1, text[k]};
            k++;
        }
    } else if (new_content) {
        size_t l = strlen(bj) + 16;
        if ((text[k] = malloc(l))) {
            snprintf(text[k], l, "\"content\":[%s]%s", bj, empty_result ? "" : ",");
            ins[k] = (struct jscan_insert){r0 + 1, text[k]};
            k++;
        }
    }
    free(bj);
    char *out = k ? jscan_splice(line, n, ins, k, NULL) : NULL;
    free(text[0]);
    free(text[1]);
    return out;
}

/* The upstream answered a tools/call: attach what the overlay has to say. */
char *relay_call_finished(struct relay *r, void *data, const char *line, size_t n, const struct jscan_top *top)
{
    struct call_data *d = data;
    char *text = NULL, *out = NULL;
    if (top->result.p && top->result.p[0] == '{' && overlay_is_model_tool(&r->ov, d->tool))
        text = result_text(&top->result);
    cJSON *adv = overlay_for_result(&r->ov, d->tool, d->earned, text);
    d->earned = NULL;
    free(text);
    if (adv && top->result.p && top->result.p[0] == '{') {
        out = relay_annotate(line, n, &top->result, adv);
        log_event(LOG_INFO, "advisory_attached", "count=%d", cJSON_GetArraySize(adv));
        cJSON_Delete(adv);
    } else if (adv) {
        overlay_requeue(&r->ov, adv);          /* an error result: the next result carries them */
    }
    relay_call_data_free(d);
    return out;
}

