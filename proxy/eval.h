/* eval.h: keel eval: detector quality on a labelled corpus. */
#ifndef KEEL_EVAL_H
#define KEEL_EVAL_H

/* Prints the table (markdown when asked); 0, 1 below a floor, 64 no corpus.
 * floors_file NULL: the target floors. */
int eval_run(const char *dir, int markdown, const char *floors_file);

/* The loop detector on recorded traces (DIR/dev, DIR/test): 0, 1 below a
 * floor (the targets, or floors_file's "loop MAX_FA_PER_1000 MIN_SHARE"), 64
 * no traces. */
int eval_traces(const char *dir, int markdown, const char *floors_file);

#endif
