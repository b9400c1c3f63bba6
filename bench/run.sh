#!/usr/bin/env bash
# The benchmarks, one command each (Debian 12, root; installs what they need):
#   bench/run.sh [--nodes 2,4,8] [--reps 3] [--plan-nodes 256] [--out DIR] [--profile]
#       the deploy against the seeds done by hand (bench/bench.py): DIR/results.md
#   bench/run.sh --fanout [--nodes 2,4,8] [--reps 3] [--size MB] [--rate 200mbit] [--out DIR]
#       the model copy, fan-out against a plain copy (bench/fanout.py): DIR/fanout.md
# DIR defaults to .cache/bench/<date>/.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
"$repo/tests/run.sh" setup >&2
"$repo/tests/sim/setup-host.sh" >&2
image=$("$repo/bench/build-image.sh")
out="$repo/.cache/bench/$(date -u +%Y%m%d-%H%M%S)"
program=bench.py
if [ "${1:-}" = --fanout ]; then
  program=fanout.py
  shift
fi
exec "$repo/.venv/bin/python" "$repo/bench/$program" --image "$image" --out "$out" "$@"
