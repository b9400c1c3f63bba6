# -*- coding: utf-8 -*-
"""The order node_apply runs unit steps in, from what changed and what systemd said before the apply."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.ascend.inference.plugins.module_utils.apply import unit_steps

ACTIVE = {"LoadState": "loaded", "ActiveState": "active", "UnitFileState": "enabled"}
INACTIVE = {"LoadState": "loaded", "ActiveState": "inactive", "UnitFileState": "disabled"}


def test_what_starts_last_stops_first_and_the_daemon_reloads_once_between():
    units = [{"name": "firewall", "state": "stopped"}, {"name": "ray", "file": "/u/ray", "state": "absent"},
             {"name": "serve", "file": "/u/serve", "state": "absent"}, {"name": "engine", "file": "/u/engine",
                                                                        "state": "started"}]
    steps = unit_steps.unit_steps(units, ["/u/engine"], ["/u/ray", "/u/serve"],
                                  {"firewall": ACTIVE, "ray": ACTIVE, "serve": ACTIVE, "engine": {}})
    assert steps == [("stop", "serve"), ("disable", "serve"), ("stop", "ray"), ("disable", "ray"),
                     ("stop", "firewall"), ("disable", "firewall"), ("daemon-reload", None),
                     ("enable", "engine"), ("start", "engine")]


def test_a_change_restarts_and_nothing_changed_does_nothing():
    units = [{"name": "ray", "file": "/u/ray", "state": "started", "restart_on": ["/e/ray.env"]}]
    assert unit_steps.unit_steps(units, [], [], {"ray": ACTIVE}) == []
    assert unit_steps.unit_steps(units, ["/e/ray.env"], [], {"ray": ACTIVE}) == [("restart", "ray")]
    assert unit_steps.unit_steps(units, [], [], {"ray": INACTIVE}) == [("enable", "ray"), ("start", "ray")]
    assert unit_steps.unit_steps([dict(units[0], restart=True)], [], [], {"ray": ACTIVE}) == [("restart", "ray")]


def test_a_removed_path_counts_as_a_change():
    units = [{"name": "engine", "reload_on": ["/spec/serve.json"]}]
    assert unit_steps.unit_steps(units, [], ["/spec/serve.json"], {"engine": ACTIVE}) == [("reload", "engine")]
    # Not running: nothing to reload.
    assert unit_steps.unit_steps(units, [], ["/spec/serve.json"], {"engine": INACTIVE}) == []


def test_a_unit_without_a_wanted_state_is_only_restarted_where_it_runs():
    units = [{"name": "ray", "try_restart_on": ["/e/node.env"]}, {"name": "serve", "try_restart_on": ["/e/node.env"]}]
    assert unit_steps.unit_steps(units, ["/e/node.env"], [], {"ray": ACTIVE, "serve": INACTIVE}) == [
        ("try-restart", "ray")]


def test_a_state_that_contradicts_itself_is_refused():
    found = unit_steps.validate([{"name": "a", "file": "/u/a", "state": "absent"}, {"name": "a"},
                                 {"name": "b", "file": "/u/b", "state": "running"}],
                                [{"label": "x", "unless_started": "c"}], ["/u/a"], [])
    assert sorted(found) == sorted([
        "unit a is absent but its file /u/a is written", "unit a is given twice",
        "unit b: state must be one of started, stopped, absent (found 'running')",
        "unit b: its file /u/b is neither written nor removed by this state",
        "command x waits on unit c, which this state does not name"])


def test_commands_due():
    commands = [{"label": "a", "always": True}, {"label": "b", "on_changed": ["/x"]},
                {"label": "c", "always": True, "unless_started": "engine"}]
    assert [c["label"] for c in unit_steps.commands_due(commands, [], [])] == ["a", "c"]
    assert [c["label"] for c in unit_steps.commands_due(commands, ["/x"], [("start", "engine")])] == ["a", "b"]


def test_one_line_per_change_and_step():
    result = {"changed_paths": ["/e/ray.env"], "paths": {"/e/ray.env": ["content"]}, "removed_paths": ["/e/old"],
              "steps": [{"unit": None, "action": "daemon-reload"}, {"unit": "ray", "action": "restart"}],
              "commands": [{"label": "restarted ray in ascend-engine"}], "hostname": None, "account": []}
    assert unit_steps.lines("n1", result, False) == ["n1: /e/old removed", "n1: /e/ray.env content",
                                                     "n1: ray restarted", "n1: restarted ray in ascend-engine"]
    assert unit_steps.lines("n1", result, True) == [
        "n1: /e/old would be removed", "n1: /e/ray.env content (would be written)", "n1: ray would be restarted",
        "n1: restarted ray in ascend-engine (would be asked)"]


def test_a_package_installed_and_an_endpoint_waited_for_are_said_one_answered_at_once_is_not():
    result = {"packages": ["haproxy"], "answers": [
        {"label": "the router's /health", "answered": True, "attempts": 4, "seconds": 6.04},
        {"label": "Prometheus' /-/ready", "answered": True, "attempts": 1, "seconds": 0.0}]}
    assert unit_steps.lines("n1", result, False) == ["n1: package haproxy installed",
                                                     "n1: the router's /health answered after 6.0 s"]
    assert unit_steps.lines("n1", {"packages": ["haproxy"]}, True) == ["n1: package haproxy would be installed"]


def test_a_unit_that_protects_until_its_replacement_runs_stops_last():
    units = [{"name": "old-fw", "file": "/u/old", "state": "absent", "stop_last": True},
             {"name": "fw", "file": "/u/fw", "state": "started", "restart_on": ["/u/fw"]}]
    steps = unit_steps.unit_steps(units, ["/u/fw"], ["/u/old"], {"old-fw": ACTIVE, "fw": {}})
    assert steps == [("disable", "old-fw"), ("daemon-reload", None), ("enable", "fw"), ("start", "fw"),
                     ("stop", "old-fw")]
