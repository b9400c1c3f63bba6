# -*- coding: utf-8 -*-
"""npu_network_check runs hccn_tool per device and reports, never fails, on unhealthy NPUs."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import sys

import pytest

from ansible_collections.ascend.inference.plugins.modules.npu_network_check import main


# One device's answer per query, in the line formats of the 800I A2 captures in
# tests/unit/plugins/module_utils/node/hardware_samples/ (hccn_tool-<query>-g__910B3_800I-A2*.txt: link, net_health,
# lldp (grep-Ifname), netdetect (old-address-form), gateway, ip, tls (grep-switch); the pings' summary line as in
# hccn_tool-ping-g__910B3_800I-A2__1.txt), addresses changed. -vnic has no capture (reconstructed from the tool's
# source, as the hccn parser's own tests say).
ANSWERS = {
    "-link": "link status: UP", "-net_health": "net health status: Success", "-lldp": "Ifname: 400GE1/1/1:1",
    "-netdetect": "netdetect address: 10.0.0.1", "-gateway": "default gateway:10.0.0.1, Iface:eth0",
    "-ip": "ipaddr:10.0.0.%d\nnetmask:255.255.255.0",
    "-tls": "dev_id:%d, tls switch[0](0:disable, 1:enable), tls preconfigured[1](0:non-preset, 1:preset), "
            "tls alarm time threshold[60]days",
    "-vnic": "vnic link status: UP\nvnic ipaddr: 192.5.2.19%d\nvnic netmask: 255.255.255.0",
}


# hccn_tool stand-in: answers from ANSWERS (device 2's link down; pings to 10.9.9.9 lost) and logs its argv.
FAKE_TOOL = """#!%(python)s
import json, sys
ANSWERS = %(answers)r
with open(%(log)r, "a") as log:
    log.write(json.dumps(sys.argv) + "\\n")
device, query = int(sys.argv[2]), sys.argv[3]
if query in ("-ping", "-hccs_ping"):
    lost = sys.argv[-1] == "10.9.9.9"
    print("3 packets transmitted, %%d received" %% (0 if lost else 3))
    sys.exit(1 if lost else 0)
