#!/bin/sh
# valgrind-session.sh: keel under valgrind; any memory error or leak fails
# (TAP). PART, the third argument, picks one part (each its own ctest test):
#   serve    a scripted session through keel serve, one keel check per tool,
#            keel hook, a broken state file
#   wrap     keel wrap of a command (both eras) and of a Streamable HTTP server
#   install  keel install and uninstall in a home of their own
set -u
VALGRIND=$1
KEEL=$2
PART=${3:-serve}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
big=$(head -c 70000 /dev/zero | tr '\0' x)
cat > "$tmp/session" <<JSON
{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"v","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":1,"method":"tools/list"}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"check_rumination","arguments":{"current_prompt":"Is the plan okay?","history":[{"text":"is the plan ok","at":"2026-05-16T10:00:00Z"},{"text":"plan okay?","at":"2026-05-16T10:10:00Z"},{"text":"Ist der Plan in Ordnung? 计划可以吗","at":"2026-05-16T10:20:00Z"}],"threshold_count":2}}}
{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"check_hyperfocus","arguments":{"chronometric_snapshot":{"open_session":{"started_at":"2026-05-16T09:00:00+01:00","intent":"x"},"now":"2026-05-16T18:40:00+01:00"},"end_of_day_local":"18:00"}}}
{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"check_sycophancy","arguments":{"candidate_response":"Great question! You’re absolutely right. Brilliant.","recent_user_messages":[{"text":"is this okay?"},{"text":"are you sure?"},{"text":"is that right?"}]}}}
{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"check_rumination","arguments":{"current_prompt":"x","history":"no"}}}
{"jsonrpc":"2.0","id":6,"method":"nope"}
garbage
[1,2]
{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"check_rumination","arguments":{"current_prompt":"$big","history":[]}}}
{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"mark_session_start","arguments":{"intent":"valgrind"}}}
{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"get_time_context","arguments":{}}}
{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"request_break_if_needed","arguments":{"threshold_minutes":1}}}
{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"idle_status","arguments":{}}}
{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"mark_session_end","arguments":{"summary":"done"}}}
{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"mark_session_end","arguments":{}}}
{"jsonrpc":"2.0","id":14,"method":"ping"}
{"jsonrpc":"2.0","id":15,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}
{"jsonrpc":"2.0","id":16,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"check_hyperfocus","arguments":{"chronometric_snapshot":{"open_session":{"started_at":"2026-05-16T09:00:00+01:00","elapsed_seconds":5000},"now":"2026-05-16T18:40:00+01:00","idle_signal":"switched_away"}}}}
{"jsonrpc":"2.0","id":17,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"1900-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}
JSON
cat > "$tmp/profile.yaml" <<YAML
chronometric:
  end_of_day_local: "18:00"
  weekday_overrides: {friday: {end_of_day_local: "16:00", zones: {midday: "11:00-15:00"}}}
privacy: {os_idle_consent: true, idle_probe_command: "echo 5000"}
unknown_key: 1
YAML
export KEEL_STATE_DIR="$tmp/state" KEEL_PROFILE="$tmp/profile.yaml"
n=0; failed=0
run() {
    n=$((n + 1))
    "$VALGRIND" -q ${VG_EXTRA:-} --leak-check=full --errors-for-leak-kinds=definite,indirect --error-exitcode=99 \
        "$KEEL" --log-level error "$@" > "$tmp/out" 2> "$tmp/err"
    rc=$?
    # 0 is a result, 1 problems found, 2 a tool error; 99 is valgrind's verdict.
    if [ "$rc" -le 2 ]; then
        echo "ok $n - valgrind clean: keel $1 ${2:-}"
    else
        failed=$((failed + 1)); echo "not ok $n - valgrind clean: keel $1 ${2:-} (exit $rc)"; sed 's/^/#   /' "$tmp/err" | head -80
    fi
}
# Input that stays open a while after its last line, as a client waiting for
# its answers does (a FIFO, not a pipe into run: run must count in this shell).
slow() { mkfifo "$3"; (cat "$1"; sleep "$2") > "$3" & }
if [ "$PART" = serve ]; then
run serve --max-message-bytes 64K < "$tmp/session"
n=$((n + 1))
lines=$(wc -l < "$tmp/out")
if [ "$lines" -eq 20 ] && tail -n 1 "$tmp/out" | grep -q '"id":17.*-32022'; then
    echo "ok $n - the session got its 20 answers under valgrind (the last -32022)"
else
    failed=$((failed + 1)); echo "not ok $n - the session got its 20 answers under valgrind (got $lines)"
fi
echo '{"current_prompt":"a b c","history":[{"text":"a b c","at":"2026-05-16T10:00:00Z"}]}' > "$tmp/args"
run check check_rumination --json "$(cat "$tmp/args")"
run check check_hyperfocus --json '{"chronometric_snapshot":{"open_session":null,"now":"2026-05-16T10:00:00Z"},"escalation_thresholds":{"gentle":5,"nudge":4}}'
run check check_sycophancy --json '{"candidate_response":"I couldn'"'"'t agree more, that is perfect."}'
run profile check
# The rules' JIT reads a few bytes past a subject: every subject is padded.
run check submit_message --json '{"message":"Great question! Should I run the linter on the whole repo? I hope this helps!"}'
run rules test
# keel hook: a prompt against a transcript, a reply through a person's reject rule.
h="$(dirname "$0")/hooks"
printf '{"hook_event_name":"UserPromptSubmit","session_id":"v","transcript_path":"%s","prompt":"Is the orders migration safe to run on Friday afternoon?"}' "$h/claude-reask.jsonl" > "$tmp/hookin"
run hook UserPromptSubmit < "$tmp/hookin"
echo '{"hook_event_name":"Stop","session_id":"v","stop_hook_active":false,"last_assistant_message":"Great question! Done. TODO: tests."}' > "$tmp/hookin"
run --rules "$h/rules" hook Stop < "$tmp/hookin"
echo '{version' > "$tmp/state/state.json"
run check get_time_context --json '{}'
fi
if [ "$PART" = wrap ]; then
printf '%s\n' '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"v","version":"1"}}}' \
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"key AKIAIOSFODNN7EXAMPLE, \\u001b[31mred\\u001b[0m, caf\\u00e9"}}}' > "$tmp/wrapped"
run wrap -- node "$(dirname "$0")/fixtures/upstream.mjs" normal < "$tmp/wrapped"
# The modern era through the wrap: discover, an input_required answer, keel's own tool.
m='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}'
printf '%s\n' "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{$m}}" \
    "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{$m}}" \
    "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{$m,\"name\":\"confirm\",\"arguments\":{\"action\":\"x\"}}}" \
    "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{$m,\"name\":\"get_time_context\",\"arguments\":{}}}" > "$tmp/modern"
