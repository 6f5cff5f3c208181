/* relay.h: the state of one keel wrap session, shared by the event loop
 * (wrap.c) and the message router (route.c). */
#ifndef KEEL_RELAY_H
#define KEEL_RELAY_H

#include "child.h"
#include "frame.h"
#include "hup.h"
#include "jscan.h"
#include "outq.h"
#include "overlay.h"
#include "pending.h"
#include "pins.h"
#include "text.h"
#include "tools.h"
#include "wrap.h"

#include <stdint.h>

#define RELAY_MAX_TOOLS 32

enum upstream_state {
    UP, /* running */
    REPLAYING, /* respawned; waiting for the replayed initialize to answer */
    WAITING, /* exited; a respawn is scheduled */
    FAILED, /* could not be started; every request is answered with why */
    GONE, /* exited for good */
};

/* What the loop detector reads of a tool result object (annotate.c). */
struct result_facts {
    uint64_t member[3]; /* content, structuredContent, isError, hashed (text_hasher) */
    unsigned char present[3];
    int has_block; /* content is an array holding a block */
    int is_error; /* isError is true */
    struct jscan_span head[2]; /* content's and structuredContent's first RESULT_HEAD raw bytes (p NULL: absent) */
    uint64_t rest[2]; /* the hash of their bytes beyond those (REST_SEED), 0 when none */
};

/* A tools/call result passed on as it arrives: what the overlay needs of it
 * is gathered from its pieces, the rest goes by (annotate.c, cut.c). */
#define RULES_MAX_LINE (1u << 20) /* larger results are not read by the rules */
#define RESULT_HEAD    (64u << 10) /* content's and structuredContent's bytes kept, for an error's text */
struct result_stream {
    struct text_hasher member[3];
    char small[2][32]; /* isError's and resultType's bytes */
    unsigned char small_n[2], small_cut[2];
    char *head[2]; /* content's and structuredContent's first bytes (up to RESULT_HEAD) */
    size_t head_n[2];
    struct text_hasher rest[2]; /* and the bytes beyond them */
    unsigned char rest_any[2], head_lost[2]; /* some came; memory ran out for the head */
};

struct relay {
    const struct wrap_opts *o;
    struct frame_reader cin, sout; /* client stdin, upstream stdout */
    struct outq cout, sin; /* to the client, to the upstream */
    struct pending pend;
    struct child child;
    struct hup *http; /* --url: the upstream over HTTP (no child) */
    enum upstream_state up;
    char fail_reason[600]; /* why the upstream is not running */
    char *init_line; /* the client's initialize, for replay */
    size_t init_n;
    char *initialized_line; /* and its notifications/initialized */
    size_t initialized_n;
    unsigned replays;
    /* keel's tools as exposed: their names after any clash renaming */
    const struct tool *exposed[RELAY_MAX_TOOLS];
    char exposed_name[RELAY_MAX_TOOLS][160];
    int nexposed;
    char **upstream_names; /* every upstream tool name seen */
    size_t nupstream, upstream_cap;
    int64_t last_touch_ms; /* last activity write to the state file */
    int exit_after_answer; /* FAILED: exit once the initialize is answered */
    int stdout_flags; /* stdout's flags before keel made it non-blocking */
    struct overlay ov; /* detectors on the traffic (parts 0: a pure relay) */
    struct pins pins; /* what the server's tools say, pinned (server NULL: off) */
    uint64_t pins_announced; /* the held set last told to the person (a hash of its names) */
    struct { /* the upstream line being passed on as it arrives (cut.c) */
        int on, dropping, declined;
        size_t bytes;
        /* A line held whole is validated by js as its pieces arrive, so its
         * end costs no second pass: held bytes of it so far (0: none yet). */
        size_t held;
        struct jstream js;
        const char *why, *code; /* it broke before its id was seen: answer from its tail */
        char tail[FRAME_HEAD];
        size_t tail_n;
        /* A tools/call result passed on as it arrives while the overlay reads
         * it: the bytes from the first place an advisory may go (hold_from)
         * wait in hold until the line ends. */
        int annotating;
        size_t hold_from; /* SIZE_MAX: nothing held yet */
        char *hold;
        size_t hold_n, hold_cap;
        struct result_stream rs;
        unsigned char u8[4]; /* a character cut between two pieces */
        size_t u8n;
    } cut;
};

/* What a pending tools/call carries until its result comes back. */
struct call_data {
    struct loop_call call; /* its identity, for the loop detector */
    int watched; /* the loop detector watches this call */
    char tool[];
};

