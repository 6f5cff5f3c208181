/* baked-none.c: nothing baked, for keel-bake itself (which reads every
 * phrase list and concept group as the detectors read them, to write them
 * out). */
#include "phrases.h"
#include "lexicon.h"

const struct phrases_baked phrases_baked[1];
const size_t phrases_baked_n = 0;
const struct lex_state lex_baked;
