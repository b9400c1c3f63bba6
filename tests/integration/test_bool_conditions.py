# -*- coding: utf-8 -*-
"""Every boolean variable read as a truth value goes through ``| bool`` (issue 39).

``-e name=false`` on the command line gives the *string* "false", which is truthy: a bare ``when: name``,
``{% if name %}``, ``x if name else y``, ``name and ...`` or ``name | ternary(...)`` takes the wrong branch (or,
from ansible-core 2.19, fails as a non-boolean conditional). Arguments of the collection's own modules and
actions are fine bare: their argument specs (and phase.py's settings check) convert "false" themselves.

The boolean variables are every ``type: bool`` option of the roles' argument specs plus SWITCHES, the booleans
the roles set for each other. The static test parses every task file, handler, vars and defaults file and
playbook (yaml.safe_load) and every template with Jinja's own parser, and finds each such variable where it is a
truth value: the whole of a ``when``/``until``/``changed_when``/``failed_when``/``that`` entry, the test of a
``{% if %}`` or of an inline ``if``, an operand of ``and``/``or``/``not``, the input of ``ternary``, or one side
of a comparison with ``true``/``false``. There, the variable (through ``default`` and other filters) must end in
``| bool``.

The runtime test takes each of those operands as written (``firewall_enabled | bool``,
``model_pending | default(false) | bool``, ...) into one generated playbook on localhost and runs it twice, with
``-e name=false`` and ``-e name=true`` for every variable: each operand must be the boolean False, then True.
Only the operand is evaluated, not the whole condition: the rest of a condition reads the plan, the nodes'
facts or registered results, which a generic test cannot make up; the operand is what decides the variable's
part in it. Two ansible-playbook runs take a few seconds.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import json
import os
import subprocess
import sys

import pytest
import yaml
from jinja2 import Environment, nodes
from jinja2.exceptions import TemplateSyntaxError

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)

# Booleans the roles and playbooks set and read themselves, not in any argument spec: the model role's
# model_pending (set_fact, read by the preflight) and its __model_full_check (vars/main.yml).
SWITCHES = ("model_pending", "__model_full_check")

CONDITION_KEYS = ("when", "until", "changed_when", "failed_when", "that")
YAML_FILES = ("roles/*/tasks/*.yml", "roles/*/handlers/*.yml", "roles/*/vars/*.yml", "roles/*/defaults/*.yml",
              "roles/*/meta/main.yml", "playbooks/*.yml", "deploy.yml")
TEMPLATES = ("roles/*/templates/*", "playbooks/templates/*")

ENV = Environment(extensions=["jinja2.ext.do", "jinja2.ext.loopcontrols"])
# Filters that pass a value on without judging it: an operand is the variable through a chain of these and others.
NOT_OPERAND = ("ternary",)


def argument_spec_booleans():
    """{name: [role, ...]} of every type: bool option (suboptions too) of every role's argument specs."""
    found = {}

    def walk(options, role):
        for name, option in (options or {}).items():
            if not isinstance(option, dict):
                continue
            if option.get("type") == "bool":
                found.setdefault(name, set()).add(role)
            walk(option.get("options"), role)
            walk(option.get("suboptions"), role)

    for path in sorted(glob.glob(os.path.join(REPO, "roles", "*", "meta", "argument_specs.yml"))):
        role = path.split(os.sep)[-3]
        with open(path, encoding="utf-8") as handle:
            specs = yaml.safe_load(handle) or {}
        for entry in (specs.get("argument_specs") or {}).values():
            walk((entry or {}).get("options"), role)
    return found


BOOLEANS = sorted(set(argument_spec_booleans()) | set(SWITCHES))


