/* hook.h: keel hook EVENT, for agent hosts (Claude Code, Codex CLI, Gemini CLI).
 *
 * The host runs `keel hook EVENT` with its hook JSON on stdin and reads keel's
 * JSON on stdout. keel sees what the MCP wire never carries: the person's own
 * prompt (UserPromptSubmit; Gemini: BeforeAgent) and the model's final reply
 * (Stop, SubagentStop; Gemini: AfterAgent), and, at SessionStart, gives the
 * model the time.
 *
 * Prompt: the prompt against the person's earlier prompts, read from the
 * host's transcript (rumination) and for repeated reassurance; its time is
 * recorded (time_since_last_prompt) and hyperfocus placed on the ladder, the
 * rung shared with every keel of the person. Reply: the message rules
 * (rules/voice.yml and the person's); a reject blocks the stop with the
 * guidance as the reason, at most HOOK_BLOCKS_MAX times in one turn; then
 * sycophancy and annotate rules become a message for the person and context
 * for the next prompt. Nothing to say: no output at all.
 *
 * A hook never fails its host: bad input, an unreadable transcript, a busy
 * state file, anything internal: exit 0, no output, an event name on stderr.
 * Only a reject rule the person has blocks. Nothing the person wrote is
 * logged, and nothing of it is stored. */
#ifndef KEEL_HOOK_H
#define KEEL_HOOK_H

#include "profile.h"

#define HOOK_INPUT_MAX    (4u << 20)
#define HOOK_INPUT_MS     2000 /* the longest wait for the payload to be complete */
#define HOOK_BLOCKS_MAX   4 /* blocked stops in one turn before the reply goes through */
#define HOOK_TEXT_MAX     9000 /* a context or message field (hosts cap them at 10,000) */
#define HOOK_SESSIONS_MAX 32 /* host sessions remembered in the state file (counts and notes) */

enum { HOOK_HOST_AUTO, HOOK_HOST_CLAUDE, HOOK_HOST_CODEX, HOOK_HOST_GEMINI, HOOK_NHOSTS };

/* What differs between the agent hosts, in one place: keel hook reads a
 * payload and answers by it, keel install registers keel's hooks by it. */
struct hook_host {
    const char *name; /* as --host takes it */
    const char *flag; /* what keel install writes after `keel hook EVENT` */
    const char *const *events; /* the events keel registers, and answers */
    int timeout; /* a hook's timeout, in the host's unit (s; Gemini: ms) */
    const char *reply; /* the payload member holding the model's final reply */
    const char *block; /* the decision that sends a reply back */
};
extern const struct hook_host hook_hosts[HOOK_NHOSTS]; /* by HOOK_HOST_*; [HOOK_HOST_AUTO] is Claude Code's */

/* The host --host NAME names, or NULL. */
const struct hook_host *hook_host_named(const char *name);

/* Reads the host's JSON from stdin, writes keel's to stdout. Always 0. */
int hook_run(const char *event, int host, const struct profile *p, const char *state_dir);
/* The answer to one hook input (raw[0..n)): the host's JSON, malloc'd with a
 * byte to spare after its NUL, or NULL when there is nothing to say. */
char *hook_answer(const char *raw, size_t n, const char *event, int host, const struct profile *p,
                  const char *state_dir);

#endif
