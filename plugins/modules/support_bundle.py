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
  - Also records the C(/dev/davinci*) and management device files (type, mode, owner, group, major:minor), the
    target of every symbolic link under O(ascend_home) two levels down (CANN's C(latest), C(cann)), the engine's
    and vLLM's versions as the serve program's Python reports them (the image's in container mode), each unit of the collection with the instance
    it belongs to and the ports its command names, and O(settings).
  - Returns them as one bundle (format 2, see docs/support-bundle.md) that C(tests/sim/replay.sh) replays on a
    simulated node. A command that fails is recorded with its exit status, never a module failure.
  - With O(ping_peers), only pings instead - what the NPU network check pings from the node's first NPU, given
    the other nodes' NPU addresses (the C(npu_addresses) of their bundles) - returned as C(pings) and C(commands).
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
  python_env:
    description: The engine's Python environment; its C(bin/) is searched for the serve program before C(PATH).
    type: path
    default: /opt/ascend-inference/venv
  unit_dir:
    description: Where the collection's units are; every C(ascend-serve*), C(ascend-ray*), C(ascend-watchdog*) and
      C(ascend-pd-*) unit there is recorded, besides O(units).
    type: path
    default: /etc/systemd/system
  settings:
    description: Inventory values the checks judge against (the engine and its version, the service account), kept
      as given. Never a secret.
    type: dict
    default: {}
  container_image:
    description:
      - Container mode (C(ascend_runtime=container)) - the engine image on the node. The engine's and vLLM's
        versions are then read inside it, by its C(python3), in a throwaway container without network, as the
        engine_container role reads them; the image is not pulled.
    type: str
  container_engine:
    description: The program that runs O(container_image), C(podman) or C(docker); C(auto) takes the one found.
    type: str
    default: auto
  ping_peers:
    description: >-
      The other nodes' NPU addresses, C({host: {device: {ip, vnic}}}). When given, the module only pings.
    type: dict
  me:
    description: This node's name among O(ping_peers).
    type: str
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
    C(stderr)), C(files) (path to content, null when absent), C(devices) (the names of C(/dev/davinci*)),
    C(device_files), C(links), C(engine), C(units), C(settings), C(npu_addresses); with O(ping_peers), C(pings)
    and C(commands) only.
  returned: always
  type: dict
"""

import datetime
import glob
import grp
import json
import os
import pwd
import socket

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ascend.inference.plugins.module_utils.node import bundle as spec
from ansible_collections.ascend.inference.plugins.module_utils.runtime import container, service_account, unit_names
from ansible_collections.ascend.inference.plugins.module_utils.node import readers
from ansible_collections.ascend.inference.plugins.module_utils.apply.file_diff import account_name
from ansible_collections.ascend.inference.plugins.module_utils.node.probe import PYTHON_VERSIONS, shebang_interpreter


def _read(path):
    return spec.redact(readers.read(path))


def _run(module, argv):
    rc, out, err = readers.run(module, argv)
    return {"argv": argv, "rc": rc, "stdout": spec.redact(out), "stderr": spec.redact(err)}


def _device_files():
    found = {}
    paths = set(glob.glob("/dev/davinci*")) | set("/dev/" + n for n in service_account.MANAGEMENT_DEVICES)
    for path in sorted(paths):
        if os.path.lexists(path):
            info = os.lstat(path)
            found[path] = spec.device_entry(info.st_mode, info.st_rdev, account_name(pwd.getpwuid, info.st_uid),
                                            account_name(grp.getgrgid, info.st_gid))
    return found


def _links(ascend_home):
    """Every symbolic link under ASCEND_HOME, two levels down (CANN's latest, cann), to its target as written."""
    found = {}
    for pattern in ("*", "*/*"):
        for path in sorted(glob.glob(os.path.join(ascend_home, pattern))):
            if os.path.islink(path):
                found[path] = os.readlink(path)
    return found


def _engine(module, python_env):
    """The serve program, its Python and what that Python reports of the engine distributions."""
    search = [os.path.join(python_env, "bin")] + os.environ.get("PATH", "").split(os.pathsep)
    for program in spec.ENGINE_PROGRAMS:
        found = next((os.path.join(d, program) for d in search if os.path.isfile(os.path.join(d, program))), None)
        if not found:
            continue
        with open(found, "rb") as handle:
            interpreter, name = shebang_interpreter(handle.readline(512).decode("latin-1"))
        interpreter = interpreter or (name and module.get_bin_path(name))
        rc, out, err = readers.run(module, [interpreter or "python3", "-c", PYTHON_VERSIONS] +
                                   list(spec.ENGINE_DISTRIBUTIONS))
        try:
            versions = json.loads(out)["distributions"] if rc == 0 else None
        except (ValueError, KeyError, TypeError):
            versions = None
        return {"program": found, "interpreter": interpreter, "versions": versions,
                "error": None if versions is not None else spec.redact((err or out).strip()[-300:])}
    return None


def _image_engine(module, image, engine):
    """The engine's and vLLM's versions inside IMAGE, read by its python3 (container.inspect_argv)."""
    names = ["podman", "docker"] if engine == "auto" else [engine]
    program = next((module.get_bin_path(name) for name in names if module.get_bin_path(name)), None)
    if program is None:
        return {"image": image, "program": None, "interpreter": None, "versions": None,
                "error": "none of %s found" % ", ".join(names)}
    rc, out, err = readers.run(module, [program, "run", "--rm", "--pull=never", "--net=none", "--entrypoint=python3", image]
                               + container.inspect_argv())
    try:
        found = json.loads(out.strip().splitlines()[-1])["versions"] if rc == 0 else None
    except (ValueError, IndexError, KeyError, TypeError):
        found = None
    versions = dict((name, found.get(name)) for name in spec.ENGINE_DISTRIBUTIONS) if found is not None else None
    return {"image": image, "program": None, "interpreter": "python3 in " + image, "versions": versions,
            "error": None if found is not None else spec.redact((err or out).strip()[-300:])}


def _units(unit_dir, wanted):
    """The collection's units in UNIT_DIR (and WANTED), each with its instance and ports."""
    names = set(wanted) | set(os.path.basename(p) for p in glob.glob(os.path.join(unit_dir, unit_names.GLOB)))
    found = {}
    for name in sorted(names):
        entry = spec.unit_entry(name, readers.read(os.path.join(unit_dir, name)))
        if entry:
            found[name] = entry
    return found


def _pings(module, hccn_tool, physical, peers, me):
    if not physical:
        return {"pings": [], "commands": []}
    targets = spec.ping_targets(peers, me, physical[0])
    commands = [_run(module, [hccn_tool, "-i", str(t["device"]), "-" + t["kind"], "-g", "address", t["address"]])
                for t in targets]
    return {"pings": targets, "commands": commands}


def main():
    module = AnsibleModule(
        argument_spec=dict(
            npu_smi=dict(type="str", default="npu-smi"),
            hccn_tool=dict(type="str", default="/usr/local/Ascend/driver/tools/hccn_tool"),
            ascend_home=dict(type="path", default="/usr/local/Ascend"),
            units=dict(type="list", elements="str",
                       default=[unit_names.RAY, unit_names.SERVE, unit_names.FIREWALL]),
            journal_lines=dict(type="int", default=200),
            files=dict(type="list", elements="path", default=["/etc/ascend-inference/node.env"]),
            python_env=dict(type="path", default="/opt/ascend-inference/venv"),
            unit_dir=dict(type="path", default=unit_names.UNIT_DIR),
            settings=dict(type="dict", default={}),
            container_image=dict(type="str"),
            container_engine=dict(type="str", default="auto"),
            ping_peers=dict(type="dict"),
            me=dict(type="str"),
        ),
        supports_check_mode=True,
    )
    params = module.params
    devices, physical = readers.davinci_devices()
    if params["ping_peers"] is not None:
        module.exit_json(changed=False, bundle=_pings(module, params["hccn_tool"], physical, params["ping_peers"],
                                                      params["me"]))
    units = _units(params["unit_dir"], params["units"])
    argvs = spec.commands(params["npu_smi"], params["hccn_tool"], physical,
                          sorted(set(params["units"]) | set(units)), params["journal_lines"])
    files = {}
    for pattern in spec.files(params["ascend_home"], params["files"]):
        matches = sorted(glob.glob(pattern)) if "*" in pattern else [pattern]
        for path in matches:
            if spec.keep_file(path):
                files[path] = _read(path)
    commands = [_run(module, argv) for argv in argvs]
    module.exit_json(changed=False, bundle={
        "format": spec.FORMAT,
        "host": socket.gethostname(),
        "collected_at": datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commands": commands,
        "files": files,
        "devices": devices,
        "device_files": _device_files(),
        "links": _links(params["ascend_home"]),
        "engine": (_image_engine(module, params["container_image"], params["container_engine"])
                   if params["container_image"] else _engine(module, params["python_env"])),
        "units": units,
        "settings": dict((k, v) for k, v in params["settings"].items() if k in spec.SETTINGS and v is not None),
        "npu_addresses": spec.npu_addresses(commands),
    })


if __name__ == "__main__":
    main()
