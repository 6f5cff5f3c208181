/* instsrv.c: the servers keel wraps, in JSON and in Codex's TOML (see instedit.h).
 *
 * Once its spans are found, a server is the same in both: its command
 * becomes keel, and keel's words go in front of its arguments, in the
 * array's own layout, so removing them gives the text back. */
#include "instedit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- servers: the same for JSON and TOML once their spans are found ----------- */

struct el {
    size_t at, end;
    char *s; /* decoded, when a string */
};

struct srv {
    const char *name; /* as the tree knows it */
    char ptr[PATH_MAX]; /* its JSON pointer, for the manifest */
    const char *text; /* the text spans point into (a JSON scan copy or TOML) */
    size_t n;
    size_t cmd_at, cmd_end;
    char *cmd;
    int has_args;
    size_t args_at;
    struct el *el;
    int nel;
    /* Where "args" goes when there is none: after add_at, add_pre + args
     * = [...] + add_post. */
    size_t add_at;
    struct sb add_pre;
    const char *add_key, *add_post;
    /* The whole args member or line, to remove when keel added it. */
    size_t args_del_at, args_del_end;
    cJSON *tree; /* the server in the plan's want tree */
};

static void srv_free(struct srv *s)
{
    free(s->cmd);
    for (int i = 0; i < s->nel; i++)
        free(s->el[i].s);
    free(s->el);
    free(s->add_pre.p);
    memset(s, 0, sizeof *s);
}

static int el_is(const struct srv *s, int i, const char *v)
{
    return i < s->nel && s->el[i].s && !strcmp(s->el[i].s, v);
}

/* Index of "--" in a keel wrap's args, or -1. */
static int wrap_split(const struct srv *s)
{
    if (!el_is(s, 0, "wrap"))
        return -1;
    for (int i = 1; i < s->nel; i++)
        if (el_is(s, i, "--"))
            return i + 1 < s->nel ? i : -1;
    return -1;
}

static int exposes_none(const struct srv *s, int dd)
{
    for (int i = 1; i < dd; i++)
        if (el_is(s, i, "--expose=none") || (el_is(s, i, "--expose") && el_is(s, i + 1, "none")))
            return 1;
    return 0;
}

static void tree_wrap(cJSON *srv, const char *keel, int expose_none)
{
    cJSON *cmd = cJSON_DetachItemFromObjectCaseSensitive(srv, "command");
    cJSON *args = cJSON_DetachItemFromObjectCaseSensitive(srv, "args");
    cJSON *na = cJSON_CreateArray();
    cJSON_AddItemToArray(na, cJSON_CreateString("wrap"));
    if (expose_none) {
        cJSON_AddItemToArray(na, cJSON_CreateString("--expose"));
        cJSON_AddItemToArray(na, cJSON_CreateString("none"));
    }
    cJSON_AddItemToArray(na, cJSON_CreateString("--"));
    cJSON_AddItemToArray(na, cmd);
    while (args && args->child)
        cJSON_AddItemToArray(na, cJSON_DetachItemViaPointer(args, args->child));
    cJSON_Delete(args);
    cJSON_AddItemToObject(srv, "command", cJSON_CreateString(keel));
    cJSON_AddItemToObject(srv, "args", na);
}

static void tree_unwrap(cJSON *srv, int dd, int drop_args)
{
    cJSON *args = cJSON_GetObjectItemCaseSensitive(srv, "args");
    for (int i = 0; i < dd + 1 && args && args->child; i++)
        cJSON_Delete(cJSON_DetachItemViaPointer(args, args->child));
    cJSON *cmd = args && args->child ? cJSON_DetachItemViaPointer(args, args->child) : cJSON_CreateString("");
    cJSON_DeleteItemFromObjectCaseSensitive(srv, "command");
    cJSON_AddItemToObject(srv, "command", cmd);
    if (drop_args)
        cJSON_DeleteItemFromObjectCaseSensitive(srv, "args");
}

