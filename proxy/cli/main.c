/* main.c: the keel command line: every command's options parsed and
 * checked here, its work done in its room (see keel help, and man/keel.1).
 *
 *   keel wrap [options] [--] CMD ...   relay an MCP server, with the overlay (relay/)
 *   keel wrap [options] --url URL      the same for a remote server (relay/hup.c)
 *   keel serve                         keel's tools as an MCP server (tools/)
 *   keel check TOOL [--json ARGS]      run one tool once, print its result (tools/)
 *   keel hook EVENT                    an agent host's hook (hosts/hook.c)
 *   keel install | uninstall           set keel up in each client, or take it out (hosts/)
 *   keel inspect [THOUGHT]             self_inspect from the shell
 *   keel tools                         list the tools
 *   keel profile check                 the effective profile and its problems
 *   keel rules lint|test|prompt|check  the output rules (cli/rules_cli.c)
 *   keel pins [list|diff|approve|forget]  pinned tool definitions (cli/pins_cli.c)
 *   keel eval CORPUS                   the detectors on a labelled corpus (cli/eval*.c)
 *
 * Exit status: 0 success; 1 an I/O or internal failure; 2 a tool answered
 * with an error (keel check); 64 a usage error. */
#include "argsplit.h"
#include "eval.h"
#include "frame.h"
#include "hook.h"
#include "install.h"
#include "jscan.h"
#include "jsonrpc.h"
#include "log.h"
#include "serve.h"
#include "tools.h"
#include "overlay.h"
#include "readfile.h"
#include "rulefile.h"
#include "pins_cli.h"
#include "rules_cli.h"
#include "wrap.h"

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef KEEL_VERSION
#define KEEL_VERSION "0.0.0"
#endif

#define EXIT_USAGE          64
#define DEFAULT_MAX_MESSAGE (16u << 20)

static const char usage_text[] =
    "usage: keel COMMAND [OPTIONS]\n"
    "\n"
    "keel adds guardrails and timekeeping to MCP. Commands:\n"
    "  wrap [--] CMD ...   run an MCP server and relay it, adding keel's tools\n"
    "  wrap --url URL      the same for a remote server (Streamable HTTP)\n"
    "  serve               serve keel's tools as an MCP server on stdin/stdout\n"
    "  check TOOL          run one tool once and print its structured result\n"
    "  hook EVENT          an agent host's hook: the person's prompts, the model's replies\n"
    "  install, uninstall  wrap each client's servers and register keel's hooks (and undo it)\n"
    "  inspect [THOUGHT]   thought in, metathought out (self_inspect)\n"
    "  eval CORPUS         measure the detectors on a labelled corpus\n"
    "  tools               list the tools keel serves\n"
    "  profile check       print the effective profile and any problems in it\n"
    "  rules lint|test|prompt|check  check, test or describe the output rules; run them on files\n"
    "  pins [diff|approve|forget]  what servers' tools say, pinned: review and approve changes\n"
    "  help [COMMAND]      show help for a command\n"
    "\n"
    "Options for every command:\n"
    "  --profile PATH      the profile (default $KEEL_PROFILE, else\n"
    "                      $XDG_CONFIG_HOME/keel/profile.yaml)\n"
    "  --rules DIR         more rule files (every .yml in DIR); repeatable\n"
    "  --log-level LEVEL   error, warn, info or debug (default: info for serve and\n"
    "                      wrap, warn for the others); logs go to stderr\n"
    "                      and never contain prompts, arguments or results\n"
    "  -h, --help          show help\n"
    "  -V, --version       print the version\n"
    "\n"
    "See keel(1) for details.\n";

static const char serve_help[] = "usage: keel serve [--max-message-bytes N] [--log-level LEVEL]\n"
                                 "\n"
                                 "Serve keel's tools over MCP on stdin/stdout (one JSON-RPC message per line).\n"
                                 "Exits 0 when stdin ends.\n"
                                 "\n"
                                 "  --max-message-bytes N  largest message accepted, in bytes (suffix K, M or G\n"
                                 "                         allowed; default 16M). A larger message is answered\n"
                                 "                         with an error and skipped.\n";

static const char check_help[] = "usage: keel check TOOL [--json ARGS] [--pretty]\n"
                                 "\n"
                                 "Run one tool once. Arguments are a JSON object, from --json or standard input\n"
                                 "(an empty input means no arguments). Prints the structured result as JSON.\n"
                                 "Exit status: 0 a result, 2 the tool answered with an error (printed as\n"
                                 "{\"error\": {code, message, field?}}), 64 usage. `keel tools` lists the tools.\n";

static const char profile_help[] = "usage: keel profile check [--profile PATH]\n"
                                   "\n"
                                   "Print the effective profile as JSON (defaults filled in) and list any problems:\n"
                                   "unknown keys, wrong types, values out of range, YAML that does not parse.\n"
                                   "Exit status: 0 no problems (a missing profile means defaults), 1 problems.\n";

