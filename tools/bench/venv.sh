#!/usr/bin/env bash
# Makes (once) the Python virtual environment with matplotlib for the plots.
# Usage: tools/bench/venv.sh DIR   -> prints DIR/bin/python
set -euo pipefail
dir=$1
if [ ! -x "$dir/bin/python" ] || ! "$dir/bin/python" -c 'import matplotlib' 2>/dev/null; then
	python3 -m venv "$dir" >/dev/null 2>&1 || {
		"$(dirname "$0")/../deps.sh" venv
		python3 -m venv "$dir"
	}
	"$dir/bin/pip" install -q --disable-pip-version-check matplotlib >&2
fi
echo "$dir/bin/python"
