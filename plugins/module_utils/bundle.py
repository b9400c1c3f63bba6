# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The support bundle: what to collect from a node, and secrets kept out of it (pure logic).

A bundle is one JSON object per node (FORMAT below), written by playbooks/collect.yml:

    {"format": 1, "host": "node1", "collected_at": "2026-11-30T20:00:00Z",
     "commands": [{"argv": ["npu-smi", "info", "-m"], "rc": 0, "stdout": "...", "stderr": ""}, ...],
     "files": {"/etc/hccn.conf": "...", "/usr/local/Ascend/driver/version.info": null, ...},
     "devices": ["davinci0", "davinci1", "davinci_manager", ...]}

``files`` maps every path that was looked for to its content, or null when absent.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.ascend.inference.plugins.module_utils import cann, hccn, input_rules

FORMAT = 1
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