/* 1 when the client does not run the server ("disabled": true; Codex's
 * enabled = false). */
static int disabled(const struct srv *s)
{
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(s->tree, "disabled")) ||
        cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(s->tree, "enabled"));
}

/* A server wrapped: keel's tools go with the first the client runs, and
 * every other gets --expose none (keel's tools once per client). */
static void wrap_server(struct ctx *c, struct plan *p, struct srv *s)
{
    int off = disabled(s), expose_none = c->have_default || off;
    struct sb t = {0};
    inst_sb_quoted(&t, c->keel);
    inst_splice(p, s->cmd_at, s->cmd_end - s->cmd_at, &t);
    const char *head = expose_none ? "\"wrap\", \"--expose\", \"none\", \"--\", " : "\"wrap\", \"--\", ";
    if (!s->has_args) {
        inst_sb_add(&t, s->add_pre.p ? s->add_pre.p : "", s->add_pre.n);
        inst_sb_str(&t, s->add_key);
        inst_sb_str(&t, "[");
        inst_sb_str(&t, head);
        inst_sb_add(&t, s->text + s->cmd_at, s->cmd_end - s->cmd_at);
        inst_sb_str(&t, "]");
        inst_sb_str(&t, s->add_post);
        inst_splice(p, s->add_at, 0, &t);
        char ptr[PATH_MAX];
        snprintf(ptr, sizeof ptr, "%s", s->ptr);
        inst_ptr_add(ptr, sizeof ptr, "args");
        inst_manifest_add(p, ptr);
    } else if (!s->nel) {
        inst_sb_str(&t, head);
        inst_sb_add(&t, s->text + s->cmd_at, s->cmd_end - s->cmd_at);
        inst_splice(p, s->args_at + 1, 0, &t);
    } else {
        /* Before the first element, in the array's own layout: each new
         * element followed by the blanks that stood before the first. */
        size_t ws = s->args_at + 1;
        const char *gap = s->text + ws;
        size_t gn = s->el[0].at - ws;
        for (size_t i = 0; i < gn; i++)
            if (!strchr(" \t\r\n", gap[i]))
                gn = 0; /* a comment there: plain spaces instead */
        static const char *const words[] = {"\"wrap\"", "\"--expose\"", "\"none\"", "\"--\""};
        for (int i = 0; i < 4; i++) {
            if (!expose_none && (i == 1 || i == 2))
                continue;
            inst_sb_str(&t, words[i]);
            inst_sb_str(&t, ",");
            if (gn)
                inst_sb_add(&t, gap, gn);
            else
                inst_sb_str(&t, " ");
        }
        inst_sb_add(&t, s->text + s->cmd_at, s->cmd_end - s->cmd_at);
        inst_sb_str(&t, ",");
        if (gn)
            inst_sb_add(&t, gap, gn);
        else
            inst_sb_str(&t, " ");
        inst_splice(p, s->el[0].at, 0, &t);
    }
    tree_wrap(s->tree, c->keel, expose_none);
    c->have_default |= !off;
    p->wrapped++;
}

static void unwrap_server(struct plan *p, struct srv *s, const cJSON *manifest)
{
    int dd = wrap_split(s);
    struct sb t = {0};
    const struct el *cmd = &s->el[dd + 1];
    inst_sb_add(&t, s->text + cmd->at, cmd->end - cmd->at);
    inst_splice(p, s->cmd_at, s->cmd_end - s->cmd_at, &t);
    char ptr[PATH_MAX];
    snprintf(ptr, sizeof ptr, "%s", s->ptr);
    inst_ptr_add(ptr, sizeof ptr, "args");
    int drop = 0;
    if (dd + 2 < s->nel) {
        inst_cut(p, s->el[0].at, s->el[dd + 2].at);
    } else if (inst_manifest_has(p, manifest, ptr) && s->args_del_end) {
        inst_cut(p, s->args_del_at, s->args_del_end);
        drop = 1;
    } else {
        inst_cut(p, s->args_at + 1, cmd->end);
    }
    tree_unwrap(s->tree, dd, drop);
    p->unwrapped++;
}