static const char wrap_help[] =
    "usage: keel wrap [OPTIONS] [--] CMD [ARGS...]\n"
    "       keel wrap [OPTIONS] --command-args \"CMD ARG 'A B'\"\n"
    "       keel wrap [OPTIONS] --url URL [--header 'Name: value'] [--header-env Name=VAR]\n"
    "\n"
    "The server's command starts at -- or at the first word that is not an option\n"
    "of keel's; from there on every word is the server's, untouched.\n"
    "\n"
    "Run an MCP server as keel's upstream and relay its stdio to the client, adding\n"
    "keel's tools beside the server's. Messages keel does not change pass byte for byte.\n"
    "\n"
    "  --command-args STR     the command as one string, split with shell-like quoting\n"
    "                         (no shell runs), for clients that join arguments\n"
    "  --env K=V              add or replace a variable in the server's environment\n"
    "                         (repeatable); it gets all of keel's environment too\n"
    "  --cwd DIR              run the server in DIR\n"
    "  --expose LIST          keel tools to add beside the server's, by group: core\n"
    "                         (default: apply_override, get_time_context,\n"
    "                         mark_session_start, mark_session_end), guardrail,\n"
    "                         chronometric, inspect, rules, all or none; comma-separated\n"
    "  --overlay LIST         detectors to run on the traffic: loop (the agent's tool\n"
    "                         calls), rumination (the person's messages in sampling\n"
    "                         requests), hyperfocus, sycophancy, rules, all (default)\n"
    "                         or none; comma-separated\n"
    "  --loop-exempt GLOB     a tool that repeats on purpose (a debugger's step, a\n"
    "                         clock): the loop detector never counts it (repeatable)\n"
    "  --model-tools GLOB     the server's tools that are themselves model-backed: their\n"
    "                         results are checked for sycophancy (repeatable)\n"
    "  --tool-prefix P        prefix for a keel tool whose name the server also uses\n"
    "                         (default keel_)\n"
    "  --restart[=N]          respawn the server up to N times (default 5) when it\n"
    "                         exits, replaying initialize; the client is told\n"
    "                         notifications/tools/list_changed\n"
    "  --max-message-bytes N  largest message either way (default 16M)\n"
    "\n"
    "A remote server (Streamable HTTP), instead of a command:\n"
    "  --url URL              the server's MCP endpoint, http:// or https://\n"
    "  --header 'Name: value' send this header on every request (repeatable)\n"
    "  --header-env Name=VAR  send header Name with the value of environment variable\n"
    "                         VAR, so a token stays out of configs and process lists\n"
    "                         (repeatable; like Authorization=MY_TOKEN holding 'Bearer ...')\n"
    "  --cacert FILE          trust this CA bundle (a private CA); TLS is always verified\n"
    "  --timeout SECONDS      a request the server sends nothing on for this long fails\n"
    "                         (default 300; 0: wait for ever)\n";

static struct profile profile;
static const char *profile_path;
static char *rule_dirs[16];
static int nrule_dirs;
static struct ruleset rules;

/* The profile, and what is wrong with it said once on stderr: a profile
 * named (--profile, $KEEL_PROFILE) that is not there, one that cannot be
 * read, or problems in it. The defaults hold meanwhile. */
static void load_profile(void)
{
    const char *env = getenv("KEEL_PROFILE");
    int named = (profile_path && *profile_path) || (env && *env);
    profile_load(&profile, profile_path);
    if (named && !profile.found)
        log_event(LOG_WARN, "profile_missing", "what_to_do=\"keel profile check (the defaults hold)\"");
    else if (profile.unreadable)
        log_event(LOG_WARN, "profile_unreadable", "what_to_do=\"keel profile check (the defaults hold)\"");
    else if (profile.nproblems)
        log_event(LOG_WARN, "profile_problems", "count=%d what_to_do=\"keel profile check\"", profile.nproblems);
}

static void load_rules(void)
{
    ruleset_load(&rules, &profile, rule_dirs, nrule_dirs);
    ruleset_current = &rules;
    if (rules.nproblems)
        log_event(LOG_WARN, "rule_problems",
                  "count=%d what_to_do=\"keel rules lint (a rule with a problem is left out)\"", rules.nproblems);
}

/* Set for keel hook with its EVENT: a usage error is then a warning and
 * exit 0 (a hook never breaks its host). */
static int hook_usage;

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, hook_usage ? "keel: warn hook_usage " : "keel: ");
    fprintf(stderr, fmt, arg ? arg : "");
    fprintf(stderr, hook_usage ? " (see keel help hook)\n" : "\nTry 'keel --help'.\n");
    return hook_usage ? 0 : EXIT_USAGE;
}

/* Matches option name at argv[*i], as "--name VALUE" or "--name=VALUE".
 * Returns 0 when argv[*i] is another word, 1 with *val set (and *i on the
 * value's word), -1 when the value is missing. */
static int opt_value(int argc, char **argv, int *i, const char *name, const char **val)
{
    const char *a = argv[*i];
    size_t l = strlen(name);
    if (strncmp(a, name, l))
        return 0;
    if (a[l] == '=') {
        *val = a + l + 1;
        return 1;
    }
    if (a[l])
        return 0;
    if (*i + 1 >= argc)
        return -1;
    *val = argv[++*i];
    return 1;
}

/* The options every command takes (--profile, --rules, --log-level) at
 * argv[*i]: 1 taken, 0 not one of them, -1 a usage error (printed). */
static int global_opt(int argc, char **argv, int *i, int *rc)
{
    const char *v = NULL;
    int m;
    if ((m = opt_value(argc, argv, i, "--log-level", &v))) {
        if (m < 0 || log_set_level(v) < 0)
            return *rc = usage_error("--log-level takes error, warn, info or debug%s", NULL), -1;
        return 1;
    }
    if ((m = opt_value(argc, argv, i, "--rules", &v))) {
        if (m < 0 || !v[0] || nrule_dirs == 16)
            return *rc = usage_error("--rules needs a directory (at most 16)%s", NULL), -1;
        rule_dirs[nrule_dirs++] = (char *)v;
        return 1;
    }
    if ((m = opt_value(argc, argv, i, "--profile", &v))) {
        if (m < 0 || !v[0])
            return *rc = usage_error("--profile needs a path%s", NULL), -1;
        profile_path = v;
        return 1;
    }
    return 0;
}

static const char rules_help[] =
    "usage: keel rules lint|test|prompt [--rules DIR]...\n"
    "       keel rules check [--as message|tool_result|sampling] FILE... [--rules DIR]...\n"
    "\n"
    "  lint    list every problem of the rule files as file:line: message (exit 1 if any)\n"
    "  test    run every rule's examples and the corpus in rules/evals (and DIR/evals),\n"
    "          print true and false positives and negatives per rule (exit 1 on a mismatch)\n"
    "  prompt  print the text to append to an agent's system prompt\n"
    "  check   run the rules over each FILE as a tool result (or --as a message) and\n"
    "          name the rules that fire on it, and those that could not be checked in\n"
    "          their time budget; a count at the end (exit 2 when a rule was not checked);\n"
    "          bytes that are not UTF-8 are read as U+FFFD, as keel hook reads a reply\n"
    "\n"
    "The shipped rules are built in; --rules DIR (repeatable) and the profile's\n"
    "rules.dirs add every .yml file in those directories.\n";

