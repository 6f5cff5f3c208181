/* evaluator.c: the optional model judge, over an OpenAI-compatible API.
 *
 * Off unless the profile sets rules.evaluator.url. One POST to
 * {url} (a chat completions endpoint: local llama.cpp, vLLM, or a hosted
 * one) with a system prompt and the text, temperature 0; the answer's first
 * word decides. libcurl enforces timeout_ms end to end, so a slow or silent
 * endpoint costs at most that; an HTTP error, a timeout or a reply that is
 * not what was asked for leaves the deterministic verdict standing, and the
 * caller says so in a system note. The API key is read from the environment
 * variable the profile names, sent as a Bearer token, and never logged.
 *
 * libcurl is loaded the first time an evaluator is asked (curlx.h). */
#include "evaluator.h"

#include "curlx.h"
#include "log.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REPLY_MAX (64u << 10)

struct reply {
    char *buf;
    size_t n;
};

static size_t collect(char *data, size_t size, size_t count, void *vr)
{
    struct reply *r = vr;
    size_t n = size * count;
    if (r->n + n > REPLY_MAX)
        return 0; /* too much: abort the transfer */
    char *b = realloc(r->buf, r->n + n + 1);
    if (!b)
        return 0;
    memcpy(b + r->n, data, n);
    r->buf = b;
    r->n += n;
    r->buf[r->n] = '\0';
    return n;
}

int evaluator_enabled(const struct profile *p)
{
    return p && p->eval_url[0];
}

int evaluator_ask(const struct profile *p, long within_ms, const char *system, const char *user, char *answer, size_t n,
                  char *why, size_t why_n)
{
    if (!evaluator_enabled(p)) {
        snprintf(why, why_n, "no evaluator is configured");
        return -1;
    }
    if (curlx_load(why, why_n) < 0)
        return -1;
    cJSON *req = cJSON_CreateObject();
    cJSON_AddStringToObject(req, "model", p->eval_model[0] ? p->eval_model : "default");
    cJSON_AddNumberToObject(req, "temperature", 0);
    cJSON *msgs = cJSON_AddArrayToObject(req, "messages");
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "role", "system");
    cJSON_AddStringToObject(m, "content", system);
    cJSON_AddItemToArray(msgs, m);
    m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "role", "user");
    cJSON_AddStringToObject(m, "content", user);
    cJSON_AddItemToArray(msgs, m);
    char *body = cJSON_PrintUnformatted(req);
    cJSON_Delete(req);
    CURL *c = cx.easy_init();
    if (!body || !c) {
        free(body);
        if (c)
            cx.easy_cleanup(c);
        snprintf(why, why_n, "out of memory");
        return -1;
    }
    struct curl_slist *h = cx.slist_append(NULL, "Content-Type: application/json");
    const char *key = p->eval_key_env[0] ? getenv(p->eval_key_env) : NULL;
    if (key && *key) {
        size_t l = strlen(key) + 32;
        char *auth = malloc(l);
        if (auth) {
            snprintf(auth, l, "Authorization: Bearer %s", key);
            h = cx.slist_append(h, auth);
            free(auth);
        }
    }
    struct reply r = {NULL, 0};
    cx.easy_setopt(c, CURLOPT_URL, p->eval_url);
    cx.easy_setopt(c, CURLOPT_POSTFIELDS, body);
    cx.easy_setopt(c, CURLOPT_HTTPHEADER, h);
    long ms = within_ms > 0 && within_ms < (long)p->eval_timeout_ms ? within_ms : (long)p->eval_timeout_ms;
    cx.easy_setopt(c, CURLOPT_TIMEOUT_MS, ms);
    cx.easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, ms);
    cx.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    cx.easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    cx.easy_setopt(c, CURLOPT_WRITEDATA, &r);
    CURLcode rc = cx.easy_perform(c);
    long status = 0;
    cx.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    cx.slist_free_all(h);
    cx.easy_cleanup(c);
    free(body);
    int result = -1;
    if (rc != CURLE_OK) {
        snprintf(why, why_n, "the evaluator did not answer (%s)", cx.easy_strerror(rc));
    } else if (status < 200 || status > 299) {
        snprintf(why, why_n, "the evaluator answered HTTP %ld", status);
    } else {
        cJSON *j = r.buf ? cJSON_Parse(r.buf) : NULL;
        const cJSON *choice = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "choices"), 0);
        const char *content = cJSON_GetStringValue(
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(choice, "message"), "content"));
        if (!content || !*content) {
            snprintf(why, why_n, "the evaluator's reply was not a chat completion");
        } else {
            snprintf(answer, n, "%s", content);
            result = 0;
        }
        cJSON_Delete(j);
    }
    free(r.buf);
    log_event(result == 0 ? LOG_DEBUG : LOG_WARN, "evaluator", "ok=%d http=%ld", result == 0, status);
    return result;
}
