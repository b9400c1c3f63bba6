"""The unit names the playbooks that run without a plan spell must be the plan's (planner.UNITS)."""

import os
import sys

import yaml

from conftest import REPO

sys.path.insert(0, os.path.join(REPO, "collections"))
from ansible_collections.ascend.inference.plugins.module_utils import planner  # noqa: E402
from ansible_collections.ascend.inference.plugins.modules import support_bundle  # noqa: E402


def tasks_of(playbook):
    with open(os.path.join(REPO, "playbooks", playbook)) as handle:
        return [task for play in yaml.safe_load(handle) for task in play.get("tasks", [])]


def test_teardown_stops_the_plans_units_serve_first():
    # teardown.yml must work with an inventory that no longer validates, so it cannot read the plan.
    stop = next(task for task in tasks_of("teardown.yml") if task["name"].startswith("Stop and disable"))
    assert stop["loop"] == [planner.UNITS[job] for job in ("serve", "engine", "ray", "firewall")]


def test_the_support_bundle_reads_the_plans_host_units():
    # collect.yml needs no plan either: the module's default lists the host units.
    spec = yaml.safe_load(support_bundle.DOCUMENTATION)["options"]["units"]
    assert spec["default"] == [planner.UNITS[job] for job in ("ray", "serve", "firewall")]
