/* transcript.c: the person's prompts from a host's transcript (see transcript.h).
 *
 * Lines are read from the end back; only a line holding a "user" token
 * (Claude Code's user lines, Codex's user_message events) is parsed, and a
 * user line holding a tool_result (often megabytes of tool output) is
 * skipped before any parse. */
#include "transcript.h"

#include "jscan.h"
#include "timefmt.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PROMPTS_MAX 64

static const char *find(const char *s, size_t n, const char *lit, size_t ln)
{
    while (n >= ln) {
        const char *c = memchr(s, lit[0], n - ln + 1);
        if (!c)
            return NULL;
        if (!memcmp(c, lit, ln))
            return c;
        n -= (size_t)(c + 1 - s);
        s = c + 1;
    }
    return NULL;
}

/* The last TRANSCRIPT_TAIL bytes of a regular file, from a line's start. */
static char *tail(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0)
        return NULL;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return NULL;
    }
    off_t from = st.st_size > (off_t)TRANSCRIPT_TAIL ? st.st_size - (off_t)TRANSCRIPT_TAIL : 0;
    size_t want = (size_t)(st.st_size - from), got = 0;
    char *buf = malloc(want + 1);
    while (buf && got < want) {
        ssize_t r = pread(fd, buf + got, want - got, from + (off_t)got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    if (!buf)
        return NULL;
    buf[got] = '\0';
    size_t skip = 0;
    if (from > 0) {                          /* the first line is cut: start after it */
        const char *nl = memchr(buf, '\n', got);
        skip = nl ? (size_t)(nl + 1 - buf) : got;
    }
    memmove(buf, buf + skip, got - skip + 1);
    *len = got - skip;
    return buf;
}

/* A prompt the host did not write for itself or for keel. */
static int typed(const char *t, size_t n)
{
    static const char *const not_typed[] = {"<command-name>", "<command-message>", "<command-args>",
                                            "<local-command-stdout>", "<local-command-stderr>", "<task-notification>",
                                            "<user-prompt-submit-hook>", "<system-reminder>", "<environment_context>",
                                            "<user_instructions>", "Caveat: The messages below", TRANSCRIPT_KEEL_MARK,
                                            NULL};
    while (n && (*t == ' ' || *t == '\n' || *t == '\t' || *t == '\r'))
        t++, n--;
    if (!n)
        return 0;
    for (int i = 0; not_typed[i]; i++) {
        size_t l = strlen(not_typed[i]);
        if (n >= l && !memcmp(t, not_typed[i], l))
            return 0;
    }
    return 1;
}

/* The prompt on one line, if it holds one: its text (a string inside m) and time. */
static const char *prompt_of(const cJSON *m, int64_t *at)
{
    const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "type"));
    const char *ts = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "timestamp"));
    if (!type || !ts || tf_parse_rfc3339(ts, at, NULL) < 0)
        return NULL;
    if (!strcmp(type, "event_msg")) {                               /* Codex */
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(m, "payload");
        const char *pt = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "type"));
        return pt && !strcmp(pt, "user_message") ? cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "message"))
                                                 : NULL;
    }
    if (strcmp(type, "user") || cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "isMeta")))   /* Claude Code */
        return NULL;
    const cJSON *msg = cJSON_GetObjectItemCaseSensitive(m, "message");
    const char *role = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg, "role"));
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(msg, "content");
    if (role && strcmp(role, "user"))
        return NULL;
    if (cJSON_IsString(c))
        return c->valuestring;
    const cJSON *b, *text = NULL;
    cJSON_ArrayForEach(b, c) {
        const char *bt = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(b, "type"));
        if (!bt || strcmp(bt, "text") || text)
            return NULL;                     /* a tool result, an image, or more than one text: not a typed prompt */
        text = cJSON_GetObjectItemCaseSensitive(b, "text");
    }
    return cJSON_GetStringValue(text);
}

struct found {
    cJSON *line;
    const char *text;
    int64_t at;
};

int transcript_prompts(const char *path, int64_t from_ms, int max,
                       void (*fn)(const struct transcript_prompt *p, void *ctx), void *ctx)
{
    size_t n;
    char *buf = path && *path ? tail(path, &n) : NULL;
    if (!buf)
        return -1;
    int kept = transcript_prompts_in(buf, n, from_ms, max, fn, ctx);
    free(buf);
    return kept;
}

int transcript_prompts_in(const char *buf, size_t n, int64_t from_ms, int max,
                          void (*fn)(const struct transcript_prompt *p, void *ctx), void *ctx)
{
    /* An unescaped "user" can only be a JSON string token (quotes inside
     * strings are escaped): Claude Code's type or role, Codex's
     * "user_message". Other lines are never parsed. Lines are read from the
     * newest back, until max prompts or one older than from_ms. */
    static const char key[] = "\"user";
    struct found got[PROMPTS_MAX];
    int kept = 0;
    if (max > PROMPTS_MAX)
        max = PROMPTS_MAX;
    const char *e = buf + n;
    while (kept < max && e > buf) {
        const char *b = e;
        while (b > buf && b[-1] != '\n')
            b--;
        const char *line = b, *line_end = e;
        e = b > buf ? b - 1 : buf;
        const char *hit = find(line, (size_t)(line_end - line), key, sizeof key - 1);
        while (hit) {
            const char *after = hit + sizeof key - 1;
            if (after < line_end && (*after == '"' || ((size_t)(line_end - after) >= 9 && !memcmp(after, "_message\"", 9))))
                break;
            hit = find(after, (size_t)(line_end - after), key, sizeof key - 1);
        }
        if (!hit || find(line, (size_t)(line_end - line), "\"tool_result\"", 13))
            continue;
        cJSON *m = jscan_parse(line, (size_t)(line_end - line));
        int64_t at = 0;
        const char *t = m ? prompt_of(m, &at) : NULL;
        if (t && at < from_ms) {
            cJSON_Delete(m);
            break;                           /* older than the window: so is everything before it */
        }
        if (!t || !typed(t, strlen(t))) {
            cJSON_Delete(m);
            continue;
        }
        got[kept++] = (struct found){m, t, at};
    }
    for (int i = kept; i-- > 0;) {           /* oldest first */
        struct transcript_prompt p = {got[i].text, strlen(got[i].text), got[i].at};
        fn(&p, ctx);
        cJSON_Delete(got[i].line);
    }
    return kept;
}
