#!/usr/bin/env bash
# The benchmarks, one command each (Debian 12, root; installs what they need):
#   bench/run.sh [--nodes 2,4,8] [--reps 3] [--plan-nodes 256] [--out DIR] [--profile] [--mitogen]
#       the deploy against the seeds done by hand (bench/bench.py): DIR/results.md, results.svg,
#       results.json. --nodes takes 1 to 32 nodes (2,4,8,16 for every target of the issue);
#       --mitogen also runs the deploy and the no-op deploy with Mitogen's strategy, from
#       .cache/bench-mitogen (installed here, only then: Mitogen is not a requirement of the collection)
#   bench/run.sh --fanout [--nodes 2,4,8] [--reps 3] [--size MB] [--rate 200mbit] [--modes M,..] [-e NAME=VALUE] [--out DIR]
#       the model copy: pipelined, fan-out, a plain copy and the no-op run (bench/fanout.py): DIR/fanout.md
#   bench/run.sh --designs [--nodes 4,8] [--reps 3] [--size MB] [--rate 200mbit] [--out DIR]
#       two pipelined designs raw, a chain of stream tools against an aria2 swarm (bench/designs.py):
#       DIR/designs.md
# DIR defaults to .cache/bench/<date>/.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
# Mitogen for --mitogen, one version (0.3.54 sets no upper bound on ansible-core; tried with 2.19).
mitogen_version=0.3.54
program=bench.py
if [ "${1:-}" = --fanout ]; then
  program=fanout.py
  shift
elif [ "${1:-}" = --designs ]; then
  program=designs.py
  shift
fi
mitogen=
for arg in "$@"; do
  if [ "$arg" = --mitogen ]; then
    mitogen=1
  fi
done
if [ -n "$mitogen" ] && [ "$program" != bench.py ]; then
  echo "bench/run.sh: --mitogen is for the deploy benchmark, not --fanout" >&2
  exit 2
fi
"$repo/tests/run.sh" setup >&2
"$repo/tests/sim/setup-host.sh" >&2
if [ -n "$mitogen" ]; then
  target="$repo/.cache/bench-mitogen"
  if [ ! -d "$target/mitogen-$mitogen_version.dist-info" ]; then
    rm -rf "$target"
    "$repo/.venv/bin/pip" install --quiet --target "$target" "mitogen==$mitogen_version" >&2
  fi
fi
image=$("$repo/bench/build-image.sh")
out="$repo/.cache/bench/$(date -u +%Y%m%d-%H%M%S)"
exec "$repo/.venv/bin/python" "$repo/bench/$program" --image "$image" --out "$out" "$@"
