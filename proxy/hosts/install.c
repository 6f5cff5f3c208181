/* install.c: keel install and keel uninstall (see install.h).
 *
 * One pass per client: every file of the client is read and its edit worked
 * out and checked first; only when all of them check out is anything
 * written, file by file, each a compare-and-swap that redoes its edit on
 * what it finds when something else wrote the file meanwhile. An edit is a
 * list of splices (cfgdiff.h) found from the parsed document's spans; the
 * same change is made to the parsed tree, and the spliced text must parse
 * to that tree exactly. Containers keel had to create (a "hooks" object, an
 * event's list, an "args" array) are listed in FILE.keel-added, so uninstall
 * removes them again when keel's entries were all they held. */
#include "install.h"

#include "cfgfile.h"
#include "instedit.h"
#include "platform.h"
#include "state.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

const char install_help[] = "usage: keel install [--client NAME]... [--project [DIR]] [--dry-run]\n"
                            "       keel uninstall [--client NAME]... [--project [DIR]] [--dry-run]\n"
                            "\n"
                            "install wraps the stdio MCP servers in each client's configuration with keel\n"
                            "wrap (the first keeps keel's tools, the others --expose none) and registers\n"
                            "keel's hooks where the client has them, then prints a diff of each change\n"
                            "(env and header values masked). Clients: claude-code (~/.claude.json, hooks\n"
                            "in ~/.claude/settings.json), claude-desktop, cursor (~/.cursor/mcp.json), codex\n"
                            "(~/.codex/config.toml, hooks in ~/.codex/hooks.json), gemini\n"
                            "(~/.gemini/settings.json); by default every one whose configuration is here.\n"
                            "CLAUDE_CONFIG_DIR and CODEX_HOME, when set, are where those clients' files are\n"
                            "(.claude.json and settings.json; config.toml and hooks.json).\n"
                            "--project DIR (default: the current directory) also wraps that project's\n"
                            "servers: Claude Code's local scope for DIR and DIR/.mcp.json, DIR/.cursor/\n"
                            "mcp.json, DIR/.gemini/settings.json. Everything else in a file stays byte\n"
                            "for byte; each edit is checked before it is written, a file that does not\n"
                            "parse or gives a key twice is refused with its line (and then none of that\n"
                            "client's files is touched), and the file as it was is kept beside it\n"
                            "(FILE.keel-backup-DATE-TIME). A second install changes nothing.\n"
                            "uninstall removes what keel adds from each file as it is now (a wrap in the\n"
                            "form keel writes goes back to the server's own command, whoever wrote it; keel's\n"
                            "hook entries go), and keeps every other change. --dry-run prints the diff and\n"
                            "writes nothing.\n"
                            "\n"
                            "By hand, for a file keel cannot edit: a server \"command\": \"X\", \"args\": [A...]\n"
                            "becomes \"command\": \"/path/to/keel\", \"args\": [\"wrap\", \"--\", \"X\", A...]\n"
                            "(add \"--expose\", \"none\" before \"--\" on every server but one), and a\n"
                            "hook command for each event is /path/to/keel hook EVENT (UserPromptSubmit,\n"
                            "Stop, SubagentStop, SessionStart; Codex: add --host codex). docs/clients.md has\n"
                            "each client's file and events.\n";

/* --- hosts and clients --------------------------------------------------------- */

struct client {
    const char *name;
    const char *servers; /* under $HOME (NULL: none) */
    enum fmt fmt;
    const char *hooks; /* under $HOME (NULL: none); may be the servers file */
    const struct hook_host *host;
    const char *mark; /* under $HOME: there when the client is */
    const char *project; /* under --project DIR: the project's servers */
    const char *closing; /* what the person still has to do */
    const char *env_dir; /* the variable that moves the client's directory (mark) elsewhere, or NULL */
    const char *in_dir[2]; /* then its servers and hooks files, in that directory */
};

