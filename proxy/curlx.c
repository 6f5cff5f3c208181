/* curlx.c: libcurl loaded on first use (curlx.h). */
#include "curlx.h"

#include <dlfcn.h>
#include <stdio.h>

struct curlx cx;

int curlx_load(char *why, size_t why_n)
{
    static int state;                      /* 0 not tried, 1 loaded, -1 missing */
    if (!state) {
        void *lib = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
        state = lib ? 1 : -1;
#define X(f)                                                                                                   \
    if (state == 1 && !(cx.f = (__typeof__(cx.f))dlsym(lib, "curl_" #f)))                                      \
        state = -1;
        CURLX_FUNCS(X)
#undef X
        if (state == 1)
            cx.global_init(CURL_GLOBAL_DEFAULT);
        else if (lib)
            dlclose(lib);                  /* a libcurl without what keel calls */
    }
    if (state < 0)
        snprintf(why, why_n, "libcurl (libcurl.so.4) could not be loaded; install the libcurl4 package");
    return state > 0 ? 0 : -1;
}
