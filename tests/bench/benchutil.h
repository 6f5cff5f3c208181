/* benchutil.h: what the bench and soak programs share. */
#ifndef KEEL_BENCHUTIL_H
#define KEEL_BENCHUTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

int64_t bench_now_ns(void); /* CLOCK_MONOTONIC */
int bench_cmp_i64(const void *a, const void *b); /* for qsort */
void bench_put(int fd, const char *s, size_t n); /* all of it, or exit(0) when the reader left */
int bench_contains(const char *s, size_t n, const char *w);
/* Runs argv[0] (execv; execvp when path_search) with its stdin and stdout on
 * pipes: *to_child and *from_child are keel's ends. The pid, or -1. */
pid_t bench_spawn(char *const argv[], int path_search, int *to_child, int *from_child);
long bench_status_kib(pid_t pid, const char *field); /* "VmRSS:" ... from /proc/PID/status, or -1 */

#endif
