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
  - V(swarm) - C(ascend-model-swarm.service) runs aria2c on O(torrent) (base64) into the parent of O(path),
    bound to O(address) on O(port), its JSON-RPC on 127.0.0.1:O(control_port) with O(password) as its secret.
    aria2 starts once the swarm's tracker (O(tracker):O(tracker_port)) answers. With O(peers) this node serves
    the tracker first, C(ascend-model-tracker.service) - python3's C(http.server) bound to O(tracker) on
    O(tracker_port), serving one fixed reply that lists O(seeds), then the other O(peers), at O(port)
    (BitTorrent's compact form). The plan knows every member, so the list never changes and nobody else is listed.
    With O(holder) the node seeds its copy as it is (it passed the model's check); otherwise aria2 checks what
    the node holds piece by piece (the module returns once it has, with RV(held)), fetches the missing and bad
    pieces from every holder at once and seeds what it has while it receives. Its configuration is a 0600 file. A swarm left running is started again.
  - V(swarm_status) - the node's aria2 as its JSON-RPC reports it, and whether its unit runs. Read-only, except
    that once the node holds the model it writes the node's record (O(record)) and, with O(leave), ends the
    copy on the node once no peer needs its pieces.
  - V(absent) - every unit stopped and the configuration, secrets and output removed (and, with O(path), aria2's
    control file beside the model directory), so that nothing listens and no password is left. The units also
    end by themselves after O(lifetime) seconds (an interrupted run).
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
    choices: [serving, fetching, status, swarm, swarm_status, absent]
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
    description: V(status) - seconds to wait for the fetch to end before answering (it answers as soon as it ends);
      V(swarm_status) - seconds to look before answering (at once when the node holds the model, aria2 failed or
      does not answer).
    type: int
    default: 0
  torrent:
    description: V(swarm) - the model's torrent, base64 (M(ascend.inference.model_torrent)).
    type: str
  holder:
    description: V(swarm) - the node holds the whole model and only sends.
    type: bool
    default: false
  control_port:
    description: V(swarm), V(swarm_status) - aria2's JSON-RPC port on 127.0.0.1.
    type: int
  tracker:
    description: V(swarm) - the address of the swarm's tracker, which aria2 asks for its peers.
    type: str
  tracker_port:
    description: V(swarm) - the tracker's port.
    type: int
  peers:
    description: V(swarm) - every member's address, given to the one node that serves the tracker (none when the
      controller sends, whose own tracker lists the members).
    type: list
    elements: str
    default: []
  seeds:
    description: V(swarm) with O(peers) - the addresses that hold the model, which the tracker lists first (aria2
      tries the listed peers in order, a few at a time).
    type: list
    elements: str
    default: []
  addresses:
    description: V(swarm_status) - inventory names by address, to name the senders.
    type: dict
    default: {}
  record:
    description: V(swarm_status) - the node's record of the model it holds. Once the node holds every piece (each
      checked as it arrived), its files are checked against O(manifest) by names and sizes and, when they match,
      the record is written, as M(ascend.inference.model_check) writes it.
    type: path
  leave:
    description: V(swarm_status) - once the node holds the model (and its files match, with O(record)), the look
      lasts until no peer connected to it lacks pieces (aria2 drops the connections between two seeders), then
      stops the copy's units and removes its secrets as V(absent) does, or until O(wait) ends it.
    type: bool
    default: false
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
held:
  description: V(swarm) - bytes of the model the node held, checked piece by piece, when it joined (null for a
    holder).
  returned: with state=swarm
  type: int