static int cmd_rules(int argc, char **argv)
{
    int help = 0; /* "keel rules check --help" asks for help, it names no file */
    for (int i = 0; i < argc; i++)
        help |= !strcmp(argv[i], "-h") || !strcmp(argv[i], "--help");
    if (argc < 1 || help) {
        fputs(rules_help, argc < 1 ? stderr : stdout);
        return argc < 1 ? EXIT_USAGE : 0;
    }
    if (argc > 1 && strcmp(argv[0], "check"))
        return usage_error("unexpected argument to rules: %s", argv[1]);
    if (argc < 2 && !strcmp(argv[0], "check"))
        return usage_error("rules check needs a FILE to check%s", "");
    load_profile();
    ruleset_load(&rules, &profile, rule_dirs, nrule_dirs);
    int rc;
    if (!strcmp(argv[0], "lint"))
        rc = rules_lint(&rules);
    else if (!strcmp(argv[0], "test"))
        rc = rules_test(&rules, rule_dirs, nrule_dirs);
    else if (!strcmp(argv[0], "prompt"))
        rc = rules_prompt(&rules);
    else if (!strcmp(argv[0], "check"))
        rc = rules_check(&rules, argc - 1, argv + 1);
    else
        rc = usage_error("rules takes lint, test, prompt or check, not %s", argv[0]);
    ruleset_free(&rules);
    return rc;
}

static int parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *s == '-')
        return -1;
    unsigned long long mul = 1;
    if (*end == 'K' || *end == 'k')
        mul = 1ull << 10, end++;
    else if (*end == 'M' || *end == 'm')
        mul = 1ull << 20, end++;
    else if (*end == 'G' || *end == 'g')
        mul = 1ull << 30, end++;
    if (*end || v > (4ull << 30) / mul || v * mul < 1024)
        return -1;
    *out = (size_t)(v * mul);
    return 0;
}

static int cmd_check(int argc, char **argv)
{
    const char *tool = NULL, *json = NULL;
    int pretty = 0;
    for (int i = 0; i < argc; i++) {
        const char *had = json;
        int m = opt_value(argc, argv, &i, "--json", &json);
        if (m) {
            if (m < 0)
                return usage_error("--json needs an argument: the tool's arguments as a JSON object%s", NULL);
            if (had)
                return usage_error("--json given twice; give the tool's arguments as one JSON object%s", NULL);
        } else if (strcmp(argv[i], "--pretty") == 0) {
            pretty = 1;
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            fputs(check_help, stdout);
            return 0;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return usage_error("unknown option for check: %s", argv[i]);
        } else if (!tool) {
            tool = argv[i];
        } else {
            return usage_error("check takes one tool name; unexpected %s", argv[i]);
        }
    }
    if (!tool)
        return usage_error("check needs a TOOL name; `keel tools` lists them%s", NULL);
    const struct tool *t = tools_find(tool, TOOL_ALL);
    if (!t)
        return usage_error("no tool named %s; `keel tools` lists them", tool);
    char *input = NULL;
    size_t n = 0;
    if (!json) {
        if (isatty(STDIN_FILENO)) {
            json = "";
        } else {
            input = read_all(STDIN_FILENO, DEFAULT_MAX_MESSAGE, &n);
            if (!input) {
                if (errno == EFBIG) { /* the input's fault: a usage error, as bad JSON is */
                    fprintf(stderr,
                            "keel: the arguments on standard input are over %zu MiB, the most keel check reads\n",
                            (size_t)DEFAULT_MAX_MESSAGE >> 20);
                    return EXIT_USAGE;
                }
                fprintf(stderr, "keel: could not read arguments from standard input: %s\n", strerror(errno));
                return 1;
            }
            json = input;
        }
    }
    if (input && memchr(input, '\0', n)) { /* what follows a NUL byte would be cut off unseen */
        free(input);
        return usage_error("arguments hold a NUL byte; give one JSON object (a NUL in a string is refused too)%s",
                           NULL);
    }
    const char *p = json;
    while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
        p++;
    cJSON *args = NULL;
    if (*p) {
        args = jscan_parse(json, strlen(json));
        if (!args || !cJSON_IsObject(args)) {
            cJSON_Delete(args);
            free(input);
            return usage_error("arguments must be one JSON object (with nothing after it)%s", NULL);
        }
    }
    int nul = jscan_has_nul_escape(json, strlen(json));
    free(input);
    log_event(LOG_INFO, "tool_invoked", "name=%s", t->name);
    load_profile();
    load_rules();
    int is_error = 1;
    /* a member given twice: keel would read the first, another reader the
     * last (keel serve refuses the message, -32600) */
    cJSON *out = nul ? tools_error("INPUT_INVALID", "arguments", "text must not contain the NUL character (\\u0000)")
        : jscan_has_dup(args) ? tools_error("INPUT_INVALID", "arguments",
                                            "a member is given twice; give each once (readers differ on which counts)")
                              : tools_run(t, args, &profile, NULL, &is_error);
    /* A message held for its justification waits in this process, which
     * ends now: a later keel check has nothing to justify. */
    int held = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(out, "pending"));
    char *s = pretty ? cJSON_Print(out) : cJSON_PrintUnformatted(out);
    cJSON_Delete(out);
    if (held)
        fputs("keel check: the message waits for its justification only inside one keel process (keel serve or keel "
              "wrap); this one ends here, so a later keel check submit_justification finds nothing to justify\n",
              stderr);
    cJSON_Delete(args); /* after out, which may borrow its strings (detect.h) */
    if (!s)
        return 1;
    int rc = jr_write_line(STDOUT_FILENO, s, strlen(s));
    free(s);
    if (rc < 0)
        return 1;
    return is_error ? 2 : 0;
}

