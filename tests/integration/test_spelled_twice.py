"""What two places spell must agree: the unit names that the playbooks run without a plan spell (the plan's,
planner.UNITS), what the preflight asks for the firewall role."""

import os
import sys

import yaml

from conftest import REPO

sys.path.insert(0, os.path.join(REPO, "collections"))
from ansible_collections.ascend.inference.plugins.module_utils.plan import monitoring, planner, router  # noqa: E402
from ansible_collections.ascend.inference.plugins.modules import support_bundle  # noqa: E402


def test_teardown_stops_the_plans_units_serve_first():
    # teardown.yml must work with an inventory that no longer validates, so its phase cannot read the plan.
    from ansible_collections.ascend.inference.plugins.plugin_utils.operations import teardown

    class NoPlan(object):
        """A node whose plan cannot be read; its unit directory lists no instance's unit."""

        @property
        def plan(self):
            raise AssertionError("teardown read the plan")

        @staticmethod
        def run(module, args):
            return {"files": []}

    state = teardown.desired(NoPlan(), {})["apply"]
    # Given in start order: node_apply stops them in reverse, the router in front of serve first (serve's watchdog
    # before the serve it would restart), the NPU exporter after the engines.
    assert [unit["name"] for unit in reversed(state["units"])] == [router.UNIT] + [
        planner.UNITS[job] for job in ("watchdog", "serve", "engine", "ray")] + [monitoring.EXPORTER_UNIT,
                                                                                 planner.UNITS["firewall"]]


def test_the_support_bundle_reads_the_plans_host_units():
    # collect.yml needs no plan either: the module's default lists the host units.
    spec = yaml.safe_load(support_bundle.DOCUMENTATION)["options"]["units"]
    assert spec["default"] == [planner.UNITS[job] for job in ("ray", "serve", "firewall")]


def test_the_preflight_asks_for_the_program_the_firewall_role_installs():
    with open(os.path.join(REPO, "roles", "preflight", "vars", "main.yml")) as handle:
        assert "nft" in yaml.safe_load(handle)["preflight_found_programs"]
    with open(os.path.join(REPO, "roles", "firewall", "tasks", "main.yml")) as handle:
        install = next(task for task in yaml.safe_load(handle) if task["name"] == "Install nftables")
    assert "ascend_applied.preflight.programs.nft" in " ".join(install["when"])


def test_the_ray_probe_defaults_to_the_plans_ray_unit():
    # cluster_nodes.py is run by hand too, without the unit the roles pass.
    with open(os.path.join(REPO, "roles", "ray_cluster", "files", "cluster_nodes.py")) as handle:
        assert 'else "%s"' % planner.UNITS["ray"] in handle.read()
