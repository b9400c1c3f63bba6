# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the npu_network role: whom to ping, and the one failure table of the whole cluster."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.ascend.inference.plugins.module_utils import hccn


def _result(hostvars, host, name):
    value = hostvars[host].get(name) if host in hostvars else None
    return value if isinstance(value, dict) and not value.get("skipped") else {}


def npu_ping_targets(hostvars, hosts, me, device, kind="ping"):
    """One address of every other host, pinged from this host's device: its first NPU IP
    (kind ping) or its first die's vNIC address (kind hccs_ping, Atlas A3)."""
    key = "ip" if kind == "ping" else hccn.VNIC
    targets = []
    for host in hosts:
        if host == me:
            continue
        npus = _result(hostvars, host, "npu_network_local").get("npus", {})
        addresses = [npus[d][key] for d in sorted(npus, key=int) if npus[d].get(key)]
        if addresses:
            targets.append({"device": int(device), "address": addresses[0], "node": host, "kind": kind})
    return targets


def npu_network_report(hostvars, hosts):
    """Every host's failures, the TLS switches judged across the cluster, as one table ('' when none)."""
    failures, switches = [], {}
    for host in hosts:
        local = _result(hostvars, host, "npu_network_local")
        for name in ("npu_network_local", "npu_network_ping"):
            failures.extend(dict(f, host=host) for f in _result(hostvars, host, name).get("failures", []))
        switches[host] = dict((int(d), v.get(hccn.TLS)) for d, v in local.get("npus", {}).items())
    return hccn.table(failures + hccn.judge_tls(switches))


class FilterModule(object):
    def filters(self):
        return {"npu_ping_targets": npu_ping_targets, "npu_network_report": npu_network_report}
