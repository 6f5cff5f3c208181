/* eval.h: keel eval: detector quality on a labelled corpus. */
#ifndef KEEL_EVAL_H
#define KEEL_EVAL_H

/* Prints the table (markdown when asked); 0, 1 below a floor, 64 no corpus.
 * floors_file NULL: the target floors. */
int eval_run(const char *dir, int markdown, const char *floors_file);

#endif