static const char hook_help[] = "usage: keel hook EVENT [--host claude-code|codex|gemini]\n"
                                "\n"
                                "For an agent host's hooks: reads the host's hook JSON on stdin and writes the\n"
                                "host's JSON on stdout (nothing when there is nothing to say). EVENT is the\n"
                                "host's event name: UserPromptSubmit (Gemini: BeforeAgent) checks the person's\n"
                                "prompt against their earlier ones in the host's transcript (rumination) and for\n"
                                "repeated reassurance, records its time and places the session on the\n"
                                "hyperfocus ladder; Stop and SubagentStop (Gemini: AfterAgent) check the model's\n"
                                "final reply with the message rules (a reject rule blocks the stop, at most 4\n"
                                "times in a turn) and for sycophancy; SessionStart tells the model the time.\n"
                                "The host defaults to claude-code (codex speaks the same), gemini for Gemini's\n"
                                "event names. Once it has its EVENT, keel hook always exits 0: a hook never\n"
                                "breaks its host; what went wrong is one event name on stderr (an event name\n"
                                "keel does not know is named there with the ones it does). Without an EVENT\n"
                                "it is a usage error (exit 64): the hook's settings need fixing.\n";

static int cmd_hook(int argc, char **argv)
{
    const char *event = NULL;
    int host = HOOK_HOST_AUTO;
    for (int i = 0; i < argc; i++) {
        const char *v = NULL;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            /* after an EVENT, stdout is the host's: the help goes to stderr */
            int named = 0;
            for (int k = 0; k < argc; k++)
                if (!strcmp(argv[k], "--host"))
                    k++;
                else
                    named |= argv[k][0] != '-';
            fputs(hook_help, named ? stderr : stdout);
            return 0;
        }
        if (!strncmp(argv[i], "--host=", 7))
            v = argv[i] + 7;
        else if (!strcmp(argv[i], "--host") && i + 1 < argc)
            v = argv[++i];
        else if (!strcmp(argv[i], "--host")) {
            log_event(LOG_WARN, "hook_usage", "--host needs a value: claude-code, codex or gemini");
            return 0;
        }
        if (v) {
            const struct hook_host *hh = hook_host_named(v);
            host = hh ? (int)(hh - hook_hosts) : -1;
            if (host < 0) {
                log_event(LOG_WARN, "hook_usage", "--host takes claude-code, codex or gemini");
                return 0;
            }
        } else if (argv[i][0] != '-' && !event) {
            event = argv[i];
        } else {
            log_event(LOG_WARN, "hook_usage", "unexpected argument (see keel help hook)");
            return 0;
        }
    }
    if (!event) {
        fputs("keel hook: which event? e.g. keel hook UserPromptSubmit (see keel help hook)\n", stderr);
        return 64;
    }
    load_profile(); /* the defaults hold; the person should know their settings do not */
    /* Rules judge replies only: a prompt hook (run before every prompt) does
     * not compile them. */
    if (strcmp(event, "UserPromptSubmit") && strcmp(event, "BeforeAgent") && strcmp(event, "SessionStart"))
        load_rules();
    int rc = hook_run(event, host, &profile, NULL);
    ruleset_free(&rules);
    return rc;
}

static const char inspect_help[] = "usage: keel inspect [--json] [THOUGHT]\n"
                                   "\n"
                                   "Thought in, metathought out: print the one question self_inspect returns for\n"
                                   "THOUGHT. --json prints the whole result ({id, lens, question, tier, matched}).\n"
                                   "With no THOUGHT, reads one thought per line from standard input and prints one\n"
                                   "JSON object per line.\n";

/* One thought through self_inspect: 0, or 2 with the error printed. */
static int inspect_one(const char *thought, int json)
{
    cJSON *args = cJSON_CreateObject();
    cJSON_AddStringToObject(args, "thought", thought);
    int is_error;
    cJSON *out = tools_run(tools_find("self_inspect", TOOL_ALL), args, &profile, NULL, &is_error);
    char *s = json || is_error ? cJSON_PrintUnformatted(out) : NULL;
    const char *text = s ? s : cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(out, "question"));
    int rc = text ? jr_write_line(STDOUT_FILENO, text, strlen(text)) : -1;
    free(s);
    cJSON_Delete(out);
    cJSON_Delete(args); /* after out (detect.h) */
    return rc < 0 ? 1 : is_error ? 2 : 0;
}

static int cmd_inspect(int argc, char **argv)
{
    int json = 0;
    const char *thought = NULL;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs(inspect_help, stdout);
            return 0;
        } else if (argv[i][0] == '-' && argv[i][1])
            return usage_error("unknown option for inspect: %s", argv[i]);
        else if (!thought)
            thought = argv[i];
        else
            return usage_error("inspect takes one thought (quote it); unexpected %s", argv[i]);
    }
    load_profile();
    if (thought)
        return inspect_one(thought, json);
    /* One thought a line from stdin, one JSON object a line out. */
    struct frame_reader r;
    frame_init(&r, STDIN_FILENO, 64u << 10);
    int rc = 0;
    for (;;) {
        const char *line;
        size_t n;
        enum frame_status st = frame_next(&r, &line, &n);
        if (st == FRAME_EOF)
            break;
        if (st == FRAME_NEED) {
            if (frame_fill(&r) < 0) {
                rc = 1;
                break;
            }
            continue;
        }
        if (st == FRAME_OVERSIZE) {
            static const char big[] =
                "{\"error\":{\"code\":\"INPUT_TOO_LARGE\",\"message\":\"the line is over 64 KiB\"}}";
            jr_write_line(STDOUT_FILENO, big, sizeof big - 1);
            rc = 2;
            continue;
        }
        char *t = strndup(line, n);
        if (!t) {
            rc = 1;
            break;
        }
        int one = inspect_one(t, 1);
        free(t);
        if (one)
            rc = one;
    }
    frame_free(&r);
    return rc;
}

