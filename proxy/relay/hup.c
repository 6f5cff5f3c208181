/* hup.c: the Streamable HTTP upstream (hup.h).
 *
 * One struct xfer per message on its way: a POST of a client message, the
 * GET stream, a GET resuming a POST's stream, the replayed initialize of a
 * renewal. A transfer is in exactly one of three lists: live (its easy
 * handle is in the multi), later (it starts at start_at: new, backing off,
 * or waiting out a retry delay) and held (waiting for a new session).
 * Transfers are only ever started from hup_run, outside libcurl's
 * callbacks, since a message handed to the client may make the router send
 * one (a callback must not add handles). */
#include "hup.h"
#include "text.h"
#include "clock.h"

#include "curlx.h"
#include "era.h"
#include "jscan.h"
#include "log.h"
#include "rules.h"
#include "sse.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define CONNECT_MS       10000 /* to open a connection */
#define CONNECT_TRIES    3 /* a refused connection is tried this many times more */
#define BACKOFF_MS       250 /* then 500, 1000 */
#define RESUMES_MAX      5 /* GETs resuming one POST's stream */
#define RESUME_MS        1000 /* when the server named no retry delay */
#define GET_RETRY_MAX_MS 30000 /* the GET stream reconnects at most this far apart */
#define REDIRECTS_MAX    5
#define ERROR_BODY_MAX   (64u << 10)
#define POOL_MAX         16 /* idle easy handles kept */
#define SESSION_MAX      1024 /* an Mcp-Session-Id keel keeps (a JWT fits); a longer one is said unusable */
#define DELETE_MS        2000
#define CONNECTIONS_MAX  32 /* to the server at once */
#define RESERVED                                                                                                       \
    4 /* of them kept for ping, notifications, answers, cancels and the GET stream: a
                                     request beyond CONNECTIONS_MAX - RESERVED waits in keel's queue */
#define RENEWALS_MAX    5 /* session renewals in RENEW_WINDOW_MS; then the session fails its requests */
#define RENEW_WINDOW_MS 60000
#define RETRY_MIN_MS    250 /* a server's retry: below this is raised to it */

/* What keel hands the router is followed by PAD zero bytes: the rules' regex
 * JIT may read a few bytes past a subject, and a result's text can end a
 * few bytes before the body does. */
#define PAD RULE_PAD
_Static_assert(SSE_PAD >= PAD, "event data is padded as much as a body");

enum xkind { XK_POST, XK_GET, XK_RESUME, XK_RENEW };

struct xfer {
    struct xfer *next;
    struct hup *h;
    CURL *e;
    enum xkind kind;
    char *body; /* the message POSTed (owned) */
    size_t bodyn;
    char *id; /* a request's raw id (owned); NULL for others */
    size_t idn;
    int is_init, is_initialized; /* the client's initialize, its notifications/initialized */
    char proto[40]; /* the version the message names in _meta ("" none) */
    char method[64]; /* for Mcp-Method ("" none) */
    char *name; /* for Mcp-Name (header-ready), or NULL */
    char *url; /* after a same-origin redirect; NULL: the endpoint */
    struct curl_slist *hdrs;
    int64_t start_at;
    int64_t heard_at; /* when the server last sent a byte of this answer (or it started) */
    int tries, redirects, resumes, renewals;
    int mode; /* 0 undecided, 1 event stream, 2 one body */
    long status;
    struct sse sse;
    char *buf; /* a body read whole */
    size_t bufn, bufcap;
    int too_large, delivered, sent_session, bearer, renew_ok, is_stream;
    int answered; /* its response came on its stream: the stream has done its work and keel ends it */
    int internal; /* keel's own tools/list after a renewal: its answer is keel's */
    int renewal_of; /* the client's notifications/initialized, sent again on a renewed session */
    int paused; /* its body callback paused it (the client is behind) */
    char session[SESSION_MAX]; /* Mcp-Session-Id of the answer */
    int session_bad; /* the answer gave one keel cannot send back (too long, not visible ASCII) */
};

struct sock {
    curl_socket_t fd;
    short events;
};

struct hup {
    struct hup_opts o;
    struct hup_cb cb;
    CURLM *m;
    CURLU *u; /* --url, parsed once */
    char origin[300]; /* scheme://host:port, for messages to the client */
    struct xfer *live, *later, *held;
    struct xfer *queued; /* requests waiting for a connection (CONNECTIONS_MAX - RESERVED in use) */
    CURL *pool[POOL_MAX];
    int npool;
    struct sock *socks;
    int nsocks, capsocks;
    int64_t timer_at; /* libcurl's timer, monotonic ms (-1 none) */
    char session[SESSION_MAX]; /* "" none */
    int session_bad; /* the session's id could not be kept: later refusals say so */
    char proto[40]; /* negotiated at initialize ("" not yet) */
    char *init_body, *initialized_body;
    size_t init_n, initialized_n;
    int renewing; /* a new session is being opened */
    int initializing; /* the client's initialize is on its way */
    unsigned renew_seq;
    int get_live, get_refused, get_fails;
    char get_last_id[SSE_ID_MAX + 1];
    int busy; /* transfers carrying messages */
    unsigned long misrouted; /* responses dropped: on a stream not their request's */
    int64_t renewed_at[RENEWALS_MAX]; /* when the last renewals started (a ring) */
    int nrenewed;
    int renew_refused; /* the last renewal was refused: RENEWALS_MAX in the window */
    int renew_said; /* and the log has said so */
    uint64_t tools_hash; /* of the tools the client was last given (tools_known) */
    int tools_known;
    int paused; /* the client is behind: no more is read from the server */
    unsigned seed; /* for jitter */
};

/* d ms, give or take a quarter at random: retries from many keels do not
 * arrive together. */
static int64_t jitter(struct hup *h, int64_t d)
{
    h->seed = h->seed * 1103515245u + 12345u;
    return d * 3 / 4 + (int64_t)((h->seed >> 16) % (unsigned)(d / 2 + 1));
}

static void xfer_free(struct xfer *x)
{
    if (!x)
        return;
    if (x->kind != XK_GET)
        x->h->busy--;
    free(x->body);
    free(x->id);
    free(x->name);
    free(x->url);
    free(x->buf);
    sse_free(&x->sse);
    if (x->hdrs)
        cx.slist_free_all(x->hdrs);
    free(x);
}

static void push(struct xfer **list, struct xfer *x)
{
    x->next = *list;
    *list = x;
}

/* At the end of a list: messages leave in the order the client sent them. */
static void append(struct xfer **list, struct xfer *x)
{
    while (*list)
        list = &(*list)->next;
    x->next = NULL;
    *list = x;
}

static void unlink_x(struct xfer **list, struct xfer *x)
{
    for (struct xfer **p = list; *p; p = &(*p)->next)
        if (*p == x) {
            *p = x->next;
            x->next = NULL;
            return;
        }
}

/* ---- libcurl's view of the sockets and the clock ---- */

