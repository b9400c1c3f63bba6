# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for what the node_probe module reads on a node (pure logic)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.ascend.inference.plugins.module_utils.engines import releases

DAVINCI = re.compile(r"^davinci(\d+)$")
SS_PORT = re.compile(r"^(.*):(\d+)$")
SS_PROCESS = re.compile(r'\(\("([^"]+)",pid=(\d+)')
# `ss -e`: the socket's owner and cgroup, which the kernel tells even when ss may not read
# the owning process's descriptors (another user's process, without CAP_SYS_PTRACE).
# ss leaves out "uid:" for root's sockets (it prints the field only when non-zero), so an -e line
# (which always has "ino:") without it is root's.
SS_UID = re.compile(r"\buid:(\d+)")
SS_EXTENDED = re.compile(r"\bino:\d+")
SS_CGROUP = re.compile(r"\bcgroup:(\S+)")
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
    """Listening TCP sockets from `ss -ltnpeH`: port, address, process, pid (None when ss cannot tell),
    uid (0 on an -e line without one) and cgroup (None where ss does not print them)."""
    found = []
    for line in (ss_output or "").splitlines():
        fields = line.split()
        if len(fields) < 4:
            continue
        match = SS_PORT.match(fields[3])
        if not match:
            continue
        process, uid, cgroup = SS_PROCESS.search(line), SS_UID.search(line), SS_CGROUP.search(line)
        found.append({
            "address": match.group(1),
            "port": int(match.group(2)),
            "process": process.group(1) if process else None,
            "pid": int(process.group(2)) if process else None,
            "uid": int(uid.group(1)) if uid else (0 if SS_EXTENDED.search(line) else None),
            "cgroup": cgroup.group(1) if cgroup else None,
        })
    return found


def unit_of_cgroup(cgroup_text, containers=None):
    """The systemd service a process runs in, from /proc/PID/cgroup, or None.

    A container's processes run in the container's own cgroup (``libpod-<id>.scope``, ``docker-<id>.scope``
    or ``/docker/<id>``), not in the unit that started it: ``containers`` maps container IDs to the
    unit that runs each.
    """
    for container_id, unit in (containers or {}).items():
        if container_id and container_id in (cgroup_text or ""):
            return unit
    units = UNIT.findall(cgroup_text or "")
    return units[-1] if units else None


# Run by a Python environment's interpreter (the engine's, Ray's): its version and the installed version of each
# distribution named in argv.
PYTHON_VERSIONS = (
    "import importlib.metadata as m, json, sys\n"
    "found = {}\n"
    "for name in sys.argv[1:]:\n"
    "    try:\n"
    "        found[name] = m.version(name)\n"
    "    except m.PackageNotFoundError:\n"
    "        found[name] = None\n"
    "print(json.dumps({'version': sys.version.split()[0], 'distributions': found}))\n"
)


def _public(version):
    """A version without its local part: vllm-ascend builds vLLM with VLLM_TARGET_DEVICE=empty,
    whose metadata then says 0.23.0+empty."""
    return version.split("+", 1)[0] if isinstance(version, str) else version


def shebang_interpreter(first_line):
    """(interpreter, name to look up on PATH) from a script's first line; (None, None) if it has no shebang.

    ``#!/opt/env/bin/python3`` gives ("/opt/env/bin/python3", None); ``#!/usr/bin/env python3``
    gives (None, "python3"), as pip's console scripts and hand-written wrappers start.
    """
    line = (first_line or "").strip()
    if not line.startswith("#!"):
        return None, None
    words = line[2:].split()
    if not words:
        return None, None
    if words[0].endswith("/env"):
        names = [w for w in words[1:] if not w.startswith("-")]
        return (None, names[0]) if names else (None, None)
    return words[0], None


def engine_problems(found, distribution, engine_version, vllm_version):
    """Sentences naming how the installed engine differs from the plan (empty when it matches).

    ``found``: what the probe read (``program``, ``interpreter``, ``versions`` by distribution,
    ``error``); the engine's ``distribution`` should be at ``engine_version`` and vLLM at ``vllm_version``.
    """
    if not found.get("program"):
        return []  # not installed (yet): reported as a note, the serve role says where it looked
    where = "%s (Python %s)" % (found["program"], found.get("interpreter"))
    if found.get("error"):
        return ["%s: cannot read the installed engine's version: %s" % (where, found["error"])]
    versions = found.get("versions") or {}
    problems = []
    installed = versions.get(distribution)
    if _public(installed) != _public(engine_version):
        what = "the installed %s is %s" % (distribution, installed) if installed else \
            "no %s distribution is installed" % distribution
        problems.append("ascend_engine_version is %s but %s: %s" % (engine_version, what, where))
    vllm = versions.get(releases.VLLM_DISTRIBUTION)
    if _public(vllm) != _public(vllm_version):
        problems.append("%s %s runs on vLLM %s but %s: %s" % (
            distribution, engine_version, vllm_version,
            "the installed vLLM is %s" % vllm if vllm else "no vllm distribution is installed", where))
    return problems
