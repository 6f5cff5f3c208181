/* curlx.h: libcurl, loaded on first use.
 *
 * libcurl brings a TLS stack whose pages would triple the resident memory of
 * every keel process; only the model judge (evaluator.c) and an HTTP
 * upstream (hup.c) need it. So it is loaded with dlopen the first time one
 * of them asks, and its functions are called through the table cx. */
#ifndef KEEL_CURLX_H
#define KEEL_CURLX_H

#include <curl/curl.h>
#include <stddef.h>

/* The list is kept as a table, not reflowed. */
/* clang-format off */
#define CURLX_FUNCS(X)                                                                                      \
    X(global_init) X(easy_init) X(easy_cleanup) X(easy_setopt) X(easy_perform) X(easy_getinfo)  \
    X(easy_strerror) X(slist_append) X(slist_free_all) X(multi_init) X(multi_cleanup) X(multi_setopt)         \
    X(multi_add_handle) X(multi_remove_handle) X(multi_socket_action) X(multi_info_read) X(url)               \
    X(url_set) X(url_get) X(url_cleanup) X(free) X(easy_pause)
/* clang-format on */

extern struct curlx {
#define X(f) __typeof__(curl_##f) *f;
    CURLX_FUNCS(X)
#undef X
} cx;

/* Loads libcurl once. 0, or -1 with why (the package to install). */
int curlx_load(char *why, size_t why_n);

#endif
