/* jsonrpc.c: message builders and the line writer (see jsonrpc.h). */
#include "jsonrpc.h"

#include "jscan.h"

#include <errno.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/uio.h>
#include <unistd.h>

int jr_write_line(int fd, const char *s, size_t n)
{
    struct iovec iov[2] = {{(void *)s, n}, {(void *)"\n", 1}};
    int cnt = 2;
    struct iovec *v = iov;
    while (cnt > 0) {
        ssize_t w = writev(fd, v, cnt);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                struct pollfd p = {fd, POLLOUT, 0};
                if (poll(&p, 1, -1) < 0 && errno != EINTR)
                    return -1;
                continue;
            }
            return -1;
        }
        size_t left = (size_t)w;
        while (cnt > 0 && left >= v->iov_len) {
            left -= v->iov_len;
            v++;
            cnt--;
        }
        if (cnt > 0) {
            v->iov_base = (char *)v->iov_base + left;
            v->iov_len -= left;
        }
    }
    return 0;
}

char *jr_reply(const char *id, size_t id_n, const char *member, cJSON *value)
{
    char *vs = cJSON_PrintUnformatted(value);
    cJSON_Delete(value);
    if (!vs)
        return NULL;
    if (!id) {
        id = "null";
        id_n = 4;
    }
    size_t n = strlen(vs) + id_n + strlen(member) + 32;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"%s\":%s}", (int)id_n, id, member, vs);
    free(vs);
    return s;
}

char *jr_quote_printed(const char *json)
{
    size_t n = strlen(json), extra = 0;
    for (const char *p = json; (p = strpbrk(p, "\"\\")); p++)
        extra++;
    char *out = malloc(n + extra + 3), *o = out;
    if (!out)
        return NULL;
    *o++ = '"';
    for (const char *p = json;;) {
        size_t run = strcspn(p, "\"\\");
        memcpy(o, p, run);
        o += run, p += run;
        if (!*p)
            break;
        *o++ = '\\';
        *o++ = *p++;
    }
    *o++ = '"';
    *o = '\0';
    return out;
}

cJSON *jr_error_value(int code, const char *message, const char *keel_code)
{
    cJSON *e = cJSON_CreateObject();
    cJSON_AddNumberToObject(e, "code", code);
    cJSON_AddStringToObject(e, "message", message);
    if (keel_code) {
        cJSON *d = cJSON_AddObjectToObject(e, "data");
        cJSON_AddStringToObject(d, "code", keel_code);
    }
    return e;
}

int jr_valid_raw_id(const char *id, size_t n)
{
    if (!id || !n)
        return 0;
    if (n <= 20 && (id[0] == '-' || (id[0] >= '0' && id[0] <= '9'))) {
        size_t i = id[0] == '-'; /* the usual case: a small integer */
        if (i < n && !(id[i] == '0' && n > i + 1)) {
            while (i < n && id[i] >= '0' && id[i] <= '9')
                i++;
            if (i == n && id[n - 1] != '-')
                return 1;
        }
    }
    if (n >= 2 && id[0] == '"' && id[n - 1] == '"') { /* a string without escapes */
        size_t i = 1;
        while (i < n - 1 && id[i] != '"' && id[i] != '\\' && (unsigned char)id[i] >= 0x20)
            i++;
        if (i == n - 1)
            return 1;
    }
    /* Anything else by keel's own grammar, strictly: the text is echoed back
     * byte for byte, so it must be one JSON string or number and nothing
     * around it (a parser that skips control characters before a number, or
     * takes 01, would let an invalid reply through). */
    char f = id[0], l = id[n - 1];
    if (!(f == '"' || f == '-' || (f >= '0' && f <= '9')) || !(l == '"' || (l >= '0' && l <= '9')))
        return 0;
    return jscan_valid(id, n);
}

int jr_valid_id(const cJSON *v)
{
    return v && (cJSON_IsString(v) || cJSON_IsNumber(v));
}

int jr_integer_id(const char *id, size_t n)
{
    char b[64];
    if (!memchr(id, '.', n) && !memchr(id, 'e', n) && !memchr(id, 'E', n))
        return 1; /* digits (a JSON number already): the usual id, read no further */
    if (n >= sizeof b)
        return 0;
    memcpy(b, id, n);
    b[n] = '\0';
    double v = strtod(b, NULL);
    return isfinite(v) && v == floor(v);
}