static const struct client clients[] = {
    {"claude-code",
     ".claude.json",
     FMT_JSON,
     ".claude/settings.json",
     &hook_hosts[HOOK_HOST_CLAUDE],
     ".claude",
     ".mcp.json",
     "Claude Code: start a new session (or run /mcp) to reach the servers through keel; keel's hooks run from the "
     "next prompt.",
     "CLAUDE_CONFIG_DIR",
     {".claude.json", "settings.json"}},
    {"claude-desktop",
     PLATFORM_CLAUDE_DESKTOP_DIR "/claude_desktop_config.json",
     FMT_JSON,
     NULL,
     NULL,
     PLATFORM_CLAUDE_DESKTOP_DIR,
     NULL,
     "Claude Desktop: quit it and start it again.",
     NULL,
     {NULL, NULL}},
    {"cursor",
     ".cursor/mcp.json",
     FMT_JSON,
     NULL,
     NULL,
     ".cursor",
     ".cursor/mcp.json",
     "Cursor: reload its MCP servers (Settings, MCP) or restart it.",
     NULL,
     {NULL, NULL}},
    {"codex",
     ".codex/config.toml",
     FMT_TOML,
     ".codex/hooks.json",
     &hook_hosts[HOOK_HOST_CODEX],
     ".codex",
     NULL,
     "Codex: run /hooks in Codex and trust keel's hooks; Codex runs no hook the person has not reviewed.",
     "CODEX_HOME",
     {"config.toml", "hooks.json"}},
    {"gemini",
     ".gemini/settings.json",
     FMT_JSONC,
     ".gemini/settings.json",
     &hook_hosts[HOOK_HOST_GEMINI],
     ".gemini",
     ".gemini/settings.json",
     "Gemini CLI: servers and hooks run only in folders you trust (Gemini asks in a new folder; /permissions "
     "changes it).",
     NULL,
     {NULL, NULL}},
};
#define NCLIENTS (sizeof clients / sizeof *clients)

/* --- files ----------------------------------------------------------------------- */

struct target {
    struct target_spec spec;
    char path[PATH_MAX];
    const char *client;
    int create; /* keel may create it (a hooks file) */
    struct cfg_file f;
    cJSON *manifest; /* FILE.keel-added as read */
    struct plan p;
    char *base; /* the text the plan was made from */
    size_t base_n;
    int remove; /* uninstall: the file keel created goes */
    int written;
    int marked; /* markers_write wrote FILE.keel-added (1), FILE.keel-created (2) */
    char backup[PATH_MAX + 64];
    int planned, had_default, had_quiet; /* what the servers before this file said, for an edit redone */
};

static cJSON *manifest_read(const char *path)
{
    char side[PATH_MAX + 16];
    snprintf(side, sizeof side, "%s.keel-added", path);
    struct cfg_file f = {0};
    char why[256];
    cJSON *m = cJSON_CreateArray();
    if (cfg_load(&f, side, why, sizeof why) == 0 && f.exists) {
        for (char *line = strtok(f.text, "\n"); line; line = strtok(NULL, "\n")) {
            if (line[0] == '/')
                cJSON_AddItemToArray(m, cJSON_CreateString(line));
            else if (line[0] == '"') { /* a pointer with a line break in it, as a JSON string */
                cJSON *q = cJSON_Parse(line);
                if (cJSON_IsString(q) && q->valuestring[0] == '/')
                    cJSON_AddItemToArray(m, cJSON_CreateString(q->valuestring));
                cJSON_Delete(q);
            }
        }
    }
    cfg_release(&f);
    return m;
}

/* Writes (or with m empty, removes) FILE.keel-added. */
static void manifest_write(const char *path, const cJSON *m)
{
    char side[PATH_MAX + 16], why[256];
    snprintf(side, sizeof side, "%s.keel-added", path);
    struct sb b = {0};
    const cJSON *e;
    cJSON_ArrayForEach(e, m) {
        /* One pointer a line; one that holds a line break (a member named
         * "a\nb") is written as a JSON string, which holds none. */
        char *q = strpbrk(e->valuestring, "\r\n") ? cJSON_PrintUnformatted(e) : NULL;
        if (strpbrk(e->valuestring, "\r\n") && !q) {
            b.oom = 1;
            break;
        }
        inst_sb_str(&b, q ? q : e->valuestring);
        inst_sb_str(&b, "\n");
        free(q);
    }
    struct cfg_file f = {0};
    for (int tries = 0; tries < 5 && !b.oom; tries++) {
        if (cfg_load(&f, side, why, sizeof why) < 0)
            break;
        int rc = b.n ? cfg_commit(&f, b.p, b.n, why, sizeof why) : f.exists ? cfg_remove(&f, why, sizeof why) : 0;
        if (rc <= 0)
            break;
    }
    cfg_release(&f);
    free(b.p);
}

static void side_remove(const char *path, const char *suffix)
{
    char side[PATH_MAX + 32];
    snprintf(side, sizeof side, "%s%s", path, suffix);
    unlink(side);
}

static int cjson_empty_object(const cJSON *x)
{
    return cJSON_IsObject(x) && !x->child;
}

/* Reads t's file and works out its edit (from the text `from` instead of
 * the file's, when given: what a late writer wrote). 0, or -1 with why. */
