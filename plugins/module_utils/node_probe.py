# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for what the node_probe module reads on a node (pure logic)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

DAVINCI = re.compile(r"^davinci(\d+)$")
SS_PORT = re.compile(r"^(.*):(\d+)$")
SS_PROCESS = re.compile(r'\(\("([^"]+)",pid=(\d+)')
UNIT = re.compile(r"/([^/]+\.service)(?:/|$)")


def ipv4_by_interface(ip_json):
    """{interface: [IPv4 address, ...]} from `ip -j -4 addr show`."""
    found = {}
    for link in json.loads(ip_json or "[]"):
        addresses = [info["local"] for info in link.get("addr_info", []) if info.get("family") == "inet"]
        found[link["ifname"]] = addresses
    return found


def davinci_index(name):
    """3 for 'davinci3'; None for davinci_manager and anything else."""
    match = DAVINCI.match(name)
    return int(match.group(1)) if match else None


def listeners(ss_output):
    """Listening TCP sockets from `ss -ltnpH`: port, address, process, pid (None when ss cannot tell)."""
    found = []
    for line in (ss_output or "").splitlines():
        fields = line.split()
        if len(fields) < 4:
            continue
        match = SS_PORT.match(fields[3])
        if not match:
            continue
        process = SS_PROCESS.search(line)
        found.append({
            "address": match.group(1),
            "port": int(match.group(2)),
            "process": process.group(1) if process else None,
            "pid": int(process.group(2)) if process else None,
        })
    return found


def unit_of_cgroup(cgroup_text):
    """The systemd service a process runs in, from /proc/PID/cgroup, or None."""
    units = UNIT.findall(cgroup_text or "")
    return units[-1] if units else None
