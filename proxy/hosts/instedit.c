/* instedit.c: what keel install's edits are made of (see instedit.h): a
 * growable text, shell and JSON pointer quoting, a plan's splices, notes and
 * manifest, the cut of a container's items, and the spans of a text's
 * secrets for the printed diff. */
#include "instedit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- text helpers --------------------------------------------------------------- */

void inst_sb_add(struct sb *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = (b->n + n + 1) * 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

void inst_sb_str(struct sb *b, const char *s)
{
    inst_sb_add(b, s, strlen(s));
}

/* s as a JSON string (also a TOML basic string). */
void inst_sb_quoted(struct sb *b, const char *s)
{
    inst_sb_add(b, "\"", 1);
    for (; *s; s++) {
        char esc[8];
        if (*s == '"' || *s == '\\') {
            esc[0] = '\\';
            esc[1] = *s;
            inst_sb_add(b, esc, 2);
        } else if ((unsigned char)*s < 0x20 || *s == 0x7f) {
            snprintf(esc, sizeof esc, "\\u%04x", (unsigned char)*s);
            inst_sb_add(b, esc, 6);
        } else {
            inst_sb_add(b, s, 1);
        }
    }
    inst_sb_add(b, "\"", 1);
}

/* s quoted for a POSIX shell when it needs it. */
void inst_shell_quote(char *out, size_t cap, const char *s)
{
    int plain = *s != '\0';
    for (const char *c = s; *c && plain; c++)
        plain = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-", *c) != NULL;
    size_t k = 0;
    if (plain) {
        snprintf(out, cap, "%s", s);
        return;
    }
    out[k++] = '\'';
    for (; *s && k + 6 < cap; s++) {
        if (*s == '\'') {
            memcpy(out + k, "'\\''", 4);
            k += 4;
        } else {
            out[k++] = *s;
        }
    }
    out[k++] = '\'';
    out[k] = '\0';
}

/* The words of a shell command line (quotes and backslashes undone), at
 * most max; how many there are, max + 1 when more. */
static int shell_words(const char *cmd, char (*word)[PATH_MAX], int max)
{
    const char *p = cmd;
    for (int w = 0;; w++) {
        size_t k = 0;
        while (*p == ' ' || *p == '\t' || *p == '\n')
            p++;
        if (!*p)
            return w;
        if (w == max)
            return max + 1;
        while (*p && *p != ' ' && *p != '\t' && *p != '\n' && k + 1 < sizeof word[w]) {
            if (*p == '\'') {
                for (p++; *p && *p != '\'' && k + 1 < sizeof word[w]; p++)
                    word[w][k++] = *p;
                if (*p)
                    p++;
            } else if (*p == '"') {
                for (p++; *p && *p != '"' && k + 1 < sizeof word[w]; p++) {
                    if (*p == '\\' && p[1])
                        p++;
                    word[w][k++] = *p;
                }
                if (*p)
                    p++;
            } else {
                if (*p == '\\' && p[1])
                    p++;
                word[w][k++] = *p++;
            }
        }
        word[w][k] = '\0';
    }
}

/* A name of letters, and hyphens inside it (Stop, claude-code). */
static int letters(const char *s)
{
    if (!*s || *s == '-')
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s == '-' && s[1])))
            return 0;
    return 1;
}

int inst_is_keel_hook(const char *cmd, int exact)
{
    char word[6][PATH_MAX];
    int n = shell_words(cmd, word, 5);
    if (n < 2)
        return 0;
    const char *base = strrchr(word[0], '/');
    base = base ? base + 1 : word[0];
    if (strcmp(base, "keel") || strcmp(word[1], "hook"))
        return 0;
    /* what keel install writes: /path/to/keel hook EVENT [--host NAME], nothing more */
    return !exact ||
        (word[0][0] == '/' &&
         ((n == 3 && letters(word[2])) ||
          (n == 5 && letters(word[2]) && !strcmp(word[3], "--host") && letters(word[4]))));
}

