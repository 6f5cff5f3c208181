/* insthook.c: keel's hook entries in a host's JSON settings (see instedit.h). */
#include "instedit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- hooks (JSON, every host) -------------------------------------------------- */

static void hook_group(const struct ctx *c, const struct hook_host *h, const char *event, struct sb *b)
{
    char cmd[PATH_MAX * 4 + 64];
    snprintf(cmd, sizeof cmd, "%s hook %s%s", c->hook_prefix, event, h->flag);
    char t[32];
    snprintf(t, sizeof t, "%d", h->timeout);
    inst_sb_str(b, "{\"hooks\": [{\"type\": \"command\", \"command\": ");
    inst_sb_quoted(b, cmd);
    inst_sb_str(b, ", \"timeout\": ");
    inst_sb_str(b, t);
    inst_sb_str(b, "}]}");
}

static cJSON *tree_group(const struct ctx *c, const struct hook_host *h, const char *event)
{
    char cmd[PATH_MAX * 4 + 64];
    snprintf(cmd, sizeof cmd, "%s hook %s%s", c->hook_prefix, event, h->flag);
    cJSON *g = cJSON_CreateObject(), *hs = cJSON_AddArrayToObject(g, "hooks"), *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "type", "command");
    cJSON_AddStringToObject(e, "command", cmd);
    cJSON_AddNumberToObject(e, "timeout", h->timeout);
    cJSON_AddItemToArray(hs, e);
    return g;
}

/* 1 when the event's groups hold a keel hook command; *other is its
 * command when it runs another keel than this one. */
static int tree_has_keel_hook(const cJSON *groups, const struct ctx *c, const char **other)
{
    const cJSON *g, *e;
    cJSON_ArrayForEach(g, groups)
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(g, "hooks")) {
            const char *cmd = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "command"));
            if (cmd && inst_is_keel_hook(cmd, 0)) {
                size_t l = strlen(c->hook_prefix);
                *other = strncmp(cmd, c->hook_prefix, l) || cmd[l] != ' ' ? cmd : NULL;
                return 1;
            }
        }
    return 0;
}

/* A new member (its text in t) put first in the object at obj: before the
 * first member, followed by a comma and the blanks that stood before it,
 * so removing it later from its key to the next key gives the text back.
 * nth: how many this call already put into the same object. */
static void insert_first(struct plan *p, const struct cfgjson *d, size_t obj, struct sb *t, const char *indent, int nth)
{
    struct cfgjson_member first;
    if (cfgjson_items(d, obj, &first, 1) == 0) { /* an empty object: one after the other */
        struct sb b = {0};
        inst_sb_str(&b, nth ? ",\n" : "\n");
        inst_sb_str(&b, indent);
        inst_sb_add(&b, t->p ? t->p : "", t->n);
        b.oom |= t->oom;
        free(t->p);
        memset(t, 0, sizeof *t);
        inst_splice(p, obj + 1, 0, &b);
        return;
    }
    size_t gn = first.key_at - obj - 1; /* blanks only: the scan has comments blanked */
    size_t nl = gn; /* the first key's own line: what follows the last line break before it */
    while (nl && d->scan[obj + nl] != '\n')
        nl--;
    if (!gn) {
        inst_sb_str(t, ", ");
    } else if (nl) { /* a comment's blanked line above the key is not copied */
        inst_sb_str(t, ",\n");
        inst_sb_add(t, d->scan + obj + 1 + nl, gn - nl);
    } else {
        inst_sb_str(t, ",");
        inst_sb_add(t, d->scan + obj + 1, gn);
    }
    inst_splice(p, first.key_at, 0, t);
}

