/* fuzz_toml.c: the TOML reader on any bytes. Oracles: no crash, no leak, no
 * unbounded work; a document it takes has every key/value's spans inside the
 * text and in order (key, then value, then the end of its line), and gives
 * the same tree read twice. */
#include "cfgjson.h"
#include "toml.h"

#include <stdint.h>
#include <stdlib.h>

static void check(const struct toml_node *x, size_t n)
{
    for (const struct toml_node *c = x->first; c; c = c->next) {
        if (c->end > n || c->at > c->end)
            abort();
        if (c->key_end && !(c->key_at <= c->last_key_at && c->last_key_at < c->key_end && c->key_end <= c->at))
            abort();
        if (c->line_end && !c->in_inline && (c->line_end < c->end || c->line_end > n))
            abort();
        check(c, n);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct toml_error e;
    struct toml_node *t = toml_parse((const char *)data, size, &e);
    if (!t) {
        if (e.line < 1 || e.column < 1 || !e.message[0])
            abort(); /* a refusal always says where and why */
        return 0;
    }
    check(t, size);
    struct toml_node *u = toml_parse((const char *)data, size, &e);
    cJSON *a = toml_to_json(t, 0), *b = u ? toml_to_json(u, 1) : NULL, *c = u ? toml_to_json(u, 0) : NULL;
    if (!u || (a && c && !cfg_json_equal(a, c)))
        abort();
    cJSON_Delete(a);
    cJSON_Delete(b);
    cJSON_Delete(c);
    toml_free(u);
    toml_free(t);
    return 0;
}
