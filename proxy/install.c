/* install.c: keel install and keel uninstall (see install.h). */
#include "install.h"

#include "jscan.h"
#include "loop.h"
#include "platform.h"
#include "readfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define CONFIG_MAX (16u << 20)

const char install_help[] =
    "usage: keel install [--client NAME]... [--dry-run]\n"
    "       keel uninstall [--client NAME]... [--dry-run]\n"
    "\n"
    "install wraps the MCP servers of each client's configuration with keel wrap\n"
    "(the first keeps keel's tools, the others --expose none) and registers keel's\n"
    "hooks where the client has them, printing a unified diff of every change.\n"
    "Clients: claude-code (~/.claude.json, hooks in ~/.claude/settings.json),\n"
    "claude-desktop, cursor (~/.cursor/mcp.json), codex (~/.codex/config.toml, hooks\n"
    "in ~/.codex/hooks.json), gemini (~/.gemini/settings.json); by default every\n"
    "one whose configuration is there. Everything else in a file stays byte for\n"
    "byte; the file as it was is kept beside it (FILE.keel-backup). A second\n"
    "install changes nothing. uninstall restores each file exactly, when nothing\n"
    "else has changed it since; otherwise it leaves it and says where the\n"
    "original is. --dry-run prints the diff and writes nothing.\n";

enum { HOST_NONE, HOST_CLAUDE, HOST_CODEX, HOST_GEMINI };

struct client {
    const char *name;
    const char *servers;            /* under $HOME: the file with mcpServers (NULL: none) */
    const char *hooks;              /* under $HOME: the file hooks are registered in */
    const char *home_mark;          /* under $HOME: present when the client is installed */
    int host;
    int toml;                       /* servers is Codex's config.toml */
};

static const struct client clients[] = {
    {"claude-code", ".claude.json", ".claude/settings.json", ".claude", HOST_CLAUDE, 0},
#ifdef __APPLE__
    {"claude-desktop", "Library/Application Support/Claude/claude_desktop_config.json", NULL,
     "Library/Application Support/Claude", HOST_NONE, 0},
#else
    {"claude-desktop", ".config/Claude/claude_desktop_config.json", NULL, ".config/Claude", HOST_NONE, 0},
#endif
    {"cursor", ".cursor/mcp.json", NULL, ".cursor", HOST_NONE, 0},
    {"codex", ".codex/config.toml", ".codex/hooks.json", ".codex", HOST_CODEX, 1},
    {"gemini", ".gemini/settings.json", ".gemini/settings.json", ".gemini", HOST_GEMINI, 0},
};
#define NCLIENTS (sizeof clients / sizeof *clients)

static char keel_path[PATH_MAX];

/* --- small text helpers ------------------------------------------------------ */

struct sb {
    char *p;
    size_t n, cap;
};