static const char eval_help[] =
    "usage: keel eval [--markdown] [--misses] [--floors FILE] [--traces DIR] [--sessions DIR] [CORPUS_DIR]\n"
    "\n"
    "Run the detectors on the labelled corpus in CORPUS_DIR (rumination.jsonl,\n"
    "sycophancy.jsonl, hyperfocus.jsonl) and print precision, recall, F1 and\n"
    "confusion counts per detector and pattern, for the dev split and the test split\n"
    "(each example's \"split\"). Then the dev misses with their category and\n"
    "language (the first 24; --misses: all); the test split's misses are never\n"
    "listed, so that nobody tunes on them. Exit 1 when rumination or sycophancy on\n"
    "test is below its floor (precision 0.90, recall 0.85, FP rate 0.03) or more than\n"
    "0.05 worse than on dev, or below the floors in FILE (lines: detector precision\n"
    "recall fp_rate; gap G). Exit 64 when FILE cannot be read or holds a line of no\n"
    "known kind, or an example has no split, a label of no known kind, or arguments\n"
    "the tool refuses (each named by its id).\n"
    "\n"
    "--traces DIR replays the recorded agent sessions in DIR/dev and DIR/test through\n"
    "the loop detector and prints, per split, false advisories per 1000 calls labelled\n"
    "work and the share of loop episodes advised within 2 calls of the threshold.\n"
    "Floors: at most 1 and at least 0.95, or FILE's line: loop MAX_PER_1000 MIN_SHARE.\n"
    "A line that is no labelled call, or a split without calls, is exit 64.\n"
    "\n"
    "--sessions DIR replays whole conversations (DIR/*.json: prompts, replies, minutes\n"
    "between them, re-ask episodes labelled) through keel hook, as Claude Code and\n"
    "Codex would run it, and prints per split the false advisories per 100 prompts\n"
    "and the re-ask episodes advised by their 3rd and 4th ask, then the dev split's\n"
    "false advisories and missed episodes (the first 16; --misses: all). Floors: at most 0.5\n"
    "and at least 0.80, or FILE's line: sessions MAX_PER_100 MIN_SHARE.\n";

static const char tools_help[] = "usage: keel tools\n"
                                 "\n"
                                 "List the tools keel serves, a line each: name and title. `keel check TOOL`\n"
                                 "runs one; `keel serve` serves them all over MCP.\n";

static int cmd_eval(int argc, char **argv)
{
    int md = 0, m, misses = 0;
    const char *dir = NULL, *floors = NULL, *traces = NULL, *sessions = NULL;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--markdown"))
            md = 1;
        else if (!strcmp(argv[i], "--misses"))
            misses = 1;
        else if ((m = opt_value(argc, argv, &i, "--traces", &traces))) {
            if (m < 0 || !strncmp(traces, "--", 2)) /* "--traces --misses DIR": an option is no directory */
                return usage_error("--traces needs the traces directory, like tests/traces%s", NULL);
        } else if ((m = opt_value(argc, argv, &i, "--sessions", &sessions))) {
            if (m < 0 || !strncmp(sessions, "--", 2))
                return usage_error("--sessions needs the sessions directory, like tests/sessions%s", NULL);
        } else if (!strcmp(argv[i], "--floors")) {
            if (++i >= argc)
                return usage_error("--floors needs a file%s", NULL);
            floors = argv[i];
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs(eval_help, stdout);
            return 0;
        } else if (!dir)
            dir = argv[i];
        else
            return usage_error("eval takes one corpus directory; unexpected %s", argv[i]);
    }
    if (!dir && !traces && !sessions)
        return usage_error("eval needs the corpus directory, like tests/corpus%s", NULL);
    struct eval_floors fl;
    eval_floors_targets(&fl);
    if (floors && eval_floors_read(floors, &fl) < 0)
        return EXIT_USAGE;
    int rc = dir ? eval_run(dir, md, &fl, misses) : 0;
    if (traces && rc != 64) {
        if (md && dir)
            putchar('\n');
        int t = eval_traces(traces, md, &fl);
        rc = t == 64 ? 64 : rc | t;
    }
    if (sessions && rc != 64) {
        if (md && (dir || traces))
            putchar('\n');
        load_profile();
        int t = eval_sessions(sessions, md, &fl, &profile, misses);
        rc = t == 64 ? 64 : rc | t;
    }
    return rc;
}

static int cmd_tools(void)
{
    for (const struct tool *t = tools_table; t->name; t++) {
        const cJSON *s = tools_schema(t);
        const char *title = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(s, "title"));
        printf("%-24s %s\n", t->name, title ? title : "");
    }
    return 0;
}

static int cmd_profile(int argc, char **argv)
{
    if (argc < 1 || strcmp(argv[0], "check") != 0) {
        if (argc >= 1 && (strcmp(argv[0], "-h") == 0 || strcmp(argv[0], "--help") == 0)) {
            fputs(profile_help, stdout);
            return 0;
        }
        return usage_error("profile takes one subcommand: check%s", NULL);
    }
    if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        fputs(profile_help, stdout);
        return 0;
    }
    if (argc > 1)
        return usage_error("unexpected argument to profile check: %s", argv[1]);
    profile_load(&profile, profile_path);
    cJSON *j = profile_to_json(&profile);
    char *s = cJSON_Print(j);
    cJSON_Delete(j);
    if (s)
        puts(s);
    free(s);
    int problems = profile.unreadable + profile.nproblems;
    if (profile.unreadable)
        fprintf(stderr, "keel: profile %s: %s\n", profile.path, profile.error);
    for (int i = 0; i < profile.nproblems; i++)
        fprintf(stderr, "keel: profile %s: %s\n", profile.path, profile.problems[i]);
    if (!profile.found)
        fprintf(stderr, "keel: no profile at %s; the defaults above apply\n",
                profile.path[0] ? profile.path : "(no HOME)");
    return problems ? 1 : 0;
}

struct flag_name {
    const char *name;
    unsigned bits;
};

/* A comma-separated list of names into the union of their bits; -1 on an unknown name. */
static int parse_names(const char *list, const struct flag_name *names, size_t count, unsigned *bits)
{
    *bits = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        size_t i;
        for (i = 0; i < count && strcmp(w, names[i].name); i++)
            ;
        if (i == count)
            return -1;
        *bits |= names[i].bits;
    }
    return 0;
}

