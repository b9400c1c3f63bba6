#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: npu_network_check
short_description: Check the NPU network of one node with hccn_tool
version_added: 0.1.0
description:
  - For each NPU device, runs the checks of the vllm-ascend multi-node guide with C(hccn_tool)
    (C(-link -g), C(-net_health -g), C(-lldp -g), C(-netdetect -g), C(-gateway -g), C(-ip -g)),
    reads the TLS switch (C(-tls -g), judged across the cluster by the caller), on Atlas A3 dies the
    vNIC (C(-vnic -g)), and reads C(/etc/hccn.conf).
  - Optionally pings NPU addresses of other nodes (C(-ping -g address X)), or on Atlas A3 their vNIC
    addresses over HCCS (C(-hccs_ping -g address X)), from a local device.
  - Reports every failure (device, check, expected, found); it never fails on them itself, so that
    a play can gather all nodes' failures into one report.
  - Up to 8 devices are asked at once, each device's queries in order, as a node has 8 or 16 NPUs and each query is
    one C(hccn_tool) run. The pings, which leave from one device, go one after the other.
  - Read-only; runs the same in check mode.
author:
  - ascend.inference contributors (@ascend-inference)
attributes:
  check_mode:
    description: Only reads; the checks run in check mode too.
    support: full
  diff_mode:
    description: Nothing changes, so there is nothing to diff.
    support: none
options:
  devices:
    description: Physical IDs of the NPUs to check (the N of C(/dev/davinciN), what C(hccn_tool -i) takes).
    type: list
    elements: int
    required: true
  tls:
    description: Read each device's TLS switch (C(-tls -g)); a device that does not answer reports null.
    type: bool
    default: true
  vnic:
    description: Check each device's vNIC (C(-vnic -g)), as on Atlas A3 dies.
    type: bool
    default: false
  hccn_tool:
    description: Path or name of C(hccn_tool).
    type: str
    default: hccn_tool
  hccn_conf:
    description: The NPU network configuration file that must exist (checked when O(devices) is not empty).
    type: path
    default: /etc/hccn.conf
  ping_targets:
    description:
      - NPU addresses to ping, each from a local device. A device's pings run one after the other, up to 8 devices at
        a time (a prefill pool pings the decode nodes from every one of its NPUs).
    type: list
    elements: dict
    default: []
    suboptions:
      device:
        description: Local device to ping from.
        type: int
        required: true
      address:
        description: NPU address to ping.
        type: str
        required: true
      node:
        description: The node that owns the address, for the report.
        type: str
        default: ""
      kind:
        description: C(ping) (NPU IP over the NPU network) or C(hccs_ping) (A3 vNIC address over HCCS).
        type: str
        choices: [ping, hccs_ping]
        default: ping
"""

EXAMPLES = r"""
- name: Check NPUs 0-7 and ping NPU 0 of the other node
  ascend.inference.npu_network_check:
    devices: [0, 1, 2, 3, 4, 5, 6, 7]
    hccn_tool: /usr/local/Ascend/driver/tools/hccn_tool
    ping_targets:
      - {device: 0, address: 10.20.0.12, node: node2}
  register: npu_net
"""

RETURN = r"""
npus:
  description: What each device reported, keyed by device id (as a string).
  returned: always
  type: dict
  sample: {"0": {"link": "UP", "net_health": "Success", "lldp": "400GE1/1/5:1",
                 "netdetect": "10.20.0.1", "gateway": "10.20.0.1", "ip": "10.20.0.11", "tls": "0"}}
hccn_conf_present:
  description: Whether O(hccn_conf) exists.
  returned: always
  type: bool
failures:
  description: Every failed check.
  returned: always
  type: list
  elements: dict
  sample: [{"device": 3, "check": "link", "expected": "UP", "found": "link status: DOWN"}]
"""

import os
import shlex
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ascend.inference.plugins.module_utils.node.hccn import (
    QUERIES, TLS, VNIC, judge, judge_ping, parse)


# NPUs asked at once: hccn_tool answers one device per call, and a node has 8 or 16 of them.
PARALLEL = 8
C_LOCALE = {"LANG": "C", "LC_ALL": "C", "LC_MESSAGES": "C"}  # the answers are parsed in English


def answer_path(workdir, device, query):
    """Where ask_script leaves one query's answer (and, beside it with .rc, its exit code)."""
    return os.path.join(workdir, "%d-%s" % (device, query))


def ask_script(tool, devices, queries, workdir):
    """A shell script asking DEVICES their QUERIES: PARALLEL devices at a time, each device's queries in order,
    each answer and exit code in a file of WORKDIR. One shell rather than Python threads: run_command passes a
    preexec_fn, which Python documents as unsafe in a process with threads."""
    lines = ['ask() { out=$1; shift; "$@" >"$out" 2>&1; echo $? >"$out.rc"; }']
    for index, device in enumerate(devices):
        asks = ("ask %s %s -i %d -%s -g" % (shlex.quote(answer_path(workdir, device, query)), shlex.quote(tool),
                                            device, query) for query in queries)
        steps = "; ".join(asks)
        lines.append("( %s ) &" % steps)
        if (index + 1) % PARALLEL == 0:
            lines.append("wait")
    lines.append("wait")
    return "\n".join(lines)


