#!/usr/bin/env bash
# The collection's docsite: antsibull-docs' Sphinx project for ascend.inference (sphinx-init, then its
# plugin and role pages), the topic pages of docs/ added (Markdown, through MyST), built with warnings as
# errors. Offline: intersphinx reads an inventory made from docs/docsite/ansible_devel.inv.txt.
#   tools/docsite.sh [OUT]    the site in OUT/html (default .cache/docsite); the lint stage runs it
# Needs antsibull-docs, sphinx, sphinx-ansible-theme and myst-parser (tests/requirements.txt).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$repo/.cache/docsite}
rm -rf "$out"
mkdir -p "$out/collections/ansible_collections/ascend"
ln -s "$repo" "$out/collections/ansible_collections/ascend/inference"
export ANSIBLE_COLLECTIONS_PATH="$out/collections"
site="$out/site"
mkdir -m 0755 "$site"  # antsibull-docs writes only into a directory writable by its owner alone

antsibull-docs sphinx-init --use-current --fail-on-error --dest-dir "$site" \
  --index-rst-source "$repo/docs/docsite/index.rst" --project ascend.inference \
  --title "ascend.inference" ascend.inference >/dev/null
mkdir -p "$site/rst"
chmod og-w "$site/rst"
antsibull-docs --config-file "$site/antsibull-docs.cfg" collection --use-current --fail-on-error \
  --dest-dir "$site/rst" ascend.inference

# The topic pages, as they are in the repository (their links between each other resolve as on GitHub).
(cd "$repo" && find docs -name '*.md' -print0 | xargs -0 cp --parents -t "$site/rst")

python3 - "$repo/docs/docsite/ansible_devel.inv.txt" "$site/ansible_devel.inv" <<'PY'
import sys, zlib
entries = []
for line in open(sys.argv[1], encoding="utf-8"):
    if line.strip() and not line.startswith("#"):
        name, role, uri, title = line.split(None, 3)
        entries.append("%s %s -1 %s %s\n" % (name, role, uri, title.strip()))
header = "# Sphinx inventory version 2\n# Project: Ansible\n# Version: devel\n" \
         "# The remainder of this file is compressed using zlib.\n"
with open(sys.argv[2], "wb") as inventory:
    inventory.write(header.encode() + zlib.compress("".join(entries).encode()))
PY

cat >>"$site/conf.py" <<'PY'

# tools/docsite.sh: the docs/ pages in Markdown; no site to reach.
extensions.append('myst_parser')
source_suffix = {'.rst': 'restructuredtext', '.md': 'markdown'}
myst_heading_anchors = 3
# Links from docs/ into the repository (a role, a test) are not pages of the site; tools/check_links.py
# checks every relative link instead.
suppress_warnings = ['myst.xref_missing']
intersphinx_mapping = {
    'ansible_devel': ('https://docs.ansible.com/projects/ansible/devel/',
                      __import__('os').path.join(__import__('os').path.dirname(__file__), 'ansible_devel.inv')),
}
PY

sphinx-build -q -b html -c "$site" -W --keep-going "$site/rst" "$out/html"
echo "docsite: $out/html/index.html"
