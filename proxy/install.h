/* install.h: keel install and keel uninstall.
 *
 * install finds each client's configuration and
 *   - wraps the stdio servers in its mcpServers with `keel wrap` (the first
 *     of the file keeps keel's default tools, the others get --expose none,
 *     so the model sees each keel tool once); remote servers (url) are left;
 *   - registers `keel hook` for the hosts that have hooks (Claude Code,
 *     Codex CLI, Gemini CLI).
 * Every edit is a splice into the file's own bytes: everything else stays as
 * it was, byte for byte. Before the first change keel keeps the file as it
 * was (FILE.keel-backup, or FILE.keel-created when keel created it) and,
 * after each, a hash of what it wrote (FILE.keel-installed). A unified diff of
 * each change is printed; --dry-run prints it and writes nothing. A second
 * install changes nothing. uninstall puts the file back exactly as it was when
 * nothing else has changed it since keel's install, and otherwise leaves it
 * alone and says where the original is. A file that does not parse is left
 * alone with an error naming it. */
#ifndef KEEL_INSTALL_H
#define KEEL_INSTALL_H

extern const char install_help[];

/* argv: the words after install/uninstall. Exit status: 0, 1 (a file could
 * not be changed: it is named on stderr), 64 (usage). */
int install_main(int argc, char **argv, const char *argv0, int uninstall);

#endif