/* The value at JSON pointer ptr in v ("/a/b~1c/0"), or NULL. */
static const cJSON *at_pointer(const cJSON *v, const char *ptr)
{
    char key[512];
    while (v && *ptr == '/') {
        size_t k = 0;
        for (ptr++; *ptr && *ptr != '/' && k + 1 < sizeof key; ptr++)
            key[k++] = *ptr == '~' && ptr[1] == '1' ? (ptr++, '/') : *ptr == '~' && ptr[1] == '0' ? (ptr++, '~') : *ptr;
        key[k] = '\0';
        if (cJSON_IsArray(v)) {
            char *end;
            long i = strtol(key, &end, 10);
            v = *key && !*end && i >= 0 ? cJSON_GetArrayItem(v, (int)i) : NULL;
        } else {
            v = cJSON_GetObjectItemCaseSensitive(v, key);
        }
    }
    return *ptr ? NULL : v;
}

/* 1 when the side files beside t's file say what is no longer true of it:
 * keel's entries they name are none of them in it (an install killed before
 * it wrote the file, then a file the person made; keel's entries taken out
 * by hand), or it says keel created a file that holds none of keel's. They
 * would make an uninstall take out the person's own entries, or their file. */
static int sides_stale(const struct target *t)
{
    if (!t->f.exists)
        return 0; /* handled where the file is not there */
    int created = cfg_side_exists(t->path, ".keel-created");
    if (!cJSON_GetArraySize(t->manifest))
        return created;
    cJSON *tree = NULL;
    if (t->spec.fmt == FMT_TOML) {
        struct toml_error te;
        struct toml_node *nt = toml_parse(t->f.text, t->f.n, &te);
        tree = nt ? toml_to_json(nt, 0) : NULL;
        toml_free(nt);
    } else {
        struct cfgjson d;
        char w[256];
        if (cfgjson_read(&d, t->f.text, t->f.n, t->spec.fmt == FMT_JSONC, w, sizeof w) == 0) {
            tree = d.tree;
            d.tree = NULL;
            cfgjson_free(&d);
        }
    }
    if (!tree)
        return 0; /* not read: the plan says why */
    /* the pointers another entry lies inside (each proper prefix of an
     * entry that ends before a '/'): the others are the deepest */
    struct ptrset parents = {0};
    cJSON *held = cJSON_CreateArray(); /* the prefixes' text, owned */
    int found = 0, oom = !held;
    const cJSON *e;
    cJSON_ArrayForEach(e, t->manifest)
        for (const char *v = cJSON_GetStringValue(e), *q = v ? strchr(v + 1, '/') : NULL; q && !oom;
             q = strchr(q + 1, '/')) {
            if (inst_ptrset_has(&parents, v, (size_t)(q - v)))
                continue;
            char *pre = strndup(v, (size_t)(q - v));
            cJSON *c = pre ? cJSON_CreateString(pre) : NULL;
            free(pre);
            oom = !c || inst_ptrset_add(&parents, c->valuestring) < 0;
            if (c)
                cJSON_AddItemToArray(held, c);
        }
    for (e = t->manifest->child; e && !found && !oom; e = e->next) { /* one found is enough */
        const char *v = cJSON_GetStringValue(e);
        found = v && !inst_ptrset_has(&parents, v, strlen(v)) && at_pointer(tree, v) != NULL;
    }
    inst_ptrset_free(&parents);
    cJSON_Delete(held);
    cJSON_Delete(tree);
    return oom ? 0 : !found;
}

static int prepare_from(struct ctx *c, struct target *t, const char *from, size_t from_n, char *why, size_t whyn)
{
    static const char empty_json[] = "{\n}\n";
    inst_plan_free(&t->p);
    free(t->base);
    t->base = NULL;
    t->remove = 0;
    if (cfg_load(&t->f, t->path, why, whyn) < 0)
        return -1;
    if (!from && !t->f.exists && (c->uninstall || !t->create))
        return 0;
    const char *base = from ? from : t->f.exists ? t->f.text : empty_json;
    t->base_n = from ? from_n : t->f.exists ? t->f.n : strlen(empty_json);
    if (!(t->base = malloc(t->base_n + 1)))
        return -1;
    memcpy(t->base, base, t->base_n + 1);
    /* An edit redone (the file was written meanwhile) starts from what the
     * files before this one said: which server keeps keel's tools is not
     * decided by this file's own first try. */
    if (!t->planned) {
        t->planned = 1;
        t->had_default = c->have_default, t->had_quiet = c->quiet_wraps;
    } else {
        c->have_default = t->had_default, c->quiet_wraps = t->had_quiet;
    }
    if (inst_plan_text(c, &t->spec, t->base, t->base_n, t->manifest, &t->p, why, whyn) < 0)
        return -1;
    if (c->uninstall && t->f.exists && cfg_side_exists(t->path, ".keel-created") && cjson_empty_object(t->p.want))
        t->remove = 1;
    if (from && !t->p.out && !t->remove) { /* nothing of keel's to change in it: theirs goes back as written */
        if (!(t->p.out = malloc(from_n + 1)))
            return -1;
        memcpy(t->p.out, from, from_n + 1);
        t->p.out_n = from_n;
    }
    return 0;
}