def unparse(node):
    """Jinja source for a simple operand (a name through filters with literal arguments), or None."""
    if isinstance(node, nodes.Name):
        return node.name
    if isinstance(node, nodes.Const):
        value = node.value
        if value is None or isinstance(value, bool):
            return {None: "none", True: "true", False: "false"}[value]
        return repr(value)
    if isinstance(node, nodes.Getattr):
        inner = unparse(node.node)
        return None if inner is None else "%s.%s" % (inner, node.attr)
    if isinstance(node, (nodes.List, nodes.Tuple)):
        items = [unparse(item) for item in node.items]
        if None in items:
            return None
        return ("[%s]" if isinstance(node, nodes.List) else "(%s,)") % ", ".join(items)
    if isinstance(node, nodes.Filter):
        inner = unparse(node.node)
        args = [unparse(arg) for arg in node.args] + ["%s=%s" % (kw.key, unparse(kw.value)) for kw in node.kwargs]
        if inner is None or node.dyn_args or node.dyn_kwargs or any(a is None or a.endswith("=None") for a in args):
            return None
        return "%s | %s%s" % (inner, node.name, "(%s)" % ", ".join(args) if args else "")
    return None


def parents_of(root):
    parents = {}
    stack = [root]
    while stack:
        node = stack.pop()
        for child in node.iter_child_nodes():
            parents[id(child)] = node
            stack.append(child)
    return parents


def truth_uses(root, whole_is_condition):
    """(name, operand node, is it through | bool) for each boolean variable used as a truth value under root."""
    parents = parents_of(root)
    conditions = set()
    if whole_is_condition:
        # A when/that entry: the expression of its one output (a bare expression or "{{ expr }}").
        outputs = list(root.find_all(nodes.Output))
        for output in outputs:
            exprs = [n for n in output.nodes if not isinstance(n, nodes.TemplateData)]
            if len(exprs) == 1:
                conditions.add(id(exprs[0]))
    for name in root.find_all(nodes.Name):
        if name.name not in BOOLEANS or name.ctx != "load":
            continue
        operand = name
        parent = parents.get(id(operand))
        while isinstance(parent, nodes.Filter) and parent.node is operand and parent.name not in NOT_OPERAND:
            operand = parent
            parent = parents.get(id(operand))
        truth = (
            id(operand) in conditions
            or isinstance(parent, (nodes.And, nodes.Or, nodes.Not))
            or (isinstance(parent, (nodes.CondExpr, nodes.If)) and parent.test is operand)
            or (isinstance(parent, nodes.Filter) and parent.name == "ternary" and parent.node is operand)
            or (isinstance(parent, nodes.Compare)
                and any(isinstance(n, nodes.Const) and isinstance(n.value, bool)
                        for n in [parent.expr] + [op.expr for op in parent.ops]))
        )
        if truth:
            yield name.name, operand, isinstance(operand, nodes.Filter) and operand.name == "bool"


def parse(text, as_condition):
    if as_condition and "{{" not in text and "{%" not in text:
        text = "{{ %s }}" % text
    return ENV.parse(text)


def line_of(lines, start, needle):
    """1-based number of the first line from start holding needle outside a comment (else start's)."""
    for number in range(start, len(lines)):
        if needle in lines[number] and not lines[number].lstrip().startswith(("#", "{#")):
            return number + 1
    return start + 1


def uses_in_yaml(path):
    """(line, where, name, operand source or None, through bool) for every truth use in a YAML file."""
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    lines = text.splitlines()
    found = []

    def check(value, as_condition, where, start):
        try:
            tree = parse(value, as_condition)
        except TemplateSyntaxError as error:
            found.append((line_of(lines, start, value.splitlines()[0][:40]), where, "<jinja syntax error>",
                          str(error), False))
            return
        for name, operand, through_bool in truth_uses(tree, as_condition):
            found.append((line_of(lines, start, name), where, name, unparse(operand), through_bool))

    def walk(data, task, start):
        if isinstance(data, dict):
            if isinstance(data.get("name"), str):
                task = data["name"]
                start = line_of(lines, start, data["name"]) - 1
            for key, value in data.items():
                where = "task %r, %s" % (task, key)
                if key in CONDITION_KEYS and not isinstance(value, (dict, bool)) and value is not None:
                    for item in value if isinstance(value, list) else [value]:
                        if isinstance(item, str):
                            check(item, True, where, start)
                else:
                    walk(value, task, start)
                    if isinstance(key, str) and ("{{" in key or "{%" in key):
                        check(key, False, where, start)
        elif isinstance(data, list):
            for item in data:
                walk(item, task, start)
        elif isinstance(data, str) and ("{{" in data or "{%" in data):
            check(data, False, "task %r" % task, start)

    with open(path, encoding="utf-8") as handle:
        walk(yaml.safe_load(handle), None, 0)
    return found


