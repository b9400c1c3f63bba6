# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The support bundle: what to collect from a node, and secrets kept out of it (pure logic).

A bundle is one JSON object per node (FORMAT below), written by playbooks/collect.yml:

    {"format": 2, "host": "node1", "collected_at": "2026-11-30T20:00:00Z",
     "commands": [{"argv": ["npu-smi", "info", "-m"], "rc": 0, "stdout": "...", "stderr": ""}, ...],
     "files": {"/etc/hccn.conf": "...", "/usr/local/Ascend/driver/version.info": null, ...},
     "devices": ["davinci0", "davinci1", "davinci_manager", ...],
     "device_files": {"/dev/davinci0": {"type": "char", "mode": "0660", "owner": "HwHiAiUser",
                                        "group": "HwHiAiUser", "rdev": "236:0"}, ...},
     "links": {"/usr/local/Ascend/ascend-toolkit/latest": "8.0.RC1", ...},
     "engine": {"program": "/opt/ascend-inference/venv/bin/vllm", "interpreter": ".../python3",
                "versions": {"vllm": "0.11.0", "vllm-ascend": null, "vllm-mindspore": "0.5.1"}},
     "units": {"ascend-serve-chat.service": {"kind": "serve", "instance": "chat", "ports": {"port": 8001}}, ...},
     "settings": {"ascend_engine": "vllm-mindspore", ...},
     "pings": [{"device": 0, "address": "10.0.0.12", "node": "node2", "kind": "ping"}, ...]}

``files`` maps every path that was looked for to its content, or null when absent. Format 1 has the first five
keys only; the replay reads both. ``pings`` are the NPU network check's pings (their answers are among
``commands``), ``settings`` the inventory's values that the checks judge against.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import stat

from ansible_collections.ascend.inference.plugins.module_utils.engines import releases
from ansible_collections.ascend.inference.plugins.module_utils.node import cann, hccn
from ansible_collections.ascend.inference.plugins.module_utils.plan import input_rules
from ansible_collections.ascend.inference.plugins.module_utils.runtime import unit_names

FORMAT = 2
# The inventory's values a replay needs to judge as the live checks did (no secret among them).
SETTINGS = ("ascend_engine", "ascend_engine_version", "ascend_service_user", "ascend_python_env", "ascend_launcher")
# The engine programs and the distributions whose versions the preflight reads.
ENGINE_PROGRAMS = releases.PROGRAMS
ENGINE_DISTRIBUTIONS = releases.DISTRIBUTIONS
# A port on a unit's command line, its words quoted or not (module_utils/runtime/systemd.command_line quotes them):
# --port 8000, "--port" "8000", --data-parallel-rpc-port=29550.
PORT_OPTION = re.compile(r'--([a-z-]*port)(?:=|"?\s+"?)(\d+)')
REDACTED = "<redacted>"
# Secret variable names, as the planner tells them (input_rules): *_KEY, *_TOKEN, *_SECRET, *_PASSWORD.
SECRET_NAME = r"[A-Za-z_][A-Za-z0-9_]*_(?:%s)" % "|".join(input_rules.SECRET_ENV_WORDS)
_ASSIGNMENT = re.compile(r"\b(%s)=(\"[^\"]*\"|'[^']*'|\S*)" % SECRET_NAME, re.I)
# The same names, and api_key / token / secret / password alone, as JSON or YAML keys: "api_key": "x", hf_token: x.
_MAPPING = re.compile(r"""(["']?\b(?:%s|api_key|token|secret|password)["']?[ \t]*:[ \t]*)("[^"]*"|'[^']*'|[^\s,}]+)"""
                      % SECRET_NAME, re.I)
_OPTION = re.compile(r"(--(?:api-key|hf-token|[a-z0-9-]*(?:token|secret|password))(?:=|\s+))(\S+)", re.I)
_BEARER = re.compile(r"(Bearer\s+)\S+", re.I)
# Files that hold secrets and are never read into a bundle: the serve role's serve.env
# (VLLM_API_KEY), the node_env role's secrets.env, the ray_cluster role's ray-auth-token,
# Ray's own ~/.ray/auth_token.
NEVER = ("serve.env", "secrets.env", "ray-auth-token", "auth_token")

# What npu_network_check asks of each device.
HCCN_QUERIES = hccn.QUERIES + (hccn.TLS, hccn.VNIC)


