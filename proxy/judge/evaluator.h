/* evaluator.h: an optional model that judges llm rules and justifications. */
#ifndef KEEL_EVALUATOR_H
#define KEEL_EVALUATOR_H

#include "profile.h"

#include <stddef.h>

int evaluator_enabled(const struct profile *p);

/* Asks the model; 0 and its answer, or -1 and why not (timeout, HTTP error,
 * a malformed reply, none configured). Never waits past the profile's
 * timeout_ms, nor past within_ms when that is shorter (> 0: what is left of
 * the time all of one text's questions share). */
int evaluator_ask(const struct profile *p, long within_ms, const char *system, const char *user, char *answer, size_t n,
                  char *why, size_t why_n);

#endif
