/* transcript.h: the person's earlier prompts, read from an agent host's own
 * transcript (keel stores none of them).
 *
 * Claude Code writes JSONL: a prompt the person typed is a line of type
 * "user" whose message.content is a string (or one text block, and images
 * pasted with it), not isMeta, with no tool_result block, or one typed while
 * the agent worked, an attachment of type "queued_command". Codex CLI writes
 * JSONL too: a prompt is an event_msg whose payload is {type:
 * "user_message", message}. Gemini CLI's JSONL holds one message a line,
 * {id, timestamp, type: "user", content}, written again when it changes,
 * and {"$rewindTo": id} when the person rewinds. All carry a timestamp per
 * line. Lines the host
 * wrote for itself are not prompts: slash-command records, task
 * notifications, hook output, the summary of a compacted conversation
 * (isCompactSummary), a subagent's task and turns (isSidechain: older
 * versions write them into the session's file), and anything keel injected (its context starts with
 * TRANSCRIPT_KEEL_MARK). Nor is a prompt the person interrupted, nor the
 * interruption (transcript.c).
 *
 * Only the file's last TRANSCRIPT_TAIL bytes are read, and of those only as
 * many as hold the prompts wanted (from a TRANSCRIPT_FIRST tail, growing
 * fourfold), so a long session costs the same as a short one. */
#ifndef KEEL_TRANSCRIPT_H
#define KEEL_TRANSCRIPT_H

#include <stddef.h>
#include <stdint.h>

#define TRANSCRIPT_TAIL      (8u << 20)
#define TRANSCRIPT_FIRST     (64u << 10) /* the first tail read; it grows fourfold up to TRANSCRIPT_TAIL */
#define TRANSCRIPT_KEEL_MARK "[keel]"

struct transcript_prompt {
    const char *text; /* into the buffer transcript_read returned */
    size_t n;
    int64_t at; /* ms */
};

/* Calls fn for each prompt at or after from_ms, oldest first, at most max of
 * the newest. Returns the number seen, or -1 when the file cannot be read as
 * a transcript (missing, not a regular file, not UTF-8 JSON lines). */
int transcript_prompts(const char *path, int64_t from_ms, int max,
                       void (*fn)(const struct transcript_prompt *p, void *ctx), void *ctx);

/* The same over bytes already read (what the fuzzer drives). */
int transcript_prompts_in(const char *buf, size_t n, int64_t from_ms, int max,
                          void (*fn)(const struct transcript_prompt *p, void *ctx), void *ctx);

#endif
