# -*- coding: utf-8 -*-
"""The parallel_plan action plugin: the same arguments and result as the module, in the controller's process."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from unittest import mock

import pytest

from ansible.errors import AnsibleActionFail
from ansible.playbook.play_context import PlayContext
from ansible_collections.ascend.inference.plugins.action.parallel_plan import ActionModule

NODES = [{"name": "h", "head": True, "node_ip": "192.0.2.1", "nic": "eth0", "npus_per_node": 2},
         {"name": "w", "node_ip": "192.0.2.2", "nic": "eth0", "npus_per_node": 2}]


def run(args):
    task = mock.MagicMock(args=args, async_val=0, check_mode=False, diff=False)
    connection = mock.MagicMock()
    action = ActionModule(task, connection, PlayContext(), loader=None, templar=None, shared_loader_obj=None)
    with mock.patch.object(ActionModule, "_execute_module") as execute:
        result = action.run(task_vars={})
    # Nothing reaches the host: the plan is computed here.
    execute.assert_not_called()
    connection.exec_command.assert_not_called()
    return result


def test_the_plan_with_the_module_defaults():
    result = run({"engine": "vllm-ascend", "model": "/m", "tensor_parallel_size": 4, "nodes": NODES})
    assert not result.get("failed")
    assert result["changed"] is False
    assert result["cluster"]["ray_port"] == 6379
    assert result["nodes"]["h"]["serve_argv"][:3] == ["vllm", "serve", "/m"]
    assert result["nodes"]["w"]["serve_argv"] is None
    assert result["model_checks"] == ("not checked against its config.json: /m is not a directory on the controller; "
                                      "set ascend_model_config to a copy of it")


def test_an_invalid_layout_fails_with_every_problem():
    result = run({"engine": "vllm-ascend", "model": "/m", "tensor_parallel_size": 8, "nodes": NODES})
    assert result["failed"] is True
    assert result["msg"].startswith("invalid layout:\n- ")
    assert result["errors"] and all(error in result["msg"] for error in result["errors"])
    assert "cluster" not in result


def test_the_planner_warnings_become_task_warnings():
    nodes = [dict(node, npu_devices=None) for node in NODES]
    result = run({"engine": "vllm-ascend", "model": "/m", "tensor_parallel_size": 4, "nodes": nodes,
                  "devices_pending": False})
    assert result["plan_warnings"]
    assert result["warnings"] == result["plan_warnings"]


def test_arguments_are_checked_as_the_module_checks_them():
    with pytest.raises(AnsibleActionFail) as failure:
        run({"engine": "vllm-cuda", "model": "/m", "nodes": NODES})
    assert "engine" in str(failure.value)
    with pytest.raises(AnsibleActionFail) as failure:
        run({"engine": "vllm-ascend", "model": "/m", "nodes": [{"name": "h"}]})
    assert "node_ip" in str(failure.value)