static const char *base_of(const char *path)
{
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

/* 1 when the server runs keel itself through another program: env (its
 * options and VAR=value words passed over) or a shell's -c line that runs
 * keel ("sh -c 'keel wrap -- r'"). Wrapped again, keel would run inside
 * keel, and the model would see keel's tools twice. */
static int keel_inside(const struct srv *s)
{
    if (!s->cmd)
        return 0;
    const char *b = base_of(s->cmd);
    if (!strcmp(b, "env")) { /* env's options and VAR=value words, then the command it runs */
        for (int i = 0; i < s->nel && s->el[i].s; i++) {
            const char *a = s->el[i].s;
            if (!strcmp(a, "-u") || !strcmp(a, "-C") || !strcmp(a, "-S")) {
                i++; /* and its value */
                continue;
            }
            if (a[0] == '-' || strchr(a, '='))
                continue;
            return !strcmp(base_of(a), "keel"); /* the first command word: that one only */
        }
        return 0;
    }
    static const char *const shells[] = {"sh", "bash", "dash", "zsh", "ksh", NULL};
    int shell = 0;
    for (int k = 0; shells[k]; k++)
        shell |= !strcmp(b, shells[k]);
    for (int i = 0; shell && i + 1 < s->nel; i++) {
        const char *o = s->el[i].s;
        /* -c, alone or among other one-letter options (-lc, -ec) */
        if (!o || o[0] != '-' || o[1] == '-' || !strchr(o, 'c') || !s->el[i + 1].s)
            continue;
        /* the line runs keel as a command: the word keel (or .../keel),
         * then, among its words, wrap or serve */
        const char *line = s->el[i + 1].s;
        for (const char *at = strstr(line, "keel"); at; at = strstr(at + 4, "keel")) {
            int starts = at == line || strchr(" /;&|(\t\n\"'", at[-1]);
            if (!starts || (at[4] != ' ' && at[4] != '\t'))
                continue;
            size_t end = strcspn(at, ";&|\n");
            char cmd[512];
            snprintf(cmd, sizeof cmd, " %.*s ", (int)(end < 500 ? end : 500), at + 4);
            if (strstr(cmd, " wrap ") || strstr(cmd, " serve "))
                return 1;
        }
    }
    return 0;
}

/* One server, found. Pass 0 only notes a server keel already wraps with its
 * default tools (every new one then gets --expose none); pass 1 wraps (or,
 * uninstalling, unwraps) it. */
static void server(struct ctx *c, struct plan *p, struct srv *s, const cJSON *manifest, int pass)
{
    int keel = inst_is_keel_path(c, s->cmd);
    int dd = wrap_split(s);
    if (!pass) {
        /* keel's tools are there already: a keel serve, or a wrap with them,
         * on a server the client runs */
        if (!c->uninstall && !disabled(s) &&
            ((keel && ((dd > 0 && !exposes_none(s, dd)) || el_is(s, 0, "serve"))) || (!keel && keel_inside(s))))
            c->have_default = 1; /* (keel run through env or a shell: taken to give its tools) */
        else if (!c->uninstall && keel && !disabled(s) && dd > 0)
            c->quiet_wraps++;
    } else if (c->uninstall) {
        /* only a wrap as keel install writes it: keel wrap [--expose none] -- */
        if (keel && dd > 0 && s->has_args &&
            (dd == 1 || (dd == 2 && el_is(s, 1, "--expose=none")) ||
             (dd == 3 && el_is(s, 1, "--expose") && el_is(s, 2, "none"))))
            unwrap_server(p, s, manifest);
        else if (keel && dd > 0 && s->has_args)
            inst_note(p,
                      "left alone: %s runs keel wrap with options keel install does not write: yours to keep or "
                      "unwrap by hand%s",
                      s->name, "");
    } else if (!keel && keel_inside(s)) {
        inst_note(p, "left alone: %s runs keel already, through %s: wrapped again, keel would run inside keel", s->name,
                  base_of(s->cmd));
    } else if (!keel) {
        wrap_server(c, p, s);
    } else if (dd > 0 && s->cmd && s->cmd[0] == '/' && strcmp(s->cmd, c->keel)) {
        inst_note(p,
                  "%s runs another keel (%s): keel uninstall, then keel install, moves it to this one, as keel "
                  "install leaves a wrap as it is",
                  s->name, s->cmd);
    }
}

/* --- JSON -------------------------------------------------------------------- */

static int json_elements(const struct cfgjson *d, struct srv *s)
{
    int k = cfgjson_items(d, s->args_at, NULL, 0);
    struct cfgjson_member *m = calloc((size_t)k + 1, sizeof *m);
    s->el = calloc((size_t)k + 1, sizeof *s->el);
    if (!m || !s->el) {
        free(m);
        return -1;
    }
    cfgjson_items(d, s->args_at, m, k);
    for (int i = 0; i < k; i++) {
        s->el[i].at = m[i].at;
        s->el[i].end = m[i].end;
        if (d->scan[m[i].at] == '"') {
            cJSON *v = cJSON_ParseWithLength(d->scan + m[i].at, m[i].end - m[i].at);
            if (cJSON_IsString(v))
                s->el[i].s = strdup(v->valuestring);
            cJSON_Delete(v);
        }
    }
    s->nel = k;
    free(m);
    return 0;
}

/* The servers object at obj_at, its tree `want`, its pointer `ptr`. */
void inst_json_servers(struct ctx *c, struct plan *p, const struct cfgjson *d, size_t obj_at, cJSON *want,
                       const char *ptr, const cJSON *manifest)
{
    int k = cfgjson_items(d, obj_at, NULL, 0);
    struct cfgjson_member *m = calloc((size_t)k + 1, sizeof *m);
    if (!m) {
        p->oom = 1;
        return;
    }
    cfgjson_items(d, obj_at, m, k);
    cJSON *item = want->child;
    /* A server already wrapped with keel's tools makes every new one --expose none. */
    for (int pass = 0; pass < 2; pass++) {
        item = want->child;
        for (int i = 0; i < k; i++, item = item ? item->next : NULL) {
            struct srv s = {0};
            struct cfgjson_member cm, am;
            if (!item || d->scan[m[i].at] != '{' || !inst_member(p, d, m[i].at, "command", &cm))
                continue; /* a remote server, or not a server */
            s.name = item->string;
            s.text = d->scan;
            s.n = d->n;
            s.tree = item;
            snprintf(s.ptr, sizeof s.ptr, "%s", ptr);
            inst_ptr_add(s.ptr, sizeof s.ptr, item->string);
            int has_args = inst_member(p, d, m[i].at, "args", &am);
            if (d->scan[cm.at] != '"' || (has_args && d->scan[am.at] != '[')) {
                if (pass)
                    inst_note(p, "%s: left alone: its %s is not what a client reads", item->string,
                              d->scan[cm.at] != '"' ? "command" : "args");
                continue;
            }
            s.cmd_at = cm.at;
            s.cmd_end = cm.end;
            s.cmd = strdup(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(item, "command")));
            s.has_args = has_args;
            if (has_args) {
                s.args_at = am.at;
                if (json_elements(d, &s) < 0)
                    p->oom = 1;
                /* The member keel added: right after the command, ", "args": [...]". */
                size_t gap = am.key_at - cm.end;
                if (gap >= 1 && d->scan[cm.end] == ',' && am.key_at > cm.end) {
                    int only_ws = 1;
                    for (size_t j = cm.end + 1; j < am.key_at; j++)
                        only_ws &= strchr(" \t\r\n", d->scan[j]) != NULL;
                    if (only_ws) {
                        s.args_del_at = cm.end;
                        s.args_del_end = am.end;
                    }
                }
            } else {
                s.add_at = cm.end;
                inst_sb_str(&s.add_pre, ", ");
                s.add_key = "\"args\": ";
                s.add_post = "";
            }
            server(c, p, &s, manifest, pass);
            srv_free(&s);
        }
    }
    free(m);
}

