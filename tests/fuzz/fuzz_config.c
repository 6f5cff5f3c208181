/* fuzz_config.c: the YAML people write: a profile (profile_load_text) and a
 * rule file (ruleset_load_text), anchors and aliases included. The input's
 * first byte picks which. Oracles: no crash, no leak, no unbounded work (the
 * alias expansion limit), and a loaded rule set is usable: every rule it kept
 * can be asked about a short text. */
#include "profile.h"
#include "rulefile.h"
#include "rules.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!size)
        return 0;
    const char *text = (const char *)data + 1;
    size_t n = size - 1;
    if (data[0] & 1) {
        static struct profile p;
        profile_load_text(&p, text, n);
    } else {
        struct ruleset rs;
        memset(&rs, 0, sizeof rs);
        ruleset_load_text(&rs, "fuzz.yml", text, n);
        static const char probe[] = "Great question! TODO: the key is AKIAIOSFODNN7EXAMPLE.";
        char *c = rule_copy(probe, sizeof probe - 1);
        for (int i = 0; c && i < rs.n; i++) {
            struct rule_span sp[4];
            if (rule_match(&rs.v[i], c, sizeof probe - 1, sp, 4) < RULE_SKIPPED)
                abort();
        }
        free(c);
        ruleset_free(&rs);
    }
    return 0;
}
