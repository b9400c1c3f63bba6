# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse hccn_tool answers and judge an NPU's network health (pure logic).

The healthy answers, as the vllm-ascend multi-node guide expects them:
``link status: UP``, ``net health status: Success``, an ``Ifname:`` line in
the LLDP answer, a netdetect address, a default gateway, an NPU IP, and pings
that end ``3 packets transmitted, 3 received, 0.00% packet loss``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

QUERIES = ("link", "net_health", "lldp", "netdetect", "gateway", "ip")


def _field(pattern, text):
    match = re.search(pattern, text or "", re.M)
    return match.group(1).strip() if match and match.group(1).strip() else None


# What each query's answer holds, as the value's regular expression.
PATTERNS = {
    "link": r"link status:\s*(\S+)",
    "net_health": r"net health status:\s*(.+)$",
    "lldp": r"Ifname:\s*(\S+)",
    "netdetect": r"netdetect address:\s*(\S*)",
    "gateway": r"default gateway:\s*([^,\s]*)",
    "ip": r"ipaddr:\s*(\S+)",
}


def parse(query, text):
    """The value one query reports, or None when the answer holds none."""
    if query not in PATTERNS:
        raise ValueError("unknown hccn_tool query %r" % query)
    return _field(PATTERNS[query], text)


def parse_ping(text):
    """(transmitted, received) of a ping answer, or None when unreadable."""
    match = re.search(r"(\d+) packets transmitted, (\d+) received", text or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


EXPECTED = {
    "link": "UP",
    "net_health": "Success",
    "lldp": "an Ifname (remote switch port)",
    "netdetect": "a netdetect address",
    "gateway": "a default gateway",
    "ip": "an NPU IP address",
}


def judge(device, answers):
    """Failures of one device: dicts with device, check, expected, found."""
    failures = []
    for query in QUERIES:
        answer = answers.get(query, {})
        value = answer.get("value")
        if answer.get("rc", 0) != 0:
            ok = False
        elif query in ("link", "net_health"):
            ok = value == EXPECTED[query]
        else:
            ok = value is not None
        if not ok:
            found = (answer.get("output") or "").strip() or "(no output, rc %s)" % answer.get("rc")
            failures.append({"device": device, "check": query, "expected": EXPECTED[query], "found": found})
    return failures


def judge_ping(device, address, node, rc, output):
    counts = parse_ping(output)
    if rc == 0 and counts and counts[0] > 0 and counts[0] == counts[1]:
        return []
    found = (output or "").strip().splitlines()[-1:] or ["(no output, rc %s)" % rc]
    return [{"device": device, "check": "ping %s (%s)" % (address, node),
             "expected": "no packet loss", "found": found[0]}]
