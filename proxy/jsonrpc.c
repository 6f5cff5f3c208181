/* jsonrpc.c: message builders and the line writer (see jsonrpc.h). */
#include "jsonrpc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int jr_send(int fd, cJSON *msg)
{
    char *s = cJSON_PrintUnformatted(msg);
    cJSON_Delete(msg);
    if (!s) {
        errno = ENOMEM;
        return -1;
    }
    int rc = jr_write_line(fd, s, strlen(s));
    free(s);
    return rc;
}

static cJSON *envelope(const cJSON *id)
{
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "jsonrpc", "2.0");
    cJSON_AddItemToObject(m, "id", id ? cJSON_Duplicate(id, 1) : cJSON_CreateNull());
    return m;
}

cJSON *jr_result(const cJSON *id, cJSON *result)
{
    cJSON *m = envelope(id);
    cJSON_AddItemToObject(m, "result", result);
    return m;
}

static cJSON *error_object(int code, const char *message, const char *keel_code)
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

cJSON *jr_error(const cJSON *id, int code, const char *message, const char *keel_code)
{
    cJSON *m = envelope(id);
    cJSON_AddItemToObject(m, "error", error_object(code, message, keel_code));
    return m;
}

char *jr_error_raw(const char *id, size_t id_n, int code, const char *message, const char *keel_code)
{
    cJSON *e = error_object(code, message, keel_code);
    char *es = cJSON_PrintUnformatted(e);
    cJSON_Delete(e);
    if (!es)
        return NULL;
    if (!id) {
        id = "null";
        id_n = 4;
    }
    size_t n = strlen(es) + id_n + 40;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"error\":%s}", (int)id_n, id, es);
    free(es);
    return s;
}

int jr_valid_id(const cJSON *v)
{
    return v && (cJSON_IsString(v) || cJSON_IsNumber(v));
}