static int prepare(struct ctx *c, struct target *t, char *why, size_t whyn)
{
    return prepare_from(c, t, NULL, 0, why, whyn);
}

static int has_change(const struct target *t)
{
    return t->p.out || t->remove;
}

/* Puts t back as it was, if it is still what keel wrote: 1 when it did. */
static int roll_back(struct target *t)
{
    char why[PATH_MAX + 512];
    struct cfg_file now = {0};
    int back = 0;
    if (cfg_load(&now, t->path, why, sizeof why) == 0 &&
        (t->remove ? !now.exists : now.exists && now.n == t->p.out_n && !memcmp(now.text, t->p.out, now.n))) {
        if ((back = cfg_commit(&now, t->base, t->base_n, why, sizeof why) == 0))
            fprintf(stderr, "keel: %s was put back as it was\n", t->path);
    }
    cfg_release(&now);
    return back;
}

/* The change is written: its pending backup gets its name (a run that wrote
 * nothing names none), and the oldest of the file's backups go. */
static void kept(struct target *t)
{
    if (t->backup[0])
        cfg_backup_keep(t->path, t->backup, sizeof t->backup);
    cfg_backups_prune(t->path, t->backup);
}

#define COMMIT_TRIES    40 /* edits redone on a file rewritten meanwhile, then an error */
#define INSTALL_WAIT_MS 60000 /* the longest wait for another keel install to end */

static int commit(struct ctx *c, struct target *t, int dry)
{
    char why[PATH_MAX + 512];
    if (dry || !has_change(t))
        return 0;
    if (t->f.exists && cfg_backup(&t->f, t->backup, sizeof t->backup) < 0) {
        if (errno == EEXIST)
            fprintf(stderr,
                    "keel: %s: no backup could be kept beside it (every backup name of this second is taken), so "
                    "it was left alone; try again in a second\n",
                    t->path);
        else if (errno == EACCES || errno == EPERM || errno == EROFS) { /* what keel cannot do here, and why */
            int err = errno;
            char d[PATH_MAX];
            snprintf(d, sizeof d, "%s", t->f.real);
            const char *dir = dirname(d);
            struct stat ds;
            int dir_ok = stat(dir, &ds) == 0 && access(dir, W_OK) == 0;
            if (err == EROFS)
                fprintf(stderr, "keel: %s: its folder is on a read-only file system, so it was left alone\n", t->path);
            else if (!dir_ok)
                fprintf(stderr,
                        "keel: %s: keel cannot write in its folder %s (%s), where the backup and the new file go, "
                        "so it was left alone: run keel as the folder's owner, or make the folder writable\n",
                        t->path, dir, strerror(err));
            else
                fprintf(stderr,
                        "keel: %s: the file belongs to another user (uid %u), so keel could not keep a backup with "
                        "its owner and left it alone: run keel as that user\n",
                        t->path, (unsigned)t->f.st.st_uid);
        } else {
            fprintf(stderr, "keel: %s: no backup could be kept beside it (%s), so it was left alone\n", t->path,
                    strerror(errno));
        }
        return -1;
    }
    for (int tries = 0; tries < COMMIT_TRIES; tries++) {
        int rc = t->remove ? cfg_remove(&t->f, why, sizeof why)
                           : cfg_commit_as(&t->f, t->p.out, t->p.out_n, tries > 0, why, sizeof why);
        if (rc == 0) {
            t->written = 1;
            kept(t);
            return 0;
        }
        if (rc < 0) /* it could not be written: why says so */
            break;
        if (rc == 2) {
            /* Written, but a writer that had the file open wrote to it just
             * after: redo the edit on what it wrote, over keel's text. The
             * writer may also have written to keel's new file since (it
             * opens the name afresh): what it added after keel's text is
             * added after its late text too, so neither write is lost. */
            t->written = 1; /* keel's text is there already, whatever comes next */
            char *late = t->f.late, *mine = t->p.out;
            size_t late_n = t->f.late_n, mine_n = t->p.out_n;
            t->f.late = NULL;
            t->p.out = NULL;
            struct cfg_file now = {0};
            char *from = late;
            size_t from_n = late_n;
            if (cfg_load(&now, t->path, why, sizeof why) == 0 && now.exists && now.n > mine_n &&
                !memcmp(now.text, mine, mine_n) && (from = malloc(late_n + now.n - mine_n + 1))) {
                memcpy(from, late, late_n);
                memcpy(from + late_n, now.text + mine_n, now.n - mine_n);
                from_n = late_n + now.n - mine_n;
                from[from_n] = '\0';
            } else {
                from = late;
            }
            cfg_release(&now);
            char how[PATH_MAX + 256];
            rc = prepare_from(c, t, from, from_n, how, sizeof how);
            if (from != late)
                free(from);
            free(late);
            free(mine);
            if (rc < 0) {
                snprintf(why, sizeof why,
                         "%s holds keel's change, but what another program wrote to it just after could not be "
                         "read (%.300s), so keel's change was not made again on it",
                         t->path, how);
                break;
            }
            continue;
        }
        /* Written by something else meanwhile: read it again, edit again,
         * after a short random pause (out of step with a periodic writer). */
        struct timespec pause = {0, (long)(rand() % 2000) * 1000};
        nanosleep(&pause, NULL);
        if (prepare(c, t, why, sizeof why) < 0)
            break;
        if (!has_change(t)) { /* another run made the change: this one wrote nothing, so it keeps no backup */
            if (!t->written && t->backup[0]) {
                unlink(t->backup);
                t->backup[0] = '\0';
            }
            if (t->written)
                kept(t);
            return 0;
        }
        if (tries == COMMIT_TRIES - 1)
            snprintf(why, sizeof why, "%s kept changing while keel wrote it; nothing was lost, try again", t->path);
    }
    fprintf(stderr, "keel: %s\n", why);
    if (t->written) { /* keel's text is there: its backup is named, and said */
        kept(t);
        if (t->backup[0])
            fprintf(stderr, "keel: the file as it was before keel is kept as %s\n", t->backup);
    }
    if (!t->written && t->backup[0]) { /* the file is as it was: no backup of a change that was not made */
        unlink(t->backup);
        t->backup[0] = '\0';
    }
    return -1;
}