def redact(text):
    """The text with every secret-looking value replaced: NAME=value, --api-key X, Bearer X."""
    if text is None:
        return None
    text = _ASSIGNMENT.sub(lambda m: "%s=%s" % (m.group(1), REDACTED), text)
    text = _MAPPING.sub(lambda m: m.group(1) + REDACTED, text)
    text = _OPTION.sub(lambda m: m.group(1) + REDACTED, text)
    return _BEARER.sub(lambda m: m.group(1) + REDACTED, text)


def commands(npu_smi, hccn_tool, physical_ids, units, journal_lines):
    """Every command a bundle records, as argv lists, in order."""
    found = [[npu_smi, "info"], [npu_smi, "info", "-l"], [npu_smi, "info", "-m"]]
    found += [[npu_smi, "info", "-t", "phyid-remap", "-p", str(n)] for n in physical_ids]
    for device in physical_ids:
        found += [[hccn_tool, "-i", str(device), "-" + query, "-g"] for query in HCCN_QUERIES]
    found += [["ip", "-j", "addr", "show"], ["uname", "-m"]]
    for unit in units:
        found += [["systemctl", "show", unit, "--property=LoadState,ActiveState,SubState,NRestarts,"
                   "ExecMainStartTimestamp,ExecMainStatus,UnitFileState"],
                  ["journalctl", "--unit=" + unit, "--lines=%d" % journal_lines, "--no-pager", "--output=short-iso"]]
    return found


def files(ascend_home, extra):
    """Every file (or glob pattern, marked by '*') a bundle records: the CANN files where the preflight looks."""
    under_home = ["driver/version.info", "firmware/version.info", "ascend-toolkit/latest/version.cfg",
                  "cann-*/set_env.sh"] + [cann.SET_ENV[layout] for layout in cann.LAYOUTS]
    under_home += [pattern for layout in cann.LAYOUTS for pattern in cann.INSTALL_INFO[layout]]
    return ["/etc/hccn.conf", "/etc/ascend_install.info"] + [ascend_home + "/" + p for p in under_home] + list(extra)


def keep_file(path):
    """False for files that hold secrets (the API key, the Ray token), which a bundle never reads."""
    return not any(path.endswith(name) for name in NEVER)


def device_entry(mode, rdev, owner, group):
    """A device file as a bundle records it: its type, permission bits, owner and group names, and major:minor."""
    kind = "char" if stat.S_ISCHR(mode) else "block" if stat.S_ISBLK(mode) else "file"
    return {"type": kind, "mode": "%04o" % stat.S_IMODE(mode), "owner": owner, "group": group,
            "rdev": "%d:%d" % (os.major(rdev), os.minor(rdev)) if kind != "file" else None}


def unit_entry(name, unit_text):
    """(kind, instance, ports) of one of the collection's unit files, or None for another unit: which instance the
    unit runs (None for the single model) and the ports its command line names."""
    found = unit_names.MODEL_UNITS.fullmatch(name)
    if not found:
        return None
    command = " ".join(line for line in (unit_text or "").splitlines() if line.startswith("ExecStart="))
    ports = dict((option, int(port)) for option, port in PORT_OPTION.findall(command))
    return {"kind": found.group(1), "instance": found.group(2), "ports": ports}


def npu_addresses(bundle_commands):
    """{device: {"ip": ..., "vnic": ...}} from a bundle's hccn_tool answers (the values the NPU network check reads)."""
    found = {}
    for command in bundle_commands:
        argv = command["argv"]
        if len(argv) == 5 and os.path.basename(argv[0]) == "hccn_tool" and argv[3] in ("-ip", "-vnic") \
                and command["rc"] == 0:
            value = hccn.parse(argv[3][1:], command["stdout"])
            if value:
                found.setdefault(argv[2], {})[argv[3][1:]] = value
    return found


def ping_targets(peers, me, device):
    """What the NPU network check pings from this node's DEVICE (hccn.ping_targets, as the npu_ping phase calls it, on the addresses
    recorded instead of the plan's checked NPUs): every other node's first NPU IP, and where the node has vNIC
    addresses (Atlas A3) its first die's vNIC over HCCS. PEERS: {host: npu_addresses}."""
    records = dict((host, {"checked": True, "npus": npus or {}}) for host, npus in peers.items())
    a3 = any(entry.get("vnic") for entry in (peers.get(me) or {}).values())
    return hccn.ping_targets(records, me, device) + (
        hccn.ping_targets(records, me, device, "hccs_ping") if a3 else [])
