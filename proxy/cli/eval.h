/* eval.h: keel eval: detector quality on a labelled corpus. */
#ifndef KEEL_EVAL_H
#define KEEL_EVAL_H

/* Prints the dev and test tables (markdown when asked), then the dev misses
 * (the first 24, or all with all_misses; never the test split's); 0, 1 when
 * test is below a floor or too far from dev, 64 no corpus or an example
 * without a split. floors_file NULL: the targets. */
int eval_run(const char *dir, int markdown, const char *floors_file, int all_misses);

/* The loop detector on recorded traces (DIR/dev, DIR/test): 0, 1 below a
 * floor (the targets, or floors_file's "loop MAX_FA_PER_1000 MIN_SHARE"), 64
 * no traces. */
int eval_traces(const char *dir, int markdown, const char *floors_file);

/* The hooks on whole sessions (JSON files in DIR and one folder below): false
 * advisories per 100 prompts and re-ask episodes advised by their 3rd and
 * 4th ask, dev and test. 0, 1 below a floor (the targets, or floors_file's
 * "sessions MAX_PER_100 MIN_SHARE"), 64 no sessions or one without a split. */
struct profile;
int eval_sessions(const char *dir, int markdown, const char *floors_file, const struct profile *p, int misses);

#endif
