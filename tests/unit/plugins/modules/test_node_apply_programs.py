# -*- coding: utf-8 -*-
"""node_apply's programs and endpoints: a package installed only where its program is missing (and only reported in
--check), a program's own answer judged before anything is written, a program sent by the controller (asked for,
then moved into place, checked by running it), and the HTTP endpoints waited for after the units started - against a
real HTTP server on loopback and real programs in a temporary directory."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import grp
import hashlib
import http.server
import os
import pwd
import re
import threading

import pytest

from ansible.module_utils import basic
from ansible_collections.ascend.inference.plugins.module_utils.apply import programs
from ansible_collections.ascend.inference.plugins.modules import node_apply

ME = pwd.getpwuid(os.getuid()).pw_name
MY_GROUP = grp.getgrgid(os.getgid()).gr_name
# What `haproxy -vv` prints first and among its services (HAProxy 2.6.12 of Debian 12; 2.4 of Ubuntu 22.04).
HAPROXY_26 = "HAProxy version 2.6.12-1+deb12u1 2023/12/16 - https://haproxy.org/\n...\n\tprometheus-exporter\n"
HAPROXY_24 = "HAProxy version 2.4.24-0ubuntu0.22.04.1 2023/10/31 - https://haproxy.org/\n...\n"


def program(directory, name, script):
    path = directory / name
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(0o755)
    return str(path)


@pytest.fixture
def commands(monkeypatch):
    """run_command recorded; the package managers only recorded, everything else really run."""
    calls = Calls()
    real = basic.AnsibleModule.run_command

    def run(module, argv, **kwargs):
        argv = [str(a) for a in argv]
        calls.append(argv)
        if os.path.basename(argv[0]) in ("apt-get", "dnf"):
            calls.brings()
            return 0, "", ""
        return real(module, argv, **kwargs)
    monkeypatch.setattr(basic.AnsibleModule, "run_command", run)
    return calls


class Calls(list):
    """The commands run; brings() is what a package manager's install puts on the node (nothing by default)."""

    def brings(self):
        pass


@pytest.fixture
def bin_dir(tmp_path, monkeypatch):
    directory = tmp_path / "bin"
    directory.mkdir()
    monkeypatch.setenv("PATH", str(directory))
    monkeypatch.setattr(programs, "SYSTEM_DIRECTORIES", [])
    return directory


def test_a_package_is_installed_only_where_its_program_is_missing(run_module, commands, bin_dir):
    apt = program(bin_dir, "apt-get", "exit 0\n")
    program(bin_dir, "present-tool", "exit 0\n")
    packages = [{"name": "present", "program": "present-tool"}, {"name": "tool-pkg", "program": "missing-tool"}]
    checked = run_module(node_apply.main, {"packages": packages, "_ansible_check_mode": True}).result
    assert checked["packages"] == ["tool-pkg"] and checked["changed"] and commands == []
    # The package manager (recorded, not run) brought nothing: the program is named.
    failed = run_module(node_apply.main, {"node": "n1", "packages": packages})
    assert failed.failed and failed.result["msg"] == (
        "n1: installing tool-pkg did not bring missing-tool: set the role's program variable to where the package "
        "puts it")
    del commands[:]
    commands.brings = lambda: program(bin_dir, "missing-tool", "exit 0\n")
    done = run_module(node_apply.main, {"packages": packages}).result
    assert done["packages"] == ["tool-pkg"] and done["changed"]
    assert commands == [[apt] + programs.MANAGERS[0][1][1:] + ["tool-pkg"]]
    del commands[:]
    program(bin_dir, "missing-tool", "exit 0\n")
    again = run_module(node_apply.main, {"packages": packages}).result
    assert again["packages"] == [] and not again["changed"] and commands == []


def test_without_a_package_manager_the_package_is_named(run_module, commands, bin_dir):
    failed = run_module(node_apply.main, {"node": "n1", "packages": [{"name": "tool-pkg", "program": "missing-tool"}]})
    assert failed.failed
    assert failed.result["msg"] == ("n1: no package manager (apt-get, dnf, yum, zypper) to install tool-pkg: install "
                                    "tool-pkg yourself")


# Not "haproxy": this machine may have one in /usr/sbin, which get_bin_path always searches.
ROUTER_BUILD = {"argv": ["test-haproxy", "-vv"], "version_pattern": r"HAProxy version ([0-9.]+)", "minimum": "2.6",
                "contains": ["prometheus-exporter"], "fix": "set router_program to such a build"}