/* wrap.c: what both event loops (a command, a URL) share. */
/* Signals to a self-pipe, stdout non-blocking, the client's side set up. 0 or -1. */
int relay_open(struct relay *r);
int relay_signal_fd(void);
/* Reads the signals that came: 1 if SIGCHLD was one; the first stop signal in *stop_signal. */
int relay_signals(int *stop_signal);
/* Reads and routes what the client sent; 1 at the end of its input. */
int relay_read_client(struct relay *r);
/* Last words to the client (at most 2 s), stdout as it was, everything freed. */
void relay_close(struct relay *r, int status);
/* route.c */
void relay_expose_init(struct relay *r);
void relay_client_line(struct relay *r, const char *line, size_t n);
void relay_server_line(struct relay *r, const char *line, size_t n);
/* The same for a line already validated as it arrived (top as jscan_scan gives it). */
void relay_server_scanned(struct relay *r, const char *line, size_t n, const struct jscan_top *top);
void relay_client_oversize(struct relay *r, const char *head, size_t hn, size_t total);
void relay_server_oversize(struct relay *r, const char *head, size_t hn, size_t total);
/* cut.c: hands out what the upstream wrote (relay_server_line and friends),
 * passing large responses on as they arrive. Returns FRAME_NEED or FRAME_EOF. */
int relay_server_drain(struct relay *r);
/* The upstream's stdout is closed: a line it left unfinished ends here. */
void relay_server_closed(struct relay *r);
/* A message for the upstream: its stdin, or a POST with --url. */
void relay_to_upstream(struct relay *r, const char *line, size_t n);
void relay_upstream_error(struct relay *r, const char *id, size_t idn, int code, const char *msg,
                          const char *keel_code);
void relay_error(struct outq *q, const char *id, size_t idn, int code, const char *msg, const char *keel_code);
/* The upstream is gone: every request the client is waiting on gets an error. */
void relay_fail_pending(struct relay *r, const char *why);
/* Sends the captured initialize to a respawned upstream; 0 if none to send. */
int relay_replay(struct relay *r);
/* A relay for the options o: keel's tools exposed, the overlay on, the
 * queues empty, the state lock never waited for (state_lock_wait(0)). */
void relay_init(struct relay *r, const struct wrap_opts *o);
void relay_free(struct relay *r);
/* lend.c */
/* Queues a line of the upstream's for the client, with insertions (k of
 * them, jscan.h) if any. A large line in the upstream reader's buffer is not
 * copied: the reader is pinned until it is written (outq_lend, frame_pin). */
struct jscan_insert;
void relay_queue_server_line(struct relay *r, const char *line, size_t n, const struct jscan_insert *ins, int k);
/* After a write to the client: the reader goes free once nothing is lent. */
void relay_lent_written(struct relay *r);
/* Before the reader's bytes go (a restart, the upstream's last bytes): what
 * is still lent is copied. */
void relay_lent_keep(struct relay *r);
/* annotate.c */
struct call_data *relay_call_started(struct relay *r, const char *params, size_t pn);
/* The rewritten line, or NULL; *queued: it was annotated straight into the
 * client's queue (nothing more to send). */
char *relay_call_finished(struct relay *r, void *data, const char *line, size_t n, const struct jscan_top *top,
                          int *queued);
void relay_call_data_free(void *data);
/* A tools/call's identity and shape (c->tool, c->id, c->shape, LOOP_FREE_TEXT)
 * from its tool name and raw arguments (valid JSON; NULL: none). */
void relay_identify(const char *tool, size_t tl, const char *args, size_t an, struct loop_call *c);
/* The outcome of a tools/call as the loop detector compares it, from its
 * response (result or error): c->result, c->error, LOOP_EMPTY. */
void relay_outcome(const struct jscan_top *top, struct loop_call *c);
/* The stream's state for a new line (rs->head freed by relay_result_done). */
void relay_result_begin(struct result_stream *rs);
void relay_result_done(struct result_stream *rs);
/* The piece p[0..n) at line offset base was fed to js: what belongs to the
 * members the overlay reads is taken from it. */
void relay_result_piece(struct result_stream *rs, const struct jstream *js, const char *p, size_t n, size_t base);
/* Where an advisory may first go in the result js is reading (a line offset),
 * or SIZE_MAX while no such place has gone by. */
size_t relay_result_hold_point(const struct jstream *js);
/* A tools/call's result passed on as it arrived has ended; its bytes from
 * line offset at are tail[0..tn). The tail with the overlay's advisories put
 * in (malloc'd, *out_n its length), or NULL to send it as it is. */
char *relay_call_streamed(struct relay *r, void *data, const struct jstream *js, struct result_stream *rs,
                          const char *tail, size_t tn, size_t at, size_t *out_n);
/* The line with advisories spliced into the result object res. */
char *relay_annotate(const char *line, size_t n, const struct jscan_span *res, const cJSON *adv);
/* What relay_annotate inserts, as insertions into line (texts malloc'd in
 * text[], freed by the caller): how many, 0 when nothing. known: the
 * result's content and _meta spans when the caller has them (else NULL). */
int relay_annotation(const char *line, const struct jscan_span *res, const struct jscan_span *known, const cJSON *adv,
                     struct jscan_insert ins[2], char *text[2]);

#endif
