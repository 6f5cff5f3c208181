/* readfile.h: reading a file keel is configured by (a profile, a rule file,
 * an eval example) without being stalled or misled by what is at the path.
 * Only a regular file is read (a FIFO or a device is never waited on: it is
 * opened O_NONBLOCK and refused), whole or not at all: one larger than max
 * is refused, never cut. A symbolic link to a regular file is followed. */
#ifndef KEEL_READFILE_H
#define KEEL_READFILE_H

#include <stddef.h>

/* The file's bytes, NUL-terminated (len without the NUL); caller frees.
 * NULL with errno: ENOENT, EINVAL (not a regular file), EFBIG (over max),
 * ENOMEM, or what open or read said. */
char *read_regular(const char *path, size_t max, size_t *len);

/* What errno from read_regular means, in words for an error message. */
const char *read_regular_why(int err);

/* All of a descriptor (a pipe: stdin) up to max bytes, NUL-terminated (*n
 * without the NUL); NULL with errno (EFBIG past max). Caller frees. */
char *read_all(int fd, size_t max, size_t *n);

#endif