static const struct flag_name expose_names[] = {{"core", TOOL_CORE},
                                                {"guardrail", TOOL_GUARDRAIL},
                                                {"chronometric", TOOL_CHRONO},
                                                {"inspect", TOOL_INSPECT},
                                                {"rules", TOOL_RULES},
                                                {"all", TOOL_ALL},
                                                {"none", 0}};
#define EXPOSE_NAMES  "core, guardrail, chronometric, inspect, rules, all, none"
#define OVERLAY_NAMES "loop, rumination, hyperfocus, sycophancy, rules, all, none"
static const struct flag_name overlay_names[] = {{"rumination", OV_RUMINATION},
                                                 {"hyperfocus", OV_HYPERFOCUS},
                                                 {"sycophancy", OV_SYCOPHANCY},
                                                 {"rules", OV_RULES},
                                                 {"loop", OV_LOOP},
                                                 {"all", OV_ALL},
                                                 {"none", 0}};

/* A header for --url as "Name: value": from "Name: value" itself, or with
 * from_env from "Name=VAR" and the variable's value. NULL with why. The
 * value is never printed: it is often a token. */
static char *header_line(const char *arg, int from_env, const char **why)
{
    static char said[200]; /* what *why says, when it names something */
    const char *sep = strchr(arg, from_env ? '=' : ':');
    const char *value = sep ? sep + 1 : NULL;
    if (sep == arg || !arg[0]) {
        *why = "needs a header name";
        return NULL;
    }
    if (!sep) {
        *why = from_env ? "needs =VAR after the header name" : "needs ': value' after the header name";
        return NULL;
    }
    for (const char *p = arg; p < sep; p++)
        if (!(isalnum((unsigned char)*p) || strchr("!#$%&'*+-.^_`|~", *p))) {
            *why = "has a header name with a character HTTP does not allow";
            return NULL;
        }
    if (from_env) {
        const char *var = value;
        if (!*var) {
            *why = "needs the name of an environment variable after =";
            return NULL;
        }
        if (!(value = getenv(var)) || !*value) { /* the variable's name is said, never its value */
            snprintf(said, sizeof said, "names the environment variable %.100s, which is not set or is empty", var);
            *why = said;
            return NULL;
        }
    } else {
        while (*value == ' ' || *value == '\t')
            value++;
    }
    for (const char *p = value; *p; p++)
        if ((unsigned char)*p < 0x20 && *p != '\t') {
            *why = "has a value with a line break or control character";
            return NULL;
        }
    size_t n = (size_t)(sep - arg) + strlen(value) + 3;
    char *line = malloc(n);
    if (!line) {
        *why = "ran out of memory";
        return NULL;
    }
    snprintf(line, n, "%.*s: %s", (int)(sep - arg), arg, value);
    return line;
}

/* keel wrap's options end at "--" or at the first word that is not one of
 * them, which starts the server's command: some clients (the MCP Inspector's
 * CLI) drop every "--" they pass on. Everything from there on is the
 * server's, untouched, global-looking options included. */