static int on_socket(CURL *e, curl_socket_t fd, int what, void *userp, void *socketp)
{
    (void)e;
    (void)socketp;
    struct hup *h = userp;
    int i = 0;
    while (i < h->nsocks && h->socks[i].fd != fd)
        i++;
    if (what == CURL_POLL_REMOVE) {
        if (i < h->nsocks)
            h->socks[i] = h->socks[--h->nsocks];
        return 0;
    }
    if (i == h->nsocks) {
        if (h->nsocks == h->capsocks) {
            int cap = h->capsocks ? h->capsocks * 2 : 8;
            struct sock *s = realloc(h->socks, (size_t)cap * sizeof *s);
            if (!s)
                return -1;
            h->socks = s;
            h->capsocks = cap;
        }
        h->socks[h->nsocks++].fd = fd;
    }
    h->socks[i].events = (short)((what & CURL_POLL_IN ? POLLIN : 0) | (what & CURL_POLL_OUT ? POLLOUT : 0));
    return 0;
}

static int on_timer(CURLM *m, long timeout_ms, void *userp)
{
    (void)m;
    struct hup *h = userp;
    h->timer_at = timeout_ms < 0 ? -1 : chrono_mono_ms() + timeout_ms;
    return 0;
}

int hup_pollfds(const struct hup *h, struct pollfd *pf, int max)
{
    int k = 0;
    for (int i = 0; i < h->nsocks && k < max; i++)
        pf[k++] = (struct pollfd){h->socks[i].fd, h->socks[i].events, 0};
    return k;
}

long hup_timeout_ms(const struct hup *h)
{
    int64_t next = h->timer_at;
    for (const struct xfer *x = h->later; x; x = x->next)
        if (next < 0 || x->start_at < next)
            next = x->start_at;
    for (const struct xfer *x = h->live; x && h->o.idle_ms > 0; x = x->next)
        if (x->kind != XK_GET && (next < 0 || x->heard_at + h->o.idle_ms < next))
            next = x->heard_at + h->o.idle_ms;
    if (next < 0)
        return -1;
    int64_t left = next - chrono_mono_ms();
    return left < 0 ? 0 : (long)left;
}

void hup_client_busy(struct hup *h)
{
    int64_t now = chrono_mono_ms();
    for (struct xfer *x = h->live; x; x = x->next)
        x->heard_at = now;
}

int hup_busy(const struct hup *h)
{
    return h->busy;
}

void hup_pause(struct hup *h, int paused)
{
    if (h->paused == !!paused)
        return;
    h->paused = !!paused;
    log_event(LOG_INFO, paused ? "upstream_http_paused" : "upstream_http_resumed", NULL);
    if (paused)
        return; /* each transfer pauses itself at its next bytes (on_body) */
    for (struct xfer *x = h->live; x; x = x->next)
        if (x->paused && x->e) {
            x->paused = 0;
            cx.easy_pause(x->e, CURLPAUSE_CONT);
        }
}

/* ---- what the server sends ---- */

static void fail(struct xfer *x, const char *code, const char *cause, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void fail(struct xfer *x, const char *code, const char *cause, const char *fmt, ...)
{
    struct hup *h = x->h;
    if (!x->id || !h->cb.waiting(h->cb.ctx, x->id, x->idn))
        return;
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    log_event(LOG_WARN, "upstream_http_failed", "cause=%s status=%ld", cause, x->status);
    h->cb.fail(h->cb.ctx, x->id, x->idn, code, x->status, cause, msg);
}

/* A JSON string token's text into out (escapes decoded); 0, or -1. */
static int str_value(const char *raw, size_t rn, char *out, size_t cap)
{
    if (rn < 2 || raw[0] != '"')
        return -1;
    if (!memchr(raw, '\\', rn)) {
        if (rn - 2 >= cap)
            return -1;
        memcpy(out, raw + 1, rn - 2);
        out[rn - 2] = '\0';
        return 0;
    }
    cJSON *v = jscan_parse(raw, rn);
    int ok = cJSON_IsString(v) && strlen(v->valuestring) < cap;
    if (ok)
        strcpy(out, v->valuestring);
    cJSON_Delete(v);
    return ok ? 0 : -1;
}

/* What a refusal says when the session's id could not be kept, else "". */
static const char *unusable_session(const struct hup *h)
{
    return h->session_bad ? ": its session id (Mcp-Session-Id) is over 1023 bytes or not visible ASCII, so keel "
                            "could not send it back; the server must give a shorter one"
                          : "";
}

/* The answer to initialize (the client's or a renewal's): the session and
 * the version it settled on. 1 if it was a result. */
static int took_initialize(struct xfer *x, const char *p, size_t n)
{
    struct hup *h = x->h;
    struct jscan_top top;
    if (!jscan_scan(p, n, &top) || top.method.p || !top.result.p)
        return 0;
    const char *v;
    size_t vn;
    char proto[sizeof h->proto];
    if (jscan_member(top.result.p, top.result.n, "protocolVersion", &v, &vn) == 1 &&
        str_value(v, vn, proto, sizeof proto) == 0)
        memcpy(h->proto, proto, sizeof proto);
    memcpy(h->session, x->session, sizeof h->session);
    h->session_bad = x->session_bad;
    log_event(LOG_INFO, "upstream_http_session", "session=%d", h->session[0] != 0);
    if (h->session_bad)
        log_event(LOG_WARN, "upstream_http_session_unusable", "max_bytes=%d", SESSION_MAX - 1);
    return 1;
}

/* hup_accepts on a message already scanned (scanned: jscan_scan's answer). */
static int accepts(const char *id, size_t idn, const struct jscan_top *top, int scanned)
{
    if (!scanned || top->first != '{' || top->method.p || (!top->result.p && !top->error.p))
        return 1; /* not a response: requests and notifications go anywhere */
    return id && top->id.p && top->id.n == idn && !memcmp(top->id.p, id, idn);
}

int hup_accepts(const char *id, size_t idn, const char *msg, size_t n)
{
    struct jscan_top top;
    int scanned = jscan_scan(msg, n, &top);
    return accepts(id, idn, &top, scanned);
}

static int method_is(const struct xfer *x, const char *m);
static void release_held(struct hup *h);

static void deliver(struct xfer *x, char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) /* JSON allows line breaks only between tokens */
        if (p[i] == '\n' || p[i] == '\r')
            p[i] = ' ';
    if (x->kind == XK_RENEW) {
        if (took_initialize(x, p, n)) {
            x->renew_ok = 1;
            x->answered = x->mode == 1;
        }
        return; /* keel's own request: the client never asked */
    }
    /* A response is taken only on the stream of the request it answers: one
     * carrying another request's id (or any on the GET stream, where the
     * specification allows none) would be delivered as that request's answer
     * and the real one dropped. */
    struct jscan_top top;
    int scanned = jscan_scan(p, n, &top);
    if (!accepts(x->kind == XK_GET ? NULL : x->id, x->idn, &top, scanned)) { /* the message scanned once */
        x->h->misrouted++;
        log_event(LOG_WARN, "upstream_http_misrouted", "stream=%s bytes=%zu", x->kind == XK_GET ? "get" : "post", n);
        return;
    }
    if (x->is_init && x->status >= 200 && x->status < 300 && took_initialize(x, p, n) && x->h->session_bad) {
        /* a session keel cannot send back is no session: every later
         * request would be refused for the want of it */
        fail(x, "UPSTREAM_HTTP", "session_id",
             "the server at %s gave a session id (Mcp-Session-Id) keel cannot send back: over %d bytes, or not "
             "visible ASCII; the server must give one keel can send back",
             x->h->origin, SESSION_MAX - 1);
        x->delivered = 1;
        return;
    }
    /* The tools the client is given, by a hash: after a renewal the client
     * hears tools/list_changed only when the new session's list differs. */
    const char *tv;
    size_t tvn;
    if (scanned && (x->internal || method_is(x, "tools/list")) && top.result.p &&
        jscan_member(top.result.p, top.result.n, "tools", &tv, &tvn) == 1) {
        uint64_t hv = text_hash(tv, tvn, 0x746f6f6c73);
        int changed = x->internal && x->h->tools_known && hv != x->h->tools_hash;
        x->h->tools_hash = hv;
        x->h->tools_known = 1;
        if (changed)
            x->h->cb.renewed(x->h->cb.ctx);
    }
    /* the request's own response on its event stream: the stream is done
     * (a server SHOULD close it then; one that keeps it open with
     * keep-alives would hold the connection, and behind initialize every
     * message held for the session, for ever) */
    if (x->mode == 1 && x->id && scanned && top.first == '{' && !top.method.p && (top.result.p || top.error.p)) {
        x->answered = 1;
        if (x->is_init) {
            x->h->initializing = 0;
            release_held(x->h);
        }
    }
    if (x->internal)
        return; /* keel's own request: the client never asked */
    x->delivered = 1;
    x->h->cb.message(x->h->cb.ctx, p, n);
}

