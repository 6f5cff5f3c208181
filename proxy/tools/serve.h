/* serve.h: `keel serve`, a plain MCP server on stdio with keel's tools. */
#ifndef KEEL_SERVE_H
#define KEEL_SERVE_H

#include "profile.h"

#include <stddef.h>

struct serve_opts {
    size_t max_message_bytes;
    unsigned groups; /* tool groups to expose */
    const struct profile *profile;
    const char *state_dir; /* NULL: the default */
};

/* Serves stdin/stdout until stdin ends. Returns the process exit status. */
int serve_run(const struct serve_opts *o);

/* Answers one message (a complete line). Returns the response, or NULL when
 * none is due (notifications, responses, blank lines). Exposed for tests. */
char *serve_handle(const struct serve_opts *o, const char *line, size_t n);

#endif
