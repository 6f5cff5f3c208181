/* transcript.c: the person's prompts from a host's transcript (see transcript.h).
 *
 * Lines are read from the end back, from a tail of the file that grows
 * until it holds what is wanted; only a line holding a "user" token
 * (Claude Code's user lines, Codex's user_message events, Gemini CLI's
 * user messages) or a queued_command (Claude Code's prompt typed while the
 * agent worked) is parsed, and a user line holding a tool_result (often
 * megabytes of tool output) is skipped before any parse.
 *
 * A prompt the person interrupted (Esc in Claude Code, which then writes a
 * user line "[Request interrupted by user]"; a turn_aborted event in Codex;
 * an info message "Request cancelled." in Gemini CLI) was cut off before it
 * was answered, and the prompt typed next stands in its place: neither it
 * nor the interruption is a prompt asked. */
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

/* The last `size` bytes of the open regular file fd, st_size bytes long,
 * from a line's start; *whole when they reach back to the file's start. */
static char *tail(int fd, off_t st_size, size_t size, size_t *len, int *whole)
{
    off_t from = st_size > (off_t)size ? st_size - (off_t)size : 0;
    size_t want = (size_t)(st_size - from), got = 0;
    *whole = from == 0;
    char *buf = malloc(want + 1);
    while (buf && got < want) {
        ssize_t r = pread(fd, buf + got, want - got, from + (off_t)got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    if (!buf)
        return NULL;
    buf[got] = '\0';
    size_t skip = 0;
    if (from > 0) { /* the first line is cut: start after it */
        const char *nl = memchr(buf, '\n', got);
        skip = nl ? (size_t)(nl + 1 - buf) : got;
    }
    memmove(buf, buf + skip, got - skip + 1);
    *len = got - skip;
    return buf;
}

#define INTERRUPTED "[Request interrupted by user" /* Claude Code's, with or without " for tool use]" */

/* A prompt the host did not write for itself or for keel. */
static int typed(const char *t, size_t n)
{
    static const char *const not_typed[] = {"<command-name>",
                                            "<command-message>",
                                            "<command-args>",
                                            "<local-command-stdout>",
                                            "<local-command-stderr>",
                                            "<task-notification", /* with or without attributes */
                                            "<bash-input>", /* the ! shell: a command and its output */
                                            "<bash-stdout>",
                                            "<bash-stderr>",
                                            "<local-command-caveat>",
                                            "<teammate-message",
                                            "<cross-session-message",
                                            "<user-prompt-submit-hook>",
                                            "<system-reminder>",
                                            "<environment_context>",
                                            "<user_instructions>",
                                            "Caveat: The messages below",
                                            "This session is being continued from a previous conversation",
                                            TRANSCRIPT_KEEL_MARK,
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

/* What Claude Code's content of a prompt holds: a string, or blocks of one
 * text and any images pasted with it. A tool result, or more than one text,
 * is no typed prompt. */
static const char *text_of(const cJSON *c)
{
    if (cJSON_IsString(c))
        return c->valuestring;
    const cJSON *b, *text = NULL;
    cJSON_ArrayForEach(b, c) {
        const char *bt = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(b, "type"));
        if (bt && !strcmp(bt, "image"))
            continue; /* a screenshot pasted with the prompt: the text is what was asked */
        if (!bt || strcmp(bt, "text") || text)
            return NULL;
        text = cJSON_GetObjectItemCaseSensitive(b, "text");
    }
    return cJSON_GetStringValue(text);
}

/* A Gemini CLI message of type "user": its content, a string or parts; of
 * parts the first text, which is what the person typed (files they named
 * with @ follow it), never the context hooks added (<hook_context>). A
 * tool's response (a functionResponse part) is no prompt. */
static const char *gemini_prompt(const cJSON *m)
{
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(m, "content");
    if (cJSON_IsString(c))
        return c->valuestring;
    const cJSON *part;
    const char *text = NULL;
    cJSON_ArrayForEach(part, c) {
        const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(part, "text"));
        if (cJSON_GetObjectItemCaseSensitive(part, "functionResponse") ||
            cJSON_GetObjectItemCaseSensitive(part, "functionCall"))
            return NULL;
        if (t && !text && strncmp(t, "<hook_context>", 14))
            text = t;
    }
    return text;
}

/* A prompt the person typed while Claude Code's agent worked: an attachment
 * {type: "queued_command", commandMode: "prompt", origin: {kind: "human"},
 * prompt} (a string, or blocks: one text, and images), not isMeta. A
 * queued task notification or another session's message is not theirs. */
static const char *queued_prompt(const cJSON *a)
{
    const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "type"));
    const char *mode = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "commandMode"));
    const cJSON *origin = cJSON_GetObjectItemCaseSensitive(a, "origin");
    const char *kind = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(origin, "kind"));
    if (!type || strcmp(type, "queued_command") || (mode && strcmp(mode, "prompt")) ||
        (origin && (!kind || strcmp(kind, "human"))) || cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "isMeta")))
        return NULL;
    return text_of(cJSON_GetObjectItemCaseSensitive(a, "prompt"));
}