swarm:
  description: V(swarm_status) - C(answered) (aria2's JSON-RPC answered), C(running) (its unit runs), and with an
    answer C(total), C(completed) (bytes checked and held), C(complete), C(checking) (the check of what the
    node held runs), C(download_rate), C(upload_rate), C(peers), C(sending) (the holders sending now, by
    inventory name), C(holders) (each with C(name), C(bitfield), C(seeder), C(choking), C(rate), and
    C(changed_ago) and C(sent_ago) - seconds since, within the look, its pieces last changed and it last sent),
    C(error), C(held_for) (seconds since, within the look, the node held the model), C(fetched_in) (on the look
    that first saw the node hold it, seconds from aria2's start to the last byte written, or V(null)), C(check)
    (with O(record), the quick check's C(missing), C(wrong_size), C(extra) and C(recorded)) and C(cleaned) (with
    O(leave)).
  returned: with state=swarm_status
  type: dict
"""

import base64
import json
import os
import shutil
import sys
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.six.moves import http_client
from ansible_collections.ascend.inference.plugins.module_utils.model import files as model_files
from ansible_collections.ascend.inference.plugins.module_utils.model import swarm
from ansible_collections.ascend.inference.plugins.module_utils.model import torrent
from ansible_collections.ascend.inference.plugins.module_utils.apply.listening import wait_listening
from ansible_collections.ascend.inference.plugins.module_utils.node.readers import read
from ansible_collections.ascend.inference.plugins.module_utils.runtime import unit_names

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
        return self.units([name]).get(name, {})

    def units(self, names):
        """{name: its properties} for several units in one systemctl call (a block each, an empty line between)."""
        _rc, out = self.run([self.systemctl, "show", "--property=Id," + SHOW] + list(names), check=False)
        found = {}
        for block in out.split("\n\n"):
            properties = dict(line.split("=", 1) for line in block.splitlines() if "=" in line)
            if properties.get("Id"):
                found[properties["Id"]] = properties
        return found

    def started_at(self, name):
        """When the unit last became active, in seconds since the epoch (None: never, or not known). systemd's
        monotonic clock is CLOCK_MONOTONIC, as time.monotonic() is on Linux."""
        _rc, out = self.run([self.systemctl, "show", "--property=ActiveEnterTimestampMonotonic", "--value", name],
                            check=False)
        try:
            since_boot = int(out.strip()) / 1e6
        except ValueError:
            return None
        return time.time() - (time.monotonic() - since_boot) if since_boot > 0 else None

    def stop(self, name, kill=False):
        """Stop a unit and forget its failure; whether there was anything to stop. ``kill``: SIGKILL first (aria2
        takes about 3 s to end on SIGTERM; what it holds is checked piece by piece on the next start)."""
        return bool(self.stop_units([name], [name] if kill else []))

    def stop_units(self, names, kill):
        """stop() for several units, one systemctl call per step whatever their count (the last node's cleanup
        ends the copy); the names that were loaded."""
        states = self.units(names)
        loaded = [name for name in names if states.get(name, {}).get("LoadState") == "loaded"]
        if loaded and not self.module.check_mode:
            running = [name for name in loaded if name in kill and states[name].get("ActiveState") == "active"]
            if running:
                self.run([self.systemctl, "kill", "--signal=SIGKILL"] + running, check=False)
            self.run([self.systemctl, "stop"] + loaded, check=False)
            self.run([self.systemctl, "reset-failed"] + loaded, check=False)
        return loaded

    def start(self, name, properties, argv):
        self.run([self.module.get_bin_path("systemd-run", required=True), "--unit=" + name, "--quiet"]
                 + ["--property=%s" % p for p in properties] + ["--"] + argv)

    def program(self, name, package):
        path = self.module.get_bin_path(name)
        if not path:
            self.module.fail_json(msg="%s is not installed on the node (the model role installs it before a copy)"
                                  % package)
        return path

    def serve(self, name, lifetime, argv, address, port, what):
        """(Re)start ``name`` as a transient unit that listens on ``address``:``port``; fail naming ``what`` unless
        the port answers and the unit runs (the port answering is not enough: another program may hold it, and
        then the unit could not bind and ended)."""
        self.stop(name)
        self.start(name, ["RuntimeMaxSec=%d" % lifetime, "CollectMode=inactive-or-failed"], argv)
        if not wait_listening(address, port, 15)[0] or self.unit(name).get("ActiveState") != "active":
            self.module.fail_json(msg="%s does not answer on %s:%d: %s" % (
                what, address, port, self.journal(name).strip() or "no output"))

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
    running = node.unit(unit_names.MODEL_SEED).get("ActiveState") == "active"
    if module.check_mode:
        module.exit_json(changed=not running)
    _runtime_dir()
    changed = _write_secret(SECRETS, "%s:%s\n" % (model_files.RSYNC_USER, params["password"]))
    changed = _write_secret(CONFIG, config) or changed
    if running and not changed:
        module.exit_json(changed=False)
    node.serve(unit_names.MODEL_SEED, params["lifetime"],
               [node.program("rsync", "rsync"), "--daemon", "--no-detach", "--config=" + CONFIG,
                "--address=" + params["address"], "--port=%d" % params["port"]],
               params["address"], params["port"], "the rsync daemon")
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
    node.stop(unit_names.MODEL_FETCH)
    if os.path.exists(OUTPUT):
        os.unlink(OUTPUT)
    before = _bytes_present(params)
    argv = model_files.fetch_argv(params["seeder"], params["port"], params["path"], PASSWORD,
                                  params["bwlimit"] or None, params["io_timeout"])
    node.start(unit_names.MODEL_FETCH, ["RemainAfterExit=yes", "RuntimeMaxSec=%d" % params["lifetime"],
                                        "StandardOutput=file:" + OUTPUT, "StandardError=inherit"],
               [node.program("rsync", "rsync")] + argv[1:])
    module.exit_json(changed=True, running=True, bytes_present=before)


def _fetch_state(node, wait):
    """The fetch unit's properties, once it ended or after ``wait`` seconds."""
    deadline = time.monotonic() + wait
    while True:
        state = node.unit(unit_names.MODEL_FETCH)
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
        output = node.journal(unit_names.MODEL_FETCH)
    module.exit_json(changed=False, running=running, finished=finished, exit_status=code,
                     bytes_present=_bytes_present(params), stats=model_files.rsync_stats(output),
                     output="\n".join(output.strip().splitlines()[-12:]))


def _need(module, params, names, state):
    for name in names:
        if params[name] in (None, ""):
            module.fail_json(msg="state=%s needs %s" % (state, name))


def serve_tracker(node, params):
    """The swarm's tracker: one fixed reply listing the members (the list never changes)."""
    reply = torrent.tracker_reply(swarm.members(None, params["seeds"], params["peers"]), params["port"],
                                  swarm.TRACKER_INTERVAL)
    directory = os.path.join(model_files.RUNTIME_DIR, swarm.TRACKER_DIR)
    if not os.path.isdir(directory):
        os.mkdir(directory, 0o755)
    with open(os.path.join(directory, swarm.ANNOUNCE), "wb") as handle:
        handle.write(reply)
    # The directory itself is 0700: the server runs as root and serves this one file.
    node.serve(unit_names.MODEL_TRACKER, params["lifetime"],
               [sys.executable, "-m", "http.server", str(params["tracker_port"]), "--bind", params["tracker"],
                "--directory", directory],
               params["tracker"], params["tracker_port"], "the tracker")


def swarm_start(node, params):
    module = node.module
    _need(module, params, ("path", "address", "password", "torrent", "control_port", "tracker", "tracker_port"),
          "swarm")
    path = params["path"].rstrip("/") or "/"
    if module.check_mode:
        module.exit_json(changed=True, running=False)
    _runtime_dir()
    if params["peers"]:
        serve_tracker(node, params)
    # aria2 asks the tracker once at its start and then every few minutes: it must answer first.
    elif not wait_listening(params["tracker"], params["tracker_port"], 30)[0]:
        module.fail_json(msg="the swarm's tracker does not answer on %s:%d (it runs on the controller when it "
                         "sends, on the first node of the run otherwise)" % (params["tracker"], params["tracker_port"]))
    torrent_file = os.path.join(model_files.RUNTIME_DIR, swarm.TORRENT)
    conf_file = os.path.join(model_files.RUNTIME_DIR, swarm.ARIA2_CONF)
    with open(torrent_file, "wb") as handle:
        handle.write(base64.b64decode(params["torrent"]))
    # A node that had no copy: its directory as the rounds' preparation makes it (aria2 would, by its umask).
    model_files.make_model_dir(path)
    _write_secret(conf_file, swarm.aria2_conf(
        os.path.dirname(path), params["address"], params["port"], params["control_port"], params["password"],
        params["lifetime"], len(params["addresses"]) or 8, holder=params["holder"], bwlimit=params["bwlimit"],
        check=swarm.held_anything(model_files.walk(path))))
    node.stop(unit_names.MODEL_SWARM)
    # aria2's control file names the torrent's info hash, which is new each run; the pieces are checked anyway.
    _remove_control_file(path)
    node.start(unit_names.MODEL_SWARM, ["RuntimeMaxSec=%d" % params["lifetime"], "CollectMode=inactive-or-failed"],
               [node.program("aria2c", "aria2"), "--conf-path=" + conf_file, torrent_file])
    if not wait_listening("127.0.0.1", params["control_port"], 15)[0]:
        module.fail_json(msg="aria2 does not answer on 127.0.0.1:%d: %s" % (
            params["control_port"], node.journal(unit_names.MODEL_SWARM).strip() or "no output"))
    held = None
    if not params["holder"]:
        # aria2 checks what the node holds before it fetches anything: what it found good is the node's start.
        while held is None:
            found = _swarm_once(node, params)
            if not found["running"] or found.get("error"):
                module.fail_json(msg="aria2 ended while it checked what the node holds: %s" % (
                    found.get("error") or node.journal(unit_names.MODEL_SWARM).strip() or "no output"))
            if found["answered"] and not found["checking"]:
                held = found["completed"]
            else:
                time.sleep(0.1)
    module.exit_json(changed=True, running=True, held=held)


def _remove_control_file(path):
    """aria2's control file beside the model directory (``<dir>/<name>.aria2``); whether there was one."""
    control = path.rstrip("/") + ".aria2"
    if os.path.isfile(control):
        os.unlink(control)
        return True
    return False


def rpc(port, secret, method, *args):
    """One call to aria2's JSON-RPC on loopback; its result. Plain HTTP: urls.open_url builds a TLS context per
    call (about 20 ms of CPU), and each node asks twice a second while the copy runs."""
    body = json.dumps({"jsonrpc": "2.0", "id": "ascend", "method": "aria2." + method,
                       "params": ["token:" + secret] + list(args)}).encode()
    connection = http_client.HTTPConnection("127.0.0.1", port, timeout=3)
    try:
        connection.request("POST", "/jsonrpc", body, {"Content-Type": "application/json"})
        answer = json.loads(connection.getresponse().read().decode())
    finally:
        connection.close()
    if "error" in answer:
        raise ValueError(answer["error"].get("message"))
    return answer["result"]


def _swarm_once(node, params):
    """What the node's aria2 says; its unit asked only when aria2 does not answer (a look reads twice a second,
    and systemctl costs more than the JSON-RPC)."""
    found = {"answered": False, "running": True}
    secret = params["password"]
    try:
        # Seeding, the download stays active; tellStopped finds it once it ended (an error).
        downloads = rpc(params["control_port"], secret, "tellActive", swarm.STATUS_KEYS) \
            or rpc(params["control_port"], secret, "tellStopped", 0, 10, swarm.STATUS_KEYS)
        if downloads:
            peers = rpc(params["control_port"], secret, "getPeers", downloads[0]["gid"]) \
                if downloads[0].get("status") == "active" else []
            found.update(swarm.node_status(downloads[0], peers, params["addresses"]))
            found["answered"] = True
    except (IOError, OSError, ValueError, KeyError, http_client.HTTPException) as exc:
        found["problem"] = str(exc)
    if not found["answered"]:
        found["running"] = node.unit(unit_names.MODEL_SWARM).get("ActiveState") == "active"
    return found


def swarm_status(node, params):
    """The swarm's state on this node, once it holds the model, or it failed, or aria2 did not answer, or after
    ``wait`` seconds: one module run for several looks (a module run costs the node and the controller CPU).
    Once the node holds the model: with ``record``, its record from the quick check; with ``leave``, it looks on
    until no peer connected to it lacks pieces, then stops the copy's units and removes its secrets."""
    module = node.module
    _need(module, params, ("password", "control_port"), "swarm_status")
    if params["record"]:
        _need(module, params, ("path", "manifest"), "swarm_status with record")
    start = now = time.monotonic()
    # Only what it records is used here (when each holder last changed and sent): no stall rule, no timeout.
    look = swarm.Watch(0)
    held_at, check, cleaned, fetched_in = None, None, False, None
    while True:
        found = _swarm_once(node, params)
        if not found["answered"]:
            break
        now = time.monotonic()
        look.seen(now, found)
        if found["complete"] and held_at is None:
            held_at = now
            path = (params["path"].rstrip("/") or "/") if params["path"] else None
            # One walk of the model directory: it dates the fetch's end and serves the quick check.
            files = model_files.walk(path) if path else {}
            fetched_in = swarm.fetch_seconds(files, node.started_at(unit_names.MODEL_SWARM)) if files else None
            if params["record"] and not module.check_mode:
                check = model_files.record_checked_copy(params["manifest"], path, params["record"], files)
        # A node whose files do not match leaves nothing: the copy fails and its cleanup stops everything.
        leaving = params["leave"] and not module.check_mode and held_at is not None \
            and not model_files.mismatch(check or {})
        if leaving and swarm.served(found):
            found = look.look(now)
            _stop_all(node, params["path"])
            cleaned = True
            break
        if (held_at is not None and not leaving) or found.get("error") or now - start >= params["wait"]:
            found = look.look(now)
            break
        # Four reads a second (a few milliseconds of CPU each): the last node's look that sees the end ends the copy.
        time.sleep(0.25)
    if not found["running"]:
        found["journal"] = node.journal(unit_names.MODEL_SWARM).strip()
    found.update(check=check, cleaned=cleaned, held_for=None if held_at is None else round(now - held_at, 1),
                 fetched_in=fetched_in)
    module.exit_json(changed=cleaned, swarm=found)


def _stop_all(node, path):
    """Every copy unit stopped, aria2's control file beside the model and the copy's secrets removed; whether
    there was anything."""
    changed = bool(node.stop_units([unit_names.MODEL_FETCH, unit_names.MODEL_SEED, unit_names.MODEL_SWARM,
                                    unit_names.MODEL_TRACKER], kill=[unit_names.MODEL_SWARM]))
    if path and not node.module.check_mode:
        changed = _remove_control_file(path) or changed
    if os.path.exists(model_files.RUNTIME_DIR):
        changed = True
        if not node.module.check_mode:
            shutil.rmtree(model_files.RUNTIME_DIR)
    return changed


def absent(node, params):
    node.module.exit_json(changed=_stop_all(node, params["path"]))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", choices=["serving", "fetching", "status", "swarm", "swarm_status", "absent"],
                       required=True),
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
            torrent=dict(type="str", no_log=True),
            holder=dict(type="bool", default=False),
            control_port=dict(type="int"),
            tracker=dict(type="str"),
            tracker_port=dict(type="int"),
            peers=dict(type="list", elements="str", default=[]),
            seeds=dict(type="list", elements="str", default=[]),
            addresses=dict(type="dict", default={}),
            record=dict(type="path"),
            leave=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    node = Node(module)
    dict(serving=serving, fetching=fetching, status=status, swarm=swarm_start,
         swarm_status=swarm_status, absent=absent)[module.params["state"]](node, module.params)


if __name__ == "__main__":
    main()
