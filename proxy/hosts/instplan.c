/* instplan.c: one configuration text made into a checked plan (see
 * instedit.h): parsed, the servers' edits (instsrv.c) and the hooks'
 * (insthook.c) gathered as splices, and the new text checked to parse to
 * exactly the tree they must give. */
#include "instedit.h"

#include "install.h"
#include "text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The plan for text (which must end in a NUL). 0 with p->out (NULL: nothing
 * to change), or -1 with why. */
int inst_plan_text(struct ctx *c, const struct target_spec *t, const char *text, size_t n, const cJSON *manifest,
                   struct plan *p, char *why, size_t whyn)
{
    memset(p, 0, sizeof *p);
    /* a file whose lines end in CRLF, all of them: keel's new lines do too */
    const char *lf = memchr(text, '\n', n);
    p->crlf = lf && lf > text && lf[-1] == '\r';
    for (const char *q = lf; p->crlf && q; q = memchr(q + 1, '\n', n - (size_t)(q + 1 - text)))
        p->crlf = q > text && q[-1] == '\r';
    struct cfgjson d = {0};
    struct toml_node *tn = NULL;
    struct toml_error te;
    int rc = -1;
    if (t->fmt == FMT_TOML) {
        if (!(tn = toml_parse(text, n, &te))) {
            if (!strcmp(te.message, "out of memory")) /* not the text's fault: no place in it */
                snprintf(why, whyn, "%s", te.message);
            else
                snprintf(why, whyn, "line %d, column %d: %s", te.line, te.column, te.message);
            return -1;
        }
        p->want = toml_to_json(tn, 0);
    } else {
        if (cfgjson_read(&d, text, n, t->fmt == FMT_JSONC, why, whyn) < 0)
            return -1;
        p->want = cJSON_Duplicate(d.tree, 1);
    }
    if (!p->want) {
        snprintf(why, whyn, "out of memory");
        goto out;
    }
    const char *scan = t->fmt == FMT_TOML ? text : d.scan;
    size_t root = 0;
    while (t->fmt != FMT_TOML && root < n && strchr(" \t\r\n", scan[root]))
        root++;
    if (t->servers && t->fmt == FMT_TOML) {
        inst_toml_servers(c, p, text, n, tn, manifest);
        if (!c->uninstall)
            inst_toml_hooks_switch(p, tn);
    } else if (t->servers) {
        struct cfgjson_member sm;
        cJSON *servers = cJSON_GetObjectItemCaseSensitive(p->want, "mcpServers");
        if (inst_member(p, &d, root, "mcpServers", &sm) && scan[sm.at] == '{' && cJSON_IsObject(servers)) {
            char ptr[32] = "";
            inst_ptr_add(ptr, sizeof ptr, "mcpServers");
            inst_json_servers(c, p, &d, sm.at, servers, ptr, manifest);
        }
        if (t->scopes)
            inst_json_local_scopes(c, p, &d, root, manifest);
    }
    if (t->hooks && t->fmt != FMT_TOML) {
        if (c->uninstall)
            inst_hooks_remove(p, &d, root, manifest);
        else
            inst_hooks_add(c, p, &d, root, t->host);
    }
    if (p->oom || p->notes.oom) {
        snprintf(why, whyn, "out of memory");
        goto out;
    }
    if (!p->n) {
        rc = 0;
        goto out;
    }
    /* Splices in order; none may overlap (that would be keel's own bug). */
    for (int i = 1; i < p->n; i++)
        for (int j = i; j > 0 && p->ed[j].at < p->ed[j - 1].at; j--) {
            struct cfg_edit e = p->ed[j];
            p->ed[j] = p->ed[j - 1];
            p->ed[j - 1] = e;
        }
    for (int i = 1; i < p->n; i++)
        if (p->ed[i - 1].at + p->ed[i - 1].del > p->ed[i].at) {
            snprintf(why, whyn, "keel's own edits overlap (a keel bug); nothing was written");
            goto out;
        }
    if (!(p->out = cfgdiff_apply(text, n, p->ed, p->n, &p->out_n))) {
        snprintf(why, whyn, "out of memory");
        goto out;
    }
    /* The check: the new text parses to exactly the intended tree. */
    cJSON *got = NULL;
    const char *read_why = "";
    char w2[256] = "";
    if (t->fmt == FMT_TOML) {
        struct toml_node *nt = toml_parse(p->out, p->out_n, &te);
        got = nt ? toml_to_json(nt, 0) : NULL;
        read_why = nt ? "" : te.message;
        toml_free(nt);
    } else {
        struct cfgjson nd;
        if (cfgjson_read(&nd, p->out, p->out_n, t->fmt == FMT_JSONC, w2, sizeof w2) == 0) {
            got = nd.tree;
            nd.tree = NULL;
            cfgjson_free(&nd);
        }
        read_why = w2;
    }
    int same = got ? cfg_json_equal(got, p->want) : 0;
    cJSON_Delete(got);
    if (same != 1) {
        snprintf(why, whyn, "%s",
                 same < 0 || !strcmp(read_why, "out of memory")
                     ? "out of memory"
                     : "keel's change did not come out as intended (a keel bug), so nothing was written");
        goto out;
    }
    rc = 0;
out:
    cfgjson_free(&d);
    toml_free(tn);
    return rc;
}

char *install_edit_text(const char *text, size_t n, int fmt, int hooks, int uninstall, const char *keel_path, char *why,
                        size_t whyn)
{
    static cJSON *manifest; /* what the last install added: the next uninstall reads it */
    struct ctx c = {.keel = keel_path, .uninstall = uninstall};
    inst_shell_quote(c.hook_prefix, sizeof c.hook_prefix, keel_path);
    struct target_spec t = {(enum fmt)fmt, 1, hooks, fmt == FMT_JSON,
                            fmt == FMT_JSONC ? &hook_hosts[HOOK_HOST_GEMINI] : &hook_hosts[HOOK_HOST_CLAUDE]};
    struct plan p;
    why[0] = '\0';
    char *copy = text_dup(text, n);
    if (!copy)
        return NULL;
    char *out = NULL;
    if (inst_plan_text(&c, &t, copy, n, uninstall ? manifest : NULL, &p, why, whyn) == 0) {
        out = p.out;
        p.out = NULL;
        if (!uninstall) {
            cJSON_Delete(manifest);
            manifest = p.added;
            p.added = NULL;
        }
    }
    inst_plan_free(&p);
    free(copy);
    return out;
}
