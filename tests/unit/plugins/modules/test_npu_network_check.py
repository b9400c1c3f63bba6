# -*- coding: utf-8 -*-
"""npu_network_check runs hccn_tool per device and reports, never fails, on unhealthy NPUs."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible.module_utils import basic
from ansible_collections.ascend.inference.plugins.modules import npu_network_check
from ansible_collections.ascend.inference.plugins.modules.npu_network_check import main


ANSWERS = {
    "-link": "link status: UP", "-net_health": "net health status: Success", "-lldp": "Ifname: 400GE1/1/1:1",
    "-netdetect": "netdetect address: 10.0.0.1", "-gateway": "default gateway:10.0.0.1, Iface:eth0",
    "-ip": "ipaddr:10.0.0.%d\nnetmask:255.255.255.0",
    "-tls": "dev_id:%d, tls switch[0](0:disable, 1:enable), tls preconfigured[1](0:non-preset, 1:preset), "
            "tls alarm time threshold[60]days",
    "-vnic": "vnic link status: UP\nvnic ipaddr: 192.5.2.19%d\nvnic netmask: 255.255.255.0",
}


@pytest.fixture
def run(monkeypatch, tmp_path, run_module):
    calls = []

    def run_command(self, argv, **kwargs):
        calls.append(argv)
        device, query = int(argv[2]), argv[3]
        if query in ("-ping", "-hccs_ping"):
            lost = argv[-1] == "10.9.9.9"
            return (1 if lost else 0), "3 packets transmitted, %d received" % (0 if lost else 3), ""
        if device == 2 and query == "-link":
            return 0, "link status: DOWN", ""
        return 0, ANSWERS[query].replace("%d", str(device)), ""

    monkeypatch.setattr(basic.AnsibleModule, "run_command", run_command)
    # The queries run in threads, with subprocess: the same answers.
    monkeypatch.setattr(npu_network_check, "call", lambda argv: (lambda rc, out, err: (rc, out + err))(
        *run_command(None, argv)))
    conf = tmp_path / "hccn.conf"

    def call(args, conf_present=True):
        if conf_present:
            conf.write_text("address_0=10.0.0.0\n")
        done = run_module(main, dict(args, hccn_tool="/opt/hccn_tool", hccn_conf=str(conf)))
        assert not done.failed, done.result
        return done.result, calls

    return call


def test_reports_each_device_and_every_failure(run):
    result, calls = run({"devices": [0, 2]})
    assert result["changed"] is False
    assert result["npus"]["0"] == {"link": "UP", "net_health": "Success", "lldp": "400GE1/1/1:1",
                                   "netdetect": "10.0.0.1", "gateway": "10.0.0.1", "ip": "10.0.0.0", "tls": "0"}
    assert result["failures"] == [{"device": 2, "check": "link", "expected": "UP", "found": "link status: DOWN"}]
    assert ["/opt/hccn_tool", "-i", "0", "-link", "-g"] in calls
    assert len(calls) == 14  # six checks and the TLS switch, per device
    # Each device's queries in their order (the devices at once).
    assert [call[3] for call in calls if call[2] == "2"] == ["-link", "-net_health", "-lldp", "-netdetect", "-gateway",
                                                             "-ip", "-tls"]


def test_a3_dies_answer_their_vnic(run):
    result, calls = run({"devices": [3], "tls": False, "vnic": True})
    assert result["npus"]["3"]["vnic"] == "192.5.2.193" and "tls" not in result["npus"]["3"]
    assert ["/opt/hccn_tool", "-i", "3", "-vnic", "-g"] in calls and result["failures"] == []


def test_missing_hccn_conf_and_lost_pings(run):
    result, calls = run({"devices": [], "ping_targets": [{"device": 0, "address": "10.9.9.9", "node": "b"},
                                                         {"device": 0, "address": "10.0.0.5", "node": "c"}]},
                        conf_present=False)
    # A ping-only run leaves hccn.conf to the run that checks the devices: one failure per node.
    assert [f["check"] for f in result["failures"]] == ["ping 10.9.9.9 (b)"]
    assert calls == [["/opt/hccn_tool", "-i", "0", "-ping", "-g", "address", "10.9.9.9"],
                     ["/opt/hccn_tool", "-i", "0", "-ping", "-g", "address", "10.0.0.5"]]


def test_missing_hccn_conf(run):
    result, _calls = run({"devices": [0]}, conf_present=False)
    assert [(f["device"], f["check"], f["found"]) for f in result["failures"]] == [(None, "hccn.conf", "missing")]
    assert result["failures"][0]["expected"].endswith("hccn.conf present")
    assert result["hccn_conf_present"] is False


def test_hccs_ping_targets(run):
    result, calls = run({"devices": [], "ping_targets": [{"device": 1, "address": "10.9.9.9", "node": "b",
                                                          "kind": "hccs_ping"}]})
    assert calls == [["/opt/hccn_tool", "-i", "1", "-hccs_ping", "-g", "address", "10.9.9.9"]]
    assert [f["check"] for f in result["failures"]] == ["hccs_ping 10.9.9.9 (b)"]
