/* rulefile.h: rule sets from YAML files.
 *
 * The shipped sets (the .yml files in rules/) are embedded in the binary; more come from
 * --rules DIR (repeatable) and the profile's rules.dirs, every .yml file in them.
 * A rule that cannot be used (no name, a pattern that does not compile) is
 * left out; it and every smaller fault (unknown key, duplicate name, no
 * examples) is a problem with its file and line, for `keel rules lint`. */
#ifndef KEEL_RULEFILE_H
#define KEEL_RULEFILE_H

#include "profile.h"
#include "rules.h"

#define RULESET_MAX_PROBLEMS  128
#define RULEFILE_MAX_BYTES    (1u << 20) /* a rule file, or a rules/evals example */
#define RULEFILE_EXPANDED_MAX (4u << 20) /* a rule file with its YAML aliases written out */
#define RULEFILE_VALUE_MAX    (64u << 10) /* one value: a pattern, a guidance, an example */

struct ruleset {
    struct rule *v;
    int n, cap;
    int nproblems;
    char problems[RULESET_MAX_PROBLEMS][320];
    long nseen; /* problems found, those past RULESET_MAX_PROBLEMS too: a rule that adds one is left out */
};

/* Shipped rules, then each directory's *.yml in name order. */
void ruleset_load(struct ruleset *rs, const struct profile *p, char **dirs, int ndirs);

/* One file's text; name is how problems refer to it. */
void ruleset_load_text(struct ruleset *rs, const char *name, const char *text, size_t n);

void ruleset_free(struct ruleset *rs);

/* The loaded set of this process (keel serve / keel wrap), or NULL. */
extern struct ruleset *ruleset_current;

#endif
