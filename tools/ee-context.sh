#!/usr/bin/env bash
# The execution environment's build context: the collection built from this checkout, then
# `ansible-builder create` (offline: it only writes files). Usage: tools/ee-context.sh DIR
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: ee-context.sh DIR}
bin=${ASCEND_VENV:-$repo/.venv}/bin
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$repo"/execution-environment/execution-environment.yml "$repo"/execution-environment/requirements.yml "$work"/
"$bin/ansible-galaxy" collection build --output-path "$work/built" "$repo" >&2
mv "$work"/built/ascend-inference-*.tar.gz "$work/ascend-inference.tar.gz"
"$bin/ansible-builder" create --file "$work/execution-environment.yml" --context "$out" --output-filename Containerfile >&2
echo "$out"
