#!/bin/sh
# demo.sh: a scripted MCP session through `keel wrap` around a small example
# server (notes-server.mjs): the server's tools and keel's side by side, each
# guardrail firing and not firing, and the session tools.
# Usage: examples/demo.sh [path/to/keel]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
KEEL=${1:-$here/../build/keel}
# The session is dated 16 May 2026, 11:45 in Dublin; keel reads its clock from KEEL_NOW.
export KEEL_NOW=2026-05-16T11:45:00+01:00 TZ=Europe/Dublin
# A throwaway state directory and no profile, so the demo never touches yours.
KEEL_STATE_DIR=$(mktemp -d)
export KEEL_STATE_DIR KEEL_PROFILE="$KEEL_STATE_DIR/no-profile.yaml"
trap 'rm -rf "$KEEL_STATE_DIR"' EXIT
echo "keel wrap -- node examples/notes-server.mjs"
"$KEEL" --log-level warn wrap -- node "$here/notes-server.mjs" < "$here/demo-session.jsonl" |
    node "$here/demo-format.mjs" "$here/demo-session.jsonl"