static int cmd_wrap(int argc, char **argv)
{
    struct wrap_opts o = {.max_message_bytes = DEFAULT_MAX_MESSAGE,
                          .groups = TOOL_CORE,
                          .tool_prefix = "keel_",
                          .profile = &profile,
                          .overlay = OV_ALL};
    char **env_add = calloc((size_t)argc + 1, sizeof *env_add);
    char **globs = calloc((size_t)argc + 1, sizeof *globs);
    char **exempt = calloc((size_t)argc + 1, sizeof *exempt);
    char **headers = calloc((size_t)argc + 1, sizeof *headers);
    char **split = NULL;
    int nenv = 0, nheaders = 0, rc = 0;
    o.idle_ms = 300000;
    if (!env_add || !globs || !exempt || !headers) {
        free(env_add);
        free(globs);
        free(exempt);
        free(headers);
        return 1;
    }
    o.model_tools = globs;
    o.loop_exempt = exempt;
    for (int i = 0; i < argc && !o.argv; i++) {
        const char *a = argv[i], *v = NULL;
        int m, g = global_opt(argc, argv, &i, &rc);
        if (g < 0)
            goto out;
        if (g)
            continue;
        if (!strcmp(a, "--") || a[0] != '-' || !a[1]) {
            int at = strcmp(a, "--") ? i : i + 1;
            if (split) {
                rc = usage_error("give the server's command once: either --command-args or the words after it "
                                 "(found both, at %s)",
                                 argv[at < argc ? at : i]);
                goto out;
            }
            if (at >= argc) {
                rc = usage_error("wrap needs a command after --%s", NULL);
                goto out;
            }
            o.argv = argv + at;
        } else if ((m = opt_value(argc, argv, &i, "--command-args", &v))) {
            const char *err = "needs a command string";
            if (m < 0 || split || !(split = argsplit(v, &err))) {
                rc = usage_error("--command-args: %s", split ? "give it once" : err);
                goto out;
            }
        } else if ((m = opt_value(argc, argv, &i, "--url", &v))) {
            if (m < 0 || !v[0] || o.url) {
                rc = usage_error("--url needs the server's MCP endpoint, like https://example.com/mcp (once)%s", NULL);
                goto out;
            }
            if (strncasecmp(v, "http://", 7) && strncasecmp(v, "https://", 8)) {
                rc = usage_error("--url must be http:// or https:// (Streamable HTTP), like https://example.com/mcp%s",
                                 NULL);
                goto out;
            }
            o.url = v;
        } else if ((m = opt_value(argc, argv, &i, "--header", &v)) ||
                   (m = opt_value(argc, argv, &i, "--header-env", &v))) {
            int from_env = !strncmp(a, "--header-env", 12);
            const char *why = m < 0 ? "needs a value" : NULL;
            if (!why)
                headers[nheaders] = header_line(v, from_env, &why);
            if (why) {
                rc = usage_error(
                    from_env ? "--header-env %s (give it as Name=VAR)" : "--header %s (give it as 'Name: value')", why);
                goto out;
            }
            nheaders++;
        } else if ((m = opt_value(argc, argv, &i, "--cacert", &v))) {
            if (m < 0 || !v[0] || access(v, R_OK) < 0) {
                rc = usage_error("--cacert needs a readable CA bundle (PEM)%s", NULL);
                goto out;
            }
            o.cacert = v;
        } else if ((m = opt_value(argc, argv, &i, "--timeout", &v))) {
            char *end;
            long sec = m < 0 ? -1 : strtol(v, &end, 10);
            if (m < 0 || *end || end == v || sec < 0 || sec > 86400) {
                rc = usage_error("--timeout takes seconds from 0 (wait for ever) to 86400%s", NULL);
                goto out;
            }
            o.idle_ms = sec * 1000;
        } else if ((m = opt_value(argc, argv, &i, "--env", &v))) {
            if (m < 0 || !strchr(v, '=') || v[0] == '=') {
                rc = usage_error("--env needs NAME=VALUE%s", NULL);
                goto out;
            }
            env_add[nenv++] = (char *)v;
        } else if ((m = opt_value(argc, argv, &i, "--cwd", &v))) {
            if (m < 0 || !v[0]) {
                rc = usage_error("--cwd needs a directory%s", NULL);
                goto out;
            }
            struct stat cs;
            if (stat(v, &cs) < 0 || !S_ISDIR(cs.st_mode)) { /* said before the server's command is tried */
                rc = usage_error("--cwd %s: no such directory (the server's command would run there)", v);
                goto out;
            }
            o.cwd = v;
        } else if ((m = opt_value(argc, argv, &i, "--expose", &v))) {
            if (m < 0 || !v[0] ||
                parse_names(v, expose_names, sizeof expose_names / sizeof *expose_names, &o.groups) < 0) {
                rc = usage_error("--expose takes a comma-separated list of " EXPOSE_NAMES "%s", NULL);
                goto out;
            }
        } else if ((m = opt_value(argc, argv, &i, "--overlay", &v))) {
            if (m < 0 || !v[0] ||
                parse_names(v, overlay_names, sizeof overlay_names / sizeof *overlay_names, &o.overlay) < 0) {
                rc = usage_error("--overlay takes a comma-separated list of " OVERLAY_NAMES "%s", NULL);
                goto out;
            }
        } else if ((m = opt_value(argc, argv, &i, "--model-tools", &v))) {
            if (m < 0 || !v[0] || !strcmp(v, "--")) { /* "--" begins the server's command */
                rc = usage_error("--model-tools needs a glob, like 'ask_*'%s", NULL);
                goto out;
            }
            globs[o.nmodel_tools++] = (char *)v;
        } else if ((m = opt_value(argc, argv, &i, "--loop-exempt", &v))) {
            if (m < 0 || !v[0] || !strcmp(v, "--")) {
                rc = usage_error("--loop-exempt needs a tool name glob, like 'debug_step*'%s", NULL);
                goto out;
            }
            exempt[o.nloop_exempt++] = (char *)v;
        } else if ((m = opt_value(argc, argv, &i, "--tool-prefix", &v))) {
            if (m < 0 || !v[0] || strlen(v) > 32 ||
                strspn(v,
                       "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                       "0123456789_-.") != strlen(v)) {
                /* a tool's name is letters, digits, _ - and . (MCP) */
                rc = usage_error("--tool-prefix needs a prefix of 1 to 32 letters, digits, _, - or . (like keel_)%s",
                                 NULL);
                goto out;
            }
            o.tool_prefix = v;
        } else if (!strcmp(a, "--restart")) {
            o.restart_max = 5;
        } else if (!strncmp(a, "--restart=", 10)) {
            char *end;
            long n = strtol(a + 10, &end, 10);
            if (*end || end == a + 10 || n < 0 || n > 1000) {
                rc = usage_error("--restart=N takes a count from 0 to 1000%s", NULL);
                goto out;
            }
            o.restart_max = (int)n;
        } else if ((m = opt_value(argc, argv, &i, "--max-message-bytes", &v))) {
            if (m < 0 || parse_size(v, &o.max_message_bytes) < 0) {
                rc = usage_error("--max-message-bytes needs a size from 1K to 4G, like 16M%s", NULL);
                goto out;
            }
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(wrap_help, stdout);
            goto out;
        } else {
            rc = usage_error("unknown option for wrap: %s (see keel help wrap; the server's command comes after "
                             "the options, or after --)",
                             a);
            goto out;
        }
    }
    if (split)
        o.argv = split;
    if (o.url && o.argv) {
        rc = usage_error("give the server either as --url or as a command, not both (found the command %s)", o.argv[0]);
        goto out;
    }
    if (!o.url && (nheaders || o.cacert)) {
        rc = usage_error("--header, --header-env and --cacert go with --url%s", NULL);
        goto out;
    }
    if (!o.argv && !o.url) {
        rc = usage_error("wrap needs the server's command: keel wrap [OPTIONS] [--] CMD [ARGS...], or --url URL%s",
                         NULL);
        goto out;
    }
    o.env_add = env_add;
    o.headers = headers;
    load_profile();
    load_rules();
    rc = o.url ? wrap_url_run(&o) : wrap_run(&o);
    ruleset_free(&rules);
out:
    for (int k = 0; k < nheaders; k++)
        free(headers[k]);
    free(headers);
    free(env_add);
    free(globs);
    free(exempt);
    free(split);
    return rc;
}

static int cmd_serve(int argc, char **argv)
{
    struct serve_opts o = {DEFAULT_MAX_MESSAGE, TOOL_ALL, &profile, NULL};
    for (int i = 0; i < argc; i++) {
        const char *v = NULL;
        int m = opt_value(argc, argv, &i, "--max-message-bytes", &v);
        if (m) {
            if (m < 0 || parse_size(v, &o.max_message_bytes) < 0)
                return usage_error("--max-message-bytes needs a size from 1K to 4G, like 16M%s", NULL);
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            fputs(serve_help, stdout);
            return 0;
        } else {
            return usage_error("unknown option for serve: %s", argv[i]);
        }
    }
    load_profile();
    load_rules();
    int rc = serve_run(&o);
    ruleset_free(&rules);
    return rc;
}

/* --- the commands ------------------------------------------------------------ */

static const char *self_path; /* argv[0]: keel install writes where keel is */

static int cmd_install(int argc, char **argv)
{
    return install_main(argc, argv, self_path, 0);
}

static int cmd_uninstall(int argc, char **argv)
{
    return install_main(argc, argv, self_path, 1);
}

static int cmd_pins(int argc, char **argv)
{
    return pins_main(argc, argv);
}

static int cmd_tools_args(int argc, char **argv)
{
    if (argc > 0 && (!strcmp(argv[0], "-h") || !strcmp(argv[0], "--help"))) {
        fputs(tools_help, stdout);
        return 0;
    }
    return argc > 0 ? usage_error("tools takes no argument; unexpected %s", argv[0]) : cmd_tools();
}

/* Every command: its name, its help, what runs it, and whether it is a relay
 * (serve, wrap: logs at info; the rest at warn, for a person reading). */
struct command {
    const char *name, *help;
    int (*run)(int argc, char **argv);
    int relay;
};
static const struct command commands[] = {
    {"wrap", wrap_help, cmd_wrap, 1},
    {"serve", serve_help, cmd_serve, 1},
    {"check", check_help, cmd_check, 0},
    {"hook", hook_help, cmd_hook, 0},
    {"install", install_help, cmd_install, 0},
    {"uninstall", install_help, cmd_uninstall, 0},
    {"inspect", inspect_help, cmd_inspect, 0},
    {"eval", eval_help, cmd_eval, 0},
    {"tools", tools_help, cmd_tools_args, 0},
    {"profile", profile_help, cmd_profile, 0},
    {"rules", rules_help, cmd_rules, 0},
    {"pins", pins_help, cmd_pins, 0},
    {"help", usage_text, NULL, 0},
};

static const struct command *command_named(const char *name)
{
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (!strcmp(commands[i].name, name))
            return &commands[i];
    return NULL;
}

/* 1 when argv runs keel hook with an EVENT (its first two words that are
 * not options, or values of the options every command takes, are "hook" and
 * another): then a mistake in the options is said on stderr and keel exits
 * 0, as keel hook promises its host. */
static int hook_with_event(int argc, char **argv)
{
    static const char *const valued[] = {"--log-level", "--rules", "--profile", "--host"};
    int words = 0, hook = 0;
    for (int i = 1; i < argc && words < 2; i++) {
        if (argv[i][0] == '-') {
            for (size_t v = 0; v < sizeof valued / sizeof *valued; v++)
                if (!strcmp(argv[i], valued[v]) && i + 1 < argc) {
                    i++; /* its value (missing: global_opt says so) */
                    break;
                }
            continue;
        }
        hook |= words == 0 && !strcmp(argv[i], "hook");
        words++;
    }
    return hook && words == 2;
}

/* What a command printed must have been written: a full disk or a closed
 * pipe behind stdout is an input/output failure (exit 1, said on stderr),
 * never a silent success. Registered first, so it runs last. */
static void stdout_written(void)
{
    if (fflush(stdout) == 0 && !ferror(stdout))
        return;
    int err = errno;
    if (err == EPIPE) /* the reader left (| head): nobody to tell, and the work itself was done */
        return;
    fprintf(stderr, "keel: cannot write to standard output: %s\n", strerror(err ? err : EIO));
    _exit(1);
}

int main(int argc, char **argv)
{
    atexit(stdout_written);
    /* A file-size limit (ulimit -f) makes a write fail with EFBIG, which keel
     * reports, rather than kill it midway; a server keel starts gets the
     * default back (child.c). */
    signal(SIGXFSZ, SIG_IGN);
    /* A reader that leaves early (keel install | head) must not stop keel
     * between two clients' files: a write to it fails instead (EPIPE), and
     * the work goes on. A server keel starts gets the default back (child.c). */
    signal(SIGPIPE, SIG_IGN);
    /* Global options may come before or after the command; take them out
     * first, except after wrap's command word: the rest of its line may hold
     * the server's own command, which keel wrap reads itself (cmd_wrap). */
    int k = 1, rc = 0, rest = 0;
    hook_usage = hook_with_event(argc, argv);
    for (int i = 1; i < argc; i++) {
        if (rest || (k > 1 && !strcmp(argv[i], "--"))) {
            argv[k++] = argv[i];
            rest = 1;
            continue;
        }
        int g = global_opt(argc, argv, &i, &rc);
        if (g < 0)
            return rc;
        if (g)
            continue;
        if (k == 1 && !strcmp(argv[i], "wrap"))
            rest = 1;
        argv[k++] = argv[i];
    }
    argv[k] = NULL; /* exec reads the server's argv up to here */
    argc = k;
    if (argc < 2) {
        fputs(usage_text, stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0) {
        fputs(usage_text, stdout);
        return 0;
    }
    if (strcmp(cmd, "-V") == 0 || strcmp(cmd, "--version") == 0) {
        printf("keel %s\n", KEEL_VERSION);
        return 0;
    }
    const struct command *c = command_named(cmd);
    if (strcmp(cmd, "help") == 0) {
        if (argc < 3 || !strcmp(argv[2], "-h") || !strcmp(argv[2], "--help")) {
            fputs(usage_text, stdout);
            return 0;
        }
        const struct command *h = command_named(argv[2]);
        if (h) {
            fputs(h->help, stdout);
            return 0;
        }
        char msg[400];
        int k = snprintf(msg, sizeof msg, "no help for %.80s: the commands are", argv[2]);
        for (size_t i = 0; i + 1 < sizeof commands / sizeof *commands && k > 0 && (size_t)k < sizeof msg; i++)
            k += snprintf(msg + k, sizeof msg - (size_t)k, "%s %s", i ? "," : "", commands[i].name);
        return usage_error("%s", msg);
    }
    if (!c)
        return usage_error("unknown command: %s", cmd);
    /* A relay's log is for whoever runs it; a one-shot command's stderr is read
     * by a person, so it says only what went wrong. */
    log_default_level(c->relay ? LOG_INFO : LOG_WARN);
    self_path = argv[0];
    return c->run(argc - 2, argv + 2);
}