static void sb_add(struct sb *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = (b->n + n + 1) * 2;
        char *p = realloc(b->p, cap);
        if (!p)
            return;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static void sb_str(struct sb *b, const char *s)
{
    sb_add(b, s, strlen(s));
}

/* s as a JSON (and TOML basic) string literal. */
static void sb_quoted(struct sb *b, const char *s)
{
    sb_add(b, "\"", 1);
    for (; *s; s++) {
        char esc[8];
        if (*s == '"' || *s == '\\') {
            esc[0] = '\\';
            esc[1] = *s;
            sb_add(b, esc, 2);
        } else if ((unsigned char)*s < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", (unsigned char)*s);
            sb_add(b, esc, 6);
        } else {
            sb_add(b, s, 1);
        }
    }
    sb_add(b, "\"", 1);
}

static uint64_t text_hash(const char *s, size_t n)
{
    return loop_hash(s, n, 0x6b65656c);
}

/* --- the servers: mcpServers entries wrapped ----------------------------------- */

/* 1 if the raw JSON string token names keel (its path, or a file called keel). */
static int is_keel(const char *raw, size_t n)
{
    char *s = raw[0] == '"' ? jscan_string_prefix(raw, n, n) : NULL;
    int yes = 0;
    if (s) {
        const char *base = strrchr(s, '/');
        base = base ? base + 1 : s;
        yes = !strcmp(s, keel_path) || !strcmp(base, "keel");
    }
    free(s);
    return yes;
}

/* The new args array: wrap [--expose none] -- COMMAND ARGS..., the old
 * command and arguments kept as their own raw JSON text. */
static void wrapped_args(struct sb *b, const struct jscan_span *cmd, const struct jscan_span *args, int expose_none)
{
    sb_str(b, expose_none ? "[\"wrap\", \"--expose\", \"none\", \"--\", " : "[\"wrap\", \"--\", ");
    sb_add(b, cmd->p, cmd->n);
    size_t pos = 0;
    const char *e;
    while (args && args->p && jscan_array_next(args->p, args->n, &pos, &e)) {
        size_t end = jscan_value_end(args->p, args->n, pos);
        sb_str(b, ", ");
        sb_add(b, e, end - pos);
    }
    sb_str(b, "]");
}

#define EDITS_MAX 256

struct edits {
    struct jscan_insert v[EDITS_MAX];
    struct sb text[EDITS_MAX];
    int n;
};

static struct sb *edit_at(struct edits *ed, size_t at, size_t del)
{
    if (ed->n == EDITS_MAX)
        return NULL;
    ed->v[ed->n] = (struct jscan_insert){at, NULL, del};
    memset(&ed->text[ed->n], 0, sizeof ed->text[ed->n]);
    return &ed->text[ed->n++];
}

static char *apply(const char *s, size_t n, struct edits *ed, size_t *out_n)
{
    for (int i = 0; i < ed->n; i++)
        ed->v[i].text = ed->text[i].p ? ed->text[i].p : "";
    char *out = jscan_splice(s, n, ed->v, ed->n, out_n);
    for (int i = 0; i < ed->n; i++)
        free(ed->text[i].p);
    ed->n = 0;
    return out;
}

/* 1 if the raw args array holds "--expose", "none" (or "--expose=none"). */
static int exposes_none(const char *raw, size_t n)
{
    cJSON *a = jscan_parse(raw, n), *e;
    int prev = 0, yes = 0;
    cJSON_ArrayForEach(e, a) {
        const char *v = cJSON_GetStringValue(e);
        if (v && ((prev && !strcmp(v, "none")) || !strcmp(v, "--expose=none")))
            yes = 1;
        prev = v && !strcmp(v, "--expose");
    }
    cJSON_Delete(a);
    return yes;
}

/* JSON mcpServers: each stdio server's command becomes keel, its args the wrap. */
static void wrap_json_servers(const char *s, size_t n, struct edits *ed, int *wrapped)
{
    const char *srv;
    size_t sn;
    if (jscan_member(s, n, "mcpServers", &srv, &sn) != 1 || srv[0] != '{')
        return;
    static const char *const keys[] = {"command", "args"};
    int have_default = 0;                     /* a server already wrapped with keel's default tools */
    size_t pos = 0;
    struct jscan_span k, v;
    while (jscan_object_next(srv, sn, &pos, &k, &v)) {
        struct jscan_span m[2];
        if (v.p[0] == '{' && jscan_members(v.p, v.n, keys, m, 2, 0) >= 1 && m[0].p && is_keel(m[0].p, m[0].n) &&
            !(m[1].p && exposes_none(m[1].p, m[1].n)))
            have_default = 1;
    }
    pos = 0;
    while (jscan_object_next(srv, sn, &pos, &k, &v)) {
        struct jscan_span m[2];
        if (v.p[0] != '{' || jscan_members(v.p, v.n, keys, m, 2, 0) < 1 || !m[0].p || m[0].p[0] != '"' ||
            is_keel(m[0].p, m[0].n) || (m[1].p && m[1].p[0] != '['))
            continue;                         /* a remote server, keel itself, or a shape keel does not know */
        struct sb *t = edit_at(ed, (size_t)(m[0].p - s), m[0].n);
        if (!t)
            return;
        sb_quoted(t, keel_path);
        if (m[1].p) {
            t = edit_at(ed, (size_t)(m[1].p - s), m[1].n);
        } else {
            t = edit_at(ed, (size_t)(m[0].p - s) + m[0].n, 0);
            if (t)
                sb_str(t, ", \"args\": ");
        }
        if (!t)
            return;
        wrapped_args(t, &m[0], m[1].p ? &m[1] : NULL, have_default);
        have_default = 1;
        (*wrapped)++;
    }
}

/* --- hooks ------------------------------------------------------------------ */

static const char *const claude_events[] = {"UserPromptSubmit", "Stop", "SubagentStop", "SessionStart", NULL};
static const char *const gemini_events[] = {"BeforeAgent", "AfterAgent", "SessionStart", NULL};

static void hook_group(struct sb *b, int host, const char *event)
{
    sb_str(b, "[{\"hooks\": [{\"type\": \"command\", \"command\": ");
    struct sb cmd = {0};
    sb_str(&cmd, keel_path);                 /* the host runs it through a shell: quote the path if it needs it */
    if (strpbrk(keel_path, " \t'\"$`\\")) {
        free(cmd.p);
        memset(&cmd, 0, sizeof cmd);
        sb_str(&cmd, "'");
        sb_str(&cmd, keel_path);
        sb_str(&cmd, "'");
    }
    sb_str(&cmd, " hook ");
    sb_str(&cmd, event);
    sb_str(&cmd, host == HOST_CODEX ? " --host codex" : host == HOST_GEMINI ? " --host gemini" : "");
    sb_quoted(b, cmd.p ? cmd.p : "");
    free(cmd.p);
    sb_str(b, host == HOST_GEMINI ? ", \"timeout\": 10000}]}]" : ", \"timeout\": 10}]}]");
}

/* Registers keel hook for each event the host has; an event already running a
 * keel hook is left as it is. */
static void register_hooks(const char *s, size_t n, int host, struct edits *ed, int *added)
{
    const char *const *events = host == HOST_GEMINI ? gemini_events : claude_events;
    const char *top = s + jscan_value_end(s, n, 0);
    const char *open = s;
    while (open < top && *open != '{')
        open++;
    if (open >= top)
        return;
    const char *hooks;
    size_t hn;
    if (jscan_member(s, n, "hooks", &hooks, &hn) != 1) {       /* no hooks yet: one new member, first */
        struct sb *t = edit_at(ed, (size_t)(open - s) + 1, 0);
        if (!t)
            return;
        sb_str(t, "\n  \"hooks\": {");
        for (int i = 0; events[i]; i++) {
            sb_str(t, i ? ",\n    \"" : "\n    \"");
            sb_str(t, events[i]);
            sb_str(t, "\": ");
            hook_group(t, host, events[i]);
            (*added)++;
        }
        size_t rest = (size_t)(top - open) - 1;
        int empty = 1;
        for (size_t i = 1; i < rest && empty; i++)
            empty = strchr(" \t\r\n", open[i]) != NULL;
        sb_str(t, empty ? "\n  }" : "\n  },");
        return;
    }
    if (hooks[0] != '{')
        return;
    int empty = 1;                            /* the hooks object holds nothing yet */
    for (size_t j = 1; j + 1 < hn && empty; j++)
        empty = strchr(" \t\r\n", hooks[j]) != NULL;
    struct sb *lead = NULL;                   /* the events it lacks, in one insertion at its start */
    for (int i = 0; events[i]; i++) {
        const char *arr;
        size_t an;
        if (jscan_member(hooks, hn, events[i], &arr, &an) != 1) {
            if (!lead && !(lead = edit_at(ed, (size_t)(hooks - s) + 1, 0)))
                return;
            sb_str(lead, lead->n ? ",\n    \"" : "\n    \"");
            sb_str(lead, events[i]);
            sb_str(lead, "\": ");
            hook_group(lead, host, events[i]);
            (*added)++;
            continue;
        }
        if (arr[0] != '[')
            continue;
        int has = 0;                          /* "keel hook" or "keel' hook" in a command there */
        for (size_t j = 5; j + 6 <= an && !has; j++)
            has = !memcmp(arr + j, " hook ", 6) && (!memcmp(arr + j - 4, "keel", 4) || !memcmp(arr + j - 5, "keel'", 5));
        if (has)
            continue;
        struct sb group = {0};
        hook_group(&group, host, events[i]);       /* "[{...}]": its element goes in */
        struct sb *t = edit_at(ed, (size_t)(arr - s) + an - 1, 0);
        if (!t) {
            free(group.p);
            return;
        }
        int empty = 1;
        for (size_t j = 1; j + 1 < an && empty; j++)
            empty = strchr(" \t\r\n", arr[j]) != NULL;
        if (!empty)
            sb_str(t, ", ");
        if (group.p)
            sb_add(t, group.p + 1, group.n - 2);
        free(group.p);
        (*added)++;
    }
    if (lead)
        sb_str(lead, empty ? "\n  " : ",");
}

/* --- Codex's config.toml ------------------------------------------------------ */

struct line {
    const char *p;                  /* its first byte */
    size_t n;                       /* without the newline */
};

static int next_line(const char *s, size_t n, size_t *pos, struct line *l)
{
    if (*pos >= n)
        return 0;
    const char *e = memchr(s + *pos, '\n', n - *pos);
    l->p = s + *pos;
    l->n = e ? (size_t)(e - l->p) : n - *pos;
    *pos += l->n + (e != NULL);
    return 1;
}

/* The value after `key =` on a line (spaces skipped), or NULL. */
static const char *toml_value(const struct line *l, const char *key, size_t *vn)
{
    const char *p = l->p, *e = l->p + l->n;
    while (p < e && (*p == ' ' || *p == '\t'))
        p++;
    size_t kl = strlen(key);
    if ((size_t)(e - p) <= kl || memcmp(p, key, kl))
        return NULL;
    p += kl;
    while (p < e && (*p == ' ' || *p == '\t'))
        p++;
    if (p >= e || *p != '=')
        return NULL;
    p++;
    while (p < e && (*p == ' ' || *p == '\t'))
        p++;
    const char *v = p, *ve = e;
    while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t' || ve[-1] == '\r'))
        ve--;
    *vn = (size_t)(ve - v);
    return v;
}

/* 1 if what follows a value on its line is only blanks or a # comment. */
static int toml_rest_ok(const char *p, const char *e)
{
    while (p < e && (*p == ' ' || *p == '\t' || *p == '\r'))
        p++;
    return p == e || *p == '#';
}

/* An array's end (one past its closing bracket) on one line, strings skipped, or NULL. */
static const char *toml_array_end(const char *v, size_t n)
{
    if (!n || v[0] != '[')
        return NULL;
    for (size_t i = 1; i < n; i++) {
        if (v[i] == '"') {
            for (i++; i < n && v[i] != '"'; i++)
                if (v[i] == '\\')
                    i++;
        } else if (v[i] == ']') {
            return v + i + 1;
        }
    }
    return NULL;
}

/* A basic string's end (one past its closing quote), or NULL. */
static const char *toml_string_end(const char *v, size_t n)
{
    if (!n || v[0] != '"')
        return NULL;
    for (size_t i = 1; i < n; i++) {
        if (v[i] == '\\')
            i++;
        else if (v[i] == '"')
            return v + i + 1;
    }
    return NULL;
}

struct toml_server {
    struct line command_line;
    const char *cmd, *args;         /* the command's string token; the args array (one line) */
    size_t cmd_n, args_n;
    int in_table, multiline_args;
};

static void toml_finish(const char *s, const struct toml_server *t, struct edits *ed, int *have_default, int *wrapped,
                        int *left)
{
    if (!t->in_table || !t->cmd)
        return;
    char *c = malloc(t->cmd_n + 1);
    if (!c)
        return;
    memcpy(c, t->cmd, t->cmd_n);
    c[t->cmd_n] = '\0';
    int keel = is_keel(c, t->cmd_n);
    free(c);
    if (keel)
        return;
    if (t->multiline_args) {
        (*left)++;
        return;
    }
    struct sb *e = edit_at(ed, (size_t)(t->cmd - s), t->cmd_n);
    if (!e)
        return;
    sb_quoted(e, keel_path);
    e = t->args ? edit_at(ed, (size_t)(t->args - s), t->args_n)
                : edit_at(ed, (size_t)(t->command_line.p - s) + t->command_line.n, 0);
    if (!e)
        return;
    if (!t->args)
        sb_str(e, "\nargs = ");
    sb_str(e, *have_default ? "[\"wrap\", \"--expose\", \"none\", \"--\", " : "[\"wrap\", \"--\", ");
    sb_add(e, t->cmd, t->cmd_n);
    if (t->args && t->args_n > 2) {
        const char *in = t->args + 1, *end = t->args + t->args_n - 1;
        while (in < end && (*in == ' ' || *in == '\t'))
            in++;
        while (end > in && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == ','))
            end--;
        if (end > in) {
            sb_str(e, ", ");
            sb_add(e, in, (size_t)(end - in));
        }
    }
    sb_str(e, "]");
    *have_default = 1;
    (*wrapped)++;
}

