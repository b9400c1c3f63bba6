# -*- coding: utf-8 -*-
"""The plan_files module: writes what differs, nothing in check mode."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import stat

from ansible_collections.ascend.inference.plugins.modules.plan_files import main
from ansible_collections.ascend.inference.plugins.module_utils.plan.documents import node_documents

CLUSTER = {"head": "h", "node_order": ["h", "w"], "tensor_parallel_size": 1, "pipeline_parallel_size": 1,
           "data_parallel_size": 2, "model": "m", "engine": "vllm-ascend", "launcher": "mp"}
PLAN = {"cluster": CLUSTER, "nodes": {"h": {"role": "head", "node_ip": "192.0.2.1", "visible_devices": [0]},
                                      "w": {"role": "worker", "node_ip": "192.0.2.2", "visible_devices": [0]}}}


def test_writes_one_file_per_node_then_nothing(run_module, tmp_path):
    target = tmp_path / "plan"
    first = run_module(main, {"path": str(target), "plan": PLAN})
    assert not first.failed and first.result["changed"]
    assert sorted(os.listdir(str(target))) == ["h.json", "layout.svg", "w.json"]
    assert json.loads((target / "w.json").read_text()) == dict(PLAN["nodes"]["w"], cluster=CLUSTER)
    assert stat.S_IMODE(os.stat(str(target / "h.json")).st_mode) == 0o644
    second = run_module(main, {"path": str(target), "plan": PLAN})
    assert not second.result["changed"] and second.result["written"] == []


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