/* The prompt on one line, if it holds one: its text (a string inside m) and time. */
static const char *prompt_of(const cJSON *m, int64_t *at)
{
    const char *type = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "type"));
    const char *ts = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "timestamp"));
    if (!type || !ts || tf_parse_rfc3339(ts, at, NULL) < 0)
        return NULL;
    if (!strcmp(type, "event_msg")) { /* Codex */
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(m, "payload");
        const char *pt = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "type"));
        return pt && !strcmp(pt, "user_message") ? cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "message"))
                                                 : NULL;
    }
    if (!strcmp(type, "attachment")) /* Claude Code: typed while the agent worked */
        return queued_prompt(cJSON_GetObjectItemCaseSensitive(m, "attachment"));
    if (strcmp(type, "user") || cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "isMeta")) ||
        cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "isCompactSummary")) ||
        cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "isSidechain"))) /* Claude Code; a subagent's task */
        return NULL;
    const cJSON *msg = cJSON_GetObjectItemCaseSensitive(m, "message");
    if (!msg)
        return gemini_prompt(m);
    const char *role = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg, "role"));
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(msg, "content");
    if (role && strcmp(role, "user"))
        return NULL;
    return text_of(c);
}

struct found {
    cJSON *line;
    const char *text;
    int64_t at;
    const char *id; /* Gemini CLI's message id, else NULL */
};

/* Gemini CLI writes a message again when it changes: the newest line of an
 * id is the message. */
static int seen_id(const struct found *f, const struct found *end, const char *id)
{
    for (; id && f != end; f++)
        if (f->id && !strcmp(f->id, id))
            return 1;
    return 0;
}

/* 1 when line[0..len) is a Gemini CLI message whose id is id[0..n): it opens
 * {"id":"<id>", as the host writes it. */
static int message_line(const char *line, size_t len, const char *id, size_t n)
{
    return len >= n + 8 && !memcmp(line, "{\"id\":\"", 7) && !memcmp(line + 7, id, n) && line[7 + n] == '"';
}

/* The prompts of buf[0..n), newest first into got, until max or one older
 * than from_ms (then 1: nothing before it is wanted) or the buffer's start
 * (then 0). */
