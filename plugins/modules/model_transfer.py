#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: model_transfer
short_description: One node's side of a model copy - a short-lived rsync daemon that serves it, or an rsync that fetches it
version_added: 0.1.0
description:
  - V(serving) - an rsync daemon, run by systemd as the transient unit C(ascend-model-seed.service), serves the
    model at O(path) read-only, bound to O(address) (the node's cluster address) on O(port), to the addresses in
    O(allow) only, with the user C(ascend-model) and O(password). Its configuration and secrets are 0600 files
    under C(/run/ascend-inference/model). It returns once the port answers.
  - V(fetching) - the transient unit C(ascend-model-fetch.service) runs rsync against another node's daemon
    (O(seeder)) into O(path); a file cut off by an interruption is kept in C(.ascend-model-partial) and resumed
    by the next copy. A fetch left by an interrupted run is stopped and started again.
  - V(status) - the fetch's state, the bytes of the manifest's files the node holds so far (files being written
    included) and, once it ended, rsync's exit status, statistics and last output lines.
  - V(absent) - both units stopped and the configuration, secrets and output removed, so that nothing listens
    and no password is left. Both units also end by themselves after O(lifetime) seconds (an interrupted run).
extends_documentation_fragment:
  - ascend.inference.model_copy.transfer
author:
  - ascend.inference contributors (@ascend-inference)
attributes:
  check_mode:
    description: V(serving), V(fetching) and V(absent) report what they would start or stop and do nothing; V(status) reads.
    support: full
  diff_mode:
    description: There is nothing to diff.
    support: none
options:
  state:
    description: What to do (see the description).
    type: str
    choices: [serving, fetching, status, absent]
    required: true
  path:
    description: The model directory (C(ascend_model)).
    type: path
  address:
    description: The node's own cluster address, which the daemon binds (V(serving)).
    type: str
  seeder:
    description: The address of the node to fetch from (V(fetching)).
    type: str
  port:
    description: The daemon's TCP port.
    type: int
    default: 8730
  allow:
    description: The addresses the daemon admits (the cluster's members, V(serving)).
    type: list
    elements: str
    default: []
  password:
    description: The copy's password (V(serving), V(fetching)); written to 0600 files only.
    type: str
  manifest:
    description: The manifest whose files V(status) and V(fetching) count (C(files), each with C(path) and C(size)).
    type: dict
  wait:
    description: V(status) - seconds to wait for the fetch to end before answering (it answers as soon as it ends).
    type: int
    default: 0
"""

EXAMPLES = r"""
- name: Serve the model to the other members
  ascend.inference.model_transfer:
    state: serving
    path: /models/Qwen2.5-7B-Instruct
    address: 192.0.2.11
    allow: [192.0.2.11, 192.0.2.12]
    password: "{{ model_copy_password }}"
  no_log: true

- name: Stop every copy and remove its secrets
  ascend.inference.model_transfer:
    state: absent
"""

RETURN = r"""
running:
  description: V(fetching), V(status) - whether the fetch still runs.
  returned: always
  type: bool
finished:
  description: V(status) - whether the fetch ended (then see RV(exit_status)).
  returned: always
  type: bool
exit_status:
  description: V(status) - rsync's exit status once it ended (V(-1) when systemd stopped it, e.g. after O(lifetime)).
  returned: always
  type: int
bytes_present:
  description: V(status), V(fetching) (before it starts) - bytes of the manifest's files on the node, files being
    written included (with O(manifest)).
  returned: always
  type: int
stats:
  description: V(status) - rsync's C(literal) (bytes sent as data), C(matched) (bytes the node had already, as in
    a resumed file) and C(files_transferred), once it ended.
  returned: always
  type: dict
output:
  description: V(status) - the last lines of rsync's output, once it ended.
  returned: always
  type: str
"""

import os
import shutil
import socket
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ascend.inference.plugins.module_utils import model_files
from ansible_collections.ascend.inference.plugins.module_utils.node_io import read

CONFIG = os.path.join(model_files.RUNTIME_DIR, "rsyncd.conf")
SECRETS = os.path.join(model_files.RUNTIME_DIR, "rsyncd.secrets")
PASSWORD = os.path.join(model_files.RUNTIME_DIR, "fetch.password")
OUTPUT = os.path.join(model_files.RUNTIME_DIR, "fetch.out")
SHOW = "LoadState,ActiveState,SubState,Result,ExecMainStatus,ExecMainCode"


class Node(object):
    def __init__(self, module):
        self.module = module
        self.systemctl = module.get_bin_path("systemctl", required=True)

    def run(self, argv, check=True):
        rc, out, err = self.module.run_command(argv)
        if check and rc != 0:
            self.module.fail_json(msg="%s failed (rc %d): %s" % (" ".join(argv[:3]), rc, (err or out).strip()))
        return rc, out

    def unit(self, name):
        _rc, out = self.run([self.systemctl, "show", "--property=" + SHOW, name], check=False)
        return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)

    def stop(self, name):
        """Stop a unit and forget its failure; whether there was anything to stop."""
        state = self.unit(name)
        if state.get("LoadState") != "loaded":
            return False
        if not self.module.check_mode:
            self.run([self.systemctl, "stop", name], check=False)
            self.run([self.systemctl, "reset-failed", name], check=False)
        return True

    def start(self, name, properties, argv):
        self.run([self.module.get_bin_path("systemd-run", required=True), "--unit=" + name, "--quiet"]
                 + ["--property=%s" % p for p in properties] + ["--"] + argv)

    def rsync(self):
        path = self.module.get_bin_path("rsync")
        if not path:
            self.module.fail_json(msg="rsync is not installed on the node (the model role installs it before a copy)")
        return path

    def journal(self, name):
        journalctl = self.module.get_bin_path("journalctl")
        if not journalctl:
            return ""
        return self.run([journalctl, "--unit=" + name, "--lines=10", "--no-pager", "--output=cat"], check=False)[1]


def _write_secret(path, text):
    """Write a 0600 file (created 0600, never readable by others for a moment); whether its content changed."""
    if read(path) == text:
        return False
    descriptor = os.open(path + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(text)
    os.rename(path + ".tmp", path)
    return True


def _runtime_dir():
    parent = os.path.dirname(model_files.RUNTIME_DIR)
    for directory, mode in ((parent, 0o755), (model_files.RUNTIME_DIR, 0o700)):
        if not os.path.isdir(directory):
            os.mkdir(directory, mode)
        os.chmod(directory, mode)


def _answers(address, port, seconds):
    deadline = time.monotonic() + seconds
    while True:
        try:
            socket.create_connection((address, port), timeout=2).close()
            return True
        except (IOError, OSError):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.2)


def serving(node, params):
    module = node.module
    for name in ("path", "address", "password"):
        if not params[name]:
            module.fail_json(msg="state=serving needs %s" % name)
    try:
        config = model_files.seed_config(params["path"], params["allow"] or [params["address"]], SECRETS,
                                         params["io_timeout"])
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    running = node.unit(model_files.SEED_UNIT).get("ActiveState") == "active"
    if module.check_mode:
        module.exit_json(changed=not running)
    _runtime_dir()
    changed = _write_secret(SECRETS, "%s:%s\n" % (model_files.RSYNC_USER, params["password"]))
    changed = _write_secret(CONFIG, config) or changed
    if running and not changed:
        module.exit_json(changed=False)
    node.stop(model_files.SEED_UNIT)
    node.start(model_files.SEED_UNIT, ["RuntimeMaxSec=%d" % params["lifetime"], "CollectMode=inactive-or-failed"],
               [node.rsync(), "--daemon", "--no-detach", "--config=" + CONFIG, "--address=" + params["address"],
                "--port=%d" % params["port"]])
    # The port answering is not enough: another program may hold it (then the daemon could not bind and ended).
    if not _answers(params["address"], params["port"], 15) \
            or node.unit(model_files.SEED_UNIT).get("ActiveState") != "active":
        module.fail_json(msg="the rsync daemon does not answer on %s:%d: %s" % (
            params["address"], params["port"], node.journal(model_files.SEED_UNIT).strip() or "no output"))
    module.exit_json(changed=True)


def fetching(node, params):
    module = node.module
    for name in ("path", "seeder", "password"):
        if not params[name]:
            module.fail_json(msg="state=fetching needs %s" % name)
    if module.check_mode:
        module.exit_json(changed=True, running=False)
    _runtime_dir()
    _write_secret(PASSWORD, params["password"] + "\n")
    node.stop(model_files.FETCH_UNIT)
    if os.path.exists(OUTPUT):
        os.unlink(OUTPUT)
    before = _bytes_present(params)
    argv = model_files.fetch_argv(params["seeder"], params["port"], params["path"], PASSWORD,
                                  params["bwlimit"] or None, params["io_timeout"])
    node.start(model_files.FETCH_UNIT, ["RemainAfterExit=yes", "RuntimeMaxSec=%d" % params["lifetime"],
                                        "StandardOutput=file:" + OUTPUT, "StandardError=inherit"],
               [node.rsync()] + argv[1:])
    module.exit_json(changed=True, running=True, bytes_present=before)


def _fetch_state(node, wait):
    """The fetch unit's properties, once it ended or after ``wait`` seconds."""
    deadline = time.monotonic() + wait
    while True:
        state = node.unit(model_files.FETCH_UNIT)
        ended = state.get("SubState") == "exited" or state.get("ActiveState") in ("failed", "inactive")
        if ended or time.monotonic() >= deadline:
            return state
        time.sleep(0.25)


def _bytes_present(params):
    manifest = params["manifest"] or {"files": []}
    path = (params["path"] or "/").rstrip("/") or "/"
    found = model_files.walk(path) if os.path.isdir(path) else {}
    partial = {}
    for entry in manifest["files"]:
        try:
            partial[entry["path"]] = os.stat(os.path.join(path, model_files.partial_path(entry["path"]))).st_size
        except OSError:
            pass
    return model_files.bytes_present(manifest, found, partial)


def status(node, params):
    module = node.module
    state = _fetch_state(node, params["wait"])
    running = state.get("ActiveState") in ("active", "activating", "deactivating") and state.get("SubState") != "exited"
    # Stopped from outside, or gone: ended too (its exit status then unknown, -1).
    finished = not running
    code = -1
    if finished and state.get("ExecMainCode") == "1":  # CLD_EXITED: rsync ended by itself
        code = int(state.get("ExecMainStatus") or 0)
    output = (read(OUTPUT) or "") if finished else ""
    if finished and not output.strip() and state.get("LoadState") == "loaded":
        output = node.journal(model_files.FETCH_UNIT)
    module.exit_json(changed=False, running=running, finished=finished, exit_status=code,
                     bytes_present=_bytes_present(params), stats=model_files.rsync_stats(output),
                     output="\n".join(output.strip().splitlines()[-12:]))


def absent(node, params):
    module = node.module
    changed = node.stop(model_files.FETCH_UNIT)
    changed = node.stop(model_files.SEED_UNIT) or changed
    if os.path.exists(model_files.RUNTIME_DIR):
        changed = True
        if not module.check_mode:
            shutil.rmtree(model_files.RUNTIME_DIR)
    module.exit_json(changed=changed)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", choices=["serving", "fetching", "status", "absent"], required=True),
            path=dict(type="path"),
            address=dict(type="str"),
            seeder=dict(type="str"),
            port=dict(type="int", default=8730),
            allow=dict(type="list", elements="str", default=[]),
            password=dict(type="str", no_log=True),
            bwlimit=dict(type="str", default=""),
            io_timeout=dict(type="int", default=600),
            lifetime=dict(type="int", default=86400),
            manifest=dict(type="dict"),
            wait=dict(type="int", default=0),
        ),
        supports_check_mode=True,
    )
    node = Node(module)
    dict(serving=serving, fetching=fetching, status=status, absent=absent)[module.params["state"]](node, module.params)


if __name__ == "__main__":
    main()
