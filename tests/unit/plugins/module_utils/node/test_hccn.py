# -*- coding: utf-8 -*-
"""hccn_tool answers: parsing every capture in hardware_samples/ the collection reads, and judging.

Expected values are written out by hand from the named capture.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.ascend.inference.plugins.module_utils.node import hccn
from ansible_collections.ascend.inference.plugins.module_utils.node.hccn import (
    judge, judge_ping, judge_tls, parse, parse_ping)


def first_lines(text, count):
    return "\n".join(text.splitlines()[:count])


@pytest.mark.parametrize("name,query,value", [
    ("hccn_tool-link-g__910B3_800I-A2__1.txt", "link", "UP"),
    ("hccn_tool-net_health-g__910B3_800I-A2__1.txt", "net_health", "Success"),
    ("hccn_tool-net_health-g__doc-example_init__1.txt", "net_health", "Init"),
    ("hccn_tool-net_health-g__reconstructed_A2-A3_receive-timeout__1.txt", "net_health", "Receive timeout"),
    ("hccn_tool-lldp-g__910B1_23.0.rc2__1.txt", "lldp", "400GE1/1/20:2"),
    ("hccn_tool-lldp-g__910B3_800I-A2_grep-Ifname__1.txt", "lldp", "400GE1/1/5:1"),
    ("hccn_tool-netdetect-g__910B3_800I-A2_old-address-form__1.txt", "netdetect", "11.12.165.1"),
    ("hccn_tool-netdetect-g__reconstructed_A2-A3_new-addr-form__1.txt", "netdetect", "192.0.2.1"),
    ("hccn_tool-gateway-g__910B3_800I-A2__1.txt", "gateway", "11.12.165.1"),
    ("hccn_tool-gateway-g__reconstructed_A2-A3_no-gateway-preset__1.txt", "gateway", None),
    ("hccn_tool-ip-g__910B1_23.0.rc2__1.txt", "ip", "29.1.112.213"),
    ("hccn_tool-ip-g__910B3_800I-A2__1.txt", "ip", "11.12.165.80"),
    ("hccn_tool-ip-g__910_modelarts-8dev__1.txt", "ip", "192.1.45.172"),
    ("hccn_tool-ip-g__reconstructed_A2-A3_no-ip-preset__1.txt", "ip", None),
    ("hccn_tool-tls-g__910B3_800I-A2_grep-switch__1.txt", "tls", "0"),
    ("hccn_tool-tls-g__ascend950_doc-example_full__1.txt", "tls", "0"),
    ("hccn_tool-vnic-g__reconstructed_A3__1.txt", "vnic", "192.0.2.199"),
    ("hccn_tool-vnic-g__ascend950_doc-example__1.txt", "vnic", "192.168.2.199"),
])
def test_parse_captures(sample, name, query, value):
    # Captures of a loop over devices hold one answer per device: the first is device 0's.
    assert parse(query, sample(name)) == value


def test_netdetect_unset_is_0000():
    assert parse("netdetect", "netdetect addr: 0.0.0.0\n") is None
    assert parse("netdetect", "netdetect address: 0.0.0.0\n") is None
    assert parse("netdetect", "netdetect address: \n") is None
    # An empty value does not borrow the next line's.
    assert parse("netdetect", "netdetect address:\nnext: 1.2.3.4\n") is None


@pytest.mark.parametrize("name,counts", [
    ("hccn_tool-ping-g__910B1_23.0.rc2__1.txt", (3, 3)),
    ("hccn_tool-ping-g__910B3_800I-A2__1.txt", (3, 3)),
    ("hccn_tool-hccs_ping-g__reconstructed_A3_success__1.txt", (3, 3)),
    ("hccn_tool-hccs_ping-g__reconstructed_A3_partial-loss__1.txt", (3, 2)),
])
def test_parse_ping_captures(sample, name, counts):
    assert parse_ping(sample(name)) == counts


def test_judge_pings_from_captures(sample):
    assert judge_ping(3, "29.1.137.205", "b", 0, sample("hccn_tool-ping-g__910B1_23.0.rc2__1.txt")) == []
    assert judge_ping(0, "192.0.3.198", "b", 0, sample("hccn_tool-hccs_ping-g__reconstructed_A3_success__1.txt"),
                      "hccs_ping") == []
    # hccs_ping exits 0 ("Cmd executed successfully!") even when a packet is lost: the counts decide.
    assert judge_ping(0, "192.0.3.198", "b", 0, sample("hccn_tool-hccs_ping-g__reconstructed_A3_partial-loss__1.txt"),
                      "hccs_ping") == [{"device": 0, "check": "hccs_ping 192.0.3.198 (b)", "expected": "no packet loss",
                                        "found": "3 packets transmitted, 2 received, 33.33% packets loss"}]


def test_unknown_query():
    with pytest.raises(ValueError):
        parse("speed", "")


def answers(sample, **overrides):
    healthy = {
        "link": sample("hccn_tool-link-g__910B3_800I-A2__1.txt"),
        "net_health": sample("hccn_tool-net_health-g__910B3_800I-A2__1.txt"),
        "lldp": sample("hccn_tool-lldp-g__910B1_23.0.rc2__1.txt"),
        "netdetect": sample("hccn_tool-netdetect-g__910B3_800I-A2_old-address-form__1.txt"),
        "gateway": first_lines(sample("hccn_tool-gateway-g__910B3_800I-A2__1.txt"), 1),
        "ip": first_lines(sample("hccn_tool-ip-g__910B3_800I-A2__1.txt"), 2),
    }
    result = dict((q, {"rc": 0, "output": text, "value": parse(q, text)}) for q, text in healthy.items())
    for query, (rc, text) in overrides.items():
        result[query] = {"rc": rc, "output": text, "value": parse(query, text) if rc == 0 else None}
    return result


def test_healthy_device_has_no_failure(sample):
    assert judge(0, answers(sample)) == []


def test_each_unhealthy_answer_is_reported(sample):
    failures = judge(3, answers(sample, link=(0, "link status: DOWN\n"),
                                net_health=(0, sample("hccn_tool-net_health-g__doc-example_init__1.txt")),
                                netdetect=(0, "netdetect addr: 0.0.0.0\n")))
    assert [(f["device"], f["check"], f["found"]) for f in failures] == [
        (3, "link", "link status: DOWN"), (3, "net_health", "net health status: Init"),
        (3, "netdetect", "netdetect addr: 0.0.0.0")]
    assert failures[0]["expected"] == "UP" and failures[2]["expected"] == "a netdetect address (not 0.0.0.0)"


def test_unset_gateway_and_ip_are_errors_with_their_message(sample):
    gateway = sample("hccn_tool-gateway-g__reconstructed_A2-A3_no-gateway-preset__1.txt")
    ip = sample("hccn_tool-ip-g__reconstructed_A2-A3_no-ip-preset__1.txt")
    failures = judge(1, answers(sample, gateway=(1, gateway), ip=(1, ip)))
    assert failures == [
        {"device": 1, "check": "gateway", "expected": "a default gateway",
         "found": "Get gateway failed, because no gateway was preset there!"},
        {"device": 1, "check": "ip", "expected": "an NPU IP address",
         "found": "Get ipconf failed, because no ip was preset there!"}]


def test_a_failing_command_without_output():
    broken = {"ip": {"rc": 1, "output": "", "value": None}}
    assert [f for f in judge(1, broken) if f["check"] == "ip"] == [
        {"device": 1, "check": "ip", "expected": "an NPU IP address", "found": "(no output, rc 1)"}]


def test_vnic_is_judged_only_where_asked(sample):
    vnic = sample("hccn_tool-vnic-g__reconstructed_A3__1.txt")
    assert judge(0, dict(answers(sample), vnic={"rc": 0, "output": vnic, "value": parse("vnic", vnic)})) == []
    down = vnic.replace("status: UP", "status: DOWN")
    assert [f["check"] for f in judge(0, dict(answers(sample), vnic={"rc": 0, "output": down,
                                                                     "value": parse("vnic", down)}))] == ["vnic"]


def test_tls_switch_must_agree_across_the_cluster(sample):
    captured = sample("hccn_tool-tls-g__910B3_800I-A2_grep-switch__1.txt").splitlines()
    switches = {"a": dict((n, parse("tls", captured[n])) for n in range(8)),
                "b": dict((n, parse("tls", captured[n])) for n in range(8))}
    assert set(switches["a"].values()) == {"0"} and judge_tls(switches) == []
    switches["b"][5] = "1"
    assert judge_tls(switches) == [{"host": "b", "device": 5, "check": "tls",
                                    "expected": "tls switch[0] as on 15 other NPU(s)", "found": "tls switch[1]"}]
    # A tie: the first host's value is expected; a device that did not answer is not judged.
    assert [f["host"] for f in judge_tls({"a": {0: "1"}, "b": {0: "0", 1: None}})] == ["b"]


def test_table():
    assert hccn.table([]) == ""
    text = hccn.table([{"host": "n1", "device": 1, "check": "link", "expected": "UP", "found": "link status: DOWN"},
                       {"host": "n2", "device": None, "check": "hccn.conf", "expected": "present", "found": "a\nb"}])
    lines = text.splitlines()
    assert lines[0] == "NPU network check failed (2 failure(s)); fix them before starting Ray or serve:"
    assert lines[2].split() == ["n1", "1", "link", "UP", "link", "status:", "DOWN"]
    assert lines[3].split()[:2] == ["n2", "all"] and lines[3].endswith("a b")