static void report(const struct ctx *c, const struct target *t, int dry)
{
    if (!t->f.exists && !t->p.out)
        return;
    const char *tail = dry && has_change(t) ? " (dry run: nothing written)" : "";
    if (!has_change(t)) {
        printf("%s (%s): unchanged\n", t->path, t->client);
    } else if (t->remove) {
        printf("%s (%s): removed: keel created it, and nothing but keel's entries was in it%s\n", t->path, t->client,
               tail);
    } else if (c->uninstall) {
        printf("%s (%s): %d server(s) unwrapped, %d hook(s) removed%s\n", t->path, t->client, t->p.unwrapped,
               t->p.hooks_removed, tail);
    } else {
        printf("%s (%s): %d server(s) wrapped, %d hook(s) registered%s\n", t->path, t->client, t->p.wrapped,
               t->p.hooks_added, tail);
    }
    if (t->p.notes.n)
        fputs(t->p.notes.p, stdout);
    if (t->p.kept_hooks)
        printf("  left alone: %d hook command(s) that run keel hook otherwise than keel install writes (keel found "
               "on PATH, a pipe, options): yours to keep or remove by hand\n",
               t->p.kept_hooks);
    if (t->f.exists && strcmp(t->f.real, t->path) && has_change(t))
        printf("  %s is a link: keel edited the file it points to, %s\n", t->path, t->f.real);
    if (t->f.exists && t->f.st.st_nlink > 1 && t->p.out)
        printf("  %s had %lu other hard link(s): they keep the content from before\n", t->path,
               (unsigned long)t->f.st.st_nlink - 1);
    if (t->backup[0])
        printf("  the file as it was: %s\n", t->backup);
    if (t->remove && t->f.exists) { /* a file keel created goes: all of it */
        static struct cfg_span sa[SECRETS_MAX];
        int na = inst_secrets_of(t->spec.fmt, t->base, t->base_n, sa);
        cfgdiff_print(stdout, t->path, t->base, t->base_n, sa, na, "", 0, NULL, 0,
                      &(struct cfg_edit){0, t->base_n, "", 0}, 1);
    } else if (t->p.out) {
        static struct cfg_span sa[SECRETS_MAX], sb[SECRETS_MAX];
        int na = inst_secrets_of(t->spec.fmt, t->base, t->base_n, sa),
            nb = inst_secrets_of(t->spec.fmt, t->p.out, t->p.out_n, sb);
        cfgdiff_print(stdout, t->path, t->f.exists ? t->base : "", t->f.exists ? t->base_n : 0, sa,
                      t->f.exists ? na : 0, t->p.out, t->p.out_n, sb, nb, t->p.ed, t->f.exists ? t->p.n : 0);
        if (!t->f.exists) /* a new file: all of it */
            cfgdiff_print(stdout, t->path, "", 0, NULL, 0, t->p.out, t->p.out_n, sb, nb,
                          &(struct cfg_edit){0, 0, t->p.out, t->p.out_n}, 1);
    }
    fflush(stdout);
}

