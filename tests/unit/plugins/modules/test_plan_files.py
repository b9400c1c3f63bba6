# -*- coding: utf-8 -*-
"""The plan_files module: writes what differs, nothing in check mode."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import stat

from ansible_collections.ascend.inference.plugins.modules.plan_files import main
from ansible_collections.ascend.inference.plugins.module_utils.plan.documents import node_documents
from ansible_collections.ascend.inference.plugins.module_utils.plan.planner import make_plan

# A plan as the planner makes it: what the files hold and what plan.yml shows come from the same result.
_PLANNED = make_plan({"engine": "vllm-ascend", "model": "m", "launcher": "mp", "data_parallel_size": 2},
                     [{"name": "h", "head": True, "node_ip": "192.0.2.1", "npus_per_node": 1},
                      {"name": "w", "node_ip": "192.0.2.2", "npus_per_node": 1}])
CLUSTER = _PLANNED["cluster"]
PLAN = {"cluster": CLUSTER, "nodes": _PLANNED["nodes"]}


def test_writes_one_file_per_node_then_nothing(run_module, tmp_path):
    target = tmp_path / "plan"
    first = run_module(main, {"path": str(target), "plan": PLAN})
    assert not first.failed and first.result["changed"]
    assert sorted(os.listdir(str(target))) == ["h.json", "layout.svg", "w.json"]
    assert json.loads((target / "w.json").read_text()) == dict(PLAN["nodes"]["w"], cluster=CLUSTER)
    assert stat.S_IMODE(os.stat(str(target / "h.json")).st_mode) == 0o644
    second = run_module(main, {"path": str(target), "plan": PLAN})
    assert not second.result["changed"] and second.result["written"] == []
    # What plan.yml shows: each node's commands.
    assert "serve: vllm serve m --headless --tensor-parallel-size 1 --data-parallel-size 2" in first.result["summary"]


def test_rewrites_only_the_node_that_changed(run_module, tmp_path):
    run_module(main, {"path": str(tmp_path), "plan": PLAN})
    changed = {"cluster": PLAN["cluster"], "nodes": dict(PLAN["nodes"], w=dict(PLAN["nodes"]["w"], x=1))}
    done = run_module(main, {"path": str(tmp_path), "plan": changed})
    assert done.result["written"] == [str(tmp_path / "w.json")]


def test_check_mode_reports_and_writes_nothing(run_module, tmp_path):
    target = tmp_path / "plan"
    done = run_module(main, {"path": str(target), "plan": PLAN, "_ansible_check_mode": True, "_ansible_diff": True})
    assert done.result["changed"] and len(done.result["written"]) == 3
    assert done.result["diff"][0]["before"] == "" and '"role": "head"' in done.result["diff"][0]["after"]
    # The picture is named, not printed as XML.
    assert done.result["diff"][1] == {"prepared": "%s redrawn from the plan (new -> %d bytes)\n"
                                      % (target / "layout.svg", len(node_documents(PLAN)["layout.svg"]))}
    assert not target.exists()


def test_refuses_what_is_not_a_plan(run_module, tmp_path):
    done = run_module(main, {"path": str(tmp_path), "plan": {"nodes": []}})
    assert done.failed and "parallel_plan" in done.result["msg"]
