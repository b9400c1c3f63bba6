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
  - Reports the node's IPv4 addresses per interface, its NPU chips with their logic and physical IDs,
    the NPU family, the C(/dev/davinciN) device files, the CANN toolkit (version and layout) and the
    NPU driver version, the size of the model's files and the listening TCP ports with the process
    and systemd service holding each.
  - "Chips come from C(npu-smi info -m) (card, chip, logic ID); each chip's physical ID (the N of
    C(/dev/davinciN), what C(hccn_tool -i) takes) from O(device_map), else C(npu-smi info -t phyid-remap -p N),
    else the Phy-ID column of the C(npu-smi info) table (Atlas A3), else the logic ID (as on a host).
    Where chips and device files disagree, the problems name both numbers."
  - One module run instead of one per question, so a preflight costs one round trip per node. Detection only - it
    reads no file the collection's roles write; what they write, node_apply reads as it writes.
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
  ascend_home:
    description:
      - Where the Ascend software is installed. The CANN toolkit is read from
        C(ascend-toolkit/latest/[*/]ascend_toolkit_install.info) (up to CANN 8.3) and
        C(cann/[*/]ascend_toolkit_install.info) or C(cann-<version>/[*/]ascend_toolkit_install.info)
        (CANN 8.5 and later); the driver version from C(driver/version.info).
    type: path
    default: /usr/local/Ascend
  cann_layout:
    description: The CANN layout to use when both are installed; V(auto) prefers V(cann).
    type: str
    choices: [auto, ascend-toolkit, cann]
    default: auto
  device_map:
    description: Physical ID by logic ID for chips whose mapping the tools cannot tell (C(ascend_npu_device_map)).
    type: dict
    default: {}
  model:
    description: A model directory whose regular files are counted and summed (not followed into symbolic links); omit to skip.
    type: path
  model_record:
    description:
      - The node's record of the model copied to it (its manifest, written by the model role). Where it records
        O(model), the files are compared with it by names and sizes instead of only counted.
    type: path
  models:
    description:
      - More model directories (several instances' models), each counted as O(model) is, without a record.
    type: list
    elements: path
    default: []
  engine:
    description:
      - The engine to look for; omit to skip. Its serve O(engine.program) is looked up in
        O(engine.python_env)C(/bin), then on PATH (as the serve role does); the Python that runs it (its
        C(#!) line, C(env) names looked up the same way) reports the installed versions of the engine's
        distribution and of C(vllm) from their package metadata.
    type: dict
    suboptions:
      program:
        description: The serve program (V(vllm) or V(vllm-mindspore)).
        type: str
        required: true
      python_env:
        description: The engine's Python environment.
        type: path
        required: true
      distribution:
        description: The engine's Python distribution (V(vllm-ascend) or V(vllm-mindspore)).
        type: str
        required: true
      version:
        description: The engine release the plan expects.
        type: str
        required: true
      vllm_version:
        description: The vLLM release that engine runs on.
        type: str
        required: true
  engine_container:
    description:
      - Container mode - report which of the host paths the engine container mounts (the NPU driver's tools
        and libraries, as the vllm-ascend document lists them) the node lacks (RV(container_mounts_missing)).
      - In either mode a running engine container (of an earlier container-mode deployment too) is named,
        through its unit, as the holder of the ports its processes listen on.
    type: bool
    default: false
  service_user:
    description:
      - The account that will run Ray and the engine. For any but V(root), RV(service) names the group of
        the NPU device files that the account must join, and what it could not open or read among the
        device files, the CANN toolkit, the driver's libraries, the model and the engine, and an existing account
        or group of that name that ascend.inference did not create (it would refuse to take it over).
    type: str
    default: root
  node:
    description: The node's inventory name, which the problems name.
    type: str
    default: this node
  present:
    description: Paths to look for (a link counts, whatever it points to), reported in RV(present).
    type: list
    elements: path
    default: []
  python:
    description:
      - A Python interpreter (the plan's environment's C(bin/python)) whose version and installed
        O(python.distributions) to report in RV(python); omit to skip.
    type: dict
    suboptions:
      path:
        description: The interpreter.
        type: path
        required: true
      distributions:
        description: Distributions whose installed version to report.
        type: list
        elements: str
        default: []
"""

EXAMPLES = r"""
- name: Probe the node
  ascend.inference.node_probe:
    model: /models/Qwen2.5-7B-Instruct
  register: probe

- name: Show the chips' logic IDs (ASCEND_RT_VISIBLE_DEVICES)
  ansible.builtin.debug:
    msg: "{{ probe.npu.chips | map(attribute='logic') | list }}"
"""

RETURN = r"""
ipv4:
  description: IPv4 addresses per interface (C(ip -j -4 addr show)).
  returned: always
  type: dict
  sample: {lo: [127.0.0.1], enp1s0: [192.0.2.11]}
npu_smi:
  description: C(npu-smi info -m) as run (C(rc), C(stdout), C(stderr)).
  returned: always
  type: dict
  sample: {rc: 0, stdout: "NPU ID   Chip ID   Chip Logic ID   Chip Name ...", stderr: ""}
npu:
  description:
    - The node's chips sorted by logic ID (C(card), C(chip), C(logic), C(physical), C(name), C(physical_from)),
      C(device_map) (physical ID by logic ID), the NPU C(family) (V(910B), V(910_93), V(310P), V(910), V(310) or
      V(unknown)) with its C(family_name), whether it has an NPU network (C(npu_network)), and C(problems) where the
      tools and the device files disagree (C(logic), the chip concerned or null, and C(message)).
  returned: always
  type: dict
  sample:
    chips: [{card: 1, chip: 0, logic: 0, physical: 0, name: 310P3, physical_from: npu-smi info -t phyid-remap}]
    device_map: {"0": 0}
    family: 310P
    family_name: Atlas 300I Duo / 300I Pro (Ascend 310P)
    npu_network: false
    chips_per_card: 2
    problems: [{logic: 3, message: "NPU 4 chip 1 (logic ID 3) has no /dev/davinci3 (...)"}]
device_files:
  description: N of every C(/dev/davinciN), sorted.
  returned: always
  type: list
  elements: int
  sample: [0, 1, 2, 3]
cann:
  description: The CANN toolkit in use (C(version), C(innerversion), C(arch), C(layout), C(set_env), C(install_info)), or null.
  returned: always
  type: dict
  sample: {version: 8.5.0, layout: cann, set_env: /usr/local/Ascend/cann/set_env.sh,
           install_info: /usr/local/Ascend/cann/aarch64-linux/ascend_toolkit_install.info}
cann_version:
  description: The CANN toolkit version, or null when no version file is found.
  returned: always
  type: str
  sample: 8.0.RC1
cann_notes:
  description: Remarks on the CANN installation (both layouts present, which one is used).
  returned: always
  type: list
  elements: str
cann_problems:
  description: Why no CANN toolkit could be chosen although one is installed.
  returned: always
  type: list
  elements: str
driver:
  description: The NPU driver's C(version) and C(innerversion) from C(driver/version.info), or null.
  returned: always
  type: dict
  sample: {version: 24.1.rc2.2, innerversion: V100R001C18SPC001B233}
model:
  description:
    - The model directory's regular files (C(files)) and their bytes (C(bytes)); null when O(model) is omitted.
    - Where O(model_record) records O(model), also the manifest's C(digest) and C(mismatch), what the files lack
      against it (null when they match); otherwise both are null.
  returned: always
  type: dict
  sample: {files: 12, bytes: 15231233024, digest: null, mismatch: null}
models:
  description: The files and bytes of each of O(models), by path (C(files) 0 where it does not exist).
  returned: always
  type: dict
  sample: {/models/embed: {files: 3, bytes: 1024}}
engine:
  description:
    - The serve C(program) found (null when none), the C(interpreter) that runs it, the installed C(versions)
      by distribution (null for one not installed), an C(error) when they could not be read, and the C(problems)
      where they differ from O(engine.version) and O(engine.vllm_version). Null when O(engine) is omitted.
  returned: always
  type: dict
  sample:
    program: /opt/ascend-inference/venv/bin/vllm
    interpreter: /opt/ascend-inference/venv/bin/python3
    versions: {vllm-ascend: 0.23.0, vllm: 0.23.0}
    error: null
    problems: []
listeners:
  description:
    - Listening TCP sockets with the process (C(process), C(pid); null where C(ss) cannot read another
      user's process), the owner (C(uid)) and the systemd service (C(unit), null outside one).
  returned: always
  type: list
  elements: dict
  sample: [{address: "0.0.0.0", port: 6379, process: gcs_server, pid: 812, uid: 999, unit: ascend-ray.service}]
container_mounts_missing:
  description: The engine container's host mounts this node lacks (empty unless O(engine_container)).
  returned: always
  type: list
  elements: str
  sample: [/usr/local/dcmi]
service:
  description: What the service account (O(service_user)) needs on this node.
  returned: always
  type: dict
  contains:
    user:
      description: O(service_user).
      type: str
    device_group:
      description: The group of the NPU device files the account joins; null for root or when they are unusable.
      type: str
    problems:
      description: Sentences naming what the account could not open or read, and what to change.
      type: list
      elements: str
  sample: {user: ascend-inference, device_group: HwHiAiUser, problems: []}
present:
  description: Whether each of O(present) exists.
  returned: always
  type: dict
python:
  description:
    - O(python.path) with its C(version) (null where it does not exist or does not run), the installed version
      of each of O(python.distributions) by name (null for one not installed) and the C(error) of a run that failed;
      null when O(python) is omitted.
  returned: always
  type: dict
  sample: {path: /opt/ascend-inference/venv/bin/python, version: 3.11.2, distributions: {ray: 2.52.1}, error: null}
cann_env:
  description:
    - What the CANN toolkit's C(set_env.sh) (the C(set_env) of RV(cann)) exports, sourced by a clean C(bash) (C(env -i), a
      standard PATH) as the node_env role reads it - C(set_env), C(rc) (3 when sourcing failed) and the
      C(variables); null without a toolkit.
  returned: always
  type: dict
  sample: {set_env: /usr/local/Ascend/ascend-toolkit/set_env.sh, rc: 0, variables: {ASCEND_HOME_PATH: /usr/local/Ascend/ascend-toolkit/latest}}
"""

import grp
import json
import os
import pwd
import stat

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ascend.inference.plugins.module_utils.node import cann
from ansible_collections.ascend.inference.plugins.module_utils.runtime import container
from ansible_collections.ascend.inference.plugins.module_utils.apply import file_diff
from ansible_collections.ascend.inference.plugins.module_utils.model import files as model_files
from ansible_collections.ascend.inference.plugins.module_utils.engines import releases
from ansible_collections.ascend.inference.plugins.module_utils.node import environment
from ansible_collections.ascend.inference.plugins.module_utils.node import readers
from ansible_collections.ascend.inference.plugins.module_utils.node.readers import read as _read
from ansible_collections.ascend.inference.plugins.module_utils.node.readers import run as _run
from ansible_collections.ascend.inference.plugins.module_utils.node import probe
from ansible_collections.ascend.inference.plugins.module_utils.node import npu
from ansible_collections.ascend.inference.plugins.module_utils.runtime import service_account
from ansible_collections.ascend.inference.plugins.module_utils.runtime import unit_names


def _npu(module, devices):
    """Chips and family from npu-smi; physical IDs as npu.resolve chooses them."""
    tool = module.params["npu_smi"]
    rc, out, err = _run(module, [tool, "info", "-m"])
    chip_map = npu.parse_chip_map(out) if rc == 0 else []
    summary_rc, summary_out, _err = _run(module, [tool, "info"])
    summary = npu.parse_summary(summary_out) if summary_rc == 0 else []
    remaps = {}
    shown = [row for row in chip_map if row["logic"] is not None]
    # Atlas A3's `info -m` shows each chip's Phy-ID itself: no need to ask per device.
    for device in devices if not shown or any(row["physical"] is None for row in shown) else []:
        remap_rc, remap_out, _err = _run(module, [tool, "info", "-t", "phyid-remap", "-p", str(device)])
        remaps[device] = npu.parse_phyid_remap(remap_out) if remap_rc == 0 else None
        if remaps[device] is None:
            break  # not supported here (older npu-smi, unprivileged container): ask no further
    chips, problems = npu.resolve(chip_map, summary, remaps, devices, module.params["device_map"])
    found = dict(npu.describe(chips, summary), chips=chips, problems=problems if rc == 0 else [],
                 device_map=dict((str(c["logic"]), c["physical"]) for c in chips))
    return {"rc": rc, "stdout": out, "stderr": err}, found


def _model_record(path, record_path):
    """The manifest digest of the model's record and what the files lack against it (model_files.mismatch),
    or (None, None) where no record of this model exists."""
    record = model_files.read_record(_read(record_path), path.rstrip("/") or "/") if record_path else None
    if record is None:
        return None, None
    return record.get("digest"), model_files.mismatch(model_files.compare(record, model_files.walk(path)))


def _model(path, account):
    """The model's regular files and bytes (links not followed), and the first file or directory under it
    the service ``account`` ((uid, gids), or None for root) cannot read, as a problem: one walk for both."""
    files = size = 0
    problems = []
    for root, dirs, names in os.walk(path):
        for name in sorted(dirs) + sorted(names):
            full = os.path.join(root, name)
            info = os.lstat(full)
            if stat.S_ISREG(info.st_mode):
                files += 1
                size += info.st_size
            if account and not problems:
                problems = _unreadable(full, account)
    return {"files": files, "bytes": size}, problems


def _unreadable(path, account):
    try:
        entry = _entry(path)  # links followed, as the engine opens them
    except OSError:
        return []  # a dangling link: not the account's problem
    directory = stat.S_ISDIR(entry["mode"])
    if (directory or stat.S_ISREG(entry["mode"])) and not service_account.may(
            entry, account[0], account[1], 5 if directory else 4):
        return [service_account.access_problem("the model's", entry["path"], entry)]
    return []


def _engine_container(module):
    """{container ID: unit} of the running engine container, as podman or docker knows it."""
    for engine in ("podman", "docker"):
        if not module.get_bin_path(engine):
            continue
        rc, out, _err = _run(module, [engine, "container", "inspect", "--format", "{{.Id}}", container.NAME])
        if rc == 0 and out.strip():
            return {out.strip(): unit_names.ENGINE}
    return {}


def _which(name, directories):
    if os.path.isabs(name):
        return name if os.access(name, os.X_OK) else None
    for directory in directories:
        candidate = os.path.join(directory, name)
        if directory and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def _engine(module, spec):
    """Where the serve program is, which Python runs it and what that Python has installed."""
    search = [os.path.join(spec["python_env"], "bin")] + os.environ.get("PATH", "").split(os.pathsep)
    found = {"program": _which(spec["program"], search), "interpreter": None, "versions": {}, "error": None}
    if found["program"]:
        with open(found["program"], "rb") as handle:
            first_line = handle.readline(512).decode("latin-1")
        interpreter, name = probe.shebang_interpreter(first_line)
        found["interpreter"] = _which(name, search) if name else interpreter
        if found["interpreter"] and not os.path.basename(found["interpreter"]).startswith("python"):
            # pip writes a /bin/sh trampoline when the environment's path is too long for a #! line.
            found["interpreter"] = _which("python3", [os.path.dirname(found["program"])]) or found["interpreter"]
        if not found["interpreter"]:
            found["error"] = "no Python interpreter found from its first line %r" % first_line.strip()
        else:
            distributions = [spec["distribution"], releases.VLLM_DISTRIBUTION]
            rc, out, err = _run(module, [found["interpreter"], "-c", probe.PYTHON_VERSIONS] + distributions)
            try:
                found["versions"] = json.loads(out)["distributions"] if rc == 0 else None
            except (ValueError, KeyError, TypeError):
                found["versions"] = None
            if found["versions"] is None:
                found["error"] = "%s failed (rc %d): %s" % (found["interpreter"], rc, (err or out).strip()[-300:])
                found["versions"] = {}
    found["problems"] = probe.engine_problems(found, spec["distribution"], spec["version"], spec["vllm_version"])
    return found


def _entry(path):
    info = os.stat(path)
    return {"path": path, "mode": info.st_mode, "uid": info.st_uid, "gid": info.st_gid}


def _chain(path, seen):
    """The directories from / down to ``path`` and ``path`` itself, symbolic links resolved; ``seen``
    keeps each inode read once across the paths of one probe (they share /, /usr, /usr/local, ...)."""
    real = os.path.realpath(path)
    parents, current = [], os.path.dirname(real)
    while True:
        parents.insert(0, current)
        if current == os.path.dirname(current):
            break
        current = os.path.dirname(current)
    for each in parents + [real]:
        if each not in seen:
            seen[each] = _entry(each)
    return [seen[each] for each in parents + [real]]


def _account(user):
    """(uid, groups) of the service account as it will run (no uid yet: created later by the
    service_account role, it owns nothing), or None for root."""
    if user == service_account.ROOT:
        return None
    try:
        found = pwd.getpwnam(user)
        return found.pw_uid, set([found.pw_gid] + [g.gr_gid for g in grp.getgrall() if user in g.gr_mem])
    except KeyError:
        return None, set()


def _service(user, account, device_ids, paths):
    """The service account's group for the NPU devices and what it could not open or read among
    ``paths``; and the account ((uid, gids) or None) with the devices' group as the units give it."""
    if account is None:
        return {"user": user, "device_group": None, "problems": []}, None
    files = []
    for path in ["/dev/davinci%d" % n for n in device_ids] + ["/dev/" + n for n in service_account.MANAGEMENT_DEVICES]:
        if os.path.exists(path):
            entry = _entry(path)
            entry.update(owner=file_diff.account_name(pwd.getpwuid, entry["uid"]),
                         group=file_diff.account_name(grp.getgrgid, entry["gid"]))
            files.append(entry)
    group, problems = service_account.device_group(files)
    uid, gids = account[0], set(account[1])
    if group:
        gids.add(files[0]["gid"])
    seen = {}
    for what, path in paths:
        try:
            entry = service_account.denied(_chain(path, seen), uid, gids) if path and os.path.exists(path) else None
        except OSError:
            entry = None  # gone while read: the other checks name what is missing
        if entry:
            problems.append(service_account.access_problem(what, path, entry))
    return {"user": user, "device_group": group, "problems": problems}, (uid, gids)


def _cann_env(module, set_env):
    """What set_env.sh exports to a clean shell, or None without one."""
    if not set_env:
        return None
    rc, out, _err = _run(module, environment.SOURCE_ARGV + [set_env])
    return {"set_env": set_env, "rc": rc, "variables": environment.sourced_env(out) if rc == 0 else {}}


def _python(module, spec):
    """The interpreter's version and its distributions' versions, or None without ``spec``."""
    if not spec:
        return None
    found = {"path": spec["path"], "version": None, "distributions": {}, "error": None}
    if not os.access(spec["path"], os.X_OK):
        return found
    rc, out, err = _run(module, [spec["path"], "-c", probe.PYTHON_VERSIONS] + spec["distributions"])
    try:
        found.update(json.loads(out) if rc == 0 else {})
    except ValueError:
        rc = rc or 1
    if rc != 0:
        found["error"] = "%s failed (rc %d): %s" % (spec["path"], rc, (err or out).strip()[-300:])
    return found


def main():
    module = AnsibleModule(
        argument_spec=dict(
            npu_smi=dict(type="str", default="npu-smi"),
            ascend_home=dict(type="path", default="/usr/local/Ascend"),
            cann_layout=dict(type="str", default="auto", choices=["auto"] + list(cann.LAYOUTS)),
            device_map=dict(type="dict", default={}),
            model=dict(type="path"),
            model_record=dict(type="path"),
            models=dict(type="list", elements="path", default=[]),
            engine=dict(type="dict", options=dict(
                program=dict(type="str", required=True),
                python_env=dict(type="path", required=True),
                distribution=dict(type="str", required=True),
                version=dict(type="str", required=True),
                vllm_version=dict(type="str", required=True),
            )),
            engine_container=dict(type="bool", default=False),
            service_user=dict(type="str", default=service_account.ROOT),
            node=dict(type="str", default="this node"),
            present=dict(type="list", elements="path", default=[]),
            python=dict(type="dict", options=dict(
                path=dict(type="path", required=True),
                distributions=dict(type="list", elements="str", default=[]),
            )),
        ),
        supports_check_mode=True,
    )
    rc, out, err = _run(module, ["ip", "-j", "-4", "addr", "show"])
    if rc != 0:
        module.fail_json(msg="ip -j -4 addr show failed (rc %d): %s" % (rc, err.strip()))
    ss_rc, ss_out, ss_err = _run(module, ["ss", "-ltnpeH"])
    if ss_rc != 0:
        module.fail_json(msg="ss -ltnpeH failed (rc %d): %s" % (ss_rc, ss_err.strip()))
    try:
        device_map = dict((int(k), int(v)) for k, v in module.params["device_map"].items())
    except (TypeError, ValueError):
        module.fail_json(msg="ascend_npu_device_map must map logic IDs to physical IDs, both integers "
                             "(found %r)" % (module.params["device_map"],))
    module.params["device_map"] = device_map
    sockets = probe.listeners(ss_out)
    containers = _engine_container(module)
    for socket in sockets:
        # The socket's own cgroup where ss cannot name the process (the service account's, say).
        cgroup = socket.pop("cgroup")
        socket["unit"] = probe.unit_of_cgroup(_read("/proc/%d/cgroup" % socket["pid"]) if socket["pid"] else cgroup,
                                              containers)
    devices = readers.davinci_devices()[1]
    npu_smi, chips = _npu(module, devices)
    toolkit, notes, problems = readers.cann_toolkit(module.params["ascend_home"], module.params["cann_layout"])
    model = module.params["model"]
    engine = _engine(module, module.params["engine"]) if module.params["engine"] else None
    home = module.params["ascend_home"]
    readable = [("the CANN toolkit's set_env.sh", toolkit["set_env"] if toolkit else None),
                ("the NPU driver's libraries", os.path.join(home, "driver", "lib64")),
                ("the model", model),
                ("the engine's program", engine["program"] if engine else None),
                ("the engine's Python", engine["interpreter"] if engine else None)]
    service, account = _service(module.params["service_user"], _account(module.params["service_user"]),
                                devices, readable)
    user = module.params["service_user"]
    if user != service_account.ROOT:
        # An account or group of that name the collection did not create is refused here, on every node at once,
        # before any node is changed (the ray and serve phases would refuse it node by node, the head first).
        service["problems"][:0] = (service_account.takeover_problems(
            module.params["node"], user, user, service_account.COMMENT, service_account.found_user(user),
            service_account.found_group(user)))
    found_model, model_problems = _model(model, account) if model else (None, [])
    service["problems"].extend(model_problems)
    models = {}
    for path in module.params["models"]:
        models[path], problems_of_path = _model(path, account)
        service["problems"].extend(problems_of_path)
    if found_model is not None:
        found_model["digest"], found_model["mismatch"] = _model_record(model, module.params["model_record"])
    module.exit_json(
        changed=False,
        ipv4=probe.ipv4_by_interface(out),
        npu_smi=npu_smi,
        npu=chips,
        device_files=devices,
        cann=toolkit,
        cann_version=toolkit["version"] if toolkit else None,
        cann_notes=notes,
        cann_problems=problems,
        driver=cann.driver(_read(os.path.join(module.params["ascend_home"], "driver", "version.info"))),
        model=found_model,
        models=models,
        engine=engine,
        listeners=sockets,
        container_mounts_missing=[p for p in container.DRIVER_MOUNTS if not os.path.exists(p)]
        if module.params["engine_container"] else [],
        service=service,
        present=dict((path, os.path.lexists(path)) for path in module.params["present"]),
        cann_env=_cann_env(module, toolkit["set_env"] if toolkit else None),
        python=_python(module, module.params["python"]),
    )


if __name__ == "__main__":
    main()