int inst_is_keel_path(const struct ctx *c, const char *s)
{
    if (!s)
        return 0;
    const char *base = strrchr(s, '/');
    base = base ? base + 1 : s;
    return !strcmp(s, c->keel) || !strcmp(base, "keel");
}

/* A JSON pointer (RFC 6901) member name, escaped, appended. */
void inst_ptr_add(char *ptr, size_t cap, const char *name)
{
    size_t k = strlen(ptr);
    if (k + 1 < cap)
        ptr[k++] = '/';
    for (; *name && k + 2 < cap; name++) {
        if (*name == '~' || *name == '/') {
            ptr[k++] = '~';
            ptr[k++] = *name == '~' ? '0' : '1';
        } else {
            ptr[k++] = *name;
        }
    }
    ptr[k] = '\0';
}

/* --- a plan: the splices for one file, and the tree they must give ------------ */

void inst_plan_free(struct plan *p)
{
    for (int i = 0; i < p->n; i++)
        free((char *)p->ed[i].text);
    free(p->ed);
    free(p->notes.p);
    cJSON_Delete(p->want);
    cJSON_Delete(p->added);
    inst_ptrset_free(&p->aset);
    inst_ptrset_free(&p->mset);
    free(p->out);
    memset(p, 0, sizeof *p);
}

/* A splice: del bytes at `at` become the text of b (taken). */
void inst_splice(struct plan *p, size_t at, size_t del, struct sb *b)
{
    if (b->oom || p->oom) {
        free(b->p);
        memset(b, 0, sizeof *b); /* taken all the same: b may be filled again */
        p->oom = 1;
        return;
    }
    if (p->n == p->cap) {
        int cap = p->cap ? p->cap * 2 : 16;
        struct cfg_edit *e = realloc(p->ed, (size_t)cap * sizeof *e);
        if (!e) {
            free(b->p);
            memset(b, 0, sizeof *b);
            p->oom = 1;
            return;
        }
        p->ed = e;
        p->cap = cap;
    }
    char *text = b->p ? b->p : calloc(1, 1);
    size_t n = b->n;
    memset(b, 0, sizeof *b);
    if (text && p->crlf && memchr(text, '\n', n)) { /* each bare LF as CRLF */
        size_t lfs = 0;
        for (size_t i = 0; i < n; i++)
            lfs += text[i] == '\n' && (!i || text[i - 1] != '\r');
        char *t = malloc(n + lfs + 1);
        if (t) {
            size_t k = 0;
            for (size_t i = 0; i < n; i++) {
                if (text[i] == '\n' && (!i || text[i - 1] != '\r'))
                    t[k++] = '\r';
                t[k++] = text[i];
            }
            t[k] = '\0';
            n = k;
        }
        free(text);
        text = t;
    }
    if (!text) {
        p->oom = 1;
        return;
    }
    p->ed[p->n++] = (struct cfg_edit){at, del, text, n};
}

void inst_cut(struct plan *p, size_t from, size_t to)
{
    struct sb none = {0};
    inst_splice(p, from, to - from, &none);
}

void inst_note(struct plan *p, const char *fmt, const char *a, const char *b)
{
    char line[600];
    snprintf(line, sizeof line, fmt, a ? a : "", b ? b : "");
    inst_sb_str(&p->notes, "  ");
    inst_sb_str(&p->notes, line);
    inst_sb_str(&p->notes, "\n");
}

static uint64_t ptr_hash(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3ULL;
    return h ? h : 1;
}

int inst_ptrset_has(const struct ptrset *set, const char *s, size_t n)
{
    if (!set->cap)
        return 0;
    uint64_t h = ptr_hash(s, n);
    for (size_t j = h & (set->cap - 1); set->h[j]; j = (j + 1) & (set->cap - 1))
        if (set->h[j] == h && !strncmp(set->s[j], s, n) && !set->s[j][n])
            return 1;
    return 0;
}