static int collect(const char *buf, size_t n, int64_t from_ms, int max, struct found *got, int *kept)
{
    /* An unescaped "user" can only be a JSON string token (quotes inside
     * strings are escaped): Claude Code's type or role, Codex's
     * "user_message". Other lines are never parsed. */
    static const char key[] = "\"user", codex_event[] = "\"event_msg\"", aborted[] = "\"turn_aborted\"",
                      rewind_key[] = "{\"$rewindTo\":\"", queued[] = "queued_command\"",
                      cancelled[] = "\"type\":\"info\",\"content\":\"Request cancelled.\"";
    *kept = 0;
    int cut = 0; /* an interruption seen: the next prompt back was cut off */
    /* Gemini CLI's rewind ({"$rewindTo": id}): the lines back to that
     * message's are gone, and so is every line of that message (ids point
     * into buf) */
    const char *rewound = NULL, *gone = NULL;
    size_t rewound_n = 0, gone_n = 0;
    const char *e = buf + n;
    while (*kept < max && e > buf) {
        const char *b = e;
        while (b > buf && b[-1] != '\n')
            b--;
        const char *line = b, *line_end = e;
        e = b > buf ? b - 1 : buf;
        size_t len = (size_t)(line_end - line);
        if (rewound) {
            if (message_line(line, len, rewound, rewound_n))
                gone = rewound, gone_n = rewound_n, rewound = NULL;
            continue;
        }
        if (gone && message_line(line, len, gone, gone_n))
            continue;
        if (len > sizeof rewind_key - 1 && !memcmp(line, rewind_key, sizeof rewind_key - 1)) {
            const char *id = line + sizeof rewind_key - 1, *q = memchr(id, '"', (size_t)(line_end - id));
            if (q) /* a line cut off as it is written is skipped, as the host skips it */
                rewound = id, rewound_n = (size_t)(q - id);
            continue;
        }
        size_t head = (size_t)(line_end - line) < 96 ? (size_t)(line_end - line) : 96; /* Codex's type comes first */
        if ((find(line, head, codex_event, sizeof codex_event - 1) &&
             find(line, (size_t)(line_end - line), aborted, sizeof aborted - 1)) ||
            find(line, len, cancelled, sizeof cancelled - 1)) {
            cut = 1;
            continue;
        }
        const char *hit = find(line, (size_t)(line_end - line), key, sizeof key - 1);
        while (hit) {
            const char *after = hit + sizeof key - 1;
            if (after < line_end &&
                (*after == '"' || ((size_t)(line_end - after) >= 9 && !memcmp(after, "_message\"", 9))))
                break;
            hit = find(after, (size_t)(line_end - after), key, sizeof key - 1);
        }
        if (hit ? find(line, len, "\"tool_result\"", 13) != NULL : !find(line, len, queued, sizeof queued - 1))
            continue;
        cJSON *m = jscan_parse(line, (size_t)(line_end - line));
        int64_t at = 0;
        const char *t = m ? prompt_of(m, &at) : NULL;
        if (t && at < from_ms) {
            cJSON_Delete(m);
            return 1; /* older than the window: so is everything before it */
        }
        int interruption = t && !strncmp(t, INTERRUPTED, sizeof INTERRUPTED - 1);
        const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "id")); /* Gemini CLI's only */
        int prompt = t && !interruption && typed(t, strlen(t));
        if (!prompt || cut || seen_id(got, got + *kept, id)) {
            cut = interruption || (cut && !prompt);
            cJSON_Delete(m);
            continue;
        }
        got[(*kept)++] = (struct found){m, t, at, id};
    }
    return *kept == max;
}

/* Hands the prompts found to fn, oldest first, and lets them go. */
static int deliver(struct found *got, int kept, void (*fn)(const struct transcript_prompt *p, void *ctx), void *ctx)
{
    for (int i = kept; i-- > 0;) {
        struct transcript_prompt p = {got[i].text, strlen(got[i].text), got[i].at};
        if (fn)
            fn(&p, ctx);
        cJSON_Delete(got[i].line);
    }
    return kept;
}

int transcript_prompts_in(const char *buf, size_t n, int64_t from_ms, int max,
                          void (*fn)(const struct transcript_prompt *p, void *ctx), void *ctx)
{
    struct found got[PROMPTS_MAX];
    int kept;
    collect(buf, n, from_ms, max > PROMPTS_MAX ? PROMPTS_MAX : max, got, &kept);
    return deliver(got, kept, fn, ctx);
}

/* The file is read from its end in a tail that grows fourfold, from
 * TRANSCRIPT_FIRST bytes, until the prompts wanted are in it: a long
 * session's few recent prompts cost a read of kilobytes, not of the
 * TRANSCRIPT_TAIL megabytes. */
int transcript_prompts(const char *path, int64_t from_ms, int max,
                       void (*fn)(const struct transcript_prompt *p, void *ctx), void *ctx)
{
    int fd = path && *path ? open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC) : -1;
    struct stat st;
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return -1;
    }
    if (max > PROMPTS_MAX)
        max = PROMPTS_MAX;
    struct found got[PROMPTS_MAX];
    int kept = -1;
    for (size_t size = TRANSCRIPT_FIRST;; size *= 4) {
        if (size > TRANSCRIPT_TAIL)
            size = TRANSCRIPT_TAIL;
        size_t n;
        int whole;
        char *buf = tail(fd, st.st_size, size, &n, &whole);
        if (!buf)
            break;
        int done = collect(buf, n, from_ms, max, got, &kept);
        if (done || whole || size == TRANSCRIPT_TAIL) {
            deliver(got, kept, fn, ctx);
            free(buf);
            break;
        }
        deliver(got, kept, NULL, NULL);
        free(buf);
        kept = -1;
    }
    close(fd);
    return kept;
}
