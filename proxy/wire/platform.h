/* platform.h: the few calls that differ between Linux and other POSIX systems. */
#ifndef KEEL_PLATFORM_H
#define KEEL_PLATFORM_H

#include <stddef.h>

/* Where Claude Desktop keeps its configuration, under $HOME. */
#ifdef __APPLE__
#define PLATFORM_CLAUDE_DESKTOP_DIR "Library/Application Support/Claude"
#else
#define PLATFORM_CLAUDE_DESKTOP_DIR ".config/Claude"
#endif

/* In a freshly forked child: die when the parent does. On Linux this is
 * PR_SET_PDEATHSIG; elsewhere it does nothing (keel still terminates its
 * child on every exit path it controls). Returns -1 if the parent is
 * already gone. */
int platform_die_with_parent(int parent_pid);

/* Asks for a 1 MiB pipe buffer (Linux F_SETPIPE_SZ), so a large message
 * crosses in a few large writes rather than many 64 KiB ones. Best effort:
 * a no-op elsewhere or when the descriptor is not a pipe. */
void platform_grow_pipe(int fd);

/* Maps in the pages of p[0..n) at once, before they are written: one call
 * instead of a fault a page (a VM's fault costs tens of microseconds).
 * Nothing where the kernel cannot. */
void platform_prefault(void *p, size_t n);

/* The absolute path of the running executable into buf (/proc/self/exe on
 * Linux; elsewhere argv0 made absolute through PATH or the working directory).
 * 0, or -1 when it cannot be told. */
int platform_self_path(const char *argv0, char *buf, size_t n);

/* Swaps the files at paths a and b in one step (Linux renameat2 with
 * RENAME_EXCHANGE), so the file displaced from b can still be looked at.
 * 0, or -1 with errno ENOSYS (or EINVAL where the file system cannot):
 * the caller falls back to rename(2). */
int platform_swap(const char *a, const char *b);

/* Whether some process holds the file open for writing, fd being open
 * read-only (Linux: a read lease, asked for and given back): 1 yes, 0 no,
 * -1 it cannot be told here (another system, a file system without leases,
 * a file of another user's). Only for a file with no name left (unlinked):
 * an open of it meanwhile would break the lease with a SIGIO. */
int platform_writers(int fd);

#endif
