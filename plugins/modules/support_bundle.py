#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: support_bundle
short_description: Record every command output and file the collection reads on an Ascend node
version_added: 0.1.0
description:
  - Runs, on one node, every command the collection's checks read - C(npu-smi info), C(info -l), C(info -m),
    C(info -t phyid-remap -p N) per C(/dev/davinciN), C(hccn_tool -i N -<query> -g) per device for link,
    net_health, lldp, netdetect, gateway, ip, tls and vnic, C(ip -j addr show), C(uname -m), and per unit
    C(systemctl show) and the last journal lines - and reads the CANN, driver and NPU network files.
  - Returns them as one bundle (format 1, see docs/support-bundle.md) that C(tests/sim/replay.sh) replays on a
    simulated node. A command that fails is recorded with its exit status, never a module failure.
  - "No secrets: C(serve.env), the Ray token and C(auth_token) files are never read, and values of
    secret-looking names (C(*_KEY), C(*_TOKEN), C(*_SECRET), C(*_PASSWORD)), C(--api-key)-like options and
    C(Bearer) credentials are replaced by C(<redacted>) in every output and file."
author:
  - ascend.inference contributors (@ascend-inference)
attributes:
  check_mode:
    description: Only reads; runs the same in check mode.
    support: full
  diff_mode:
    description: Nothing changes.
    support: none
options:
  npu_smi:
    description: The C(npu-smi) program.
    type: str
    default: npu-smi
  hccn_tool:
    description: The C(hccn_tool) program.
    type: str
    default: /usr/local/Ascend/driver/tools/hccn_tool
  ascend_home:
    description: Where the Ascend software is installed.
    type: path
    default: /usr/local/Ascend
  units:
    description: systemd units whose state and last journal lines are recorded.
    type: list
    elements: str
    default: [ascend-ray.service, ascend-serve.service, ascend-firewall.service]
  journal_lines:
    description: Journal lines recorded per unit.
    type: int
    default: 200
  files:
    description: Further files to record (redacted like the rest).
    type: list
    elements: path
    default: [/etc/ascend-inference/node.env]
"""

EXAMPLES = r"""
- name: Record the node
  ascend.inference.support_bundle:
  register: bundle

- name: Keep it on the controller
  ansible.builtin.copy:
    content: "{{ bundle.bundle | to_nice_json }}"
    dest: "bundle/{{ inventory_hostname }}.json"
    mode: "0600"
  delegate_to: localhost
"""

RETURN = r"""
bundle:
  description: The node's bundle - C(format), C(host), C(collected_at), C(commands) (C(argv), C(rc), C(stdout),
    C(stderr)), C(files) (path to content, null when absent) and C(devices) (the names of C(/dev/davinci*)).
  returned: always
  type: dict
"""

import datetime
import glob
import socket

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ascend.inference.plugins.module_utils import bundle as spec
from ansible_collections.ascend.inference.plugins.module_utils import node_io


def _read(path):
    return spec.redact(node_io.read(path))


def _run(module, argv):
    rc, out, err = node_io.run(module, argv)
    return {"argv": argv, "rc": rc, "stdout": spec.redact(out), "stderr": spec.redact(err)}


def main():
    module = AnsibleModule(
        argument_spec=dict(
            npu_smi=dict(type="str", default="npu-smi"),
            hccn_tool=dict(type="str", default="/usr/local/Ascend/driver/tools/hccn_tool"),
            ascend_home=dict(type="path", default="/usr/local/Ascend"),
            units=dict(type="list", elements="str",
                       default=["ascend-ray.service", "ascend-serve.service", "ascend-firewall.service"]),
            journal_lines=dict(type="int", default=200),
            files=dict(type="list", elements="path", default=["/etc/ascend-inference/node.env"]),
        ),
        supports_check_mode=True,
    )
    params = module.params
    devices, physical = node_io.davinci_devices()
    argvs = spec.commands(params["npu_smi"], params["hccn_tool"], physical, params["units"], params["journal_lines"])
    files = {}
    for pattern in spec.files(params["ascend_home"], params["files"]):
        matches = sorted(glob.glob(pattern)) if "*" in pattern else [pattern]
        for path in matches:
            if spec.keep_file(path):
                files[path] = _read(path)
    module.exit_json(changed=False, bundle={
        "format": spec.FORMAT,
        "host": socket.gethostname(),
        "collected_at": datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commands": [_run(module, argv) for argv in argvs],
        "files": files,
        "devices": devices,
    })


if __name__ == "__main__":
    main()