static int on_event(void *ctx, const char *type, char *data, size_t n, int oversize)
{
    struct xfer *x = ctx;
    if (oversize) {
        x->too_large = 1;
        return -1;
    }
    if ((type[0] && strcmp(type, "message") != 0) || !n)
        return 0; /* a priming event, or a type MCP does not use */
    size_t i = 0;
    while (i < n && (data[i] == ' ' || data[i] == '\t'))
        i++;
    if (i < n)
        deliver(x, data, n);
    return 0;
}

static size_t on_body(char *p, size_t size, size_t count, void *ud)
{
    struct xfer *x = ud;
    size_t n = size * count;
    if (x->h->paused && x->e) { /* the client is behind: this waits in the socket */
        x->paused = 1;
        return CURL_WRITEFUNC_PAUSE;
    }
    x->heard_at = chrono_mono_ms();
    if (!x->mode) {
        char *ct = NULL;
        cx.easy_getinfo(x->e, CURLINFO_RESPONSE_CODE, &x->status);
        cx.easy_getinfo(x->e, CURLINFO_CONTENT_TYPE, &ct);
        int ok = x->status >= 200 && x->status < 300;
        x->mode = ok && ct && !strncasecmp(ct, "text/event-stream", 17) ? 1 : 2;
        if (x->mode != 1 && x->kind == XK_GET && ok)
            return 0; /* a GET stream that is not a stream */
    }
    if (x->mode == 1) /* a stream whose request is answered ends here (ended: not a failure) */
        return sse_feed(&x->sse, p, n, on_event, x) < 0 || x->answered ? 0 : n;
    size_t max = x->status >= 200 && x->status < 300 ? x->h->o.max_message_bytes : ERROR_BODY_MAX;
    if (x->bufn + n > max) {
        x->too_large = x->status >= 200 && x->status < 300;
        return x->too_large ? 0 : n; /* an error page is read only in part */
    }
    if (x->bufn + n + PAD > x->bufcap) {
        size_t cap = x->bufcap ? x->bufcap : 4096;
        while (cap < x->bufn + n + PAD)
            cap *= 2;
        char *b = realloc(x->buf, cap);
        if (!b)
            return 0;
        x->buf = b;
        x->bufcap = cap;
    }
    memcpy(x->buf + x->bufn, p, n);
    x->bufn += n;
    memset(x->buf + x->bufn, 0, PAD);
    return n;
}

static int header_is(const char *p, size_t n, const char *name)
{
    size_t k = strlen(name);
    return n > k && p[k] == ':' && !strncasecmp(p, name, k);
}

/* The header's value, trimmed, into out; -1 (out untouched) when it does
 * not fit or holds a byte outside visible ASCII. */
static int header_value(const char *p, size_t n, size_t name_n, char *out, size_t cap)
{
    size_t i = name_n + 1;
    while (i < n && (p[i] == ' ' || p[i] == '\t'))
        i++;
    while (n > i && (p[n - 1] == '\r' || p[n - 1] == '\n' || p[n - 1] == ' ' || p[n - 1] == '\t'))
        n--;
    if (n - i >= cap)
        return -1;
    for (size_t k = i; k < n; k++)
        if ((unsigned char)p[k] < 0x21 || (unsigned char)p[k] > 0x7e)
            return -1;
    memcpy(out, p + i, n - i);
    out[n - i] = '\0';
    return 0;
}

static size_t on_header(char *p, size_t size, size_t count, void *ud)
{
    struct xfer *x = ud;
    size_t n = size * count;
    x->heard_at = chrono_mono_ms();
    if (n >= 5 && !strncmp(p, "HTTP/", 5)) { /* a new answer (after a 100 Continue) */
        x->session[0] = '\0';
        x->session_bad = 0;
        x->bearer = 0;
    } else if (header_is(p, n, "mcp-session-id")) {
        x->session_bad = header_value(p, n, 14, x->session, sizeof x->session) < 0;
    } else if (header_is(p, n, "www-authenticate")) {
        size_t i = 17;
        while (i < n && p[i] == ' ')
            i++;
        x->bearer = n - i >= 6 && !strncasecmp(p + i, "bearer", 6);
    }
    return n;
}

/* ---- starting transfers ---- */

/* 1 if s can go in a header as it is: visible ASCII, no space. What a peer
 * wrote (a method, a version) can hold a line break that would end the
 * header and start another one. */
static int header_plain(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x21 || (unsigned char)*s > 0x7e)
            return 0;
    return 1;
}

static int add_header(struct xfer *x, const char *name, const char *value)
{
    char line[1200];
    snprintf(line, sizeof line, "%s: %s", name, value);
    struct curl_slist *l = cx.slist_append(x->hdrs, line);
    if (!l)
        return -1;
    x->hdrs = l;
    return 0;
}

