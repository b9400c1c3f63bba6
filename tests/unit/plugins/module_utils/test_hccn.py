# -*- coding: utf-8 -*-
"""hccn_tool answers: parsing and judging (healthy formats from the vllm-ascend guide)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.ascend.inference.plugins.module_utils.hccn import judge, judge_ping, parse, parse_ping

HEALTHY = {
    "link": "link status: UP\n",
    "net_health": "net health status: Success\n",
    "lldp": "Chassis ID TLV\n\tMAC: 00:e0:fc:00:00:01\nPort ID TLV\n\tIfname: 400GE1/1/5:1\n",
    "netdetect": "netdetect address: 11.12.165.1\n",
    "gateway": "default gateway:11.12.165.1, Iface:eth0\n",
    "ip": "ipaddr:11.12.165.80\nnetmask:255.255.255.0\n",
}


@pytest.mark.parametrize("query,value", [("link", "UP"), ("net_health", "Success"), ("lldp", "400GE1/1/5:1"),
                                         ("netdetect", "11.12.165.1"), ("gateway", "11.12.165.1"),
                                         ("ip", "11.12.165.80")])
def test_parse_healthy_answers(query, value):
    assert parse(query, HEALTHY[query]) == value


@pytest.mark.parametrize("query,text", [("netdetect", "netdetect address: \n"), ("gateway", "default gateway:, Iface:\n"),
                                        ("lldp", "Chassis ID TLV\nEnd Of LLDPDU TLV\n"), ("ip", ""), ("link", "")])
def test_parse_missing_values(query, text):
    assert parse(query, text) is None


def test_unknown_query():
    with pytest.raises(ValueError):
        parse("speed", "")


def answers(**overrides):
    result = {q: {"rc": 0, "output": text, "value": parse(q, text)} for q, text in HEALTHY.items()}
    for query, text in overrides.items():
        result[query] = {"rc": 0, "output": text, "value": parse(query, text)}
    return result


def test_healthy_device_has_no_failure():
    assert judge(0, answers()) == []


def test_each_unhealthy_answer_is_reported():
    failures = judge(3, answers(link="link status: DOWN\n", net_health="net health status: Init\n",
                                gateway="default gateway:, Iface:\n"))
    assert [(f["device"], f["check"], f["found"]) for f in failures] == [
        (3, "link", "link status: DOWN"), (3, "net_health", "net health status: Init"),
        (3, "gateway", "default gateway:, Iface:")]
    assert failures[0]["expected"] == "UP"


def test_a_failing_command_is_a_failure():
    broken = answers()
    broken["ip"] = {"rc": 1, "output": "", "value": None}
    assert judge(1, broken) == [{"device": 1, "check": "ip", "expected": "an NPU IP address",
                                 "found": "(no output, rc 1)"}]


def test_ping():
    ok = "PING 10.0.0.2\n3 packets transmitted, 3 received, 0.00% packet loss\n"
    assert parse_ping(ok) == (3, 3)
    assert judge_ping(0, "10.0.0.2", "b", 0, ok) == []
    lost = "3 packets transmitted, 1 received, 66.67% packet loss\n"
    assert judge_ping(0, "10.0.0.2", "b", 0, lost) == [
        {"device": 0, "check": "ping 10.0.0.2 (b)", "expected": "no packet loss", "found": lost.strip()}]
    assert judge_ping(0, "10.0.0.2", "b", 1, "")[0]["found"] == "(no output, rc 1)"