static void target_free(struct target *t)
{
    cfg_release(&t->f);
    cJSON_Delete(t->manifest);
    inst_plan_free(&t->p);
    free(t->base);
}

/* An install's side files: what keel adds listed in FILE.keel-added, and
 * FILE.keel-created for a file keel makes. Written before the file itself,
 * so a run killed between the two leaves them saying more than was done,
 * never less (uninstall takes out only keel's own entries, and a container
 * only when they were all it held); the caller puts them back when the
 * change is not made (markers_undo). */
static void markers_write(struct target *t)
{
    cJSON *m = inst_manifest_merge(t->manifest, t->p.added);
    if (m && cJSON_GetArraySize(m) != cJSON_GetArraySize(t->manifest)) {
        manifest_write(t->path, m);
        t->marked |= 1;
    }
    cJSON_Delete(m);
    if (!t->f.exists) {
        char side[PATH_MAX + 32];
        snprintf(side, sizeof side, "%s.keel-created", t->path);
        struct cfg_file f = {0};
        char why[256];
        if (cfg_load(&f, side, why, sizeof why) == 0 && !f.exists && cfg_commit(&f, "", 0, why, sizeof why) == 0)
            t->marked |= 2;
        cfg_release(&f);
    }
}

/* The side files as they were, for a change that was not made. */
static void markers_undo(struct target *t)
{
    if (t->marked & 1)
        manifest_write(t->path, t->manifest);
    if (t->marked & 2)
        side_remove(t->path, ".keel-created");
    t->marked = 0;
}

/* The side files once a target is written. */
static void after_write(const struct ctx *c, struct target *t)
{
    if (c->uninstall) {
        side_remove(t->path, ".keel-added");
        side_remove(t->path, ".keel-installed"); /* an older keel's */
        side_remove(t->path, ".keel-created"); /* what is left is the person's */
        return;
    }
    markers_write(t); /* again: an edit redone on a file written meanwhile may add more */
}

/* Where a client keeps its files: under $HOME, or in the directory its own
 * variable names (CLAUDE_CONFIG_DIR, CODEX_HOME) when it is set. k: 0 the
 * directory that says the client is there, 1 the servers file, 2 hooks. */
static void client_path(const struct client *cl, const char *home, int k, char *out, size_t n)
{
    const char *moved = cl->env_dir ? getenv(cl->env_dir) : NULL;
    const char *rel[3] = {cl->mark, cl->servers, cl->hooks};
    if (moved && *moved)
        snprintf(out, n, "%s%s%s", moved, k ? "/" : "", k ? cl->in_dir[k - 1] : "");
    else
        snprintf(out, n, "%s/%s", home, rel[k]);
}

