#!/usr/bin/env bash
# What `antsibull-changelog release` would write into CHANGELOG.md now, from the fragments
# (run on a copy of the collection: a release consumes the fragments). Prints the markdown.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
bin=${ASCEND_VENV:-$repo/.venv}/bin
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$repo/tests/build-tree.sh" "$work" >/dev/null
cd "$work/ansible_collections/ascend/inference"
version=$(sed -n 's/^version: *//p' galaxy.yml)
PATH="$bin:$PATH" ANSIBLE_COLLECTIONS_PATH="$work" antsibull-changelog release --version "$version" >/dev/null 2>&1 \
  || PATH="$bin:$PATH" ANSIBLE_COLLECTIONS_PATH="$work" antsibull-changelog release --version "$version"
cat CHANGELOG.md
