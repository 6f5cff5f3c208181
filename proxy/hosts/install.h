/* install.h: keel install and keel uninstall.
 *
 * install finds each client's configuration and
 *   - wraps the stdio servers it lists with `keel wrap` (the first keeps
 *     keel's default tools, the others get --expose none, so the model sees
 *     each keel tool once); remote servers (url) are left as they are;
 *   - registers `keel hook` for the hosts that have hooks (Claude Code,
 *     Codex CLI, Gemini CLI).
 * uninstall removes exactly what keel added, from each file as it is now:
 * `keel wrap [options] -- X ARGS` goes back to `X ARGS`, keel's hook entries
 * go, and every other change made since (by the person or by the client)
 * stays. A file keel created is removed only when nothing but keel's entries
 * was ever in it.
 *
 * Every edit is a splice into the file's own bytes, so everything else stays
 * byte for byte, and every edit is checked before it is written: the file
 * must parse (JSON with cJSON, Codex's TOML with toml.h) to exactly the
 * parsed original plus keel's change, or nothing is written. A file with a
 * key given twice, or one that does not parse, is refused with its line and
 * column, and then none of that client's files is touched. Writes are
 * compare-and-swap (cfgfile.h): a client rewriting the file meanwhile loses
 * nothing; keel reads again and redoes its edit. Links, modes and owners are
 * kept; a timestamped backup of the file as it was stays beside it. */
#ifndef KEEL_INSTALL_H
#define KEEL_INSTALL_H

#include <stddef.h>

extern const char install_help[];

/* argv: the words after install/uninstall. Exit status: 0, 1 (a file could
 * not be changed: it is named on stderr), 64 (usage). */
int install_main(int argc, char **argv, const char *argv0, int uninstall);

/* The edit install (or uninstall) makes to one configuration text, for the
 * fuzz harness: fmt 0 JSON, 1 JSON with comments, 2 TOML; hooks: register or
 * remove hooks too. The new text (caller frees) or NULL when keel refuses
 * the file (why says so) or changes nothing (*why empty). */
char *install_edit_text(const char *text, size_t n, int fmt, int hooks, int uninstall, const char *keel_path, char *why,
                        size_t whyn);

#endif