static int build_headers(struct xfer *x)
{
    struct hup *h = x->h;
    if (x->hdrs)
        cx.slist_free_all(x->hdrs);
    x->hdrs = NULL;
    int post = x->kind == XK_POST || x->kind == XK_RENEW;
    const char *proto = x->proto[0] ? x->proto : h->proto;
    if (!header_plain(proto))
        proto = ""; /* not a version: the server decides without it */
    int rc = add_header(x, "Accept", post ? "application/json, text/event-stream" : "text/event-stream");
    if (post) {
        rc |= add_header(x, "Content-Type", "application/json");
        if (x->method[0] && header_plain(x->method))
            rc |= add_header(x, "Mcp-Method", x->method);
        if (x->name)
            rc |= add_header(x, "Mcp-Name", x->name);
    }
    x->sent_session = h->session[0] && x->kind != XK_RENEW;
    if (x->sent_session)
        rc |= add_header(x, "Mcp-Session-Id", h->session);
    if (proto[0] && x->kind != XK_RENEW)
        rc |= add_header(x, "MCP-Protocol-Version", proto);
    if (x->kind == XK_RESUME && x->sse.id[0])
        rc |= add_header(x, "Last-Event-ID", x->sse.id);
    if (x->kind == XK_GET && h->get_last_id[0])
        rc |= add_header(x, "Last-Event-ID", h->get_last_id);
    rc |= add_header(x, "Expect", ""); /* no 100-continue round trip for large bodies */
    for (char *const *u = h->o.headers; u && *u; u++) {
        struct curl_slist *l = cx.slist_append(x->hdrs, *u);
        if (!l)
            return -1;
        x->hdrs = l;
    }
    return rc ? -1 : 0;
}

/* A new easy handle with what every transfer shares. */
static CURL *new_handle(struct hup *h)
{
    CURL *e = cx.easy_init();
    if (!e)
        return NULL;
    cx.easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    cx.easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    cx.easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    cx.easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    cx.easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
    cx.easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
    if (h->o.cacert)
        cx.easy_setopt(e, CURLOPT_CAINFO, h->o.cacert);
    cx.easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)CONNECT_MS);
    cx.easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    return e;
}

static void start(struct xfer *x)
{
    struct hup *h = x->h;
    CURL *e = h->npool ? h->pool[--h->npool] : new_handle(h); /* a pooled handle keeps the shared options */
    if (!e || build_headers(x) < 0) {
        if (e)
            cx.easy_cleanup(e);
        fail(x, "UPSTREAM_HTTP", "memory", "keel ran out of memory sending this request");
        xfer_free(x);
        return;
    }
    x->e = e;
    x->mode = 0;
    x->status = 0;
    x->bufn = 0;
    x->delivered = x->too_large = 0;
    x->session[0] = '\0';
    cx.easy_setopt(e, CURLOPT_CURLU, x->url ? NULL : h->u); /* CURLU, when set, wins over URL */
    if (x->url)
        cx.easy_setopt(e, CURLOPT_URL, x->url);
    cx.easy_setopt(e, CURLOPT_PRIVATE, x);
    cx.easy_setopt(e, CURLOPT_HTTPHEADER, x->hdrs);
    cx.easy_setopt(e, CURLOPT_WRITEDATA, x);
    cx.easy_setopt(e, CURLOPT_HEADERDATA, x);
    x->heard_at = chrono_mono_ms();
    if (x->kind == XK_POST || x->kind == XK_RENEW) {
        cx.easy_setopt(e, CURLOPT_POSTFIELDS, x->body);
        cx.easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)x->bodyn);
        cx.easy_setopt(e, CURLOPT_POST, 1L);
    } else {
        cx.easy_setopt(e, CURLOPT_HTTPGET, 1L);
    }
    { /* a new stream each time, the cursor kept */
        char id[SSE_ID_MAX + 1];
        memcpy(id, x->sse.id, sizeof id);
        sse_free(&x->sse);
        sse_init(&x->sse, h->o.max_message_bytes);
        memcpy(x->sse.id, id, sizeof id);
    }
    if (cx.multi_add_handle(h->m, e) != CURLM_OK) {
        cx.easy_cleanup(e);
        x->e = NULL;
        fail(x, "UPSTREAM_HTTP", "internal", "keel could not start the HTTP request");
        xfer_free(x);
        return;
    }
    push(&h->live, x);
}

/* A request that may take long to answer (a tool call, a resumed stream):
 * at most CONNECTIONS_MAX - RESERVED of them at once, so that ping, a
 * cancel, a notification or an answer to the server never waits behind
 * requests the server does not answer. */
static int ordinary(const struct xfer *x)
{
    return x->kind == XK_RESUME || (x->kind == XK_POST && x->id && !x->is_init && !method_is(x, "ping"));
}

static int ordinary_live(const struct hup *h)
{
    int k = 0;
    for (const struct xfer *x = h->live; x; x = x->next)
        k += ordinary(x);
    return k;
}

/* Starts every transfer that is due; 1 if any was. While a session is
 * being opened (the client's initialize, or a renewal), the client's other
 * messages wait for it: they need its Mcp-Session-Id. */
static int start_due(struct hup *h)
{
    int64_t now = chrono_mono_ms();
    int any = 0, slots = CONNECTIONS_MAX - RESERVED - ordinary_live(h);
    while (h->queued && slots > 0) { /* the queue first, in order */
        struct xfer *x = h->queued;
        h->queued = x->next;
        x->next = NULL;
        if ((h->renewing || h->initializing) && x->kind == XK_POST) {
            append(&h->held, x);
            continue;
        }
        start(x);
        slots--;
        any = 1;
    }
    struct xfer **p = &h->later;
    while (*p) {
        struct xfer *x = *p;
        if (x->start_at <= now) {
            *p = x->next;
            x->next = NULL;
            if ((h->renewing || h->initializing) && x->kind == XK_POST && !x->is_init) {
                append(&h->held, x);
            } else if (ordinary(x) && (slots <= 0 || h->queued)) {
                append(&h->queued, x);
            } else {
                slots -= ordinary(x);
                if (x->is_init)
                    h->initializing = 1;
                start(x);
                any = 1;
            }
        } else {
            p = &x->next;
        }
    }
    return any;
}

static void later(struct xfer *x, int64_t delay_ms)
{
    x->start_at = chrono_mono_ms() + delay_ms;
    append(&x->h->later, x);
}

/* The messages held for a session go out now, in order. */
static void release_held(struct hup *h)
{
    struct xfer *held = h->held;
    h->held = NULL;
    while (held) {
        struct xfer *x = held;
        held = x->next;
        later(x, 0);
    }
}

static struct xfer *xfer_new(struct hup *h, enum xkind kind)
{
    struct xfer *x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    x->h = h;
    x->kind = kind;
    if (kind != XK_GET)
        h->busy++;
    sse_init(&x->sse, h->o.max_message_bytes);
    return x;
}

static void open_get(struct hup *h)
{
    if (h->get_live || h->get_refused)
        return;
    struct xfer *x = xfer_new(h, XK_GET);
    if (!x)
        return;
    h->get_live = 1;
    memcpy(x->sse.id, h->get_last_id, sizeof x->sse.id);
    later(x, 0);
}

/* A header value as the 2026-07-28 transport wants it: as is when plain
 * visible ASCII, else base64 inside =?base64?...?= . */
