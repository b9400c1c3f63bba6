# -*- coding: utf-8 -*-
"""The barrier's report made again after it failed, with why the nodes that did not join cannot reach the head."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.ascend.inference.plugins.plugin_utils import progress

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


def ray_barrier_report(barrier, checks, timeout):
    return progress.failed_barrier_report(PLAN, timeout, barrier, checks)


def test_only_timed_out_waits_give_a_reason():
    assert progress.head_check_reasons(CHECKS) == {"w1": "Timeout when waiting for 192.0.2.10:6379"}
    assert progress.head_check_reasons({}) == {}


def test_the_report_names_why_beside_what_the_barrier_saw():
    state = progress.barrier_state('[{"ip": "192.0.2.10", "npus": 2}]', progress.expected_nodes(PLAN))
    barrier = {"failed": True, "state": state, "error": None, "unreachable": {}}
    assert ray_barrier_report(barrier, CHECKS, 20).splitlines() == [
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
    lines = ray_barrier_report(barrier, {}, 300).splitlines()
    assert lines[4] == "w3 (192.0.2.13): NOT JOINED (cannot reach the head: Timeout when waiting for 192.0.2.10:6379);"
    assert lines[-1] == "probe error: ConnectionError: no Ray head"
