/* state.h: the one state file, shared by every keel process of a person.
 *
 * $XDG_STATE_HOME/keel/state.json (default ~/.local/state/keel/), directory
 * 0700, file 0600. A client starts one keel per wrapped server, so several
 * processes read and write it: every access holds an exclusive flock on
 * state.lock beside it, and every write goes to a temporary file that is
 * fsynced and renamed over the old one, so a kill -9 at any instant leaves
 * the old state or the new, never a torn file. A state file that cannot be
 * parsed is moved aside to state.json.corrupt-<time> and reported as
 * STATE_UNREADABLE; the next access starts afresh. So is one over 8 MiB, and
 * anything at that name that is not a regular file (a symbolic link is not
 * followed, a FIFO is never opened for reading). The lock is waited for at
 * most STATE_LOCK_WAIT_MS, or what state_lock_wait set (then STATE_BUSY,
 * nothing read or changed; for the next STATE_STUCK_MS the process does not
 * wait again), and a directory that another user owns or may write to is
 * refused. */
#ifndef KEEL_STATE_H
#define KEEL_STATE_H

#include "kerr.h"

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#define STATE_VERSION      1
#define STATE_LOCK_WAIT_MS 5000 /* the longest wait for the lock */
#define STATE_STUCK_MS     30000 /* after a wait ran out, this long without waiting */

/* The longest wait for the lock in this process from now on, in ms: keel
 * wrap's relay waits for nothing on its event loop (0: one try), keel's own
 * tools there a little (STATE_TOOL_WAIT_MS). */
#define STATE_TOOL_WAIT_MS 50
void state_lock_wait(int ms);

/* Whether a write is made durable (fsync of the file and of its directory
 * before and after the rename): on, unless a caller whose state is thrown
 * away at its end turns it off (keel eval's replays). A write is atomic
 * either way. */
void state_durable(int on);

/* The directory: $KEEL_STATE_DIR, else $XDG_STATE_HOME/keel, else
 * ~/.local/state/keel. 0 or -1 (STATE_UNWRITABLE). */
int state_dir(char *buf, size_t n, kerr *e);
/* dir into buf, or state_dir()'s when dir is NULL; a path that does not fit
 * is STATE_UNWRITABLE, never cut short. */
int state_dir_or(const char *dir, char *buf, size_t n, kerr *e);

/* Called with the parsed state (a fresh {"version":1} when there is no file).
 * Returns 1 when it changed the state (it is then written), 0 when not, -1 on
 * error (nothing is written). */
typedef int (*state_fn)(cJSON *state, void *ctx, kerr *e);

/* Lock, read, call fn, write if changed, unlock. dir NULL means state_dir().
 * now_ms names a corrupt file moved aside. */
int state_update(const char *dir, int64_t now_ms, state_fn fn, void *ctx, kerr *e);
/* The same for another file of keel's in that directory (name: "pins.json"),
 * under the same lock and with the same rules: written whole and renamed,
 * 0600, never followed through a symbolic link, moved aside when it is no
 * keel file ({"version":1,...}). */
int state_update_file(const char *dir, const char *name, int64_t now_ms, state_fn fn, void *ctx, kerr *e);

/* Read the state file without its lock and call fn with it; what fn
 * changes is not kept. For a reader that must still see the person's words
 * when the file cannot be locked or written (another process holds the lock,
 * a read-only directory): the file is only ever replaced whole (a rename),
 * so what is read is one complete version. The directory is checked as for
 * state_update; a file that is no keel state file is STATE_UNREADABLE and
 * left where it is. */
int state_read(const char *dir, state_fn fn, void *ctx, kerr *e);

/* An exclusive lock of keel's own, apart from the state file's: name
 * (install.lock) in dir (NULL: the state directory, made and checked as for
 * the state file), made 0600, taken with flock, waiting at most wait_ms.
 * The open descriptor, held until it is closed; -1 with STATE_BUSY (held
 * longer) or STATE_UNWRITABLE. */
int state_exclusive(const char *dir, const char *name, int wait_ms, kerr *e);

/* parent's member key as an object: made (replacing what is not an object)
 * when it is not one yet. */
cJSON *state_obj(cJSON *parent, const char *key);
/* o[key] = v where the member stands (a new one goes last), so that an
 * update that changes nothing leaves the same bytes and is not written;
 * v NULL removes it. v is o's, or freed when it cannot be added (out of
 * memory). */
void state_set(cJSON *o, const char *key, cJSON *v);

/* A counter that every write of the state file (by any keel process)
 * increases, mapped into memory: whether the file changed costs a load, no
 * system call. NULL when it cannot be mapped (then read the file every time). */
const uint64_t *state_generation(const char *dir);
/* The counter's value now (0 for a NULL g), read as the writer left it. */
uint64_t state_generation_now(const uint64_t *g);
void state_generation_release(const uint64_t *g);

#endif