static char *header_safe(const char *s)
{
    size_t n = strlen(s);
    int plain =
        n && s[0] != ' ' && s[n - 1] != ' ' && !(n >= 11 && !strncmp(s, "=?base64?", 9) && !strcmp(s + n - 2, "?="));
    for (size_t i = 0; plain && i < n; i++)
        plain = (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] <= 0x7e;
    if (plain)
        return strdup(s);
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *out = malloc(12 + (n + 2) / 3 * 4 + 1), *o = out;
    if (!out)
        return NULL;
    o += sprintf(o, "=?base64?");
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned char)s[i] << 16 | (i + 1 < n ? (unsigned char)s[i + 1] << 8 : 0) |
            (i + 2 < n ? (unsigned char)s[i + 2] : 0);
        *o++ = b64[v >> 18 & 63];
        *o++ = b64[v >> 12 & 63];
        *o++ = i + 1 < n ? b64[v >> 6 & 63] : '=';
        *o++ = i + 2 < n ? b64[v & 63] : '=';
    }
    strcpy(o, "?=");
    return out;
}

static int method_is(const struct xfer *x, const char *m)
{
    return !strcmp(x->method, m);
}

/* The modern era cancels a request by closing its stream. */
/* The client cancelled a request: its transfer ends now, and its
 * connection is free (the client wants no answer). 1 when the transfer was
 * one of the 2026-07-28 era, where ending the stream is the cancellation
 * and the notification is not sent; 0 otherwise (sent on, as the earlier
 * eras want). A request still in keel's queue never leaves. */
static int cancel_stream(struct hup *h, const struct jscan_top *top)
{
    const char *rid;
    size_t ridn;
    if (!top->params.p || jscan_member(top->params.p, top->params.n, "requestId", &rid, &ridn) != 1)
        return 0;
    struct xfer **lists[3] = {&h->live, &h->queued, &h->later};
    for (int l = 0; l < 3; l++)
        for (struct xfer *x = *lists[l]; x; x = x->next)
            if (x->kind != XK_GET && x->id && x->idn == ridn && !memcmp(x->id, rid, ridn)) {
                int modern = x->proto[0] && era_modern_supported(x->proto);
                if (x->e) {
                    cx.multi_remove_handle(h->m, x->e);
                    cx.easy_cleanup(x->e);
                    x->e = NULL;
                }
                unlink_x(lists[l], x);
                log_event(LOG_INFO, "upstream_http_cancelled", "bytes=%zu", x->bodyn);
                xfer_free(x);
                return modern || l > 0;
            }
    return 0;
}

void hup_send(struct hup *h, const char *line, size_t n)
{
    struct jscan_top top;
    if (!jscan_scan(line, n, &top) || top.first != '{') {
        log_event(LOG_WARN, "upstream_http_not_sent", "reason=not_an_object bytes=%zu", n);
        return;
    }
    struct xfer *x = xfer_new(h, XK_POST);
    if (!x || !(x->body = text_dup(line, n))) {
        xfer_free(x);
        log_event(LOG_ERROR, "upstream_http_not_sent", "reason=memory bytes=%zu", n);
        return;
    }
    x->bodyn = n;
    if (top.method.p) {
        if (str_value(top.method.p, top.method.n, x->method, sizeof x->method) < 0)
            x->method[0] = '\0';
        if (top.id.p)
            x->id = text_dup(top.id.p, top.id.n), x->idn = top.id.n;
        if (top.params.p) {
            char v[sizeof x->proto];
            if (era_requested_raw(top.params.p, top.params.n, v, sizeof v) == 1)
                memcpy(x->proto, v, sizeof v);
            const char *nm;
            size_t nmn;
            char name[1024];
            if ((method_is(x, "tools/call") || method_is(x, "prompts/get")) &&
                jscan_member(top.params.p, top.params.n, "name", &nm, &nmn) == 1 &&
                str_value(nm, nmn, name, sizeof name) == 0)
                x->name = header_safe(name);
            else if (method_is(x, "resources/read") &&
                     jscan_member(top.params.p, top.params.n, "uri", &nm, &nmn) == 1 &&
                     str_value(nm, nmn, name, sizeof name) == 0)
                x->name = header_safe(name);
        }
    }
    if (method_is(x, "initialize") && x->id) {
        x->is_init = 1;
        free(h->init_body);
        h->init_body = text_dup(line, n);
        h->init_n = h->init_body ? n : 0;
        h->session[0] = '\0'; /* a new handshake starts a new session */
    } else if (method_is(x, "notifications/initialized")) {
        x->is_initialized = 1;
        free(h->initialized_body);
        h->initialized_body = text_dup(line, n);
        h->initialized_n = h->initialized_body ? n : 0;
    } else if (method_is(x, "notifications/cancelled") && !top.id.p && cancel_stream(h, &top)) {
        xfer_free(x);
        return;
    }
    later(x, 0);
}

/* ---- a renewed session ---- */

/* A new session for an expired one, the client's initialize sent again.
 * At most RENEWALS_MAX in RENEW_WINDOW_MS (a server whose every replica
 * forgets the session would otherwise be asked thousands of times a
 * second), each later than the one before (250 ms, doubling, with jitter);
 * past the budget, renew_refused is set and nothing is sent. */
static void renew(struct hup *h)
{
    if (h->renewing)
        return;
    int64_t now = chrono_mono_ms();
    int recent = 0;
    for (int i = 0; i < h->nrenewed; i++)
        recent += now - h->renewed_at[i] < RENEW_WINDOW_MS;
    h->renew_refused = recent >= RENEWALS_MAX;
    if (h->renew_refused) {
        if (!h->renew_said) /* said once, until the window has room again */
            log_event(LOG_WARN, "upstream_http_renewals_exhausted", "renewals=%d window_s=%d", RENEWALS_MAX,
                      RENEW_WINDOW_MS / 1000);
        h->renew_said = 1;
        return;
    }
    h->renew_said = 0;
    int slot = 0; /* the oldest, or a free one */
    for (int i = 1; i < RENEWALS_MAX; i++)
        if (i >= h->nrenewed || h->renewed_at[i] < h->renewed_at[slot])
            slot = i;
    if (h->nrenewed < RENEWALS_MAX)
        slot = h->nrenewed;
    h->renewed_at[slot] = now;
    h->nrenewed = h->nrenewed < RENEWALS_MAX ? h->nrenewed + 1 : RENEWALS_MAX;
    h->session[0] = '\0';
    if (!h->init_body)
        return;
    cJSON *m = jscan_parse(h->init_body, h->init_n);
    char id[48];
    snprintf(id, sizeof id, "keel-renew-%u", ++h->renew_seq);
    if (m)
        cJSON_ReplaceItemInObjectCaseSensitive(m, "id", cJSON_CreateString(id));
    char *s = m ? cJSON_PrintUnformatted(m) : NULL;
    cJSON_Delete(m);
    struct xfer *x = s ? xfer_new(h, XK_RENEW) : NULL;
    if (!x) {
        free(s);
        return;
    }
    x->body = s;
    x->bodyn = strlen(s);
    snprintf(x->method, sizeof x->method, "initialize");
    h->renewing = 1;
    log_event(LOG_INFO, "upstream_http_session_expired", "renewal=%u", h->renew_seq);
    later(x, recent ? jitter(h, (int64_t)BACKOFF_MS << (recent - 1)) : 0);
}

