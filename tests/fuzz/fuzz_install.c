/* fuzz_install.c: keel install and then keel uninstall on any configuration
 * text: JSON, JSON with comments (Gemini) or TOML (Codex), picked by the
 * first byte, with or without hooks. Oracles: install either refuses (the
 * file would stay byte for byte), changes nothing, or gives a text that
 * parses; uninstall of that text gives back a document equal to the
 * original (when the original held nothing of keel's to begin with). */
#include "cfgjson.h"
#include "install.h"
#include "toml.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static cJSON *parsed(const char *s, size_t n, int fmt)
{
    if (fmt == 2) {
        struct toml_error e;
        struct toml_node *t = toml_parse(s, n, &e);
        cJSON *j = t ? toml_to_json(t, 0) : NULL;
        toml_free(t);
        return j;
    }
    struct cfgjson d;
    char why[256];
    if (cfgjson_read(&d, s, n, fmt == 1, why, sizeof why) < 0)
        return NULL;
    cJSON *j = d.tree;
    d.tree = NULL;
    cfgjson_free(&d);
    return j;
}

static int mentions_keel(const char *s, size_t n)
{
    for (size_t i = 0; i + 4 <= n; i++)
        if (!memcmp(s + i, "keel", 4))
            return 1;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!size || size > 1 << 16)
        return 0;
    int fmt = data[0] % 3, hooks = (data[0] >> 2) & 1;
    const char *text = (const char *)data + 1;
    size_t n = size - 1;
    static const char keel[] = "/opt/keel bin/keel";
    char why[512];
    char *in = install_edit_text(text, n, fmt, hooks, 0, keel, why, sizeof why);
    if (!in)
        return 0; /* refused, or nothing to change */
    size_t in_n = strlen(in);
    cJSON *a = parsed(in, in_n, fmt);
    if (!a)
        abort(); /* install wrote what does not parse */
    cJSON_Delete(a);
    char *out = install_edit_text(in, in_n, fmt, hooks, 1, keel, why, sizeof why);
    if (!out && why[0])
        abort(); /* keel refused its own work */
    if (!mentions_keel(text, n)) { /* nothing of keel's before: all of it goes again */
        cJSON *orig = parsed(text, n, fmt), *back = parsed(out ? out : in, out ? strlen(out) : in_n, fmt);
        if (!orig || !back || !cfg_json_equal(orig, back))
            abort();
        cJSON_Delete(orig);
        cJSON_Delete(back);
    }
    free(out);
    free(in);
    return 0;
}
