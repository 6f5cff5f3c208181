/* wrap.h: `keel wrap`, a stdio relay between an MCP client and an upstream
 * server that adds keel's tools beside the upstream's. */
#ifndef KEEL_WRAP_H
#define KEEL_WRAP_H

#include "profile.h"

#include <stddef.h>

struct wrap_opts {
    char **argv; /* the upstream command (NULL with url) */
    const char *url; /* --url: a Streamable HTTP server instead of a command */
    char **headers; /* with url: "Name: value" to send, NULL-terminated */
    const char *cacert; /* with url: CA bundle for a private CA */
    long idle_ms; /* with url: a request the server is silent on this long fails */
    const char *cwd; /* NULL: keel's own */
    char **env_add; /* "K=V" strings, NULL-terminated, or NULL */
    size_t max_message_bytes;
    unsigned groups; /* keel tool groups to expose */
    const char *tool_prefix; /* for keel tools whose names clash */
    int restart_max; /* respawns allowed; 0: none */
    const struct profile *profile;
    const char *state_dir; /* NULL: the default */
    unsigned overlay; /* OV_* parts of the overlay to run (0: none) */
    char **model_tools; /* globs of model-backed tools (sycophancy on their results) */
    int nmodel_tools;
    char **loop_exempt; /* globs of tools the loop detector never counts */
    int nloop_exempt;
};

/* Relays until the client leaves or the upstream ends for good. Returns the
 * process exit status. */
int wrap_run(const struct wrap_opts *o);
/* The same with the upstream at o->url (wrapurl.c). */
int wrap_url_run(const struct wrap_opts *o);

#endif