int inst_ptrset_add(struct ptrset *set, const char *s)
{
    size_t n = strlen(s);
    if (inst_ptrset_has(set, s, n))
        return 1;
    if (2 * (set->n + 1) > set->cap) {
        size_t cap = set->cap ? 2 * set->cap : 64;
        uint64_t *h = calloc(cap, sizeof *h);
        const char **v = calloc(cap, sizeof *v);
        if (!h || !v) {
            free(h);
            free(v);
            return -1;
        }
        for (size_t i = 0; i < set->cap; i++)
            if (set->h[i])
                for (size_t j = set->h[i] & (cap - 1);; j = (j + 1) & (cap - 1))
                    if (!h[j]) {
                        h[j] = set->h[i];
                        v[j] = set->s[i];
                        break;
                    }
        free(set->h);
        free(set->s);
        set->h = h;
        set->s = v;
        set->cap = cap;
    }
    uint64_t hv = ptr_hash(s, n);
    size_t j = hv & (set->cap - 1);
    while (set->h[j])
        j = (j + 1) & (set->cap - 1);
    set->h[j] = hv;
    set->s[j] = s;
    set->n++;
    return 0;
}

void inst_ptrset_free(struct ptrset *set)
{
    free(set->h);
    free(set->s);
    memset(set, 0, sizeof *set);
}

void inst_manifest_add(struct plan *p, const char *ptr)
{
    if (!p->added)
        p->added = cJSON_CreateArray();
    if (inst_ptrset_has(&p->aset, ptr, strlen(ptr)))
        return;
    cJSON *e = cJSON_CreateString(ptr);
    if (!e || inst_ptrset_add(&p->aset, e->valuestring) < 0) {
        cJSON_Delete(e);
        p->oom = 1;
        return;
    }
    cJSON_AddItemToArray(p->added, e);
}

cJSON *inst_manifest_merge(const cJSON *m, const cJSON *added)
{
    struct ptrset set = {0};
    cJSON *out = cJSON_CreateArray();
    const cJSON *lists[2] = {m, added}, *e;
    for (int l = 0; l < 2 && out; l++)
        cJSON_ArrayForEach(e, lists[l]) {
            if (!cJSON_IsString(e) || inst_ptrset_has(&set, e->valuestring, strlen(e->valuestring)))
                continue;
            cJSON *c = cJSON_CreateString(e->valuestring);
            if (!c || inst_ptrset_add(&set, c->valuestring) < 0) {
                cJSON_Delete(c);
                cJSON_Delete(out);
                out = NULL;
                break;
            }
            cJSON_AddItemToArray(out, c);
        }
    inst_ptrset_free(&set);
    return out;
}

int inst_manifest_has(struct plan *p, const cJSON *m, const char *ptr)
{
    const cJSON *first = m ? m->child : NULL, *last = first ? first->prev : NULL, *e;
    if (!first)
        return 0;
    /* the manifest's set, built on the plan's first question of it */
    if (p->mset_of != m || p->mset_first != first || p->mset_last != last) {
        inst_ptrset_free(&p->mset);
        p->mset_of = NULL;
        int bad = 0;
        cJSON_ArrayForEach(e, m)
            if (cJSON_IsString(e))
                bad |= inst_ptrset_add(&p->mset, e->valuestring) < 0;
        if (bad) { /* out of memory: asked one by one */
            inst_ptrset_free(&p->mset);
            cJSON_ArrayForEach(e, m)
                if (cJSON_IsString(e) && !strcmp(e->valuestring, ptr))
                    return 1;
            return 0;
        }
        p->mset_of = m, p->mset_first = first, p->mset_last = last;
    }
    return inst_ptrset_has(&p->mset, ptr, strlen(ptr));
}

/* Removes the items marked in del[] from the container whose opening
 * bracket is at `open`: items[i] spans key (or value) start to value end.
 * Runs are cut so the text left is what it was before keel added them:
 * a run not at the start from the end of the item before it, a run at the
 * start from its first item to the item after it, everything from the
 * opening bracket to the last item's end when all go. */

