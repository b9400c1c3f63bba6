# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NPU network check in three phases: each node queries its NPUs with hccn_tool (npu_query), then pings one
NPU address of every other node from its first NPU (npu_ping: the addresses are what the others' queries
found), and from every NPU of a prefill or decode pool one NPU of each host of the other pool; then one table of
every failure of the cluster, the TLS switches judged across it (npu_report, once)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.ascend.inference.plugins.module_utils.node import hccn
from ansible_collections.ascend.inference.plugins.plugin_utils.phases.phase import Refused

SKIPPED = ("ascend_skip_npu_network_check is true: the NPU links, health and cross-node NPU pings of %s are NOT "
           "verified.")
NO_PORTS = ("%s has no NPU network ports, so hccn_tool is not run there; traffic between nodes uses the host "
            "network (%s).")
SETTINGS = {"hccn_tool": "str", "hccn_conf": "str", "skip": "bool"}


def _checked(node, settings):
    """(whether this node's NPUs are checked, what the log says where not)."""
    if settings["skip"]:
        return False, {"warnings": [SKIPPED % node.host]}
    npu = (node.applied("preflight") or {}).get("npu") or {}
    if not npu.get("npu_network", True):
        return False, {"notes": [NO_PORTS % (npu.get("family_name") or "unknown NPU family",
                                             node.plan["nodes"][node.host].get("nic") or "ascend_nic")]}
    return True, {}


def _a3(node):
    return ((node.applied("preflight") or {}).get("npu") or {}).get("family") == "910_93"


def _check(node, settings, **options):
    found = node.run("ascend.inference.npu_network_check", dict(
        hccn_tool=settings["hccn_tool"], hccn_conf=settings["hccn_conf"], **options))
    if found.get("failed"):
        raise Refused("%s: %s" % (node.host, found.get("msg")))
    return found


def query(node, settings):
    """settings: hccn_tool, hccn_conf, skip. hccn_tool takes physical IDs: the plan maps the node's logic IDs."""
    checked, said = _checked(node, settings)
    if not checked:
        return dict(said, apply=None, record={"checked": False})
    devices = node.plan["nodes"][node.host]["physical_devices"]
    if not devices:
        # A host where no instance of ascend_instances runs.
        return {"apply": None, "record": {"checked": False}, "notes": ["no NPU of %s is planned: not checked" % node.host]}
    found = _check(node, settings, devices=devices, vnic=_a3(node))
    return {"apply": None, "record": {"checked": True, "npus": found["npus"], "failures": found["failures"]},
            "notes": ["hccn_tool asked about NPU %s (physical IDs): %d failure(s)"
                      % (",".join(str(d) for d in devices), len(found["failures"]))]}


def pd_ping_targets(plan, records, me):
    """Prefill and decode pools (the plan's ``pd``): the KV cache moves NPU to NPU between them, so every NPU of a
    pool on this host pings the first pool NPU of each host of the other pool (prefill to decode and back)."""
    targets = []
    for _name, entry in sorted((plan.get("pd") or {}).items()):
        for pool, other in (("prefill", "decode"), ("decode", "prefill")):
            mine = plan["instances"][entry["pools"][pool]["instance"]]["nodes"].get(me)
            theirs = plan["instances"][entry["pools"][other]["instance"]]
            if not mine:
                continue
            for host in theirs["cluster"]["node_order"]:
                npus = (records.get(host) or {}).get("npus") or {}
                if host == me or not (records.get(host) or {}).get("checked"):
                    continue
                addresses = [npus[str(d)]["ip"] for d in theirs["nodes"][host]["physical_devices"]
                             if (npus.get(str(d)) or {}).get("ip")]
                targets.extend({"device": int(device), "address": addresses[0], "node": host, "kind": "ping"}
                               for device in mine["physical_devices"] if addresses)
    return targets


def ping(node, settings):
    mine = node.applied("npu_query") or {}
    if not mine.get("checked"):
        return {"apply": None, "record": {"failures": []}}
    records = dict((host, node.applied("npu_query", host=host)) for host in node.play_hosts())
    first = node.plan["nodes"][node.host]["physical_devices"][0]
    targets = hccn.ping_targets(records, node.host, first) + (
        hccn.ping_targets(records, node.host, first, "hccs_ping") if _a3(node) else [])
    for target in pd_ping_targets(node.plan, records, node.host):
        if target not in targets:
            targets.append(target)
    if not targets:
        return {"apply": None, "record": {"failures": []}}
    found = _check(node, settings, devices=[], ping_targets=targets)
    return {"apply": None, "record": {"failures": found["failures"]}}


def report_table(records):
    """Every host's failures, the TLS switches judged across the cluster, as one table ('' when none).
    RECORDS: {host: (its npu_query record, its npu_ping record)}."""
    failures, switches = [], {}
    for host in sorted(records):
        local, pinged = [record or {} for record in records[host]]
        if not local.get("checked"):
            continue
        for found in (local, pinged):
            failures.extend(dict(f, host=host) for f in found.get("failures") or [])
        switches[host] = dict((int(d), v.get(hccn.TLS)) for d, v in (local.get("npus") or {}).items())
    return hccn.table(failures + hccn.judge_tls(switches))


def report(node, settings):
    """Once for the play: fails with one table of every failure."""
    records = dict((host, (node.applied("npu_query", host=host), node.applied("npu_ping", host=host)))
                   for host in node.play_hosts())
    table = report_table(records)
    if table:
        raise Refused(table)
    return {"apply": None, "record": None}
