"""The one list of phases (plugin_utils/phases/registry.py) against what names them: node_phase's documented choices
and every node_phase task of the roles and playbooks."""

import glob
import os
import re
import sys

import yaml

from conftest import REPO

sys.path.insert(0, os.path.join(REPO, "collections"))
from ansible_collections.ascend.inference.plugins.modules import node_phase  # noqa: E402
from ansible_collections.ascend.inference.plugins.plugin_utils.phases import registry  # noqa: E402

MODULE = "ascend.inference.node_phase"


def _tasks(node):
    """Every task in a loaded task file or play list, blocks and handlers included."""
    if isinstance(node, list):
        for item in node:
            yield from _tasks(item)
    elif isinstance(node, dict):
        if MODULE in node:
            yield node
        for key in ("block", "rescue", "always", "tasks", "pre_tasks", "post_tasks", "handlers"):
            yield from _tasks(node.get(key))


def named_phases():
    """{phase: [file, ...]} of every node_phase task in roles/ and playbooks/."""
    found = {}
    paths = glob.glob(os.path.join(REPO, "roles", "*", "tasks", "*.yml")) + glob.glob(
        os.path.join(REPO, "roles", "*", "handlers", "*.yml")) + glob.glob(os.path.join(REPO, "playbooks", "*.yml"))
    for path in sorted(paths):
        with open(path) as handle:
            for task in _tasks(yaml.safe_load(handle)):
                name = task[MODULE]["phase"]
                assert "{{" not in name, "%s names its phase through a template: %s" % (path, name)
                found.setdefault(name, []).append(os.path.relpath(path, REPO))
    return found


def test_node_phase_documents_exactly_the_registered_phases():
    phase = yaml.safe_load(node_phase.DOCUMENTATION)["options"]["phase"]
    assert phase["choices"] == sorted(registry.PHASES)
    described = set(re.findall(r"V\((\w+)\)", " ".join(phase["description"])))
    assert described == set(registry.PHASES)


def test_the_roles_and_playbooks_run_registered_phases_and_every_one_is_run():
    found = named_phases()
    assert set(found) - set(registry.PHASES) == set(), "unregistered phases named"
    assert set(registry.PHASES) - set(found) == set(), "registered phases no task runs"


def test_role_phases_and_operations_are_apart():
    assert set(registry.ROLE_PHASES).isdisjoint(registry.OPERATIONS)
    operations = named_phases()
    for name in registry.OPERATIONS:
        # An operation runs from the playbooks of restart, status, teardown and remove_node, or the serve role's
        # rolling restart, never from a deploy's role phase list.
        assert all(path.startswith("playbooks/") or path.endswith("rolling.yml") or "restart" in path
                   for path in operations[name]), (name, operations[name])