static void renewed(struct hup *h, int ok, long status)
{
    h->renewing = 0;
    struct xfer *held = h->held;
    h->held = NULL;

    if (ok && h->initialized_body) {
        struct xfer *n = xfer_new(h, XK_POST);
        if (n && (n->body = text_dup(h->initialized_body, h->initialized_n))) {
            n->bodyn = h->initialized_n;
            n->is_initialized = 1;
            n->renewal_of = 1;
            snprintf(n->method, sizeof n->method, "notifications/initialized");
            later(n, 0);
        } else if (n) {
            xfer_free(n);
        }
    }
    while (held) {
        struct xfer *x = held;
        held = x->next;
        x->next = NULL;
        if (ok && x->is_initialized) {
            xfer_free(x); /* sent again above */
        } else if (ok) {
            later(x, 0);
        } else {
            x->status = status;
            if (h->renew_refused)
                fail(x, "UPSTREAM_HTTP", "session_expired",
                     "the server at %s keeps ending the session: keel opened a new one %d times in the last minute "
                     "and stops (does every replica behind it know the session?)",
                     h->origin, RENEWALS_MAX);
            else
                fail(x, "UPSTREAM_HTTP", "session_expired",
                     "the server at %s ended the session and did not start a new one (HTTP %ld)", h->origin, status);
            xfer_free(x);
        }
    }
    if (ok)
        log_event(LOG_INFO, "upstream_http_session_renewed", "renewal=%u", h->renew_seq);
    /* The client hears tools/list_changed only when the new session's tools
     * differ from those it was given: keel asks for them once the session
     * is initialized (ended, below). */
}

/* keel's own tools/list on a renewed session, compared with what the
 * client was given (deliver). */
static void list_tools(struct hup *h)
{
    if (!h->tools_known)
        return;
    char id[48], body[128];
    int idn = snprintf(id, sizeof id, "\"keel-tools-%u\"", h->renew_seq);
    int k = snprintf(body, sizeof body, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"method\":\"tools/list\"}", id);
    struct xfer *x = xfer_new(h, XK_POST);
    if (!x || !(x->body = text_dup(body, (size_t)k)) || !(x->id = text_dup(id, (size_t)idn))) {
        xfer_free(x);
        return;
    }
    x->idn = (size_t)idn;
    x->bodyn = (size_t)k;
    x->internal = 1;
    snprintf(x->method, sizeof x->method, "tools/list");
    later(x, 0);
}

/* ---- a transfer that ended ---- */

static const char *cause_of(CURLcode rc)
{
    switch (rc) {
    case CURLE_COULDNT_CONNECT:
        return "connect";
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
        return "dns";
    case CURLE_OPERATION_TIMEDOUT:
        return "timeout";
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
        return "tls";
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_HTTP2_STREAM:
    case CURLE_HTTP2:
        return "stream_cut";
    case CURLE_SEND_ERROR:
        return "send";
    default:
        return "transport";
    }
}

