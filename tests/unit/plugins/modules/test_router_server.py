# -*- coding: utf-8 -*-
"""router_server against a stand-in of HAProxy's runtime API on a Unix socket: it answers `show stat` with a
capture of HAProxy 2.6.12 (Debian 12's package) fronting three serve doubles - model-a1/a1 drained, a2 and big
down - and `show servers state BACKEND` in the format of another capture of the same HAProxy (four servers of
model-a: a1 drained and up, a2 ready, a3 drained and down - `show stat` says DOWN -, a4 in maintenance; taken
with `set server ... state drain|maint` on its admin socket), and takes `set server` as HAProxy does (an empty
line on success, a message otherwise)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import socket
import tempfile
import threading

import pytest

from ansible_collections.ascend.inference.plugins.modules import router_server

CAPTURE = os.path.join(os.path.dirname(__file__), "fixtures", "haproxy-2.6.12-show-stat.csv")
STATE_CAPTURE = os.path.join(os.path.dirname(__file__), "fixtures", "haproxy-2.6.12-show-servers-state.txt")
# The administrative state behind each status of the show stat capture (what HAProxy shows for it).
ADMIN_OF = {"DRAIN": 8, "MAINT": 1}


class Runtime(object):
    """One command per connection, as HAProxy's non-interactive mode. Each server has an operational state (up
    unless the capture says DOWN) and an administrative one; `set server B/S state X` changes the latter, and
    `show stat` shows MAINT, else DRAIN while up, else UP or DOWN, as HAProxy does."""

    def __init__(self, path):
        with open(CAPTURE) as handle:
            self.lines = handle.read().splitlines()
        with open(STATE_CAPTURE) as handle:
            self.state_header = [line for line in handle.read().splitlines() if line.startswith("# ")][0]
        self.header = self.lines[0][2:].split(",")
        self.admin, self.down = {}, set()
        for row in self.lines[1:]:
            cells = row.split(",")
            if len(cells) < len(self.header):
                continue
            status = cells[self.header.index("status")]
            self.admin[(cells[0], cells[1])] = ADMIN_OF.get(status, 0)
            if status == "DOWN":
                self.down.add((cells[0], cells[1]))
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

    def status(self, key):
        if self.admin[key] & 0x23:
            return "MAINT"
        if key in self.down:
            return "DOWN"
        return "DRAIN" if self.admin[key] & 0x18 else "UP"

    def answer(self, line):
        if line == "show stat":
            rows = [self.lines[0]]
            for row in self.lines[1:]:
                cells = row.split(",")
                if len(cells) > 1 and (cells[0], cells[1]) in self.admin and cells[1] not in ("FRONTEND", "BACKEND"):
                    cells[self.header.index("status")] = self.status((cells[0], cells[1]))
                rows.append(",".join(cells))
            return "\n".join(rows) + "\n\n"
        words = line.split()
        if words[:3] == ["show", "servers", "state"] and len(words) == 4:
            rows = ["3 %s %d %s 127.0.0.1 %d %d 1 1 5 15 3 2 6 0 0 0 - 8000 - 0 0 - - 0" % (
                backend, index, server, 0 if (backend, server) in self.down else 2, admin)
                for index, ((backend, server), admin) in enumerate(sorted(self.admin.items()), 1)
                if backend == words[3] and server not in ("FRONTEND", "BACKEND")]
            return "1\n%s\n%s\n\n" % (self.state_header, "\n".join(rows)) if rows else "Can't find backend.\n\n"
        if words[:2] == ["set", "server"] and len(words) == 5 and words[3] == "state":
            backend, server = words[2].split("/")
            if (backend, server) not in self.admin:
                return "No such server.\n\n"
            self.admin[(backend, server)] = {"drain": 8, "maint": 1, "ready": 0}[words[4]]
            return "\n"
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


def test_an_engines_metrics_backend_holds_no_replica():
    """The router also forwards each engine's /metrics to a backend of its own (plan/monitoring.py): its server is
    no replica. Its row here is the capture's model-big/big row under that backend's name."""
    with open(CAPTURE) as handle:
        stat = handle.read()
    row = next(line for line in stat.splitlines() if line.startswith("model-big,big,"))
    extra = stat.rstrip("\n") + "\n" + row.replace("model-big,big,", "engine_metrics_1,engine,", 1) + "\n"
    assert [(r["backend"], r["server"]) for r in router_server.servers(extra)] == [
        ("model-a1", "a1"), ("model-a1", "a2"), ("model-big", "big")]


def test_ready_puts_a_drained_replica_back_and_says_it_changed(run_module, runtime):
    path, stand_in = runtime
    done = run_module(router_server.main, {"socket": path, "backend": "model-a1", "server": "a1", "state": "ready"})
    assert done.result["changed"] and done.result["before"] == "DRAIN" and done.result["admin_before"] == "DRAIN"
    assert stand_in.commands == ["show stat", "show servers state model-a1", "set server model-a1/a1 state ready",
                                 "show stat"]
    assert router_server.status_of(done.result["servers"], "model-a1", "a1") == "UP"


def test_ready_waits_until_the_health_checks_find_it_up(run_module, runtime):
    path, stand_in = runtime
    # a2 is DOWN in the capture (its checks fail): back in the router, it stays DOWN until they pass.
    done = run_module(router_server.main, {"socket": path, "backend": "model-a1", "server": "a2", "state": "ready",
                                           "wait": 1})
    assert done.failed and done.result["msg"] == (
        "replica a2 of model-a1 is DOWN at the router after 1 s: its health checks fail (GET /health)")
    assert not done.result["changed"] and stand_in.commands[0] == "show stat"
    threading.Timer(0.3, lambda: stand_in.down.discard(("model-a1", "a2"))).start()
    done = run_module(router_server.main, {"socket": path, "backend": "model-a1", "server": "a2", "state": "ready",
                                           "wait": 5})
    assert not done.failed and router_server.status_of(done.result["servers"], "model-a1", "a2") == "UP"


def test_drain_of_a_drained_replica_changes_nothing(run_module, runtime):
    path, stand_in = runtime
    done = run_module(router_server.main, {"socket": path, "backend": "model-a1", "server": "a1", "state": "drain"})
    assert not done.result["changed"] and stand_in.commands == ["show stat", "show servers state model-a1"]


def test_a_drained_replica_whose_checks_fail_is_put_back(run_module, runtime):
    # HAProxy shows a drained server that is down as DOWN (the capture's a3): only its admin state says drained.
    path, stand_in = runtime
    stand_in.answer("set server model-a1/a2 state drain")
    assert router_server.status_of(router_server.servers(stand_in.answer("show stat")), "model-a1", "a2") == "DOWN"
    done = run_module(router_server.main, {"socket": path, "backend": "model-a1", "server": "a2", "state": "ready"})
    assert done.result["changed"] and done.result["admin_before"] == "DRAIN"
    assert stand_in.admin[("model-a1", "a2")] == 0


def test_the_admin_state_is_read_from_the_capture():
    with open(STATE_CAPTURE) as handle:
        found = router_server.admin_states(handle.read())
    assert found == {"a1": 8, "a2": 0, "a3": 8, "a4": 1}
    assert [router_server.admin_word(found[s]) for s in ("a1", "a2", "a3", "a4")] == ["DRAIN", "READY", "DRAIN", "MAINT"]
    with pytest.raises(ValueError):
        router_server.admin_states("Can't find backend.\n\n")


def test_check_mode_sends_no_change(run_module, runtime):
    path, stand_in = runtime
    done = run_module(router_server.main, {"socket": path, "backend": "model-a1", "server": "a2", "state": "drain",
                                           "_ansible_check_mode": True})
    assert done.result["changed"] and stand_in.commands == ["show stat", "show servers state model-a1"]


def test_an_unknown_replica_is_named_with_those_there_are(run_module, runtime):
    path = runtime[0]
    done = run_module(router_server.main, {"socket": path, "backend": "model-a1", "server": "a9", "state": "drain"})
    assert done.failed and done.result["msg"] == (
        "the router has no replica a9 in backend model-a1 (it has: model-a1/a1, model-a1/a2, model-big/big)")


def test_no_router_running_is_said(run_module, tmp_path):
    done = run_module(router_server.main, {"socket": str(tmp_path / "admin.sock")})
    assert done.failed and done.result["msg"].startswith("the router's admin socket %s:" % (tmp_path / "admin.sock"))


@pytest.mark.parametrize("admin,state,already", [
    (0, "ready", True), (8, "ready", False), (1, "ready", False), (0x10, "ready", False), (0x04, "ready", True),
    (8, "drain", True), (0, "drain", False), (9, "drain", False), (1, "maint", True), (0x20, "maint", True),
    (8, "maint", False),
])
def test_is_state(admin, state, already):
    # 0x04 is the configuration's maintenance, outside HAProxy's MAINT mask; 9 (drained and stopped) is MAINT.
    assert router_server.is_state(admin, state) is already
