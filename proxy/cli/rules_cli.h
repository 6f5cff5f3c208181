/* rules_cli.h: keel rules lint | test | prompt | check. Each returns an exit status. */
#ifndef KEEL_RULES_CLI_H
#define KEEL_RULES_CLI_H

#include "rulefile.h"

int rules_lint(const struct ruleset *rs);
int rules_test(const struct ruleset *rs, char **dirs, int ndirs);
int rules_prompt(const struct ruleset *rs);
/* keel rules check [--as message|tool_result|sampling] FILE...: the rules that fire on each file. */
int rules_check(const struct ruleset *rs, int argc, char **argv);

#endif
