# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One node's part of the model's copy, as one task (see plugins/modules/model_copy.py). In rounds: wait for the
node that sends to it, copy (rsync from the controller over the node's connection, or from the other node's
daemon), print the bytes and the rate as it goes, hash what arrived, then serve the nodes of later rounds.
Pipelined: follow the node's aria2 in the swarm until it holds every piece, naming stalled holders and starting
a frozen aria2 again. Also the controller's aria2 for a pipelined copy from the controller."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display
from ansible_collections.ascend.inference.plugins.module_utils.model import files as model_files
from ansible_collections.ascend.inference.plugins.plugin_utils import progress
from ansible_collections.ascend.inference.plugins.module_utils.model import swarm
from ansible_collections.ascend.inference.plugins.module_utils.model import torrent
from ansible_collections.ascend.inference.plugins.module_utils.apply.listening import wait_listening

display = Display()

ARGUMENTS = dict(
    transfer=dict(type="dict"),
    addresses=dict(type="dict", default={}),
    path=dict(type="str", required=True),
    manifest=dict(type="dict", default={}),
    record=dict(type="str", default=""),
    port=dict(type="int", default=8730),
    password=dict(type="str", required=True, no_log=True),
    # Where the rounds' copies meet on the controller (the swarm needs none).
    status_dir=dict(type="str", default=""),
    source=dict(type="str"),
    bwlimit=dict(type="str", default=""),
    io_timeout=dict(type="int", default=600),
    lifetime=dict(type="int", default=86400),
    interval=dict(type="int", default=2),
    progress_every=dict(type="int", default=10),
    pipeline=dict(type="dict"),
    controller_seed=dict(type="str", choices=["start", "stop"]),
    # controller_seed: the pieces' SHA-1 kept per manifest; the directory seed_start returned, for stop.
    cache=dict(type="str", default=""),
    seed_dir=dict(type="str", default=""),
)

SSH = ("ssh", "ansible.builtin.ssh", "ansible.legacy.ssh")
PODMAN = ("podman", "containers.podman.podman")
DOCKER = ("docker", "community.docker.docker", "community.general.docker")
LOCAL = ("local", "ansible.builtin.local", "ansible.legacy.local")


# The process ids of the controller's aria2 and of its tracker, in its directory.
SEED_PID = "aria2.pid"
TRACKER_PID = "tracker.pid"


