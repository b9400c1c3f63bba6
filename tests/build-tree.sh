#!/usr/bin/env bash
# Copy the collection's files into DIR/ansible_collections/ascend/inference,
# the layout ansible-test and the collection loader need. Prints that path.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
dest="${1:?usage: build-tree.sh DIR}/ansible_collections/ascend/inference"
rm -rf "$dest"
mkdir -p "$dest"
cd "$repo"
if git rev-parse --git-dir >/dev/null 2>&1; then
  # Tracked files plus new ones not committed yet; ignored files stay out.
  # Deleted-but-tracked files are skipped.
  git ls-files -z --cached --others --exclude-standard \
    | while IFS= read -r -d '' f; do
        case $f in collections/*) continue ;; esac  # the link back to the checkout
        if [ -e "$f" ] || [ -L "$f" ]; then printf '%s\0' "$f"; fi
      done \
    | tar --null -T - -cf - | tar -xf - -C "$dest"
else
  tar --exclude=./.venv --exclude=./.cache --exclude=./.git --exclude=./collections -cf - . | tar -xf - -C "$dest"
fi
echo "$dest"