/* A client: every file planned, then written; one failing, none written. */
static int do_client(struct ctx *c, const struct client *cl, const char *home, int dry, int *keel_servers)
{
    struct target t[3];
    int nt = 0, rc = 0;
    memset(t, 0, sizeof t);
    c->have_default = c->quiet_wraps = 0;
    if (cl->servers) {
        client_path(cl, home, 1, t[nt].path, sizeof t[nt].path);
        t[nt].spec = (struct target_spec){cl->fmt, 1, 0, !strcmp(cl->name, "claude-code"), cl->host};
        if (cl->hooks && !strcmp(cl->hooks, cl->servers))
            t[nt].spec.hooks = 1;
        t[nt].create = t[nt].spec.hooks;
        nt++;
    }
    if (cl->hooks && (!cl->servers || strcmp(cl->hooks, cl->servers))) {
        client_path(cl, home, 2, t[nt].path, sizeof t[nt].path);
        t[nt].spec = (struct target_spec){FMT_JSON, 0, 1, 0, cl->host};
        t[nt].create = 1;
        nt++;
    }
    if (c->project && cl->project) {
        snprintf(t[nt].path, sizeof t[nt].path, "%s/%s", c->project, cl->project);
        t[nt].spec = (struct target_spec){cl->fmt == FMT_JSONC ? FMT_JSONC : FMT_JSON, 1, 0, 0, NULL};
        nt++;
    }
    char why[PATH_MAX + 512];
    for (int i = 0; i < nt; i++) {
        t[i].client = cl->name;
        t[i].manifest = manifest_read(t[i].path);
        int rc_p = prepare(c, &t[i], why, sizeof why);
        if (rc_p == 0 && sides_stale(&t[i])) { /* read afresh without them; they go, unless this is a dry run */
            if (!dry) {
                side_remove(t[i].path, ".keel-created");
                side_remove(t[i].path, ".keel-added");
            }
            cJSON_Delete(t[i].manifest);
            t[i].manifest = cJSON_CreateArray();
            rc_p = prepare(c, &t[i], why, sizeof why);
        }
        if (rc_p < 0) {
            int named = !strncmp(why, t[i].path, strlen(t[i].path)); /* a reading error names the file itself */
            fprintf(stderr,
                    "keel: %s%s%s\nkeel: none of %s's files was changed: fix that one (or add keel by "
                    "hand: see keel help install) and run keel %s again\n",
                    named ? "" : t[i].path, named ? "" : ": ", why, cl->name, c->uninstall ? "uninstall" : "install");
            rc = 1;
            goto out;
        }
    }
    for (int i = 0; i < nt && !dry; i++)
        cfg_tidy(t[i].path);
    /* Side files left by a run killed midway, or by a file removed by
     * hand: for a file that is not there they say nothing true (a file the
     * person makes later is not keel's), and they go. */
    for (int i = 0; i < nt && !dry; i++)
        if (!t[i].f.exists &&
            (cfg_side_exists(t[i].path, ".keel-created") || cfg_side_exists(t[i].path, ".keel-added"))) {
            side_remove(t[i].path, ".keel-created");
            side_remove(t[i].path, ".keel-added");
            cJSON_Delete(t[i].manifest);
            t[i].manifest = cJSON_CreateArray();
        }
    for (int i = 0; i < nt && !rc; i++) {
        if (!dry && !c->uninstall && has_change(&t[i]))
            markers_write(&t[i]);
        if (commit(c, &t[i], dry) < 0) {
            int left = 0;
            for (int j = 0; j <= i; j++) /* a file left changed keeps its side files */
                if (!t[j].written || (j < i && roll_back(&t[j])))
                    markers_undo(&t[j]);
                else
                    left = 1;
            if (left)
                fprintf(stderr,
                        "keel: not all of %s's files were changed; what keel changed is said above, and keel "
                        "uninstall takes it out\n",
                        cl->name);
            else
                fprintf(stderr, "keel: none of %s's files was left changed\n", cl->name);
            rc = 1;
        }
    }
    int seen = 0;
    for (int i = 0; i < nt && !rc; i++) {
        /* uninstall: the side files go once nothing of keel's is left, also
         * when an uninstall killed midway had already taken keel's entries
         * out */
        if (t[i].written || (c->uninstall && !dry && t[i].f.exists && !has_change(&t[i])))
            after_write(c, &t[i]);
        report(c, &t[i], dry);
        seen |= t[i].f.exists || t[i].p.out;
    }
    if (!rc && !seen) /* the client is here, none of its files is */
        printf("%s (%s): not there: nothing to %s\n", nt ? t[0].path : cl->name, cl->name,
               c->uninstall ? "take out" : "wrap");
    if (!rc && !c->uninstall && !c->have_default && c->quiet_wraps)
        printf("  note: every server of %s that runs through keel has --expose none, so keel's tools are in none of "
               "its chats (the one that kept them is gone?): take \"--expose\", \"none\" out of one of them\n",
               cl->name);
    if (!rc && !c->uninstall && cl->closing) {
        int changed = 0;
        for (int i = 0; i < nt; i++)
            changed |= has_change(&t[i]);
        if (changed)
            printf("  next: %s\n", cl->closing);
    }
    *keel_servers += c->have_default || c->quiet_wraps; /* a server through keel, with its tools or not (said above) */
out:
    for (int i = 0; i < nt; i++)
        target_free(&t[i]);
    return rc;
}

/* A keel run from its build tree: configs would point into it. */
static void warn_build_tree(const char *keel)
{
    char dir[PATH_MAX], cache[PATH_MAX + 32];
    snprintf(dir, sizeof dir, "%s", keel);
    char *slash = strrchr(dir, '/');
    if (!slash)
        return;
    *slash = '\0';
    snprintf(cache, sizeof cache, "%s/CMakeCache.txt", dir);
    FILE *f = fopen(cache, "r");
    if (!f)
        return;
    char line[PATH_MAX + 64], prefix[PATH_MAX] = "/usr/local";
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "CMAKE_INSTALL_PREFIX:PATH=", 26)) {
            snprintf(prefix, sizeof prefix, "%.*s", (int)(sizeof prefix - 1), line + 26);
            prefix[strcspn(prefix, "\n")] = '\0';
        }
    fclose(f);
    fprintf(stderr,
            "keel: warning: this keel runs from its build tree (%s): every configuration will point there, "
            "and cleaning or moving the tree breaks them. Install it first (cmake --install %s) and run %s/bin/keel "
            "install instead.\n",
            dir, dir, prefix);
}

