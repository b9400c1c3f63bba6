# -*- coding: utf-8 -*-
"""The barrier's report made again after it failed, with why the nodes that did not join cannot reach the head."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.ascend.inference.plugins.filter.ray import ray_barrier_report
from ansible_collections.ascend.inference.plugins.module_utils import progress

PLAN = {
    "cluster": {"node_order": ["head", "w1", "w2", "w3", "w4"]},
    "nodes": dict((name, {"node_ip": "192.0.2.1%d" % n, "visible_devices": [0, 1]})
                  for n, name in enumerate(["head", "w1", "w2", "w3", "w4"])),
}

# Each node's ansible.builtin.wait_for result with failed_when: false, in the shapes wait_for and Ansible give:
# a timed-out wait has a msg and no state; a node Ansible could not reach is unreachable; a skipped task says so.
CHECKS = {
    "w1": {"failed": False, "msg": "Timeout when waiting for 192.0.2.10:6379", "elapsed": 5},
    "w2": {"failed": False, "state": "started", "port": 6379, "elapsed": 0, "path": None},
    "w3": {"unreachable": True, "msg": "Failed to connect to the host via ssh: timed out"},
    "w4": {"skipped": True, "changed": False, "false_condition": "inventory_hostname in ..."},
}


def hostvars(checks):
    """hostvars as the filter reads it: every planned node, the check variable only where a node registered it."""
    return dict((name, {"ray_cluster_head_check": checks[name]} if name in checks else {})
                for name in PLAN["cluster"]["node_order"])


def test_only_timed_out_waits_give_a_reason():
    assert progress.head_check_reasons(CHECKS) == {"w1": "Timeout when waiting for 192.0.2.10:6379"}
    assert progress.head_check_reasons({}) == {}


def test_the_report_names_why_beside_what_the_barrier_saw():
    state = progress.barrier_state('[{"ip": "192.0.2.10", "npus": 2}]', progress.expected_nodes(PLAN))
    barrier = {"failed": True, "state": state, "error": None, "unreachable": {}}
    assert ray_barrier_report(barrier, PLAN, hostvars(CHECKS), "ray_cluster_head_check", 20).splitlines() == [
        "The Ray cluster is not whole after 20 s: expected 5 nodes and 10 NPUs.",
        "head (192.0.2.10): 2 NPUs (planned 2);",
        "w1 (192.0.2.11): NOT JOINED (cannot reach the head: Timeout when waiting for 192.0.2.10:6379);",
        "w2 (192.0.2.12): NOT JOINED;",
        "w3 (192.0.2.13): NOT JOINED;",
        "w4 (192.0.2.14): NOT JOINED;",
    ]


def test_a_reason_from_a_workers_own_wait_is_kept_and_the_probes_error_shown():
    barrier = {"failed": True, "state": None, "error": "ConnectionError: no Ray head\n",
               "unreachable": {"w3": "Timeout when waiting for 192.0.2.10:6379"}}
    lines = ray_barrier_report(barrier, PLAN, hostvars({}), "ray_cluster_head_check", 300).splitlines()
    assert lines[4] == "w3 (192.0.2.13): NOT JOINED (cannot reach the head: Timeout when waiting for 192.0.2.10:6379);"
    assert lines[-1] == "probe error: ConnectionError: no Ray head"


def test_token_holders_are_read_or_probed():
    from ansible_collections.ascend.inference.plugins.filter.ray import ray_token_holders
    token = "/etc/ascend-inference/ray-auth-token"
    probed = {"type": "file", "mode": "0600", "owner": "root", "group": "root", "digest": "ab"}
    found = {
        "head": {"ray_cluster_node_token": {"failed": True, "msg": "file not found"},
                 "preflight_found": {"files": {token: None}}},
        "w1": {"ray_cluster_node_token": {"skipped": True}, "preflight_found": {"files": {token: probed}}},
        "w2": {"ray_cluster_node_token": {"content": "dG9rZW4=", "encoding": "base64"}},  # the probe did not look
        "w3": {"ray_cluster_node_token": {"skipped": True}, "preflight_found": {"files": {token: None}}},
        "w4": {"preflight_found": {"files": {token: dict(probed, type="directory")}}},
        # A link: the role's read would follow it; counted, so that the cluster is not re-keyed over it.
        "w5": {"ray_cluster_node_token": {"skipped": True}, "preflight_found": {"files": {token: dict(probed, type="link")}}},
    }
    assert ray_token_holders(found, ["head", "w1", "w2", "w3", "w4", "w5"], token) == ["w1", "w2", "w5"]


def test_the_barriers_reasons_come_from_the_planned_nodes_own_waits():
    from ansible_collections.ascend.inference.plugins.filter.ray import ray_head_wait_reasons
    assert ray_head_wait_reasons(PLAN, hostvars(CHECKS), "ray_cluster_head_check") == {
        "w1": "Timeout when waiting for 192.0.2.10:6379"}
    # A node outside the plan is not read, and nodes that registered nothing give nothing.
    outside = dict(hostvars(CHECKS), stray={"ray_cluster_head_check": CHECKS["w1"]})
    assert ray_head_wait_reasons(PLAN, outside, "ray_cluster_head_check") == {
        "w1": "Timeout when waiting for 192.0.2.10:6379"}
    assert ray_head_wait_reasons(PLAN, hostvars({}), "ray_cluster_head_check") == {}