slow "$tmp/modern" 3 "$tmp/modern.in"
run wrap -- node "$(dirname "$0")/fixtures/modern.mjs" < "$tmp/modern.in"
# A remote server over Streamable HTTP: JSON and event-stream answers, an HTTP
# error, a body cut short, a redirect, a session renewed, DELETE on exit.
mkfifo "$tmp/fxin"
node "$(dirname "$0")/fixtures/httpfault.mjs" < "$tmp/fxin" > "$tmp/fxport" &
fx=$!
exec 9> "$tmp/fxin"
i=0; while [ ! -s "$tmp/fxport" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
port=$(sed 's/[^0-9]//g' "$tmp/fxport")
c() { printf '{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"%s","arguments":%s}}\n' "$1" "$2" "$3"; }
{ printf '%s\n' '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"v","version":"1"}}}' \
      '{"jsonrpc":"2.0","method":"notifications/initialized"}'
  c 1 echo '{"text":"a"}'; c 2 echo_sse '{"text":"b"}'; c 3 fail500 '{}'; c 4 cut_body '{}'; c 5 redirect_same '{}'
  c 6 expire '{"once":true}'; c 7 get_time_context '{}'; } > "$tmp/http"
slow "$tmp/http" 4 "$tmp/http.in"
run wrap --url "http://127.0.0.1:$port/mcp" < "$tmp/http.in"
n=$((n + 1))
if [ "$(grep -c '"id":[1-7],' "$tmp/out")" -eq 7 ]; then
    echo "ok $n - every request through --url answered under valgrind"
else
    failed=$((failed + 1)); echo "not ok $n - every request through --url answered under valgrind"; sed 's/^/#   /' "$tmp/out" | head -20
fi
exec 9>&-
kill "$fx" 2>/dev/null
wait "$fx" 2>/dev/null
fi
if [ "$PART" = install ]; then
# Every kind of file install edits: JSON with servers and hooks, JSON with
# comments, TOML.
home="$tmp/home"
mkdir -p "$home/.claude" "$home/.cursor" "$home/.codex"
printf '{"mcpServers":{"notes":{"command":"npx","args":["-y","notes-server"],"env":{"TOKEN":"t"}},"web":{"type":"http","url":"https://example.com/mcp"}}}\n' > "$home/.claude.json"
printf '{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"echo hi"}]}]}}\n' > "$home/.claude/settings.json"
printf '{\n  "mcpServers": {"fs": {"command": "node", "args": ["fs.js"]}}\n}\n' > "$home/.cursor/mcp.json"
mkdir -p "$home/.gemini"
printf '{\n  // the person'"'"'s comment\n  "mcpServers": {"web": {"command": "node", "args": ["web.js"]}}\n}\n' > "$home/.gemini/settings.json"
printf '[mcp_servers.docs]\ncommand = "uvx"\nargs = ["docs-server"]\n' > "$home/.codex/config.toml"
export HOME="$home" # the last part: nothing after it needs the real one
run install
grep -q '"wrap"' "$home/.claude.json" && grep -q '"wrap"' "$home/.cursor/mcp.json" && grep -q '"wrap"' "$home/.codex/config.toml" &&
    grep -q '"wrap"' "$home/.gemini/settings.json" &&
    grep -q 'hook' "$home/.claude/settings.json" && wrapped=1
run install
run uninstall
n=$((n + 1))
if [ "${wrapped:-0}" = 1 ] && grep -q '"command":"npx"' "$home/.claude.json" && grep -q 'command = "uvx"' "$home/.codex/config.toml" && ! grep -q 'keel' "$home/.claude.json" "$home/.cursor/mcp.json" "$home/.codex/config.toml" "$home/.gemini/settings.json"; then
    echo "ok $n - install wrapped each file's servers, and uninstall left them as they were"
else
    failed=$((failed + 1)); echo "not ok $n - install wrapped each file's servers, and uninstall left them as they were"
fi
fi
echo "1..$n"
echo "# $((n - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
