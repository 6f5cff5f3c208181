/* cfgfile.h: changing a file a person's tools live in without losing it.
 *
 * keel install edits ~/.claude.json while Claude Code itself rewrites it,
 * so an edit is a compare-and-swap: cfg_load reads the file (following a
 * symbolic link to the file it names, so the link stays a link), the caller
 * works out the new text with nothing slow in between, and cfg_commit puts
 * it in place only if the file is still what was read. The new text goes to
 * a temporary file created exclusively beside the target, with the target's
 * mode and owner, flushed to disk first; then the two are swapped in one
 * step (renameat2 RENAME_EXCHANGE where the system has it) and the file
 * displaced is checked once more: if anything wrote it in the meantime it
 * is swapped back, and the caller reads again and redoes its edit. A
 * read-only file is refused. A hard link is not kept: the name gets a new
 * file and the other names keep the old content (install says so). */
#ifndef KEEL_CFGFILE_H
#define KEEL_CFGFILE_H

#include <limits.h>
#include <stddef.h>
#include <sys/stat.h>

#define CFG_MAX            (256u << 20) /* the largest configuration keel edits */
#define CFG_BACKUPS        3 /* timestamped backups kept per file */
/* How long keel waits for a writer that holds the file it replaced open to
 * close it; and where the system cannot tell who holds it, how long it
 * watches that file for a late write instead. */
#define CFG_WRITER_WAIT_MS 2000
#define CFG_SETTLE_MS      100

struct cfg_file {
    char path[PATH_MAX]; /* as named: ~/.claude.json */
    char real[PATH_MAX]; /* what it names, links followed: where keel writes */
    int exists;
    struct stat st; /* of real, as read */
    char *text; /* NUL-terminated; "" when it does not exist */
    size_t n;
    char *late; /* cfg_commit's 2: what a late writer wrote to the file replaced */
    size_t late_n;
};

/* Reads path. 0 (f->exists says whether it is there), or -1 with a sentence
 * in why. Frees what f held before. */
int cfg_load(struct cfg_file *f, const char *path, char *why, size_t whyn);
void cfg_release(struct cfg_file *f);

/* Replaces f's content with text[0..n) if the file is still what cfg_load
 * read: 0 written; 1 it changed since (nothing written: load and edit
 * again); -1 it could not be written (why says so; nothing written).
 * The new text is flushed to disk before it takes the file's place; with
 * sync_after (a retry while another program keeps rewriting the file) it is
 * flushed right after instead, which keeps the check-to-swap window to the
 * time of a read. */
int cfg_commit(struct cfg_file *f, const char *text, size_t n, char *why, size_t whyn);
/* The same, and 2: written, but a writer that had opened the file before it
 * was replaced wrote to it after (see late_write in cfgfile.c): its content is in
 * f->late (caller frees), to redo the edit on and write over keel's text. */
int cfg_commit_as(struct cfg_file *f, const char *text, size_t n, int sync_after, char *why, size_t whyn);

/* Removes f (a file keel created and emptied again) if it is still what
 * cfg_load read: 0, 1 changed since, -1 error. */
int cfg_remove(struct cfg_file *f, char *why, size_t whyn);

/* Keeps f's content as read, before a change, in a pending backup beside it
 * (PATH.keel-backup-pending-XXXXXX, mode 0600, on disk); the name into out.
 * 0, or -1 (errno EEXIST when no backup name of this second is free, so
 * the change would have none to go by). */
int cfg_backup(const struct cfg_file *f, char *out, size_t outn);
/* Once the change is written, gives the pending backup its name,
 * PATH.keel-backup-YYYYMMDD-HHMMSS (then -2 to -99 for more in the same
 * second; never over an existing file), into backup (n bytes): only a run
 * that changed the file names a backup, so the pending ones of runs at the
 * same time never count as backups (cfg_backups_prune). 0, or -1 when it
 * keeps its pending name. */
int cfg_backup_keep(const char *path, char *backup, size_t n);
/* What a keel run killed midway left beside path, an hour old: keel's new
 * text for it or for a side file of it (a temporary never renamed) goes,
 * and a pending backup is named (cfg_backup_keep) for the time it was
 * taken. Younger ones may be another run's at work, and stay. */
void cfg_tidy(const char *path);
/* Drops keel's backups of path beyond the newest CFG_BACKUPS: only the
 * names cfg_backup_keep gives, oldest first by their time and number, and
 * never mine (the backup this run kept).
 * Called once a change is written, never by a run that wrote nothing (its
 * backup goes, and the backups other runs name stay). */
void cfg_backups_prune(const char *path, const char *mine);

/* 1 if path + suffix exists. */
int cfg_side_exists(const char *path, const char *suffix);

#endif
