"""What two places spell must agree: the unit names that the playbooks run without a plan spell (the plan's,
planner.UNITS), what the preflight asks for the firewall role, the argv node_env and node_probe source set_env.sh with."""

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


def test_the_preflight_asks_for_the_firewall_roles_legacy_unit():
    def role_vars(role):
        with open(os.path.join(REPO, "roles", role, "vars", "main.yml")) as handle:
            return yaml.safe_load(handle)
    legacy = role_vars("firewall")["firewall_legacy_unit_path"]
    assert legacy in role_vars("preflight")["preflight_found_paths"]
    assert "nft" in role_vars("preflight")["preflight_found_programs"]


def test_the_preflight_reads_the_files_node_env_and_hostnames_write():
    # Read by the probe so that these roles skip writes that would change nothing.
    def yaml_file(*parts):
        with open(os.path.join(REPO, "roles", *parts)) as handle:
            return yaml.safe_load(handle)
    found = yaml_file("preflight", "vars", "main.yml")["preflight_found_files"]
    assert yaml_file("node_env", "defaults", "main.yml")["node_env_profile"] in found
    assert "/etc/hostname" in found


def test_node_env_sources_set_env_as_the_probe_does():
    # node_env reads set_env.sh itself only where the probe did not; both must read the same.
    from ansible_collections.ascend.inference.plugins.module_utils import node_env
    with open(os.path.join(REPO, "roles", "node_env", "tasks", "cann.yml")) as handle:
        read = next(task for task in yaml.safe_load(handle) if task["name"].startswith("Read what set_env.sh"))
    assert read["ansible.builtin.command"]["argv"][:-1] == node_env.SOURCE_ARGV


def test_the_ray_probe_defaults_to_the_plans_ray_unit():
    # cluster_nodes.py is run by hand too, without the unit the roles pass.
    with open(os.path.join(REPO, "roles", "ray_cluster", "files", "cluster_nodes.py")) as handle:
        assert 'else "%s"' % planner.UNITS["ray"] in handle.read()
