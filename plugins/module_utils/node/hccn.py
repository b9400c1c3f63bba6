# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse hccn_tool answers and judge an NPU's network health (pure logic).

The healthy answers, as the vllm-ascend multi-node guide expects them and as
real captures print them (hardware-samples/hccn_tool-*): ``link status: UP``,
``net health status: Success``, an ``Ifname:`` line in the LLDP answer, a
netdetect address (``netdetect address: X`` on older drivers, ``netdetect addr: X``
in the current driver source), a default gateway, an NPU IP, and pings that end
``3 packets transmitted, 3 received, 0.00% packet loss``. An unset address reads
``0.0.0.0``; an unset gateway or IP is an error message with a non-zero exit.
Atlas A3 dies also answer ``-vnic -g`` (``vnic link status: UP``, ``vnic ipaddr: X``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

QUERIES = ("link", "net_health", "lldp", "netdetect", "gateway", "ip")
# Asked of every device too, but judged otherwise: TLS across the cluster, vNIC on A3 dies.
TLS = "tls"
VNIC = "vnic"
UNSET = "0.0.0.0"


def _field(pattern, text):
    match = re.search(pattern, text or "", re.M)
    value = match.group(1).strip() if match else ""
    return value if value and value != UNSET else None


# What each query's answer holds, as the value's regular expression.
PATTERNS = {
    "link": r"link status:[ \t]*(\S+)",
    "net_health": r"net health status:[ \t]*(.+)$",
    "lldp": r"Ifname:[ \t]*(\S+)",
    "netdetect": r"netdetect addr(?:ess)?:[ \t]*(\S*)",
    "gateway": r"default gateway:[ \t]*([^,\s]*)",
    "ip": r"ipaddr:[ \t]*(\S+)",
    TLS: r"tls switch\[(\d+)\]",
    VNIC: r"vnic ipaddr:[ \t]*(\S+)",
}


def parse(query, text):
    """The value one query reports, or None when the answer holds none (0.0.0.0 is none)."""
    if query not in PATTERNS:
        raise ValueError("unknown hccn_tool query %r" % query)
    return _field(PATTERNS[query], text)


def parse_ping(text):
    """(transmitted, received) of a ping or hccs_ping answer, or None when unreadable."""
    match = re.search(r"(\d+) packets transmitted, (\d+) received", text or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


EXPECTED = {
    "link": "UP",
    "net_health": "Success",
    "lldp": "an Ifname (remote switch port)",
    "netdetect": "a netdetect address (not 0.0.0.0)",
    "gateway": "a default gateway",
    "ip": "an NPU IP address",
    VNIC: "vnic link status: UP and a vnic ipaddr",
}


def _found(answer):
    return (answer.get("output") or "").strip() or "(no output, rc %s)" % answer.get("rc")


def judge(device, answers):
    """Failures of one device: dicts with device, check, expected, found."""
    failures = []
    for query in QUERIES + ((VNIC,) if VNIC in answers else ()):
        answer = answers.get(query, {})
        value = answer.get("value")
        if answer.get("rc", 0) != 0:
            ok = False
        elif query in ("link", "net_health"):
            ok = value == EXPECTED[query]
        elif query == VNIC:
            ok = value is not None and _field(r"vnic link status:[ \t]*(\S+)", answer.get("output")) == "UP"
        else:
            ok = value is not None
        if not ok:
            failures.append({"device": device, "check": query, "expected": EXPECTED[query], "found": _found(answer)})
    return failures


def judge_ping(device, address, node, rc, output, check="ping"):
    counts = parse_ping(output)
    if rc == 0 and counts and counts[0] > 0 and counts[0] == counts[1]:
        return []
    lines = [line for line in (output or "").strip().splitlines() if "packets transmitted" in line]
    found = lines or (output or "").strip().splitlines()[-1:] or ["(no output, rc %s)" % rc]
    return [{"device": device, "check": "%s %s (%s)" % (check, address, node),
             "expected": "no packet loss", "found": found[-1]}]


def judge_tls(switches):
    """Failures where the TLS switch differs between NPUs of the cluster.

    switches: {host: {device: "0" or "1", or None when the query gave no answer}}.
    The value most NPUs have is expected (on a tie, the first host's); every NPU
    with another value is a failure naming its host and device.
    """
    counts, order = {}, []
    for host in switches:
        for value in switches[host].values():
            if value is not None:
                counts[value] = counts.get(value, 0) + 1
                if value not in order:
                    order.append(value)
    if len(counts) < 2:
        return []
    expected = max(order, key=lambda v: (counts[v], -order.index(v)))
    failures = []
    for host in switches:
        for device, value in sorted(switches[host].items()):
            if value is not None and value != expected:
                failures.append({"host": host, "device": device, "check": TLS,
                                 "expected": "tls switch[%s] as on %d other NPU(s)" % (expected, counts[expected]),
                                 "found": "tls switch[%s]" % value})
    return failures


def table(failures):
    """The failure table the npu_network role prints; empty when there is no failure."""
    if not failures:
        return ""
    row = "%-20s %-6s %-32s %-36s %s"
    lines = ["NPU network check failed (%d failure(s)); fix them before starting Ray or serve:" % len(failures),
             row % ("host", "device", "check", "expected", "found")]
    for failure in failures:
        device = "all" if failure.get("device") is None else failure["device"]
        lines.append(row % (failure["host"], device, failure["check"], failure["expected"],
                            " ".join(str(failure["found"]).split("\n"))))
    return "\n".join(lines)


def ping_targets(records, me, device, kind="ping"):
    """One address of every other checked host, pinged from this host's DEVICE: its first NPU IP (kind ping) or its
    first die's vNIC address (kind hccs_ping, Atlas A3). RECORDS: {host: its npu_query record}."""
    key = "ip" if kind == "ping" else VNIC
    targets = []
    for host in sorted(records):
        if host == me or not (records[host] or {}).get("checked"):
            continue
        npus = records[host].get("npus") or {}
        addresses = [npus[d][key] for d in sorted(npus, key=int) if npus[d].get(key)]
        if addresses:
            targets.append({"device": int(device), "address": addresses[0], "node": host, "kind": kind})
    return targets