class CopyFailed(Exception):
    pass


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(ARGUMENTS)

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        args = self.validate_argument_spec(argument_spec=ARGUMENTS)[1]
        self.host = task_vars.get("inventory_hostname", "?")
        self.task_vars, self.args = task_vars, args
        if args["controller_seed"]:
            try:
                result.update(self.seed_start() if args["controller_seed"] == "start" else self.seed_stop())
                # The torrent's info dictionary holds the run's password: the result is not shown.
                result["_ansible_no_log"] = "torrent" in result
            except CopyFailed as exc:
                result.update(failed=True, msg="the controller cannot send the model: %s" % exc)
            return result
        transfer = args["transfer"]
        if not transfer:
            result.update(skipped=True, changed=False, msg="this node holds the model")
            return result
        origin = transfer["seeder"] or "the controller"
        if args["pipeline"]:
            origin = "the swarm"
        if self._play_context.check_mode:
            message = "would copy the model from %s (round %d)" % (origin, transfer["round"])
            display.display("%s: model, round %d, would copy from %s" % (self.host, transfer["round"], origin))
            result.update(changed=True, copied_from="swarm" if args["pipeline"] else (transfer["seeder"] or "controller"),
                          msg=message)
            return result
        try:
            result.update(self.swarm_copy(transfer) if args["pipeline"] else self.copy(transfer))
            self.mark("done", result)
        except CopyFailed as exc:
            result.update(failed=True, msg="%s: the model was not copied from %s: %s" % (self.host, origin, exc))
            self.mark("failed", result)
        except BaseException as exc:
            self.mark("failed", {"msg": str(exc)})
            raise
        finally:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        return result

    # --- what the other nodes' tasks see on the controller ---------------------------------------------------

    def mark(self, state, content):
        if not self.args["status_dir"]:
            return  # the swarm: no round waits for another node's mark
        with open(os.path.join(self.args["status_dir"], "%s.%s" % (self.host, state)), "w") as handle:
            json.dump(dict((k, v) for k, v in content.items() if k != "invocation"), handle)

    def state_of(self, host):
        for state in ("done", "failed", "received"):
            if os.path.exists(os.path.join(self.args["status_dir"], "%s.%s" % (host, state))):
                return state
        return None

    def wait(self, transfer):
        """Until the nodes this one waits for are done: its sender (a receiver of an earlier round) and the
        sender's previous receiver (a node sends to one node at a time: the rounds)."""
        throttle = progress.Throttle(self.args["progress_every"])
        start = time.monotonic()
        while True:
            pending = []
            for host in transfer["wait_for"]:
                state = self.state_of(host)
                if state == "failed" and host == transfer["seeder"]:
                    raise CopyFailed("%s, which was to send it, failed to get the model itself" % host)
                # The sender waits until it serves; its previous receiver only until its files arrived (the
                # sender is free then, while that receiver hashes them).
                if state is None or (state == "received" and host == transfer["seeder"]):
                    pending.append(host)
            if not pending:
                return
            if throttle.due(time.monotonic() - start, "waiting"):
                display.display("%s: model, round %d, waiting for %s" % (self.host, transfer["round"], ", ".join(pending)))
            time.sleep(0.5)

    # --- the copy --------------------------------------------------------------------------------------------

    def module(self, name, module_args):
        answer = self._execute_module(module_name=name, module_args=module_args, task_vars=self.task_vars)
        if answer.get("failed"):
            raise CopyFailed(answer.get("msg", "%s failed" % name))
        return answer

    def copy(self, transfer):
        args = self.args
        self.wait(transfer)
        seeder = transfer["seeder"]
        slim = {"files": [{"path": f["path"], "size": f["size"]} for f in args["manifest"]["files"]]}
        status_args = {"state": "status", "path": args["path"], "manifest": slim}
        push = None
        if seeder is None:
            before = self.module("ascend.inference.model_transfer", status_args)["bytes_present"]
            push = self.push()
        else:
            before = self.module("ascend.inference.model_transfer", {
                "state": "fetching", "path": args["path"], "seeder": args["addresses"][seeder], "port": args["port"],
                "password": args["password"], "bwlimit": args["bwlimit"], "io_timeout": args["io_timeout"],
                "lifetime": args["lifetime"], "manifest": slim})["bytes_present"]
        start = time.monotonic()
        try:
            status = self.follow(transfer, push, status_args, before, start)
        finally:
            if push is not None and push.poll() is None:
                # A failed look at the node must not leave rsync writing to it.
                push.terminate()
                push.wait()
        return self.finish(transfer, push, status, max(time.monotonic() - start, 0.001))

    def follow(self, transfer, push, status_args, before, start):
        """Look at the copy until it ends, printing the bytes and the rate; the last look's status."""
        args, seeder = self.args, transfer["seeder"]
        throttle = progress.Throttle(args["progress_every"])
        while True:
            # Each look waits for the copy's end, up to the interval: the end is seen at once.
            if push is not None:
                try:
                    push.wait(timeout=args["interval"])
                except subprocess.TimeoutExpired:
                    pass
            status = self.module("ascend.inference.model_transfer",
                                 dict(status_args, wait=0 if push is not None else args["interval"]))
            finished = push.poll() is not None if push is not None else status["finished"]
            elapsed = max(time.monotonic() - start, 0.001)
            done = status["bytes_present"]
            line = model_files.progress_status(seeder, done, args["manifest"]["bytes"], max(done - before, 0) / elapsed)
            if throttle.due(elapsed, seeder) or finished:
                display.display("%s: model, round %d, %s" % (self.host, transfer["round"], line))
            if finished:
                return status

    def finish(self, transfer, push, status, elapsed):
        args, seeder = self.args, transfer["seeder"]
        if push is not None:
            code, output = push.returncode, self.push_output()
            stats = model_files.rsync_stats(output)
        else:
            code, output, stats = status["exit_status"], status["output"], status["stats"]
        if code != 0:
            raise CopyFailed("rsync exited with %d: %s" % (code, progress.tail(output, 6) or "no output"))
        self.mark("received", {})
        # The full check of what arrived, before this node sends it on.
        check = self.module("ascend.inference.model_check", {
            "path": args["path"], "manifest": args["manifest"], "record": args["record"], "hash": "always"})
        problem = model_files.check_summary(self.host, args["path"], check)
        if problem:
            raise CopyFailed("after the copy, %s" % problem)
        if transfer["serves"]:
            self.module("ascend.inference.model_transfer", {
                "state": "serving", "path": args["path"], "address": args["addresses"][self.host],
                "allow": sorted(set(args["addresses"].values())), "port": args["port"],
                "password": args["password"], "io_timeout": args["io_timeout"], "lifetime": args["lifetime"]})
        sent = stats.get("literal")
        # rsync's matched data: what the node had already (a file cut off by an interruption, an older version).
        reused = stats.get("matched") or 0
        message = "copied from %s in %d s" % (seeder or "the controller", elapsed)
        if sent is not None:
            message += ": %s sent" % model_files.size_text(sent)
        if reused:
            message += ", %s already on the node (not sent again)" % model_files.size_text(reused)
        display.display("%s: model, round %d, %s" % (self.host, transfer["round"], message))
        return dict(changed=True, copied_from=seeder or "controller", round=transfer["round"], seconds=int(elapsed),
                    bytes_sent=sent, bytes_reused=reused, files_transferred=stats.get("files_transferred"),
                    msg=message)

    # --- pipelined: the swarm ---------------------------------------------------------------------------------

    def swarm_status(self, pipeline, wait, leave=False, record=False):
        args = self.args
        module_args = {"state": "swarm_status", "password": args["password"], "control_port": pipeline["control_port"],
                       "addresses": pipeline["names"], "wait": wait, "path": args["path"], "leave": leave}
        if record:
            module_args.update(record=args["record"], manifest=args["manifest"])
        answer = self._execute_module(module_name="ascend.inference.model_transfer", task_vars=self.task_vars,
                                      module_args=module_args)
        if answer.get("failed") or answer.get("unreachable"):
            return {"answered": False, "running": True, "problem": answer.get("msg")}
        return answer["swarm"]

    def swarm_join(self, pipeline):
        args = self.args
        return self.module("ascend.inference.model_transfer", {
            "state": "swarm", "path": args["path"], "address": args["addresses"][self.host], "port": args["port"],
            "control_port": pipeline["control_port"], "password": args["password"], "torrent": pipeline["torrent"],
            "tracker": pipeline["tracker"], "tracker_port": pipeline["tracker_port"], "lifetime": args["lifetime"],
            "bwlimit": args["bwlimit"], "addresses": pipeline["names"]})

    def swarm_copy(self, transfer):
        """Follow this node's aria2 (started by the task before, with every other node's) until it holds the
        whole model: progress lines, holders that stopped sending named, its own aria2 started again once if it
        stopped answering, a failure after io_timeout seconds without a byte."""
        args, pipeline = self.args, self.args["pipeline"]
        timeout = int(pipeline.get("stall_timeout") or 30)
        watch = swarm.Watch(timeout)
        throttle = progress.Throttle(args["progress_every"])
        start = time.monotonic()
        # What the node held (checked) when it joined the swarm (the task before).
        held, named, restarts, status = pipeline.get("held"), set(), 0, {}
        # Each look waits on the node for the end, as long as no holder can count as stalled meanwhile and up to
        # the progress lines' interval: each look is a module run, which costs the node and the controller CPU.
        longest = max(1, args["progress_every"])
        # The look that sees the end writes the node's record and, once no peer needs this node's pieces, stops
        # its aria2: no module run after the last piece but that one. Staying to the cleanup after the copy: the
        # tracker's node, and a node that named a stalled holder; a node whose aria2 starts again after it froze
        # asks the tracker, and finds the nodes that stayed.
        leave = args["addresses"][self.host] != pipeline["tracker"]
        while True:
            status = self.swarm_status(pipeline, int(round(watch.next_look(time.monotonic(), longest))),
                                       leave and not named, record=True)
            now = time.monotonic()
            watch.seen(now, status if status["answered"] else None)
            if status["answered"]:
                if status.get("error"):
                    raise CopyFailed("aria2: %s" % status["error"])
                if held is None and not status["checking"]:
                    held = status["completed"]
                if status["complete"]:
                    break
            elif not status["running"]:
                raise CopyFailed("aria2 ended before the node held the model: %s" % (
                    progress.tail(status.get("journal") or "", 6) or "no output"))
            # Twice the stall timeout: the other nodes name it and route around it first.
            if watch.frozen(now, 2 * timeout):
                if restarts:
                    raise CopyFailed("aria2 on this node stopped answering again for %d s" % (2 * timeout))
                restarts += 1
                display.warning("%s: model, aria2 on this node has not answered for %d s (stalled); starting it "
                                "again, it keeps the pieces it checked" % (self.host, 2 * timeout))
                rejoined = self.swarm_join(pipeline)
                held = rejoined.get("held") if held is None else held
                watch = swarm.Watch(timeout)
                continue
            for name in (watch.stalled_holders(now) if status["answered"] else []):
                if name not in named:
                    named.add(name)
                    display.warning("%s: model, %s stopped sending (nothing for %d s); the pieces come from the "
                                    "other holders" % (self.host, name, timeout))
            if watch.stalled(now, args["io_timeout"]):
                raise CopyFailed("no holder sent a byte for %d s (holders connected: %s)" % (
                    args["io_timeout"], ", ".join(status.get("peers") or []) or "none"))
            elapsed = max(now - start, 0.001)
            if status["answered"] and throttle.due(elapsed, "swarm"):
                line = model_files.progress_status(", ".join(status["sending"]) or "the swarm", status["completed"],
                                                   status["total"], status["download_rate"])
                display.display("%s: model, swarm, %s" % (self.host, line))
            if not status["answered"]:
                time.sleep(args["interval"])
        # From the node's own clock where it tells: with fewer forks than nodes this wait may begin after the fetch.
        elapsed = status.get("fetched_in")
        if elapsed is None:
            elapsed = max(time.monotonic() - start - (status.get("held_for") or 0), 0.001)
        total = status["total"]
        held = int(held or 0)
        # Every piece was checked against its SHA-1 as it arrived: the record needs no second reading.
        if status.get("check") is None:
            raise CopyFailed("the node's files were not checked against the manifest after the copy")
        problem = model_files.check_summary(self.host, args["path"], status["check"])
        if problem:
            raise CopyFailed("after the copy, %s" % problem)
        message = "received through the swarm in %d s: %s fetched" % (elapsed, model_files.size_text(total - held))
        if held:
            message += ", %s already on the node (checked piece by piece, not sent again)" % model_files.size_text(held)
        if named:
            message += "; stopped sending: %s" % ", ".join(sorted(named))
        display.display("%s: model, %s" % (self.host, message))
        cleaned = status.get("cleaned") or (leave and not named and self.swarm_leave(pipeline, timeout, longest))
        return dict(changed=True, copied_from="swarm", round=1, seconds=int(elapsed), bytes_sent=total - held,
                    bytes_reused=held, stalled=sorted(named), restarted=restarts, cleaned=cleaned, msg=message)

    def swarm_leave(self, pipeline, timeout, longest):
        """The node holds the model and a peer that lacks pieces is still connected to it: it goes on sending
        (looks that end, and stop its aria2, once no such peer is left) unless those peers' pieces do not change
        for ``timeout`` seconds (a stopped node, which the cleanup after the copy waits for no longer). Whether
        the node's aria2 was stopped. The controller and the nodes that held the model send until that cleanup:
        no node depends on this one's pieces alone."""
        quiet_since, last = time.monotonic(), None
        while True:
            status = self.swarm_status(pipeline, max(1, min(longest, timeout)), leave=True)
            now = time.monotonic()
            if not status["answered"] or status.get("cleaned"):
                return bool(status.get("cleaned"))
            pieces = sorted((holder["name"], holder["bitfield"]) for holder in status["holders"])
            if pieces != last:
                quiet_since, last = now, pieces
            elif now - quiet_since >= timeout:
                return False

    # --- the controller's aria2 (pipelined copy from the controller) ------------------------------------------

    def seed_start(self):
        """aria2 on the controller, seeding model_src to the nodes from the address its route to them takes,
        and the swarm's tracker on that address, until seed_stop or the end of ansible-playbook. Makes the
        model's torrent first (the pieces' SHA-1 read once per manifest) and returns it with the address and its
        own directory. The tracker here, not on a node: it lives as long as the only holder, and every node may
        stop its own aria2 once no peer needs its pieces (no node stays for the cleanup after the copy)."""
        args, pipeline = self.args, self.args["pipeline"] or {}
        aria2c = shutil.which("aria2c")
        if not aria2c:
            raise CopyFailed("aria2c is not installed on the controller (Debian: apt install aria2); or set "
                             "model_pipeline: never")
        if not args["source"]:
            raise CopyFailed("no source directory on the controller (model_src)")
        if self._play_context.check_mode:
            return dict(changed=True, address=None, msg="would send the model from the controller")
        target = args["addresses"][self.host]
        try:
            probe = socket.socket(socket.AF_INET6 if ":" in target else socket.AF_INET, socket.SOCK_DGRAM)
            probe.connect((target, args["port"]))
            address = probe.getsockname()[0]
            probe.close()
        except OSError as exc:
            raise CopyFailed("no route from the controller to %s (%s): %s" % (self.host, target, exc))
        name = os.path.basename(args["path"].rstrip("/"))
        try:
            meta, _hashed, _length, _count = torrent.for_manifest(
                args["source"], args["manifest"], name, swarm.announce_url(address, pipeline["tracker_port"]),
                args["password"], args["cache"])
        except (IOError, OSError) as exc:
            raise CopyFailed("cannot read the model at %s: %s" % (args["source"], exc))
        # 0700: it holds aria2's configuration, whose RPC secret is the run's password.
        base = tempfile.mkdtemp(prefix="ascend-model-seed-")
        try:
            self.seed_in(base, aria2c, address, name, meta)
        except BaseException:
            self.remove_seed(base)
            raise
        display.display("the controller sends the model from %s:%d" % (address, args["port"]))
        return dict(changed=True, address=address, seed_dir=base, torrent=base64.b64encode(meta).decode(),
                    msg="the controller sends from %s" % address)

    def seed_in(self, base, aria2c, address, name, meta):
        """The tracker and aria2 seeding from ``base``; returns once both listen."""
        args, pipeline = self.args, self.args["pipeline"] or {}
        tracker_dir = os.path.join(base, swarm.TRACKER_DIR)
        os.mkdir(tracker_dir)
        with open(os.path.join(tracker_dir, swarm.ANNOUNCE), "wb") as handle:
            handle.write(torrent.tracker_reply(swarm.members(address, pipeline.get("holders") or [],
                                                             args["addresses"].values()),
                                               args["port"], swarm.TRACKER_INTERVAL))
        with open(os.path.join(base, "tracker.log"), "w") as log:
            tracker = subprocess.Popen(
                [sys.executable, "-c", swarm.CONTROLLER_TRACKER, address, str(pipeline["tracker_port"]), tracker_dir,
                 str(os.getppid())], stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True)
        with open(os.path.join(base, TRACKER_PID), "w") as handle:
            handle.write("%d\n" % tracker.pid)
        self.listening(tracker, address, pipeline["tracker_port"], os.path.join(base, "tracker.log"), "the tracker")
        link = os.path.join(base, name)
        os.symlink(args["source"], link)
        torrent_file = os.path.join(base, swarm.TORRENT)
        with open(torrent_file, "wb") as handle:
            handle.write(meta)
        conf = os.path.join(base, swarm.ARIA2_CONF)
        descriptor = os.open(conf, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as handle:
            # The main ansible-playbook process: an interrupted run leaves nothing behind on the controller.
            handle.write(swarm.aria2_conf(base, address, args["port"], pipeline["control_port"], args["password"],
                                          args["lifetime"], swarm.CONTROLLER_PEERS, holder=True,
                                          bwlimit=args["bwlimit"], stop_with=os.getppid()))
        with open(os.path.join(base, "aria2.log"), "w") as log:
            process = subprocess.Popen([aria2c, "--conf-path=" + conf, torrent_file], stdin=subprocess.DEVNULL,
                                       stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        with open(os.path.join(base, SEED_PID), "w") as handle:
            handle.write("%d\n" % process.pid)
        self.listening(process, address, args["port"], os.path.join(base, "aria2.log"), "aria2c")

    @staticmethod
    def listening(process, address, port, log_file, what):
        # Either listens within a few milliseconds: every node's join waits for this task.
        if not wait_listening(address, port, 15, poll=0.02, ended=lambda: process.poll() is not None)[0]:
            with open(log_file) as log:
                raise CopyFailed("%s does not listen on %s:%d: %s" % (
                    what, address, port, progress.tail(log.read(), 6) or "no output"))

    def seed_stop(self):
        base = self.args["seed_dir"]
        if not base or not os.path.isdir(base):
            return dict(changed=False)
        self.remove_seed(base)
        return dict(changed=True)

    @staticmethod
    def remove_seed(base):
        """The controller's aria2 and tracker killed (aria2 only sends; it takes about 3 s to end on SIGTERM) and
        their directory removed."""
        for pid_file in (SEED_PID, TRACKER_PID):
            try:
                with open(os.path.join(base, pid_file)) as handle:
                    pid = int(handle.read().strip())
                # Never 0 or less: os.kill would signal this whole process group.
                if pid > 0:
                    os.kill(pid, signal.SIGKILL)
            except (IOError, OSError, ValueError):
                pass  # never started, or gone
        shutil.rmtree(base, ignore_errors=True)

    # --- from the controller ---------------------------------------------------------------------------------

    def push_output(self):
        with open(self.push_log) as handle:
            return handle.read()

    def push(self):
        """rsync on the controller, over the node's own connection, into the model directory."""
        args = self.args
        if not args["source"]:
            raise CopyFailed("no source directory on the controller (model_src)")
        rsh, target, rsync_path = self.remote_shell()
        argv = model_files.push_argv(args["source"], target, rsh, rsync_path if rsh else None,
                                     args["bwlimit"] or None, args["io_timeout"])
        if rsh is None and rsync_path:
            argv = ["sudo", "-n"] + argv  # the local connection becomes root for the copy as for a task
        display.vvv("model copy: %s" % " ".join(shlex.quote(a) for a in argv), host=self.host)
        self.push_log = os.path.join(args["status_dir"], "%s.rsync.out" % self.host)
        with open(self.push_log, "w") as out:
            try:
                return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
            except OSError as exc:
                raise CopyFailed("cannot run rsync on the controller: %s" % exc)

    def remote_shell(self):
        """(rsync's --rsh value, its target, its --rsync-path) for the node's connection."""
        connection = self._connection
        kind = connection.transport
        host = self._play_context.remote_addr or self.host
        path = self.args["path"]
        rsync_path = None
        if self._play_context.become:
            if self._play_context.become_method != "sudo" or (self._play_context.become_user or "root") != "root":
                raise CopyFailed("a copy from the controller becomes root on the node with sudo only (found become_method "
                                 "%s, become_user %s)" % (self._play_context.become_method, self._play_context.become_user))
            rsync_path = "sudo -n rsync"
        if kind in LOCAL:
            return None, path, rsync_path
        if kind in SSH:
            if connection.get_option("password"):
                raise CopyFailed("a copy from the controller over SSH needs key authentication, not ansible_password")
            argv = [connection.get_option("ssh_executable") or "ssh"]
            if connection.get_option("port"):
                argv += ["-p", str(connection.get_option("port"))]
            if connection.get_option("private_key_file"):
                argv += ["-i", os.path.expanduser(connection.get_option("private_key_file"))]
            if connection.get_option("remote_user"):
                argv += ["-l", connection.get_option("remote_user")]
            # No prompt can be answered here; the weights do not compress (Ansible's default ssh_args hold -C).
            argv += ["-o", "BatchMode=yes"]
            if not connection.get_option("host_key_checking"):
                argv += ["-o", "StrictHostKeyChecking=no"]
            for option in ("ssh_args", "ssh_common_args", "ssh_extra_args"):
                argv += [arg for arg in shlex.split(connection.get_option(option) or "") if arg != "-C"]
            # rsync puts the host in front of the remote command; [..] keeps an IPv6 address whole.
            target = ("[%s]" % host if ":" in host else host) + ":" + path
        elif kind in PODMAN or kind in DOCKER:
            engine = "podman_executable" if kind in PODMAN else "docker_cmd"
            try:
                argv = [connection.get_option(engine) or kind.split(".")[-1]]
            except KeyError:
                argv = [kind.split(".")[-1]]
            extra = "podman_extra_args" if kind in PODMAN else "docker_extra_args"
            try:
                argv += shlex.split(connection.get_option(extra) or "")
            except KeyError:
                pass
            argv += ["exec", "-i"]
            if connection.get_option("remote_user"):
                argv += ["--user", connection.get_option("remote_user")]
            target = host + ":" + path
        else:
            raise CopyFailed("a copy from the controller runs over the ssh, podman, docker or local connection, not %s; "
                             "put the model on the head and set model_source: head" % kind)
        try:
            return model_files.rsh_option(argv), target, rsync_path
        except ValueError as exc:
            raise CopyFailed(str(exc))
