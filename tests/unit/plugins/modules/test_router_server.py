# -*- coding: utf-8 -*-
"""router_server against a stand-in of HAProxy's runtime API on a Unix socket: it answers `show stat` with a
capture of HAProxy 2.6.12 (Debian 12's package) fronting three serve doubles - model-a1/a1 drained, a2 and big
down - and takes `set server` as HAProxy does (an empty line on success, a message otherwise)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import socket
import tempfile
import threading

import pytest

from ansible_collections.ascend.inference.plugins.modules import router_server

CAPTURE = os.path.join(os.path.dirname(__file__), "fixtures", "haproxy-2.6.12-show-stat.csv")


class Runtime(object):
    """One command per connection, as HAProxy's non-interactive mode; `set server B/S state X` changes the
    capture's status column for that row."""

    def __init__(self, path):
        with open(CAPTURE) as handle:
            self.lines = handle.read().splitlines()
        self.header = self.lines[0][2:].split(",")
        self.commands = []
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        self.listener.listen(4)
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                conn = self.listener.accept()[0]
            except OSError:
                return
            with conn:
                line = conn.makefile().readline().strip()
                self.commands.append(line)
                conn.sendall(self.answer(line).encode())

    def answer(self, line):
        if line == "show stat":
            return "\n".join(self.lines) + "\n\n"
        words = line.split()
        if words[:2] == ["set", "server"] and len(words) == 5 and words[3] == "state":
            backend, server = words[2].split("/")
            for index, row in enumerate(self.lines[1:], 1):
                cells = row.split(",")
                if cells[0] == backend and cells[1] == server:
                    cells[self.header.index("status")] = {"drain": "DRAIN", "maint": "MAINT", "ready": "UP"}[words[4]]
                    self.lines[index] = ",".join(cells)
                    return "\n"
            return "No such server.\n\n"
        return "Unknown command.\n"


@pytest.fixture
def runtime():
    directory = tempfile.mkdtemp()
    path = os.path.join(directory, "admin.sock")
    found = Runtime(path)
    yield path, found
    found.listener.close()
    os.unlink(path)
    os.rmdir(directory)


def test_reads_every_replica_of_the_capture(run_module, runtime):
    path = runtime[0]
    done = run_module(router_server.main, {"socket": path})
    assert not done.failed and not done.result["changed"]
    assert done.result["servers"] == [
        {"backend": "model-a1", "server": "a1", "status": "DRAIN", "sessions": 0},
        {"backend": "model-a1", "server": "a2", "status": "DOWN", "sessions": 0},
        {"backend": "model-big", "server": "big", "status": "DOWN", "sessions": 0}]


def test_ready_puts_a_drained_replica_back_and_says_it_changed(run_module, runtime):
    path, stand_in = runtime
    done = run_module(router_server.main, {"socket": path, "backend": "model-a1", "server": "a1", "state": "ready"})
    assert done.result["changed"] and done.result["before"] == "DRAIN"
    assert stand_in.commands == ["show stat", "set server model-a1/a1 state ready", "show stat"]
    assert router_server.status_of(done.result["servers"], "model-a1", "a1") == "UP"


def test_ready_waits_until_the_health_checks_find_it_up(run_module, runtime):
    path, stand_in = runtime
    # a2 is DOWN in the capture (its checks fail): back in the router, it stays DOWN until they pass.
    done = run_module(router_server.main, {"socket": path, "backend": "model-a1", "server": "a2", "state": "ready",
                                           "wait": 1})
    assert done.failed and done.result["msg"] == (
        "replica a2 of model-a1 is DOWN at the router after 1 s: its health checks fail (GET /health)")
    assert not done.result["changed"] and stand_in.commands[0] == "show stat"
    threading.Timer(0.3, lambda: stand_in.answer("set server model-a1/a2 state ready")).start()
    done = run_module(router_server.main, {"socket": path, "backend": "model-a1", "server": "a2", "state": "ready",
                                           "wait": 5})
    assert not done.failed and router_server.status_of(done.result["servers"], "model-a1", "a2") == "UP"


def test_drain_of_a_drained_replica_changes_nothing(run_module, runtime):
    path, stand_in = runtime
    done = run_module(router_server.main, {"socket": path, "backend": "model-a1", "server": "a1", "state": "drain"})
    assert not done.result["changed"] and stand_in.commands == ["show stat"]


def test_check_mode_sends_no_change(run_module, runtime):
    path, stand_in = runtime
    done = run_module(router_server.main, {"socket": path, "backend": "model-a1", "server": "a2", "state": "drain",
                                           "_ansible_check_mode": True})
    assert done.result["changed"] and stand_in.commands == ["show stat"]


def test_an_unknown_replica_is_named_with_those_there_are(run_module, runtime):
    path = runtime[0]
    done = run_module(router_server.main, {"socket": path, "backend": "model-a1", "server": "a9", "state": "drain"})
    assert done.failed and done.result["msg"] == (
        "the router has no replica a9 in backend model-a1 (it has: model-a1/a1, model-a1/a2, model-big/big)")


def test_no_router_running_is_said(run_module, tmp_path):
    done = run_module(router_server.main, {"socket": str(tmp_path / "admin.sock")})
    assert done.failed and done.result["msg"].startswith("the router's admin socket %s:" % (tmp_path / "admin.sock"))


@pytest.mark.parametrize("status,state,already", [
    ("UP", "ready", True), ("DOWN", "ready", True), ("UP 1/2", "ready", True), ("DRAIN", "ready", False),
    ("MAINT", "ready", False), ("DRAIN", "drain", True), ("UP", "drain", False), ("MAINT", "maint", True),
    ("DRAIN", "maint", False),
])
def test_is_state(status, state, already):
    assert router_server.is_state(status, state) is already
