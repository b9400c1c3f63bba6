# -*- coding: utf-8 -*-
"""The node_phase action plugin: a refusal reaches no node, an apply is one module call, its lines are printed, and
the phase's record joins the run's earlier ones (ascend_applied)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from unittest import mock

from ansible.playbook.play_context import PlayContext
from ansible.template import Templar
from ansible_collections.ascend.inference.plugins.action import node_phase
from ansible_collections.ascend.inference.plugins.action.node_phase import ActionModule
from ansible_collections.ascend.inference.plugins.plugin_utils.phases.phase import Refused

PLAN = {"cluster": {"head": "h"}, "nodes": {"h": {}}}


def run(phase, wanted, module_result=None, facts=None, check_mode=False):
    # "1": what ansible-core 2.18 may make of a number in a dict; the phase gets the number.
    task = mock.MagicMock(args={"phase": phase, "settings": {"x": "1"}}, async_val=0, check_mode=check_mode, diff=False)
    action = ActionModule(task, mock.MagicMock(), PlayContext(), loader=None, templar=Templar(loader=None),
                          shared_loader_obj=None)
    task_vars = {"inventory_hostname": "h", "ascend_plan": PLAN, "ansible_facts": facts or {}}
    calls, lines = [], []

    def desired(node, settings):
        if isinstance(wanted, Exception):
            raise wanted
        assert settings == {"x": 1} and node.host == "h"
        return wanted

    with mock.patch.dict(node_phase.PHASES, {phase: (desired, {"x": "int"})}), \
            mock.patch.object(ActionModule, "_execute_module",
                              side_effect=lambda **kwargs: calls.append(kwargs) or dict(module_result or {})), \
            mock.patch.object(ActionModule, "_remove_tmp_path"), \
            mock.patch.object(node_phase.display, "display", side_effect=lines.append):
        result = action.run(task_vars=task_vars)
    return result, calls, lines


def test_a_refusal_reaches_no_node():
    result, calls, _lines = run("ray", Refused("The head h has no Ray token"))
    assert result["failed"] and result["msg"] == "The head h has no Ray token" and calls == []
    assert "ansible_facts" not in result


def test_one_module_call_its_lines_and_the_record_joined_to_the_runs():
    waited = {"ray": {"host": "192.0.2.1", "port": 6379, "reached": False, "msg": "Timeout when waiting for 192.0.2.1:6379"}}
    applied = {"changed": True, "changed_paths": ["/e/ray.env"], "paths": {"/e/ray.env": ["content"]},
               "removed_paths": [], "steps": [{"unit": "ray", "action": "restart", "at": 1.0}], "commands": [],
               "waited": waited}
    wanted = {"apply": {"files": [{"path": "/e/ray.env", "content": "A=1\n", "mode": "0600"}]},
              "record": {"token_auth": True}, "warnings": ["a warning"],
              "after": lambda result: {"restarted": bool(result["steps"])}}
    result, calls, lines = run("ray", wanted, applied, facts={"ascend_applied": {"preflight": {"seen": 1}}})
    assert len(calls) == 1 and calls[0]["module_name"] == "ascend.inference.node_apply"
    assert calls[0]["module_args"]["node"] == "h" and calls[0]["module_args"]["files"][0]["path"] == "/e/ray.env"
    assert lines == ["h: /e/ray.env content", "h: ray restarted"]
    assert result["changed"] and result["warnings"] == ["a warning"]
    assert result["ansible_facts"]["ascend_applied"] == {
        "preflight": {"seen": 1},
        "ray": {"token_auth": True, "changed_paths": ["/e/ray.env"], "removed_paths": [],
                "steps": [{"unit": "ray", "action": "restart", "at": 1.0}], "commands": [], "restarted": True,
                "waited": waited}}


def test_a_failed_apply_records_nothing():
    result, _calls, _lines = run("serve", {"apply": {"files": []}, "record": {}},
                                 {"failed": True, "msg": "systemctl restart failed", "changed_paths": [], "steps": []})
    assert result["failed"] and "ansible_facts" not in result


def test_a_read_phase_calls_no_apply_and_the_probe_starts_the_record_again():
    result, calls, _lines = run("preflight", {"apply": None, "record": {"npu": {}}, "fresh": True},
                                facts={"ascend_applied": {"ray": {"restarted": True}}})
    assert calls == [] and result["changed"] is False
    assert result["ansible_facts"]["ascend_applied"] == {"preflight": {"npu": {}}}


def test_a_phase_run_once_for_the_play_records_nothing():
    result, _calls, lines = run("status_report", {"apply": None, "record": None, "show": "the table"})
    assert "ansible_facts" not in result and lines == ["the table"]