static const char *cause_text(const char *cause)
{
    static const struct {
        const char *cause, *text;
    } t[] = {
        {"connect", "the connection was refused or could not be made"},
        {"dns", "its host name could not be resolved"},
        {"timeout", "it did not answer in time"},
        {"tls", "the TLS handshake failed (is its certificate valid, or is --cacert needed?)"},
        {"stream_cut", "the connection broke before the answer was complete"},
        {"send", "the request could not be sent"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(t[i].cause, cause))
            return t[i].text;
    return "the HTTP transfer failed";
}

/* The server's own JSON-RPC error in an HTTP error's body is the answer
 * (a modern server says -32022 with a 400, say); without an id it is the
 * answer to this request. 1 if it answered. */
static int error_body(struct xfer *x)
{
    struct jscan_top top;
    if (!x->buf || !x->bufn || !x->id || !jscan_scan(x->buf, x->bufn, &top) || top.first != '{' || !top.error.p ||
        top.method.p || top.error.p[0] != '{')
        return 0;
    if (top.id.p && !(top.id.n == 4 && !memcmp(top.id.p, "null", 4))) {
        deliver(x, x->buf, x->bufn);
        return 1;
    }
    size_t n = x->idn + top.error.n + 40 + PAD;
    char *s = calloc(1, n);
    if (!s)
        return 0;
    int k = snprintf(s, n, "{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"error\":%.*s}", (int)x->idn, x->id, (int)top.error.n,
                     top.error.p);
    deliver(x, s, (size_t)k);
    free(s);
    return 1;
}

static int same_origin(const char *a, const char *b)
{
    CURLU *u[2] = {cx.url(), cx.url()};
    const char *s[2] = {a, b};
    int same = u[0] && u[1];
    char *part[2][3] = {{NULL}};
    static const CURLUPart parts[3] = {CURLUPART_SCHEME, CURLUPART_HOST, CURLUPART_PORT};
    for (int i = 0; i < 2 && same; i++) {
        same = cx.url_set(u[i], CURLUPART_URL, s[i], 0) == CURLUE_OK;
        for (int k = 0; k < 3 && same; k++)
            same = cx.url_get(u[i], parts[k], &part[i][k], CURLU_DEFAULT_PORT) == CURLUE_OK;
    }
    for (int k = 0; k < 3 && same; k++)
        same = !strcasecmp(part[0][k], part[1][k]);
    for (int i = 0; i < 2; i++) {
        for (int k = 0; k < 3; k++)
            cx.free(part[i][k]);
        if (u[i])
            cx.url_cleanup(u[i]);
    }
    return same;
}

/* The server's retry: for this stream (raised to RETRY_MIN_MS), else RESUME_MS. */
static long retry_delay(const struct xfer *x)
{
    return x->sse.retry_ms < 0 ? RESUME_MS : x->sse.retry_ms < RETRY_MIN_MS ? RETRY_MIN_MS : x->sse.retry_ms;
}

static void get_ended(struct hup *h, struct xfer *x, CURLcode rc)
{
    if (x->mode == 1)
        memcpy(h->get_last_id, x->sse.id, sizeof h->get_last_id);
    int ok = rc == CURLE_OK && x->status >= 200 && x->status < 300 && x->is_stream;
    if (x->status == 405 || (rc == CURLE_OK && x->status >= 200 && x->status < 300 && !x->is_stream)) {
        h->get_refused = 1; /* the server offers no stream: fine */
        log_event(LOG_INFO, "upstream_http_no_get_stream", "status=%ld", x->status);
    } else if (x->status == 404 && x->sent_session) {
        renew(h);
    }
    h->get_live = 0;
    if (h->get_refused || h->renewing || (!h->session[0] && !h->proto[0])) {
        xfer_free(x);
        return;
    }
    h->get_fails = ok ? 0 : h->get_fails + 1;
    long delay = retry_delay(x);
    for (int i = 1; i < h->get_fails && delay < GET_RETRY_MAX_MS; i++)
        delay *= 2;
    if (delay > GET_RETRY_MAX_MS)
        delay = GET_RETRY_MAX_MS;
    delay = (long)jitter(h, delay);
    h->get_live = 1;
    memcpy(x->sse.id, h->get_last_id, sizeof x->sse.id);
    later(x, delay);
}

static void ended(struct hup *h, struct xfer *x, CURLcode rc)
{
    if (x->status == 0)
        cx.easy_getinfo(x->e, CURLINFO_RESPONSE_CODE, &x->status);
    char *ct = NULL;
    cx.easy_getinfo(x->e, CURLINFO_CONTENT_TYPE, &ct);
    x->is_stream = ct && !strncasecmp(ct, "text/event-stream", 17);
    char *redirect = NULL;
    if (x->status == 307 || x->status == 308) {
        char *r = NULL;
        cx.easy_getinfo(x->e, CURLINFO_REDIRECT_URL, &r);
        redirect = r ? strdup(r) : NULL;
    }
    cx.multi_remove_handle(h->m, x->e);
    if (h->npool < POOL_MAX)
        h->pool[h->npool++] = x->e;
    else
        cx.easy_cleanup(x->e);
    x->e = NULL;
    if (x->answered) /* keel ended the stream once its response came */
        rc = CURLE_OK;
    log_event(LOG_DEBUG, "upstream_http_done", "kind=%d status=%ld curl=%d bytes=%zu", (int)x->kind, x->status, (int)rc,
              x->bodyn);
    long st = x->status;
    int ok = st >= 200 && st < 300;

    if (x->kind == XK_GET) {
        free(redirect);
        get_ended(h, x, rc);
        return;
    }
    /* a redirect keel follows, or a refused connection tried again, is the
     * same initialize still on its way; anything else (an answer, a failure,
     * a redirect keel refuses) ends it, and what waited for it goes */
    int follows = redirect && x->redirects < REDIRECTS_MAX && same_origin(h->o.url, redirect);
    if (x->is_init && !follows && !(rc == CURLE_COULDNT_CONNECT && x->tries < CONNECT_TRIES)) {
        h->initializing = 0;
        release_held(h);
    }
    if (x->too_large) {
        free(redirect);
        fail(x, "MESSAGE_TOO_LARGE", "too_large",
             "the server's answer exceeds the limit of %zu bytes (--max-message-bytes)", h->o.max_message_bytes);
        if (x->kind == XK_RENEW)
            renewed(h, 0, st);
        xfer_free(x);
        return;
    }
    if (rc != CURLE_OK) {
        free(redirect);
        const char *cause = cause_of(rc);
        if (rc == CURLE_COULDNT_CONNECT && x->tries < CONNECT_TRIES) {
            x->tries++; /* nothing reached the server: safe to send again */
            log_event(LOG_INFO, "upstream_http_retry", "attempt=%d", x->tries);
            later(x, jitter(h, (int64_t)BACKOFF_MS << (x->tries - 1)));
            return;
        }
        if (!strcmp(cause, "stream_cut") && x->mode == 1 && x->sse.id[0] && x->id && x->resumes < RESUMES_MAX &&
            h->cb.waiting(h->cb.ctx, x->id, x->idn)) {
            x->kind = XK_RESUME; /* the stream named a cursor: pick it up there */
            x->resumes++;
            log_event(LOG_INFO, "upstream_http_resume", "attempt=%d", x->resumes);
            later(x, jitter(h, retry_delay(x)));
            return;
        }
        if (x->kind == XK_RENEW)
            renewed(h, 0, st);
        fail(x, "UPSTREAM_HTTP", cause, "keel could not get an answer from the server at %s: %s", h->origin,
             cause_text(cause));
        xfer_free(x);
        return;
    }
    if (ok && x->mode == 2 && x->bufn) {
        size_t i = 0;
        while (i < x->bufn && strchr(" \t\r\n", x->buf[i]))
            i++;
        if (i < x->bufn)
            deliver(x, x->buf, x->bufn);
    }
    if (x->kind == XK_RENEW) {
        free(redirect);
        renewed(h, ok && x->renew_ok, st);
        xfer_free(x);
        return;
    }
    if (ok) {
        free(redirect);
        if (x->is_initialized) {
            open_get(h);
            if (x->renewal_of)
                list_tools(h);
        }
        if (x->id && h->cb.waiting(h->cb.ctx, x->id, x->idn)) {
            if (x->mode == 1 && x->sse.id[0] && x->resumes < RESUMES_MAX) {
                x->kind = XK_RESUME; /* closed early, as a server may: poll it again */
                x->resumes++;
                log_event(LOG_INFO, "upstream_http_resume", "attempt=%d", x->resumes);
                later(x, jitter(h, retry_delay(x)));
                return;
            }
            fail(x, "UPSTREAM_HTTP", x->delivered ? "bad_body" : "no_answer",
                 x->delivered
                     ? "the server at %s answered with something that is not a JSON-RPC response to this request"
                     : "the server at %s ended its answer without a response to this request",
                 h->origin);
        }
        xfer_free(x);
        return;
    }
    if (st == 404 && x->sent_session && h->init_body && x->renewals < 1 && x->kind == XK_POST) {
        free(redirect);
        x->renewals++; /* the session expired: a new one, then this again */
        append(&h->held, x);
        renew(h);
        if (!h->renewing)
            renewed(h, 0, st);
        return;
    }
    if (follows) {
        free(x->url);
        x->url = redirect;
        x->redirects++;
        later(x, 0);
        return;
    }
    if (redirect) {
        free(redirect);
        fail(x, "UPSTREAM_HTTP", "redirect",
             "the server at %s redirected this request to another origin (or too often); keel follows redirects "
             "only within the origin of --url",
             h->origin);
        xfer_free(x);
        return;
    }
    if (x->kind == XK_RESUME && (st == 404 || st == 405 || st == 400)) {
        fail(x, "UPSTREAM_HTTP", "no_answer",
             "the server at %s closed the stream of this request and could not resume it (HTTP %ld)", h->origin, st);
        xfer_free(x);
        return;
    }
    if (!error_body(x)) {
        if (st == 401)
            fail(x, "UPSTREAM_HTTP", "unauthorized",
                 "the server at %s needs authorization (HTTP 401%s): give keel a token with --header-env "
                 "'Authorization=VAR', VAR holding 'Bearer <token>' (keel does not run OAuth sign-in flows)",
                 h->origin, x->bearer ? ", a bearer token" : "");
        else
            fail(x, "UPSTREAM_HTTP", "http_status", "the server at %s answered HTTP %ld%s", h->origin, st,
                 unusable_session(h));
    }
    if (x->id && h->cb.waiting(h->cb.ctx, x->id, x->idn))
        fail(x, "UPSTREAM_HTTP", "http_status", "the server at %s answered HTTP %ld%s", h->origin, st,
             unusable_session(h));
    if (!x->id)
        log_event(LOG_WARN, "upstream_http_refused", "status=%ld bytes=%zu", st, x->bodyn);
    xfer_free(x);
}

/* Requests the server has said nothing on for idle_ms fail. */
static void idle_check(struct hup *h)
{
    if (h->o.idle_ms <= 0)
        return;
    int64_t now = chrono_mono_ms();
    struct xfer **p = &h->live;
    while (*p) {
        struct xfer *x = *p;
        if (x->kind == XK_GET || now - x->heard_at < h->o.idle_ms) {
            p = &x->next;
            continue;
        }
        *p = x->next;
        cx.multi_remove_handle(h->m, x->e);
        cx.easy_cleanup(x->e);
        x->e = NULL;
        if (x->kind == XK_RENEW)
            renewed(h, 0, 0);
        if (x->is_init) {
            h->initializing = 0;
            release_held(h);
        }
        fail(x, "UPSTREAM_HTTP", "timeout", "the server at %s sent nothing for %ld s (--timeout)", h->origin,
             h->o.idle_ms / 1000);
        xfer_free(x);
    }
}

void hup_run(struct hup *h, const struct pollfd *pf, int n)
{
    int running = 0;
    idle_check(h);
    for (int i = 0; i < n; i++) {
        if (!pf[i].revents)
            continue;
        int ev = (pf[i].revents & POLLIN ? CURL_CSELECT_IN : 0) | (pf[i].revents & POLLOUT ? CURL_CSELECT_OUT : 0) |
            (pf[i].revents & (POLLERR | POLLHUP | POLLNVAL) ? CURL_CSELECT_ERR : 0);
        cx.multi_socket_action(h->m, pf[i].fd, ev, &running);
    }
    for (int round = 0; round < 4; round++) {
        int kick = start_due(h);
        if (kick || (h->timer_at >= 0 && chrono_mono_ms() >= h->timer_at)) {
            h->timer_at = -1;
            cx.multi_socket_action(h->m, CURL_SOCKET_TIMEOUT, 0, &running);
        }
        CURLMsg *msg;
        int left, any = 0;
        while ((msg = cx.multi_info_read(h->m, &left))) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            struct xfer *x = NULL;
            cx.easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x);
            CURLcode rc = msg->data.result;
            unlink_x(&h->live, x);
            ended(h, x, rc);
            any = 1;
        }
        if (!any && !kick)
            break;
    }
}