def uses_in_template(path):
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    lines = text.splitlines()
    return [(line_of(lines, 0, name), "template", name, unparse(operand), through_bool)
            for name, operand, through_bool in truth_uses(ENV.parse(text), False)]


def all_uses():
    """{relative path: [(line, where, name, operand, through bool), ...]} over the collection's files."""
    uses = {}
    for pattern, reader in [(p, uses_in_yaml) for p in YAML_FILES] + [(p, uses_in_template) for p in TEMPLATES]:
        for path in sorted(glob.glob(os.path.join(REPO, pattern))):
            if os.path.isfile(path):
                uses[os.path.relpath(path, REPO)] = reader(path)
    return uses


USES = all_uses()


def test_boolean_variables_are_found():
    # The list comes from the argument specs: an empty or tiny one means the specs moved, not that all is well.
    assert {"firewall_enabled", "preflight_check_model", "cann_install_for_all"} <= set(BOOLEANS), BOOLEANS
    assert USES, "no task file, playbook or template found under %s" % REPO
    assert any(use[2] == "preflight_check_model" for found in USES.values() for use in found), \
        "preflight_check_model is read as a truth value nowhere: the scan finds nothing"


@pytest.mark.parametrize("path", sorted(USES))
def test_every_truth_use_goes_through_bool(path):
    problems = ["%s:%d: %s: %s is used as a truth value without `| bool` (as `%s`); -e %s=false is the string "
                "\"false\", which is true" % (path, line, where, name, operand or name, name)
                for line, where, name, operand, through_bool in USES[path]
                if not through_bool]
    assert not problems, "\n".join(problems)


def operands():
    """{operand source: (variable, [where it is read])} for every distinct operand."""
    found = {}
    for path, uses in sorted(USES.items()):
        for line, _where, name, operand, _through_bool in uses:
            if operand and name in BOOLEANS:
                found.setdefault(operand, (name, []))[1].append("%s:%d" % (path, line))
    return found


@pytest.mark.parametrize("text, expected", [("false", False), ("true", True)])
def test_operands_with_extra_vars(tmp_path, text, expected):
    found = sorted(operands().items())
    assert found, "no operand to evaluate"
    keys = ["o%d" % number for number in range(len(found))]
    playbook = [{
        "name": "Evaluate every boolean operand of the collection",
        "hosts": "localhost",
        "connection": "local",
        "gather_facts": False,
        "tasks": [{"name": "Show them", "ansible.builtin.debug": {
            "msg": dict((key, "{{ (%s) }}" % operand) for key, (operand, _where) in zip(keys, found))}}],
    }]
    (tmp_path / "bool.yml").write_text(json.dumps(playbook))
    argv = [os.path.join(BIN, "ansible-playbook"), "-i", "localhost,", str(tmp_path / "bool.yml")]
    for name in BOOLEANS:
        argv += ["-e", "%s=%s" % (name, text)]
    env = dict(os.environ, ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json", ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, "collections"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_DEPRECATION_WARNINGS="0", ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    env.pop("ANSIBLE_CONFIG", None)
    proc = subprocess.run(argv, cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(proc.stdout[proc.stdout.index("{"):])
    values = result["plays"][0]["tasks"][0]["hosts"]["localhost"]["msg"]
    wrong = ["%s: `%s` with -e %s=%s is %r, not %r" % (", ".join(where), operand, name, text, values[key], expected)
             for key, (operand, (name, where)) in zip(keys, found) if values[key] is not expected]
    assert not wrong, "\n".join(wrong)