def answer(workdir, device, query, shell_output):
    """{rc, output, value} of one query from its files; a query the shell never ran gets the shell's own output."""
    path = answer_path(workdir, device, query)
    try:
        with open(path + ".rc") as handle:
            rc = int(handle.read().strip())
        with open(path, errors="replace") as handle:
            output = handle.read()
    except (IOError, OSError, ValueError):
        return {"rc": 127, "output": shell_output or "not run", "value": None}
    return {"rc": rc, "output": output, "value": parse(query, output) if rc == 0 else None}


def ask_all(module, tool, devices, queries):
    """{device: {query: {rc, output, value}}}, from one run of ask_script."""
    with tempfile.TemporaryDirectory(prefix="hccn-") as workdir:
        dummy, out, err = module.run_command(["/bin/sh", "-c", ask_script(tool, devices, queries, workdir)],
                                             environ_update=C_LOCALE)
        return dict((device, dict((query, answer(workdir, device, query, out + err)) for query in queries))
                    for device in devices)


def ping_script(tool, targets, workdir):
    """A shell script sending TARGETS' pings: each device's one after the other (no capture shows a device answering
    two at once), PARALLEL devices at a time; each answer and exit code in WORKDIR under the target's index."""
    lines = ['ask() { out=$1; shift; "$@" >"$out" 2>&1; echo $? >"$out.rc"; }']
    by_device = {}
    for index, target in enumerate(targets):
        by_device.setdefault(target["device"], []).append((index, target))
    for count, (device, mine) in enumerate(sorted(by_device.items())):
        steps = "; ".join("ask %s %s -i %d -%s -g address %s" % (
            shlex.quote(os.path.join(workdir, "ping-%d" % index)), shlex.quote(tool), device, target["kind"],
            shlex.quote(target["address"])) for index, target in mine)
        lines.append("( %s ) &" % steps)
        if (count + 1) % PARALLEL == 0:
            lines.append("wait")
    lines.append("wait")
    return "\n".join(lines)


def ping_all(module, tool, targets):
    """[(target, (rc, output))] of every ping, from one run of ping_script."""
    if not targets:
        return []
    found = []
    with tempfile.TemporaryDirectory(prefix="hccn-ping-") as workdir:
        dummy, out, err = module.run_command(["/bin/sh", "-c", ping_script(tool, targets, workdir)],
                                             environ_update=C_LOCALE)
        for index, target in enumerate(targets):
            path = os.path.join(workdir, "ping-%d" % index)
            try:
                with open(path + ".rc") as handle:
                    rc = int(handle.read().strip())
                with open(path, errors="replace") as handle:
                    found.append((target, (rc, handle.read())))
            except (IOError, OSError, ValueError):
                found.append((target, (127, out + err or "not run")))
    return found


def main():
    module = AnsibleModule(
        argument_spec=dict(
            devices=dict(type="list", elements="int", required=True),
            tls=dict(type="bool", default=True),
            vnic=dict(type="bool", default=False),
            hccn_tool=dict(type="str", default="hccn_tool"),
            hccn_conf=dict(type="path", default="/etc/hccn.conf"),
            ping_targets=dict(type="list", elements="dict", default=[], options=dict(
                device=dict(type="int", required=True),
                address=dict(type="str", required=True),
                node=dict(type="str", default=""),
                kind=dict(type="str", default="ping", choices=["ping", "hccs_ping"]),
            )),
        ),
        supports_check_mode=True,
    )
    tool = module.params["hccn_tool"]
    if os.sep not in tool and module.get_bin_path(tool) is None:
        module.fail_json(msg="hccn_tool not found on PATH; set its path (the NPU driver installs it under "
                             "/usr/local/Ascend/driver/tools/)")
    npus, failures = {}, []
    devices = module.params["devices"]
    queries = QUERIES + ((TLS,) if module.params["tls"] else ()) + ((VNIC,) if module.params["vnic"] else ())
    program = tool if os.sep in tool else module.get_bin_path(tool)
    found = ask_all(module, program, devices, queries) if devices else {}
    for device in devices:
        answers = found[device]
        npus[str(device)] = {q: a["value"] for q, a in answers.items()}
        failures.extend(judge(device, dict((q, a) for q, a in answers.items() if q != TLS)))
    conf_present = os.path.isfile(module.params["hccn_conf"])
    if not conf_present and module.params["devices"]:  # once per node: a ping-only run does not ask
        failures.append({"device": None, "check": "hccn.conf", "expected": "%s present" % module.params["hccn_conf"],
                         "found": "missing"})
    for target, (rc, output) in ping_all(module, program, module.params["ping_targets"]):
        failures.extend(judge_ping(target["device"], target["address"], target["node"], rc, output, target["kind"]))
    module.exit_json(changed=False, npus=npus, hccn_conf_present=conf_present, failures=failures)


if __name__ == "__main__":
    main()
