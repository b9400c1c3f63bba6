"""The variable tables of docs/, rendered from the roles' argument specs (their one source).

    python3 tools/role_docs.py          rewrite the generated parts of the pages
    python3 tools/role_docs.py --check  exit 1, with a diff, when a page is not what the specs give

Each generated part sits between `<!-- BEGIN <name> -->` and `<!-- END <name> -->`:
`cluster-variables` in docs/layouts.md (the plan role's `ascend_*` options, set in group_vars) and
`role-variables` in docs/variables.md (every other option of every role entry point).
"""

import argparse
import difflib
import json
import os
import re
import sys

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MARKER = "<!-- %s %s (tools/role_docs.py renders this from roles/*/meta/argument_specs.yml) -->"
# Ansible's documentation markup, as markdown.
MARKUP = [
    (re.compile(r"\bL\(([^,()]+),\s*([^()]+)\)"), r"[\1](\2)"),
    (re.compile(r"\b(?:RV|[CMVOPE])\(([^()]+)\)"), r"`\1`"),
    (re.compile(r"\bI\(([^()]+)\)"), r"*\1*"),
    (re.compile(r"\bB\(([^()]+)\)"), r"**\1**"),
    (re.compile(r"\bU\(([^()]+)\)"), r"\1"),
]
LEFT_OVER = re.compile(r"\b(?:RV|[A-Z])\(")


def markdown(text):
    for pattern, replacement in MARKUP:
        text = pattern.sub(replacement, text)
    if LEFT_OVER.search(text):
        # Markup this converter does not know (or nested markup) would reach the pages as it is.
        raise SystemExit("tools/role_docs.py cannot render this markup: %r" % text)
    return text


def cell(text):
    return text.replace("|", "\\|").replace("\n", " ")


def description(option):
    parts = option.get("description", "")
    parts = [parts] if isinstance(parts, str) else parts
    text = " ".join(markdown(" ".join(part.split())) for part in parts)
    if option.get("choices"):
        text += " One of %s." % ", ".join("`%s`" % choice for choice in option["choices"])
    return text


def kind(option):
    name = option.get("type", "str")
    return "%s of %s" % (name, option["elements"]) if option.get("elements") else name


def default(option):
    if option.get("required"):
        return "required"
    if "default" not in option:
        return "-"
    value = option["default"]
    if isinstance(value, str):
        return "`%s`" % value if value else '`""`'
    return "`%s`" % json.dumps(value)


def table(options, names):
    lines = ["| variable | type | default | meaning |", "|---|---|---|---|"]
    for name in names:
        option = options[name]
        lines.append("| `%s` | %s | %s | %s |" % (name, kind(option), cell(default(option)), cell(description(option))))
    return lines


# The order a deploy runs them in; a role not listed here comes after, by name.
ORDER = ["plan", "cann", "model", "preflight", "npu_network", "hostnames", "pyacl", "node_env", "firewall", "service_account",
         "ray_cluster", "serve", "engine_container"]


def load_specs(roles_dir):
    specs = {}
    for role in sorted(os.listdir(roles_dir), key=lambda name: (ORDER.index(name) if name in ORDER else len(ORDER), name)):
        path = os.path.join(roles_dir, role, "meta", "argument_specs.yml")
        if os.path.exists(path):
            with open(path) as handle:
                specs[role] = yaml.safe_load(handle)["argument_specs"]
    return specs


def cluster_variables(specs):
    options = specs["plan"]["main"].get("options") or {}
    return "\n".join(table(options, [name for name in options if name.startswith("ascend_")]))


def role_variables(specs):
    lines = []
    for role, entries in specs.items():
        main = entries.get("main", {})
        options = main.get("options") or {}
        if role == "plan":
            options = {name: spec for name, spec in options.items() if not name.startswith("ascend_")}
        lines += ["", "## `%s`" % role, "", markdown(main.get("short_description", "")).rstrip(".") + "."]
        if options:
            lines += [""] + table(options, list(options))
        elif role == "plan":
            lines += ["", "Its variables are the cluster variables ([Inventory and layouts](layouts.md))."]
        else:
            lines += ["", "No variables of its own."]
        for entry, spec in entries.items():
            if entry == "main":
                continue
            entry_options = spec.get("options") or {}
            lines += ["", "Entry point `%s` (`tasks_from: %s`): %s." % (entry, entry, markdown(spec.get("short_description", "")))]
            # Options the entry point shares with main mean the same; only the others get a table.
            own = [name for name in entry_options if name not in options]
            shared = [name for name in entry_options if name in options]
            if shared:
                lines[-1] += " Reads %s as `main` does." % ", ".join("`%s`" % name for name in shared)
            if own:
                lines += [""] + table(entry_options, own)
    return "\n".join(lines[1:])


# Which page holds which generated part.
PAGES = (("docs/layouts.md", "cluster-variables", cluster_variables),
         ("docs/variables.md", "role-variables", role_variables))


def render(page, name, body):
    begin, end = MARKER % ("BEGIN", name), MARKER % ("END", name)
    pattern = re.compile(re.escape(begin) + r"\n.*?" + re.escape(end), re.S)
    if not pattern.search(page):
        raise SystemExit("the page has no %r ... %r part" % (begin, end))
    return pattern.sub(lambda _: "%s\n%s\n%s" % (begin, body, end), page)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report whether the pages are up to date")
    parser.add_argument("--repo", default=REPO)
    args = parser.parse_args(argv)
    specs = load_specs(os.path.join(args.repo, "roles"))
    status = 0
    for relative, name, render_part in PAGES:
        path = os.path.join(args.repo, relative)
        with open(path) as handle:
            current = handle.read()
        wanted = render(current, name, render_part(specs))
        if current == wanted:
            continue
        if args.check:
            sys.stdout.writelines(difflib.unified_diff(current.splitlines(True), wanted.splitlines(True),
                                                       relative, relative + " (from the argument specs)"))
            print("%s's variable tables differ from the argument specs: run make docs (python3 tools/role_docs.py)"
                  % relative, file=sys.stderr)
            status = 1
            continue
        with open(path, "w") as handle:
            handle.write(wanted)
    return status


if __name__ == "__main__":
    sys.exit(main())
