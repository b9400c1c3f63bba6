#!/usr/bin/env bash
# The deploy benchmark, one command (Debian 12, root; installs what it needs):
#   bench/run.sh [--nodes 2,4,8] [--reps 3] [--plan-nodes 256] [--out DIR] [--profile]
# Writes DIR/results.md (default .cache/bench/<date>/); see bench/bench.py.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
"$repo/tests/run.sh" setup >&2
"$repo/tests/sim/setup-host.sh" >&2
image=$("$repo/bench/build-image.sh")
out="$repo/.cache/bench/$(date -u +%Y%m%d-%H%M%S)"
exec "$repo/.venv/bin/python" "$repo/bench/bench.py" --image "$image" --out "$out" "$@"