def test_a_program_too_old_is_refused_before_anything_is_written(run_module, commands, bin_dir, tmp_path):
    program(bin_dir, "test-haproxy", "printf '%s'\n" % HAPROXY_24)
    target = tmp_path / "haproxy.cfg"
    failed = run_module(node_apply.main, {"node": "n1", "requires": [ROUTER_BUILD], "files": [
        {"path": str(target), "content": "x\n", "mode": "0644", "owner": ME, "group": MY_GROUP}]})
    assert failed.failed and not target.exists()
    assert failed.result["msg"] == (
        "n1: test-haproxy -vv printed 'HAProxy version 2.4.24-0ubuntu0.22.04.1 2023/10/31 - https://haproxy.org/' "
        "(version 2.4.24, below 2.6): set router_program to such a build")
    program(bin_dir, "test-haproxy", "printf 'HAProxy version 2.8.5 2024/01/01\\n'\n")
    failed = run_module(node_apply.main, {"node": "n1", "requires": [ROUTER_BUILD]})
    assert "(prometheus-exporter not in what it printed)" in failed.result["msg"]
    program(bin_dir, "test-haproxy", "printf '%s'\n" % HAPROXY_26)
    done = run_module(node_apply.main, {"node": "n1", "requires": [ROUTER_BUILD], "files": [
        {"path": str(target), "content": "x\n", "mode": "0644", "owner": ME, "group": MY_GROUP}]})
    assert not done.failed and target.read_text() == "x\n"
    assert done.result["programs"] == {"test-haproxy": HAPROXY_26.splitlines()[0]}


def test_in_check_mode_a_program_its_package_would_bring_is_not_run(run_module, commands, bin_dir):
    program(bin_dir, "apt-get", "exit 0\n")
    checked = run_module(node_apply.main, {"packages": [{"name": "haproxy", "program": "test-haproxy"}],
                                           "requires": [ROUTER_BUILD], "_ansible_check_mode": True})
    assert not checked.failed and checked.result["packages"] == ["haproxy"] and checked.result["programs"] == {}


def sent_file(path, checksum, staged=None):
    return {"path": str(path), "mode": "0755", "owner": ME, "group": MY_GROUP, "checksum": checksum, "staged": staged,
            "validate": "%s -version"}


def test_a_program_from_the_controller_is_asked_for_then_moved_in_after_it_runs(run_module, commands, tmp_path):
    content = b"#!/bin/sh\necho npu-exporter v7.1.RC1\n"
    digest = hashlib.sha1(content).hexdigest()
    target = tmp_path / "exporter"
    asked = run_module(node_apply.main, {"files": [sent_file(target, digest)]}).result
    # Nothing done: the controller sends it and asks again.
    assert asked["stage"] == [str(target)] and not asked["changed"] and not target.exists()
    checked = run_module(node_apply.main, {"files": [sent_file(target, digest)], "_ansible_check_mode": True}).result
    assert checked["changed_paths"] == [str(target)] and "stage" not in checked
    staged = tmp_path / "sent"
    staged.write_bytes(content)
    done = run_module(node_apply.main, {"files": [sent_file(target, digest, str(staged))]}).result
    assert done["changed_paths"] == [str(target)] and target.read_bytes() == content
    assert oct(target.stat().st_mode & 0o777) == "0o755"
    # Run to check it, from an executable copy beside the target.
    assert any(len(argv) == 2 and argv[1] == "-version" and os.path.dirname(argv[0]) == str(tmp_path)
               for argv in commands)
    again = run_module(node_apply.main, {"files": [sent_file(target, digest)]}).result
    assert not again["changed"] and "stage" not in again


def test_a_program_that_does_not_run_here_is_refused_and_the_old_one_kept(run_module, commands, tmp_path):
    target = tmp_path / "exporter"
    target.write_bytes(b"#!/bin/sh\necho old\n")
    foreign = b"\x7fELF\x02\x01\x01" + b"\0" * 64
    staged = tmp_path / "sent"
    staged.write_bytes(foreign)
    failed = run_module(node_apply.main, {"files": [sent_file(target, hashlib.sha1(foreign).hexdigest(), str(staged))]})
    assert failed.failed and "fails '%s -version' (exit 126): Exec format error" in failed.result["msg"]
    assert target.read_bytes() == b"#!/bin/sh\necho old\n"
    other = run_module(node_apply.main, {"files": [sent_file(target, "0" * 40, str(staged))]})
    assert other.failed and "SHA-1 differs" in other.result["msg"]


class Answers(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 503)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    httpd = http.server.HTTPServer(("127.0.0.1", 0), Answers)
    thread = threading.Thread(target=httpd.serve_forever)
    thread.daemon = True
    thread.start()
    yield "http://127.0.0.1:%d" % httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()


def test_an_endpoint_is_waited_for_and_one_that_does_not_answer_named(run_module, commands, server):
    done = run_module(node_apply.main, {"answers": [{"label": "the router's /health", "url": server + "/health"}]})
    assert not done.failed and not done.result["changed"]
    (answer,) = done.result["answers"]
    assert (answer["answered"], answer["attempts"], answer["last"]) == (True, 1, 200)
    failed = run_module(node_apply.main, {"node": "n1", "answers": [
        {"label": "the router's /health", "url": server + "/health"},
        {"label": "Prometheus' /-/ready", "url": server + "/-/ready", "timeout": 2, "delay": 1}]})
    assert failed.failed
    # Asked at 0, 1 and 2 s (a loopback answer takes milliseconds): never past the timeout.
    assert re.fullmatch(r"n1: Prometheus' /-/ready \(%s/-/ready\) did not answer 200 within 2 s \([23] attempts; "
                        r"last: 503\)" % re.escape(server), failed.result["msg"]), failed.result["msg"]
    checked = run_module(node_apply.main, {"answers": [{"label": "x", "url": server + "/down"}],
                                           "_ansible_check_mode": True})
    assert not checked.failed and checked.result["answers"] == []