static void wrap_toml_servers(const char *s, size_t n, struct edits *ed, int *wrapped, int *left)
{
    size_t pos = 0;
    struct line l;
    struct toml_server t;
    int have_default = 0;
    /* First pass: is a server already wrapped with keel's default tools? */
    while (next_line(s, n, &pos, &l)) {
        size_t vn;
        const char *v = toml_value(&l, "args", &vn);
        if (v && vn > 8 && !memcmp(v, "[\"wrap\"", 7) && !exposes_none(v, vn))
            have_default = 1;
    }
    memset(&t, 0, sizeof t);
    pos = 0;
    while (next_line(s, n, &pos, &l)) {
        const char *p = l.p;
        while (p < l.p + l.n && (*p == ' ' || *p == '\t'))
            p++;
        if (p < l.p + l.n && *p == '[') {
            toml_finish(s, &t, ed, &have_default, wrapped, left);
            memset(&t, 0, sizeof t);
            const char *name = p + 1, *close = memchr(p, ']', (size_t)(l.p + l.n - p));
            t.in_table = close && (size_t)(close - name) > 12 && !memcmp(name, "mcp_servers.", 12) &&
                         !memchr(name + 12, '.', (size_t)(close - name - 12)) && name[0] != '[';
            continue;
        }
        size_t vn;
        const char *v;
        const char *end;
        if (t.in_table && (v = toml_value(&l, "command", &vn)) && (end = toml_string_end(v, vn)) &&
            toml_rest_ok(end, v + vn)) {
            t.command_line = l;
            t.cmd = v;
            t.cmd_n = (size_t)(end - v);
        } else if (t.in_table && (v = toml_value(&l, "args", &vn))) {
            if ((end = toml_array_end(v, vn)) && toml_rest_ok(end, v + vn)) {
                t.args = v;
                t.args_n = (size_t)(end - v);
            } else {
                t.multiline_args = 1;
            }
        }
    }
    toml_finish(s, &t, ed, &have_default, wrapped, left);
}