/* The stdio servers of one servers object, by name, that keel left alone. */
static void json_unwrapped_names(const struct ctx *c, const cJSON *servers, struct sb *out)
{
    const cJSON *s;
    cJSON_ArrayForEach(s, servers) {
        const char *cmd = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "command"));
        if (cmd && !inst_is_keel_path(c, cmd)) {
            inst_sb_str(out, out->n ? ", " : "");
            inst_sb_str(out, s->string);
        }
    }
}

/* Claude Code's local scopes: projects["/abs/dir"].mcpServers. */
#define LOCAL_NAMED 10 /* projects whose local servers are named one by one; the rest are counted */
void inst_json_local_scopes(struct ctx *c, struct plan *p, const struct cfgjson *d, size_t root, const cJSON *manifest)
{
    int named = 0;
    struct cfgjson_member pm;
    cJSON *projects = cJSON_GetObjectItemCaseSensitive(p->want, "projects");
    if (!cJSON_IsObject(projects) || !inst_member(p, d, root, "projects", &pm))
        return;
    int k = cfgjson_items(d, pm.at, NULL, 0);
    struct cfgjson_member *m = calloc((size_t)k + 1, sizeof *m);
    if (!m) {
        p->oom = 1;
        return;
    }
    cfgjson_items(d, pm.at, m, k);
    cJSON *proj = projects->child;
    for (int i = 0; i < k && proj; i++, proj = proj->next) {
        struct cfgjson_member sm;
        cJSON *servers = cJSON_GetObjectItemCaseSensitive(proj, "mcpServers");
        if (!cJSON_IsObject(servers) || d->scan[m[i].at] != '{' || !inst_member(p, d, m[i].at, "mcpServers", &sm))
            continue;
        if (c->uninstall || (c->project && !strcmp(c->project, proj->string))) {
            char ptr[PATH_MAX] = "";
            inst_ptr_add(ptr, sizeof ptr, "projects");
            inst_ptr_add(ptr, sizeof ptr, proj->string);
            inst_ptr_add(ptr, sizeof ptr, "mcpServers");
            inst_json_servers(c, p, d, sm.at, servers, ptr, manifest);
            continue;
        }
        struct sb names = {0};
        json_unwrapped_names(c, servers, &names);
        if (names.n && ++named <= LOCAL_NAMED)
            inst_note(p, "left alone, local to the project %s: %s (keel install --project DIR wraps them)",
                      proj->string, names.p);
        free(names.p);
    }
    if (named > LOCAL_NAMED) {
        char more[32];
        snprintf(more, sizeof more, "%d", named - LOCAL_NAMED);
        inst_note(p, "left alone, local to %s more projects (keel install --project DIR wraps them)%s", more, "");
    }
    free(m);
}

