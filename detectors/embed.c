/* embed.c: lookup over the generated table (see embed.h). */
#include "embed.h"

#include <string.h>

const struct embed_blob *embed_find(const char *path)
{
    for (const struct embed_blob *b = embed_table; b->path; b++)
        if (strcmp(b->path, path) == 0)
            return b;
    return NULL;
}