/* Codex runs hooks only with [features] codex_hooks = true. */
static void toml_enable_hooks(const char *s, size_t n, struct edits *ed, int *added)
{
    size_t pos = 0, header_end = 0;
    struct line l;
    int in_features = 0, seen = 0;
    while (next_line(s, n, &pos, &l)) {
        const char *p = l.p;
        while (p < l.p + l.n && (*p == ' ' || *p == '\t'))
            p++;
        if (p < l.p + l.n && *p == '[') {
            in_features = l.n - (size_t)(p - l.p) >= 10 && !memcmp(p, "[features]", 10);
            if (in_features) {
                seen = 1;
                header_end = (size_t)(l.p - s) + l.n;
            }
            continue;
        }
        size_t vn;
        const char *v;
        if (in_features && (v = toml_value(&l, "codex_hooks", &vn))) {
            if (!(vn == 4 && !memcmp(v, "true", 4))) {
                struct sb *e = edit_at(ed, (size_t)(v - s), vn);
                if (e) {
                    sb_str(e, "true");
                    (*added)++;
                }
            }
            return;
        }
    }
    struct sb *e = edit_at(ed, seen ? header_end : n, 0);
    if (!e)
        return;
    if (seen)
        sb_str(e, "\ncodex_hooks = true");
    else
        sb_str(e, n && s[n - 1] != '\n' ? "\n\n[features]\ncodex_hooks = true\n" : "\n[features]\ncodex_hooks = true\n");
    (*added)++;
}

