/* pins.h: what a server's tools say, pinned on first use.
 *
 * A tool's definition (title, description, input and output schemas,
 * annotations) and the server's instructions go into the model's context,
 * and the model trusts them. keel keeps, per server, the definition the
 * person approved (the first one seen, unless it looked poisoned) in
 * pins.json beside the state file (state.h: same lock, same atomic write,
 * 0600, never through a symbolic link, moved aside when unreadable). A
 * definition that differs from the approved one is held back: left out of
 * tools/list, its calls answered by keel, until the person approves it
 * (keel pins approve). A new tool on a known server while a pinned one went
 * missing from the listing is a rename, held the same way.
 *
 * Definitions are compared as canonical JSON (members sorted, no
 * whitespace), whole; the text is kept to show a diff. Only hashes and
 * names are logged, never a definition's text.
 *
 * A server is known by its identity: the command and its arguments, or the
 * URL without its query, user or fragment. */
#ifndef KEEL_PINS_H
#define KEEL_PINS_H

#include "kerr.h"

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PINS_FILE "pins.json"

struct pins_ent;

struct pins {
    char *server; /* the identity */
    const char *dir; /* the state directory (NULL: the default) */
    int hold_suspect; /* a definition that looks poisoned on first sight is held, not warned about */
    cJSON *entry; /* this server's pins: {"tools":{name:{...}},"instructions":{...}} */
    cJSON *todo; /* what was seen and is not yet written: [{"name","def","suspect"}...] */
    struct pins_map {
        struct pins_ent *v;
        size_t cap, n;
    } listing, /* the names of the tools/list under way (its pages so far) */
        same; /* name: the bytes it was listed with and its state, to skip an unchanged tool */
    cJSON *held; /* the names held back in the listing under way (or the last one) */
    cJSON *fresh; /* new tools left out of an earlier page until the listing ends (whole) */
    int known; /* the server had pins when the listing under way began */
    int nheld; /* tools held back in entry: none, and a call costs nothing */
    int loaded; /* the file was read: without it, nothing passes (PINS_FAILED_UNREAD) */
    int failed; /* the last page or instructions must not pass as they are: PINS_FAILED_* */
    char unread[32]; /* why the file could not be read (a kerr code), while !loaded */
    ino_t ino; /* the file as last read: reread when it changes */
    off_t size;
    int64_t mtime_ns;
};

/* Reads this server's pins. server: its identity (pins_identity). */
void pins_open(struct pins *p, const char *dir, const char *server, int hold_suspect);
void pins_close(struct pins *p); /* writes what is pending (waiting for the lock a little) */

/* The identity of a command (argv) or a URL, in buf. */
void pins_identity(char *buf, size_t n, char *const *argv, const char *url);

/* Why a page or instructions could not be decided (p->failed). */
enum { PINS_FAILED_OOM = 1, PINS_FAILED_UNREAD = 2 };

/* One page of a tools/list result: line holds the page, arr the raw tools
 * array in it. Returns a new line (tools held back left out, a suspect
 * tool's description with keel's warning in front) or NULL when the page
 * passes as it is; NULL with p->failed set when it had to change and memory
 * ran out, or when the pins file could not be read (nothing is known of the
 * tools, so none may pass): the page must not pass. *relist: tools left out of an earlier
 * page were released (send notifications/tools/list_changed). */
char *pins_tools_page(struct pins *p, const char *line, size_t n, const char *arr, size_t an, int last_page,
                      int *relist);

/* An initialize result's instructions (the raw string value v in line):
 * a new line without them (held; so are they while the pins file cannot be
 * read) or with keel's warning in front, or NULL (with p->failed set when
 * memory ran out: they must not pass). */
char *pins_instructions(struct pins *p, const char *line, size_t n, const char *v, size_t vn);

/* What to say while the pins file cannot be read (p->unread says why). */
void pins_unread_why(const struct pins *p, char *why, size_t whyn);

/* 1 when a call to the tool named by raw JSON string name must not reach
 * the server (its definition is held back), PINS_FAILED_UNREAD when the pins
 * file cannot be read (nothing is known to be approved); why gets the
 * sentence to say. */
int pins_held(struct pins *p, const char *name, size_t nn, char *why, size_t whyn);
/* The same for a tool named by its decoded name, from what is loaded (0
 * when nothing is: a call already sent is not answered for an unread file). */
int pins_held_tool(struct pins *p, const char *name, char *why, size_t whyn);

/* 1 when the file changed since it was last read (then it is read again):
 * keel pins, or an approve-tool token, approved something. */
int pins_changed(struct pins *p);

/* Approves the held or suspect definitions of these tools (a JSON array of
 * names) of server: how many, or -1 (e set). */
int pins_approve(const char *dir, const char *server, const cJSON *names, kerr *e);

/* Writes what was seen, if the lock is free (the relay never waits). */
void pins_flush(struct pins *p);

/* For pins_cli.c: the canonical text of a JSON value (members sorted). */
char *pins_canonical(const cJSON *v);
/* The state file's pins, whole: fn as in state_update. */
int pins_update(const char *dir, int (*fn)(cJSON *all, void *ctx, kerr *e), void *ctx, kerr *e);
/* Sets an entry's approved definition to the one held back. */
void pins_approve_entry(cJSON *entry, int64_t now_ms);

#endif
