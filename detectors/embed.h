/* embed.h: data files compiled into the binary.
 *
 * The schemas and the data that define each heuristic live as ordinary files
 * in the tree (schemas/, detectors/data/) so anyone can read and review them.
 * scripts/embed.cmake copies them into the binary at build time; a test
 * proves each embedded copy equals its file. Blobs are NUL-terminated. */
#ifndef KEEL_EMBED_H
#define KEEL_EMBED_H

#include <stddef.h>

struct embed_blob {
    const char *path; /* relative to the source root, e.g. "schemas/check_rumination.json" */
    const char *data;
    size_t len;
};

extern const struct embed_blob embed_table[]; /* terminated by path == NULL */

const struct embed_blob *embed_find(const char *path);

#endif