/* --- files ------------------------------------------------------------------ */

struct target {
    char path[PATH_MAX];
    const char *client;
    int servers, toml, features;
    int host;                       /* hooks to register (HOST_NONE: none) */
};

/* path + suffix into buf (cut to fit; paths are under PATH_MAX). */
static void side_name(char *buf, size_t cap, const char *path, const char *suffix)
{
    size_t pl = strlen(path), sl = strlen(suffix);
    if (pl + sl + 1 > cap)
        pl = cap - sl - 1;
    memcpy(buf, path, pl);
    memcpy(buf + pl, suffix, sl + 1);
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static int write_file(const char *path, const char *s, size_t n, mode_t mode)
{
    char tmp[PATH_MAX + 16];
    side_name(tmp, sizeof tmp, path, ".keel-tmp");
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd < 0)
        return -1;
    size_t done = 0;
    while (done < n) {
        ssize_t w = write(fd, s + done, n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            close(fd);
            unlink(tmp);
            return -1;
        }
        done += (size_t)w;
    }
    if (fsync(fd) < 0 || close(fd) < 0 || rename(tmp, path) < 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* A unified diff from a to b (diff -u), labelled with the path. */
static void show_diff(const char *path, const char *a, size_t an, const char *b, size_t bn)
{
    char fa[] = "/tmp/keel-diff-XXXXXX", fb[] = "/tmp/keel-diff-XXXXXX";
    int da = mkstemp(fa), db = mkstemp(fb);
    if (da >= 0 && db >= 0 && write(da, a, an) == (ssize_t)an && write(db, b, bn) == (ssize_t)bn) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            char la[PATH_MAX + 8], lb[PATH_MAX + 8];
            la[0] = 'a';
            lb[0] = 'b';
            side_name(la + 1, sizeof la - 1, path, "");
            side_name(lb + 1, sizeof lb - 1, path, "");
            execlp("diff", "diff", "-u", "--label", la, "--label", lb, fa, fb, (char *)NULL);
            printf("(diff(1) is not installed: the change is not shown)\n");
            _exit(127);
        }
        int st;
        if (pid > 0)
            waitpid(pid, &st, 0);
    }
    if (da >= 0)
        close(da), unlink(fa);
    if (db >= 0)
        close(db), unlink(fb);
}

