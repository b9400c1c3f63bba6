# -*- coding: utf-8 -*-
"""node_apply's units, commands and the rest of a state, against a systemd that records what it is asked: the order
of stops, writes, the one daemon-reload and starts; what a failure midway reports; what --check and --diff say."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import grp
import os
import pwd
import socket

import pytest

from ansible.module_utils import basic
from ansible_collections.ascend.inference.plugins.modules import node_apply

ME = pwd.getpwuid(os.getuid()).pw_name
MY_GROUP = grp.getgrgid(os.getgid()).gr_name
# What `systemctl show` prints of a unit, as systemd 252 (Debian 12) does for the properties asked.
RUNNING = {"LoadState": "loaded", "ActiveState": "active", "UnitFileState": "enabled", "User": ""}
STOPPED = {"LoadState": "loaded", "ActiveState": "inactive", "UnitFileState": "disabled", "User": ""}
MISSING = {"LoadState": "not-found", "ActiveState": "inactive", "UnitFileState": "", "User": ""}


class Systemd(object):
    """Stands in for run_command: `systemctl show` answers from STATES; every other command is recorded, and fails
    where FAILING says so (argv prefix -> rc)."""

    def __init__(self, states, failing=None):
        self.states, self.failing, self.calls = states, failing or {}, []

    def __call__(self, module, argv, **kwargs):
        argv = [str(a) for a in argv]
        if argv[:2] == ["systemctl", "show"]:
            names = argv[3:]
            blocks = ["Id=%s\n" % name + "".join("%s=%s\n" % item for item in sorted(
                self.states.get(name, MISSING).items())) for name in names]
            return 0, "\n".join(blocks), ""
        self.calls.append(argv)
        for prefix, rc in self.failing.items():
            if tuple(argv[:len(prefix)]) == prefix:
                return rc, "", "%s failed" % " ".join(argv)
        return 0, "", ""


@pytest.fixture
def systemd(monkeypatch):
    def install(states, failing=None):
        fake = Systemd(states, failing)
        monkeypatch.setattr(basic.AnsibleModule, "run_command", lambda module, argv, **kwargs: fake(module, argv))
        return fake
    return install


def unit_file(tmp_path, name, content="[Service]\nExecStart=/bin/true\n"):
    return {"path": str(tmp_path / name), "content": content, "mode": "0644", "owner": ME, "group": MY_GROUP}


def test_stops_first_then_one_daemon_reload_then_starts_in_order(run_module, systemd, tmp_path):
    fake = systemd({"old.service": RUNNING, "ray.service": RUNNING, "serve.service": RUNNING})
    (tmp_path / "old.service").write_text("[Service]\n")
    done = run_module(node_apply.main, {
        "files": [unit_file(tmp_path, "ray.service"), unit_file(tmp_path, "serve.service")],
        "absent": [str(tmp_path / "old.service")],
        "units": [
            {"name": "old.service", "file": str(tmp_path / "old.service"), "state": "absent"},
            {"name": "ray.service", "file": str(tmp_path / "ray.service"), "state": "started",
             "restart_on": [str(tmp_path / "ray.service")]},
            {"name": "serve.service", "file": str(tmp_path / "serve.service"), "state": "started",
             "restart_on": [str(tmp_path / "serve.service")]},
        ]}).result
    assert fake.calls == [["systemctl", "stop", "old.service"], ["systemctl", "disable", "old.service"],
                          ["systemctl", "daemon-reload"], ["systemctl", "restart", "ray.service"],
                          ["systemctl", "restart", "serve.service"]]
    assert not (tmp_path / "old.service").exists() and (tmp_path / "ray.service").exists()
    assert done["removed_paths"] == [str(tmp_path / "old.service")]
    assert [(s["unit"], s["action"]) for s in done["steps"]] == [
        ("old.service", "stop"), ("old.service", "disable"), (None, "daemon-reload"),
        ("ray.service", "restart"), ("serve.service", "restart")]
    assert done["steps"][3]["at"] <= done["steps"][4]["at"]


def test_a_settled_node_is_left_alone(run_module, systemd, tmp_path):
    spec = {"files": [unit_file(tmp_path, "ray.service")],
            "units": [{"name": "ray.service", "file": str(tmp_path / "ray.service"), "state": "started",
                       "restart_on": [str(tmp_path / "ray.service")]}]}
    systemd({"ray.service": MISSING})
    run_module(node_apply.main, spec)
    fake = systemd({"ray.service": RUNNING})
    again = run_module(node_apply.main, spec).result
    assert not again["changed"] and fake.calls == [] and again["steps"] == []


def test_a_stopped_unit_starts_and_a_new_one_is_enabled(run_module, systemd, tmp_path):
    fake = systemd({"a.service": STOPPED})
    (tmp_path / "a.service").write_text("[Service]\nExecStart=/bin/true\n")
    done = run_module(node_apply.main, {
        "files": [unit_file(tmp_path, "a.service")],
        "units": [{"name": "a.service", "file": str(tmp_path / "a.service"), "state": "started"}]}).result
    assert fake.calls == [["systemctl", "enable", "a.service"], ["systemctl", "start", "a.service"]]
    assert done["changed"]


def test_try_restarts_run_together_and_only_where_the_unit_runs(run_module, systemd, tmp_path):
    env = str(tmp_path / "node.env")
    fake = systemd({"ray.service": RUNNING, "serve.service": RUNNING, "engine.service": MISSING})
    run_module(node_apply.main, {
        "files": [dict(unit_file(tmp_path, "node.env"), content="A=1\n")],
        "units": [{"name": name, "try_restart_on": [env]} for name in ("ray.service", "serve.service", "engine.service")]})
    # One transaction: serve, PartOf= Ray, restarts once.
    assert fake.calls == [["systemctl", "try-reload-or-restart", "ray.service", "serve.service"]]


def test_a_failure_midway_says_what_was_done(run_module, systemd, tmp_path):
    systemd({"ray.service": RUNNING, "serve.service": RUNNING},
            failing={("systemctl", "restart", "serve.service"): 1})
    failed = run_module(node_apply.main, {
        "files": [unit_file(tmp_path, "ray.service"), unit_file(tmp_path, "serve.service")],
        "units": [{"name": "ray.service", "file": str(tmp_path / "ray.service"), "state": "started",
                   "restart_on": [str(tmp_path / "ray.service")]},
                  {"name": "serve.service", "file": str(tmp_path / "serve.service"), "state": "started",
                   "restart_on": [str(tmp_path / "serve.service")]}]})
    assert failed.failed and "systemctl restart serve.service failed (rc 1)" in failed.result["msg"]
    assert failed.result["changed"]
    assert failed.result["changed_paths"] == [str(tmp_path / "ray.service"), str(tmp_path / "serve.service")]
    assert [(s["unit"], s["action"]) for s in failed.result["steps"]] == [
        (None, "daemon-reload"), ("ray.service", "restart")]


def test_a_refusal_writes_nothing(run_module, systemd, tmp_path):
    fake = systemd({"ray.service": dict(RUNNING, User="someone")})
    refused = run_module(node_apply.main, {
        "files": [unit_file(tmp_path, "serve.service")],
        "peers": [{"unit": "ray.service", "user": "ascend-inference"}],
        "units": [{"name": "serve.service", "file": str(tmp_path / "serve.service"), "state": "started"}]})
    assert refused.failed and "ray.service on host this node runs as someone" in refused.result["msg"]
    assert not (tmp_path / "serve.service").exists() and fake.calls == []
    missing_parent = run_module(node_apply.main, {
        "files": [unit_file(tmp_path, "a.service"), unit_file(tmp_path / "nowhere", "b.service")]})
    assert missing_parent.failed and "does not exist" in missing_parent.result["msg"]
    assert not (tmp_path / "a.service").exists()


def test_check_mode_reports_steps_and_changes_nothing(run_module, systemd, tmp_path):
    fake = systemd({"ray.service": RUNNING})
    done = run_module(node_apply.main, {
        "_ansible_check_mode": True, "_ansible_diff": True,
        "files": [unit_file(tmp_path, "ray.service")],
        "secrets": {},
        "units": [{"name": "ray.service", "file": str(tmp_path / "ray.service"), "state": "started",
                   "restart_on": [str(tmp_path / "ray.service")]}]}).result
    assert fake.calls == [] and not (tmp_path / "ray.service").exists()
    assert done["changed"] and done["changed_paths"] == [str(tmp_path / "ray.service")]
    assert [(s["unit"], s["action"]) for s in done["steps"]] == [(None, "daemon-reload"), ("ray.service", "restart")]
    assert done["diff"][0]["after"].startswith("[Service]")


def test_commands_run_after_the_units_unless_the_unit_started(run_module, systemd, tmp_path):
    spec = str(tmp_path / "ray.json")
    fake = systemd({"engine.service": RUNNING})
    run_module(node_apply.main, {
        "files": [dict(unit_file(tmp_path, "ray.json"), content="{}\n")],
        "units": [{"name": "engine.service", "state": "started", "reload_on": [spec], "retries": 2}],
        "commands": [{"label": "restarted ray in the container", "argv": ["supervisor", "restart", "ray"],
                      "on_changed": [spec], "unless_started": "engine.service"}]})
    assert fake.calls == [["systemctl", "reload", "engine.service"], ["supervisor", "restart", "ray"]]
    fake = systemd({"engine.service": STOPPED})
    (tmp_path / "ray.json").write_text("{\"new\": 1}\n")
    run_module(node_apply.main, {
        "files": [dict(unit_file(tmp_path, "ray.json"), content="{}\n")],
        "units": [{"name": "engine.service", "state": "started", "enabled": False, "reload_on": [spec]}],
        "commands": [{"label": "restarted ray", "argv": ["supervisor", "restart", "ray"], "on_changed": [spec],
                      "unless_started": "engine.service"}]})
    # A container that starts runs every process anew: no request to its supervisor.
    assert fake.calls == [["systemctl", "start", "engine.service"]]


def test_a_reload_that_fails_is_tried_again(run_module, systemd, monkeypatch, tmp_path):
    monkeypatch.setattr(node_apply.time, "sleep", lambda seconds: None)
    answers = iter([1, 1, 0])
    fake = systemd({"engine.service": RUNNING})
    real = fake.__call__

    def flaky(module, argv, **kwargs):
        if list(argv[:2]) == ["systemctl", "reload"]:
            fake.calls.append(list(argv))
            return next(answers), "", "not yet"
        return real(module, argv, **kwargs)

    monkeypatch.setattr(basic.AnsibleModule, "run_command", flaky)
    done = run_module(node_apply.main, {
        "files": [dict(unit_file(tmp_path, "serve.json"), content="{}\n")],
        "units": [{"name": "engine.service", "state": "started", "reload_on": [str(tmp_path / "serve.json")],
                   "retries": 2}]})
    assert not done.failed and fake.calls == [["systemctl", "reload", "engine.service"]] * 3


def test_leftover_processes_fail_naming_them(run_module, systemd, monkeypatch):
    monkeypatch.setattr(node_apply.time, "sleep", lambda seconds: None)
    fake = systemd({"serve.service": RUNNING}, failing={("pgrep",): 0})
    fake.failing = {}
    real = fake.__call__

    def pgrep(module, argv, **kwargs):
        if argv[0] == "pgrep":
            fake.calls.append(list(argv))
            return 0, "4242 vllm serve /m\n", ""
        return real(module, argv, **kwargs)

    monkeypatch.setattr(basic.AnsibleModule, "run_command", pgrep)
    failed = run_module(node_apply.main, {
        "units": [{"name": "serve.service", "state": "stopped", "enabled": False}],
        "leftovers": {"pattern": "vllm serve", "attempts": 3}})
    assert failed.failed and "still running after the services stopped: 4242 vllm serve /m" in failed.result["msg"]
    assert fake.calls[:2] == [["systemctl", "stop", "serve.service"], ["systemctl", "disable", "serve.service"]]
    assert len([call for call in fake.calls if call[0] == "pgrep"]) == 3


def test_a_managed_block_keeps_the_rest_of_the_file(run_module, systemd, tmp_path):
    systemd({})
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1 localhost\n# BEGIN nodes\n10.0.0.1 old\n# END nodes\n::1 ip6\n")
    os.chmod(str(hosts), 0o640)
    block = {"path": str(hosts), "marker": "# {mark} nodes", "block": "10.0.0.1 a\n10.0.0.2 b"}
    done = run_module(node_apply.main, {"blocks": [block]}).result
    assert hosts.read_text() == "127.0.0.1 localhost\n# BEGIN nodes\n10.0.0.1 a\n10.0.0.2 b\n# END nodes\n::1 ip6\n"
    assert done["changed_paths"] == [str(hosts)] and oct(os.stat(str(hosts)).st_mode & 0o777) == "0o640"
    assert not run_module(node_apply.main, {"blocks": [block]}).result["changed"]
    # Unset, the block goes (remove_node.yml on the node it takes out); then, and where the file is not, nothing.
    gone = dict(block, block=None)
    assert run_module(node_apply.main, {"blocks": [gone]}).result["changed_paths"] == [str(hosts)]
    assert hosts.read_text() == "127.0.0.1 localhost\n::1 ip6\n"
    assert not run_module(node_apply.main, {"blocks": [gone]}).result["changed"]
    assert not run_module(node_apply.main, {"blocks": [dict(gone, path=str(tmp_path / "none"))]}).result["changed"]


def test_a_kept_directory_is_only_created(run_module, systemd, tmp_path):
    systemd({})
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    kept = {"path": str(cache), "mode": "0755", "owner": ME, "group": MY_GROUP, "keep": True}
    assert not run_module(node_apply.main, {"directories": [kept]}).result["changed"]
    assert oct(os.stat(str(cache)).st_mode & 0o777) == "0o700"
    cache.rmdir()
    assert run_module(node_apply.main, {"directories": [kept]}).result["changed_paths"] == [str(cache)]


def test_a_sweep_stops_and_removes_what_only_an_earlier_state_named(run_module, systemd, tmp_path):
    units, config = tmp_path / "units", tmp_path / "config"
    units.mkdir()
    config.mkdir()
    for name in ("ascend-serve-old.service", "ascend-serve-chat.service", "ascend-ray.service"):
        (units / name).write_text("[Service]\n")
    for name in ("serve-old.env", "node-old.env", "serve-chat.env", "node.env"):
        (config / name).write_text("X=1\n")
    fake = systemd({"ascend-serve-old.service": RUNNING, "ascend-serve-chat.service": RUNNING})
    done = run_module(node_apply.main, {"sweep": [
        {"directory": str(units), "pattern": r"ascend-serve(-[a-z0-9-]+)?\.service",
         "keep": ["ascend-serve-chat.service"], "units": True},
        {"directory": str(config), "pattern": r"serve\.env|(node|secrets|serve)-[a-z0-9-]+\.env",
         "keep": ["serve-chat.env"]},
        # A directory that does not exist holds nothing to sweep.
        {"directory": str(tmp_path / "none"), "pattern": ".*"}]}).result
    assert fake.calls == [["systemctl", "stop", "ascend-serve-old.service"],
                          ["systemctl", "disable", "ascend-serve-old.service"], ["systemctl", "daemon-reload"]]
    assert sorted(os.listdir(str(units))) == ["ascend-ray.service", "ascend-serve-chat.service"]
    assert sorted(os.listdir(str(config))) == ["node.env", "serve-chat.env"]
    assert sorted(done["removed_paths"]) == sorted([str(units / "ascend-serve-old.service"),
                                                    str(config / "node-old.env"), str(config / "serve-old.env")])
    # Nothing left to sweep: nothing done.
    fake = systemd({"ascend-serve-chat.service": RUNNING})
    again = run_module(node_apply.main, {"sweep": [
        {"directory": str(units), "pattern": r"ascend-serve(-[a-z0-9-]+)?\.service",
         "keep": ["ascend-serve-chat.service"], "units": True}]}).result
    assert fake.calls == [] and not again["changed"]


def test_a_units_wait_for_reports_the_port_it_reached_and_the_one_it_did_not():
    """The unit's wait_for against loopback sockets: one listening, one closed (bound a moment, then closed)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    closed_port = closed.getsockname()[1]
    closed.close()
    try:
        reached = node_apply.wait_for({"host": "127.0.0.1", "port": server.getsockname()[1], "timeout": 5})
        missed = node_apply.wait_for({"host": "127.0.0.1", "port": closed_port, "timeout": 0})
    finally:
        server.close()
    assert reached["reached"] and reached["seconds"] < 1
    assert not missed["reached"] and missed["seconds"] == 0
    assert missed["msg"].startswith("Timeout when waiting for 127.0.0.1:%d (" % closed_port) and "refused" in missed["msg"]
