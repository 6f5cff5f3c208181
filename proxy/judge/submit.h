/* submit.h: submit_message, submit_justification, get_rules, get_status, and
 * the rule judgement the overlay uses on tool results and sampling answers. */
#ifndef KEEL_SUBMIT_H
#define KEEL_SUBMIT_H

#include "chrono.h"

#include <cjson/cJSON.h>

/* Judges text against the active rules for where (RA_*; tool for tool
 * results): {violations: [{rule, guidance, spans}], applied: [names],
 * annotations: [...], notes: [...], skipped: [names of rules past their
 * budget on this text, each also in notes], rewritten?: text}. */
cJSON *rules_judge(const struct profile *p, const char *text, int where, const char *tool);

/* 1 when rules_judge(p, text, where, tool) would find nothing: no active
 * rule for where fires on text[0..n) or runs out of budget on it, and none
 * of them is an llm rule (those are asked, so never taken as quiet). */
int rules_quiet(const char *text, size_t n, int where, const char *tool);

int submit_message(const cJSON *args, const struct chrono_env *env, cJSON **out, kerr *e);
int submit_justification(const cJSON *args, const struct chrono_env *env, cJSON **out, kerr *e);
int submit_get_rules(const cJSON *args, const struct chrono_env *env, cJSON **out, kerr *e);
int submit_get_status(const cJSON *args, const struct chrono_env *env, cJSON **out, kerr *e);

#endif
