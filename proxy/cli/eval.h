/* eval.h: keel eval: detector quality on a labelled corpus. */
#ifndef KEEL_EVAL_H
#define KEEL_EVAL_H

/* The floors test figures are held to: the targets, or a regression file's
 * lines "rumination|sycophancy PRECISION RECALL FP_RATE", "gap G", "loop
 * MAX_FA_PER_1000 MIN_SHARE" and "sessions MAX_PER_100 MIN_SHARE" (# starts a
 * comment). */
struct eval_floors {
    double det[2][3]; /* rumination, sycophancy: precision, recall, FP rate */
    double gap;
    double loop_fa, loop_share;
    double sess_fa, sess_share;
};
void eval_floors_targets(struct eval_floors *f);
/* Reads path over f's figures: 0, or -1 after naming on stderr what is wrong
 * (an unreadable file, a line of no known kind, a figure out of range). */
int eval_floors_read(const char *path, struct eval_floors *f);

/* Prints the dev and test tables (markdown when asked), then the dev misses
 * (the first 24, or all with all_misses; never the test split's); 0, 1 when
 * test is below a floor or too far from dev, 64 no corpus or an example
 * without a split, a label of no known kind, or arguments a tool refused. */
int eval_run(const char *dir, int markdown, const struct eval_floors *fl, int all_misses);

/* The loop detector on recorded traces (DIR/dev, DIR/test): 0, 1 below a
 * floor, 64 no traces, a line that is no call, or a split without calls. */
int eval_traces(const char *dir, int markdown, const struct eval_floors *fl);

/* The hooks on whole sessions (JSON files in DIR and one folder below): false
 * advisories per 100 prompts and re-ask episodes advised by their 3rd and
 * 4th ask, dev and test. 0, 1 below a floor, 64 no sessions or one without
 * a split. */
struct profile;
int eval_sessions(const char *dir, int markdown, const struct eval_floors *fl, const struct profile *p, int misses);

#endif
