#!/bin/sh
# demo.sh: the scripted session of `make demo` (examples/demo.mjs).
# Usage: examples/demo.sh [path/to/keel]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
exec node "$here/demo.mjs" "${1:-$here/../build/keel}"