struct hup *hup_open(const struct hup_opts *o, const struct hup_cb *cb, char *why, size_t whyn)
{
    if (curlx_load(why, whyn) < 0)
        return NULL;
    struct hup *h = calloc(1, sizeof *h);
    CURLU *u = cx.url();
    char *scheme = NULL, *host = NULL, *port = NULL;
    if (!h || !u) {
        snprintf(why, whyn, "out of memory");
        goto bad;
    }
    if (cx.url_set(u, CURLUPART_URL, o->url, 0) != CURLUE_OK ||
        cx.url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
        cx.url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
        cx.url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK) {
        snprintf(why, whyn, "--url is not a URL keel can read; give one like https://example.com/mcp");
        goto bad;
    }
    if (strcasecmp(scheme, "http") && strcasecmp(scheme, "https")) {
        snprintf(why, whyn, "--url must be http:// or https:// (Streamable HTTP)");
        goto bad;
    }
    snprintf(h->origin, sizeof h->origin, "%s://%s:%s", scheme, host, port);
    cx.free(scheme);
    cx.free(host);
    cx.free(port);
    h->u = u;
    h->o = *o;
    h->cb = *cb;
    h->timer_at = -1;
    h->m = cx.multi_init();
    if (!h->m) {
        cx.url_cleanup(u);
        free(h);
        snprintf(why, whyn, "libcurl could not start");
        return NULL;
    }
    cx.multi_setopt(h->m, CURLMOPT_SOCKETFUNCTION, on_socket);
    cx.multi_setopt(h->m, CURLMOPT_SOCKETDATA, h);
    cx.multi_setopt(h->m, CURLMOPT_TIMERFUNCTION, on_timer);
    cx.multi_setopt(h->m, CURLMOPT_TIMERDATA, h);
    cx.multi_setopt(h->m, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long)CONNECTIONS_MAX);
    cx.multi_setopt(h->m, CURLMOPT_MAXCONNECTS, (long)CONNECTIONS_MAX);
    return h;
bad:
    if (u) {
        cx.free(scheme);
        cx.free(host);
        cx.free(port);
        cx.url_cleanup(u);
    }
    free(h);
    return NULL;
}

static void free_list(struct hup *h, struct xfer *x)
{
    while (x) {
        struct xfer *next = x->next;
        if (x->e) {
            cx.multi_remove_handle(h->m, x->e);
            cx.easy_cleanup(x->e);
        }
        xfer_free(x);
        x = next;
    }
}

void hup_close(struct hup *h)
{
    if (!h)
        return;
    if (h->misrouted)
        log_event(LOG_WARN, "upstream_http_misrouted_total", "responses=%lu", h->misrouted);
    h->paused = 0;
    free_list(h, h->live);
    free_list(h, h->queued);
    free_list(h, h->later);
    free_list(h, h->held);
    if (h->session[0]) { /* the session is no longer needed: say so */
        CURL *e = cx.easy_init();
        struct xfer x = {.h = h, .kind = XK_GET};
        h->busy++;
        if (e && build_headers(&x) == 0) {
            cx.easy_setopt(e, CURLOPT_URL, h->o.url);
            cx.easy_setopt(e, CURLOPT_CUSTOMREQUEST, "DELETE");
            cx.easy_setopt(e, CURLOPT_HTTPHEADER, x.hdrs);
            cx.easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
            cx.easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
            cx.easy_setopt(e, CURLOPT_NOBODY, 0L);
            cx.easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)DELETE_MS);
            cx.easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
            cx.easy_setopt(e, CURLOPT_WRITEDATA, &x);
            if (h->o.cacert)
                cx.easy_setopt(e, CURLOPT_CAINFO, h->o.cacert);
            x.e = e;
            x.mode = 2;
            CURLcode rc = cx.easy_perform(e);
            long st = 0;
            cx.easy_getinfo(e, CURLINFO_RESPONSE_CODE, &st);
            log_event(LOG_INFO, "upstream_http_session_ended", "status=%ld curl=%d", st, (int)rc);
        }
        if (x.hdrs)
            cx.slist_free_all(x.hdrs);
        free(x.buf);
        if (e)
            cx.easy_cleanup(e);
        h->busy--;
    }
    while (h->npool)
        cx.easy_cleanup(h->pool[--h->npool]);
    cx.multi_cleanup(h->m);
    cx.url_cleanup(h->u);
    free(h->socks);
    free(h->init_body);
    free(h->initialized_body);
    free(h);
}
