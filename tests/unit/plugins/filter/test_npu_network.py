# -*- coding: utf-8 -*-
"""The npu_network role's filters: ping targets and the cluster-wide failure table (hostvars as plain dicts)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.ascend.inference.plugins.filter.npu_network import npu_network_report, npu_ping_targets


def checked(npus, failures=()):
    return {"npus": npus, "failures": list(failures), "changed": False}


HOSTVARS = {
    "a": {"npu_network_local": checked({"0": {"ip": "10.100.0.1", "tls": "0", "vnic": "192.1.2.199"},
                                        "1": {"ip": "10.101.0.1", "tls": "0"}})},
    "b": {"npu_network_local": checked({"6": {"ip": None, "tls": "0"},
                                        "7": {"ip": "10.107.0.2", "tls": "1", "vnic": "192.2.3.199"}})},
    "duo": {"npu_network_local": {"skipped": True, "changed": False}},
    "down": {},
}


def test_one_address_of_every_other_node_from_my_first_device():
    assert npu_ping_targets(HOSTVARS, ["a", "b", "duo", "down"], "a", 0) == [
        {"device": 0, "address": "10.107.0.2", "node": "b", "kind": "ping"}]
    assert npu_ping_targets(HOSTVARS, ["a", "b"], "b", "6") == [
        {"device": 6, "address": "10.100.0.1", "node": "a", "kind": "ping"}]
    assert npu_ping_targets(HOSTVARS, ["a", "b"], "a", 0, "hccs_ping") == [
        {"device": 0, "address": "192.2.3.199", "node": "b", "kind": "hccs_ping"}]


def test_the_report_has_every_host_failure_and_the_tls_judgement():
    hostvars = dict(HOSTVARS, a={"npu_network_local": HOSTVARS["a"]["npu_network_local"], "npu_network_ping": {
        "failures": [{"device": 0, "check": "ping 10.107.0.2 (b)", "expected": "no packet loss",
                      "found": "3 packets transmitted, 0 received, 100.00% packet loss"}]}})
    lines = npu_network_report(hostvars, ["a", "b", "duo", "down"]).splitlines()
    assert lines[0] == "NPU network check failed (2 failure(s)); fix them before starting Ray or serve:"
    assert lines[2].split()[:3] == ["a", "0", "ping"]
    assert lines[3].split()[:3] == ["b", "7", "tls"] and lines[3].endswith("tls switch[1]")


def test_no_failure_no_report():
    healthy = {"a": {"npu_network_local": checked({"0": {"tls": "0"}})},
               "b": {"npu_network_local": checked({"0": {"tls": "0"}})}}
    assert npu_network_report(healthy, ["a", "b"]) == ""
