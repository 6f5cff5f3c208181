/* instedit.h: the text edits of keel install and uninstall, shared by its files.
 *
 * install.c reads and writes the files; instplan.c turns one configuration
 * text into a plan (the splices to make, the tree they must give, checked);
 * instsrv.c finds and wraps (or unwraps) the servers in JSON and TOML;
 * insthook.c adds and removes keel's hook entries; instedit.c holds what
 * they are made of (texts, quoting, a plan's splices and manifest) and a
 * text's secrets. Private to keel install. */
#ifndef KEEL_INSTEDIT_H
#define KEEL_INSTEDIT_H

#include "cfgdiff.h"
#include "hook.h"
#include "cfgjson.h"
#include "toml.h"

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

enum fmt { FMT_JSON, FMT_JSONC, FMT_TOML };

/* What one run knows. */
struct ctx {
    const char *keel; /* this keel's path, as configs get it */
    char hook_prefix[PATH_MAX * 4]; /* the path quoted for a shell */
    int uninstall;
    const char *project; /* --project DIR, absolute; NULL */
    int have_default; /* a server of this client keeps keel's tools */
    int quiet_wraps; /* servers of this client that run keel wrap --expose none */
};

/* A growable text that remembers running out of memory. */
struct sb {
    char *p;
    size_t n, cap;
    int oom;
};
void inst_sb_add(struct sb *b, const char *s, size_t n);
void inst_sb_str(struct sb *b, const char *s);
void inst_sb_quoted(struct sb *b, const char *s); /* as a JSON (and TOML basic) string */

/* s quoted for a POSIX shell when it needs it. */
void inst_shell_quote(char *out, size_t cap, const char *s);
/* 1 if a shell command line's first two words are a keel and "hook"; with
 * exact, only a command as keel install writes it (keel hook EVENT, and
 * --host NAME, keel by its full path): one that pipes it on, adds options
 * or finds keel on PATH was written by the person. */
int inst_is_keel_hook(const char *cmd, int exact);
int inst_is_keel_path(const struct ctx *c, const char *s);
/* A JSON pointer (RFC 6901) member name, escaped, appended. */
void inst_ptr_add(char *ptr, size_t cap, const char *name);
int inst_blank_between(const char *s, size_t from, size_t to);

/* A plan: the splices for one file, and the tree they must give. */
/* A set of strings (JSON pointers) held elsewhere, by their text:
 * membership in constant time. */
struct ptrset {
    uint64_t *h; /* 0: free */
    const char **s;
    size_t n, cap;
};
int inst_ptrset_add(struct ptrset *set, const char *s); /* s is kept, not copied; 1 held already, -1 out of memory */
int inst_ptrset_has(const struct ptrset *set, const char *s, size_t n); /* s[0..n) */
void inst_ptrset_free(struct ptrset *set);

struct plan {
    struct cfg_edit *ed;
    int n, cap;
    int oom;
    int wrapped, unwrapped, hooks_added, hooks_removed;
    int kept_hooks; /* uninstall: hook commands that run keel hook with more than keel writes, left */
    int crlf; /* the file's lines end in CRLF: so do those keel puts in */
    struct sb notes; /* lines for the person, each ending in \n */
    cJSON *want; /* the document as it must parse after the edit */
    cJSON *added; /* the manifest: pointers of containers keel made */
    struct ptrset aset; /* the same, to add each once in constant time */
    struct ptrset mset; /* the manifest read (inst_manifest_has), of mset_of while its ends are these */
    const cJSON *mset_of, *mset_first, *mset_last;
    char *out; /* the new text */
    size_t out_n;
};
void inst_plan_free(struct plan *p);
void inst_splice(struct plan *p, size_t at, size_t del, struct sb *b); /* takes b */
void inst_cut(struct plan *p, size_t from, size_t to);
void inst_note(struct plan *p, const char *fmt, const char *a, const char *b);
void inst_manifest_add(struct plan *p, const char *ptr);
/* 1 when the manifest m holds ptr (asked through the plan, which keeps its
 * set while it plans). */
int inst_manifest_has(struct plan *p, const cJSON *m, const char *ptr);
/* A new manifest: m's pointers, then those of added it does not hold, each
 * once (time in proportion to both); NULL out of memory. */
cJSON *inst_manifest_merge(const cJSON *m, const cJSON *added);
/* cfgjson_member for a plan: out of memory is the plan's (p->oom), and 0. */
int inst_member(struct plan *p, const struct cfgjson *d, size_t obj_at, const char *key, struct cfgjson_member *m);

/* Items of a container: key (or value) start to value end. */
struct item {
    size_t at, end;
};
void inst_cut_items(struct plan *p, size_t open, const struct item *it, int k, const int *del);

/* The servers (instsrv.c) and the hooks (insthook.c). */
void inst_json_servers(struct ctx *c, struct plan *p, const struct cfgjson *d, size_t obj_at, cJSON *want,
                       const char *ptr, const cJSON *manifest);
void inst_json_local_scopes(struct ctx *c, struct plan *p, const struct cfgjson *d, size_t root, const cJSON *manifest);
void inst_toml_servers(struct ctx *c, struct plan *p, const char *text, size_t n, const struct toml_node *root,
                       const cJSON *manifest);
void inst_toml_hooks_switch(struct plan *p, const struct toml_node *root);
void inst_hooks_add(const struct ctx *c, struct plan *p, const struct cfgjson *d, size_t root,
                    const struct hook_host *h);
void inst_hooks_remove(struct plan *p, const struct cfgjson *d, size_t root, const cJSON *manifest);

/* One file's kind and what keel does in it. */
struct target_spec {
    enum fmt fmt;
    int servers, hooks, scopes;
    const struct hook_host *host;
};

/* The plan for text (NUL-terminated), instplan.c: 0 with p->out (NULL:
 * nothing to change), or -1 with why. */
int inst_plan_text(struct ctx *c, const struct target_spec *t, const char *text, size_t n, const cJSON *manifest,
                   struct plan *p, char *why, size_t whyn);

#define SECRETS_MAX 512
/* The spans of values that may be secrets, for a printed diff. */
int inst_secrets_of(enum fmt fmt, const char *text, size_t n, struct cfg_span *out);

#endif
