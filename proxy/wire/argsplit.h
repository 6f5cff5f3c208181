/* argsplit.h: one command string into argv, with shell-like quoting and no shell.
 *
 * For clients that join a server's command and arguments into one string:
 * `keel wrap --command-args "npx -y server 'My Dir'"`. Words split on blanks;
 * '...' is literal; "..." allows \" \\ \$ \` escapes; a backslash outside
 * quotes takes the next character literally. Nothing is expanded: no
 * variables, globs or command substitution. */
#ifndef KEEL_ARGSPLIT_H
#define KEEL_ARGSPLIT_H

/* A NULL-terminated argv in one allocation (free(argv) frees it all), or NULL
 * with *err set to a message (unterminated quote, empty command, no memory). */
char **argsplit(const char *s, const char **err);

#endif