/* --- TOML (Codex) ------------------------------------------------------------------ */

void inst_toml_servers(struct ctx *c, struct plan *p, const char *text, size_t n, const struct toml_node *root,
                       const cJSON *manifest)
{
    const struct toml_node *all = toml_get(root, "mcp_servers");
    cJSON *want = cJSON_GetObjectItemCaseSensitive(p->want, "mcp_servers");
    if (!all || all->type != TOML_TABLE || !want)
        return;
    for (int pass = 0; pass < 2; pass++) {
        /* the tree holds the tables in the file's order: each is the one
         * after the last found, else looked up (time in proportion to the
         * servers, not to their square) */
        cJSON *last = NULL;
        for (const struct toml_node *x = all->first; x; x = x->next) {
            const struct toml_node *cmd = toml_get(x, "command"), *args = toml_get(x, "args");
            cJSON *next = last ? last->next : want->child;
            cJSON *tree = next && next->string && !strcmp(next->string, x->key)
                ? next
                : cJSON_GetObjectItemCaseSensitive(want, x->key);
            if (tree)
                last = tree;
            if (x->type != TOML_TABLE || !cmd || !tree)
                continue;
            if (cmd->type != TOML_STRING || (args && args->type != TOML_ARRAY)) {
                if (pass)
                    inst_note(p, "%s: left alone: its %s is not what Codex reads", x->key,
                              cmd->type != TOML_STRING ? "command" : "args");
                continue;
            }
            struct srv s = {0};
            s.name = x->key;
            s.text = text;
            s.n = n;
            s.tree = tree;
            snprintf(s.ptr, sizeof s.ptr, "%s", "");
            inst_ptr_add(s.ptr, sizeof s.ptr, "mcp_servers");
            inst_ptr_add(s.ptr, sizeof s.ptr, x->key);
            s.cmd_at = cmd->at;
            s.cmd_end = cmd->end;
            s.cmd = strdup(cmd->text ? cmd->text : "");
            s.has_args = args != NULL;
            if (args) {
                s.args_at = args->at;
                s.el = calloc(args->nkids + 1, sizeof *s.el);
                if (!s.el)
                    p->oom = 1;
                for (const struct toml_node *e = args->first; e && s.el; e = e->next, s.nel++) {
                    s.el[s.nel].at = e->at;
                    s.el[s.nel].end = e->end;
                    s.el[s.nel].s = e->type == TOML_STRING && e->text ? strdup(e->text) : NULL;
                }
                /* The line (or inline member) keel added right after the command. */
                if (args->in_inline ? inst_blank_between(text, cmd->end + 1, args->key_at) && text[cmd->end] == ','
                                    : args->line_at == cmd->line_end) {
                    s.args_del_at = args->in_inline ? cmd->end : args->line_at;
                    s.args_del_end = args->in_inline ? args->end : args->line_end;
                    if (!args->in_inline && args->line_end == n && n && text[n - 1] != '\n' && args->line_at > 0)
                        s.args_del_at -=
                            args->line_at >= 2 && text[args->line_at - 2] == '\r' && text[args->line_at - 1] == '\n'
                            ? 2
                            : 1; /* the last line: its line break (CRLF too) goes with it */
                }
            } else {
                /* The key as the command's was written, its last part args. */
                if (cmd->in_inline) {
                    s.add_at = cmd->end;
                    inst_sb_str(&s.add_pre, ", ");
                    inst_sb_add(&s.add_pre, text + cmd->key_at, cmd->last_key_at - cmd->key_at);
                    s.add_post = "";
                } else {
                    int eof = cmd->line_end == n && (!n || text[n - 1] != '\n');
                    s.add_at = cmd->line_end;
                    if (eof)
                        inst_sb_str(&s.add_pre, "\n");
                    inst_sb_add(&s.add_pre, text + cmd->line_at, cmd->last_key_at - cmd->line_at);
                    s.add_post = eof ? "" : "\n";
                }
                s.add_key = "args = ";
            }
            server(c, p, &s, manifest, pass);
            srv_free(&s);
        }
    }
}

/* Codex runs hooks unless [features] hooks (or the older codex_hooks) is false. */
void inst_toml_hooks_switch(struct plan *p, const struct toml_node *root)
{
    const struct toml_node *f = toml_get(root, "features");
    const struct toml_node *on = toml_get(f, "hooks"), *old = toml_get(f, "codex_hooks");
    const struct toml_node *which = on ? on : old;
    if (which && which->type == TOML_BOOL && which->text && which->text[0] == 'f')
        inst_note(p,
                  "Codex's hooks are switched off here ([features] %s = false): keel's hooks are registered but "
                  "will not run until you set it to true%s",
                  on ? "hooks" : "codex_hooks", "");
}
