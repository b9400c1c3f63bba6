# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One node's part of the model's fan-out, as one task (see plugins/modules/model_copy.py): wait for the node
that sends to it, copy (rsync from the controller over the node's connection, or from the other node's daemon),
print the bytes and the rate as it goes, hash what arrived, then serve the nodes of later rounds."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import shlex
import subprocess
import time

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display
from ansible_collections.ascend.inference.plugins.module_utils import model_files
from ansible_collections.ascend.inference.plugins.module_utils import progress

display = Display()

ARGUMENTS = dict(
    transfer=dict(type="dict"),
    addresses=dict(type="dict", required=True),
    path=dict(type="str", required=True),
    manifest=dict(type="dict", required=True),
    record=dict(type="str", required=True),
    port=dict(type="int", required=True),
    password=dict(type="str", required=True, no_log=True),
    status_dir=dict(type="str", required=True),
    source=dict(type="str"),
    bwlimit=dict(type="str", default=""),
    io_timeout=dict(type="int", default=600),
    lifetime=dict(type="int", default=86400),
    interval=dict(type="int", default=2),
    progress_every=dict(type="int", default=10),
)

SSH = ("ssh", "ansible.builtin.ssh", "ansible.legacy.ssh")
PODMAN = ("podman", "containers.podman.podman")
DOCKER = ("docker", "community.docker.docker", "community.general.docker")
LOCAL = ("local", "ansible.builtin.local", "ansible.legacy.local")


class CopyFailed(Exception):
    pass


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(ARGUMENTS)

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        args = self.validate_argument_spec(argument_spec=ARGUMENTS)[1]
        transfer = args["transfer"]
        if not transfer:
            result.update(skipped=True, changed=False, msg="this node holds the model")
            return result
        self.host = task_vars.get("inventory_hostname", "?")
        self.task_vars, self.args = task_vars, args
        origin = transfer["seeder"] or "the controller"
        if self._play_context.check_mode:
            message = "would copy the model from %s (round %d)" % (origin, transfer["round"])
            display.display("%s: model, round %d, would copy from %s" % (self.host, transfer["round"], origin))
            result.update(changed=True, copied_from=transfer["seeder"] or "controller", msg=message)
            return result
        try:
            result.update(self.copy(transfer))
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