void inst_hooks_add(const struct ctx *c, struct plan *p, const struct cfgjson *d, size_t root,
                    const struct hook_host *h)
{
    struct cfgjson_member hm;
    cJSON *th = cJSON_GetObjectItemCaseSensitive(p->want, "hooks");
    char ptr[64] = "";
    inst_ptr_add(ptr, sizeof ptr, "hooks");
    if (!inst_member(p, d, root, "hooks", &hm)) { /* one new member, first */
        struct sb t = {0};
        inst_sb_str(&t, "\"hooks\": {");
        th = cJSON_AddObjectToObject(p->want, "hooks");
        for (int i = 0; h->events[i]; i++) {
            inst_sb_str(&t, i ? ",\n    \"" : "\n    \"");
            inst_sb_str(&t, h->events[i]);
            inst_sb_str(&t, "\": [");
            hook_group(c, h, h->events[i], &t);
            inst_sb_str(&t, "]");
            cJSON *arr = cJSON_AddArrayToObject(th, h->events[i]);
            cJSON_AddItemToArray(arr, tree_group(c, h, h->events[i]));
            char ep[128];
            snprintf(ep, sizeof ep, "%s", ptr);
            inst_ptr_add(ep, sizeof ep, h->events[i]);
            inst_manifest_add(p, ep);
            p->hooks_added++;
        }
        inst_sb_str(&t, "\n  }");
        insert_first(p, d, root, &t, "  ", 0);
        inst_manifest_add(p, ptr);
        return;
    }
    if (d->scan[hm.at] != '{' || !cJSON_IsObject(th)) {
        inst_note(p,
                  "hooks: left alone: \"hooks\" is not an object here, so none of keel's hooks is registered: make it "
                  "{} (or take it out) and run keel install again%s%s",
                  "", "");
        return;
    }
    int lead = 0; /* events put first so far */
    for (int i = 0; h->events[i]; i++) {
        struct cfgjson_member em;
        char ep[128];
        snprintf(ep, sizeof ep, "%s", ptr);
        inst_ptr_add(ep, sizeof ep, h->events[i]);
        if (!inst_member(p, d, hm.at, h->events[i], &em)) {
            struct sb t = {0};
            inst_sb_str(&t, "\"");
            inst_sb_str(&t, h->events[i]);
            inst_sb_str(&t, "\": [");
            hook_group(c, h, h->events[i], &t);
            inst_sb_str(&t, "]");
            insert_first(p, d, hm.at, &t, "    ", lead++);
            cJSON *arr = cJSON_AddArrayToObject(th, h->events[i]);
            cJSON_AddItemToArray(arr, tree_group(c, h, h->events[i]));
            inst_manifest_add(p, ep);
            p->hooks_added++;
            continue;
        }
        cJSON *arr = cJSON_GetObjectItemCaseSensitive(th, h->events[i]);
        if (d->scan[em.at] != '[' || !cJSON_IsArray(arr)) {
            inst_note(p,
                      "hooks.%s: left alone: it is not a list, so keel's %s hook is not registered: make it [] (or "
                      "take it out) and run keel install again",
                      h->events[i], h->events[i]);
            continue;
        }
        const char *other = NULL;
        if (tree_has_keel_hook(arr, c, &other)) {
            if (other && !inst_is_keel_hook(other, 1))
                inst_note(p, "hooks.%s already runs keel hook as you wrote it: left as it is, by keel uninstall too%s",
                          h->events[i], "");
            else if (other)
                inst_note(p,
                          "hooks.%s runs another keel than this one: keel uninstall, then keel install, moves it to "
                          "this one%s",
                          h->events[i], "");
            continue;
        }
        struct sb t = {0};
        struct cfgjson_member last;
        int kg = cfgjson_items(d, em.at, NULL, 0);
        size_t at = em.at + 1;
        if (kg) { /* right after the last group */
            struct cfgjson_member *g = calloc((size_t)kg, sizeof *g);
            if (!g) {
                p->oom = 1;
                return;
            }
            cfgjson_items(d, em.at, g, kg);
            last = g[kg - 1];
            free(g);
            at = last.end;
            inst_sb_str(&t, ", ");
        }
        hook_group(c, h, h->events[i], &t);
        inst_splice(p, at, 0, &t);
        cJSON_AddItemToArray(arr, tree_group(c, h, h->events[i]));
        p->hooks_added++;
    }
}

/* The items of one container, with a mark for each that goes. */
struct kids {
    struct cfgjson_member *m;
    struct item *it;
    int *del;
    int n, ndel;
};

static int kids_load(const struct cfgjson *d, size_t at, int members, struct kids *k)
{
    memset(k, 0, sizeof *k);
    k->n = cfgjson_items(d, at, NULL, 0);
    k->m = calloc((size_t)k->n + 1, sizeof *k->m);
    k->it = calloc((size_t)k->n + 1, sizeof *k->it);
    k->del = calloc((size_t)k->n + 1, sizeof *k->del);
    if (!k->m || !k->it || !k->del)
        return -1;
    cfgjson_items(d, at, k->m, k->n);
    for (int i = 0; i < k->n; i++)
        k->it[i] = (struct item){members ? k->m[i].key_at : k->m[i].at, k->m[i].end};
    return 0;
}

static void kids_free(struct kids *k)
{
    free(k->m);
    free(k->it);
    free(k->del);
}

static void kids_mark(struct kids *k, int i)
{
    k->del[i] = 1;
    k->ndel++;
}

/* The tree's children of x that are marked in k (same order) go. */
static void tree_drop(cJSON *x, const struct kids *k)
{
    cJSON *c = x->child;
    for (int i = 0; i < k->n && c; i++) {
        cJSON *next = c->next;
        if (k->del[i])
            cJSON_Delete(cJSON_DetachItemViaPointer(x, c));
        c = next;
    }
}

