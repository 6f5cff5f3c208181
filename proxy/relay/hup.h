/* hup.h: an upstream MCP server over Streamable HTTP.
 *
 * keel wrap --url relays the client's stdio to a remote server: each client
 * message is POSTed on its own (Accept: application/json, text/event-stream),
 * and what the server answers, one JSON object or an event stream of them,
 * is handed back message by message as it arrives. libcurl's multi
 * interface does the HTTP; it runs inside keel's own poll loop (no threads):
 * the loop asks which descriptors to wait on and for how long, and calls
 * hup_run when one is ready.
 *
 * What the transport keeps: the session (Mcp-Session-Id, from the answer to
 * initialize), the protocol version negotiated (MCP-Protocol-Version on
 * every later request; a request naming its own version in _meta, the
 * 2026-07-28 era, sends that one), the GET stream for the server's own
 * requests and notifications where the server offers one, resumed with
 * Last-Event-ID when it drops, and the client's initialize, replayed
 * without a session when the server answers 404 for the one it had; the
 * messages caught by the 404 are sent again on the new session and the
 * client is told its tool list may have changed.
 *
 * Every request gets an answer: when the server cannot be reached, answers
 * an HTTP error, sends a body that is not JSON-RPC, goes silent past the
 * idle limit, or ends its stream before the response, the request fails
 * with the cause (hup_cb.fail). Only what cannot have reached the server
 * (a refused connection) is tried again, and a stream the server closed
 * after naming an event id is resumed, as the specification provides.
 * Redirects are followed within the URL's origin only.
 *
 * Nothing here logs a URL, a header value or a body: events and sizes. */
#ifndef KEEL_HUP_H
#define KEEL_HUP_H

#include <poll.h>
#include <stddef.h>

struct hup_opts {
    const char *url;
    char *const *headers; /* "Name: value", NULL-terminated, or NULL */
    const char *cacert; /* a CA bundle for a private CA; NULL: the system's */
    long idle_ms; /* a request with no byte from the server this long fails; 0: never */
    size_t max_message_bytes;
};

struct hup_cb {
    void *ctx;
    /* A message from the server: one JSON text on one line (raw line breaks
     * between tokens are made spaces), writable. */
    void (*message)(void *ctx, char *line, size_t n);
    /* 1 while the client still waits for the answer to request id. */
    int (*waiting)(void *ctx, const char *id, size_t idn);
    /* Request id will get no answer from the server: answer it with this. */
    void (*fail)(void *ctx, const char *id, size_t idn, const char *code, long status, const char *cause,
                 const char *msg);
    /* A new session replaced one the server ended. */
    void (*renewed)(void *ctx);
};

struct hup;

/* NULL with why when libcurl cannot be loaded or the URL is not http(s). */
struct hup *hup_open(const struct hup_opts *o, const struct hup_cb *cb, char *why, size_t whyn);
/* A message for the server (a whole JSON-RPC message, as the client sent
 * it). Queued; it goes out in the next hup_run. */
void hup_send(struct hup *h, const char *line, size_t n);
/* The descriptors to wait on now (at most max), and how long at most (-1: no limit). */
int hup_pollfds(const struct hup *h, struct pollfd *pf, int max);
long hup_timeout_ms(const struct hup *h);
/* Does what is due: the ready descriptors of pf (as poll filled them),
 * timers, and the messages queued since. */
void hup_run(struct hup *h, const struct pollfd *pf, int n);
/* The client is answering a request of the server's (sampling, elicitation:
 * perhaps a person filling in a form): the requests in flight, which may be
 * waiting on it, are not idle. */
void hup_client_busy(struct hup *h);
/* Messages on their way or waiting for an answer (the GET stream not counted). */
int hup_busy(const struct hup *h);

/* The client is behind (paused): no more is read from the server until it
 * is not (transfers pause at their next bytes, which wait in the socket and
 * then at the server); resumed transfers go on where they stopped. */
/* 1 when the message msg[0..n), arriving on the stream of the request
 * whose raw id is id[0..idn) (NULL: the GET stream), may be taken: it is
 * not a response, or it answers that very request (its id the same JSON
 * text). A response on another request's stream, or on the GET stream
 * (where the specification allows none), is not. */
int hup_accepts(const char *id, size_t idn, const char *msg, size_t n);

void hup_pause(struct hup *h, int paused);
/* Ends the session (DELETE, at most 2 s) and frees everything. */
void hup_close(struct hup *h);

#endif
