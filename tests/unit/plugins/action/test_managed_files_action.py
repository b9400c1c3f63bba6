# -*- coding: utf-8 -*-
"""The managed_files action plugin: the node is not contacted where the probe's view shows every path as the
module would leave it; otherwise the module runs with the task's options, less the probe's."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
from unittest import mock

from ansible.playbook.play_context import PlayContext
from ansible_collections.ascend.inference.plugins.action.managed_files import ActionModule
from ansible_collections.ascend.inference.plugins.module_utils.managed_files import digest

KEY = "k" * 32
OPTIONS = {
    "directories": [{"path": "/etc/ascend-inference/"}],
    "files": [{"path": "/etc/ascend-inference/node.env", "content": "A=1\n", "mode": "0600"},
              {"path": "/etc/ascend-inference/secrets.env", "mode": "0600"}],
    "secrets": {"/etc/ascend-inference/secrets.env": "TOKEN=abc\n"},
}


def seen(env="A=1\n", key=KEY):
    """The probe's RV files for OPTIONS as the module writes them, with node.env holding ENV."""
    owned = {"owner": "root", "group": "root"}
    return {
        "/etc/ascend-inference/": dict(owned, type="directory", mode="0755"),
        "/etc/ascend-inference/node.env": dict(owned, type="file", mode="0600", digest=digest(key, env.encode())),
        "/etc/ascend-inference/secrets.env": dict(owned, type="file", mode="0600",
                                                  digest=digest(key, b"TOKEN=abc\n")),
    }


def run(args):
    task = mock.MagicMock(args=args, action="ascend.inference.managed_files", async_val=0, check_mode=False,
                          diff=False)
    action = ActionModule(task, mock.MagicMock(), PlayContext(), loader=None, templar=None, shared_loader_obj=None)
    with mock.patch.object(ActionModule, "_execute_module",
                           return_value={"changed": True, "changed_paths": ["/x"], "paths": {}}) as execute:
        result = action.run(task_vars={})
    return result, execute


def test_settled_paths_skip_the_node():
    args = dict(copy.deepcopy(OPTIONS), probed=seen(), digest_key=KEY)
    result, execute = run(args)
    execute.assert_not_called()
    assert result["skipped"] is True and result["changed"] is False
    assert result["changed_paths"] == []
    assert result["paths"] == {"/etc/ascend-inference": [], "/etc/ascend-inference/node.env": [],
                               "/etc/ascend-inference/secrets.env": []}
    assert "abc" not in repr(result)
    # The task's own options are left as they were (Ansible may template them again).
    assert args == dict(copy.deepcopy(OPTIONS), probed=seen(), digest_key=KEY)


def test_a_change_or_any_doubt_runs_the_module_without_the_probes_options():
    for probed, key in [(seen(env="A=2\n"), KEY), (seen(), "x" * 32), (seen(), None), ({}, KEY), (None, None)]:
        args = dict(copy.deepcopy(OPTIONS), probed=probed, digest_key=key)
        result, execute = run(args)
        execute.assert_called_once()
        assert execute.call_args.kwargs["module_name"] == "ascend.inference.managed_files"
        assert execute.call_args.kwargs["module_args"] == OPTIONS
        assert result["changed"] is True and "skipped" not in result


def test_without_the_probes_options_the_module_runs():
    result, execute = run(copy.deepcopy(OPTIONS))
    assert execute.call_args.kwargs["module_args"] == OPTIONS
    assert result["changed_paths"] == ["/x"]