void inst_cut_items(struct plan *p, size_t open, const struct item *it, int k, const int *del)
{
    int all = k > 0;
    for (int i = 0; i < k; i++)
        all &= del[i];
    if (all) {
        inst_cut(p, open + 1, it[k - 1].end);
        return;
    }
    for (int i = 0; i < k;) {
        if (!del[i]) {
            i++;
            continue;
        }
        int j = i;
        while (j + 1 < k && del[j + 1])
            j++;
        if (i > 0)
            inst_cut(p, it[i - 1].end, it[j].end);
        else
            inst_cut(p, it[0].at, it[j + 1].at);
        i = j + 1;
    }
}

int inst_member(struct plan *p, const struct cfgjson *d, size_t obj_at, const char *key, struct cfgjson_member *m)
{
    int rc = cfgjson_member(d, obj_at, key, m);
    if (rc < 0)
        p->oom = 1;
    return rc > 0;
}

int inst_blank_between(const char *s, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++)
        if (!strchr(" \t\r\n", s[i]))
            return 0;
    return 1;
}

/* --- secrets in TOML, for the printed diff ------------------------------------- */

static void toml_secrets(const struct toml_node *x, int inside, struct cfg_span *out, int max, int *k)
{
    if (x->type == TOML_STRING) {
        if ((inside || (x->text && cfg_secret_text(x->text, x->text_n))) && *k < max)
            out[(*k)++] = (struct cfg_span){x->at, x->end};
        return;
    }
    int after_flag = 0;
    for (const struct toml_node *c = x->first; c; c = c->next) {
        int in = inside || (c->key && cfg_secret_name(c->key, c->key_n)) || after_flag;
        toml_secrets(c, in, out, max, k);
        after_flag = x->type == TOML_ARRAY && c->type == TOML_STRING && c->text && c->text[0] == '-' &&
            (cfg_secret_name(c->text, c->text_n) || cfg_header_flag(c->text, c->text_n));
    }
}

/* Words outside the spans found so far that look like a credential on
 * their own (a token in a comment, "# old token: ghp_..."; one inside a
 * longer string): each a span too. */
static int by_span(const void *a, const void *b)
{
    const struct cfg_span *x = a, *y = b;
    return (x->at > y->at) - (x->at < y->at);
}

static int loose_secrets(const char *t, size_t n, struct cfg_span *out, int k)
{
    static const char stops[] = " \t\r\n\"',[]{}#()";
    int found = k, next = 0; /* the spans found so far, in order: one pass over them and the text */
    qsort(out, (size_t)found, sizeof *out, by_span);
    for (size_t i = 0; i < n && k < SECRETS_MAX;) {
        while (next < found && out[next].end <= i)
            next++;
        if (next < found && out[next].at <= i) {
            i = out[next].end;
            continue;
        }
        if (strchr(stops, t[i]) || !t[i]) {
            i++;
            continue;
        }
        size_t e = i;
        while (e < n && t[e] && !strchr(stops, t[e]))
            e++;
        if (next < found && out[next].at < e)
            e = out[next].at; /* a word runs into a span: up to it */
        if (cfg_secret_text(t + i, e - i))
            out[k++] = (struct cfg_span){i, e};
        i = e;
    }
    return k;
}

int inst_secrets_of(enum fmt fmt, const char *text, size_t n, struct cfg_span *out)
{
    int k = 0;
    if (fmt == FMT_TOML) {
        struct toml_error e;
        struct toml_node *t = toml_parse(text, n, &e);
        if (t)
            toml_secrets(t, 0, out, SECRETS_MAX, &k);
        toml_free(t);
    } else {
        struct cfgjson d;
        char why[256];
        if (cfgjson_read(&d, text, n, fmt == FMT_JSONC, why, sizeof why) == 0)
            k = cfgjson_secrets(&d, out, SECRETS_MAX);
        cfgjson_free(&d);
    }
    return loose_secrets(text, n, out, k);
}
