#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: node_probe
short_description: Read in one pass what the preflight checks need from an Ascend node
version_added: 0.1.0
description:
  - Reports the node's IPv4 addresses per interface, the NPUs C(npu-smi info -l) lists,
    the C(/dev/davinciN) device files, the CANN toolkit version, the size of the model's
    files and the listening TCP ports with the process and systemd service holding each.
  - One module run instead of one per question, so a preflight costs one round trip per node.
  - Reads only; a tool that fails is reported in the result, never as a module failure,
    so the caller can name every problem at once.
author:
  - ascend.inference contributors (@ascend-inference)
attributes:
  check_mode:
    description: Reads the same in check mode; the module never changes anything.
    support: full
  diff_mode:
    description: There is nothing to diff.
    support: none
options:
  npu_smi:
    description: The C(npu-smi) program (a name on PATH or a path).
    type: str
    default: npu-smi
  cann_home:
    description: The CANN toolkit's home; its version is read from C(latest/ascend_toolkit_install.info) or C(latest/*/ascend_toolkit_install.info).
    type: path
    default: /usr/local/Ascend/ascend-toolkit
  model:
    description: A model directory whose regular files are counted and summed (not followed into symbolic links); omit to skip.
    type: path
"""

EXAMPLES = r"""
- name: Probe the node
  ascend.inference.node_probe:
    model: /models/Qwen2.5-7B-Instruct
  register: probe

- name: Show the NPUs npu-smi lists
  ansible.builtin.debug:
    msg: "{{ probe.npu_smi.ids }}"
"""

RETURN = r"""
ipv4:
  description: IPv4 addresses per interface (C(ip -j -4 addr show)).
  returned: always
  type: dict
  sample: {lo: [127.0.0.1], enp1s0: [192.0.2.11]}
npu_smi:
  description: C(npu-smi info -l) as run (C(rc), C(stdout), C(stderr)) and the NPU IDs it lists (C(ids)).
  returned: always
  type: dict
  sample: {rc: 0, stdout: "NPU ID : 0 ...", stderr: "", ids: [0, 1]}
device_files:
  description: N of every C(/dev/davinciN), sorted.
  returned: always
  type: list
  elements: int
  sample: [0, 1, 2, 3]
cann_version:
  description: The CANN toolkit version, or null when no version file is found.
  returned: always
  type: str
  sample: 8.0.RC1
model:
  description: The model directory's regular files (C(files)) and their bytes (C(bytes)); null when O(model) is omitted.
  returned: always
  type: dict
  sample: {files: 12, bytes: 15231233024}
listeners:
  description: Listening TCP sockets with the process (C(process), C(pid)) and its systemd service (C(unit), null outside one).
  returned: always
  type: list
  elements: dict
  sample: [{address: "0.0.0.0", port: 6379, process: gcs_server, pid: 812, unit: ascend-ray.service}]
"""

import glob
import os
import stat

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ascend.inference.plugins.module_utils import node_probe as parse


def _read(path):
    try:
        with open(path) as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def _run(module, argv):
    """(rc, stdout, stderr); a program that is not there gives rc 127, as in a shell."""
    program = argv[0] if os.path.isabs(argv[0]) else module.get_bin_path(argv[0])
    if not program or not os.path.exists(program):
        return 127, "", "%s: command not found" % argv[0]
    return module.run_command([program] + argv[1:])


def _cann_version(home):
    for pattern in ("latest/ascend_toolkit_install.info", "latest/*/ascend_toolkit_install.info"):
        for path in sorted(glob.glob(os.path.join(home, pattern))):
            return parse.cann_version(_read(path))
    return None


def _model(path):
    files = size = 0
    for root, _dirs, names in os.walk(path):
        for name in names:
            info = os.lstat(os.path.join(root, name))
            if stat.S_ISREG(info.st_mode):
                files += 1
                size += info.st_size
    return {"files": files, "bytes": size}


def main():
    module = AnsibleModule(
        argument_spec=dict(
            npu_smi=dict(type="str", default="npu-smi"),
            cann_home=dict(type="path", default="/usr/local/Ascend/ascend-toolkit"),
            model=dict(type="path"),
        ),
        supports_check_mode=True,
    )
    rc, out, err = _run(module, ["ip", "-j", "-4", "addr", "show"])
    if rc != 0:
        module.fail_json(msg="ip -j -4 addr show failed (rc %d): %s" % (rc, err.strip()))
    npu_rc, npu_out, npu_err = _run(module, [module.params["npu_smi"], "info", "-l"])
    ss_rc, ss_out, ss_err = _run(module, ["ss", "-ltnpH"])
    if ss_rc != 0:
        module.fail_json(msg="ss -ltnpH failed (rc %d): %s" % (ss_rc, ss_err.strip()))
    sockets = parse.listeners(ss_out)
    for socket in sockets:
        socket["unit"] = parse.unit_of_cgroup(_read("/proc/%d/cgroup" % socket["pid"])) if socket["pid"] else None
    devices = sorted(index for index in (parse.davinci_index(os.path.basename(path))
                                         for path in glob.glob("/dev/davinci*")) if index is not None)
    model = module.params["model"]
    module.exit_json(
        changed=False,
        ipv4=parse.ipv4_by_interface(out),
        npu_smi={"rc": npu_rc, "stdout": npu_out, "stderr": npu_err, "ids": parse.npu_ids(npu_out)},
        device_files=devices,
        cann_version=_cann_version(module.params["cann_home"]),
        model=_model(model) if model else None,
        listeners=sockets,
    )


if __name__ == "__main__":
    main()