print("link status: DOWN" if (device, query) == (2, "-link") else ANSWERS[query].replace("%%d", str(device)))
"""


@pytest.fixture
def run(tmp_path, run_module):
    tool, log = tmp_path / "hccn_tool", tmp_path / "calls.jsonl"
    tool.write_text(FAKE_TOOL % {"python": sys.executable, "answers": ANSWERS, "log": str(log)})
    tool.chmod(0o755)
    conf = tmp_path / "hccn.conf"

    def call(args, conf_present=True):
        if conf_present:
            conf.write_text("address_0=10.0.0.0\n")
        done = run_module(main, dict(args, hccn_tool=str(tool), hccn_conf=str(conf)))
        assert not done.failed, done.result
        calls = [json.loads(line)[1:] for line in log.read_text().splitlines()] if log.exists() else []
        return done.result, calls

    return call


def test_reports_each_device_and_every_failure(run):
    result, calls = run({"devices": [0, 2]})
    assert result["changed"] is False
    assert result["npus"]["0"] == {"link": "UP", "net_health": "Success", "lldp": "400GE1/1/1:1",
                                   "netdetect": "10.0.0.1", "gateway": "10.0.0.1", "ip": "10.0.0.0", "tls": "0"}
    assert result["failures"] == [{"device": 2, "check": "link", "expected": "UP", "found": "link status: DOWN"}]
    assert ["-i", "0", "-link", "-g"] in calls
    assert len(calls) == 14  # six checks and the TLS switch, per device
    # Each device's queries in their order (the devices at once).
    assert [call[2] for call in calls if call[1] == "2"] == ["-link", "-net_health", "-lldp", "-netdetect", "-gateway",
                                                             "-ip", "-tls"]


def test_a3_dies_answer_their_vnic(run):
    result, calls = run({"devices": [3], "tls": False, "vnic": True})
    assert result["npus"]["3"]["vnic"] == "192.5.2.193" and "tls" not in result["npus"]["3"]
    assert ["-i", "3", "-vnic", "-g"] in calls and result["failures"] == []


def test_missing_hccn_conf_and_lost_pings(run):
    result, calls = run({"devices": [], "ping_targets": [{"device": 0, "address": "10.9.9.9", "node": "b"},
                                                         {"device": 0, "address": "10.0.0.5", "node": "c"}]},
                        conf_present=False)
    # A ping-only run leaves hccn.conf to the run that checks the devices: one failure per node.
    assert [f["check"] for f in result["failures"]] == ["ping 10.9.9.9 (b)"]
    assert calls == [["-i", "0", "-ping", "-g", "address", "10.9.9.9"],
                     ["-i", "0", "-ping", "-g", "address", "10.0.0.5"]]


def test_missing_hccn_conf(run):
    result, _calls = run({"devices": [0]}, conf_present=False)
    assert [(f["device"], f["check"], f["found"]) for f in result["failures"]] == [(None, "hccn.conf", "missing")]
    assert result["failures"][0]["expected"].endswith("hccn.conf present")
    assert result["hccn_conf_present"] is False


def test_hccs_ping_targets(run):
    result, calls = run({"devices": [], "ping_targets": [{"device": 1, "address": "10.9.9.9", "node": "b",
                                                          "kind": "hccs_ping"}]})
    assert calls == [["-i", "1", "-hccs_ping", "-g", "address", "10.9.9.9"]]
    assert [f["check"] for f in result["failures"]] == ["hccs_ping 10.9.9.9 (b)"]


def test_more_devices_than_asked_at_once_are_all_answered(run):
    result, calls = run({"devices": list(range(10)), "tls": False})
    assert sorted(result["npus"], key=int) == [str(d) for d in range(10)] and len(calls) == 60
    assert [f["device"] for f in result["failures"]] == [2]


def test_answers_are_asked_for_in_the_c_locale(tmp_path, run_module, monkeypatch):
    # The parsers read hccn_tool's English answers: a tool that would answer otherwise outside the C locale.
    monkeypatch.setenv("LC_ALL", "zh_CN.UTF-8")
    tool = tmp_path / "hccn_tool"
    tool.write_text('#!/bin/sh\n[ "$LC_ALL$LANG$LC_MESSAGES" = CCC ] && echo "link status: UP" || echo "?"\n')
    tool.chmod(0o755)
    monkeypatch.setattr(sys.modules[main.__module__], "QUERIES", ("link",))
    done = run_module(main, {"devices": [0], "tls": False, "hccn_tool": str(tool), "hccn_conf": str(tool)})
    assert done.result["npus"]["0"] == {"link": "UP"}


def test_a_tool_that_cannot_run_fails_every_check_of_every_device(tmp_path, run_module):
    done = run_module(main, {"devices": [0, 1], "hccn_tool": str(tmp_path / "missing"),
                             "hccn_conf": str(tmp_path / "hccn.conf")})
    device_failures = [f for f in done.result["failures"] if f["device"] is not None]
    assert len(device_failures) == 2 * 6 and all(f["found"] for f in device_failures)


def test_each_devices_pings_in_order_the_devices_at_once(run):
    """A prefill pool's NPUs each ping the decode nodes: every answer goes back to its own target."""
    targets = [{"device": device, "address": address, "node": node}
               for device in (0, 1, 2) for address, node in (("10.0.0.5", "c"), ("10.9.9.9", "d"))]
    result, calls = run({"devices": [], "ping_targets": targets})
    assert sorted(f["check"] for f in result["failures"]) == ["ping 10.9.9.9 (d)"] * 3
    assert sorted(f["device"] for f in result["failures"]) == [0, 1, 2]
    for device in ("0", "1", "2"):
        assert [call[-1] for call in calls if call[1] == device] == ["10.0.0.5", "10.9.9.9"]