int install_main(int argc, char **argv, const char *argv0, int uninstall)
{
    static char keel_path[PATH_MAX], project[PATH_MAX];
    int dry = 0, chosen[NCLIENTS] = {0}, any = 0;
    const char *cmd = uninstall ? "uninstall" : "install", *proj = NULL;
    int want_project = 0;
    for (int i = 0; i < argc; i++) {
        const char *v = NULL;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs(install_help, stdout);
            return 0;
        } else if (!strcmp(argv[i], "--dry-run")) {
            dry = 1;
        } else if (!strcmp(argv[i], "--project")) {
            want_project = 1;
            if (i + 1 < argc && argv[i + 1][0] != '-')
                proj = argv[++i];
        } else if (!strncmp(argv[i], "--project=", 10)) {
            want_project = 1;
            proj = argv[i] + 10;
        } else if (!strncmp(argv[i], "--client=", 9)) {
            v = argv[i] + 9;
        } else if (!strcmp(argv[i], "--client")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "keel: --client needs a name: claude-code, claude-desktop, cursor, codex or gemini\n");
                return 64;
            }
            v = argv[++i];
        } else {
            fprintf(stderr, "keel: unexpected argument to %s: %s (see keel help install)\n", cmd, argv[i]);
            return 64;
        }
        if (v) {
            size_t c = 0;
            while (c < NCLIENTS && strcmp(clients[c].name, v))
                c++;
            if (c == NCLIENTS) {
                fprintf(stderr, "keel: no client named %s: claude-code, claude-desktop, cursor, codex or gemini\n", v);
                return 64;
            }
            chosen[c] = any = 1;
        }
    }
    const char *home = getenv("HOME");
    if (!home || !*home) {
        fprintf(stderr, "keel: HOME is not set, so the clients' configurations cannot be found\n");
        return 1;
    }
    if (platform_self_path(argv0, keel_path, sizeof keel_path) < 0) {
        fprintf(stderr, "keel: cannot tell where this keel is installed; run it by its full path\n");
        return 1;
    }
    if (want_project && !realpath(proj ? proj : ".", project)) {
        fprintf(stderr, "keel: --project %s: %s\n", proj ? proj : ".", strerror(errno));
        return 64;
    }
    struct ctx c = {.keel = keel_path, .uninstall = uninstall, .project = want_project ? project : NULL};
    srand((unsigned)getpid());
    inst_shell_quote(c.hook_prefix, sizeof c.hook_prefix, keel_path);
    if (!uninstall)
        warn_build_tree(keel_path);
    /* One keel install or uninstall at a time: their files and FILE.keel-added
     * change together, and two runs at once could leave them out of step.
     * The lock is in keel's state directory; when that is refused (another
     * user's, after a sudo keel), beside the person's files in HOME; with
     * neither, nothing is written. */
    int lock = -1;
    if (!dry) {
        kerr le = {0};
        lock = state_exclusive(NULL, "install.lock", INSTALL_WAIT_MS, &le);
        if (lock < 0 && le.code && !strcmp(le.code, "STATE_UNWRITABLE")) {
            le = (kerr){0};
            lock = state_exclusive(home, ".keel-install.lock", INSTALL_WAIT_MS, &le);
        }
        if (lock < 0) {
            if (le.code && !strcmp(le.code, "STATE_BUSY"))
                fprintf(stderr,
                        "keel: another keel install or uninstall has run for over %d s; nothing was changed: try "
                        "again when it is done\n",
                        INSTALL_WAIT_MS / 1000);
            else
                fprintf(stderr,
                        "keel: keel could not take its install lock (%s), so that no other keel install changes "
                        "the same files at once; nothing was changed\n",
                        le.message[0] ? le.message : "no reason given");
            return 1;
        }
    }
    int rc = 0, found = 0, keel_servers = 0, hosts = 0;
    for (size_t i = 0; i < NCLIENTS; i++) {
        const struct client *cl = &clients[i];
        char mark[PATH_MAX];
        client_path(cl, home, 0, mark, sizeof mark);
        struct stat st;
        int present = stat(mark, &st) == 0;
        if (any ? !chosen[i] : !present)
            continue;
        if (!present) {
            fprintf(stderr, "keel: %s does not seem to be installed here (no %s)\n", cl->name, mark);
            rc = 1;
            continue;
        }
        found++;
        hosts += cl->host != NULL;
        rc |= do_client(&c, cl, home, dry, &keel_servers);
    }
    if (!found && !any)
        printf("keel found no client configuration under %s (claude-code, claude-desktop, cursor, codex, gemini)\n",
               home);
    if (!uninstall && hosts && !keel_servers && !rc)
        printf("No MCP server runs through keel, so keel's own tools are not in your chats. To act on an advisory "
               "from keel's hooks, start your next prompt with its word (for example: keel snooze-15m).\n");
    if (lock >= 0)
        close(lock);
    return rc;
}
