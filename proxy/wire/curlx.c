/* curlx.c: libcurl loaded on first use (curlx.h). */
#include "curlx.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

struct curlx cx;

int curlx_load(char *why, size_t why_n)
{
    static int state; /* 0 not tried, 1 loaded, -1 missing */
    if (!state) {
        /* libcurl's own dependencies (LDAP's) bring GnuTLS, whose
         * constructor initialises itself (p11-kit, system priorities: about
         * 1.5 MiB resident) though keel's libcurl does TLS with OpenSSL;
         * GnuTLS's documented switch skips that, for this load only. */
        int had = getenv("GNUTLS_NO_IMPLICIT_INIT") != NULL;
        if (!had)
            setenv("GNUTLS_NO_IMPLICIT_INIT", "1", 1);
        void *lib = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
        if (!had)
            unsetenv("GNUTLS_NO_IMPLICIT_INIT");
        state = lib ? 1 : -1;
#define X(f)                                                                                                           \
    if (state == 1 && !(cx.f = (__typeof__(cx.f))dlsym(lib, "curl_" #f)))                                              \
        state = -1;
        CURLX_FUNCS(X)
#undef X
        if (state == 1)
            cx.global_init(CURL_GLOBAL_DEFAULT);
        else if (lib)
            dlclose(lib); /* a libcurl without what keel calls */
    }
    if (state < 0)
        snprintf(why, why_n, "libcurl (libcurl.so.4) could not be loaded; install the libcurl4 package");
    return state > 0 ? 0 : -1;
}