/* keel's entries in one group's hooks list: marked, and gone from the tree. */
static int group_keel_entries(struct plan *p, const struct cfgjson *d, const struct cfgjson_member *g, cJSON *tg,
                              struct kids *h, size_t *list_at)
{
    struct cfgjson_member hsm;
    cJSON *ths = cJSON_GetObjectItemCaseSensitive(tg, "hooks");
    memset(h, 0, sizeof *h);
    if (!tg || d->scan[g->at] != '{' || !inst_member(p, d, g->at, "hooks", &hsm) || d->scan[hsm.at] != '[' ||
        !cJSON_IsArray(ths))
        return 0;
    if (kids_load(d, hsm.at, 0, h) < 0)
        return -1;
    *list_at = hsm.at;
    cJSON *tx = ths->child;
    for (int x = 0; x < h->n && tx; x++, tx = tx->next) {
        const char *cmd = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(tx, "command"));
        if (cmd && inst_is_keel_hook(cmd, 1)) {
            kids_mark(h, x);
            p->hooks_removed++;
        } else if (cmd && inst_is_keel_hook(cmd, 0)) {
            p->kept_hooks++;
        }
    }
    tree_drop(ths, h);
    return 0;
}

/* Removes keel's hook entries; groups, event lists and the hooks object go
 * when keel's entries were all they held (lists and the object only when
 * keel made them: the manifest). Cuts are made outermost first: inside an
 * event list that goes whole, nothing is cut on its own. */
void inst_hooks_remove(struct plan *p, const struct cfgjson *d, size_t root, const cJSON *manifest)
{
    struct cfgjson_member hm;
    cJSON *th = cJSON_GetObjectItemCaseSensitive(p->want, "hooks");
    if (!inst_member(p, d, root, "hooks", &hm) || d->scan[hm.at] != '{' || !cJSON_IsObject(th))
        return;
    char ptr[64] = "";
    inst_ptr_add(ptr, sizeof ptr, "hooks");
    struct kids ev;
    struct plan inner = {0}; /* cuts inside event lists that stay */
    if (kids_load(d, hm.at, 1, &ev) < 0)
        goto oom;
    cJSON *te = th->child;
    for (int i = 0; i < ev.n && te; i++, te = te->next) {
        struct kids g;
        if (d->scan[ev.m[i].at] != '[' || !cJSON_IsArray(te))
            continue;
        if (kids_load(d, ev.m[i].at, 0, &g) < 0) {
            kids_free(&g);
            goto oom;
        }
        cJSON *tg = te->child;
        for (int j = 0; j < g.n && tg; j++, tg = tg->next) {
            struct kids h;
            size_t list_at = 0;
            int rc = group_keel_entries(p, d, &g.m[j], tg, &h, &list_at);
            if (rc == 0 && h.ndel && h.ndel == h.n)
                kids_mark(&g, j); /* keel's group: it goes whole */
            else if (rc == 0 && h.ndel)
                inst_cut_items(&inner, list_at, h.it, h.n, h.del);
            kids_free(&h);
            if (rc < 0) {
                kids_free(&g);
                goto oom;
            }
        }
        tree_drop(te, &g);
        char ep[PATH_MAX];
        snprintf(ep, sizeof ep, "%s", ptr);
        inst_ptr_add(ep, sizeof ep, te->string);
        if (g.ndel && g.ndel == g.n && inst_manifest_has(p, manifest, ep))
            kids_mark(&ev, i); /* a list keel made, now empty: it goes */
        else if (g.ndel)
            inst_cut_items(&inner, ev.m[i].at, g.it, g.n, g.del);
        kids_free(&g);
    }
    tree_drop(th, &ev);
    if (ev.n && ev.ndel == ev.n && inst_manifest_has(p, manifest, ptr)) {
        struct kids top; /* the hooks object keel made goes */
        if (kids_load(d, root, 1, &top) < 0) {
            kids_free(&top);
            goto oom;
        }
        for (int i = 0; i < top.n; i++)
            top.del[i] = top.m[i].at == hm.at;
        inst_cut_items(p, root, top.it, top.n, top.del);
        cJSON_DeleteItemFromObjectCaseSensitive(p->want, "hooks");
        kids_free(&top);
    } else {
        if (ev.ndel)
            inst_cut_items(p, hm.at, ev.it, ev.n, ev.del);
        for (int i = 0; i < inner.n; i++) {
            int gone = 0;
            for (int e = 0; e < ev.n; e++)
                gone |= ev.del[e] && inner.ed[i].at >= ev.it[e].at && inner.ed[i].at < ev.it[e].end;
            if (!gone)
                inst_cut(p, inner.ed[i].at, inner.ed[i].at + inner.ed[i].del);
        }
    }
    p->oom |= inner.oom;
    kids_free(&ev);
    inst_plan_free(&inner);
    return;
oom:
    p->oom = 1;
    kids_free(&ev);
    inst_plan_free(&inner);
}
