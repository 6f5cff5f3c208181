/* wrapurl.c: the event loop of keel wrap --url.
 *
 * The same relay as for a command (route.c, the overlay, keel's tools), with
 * the upstream a Streamable HTTP server (hup.h) instead of a child process.
 * One thread and one poll(2): the signal pipe, the client's stdin and stdout,
 * and whatever sockets libcurl has open, with libcurl's timers as the poll
 * timeout. The client side is read only while its queue is under HIGH_WATER,
 * as in wrap.c, and the server's side likewise: while more than HIGH_WATER
 * waits for the client, the transfers are paused.
 *
 * There is no process to lose: a server that cannot be reached fails each
 * request with the cause, and keel goes on. When the client leaves (stdin
 * EOF) or a signal asks keel to stop, requests still in flight get up to
 * GRACE_MS to be answered, then the session is ended (DELETE) and keel
 * exits 0. */
#include "wrap.h"
#include "clock.h"

#include "jsonrpc.h"
#include "log.h"
#include "relay.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define HIGH_WATER (1u << 20)
#define GRACE_MS   2000
#define MAX_SOCKS  256

static void on_message(void *ctx, char *line, size_t n)
{
    struct relay *r = ctx;
    relay_server_line(r, line, n);
    /* the client is behind: the transfers pause at their next bytes, within
     * this round of reading too (a socket's buffer can hold megabytes) */
    if (r->cout.bytes >= HIGH_WATER)
        hup_pause(r->http, 1);
}

static int on_waiting(void *ctx, const char *id, size_t idn)
{
    struct relay *r = ctx;
    return pending_kind(&r->pend, FROM_CLIENT, id, idn) >= 0;
}

static void on_fail(void *ctx, const char *id, size_t idn, const char *code, long status, const char *cause,
                    const char *msg)
{
    struct relay *r = ctx;
    int kind;
    void *data = NULL;
    if (!pending_take(&r->pend, FROM_CLIENT, id, idn, &kind, &data))
        return;
    relay_call_data_free(data);
    cJSON *e = jr_error_value(JR_INTERNAL_ERROR, msg, code);
    cJSON *d = cJSON_GetObjectItemCaseSensitive(e, "data");
    cJSON_AddNumberToObject(d, "status", (double)status);
    cJSON_AddStringToObject(d, "cause", cause);
    char *text = jr_reply(id, idn, "error", e);
    if (text)
        outq_line(&r->cout, text, strlen(text));
    free(text);
}

static void on_renewed(void *ctx)
{
    struct relay *r = ctx;
    static const char changed[] = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}";
    outq_line(&r->cout, changed, sizeof changed - 1);
}

int wrap_url_run(const struct wrap_opts *o)
{
    struct relay r;
    relay_init(&r, o);
    struct hup_opts ho = {o->url, o->headers, o->cacert, o->idle_ms, o->max_message_bytes};
    struct hup_cb cb = {&r, on_message, on_waiting, on_fail, on_renewed};
    char why[300];
    r.http = hup_open(&ho, &cb, why, sizeof why);
    if (!r.http) {
        /* a --url that is no URL is a usage error (64), as a wrong scheme is */
        int usage = !strncmp(why, "--url", 5);
        fprintf(stderr, "keel: %s%s\n", why, usage ? "\nTry 'keel wrap --help'." : "");
        relay_free(&r);
        return usage ? 64 : 1;
    }
    if (relay_open(&r) < 0) {
        hup_close(r.http);
        relay_free(&r);
        return 1;
    }
    r.up = UP;
    log_event(LOG_INFO, "wrap_start", "tools=%d overlay=%u max_message_bytes=%zu upstream=http", r.nexposed, r.ov.parts,
              o->max_message_bytes);

    int client_eof = 0, stop_signal = 0, status = 0;
    int64_t closing_at = -1;
    struct pollfd pf[3 + MAX_SOCKS];
    for (;;) {
        int np = 0, icin = -1;
        pf[np++] = (struct pollfd){relay_signal_fd(), POLLIN, 0};
        if (!client_eof && r.cout.bytes < HIGH_WATER)
            icin = np, pf[np++] = (struct pollfd){STDIN_FILENO, POLLIN, 0};
        if (r.cout.bytes && !r.cout.failed)
            pf[np++] = (struct pollfd){STDOUT_FILENO, POLLOUT, 0};
        /* Back-pressure: while more than HIGH_WATER waits for the client,
         * nothing more is read from the server; below half of it, reading
         * goes on. */
        if (r.cout.bytes >= HIGH_WATER)
            hup_pause(r.http, 1);
        else if (r.cout.bytes <= HIGH_WATER / 2)
            hup_pause(r.http, 0);
        int first_sock = np;
        np += hup_pollfds(r.http, pf + np, MAX_SOCKS);
        long timeout = hup_timeout_ms(r.http);
        if (closing_at >= 0) {
            long left = (long)(closing_at - chrono_mono_ms());
            if (left < 0)
                left = 0;
            if (timeout < 0 || left < timeout)
                timeout = left;
        }
        if (poll(pf, (nfds_t)np, (int)timeout) < 0 && errno != EINTR) {
            log_event(LOG_ERROR, "poll_failed", "errno=%d", errno);
            status = 1;
            break;
        }
        if (pf[0].revents & POLLIN)
            relay_signals(&stop_signal);
        if (stop_signal && !client_eof) {
            client_eof = 1;
            status = 128 + stop_signal;
        }
        /* The server first: what it answered goes out before new requests. */
        if (pending_any(&r.pend, FROM_SERVER, ~0u))
            hup_client_busy(r.http);
        hup_run(r.http, pf + first_sock, np - first_sock);
        if (icin >= 0 && !client_eof && (pf[icin].revents & (POLLIN | POLLHUP | POLLERR)) && relay_read_client(&r))
            client_eof = 1;
        hup_run(r.http, NULL, 0); /* what the client just sent leaves now */
        if (r.cout.bytes && !r.cout.failed)
            outq_flush(&r.cout);
        if (r.cout.failed && !client_eof) {
            log_event(LOG_INFO, "client_gone", NULL);
            client_eof = 1;
        }
        if (client_eof && closing_at < 0)
            closing_at = chrono_mono_ms() + GRACE_MS;
        if (closing_at >= 0 && (!hup_busy(r.http) || chrono_mono_ms() >= closing_at || r.cout.failed))
            break;
    }
    hup_close(r.http);
    r.http = NULL;
    relay_fail_pending(&r, "keel stopped before the server answered");
    relay_close(&r, status);
    return status;
}