static int install_one(const struct target *t, int dry)
{
    size_t n = 0;
    char *old = read_regular(t->path, CONFIG_MAX, &n);
    if (!old && errno != ENOENT) {
        fprintf(stderr, "keel: %s: %s; left alone\n", t->path, read_regular_why(errno));
        return 1;
    }
    if (!old && (t->servers && !t->host))
        return 0;                               /* no servers file: nothing to wrap */
    static const char empty_json[] = "{\n}\n";
    const char *base = old ? old : t->toml ? "" : empty_json;
    size_t bn = old ? n : strlen(base);
    if (!t->toml && !jscan_valid(base, bn)) {
        fprintf(stderr, "keel: %s is not valid JSON (comments are not JSON); it was left alone: fix it, or add "
                "keel by hand (see keel help install)\n", t->path);
        free(old);
        return 1;
    }
    struct edits *ed = calloc(1, sizeof *ed);
    int wrapped = 0, left = 0, added = 0;
    if (!ed) {
        free(old);
        return 1;
    }
    if (t->servers && t->toml)
        wrap_toml_servers(base, bn, ed, &wrapped, &left);
    else if (t->servers)
        wrap_json_servers(base, bn, ed, &wrapped);
    if (t->features)
        toml_enable_hooks(base, bn, ed, &added);
    if (t->host && !t->toml)
        register_hooks(base, bn, t->host, ed, &added);
    if (left)
        fprintf(stderr, "keel: %s: %d server(s) with an args array over several lines were left unwrapped; "
                "put `keel wrap --` in front of their command by hand\n", t->path, left);
    int rc = 0;
    if (!ed->n) {
        printf("%s (%s): unchanged\n", t->path, t->client);
    } else {
        size_t nn;
        char *now = apply(base, bn, ed, &nn);
        if (!now || (!t->toml && !jscan_valid(now, nn))) {
            fprintf(stderr, "keel: %s: keel's change would not be valid; the file was left alone\n", t->path);
            rc = 1;
        } else {
            printf("%s (%s): %d server(s) wrapped, %d hook(s) registered%s\n", t->path, t->client, wrapped, added,
                   dry ? " (dry run: nothing written)" : "");
            show_diff(t->path, old ? old : "", old ? n : 0, now, nn);
            char side[PATH_MAX + 32];
            struct stat st;
            mode_t mode = old && stat(t->path, &st) == 0 ? st.st_mode & 07777 : 0600;
            if (!dry) {
                side_name(side, sizeof side, t->path, ".keel-backup");
                char created[PATH_MAX + 32];
                side_name(created, sizeof created, t->path, ".keel-created");
                int kept = exists(side) || exists(created);
                if ((!kept && (old ? write_file(side, old, n, 0600) : write_file(created, "", 0, 0600)) < 0) ||
                    write_file(t->path, now, nn, mode) < 0) {
                    fprintf(stderr, "keel: %s: could not write: %s\n", t->path, strerror(errno));
                    rc = 1;
                } else {
                    char h[32];
                    int hl = snprintf(h, sizeof h, "%016llx\n", (unsigned long long)text_hash(now, nn));
                    side_name(side, sizeof side, t->path, ".keel-installed");
                    if (write_file(side, h, (size_t)hl, 0600) < 0)
                        rc = 1;
                }
            }
        }
        free(now);
    }
    free(ed);
    free(old);
    return rc;
}

