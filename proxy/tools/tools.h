/* tools.h: keel's tool table.
 *
 * One row per tool: its name, the groups --expose selects it by, the schema
 * file that is its wire contract, and the function that implements it. The
 * tools/list entry of each tool (title, description, inputSchema,
 * outputSchema, annotations) is read from the embedded schema file, never
 * written in C, so the files in schemas/ are the only statement of the
 * contract. */
#ifndef KEEL_TOOLS_H
#define KEEL_TOOLS_H

#include "chrono.h"
#include "detect.h"

#include <cjson/cJSON.h>

enum {
    TOOL_GUARDRAIL = 1u << 0,
    TOOL_CHRONO = 1u << 1,
    TOOL_INSPECT = 1u << 2, /* self_inspect */
    TOOL_RULES = 1u << 3, /* the output filter's tools */
    TOOL_CORE = 1u << 4, /* keel wrap's default: apply_override and the session clock */
    TOOL_ALL = 0xffffu,
};

enum {
    TOOL_PURE_READ = 1u << 0, /* asks the time (get_time_context, idle_status): not client activity */
    TOOL_TEXT_QUESTION = 1u << 1, /* its text block is the result's "question" alone */
};

typedef int (*tool_fn)(const cJSON *args, const struct chrono_env *env, cJSON **out, kerr *e);

struct tool {
    const char *name;
    unsigned group;
    const char *schema; /* embedded path */
    tool_fn fn;
    unsigned flags;
};

extern const struct tool tools_table[]; /* terminated by name == NULL */

const struct tool *tools_find(const char *name, unsigned groups);

/* The parsed schema file of a tool (cached; owned by the table). */
const cJSON *tools_schema(const struct tool *t);

/* A new array of tools/list entries for the tools in groups. */
cJSON *tools_list(unsigned groups);

/* Runs a tool with the profile and state directory given (state_dir NULL:
 * the default), reading the clock first. Returns the structured result (or
 * {"error": {...}}) and sets *is_error. args may be NULL (no arguments). */
cJSON *tools_run(const struct tool *t, const cJSON *args, const struct profile *profile, const char *state_dir,
                 int *is_error);

/* A tools/call for keel tool t, answered: the CallToolResult for params
 * (taken from the request line, which is checked for NUL escapes). */
cJSON *tools_answer(const struct tool *t, const cJSON *params, const char *line, size_t n,
                    const struct profile *profile, const char *state_dir);

/* {"error": {code, message, field?}} for a tool error found outside a tool. */
cJSON *tools_error(const char *code, const char *field, const char *message);

/* Wraps a structured result as an MCP CallToolResult: the JSON as a text
 * block (or "CODE: message" for an error; or, given text_field, that field's
 * value alone), structuredContent, isError. Takes ownership of structured. */
cJSON *tools_call_result(cJSON *structured, int is_error, const char *text_field);

#endif