static int uninstall_one(const struct target *t, int dry)
{
    char mark[PATH_MAX + 32], backup[PATH_MAX + 32], created[PATH_MAX + 32];
    side_name(mark, sizeof mark, t->path, ".keel-installed");
    side_name(backup, sizeof backup, t->path, ".keel-backup");
    side_name(created, sizeof created, t->path, ".keel-created");
    size_t mn = 0, n = 0, on = 0;
    char *m = read_regular(mark, 64, &mn);
    if (!m)
        return 0;                               /* keel never changed it */
    char *cur = read_regular(t->path, CONFIG_MAX, &n);
    char want[32];
    snprintf(want, sizeof want, "%016llx\n", cur ? (unsigned long long)text_hash(cur, n) : 0ULL);
    int rc = 0;
    if (!cur || strcmp(m, want)) {
        fprintf(stderr, "keel: %s changed since keel install, so it was left as it is; the file as it was before "
                "keel is %s\n", t->path, exists(backup) ? backup : "gone (keel created it)");
        rc = 1;
    } else {
        char *orig = exists(backup) ? read_regular(backup, CONFIG_MAX, &on) : NULL;
        printf("%s (%s): restored as it was before keel install%s\n", t->path, t->client,
               dry ? " (dry run: nothing written)" : "");
        show_diff(t->path, cur, n, orig ? orig : "", orig ? on : 0);
        if (!dry) {
            if (orig ? rename(backup, t->path) < 0 : (unlink(t->path) < 0 || unlink(created) < 0)) {
                fprintf(stderr, "keel: %s: could not restore: %s\n", t->path, strerror(errno));
                rc = 1;
            } else {
                unlink(mark);
            }
        }
        free(orig);
    }
    free(cur);
    free(m);
    return rc;
}

int install_main(int argc, char **argv, const char *argv0, int uninstall)
{
    int dry = 0, chosen[NCLIENTS] = {0}, any = 0;
    for (int i = 0; i < argc; i++) {
        const char *v = NULL;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs(install_help, stdout);
            return 0;
        } else if (!strcmp(argv[i], "--dry-run")) {
            dry = 1;
        } else if (!strncmp(argv[i], "--client=", 9)) {
            v = argv[i] + 9;
        } else if (!strcmp(argv[i], "--client") && i + 1 < argc) {
            v = argv[++i];
        } else {
            fprintf(stderr, "keel: unexpected argument to %s: %s (see keel help install)\n",
                    uninstall ? "uninstall" : "install", argv[i]);
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
    int rc = 0, found = 0;
    for (size_t c = 0; c < NCLIENTS; c++) {
        const struct client *cl = &clients[c];
        char mark[PATH_MAX];
        snprintf(mark, sizeof mark, "%s/%s", home, cl->home_mark);
        if (any ? !chosen[c] : !exists(mark))
            continue;
        if (!exists(mark)) {
            fprintf(stderr, "keel: %s does not seem to be installed here (no %s)\n", cl->name, mark);
            rc = 1;
            continue;
        }
        found++;
        struct target t[2];
        int nt = 0;
        memset(t, 0, sizeof t);
        if (cl->servers) {
            snprintf(t[nt].path, sizeof t[nt].path, "%s/%s", home, cl->servers);
            t[nt].client = cl->name;
            t[nt].servers = 1;
            t[nt].toml = cl->toml;
            t[nt].features = cl->toml && cl->host;
            nt++;
        }
        if (cl->hooks) {
            char hp[PATH_MAX];
            snprintf(hp, sizeof hp, "%s/%s", home, cl->hooks);
            if (nt && !strcmp(hp, t[0].path)) {
                t[0].host = cl->host;           /* servers and hooks in one file (Gemini) */
            } else {
                snprintf(t[nt].path, sizeof t[nt].path, "%s", hp);
                t[nt].client = cl->name;
                t[nt].host = cl->host;
                nt++;
            }
        }
        for (int i = 0; i < nt; i++)
            rc |= uninstall ? uninstall_one(&t[i], dry) : install_one(&t[i], dry);
    }
    if (!found && !any)
        printf("keel found no client configuration under %s (claude-code, claude-desktop, cursor, codex, gemini)\n",
               home);
    return rc;
}
