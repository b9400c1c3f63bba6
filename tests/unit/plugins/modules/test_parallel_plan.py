# -*- coding: utf-8 -*-
"""The parallel_plan module: arguments in, exit_json/fail_json out."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest
import yaml

from ansible_collections.ascend.inference.plugins.modules import parallel_plan
from ansible_collections.ascend.inference.plugins.modules.parallel_plan import main


@pytest.fixture
def module_run(run_module):
    """Exit on success (the result), raise Fail with the result on failure."""

    def run(args):
        done = run_module(main, args)
        if done.failed:
            raise Fail(done.result)
        raise Exit(done.result)

    return run


class Exit(Exception):
    pass


class Fail(Exception):
    pass


NODES = [{"name": "h", "head": True, "node_ip": "192.0.2.1", "nic": "eth0", "npus_per_node": 2},
         {"name": "w", "node_ip": "192.0.2.2", "nic": "eth0", "npus_per_node": 2}]


def test_returns_the_plan_unchanged(module_run):
    with pytest.raises(Exit) as result:
        module_run({"engine": "vllm-mindspore", "model": "/m", "data_parallel_size": 4, "nodes": NODES})
    out = result.value.args[0]
    assert out["changed"] is False
    assert out["cluster"]["ray_npus_expected"] == 4
    assert out["nodes"]["w"]["serve_argv"] is None
    assert out["nodes"]["h"]["serve_argv"][:3] == ["vllm-mindspore", "serve", "/m"]
    assert out["model_checks"].startswith("not checked against its config.json: /m is not a directory on the controller")


def test_check_mode_gives_the_same_plan(module_run):
    args = {"engine": "vllm-ascend", "model": "/m", "tensor_parallel_size": 4, "nodes": NODES}
    with pytest.raises(Exit) as normal:
        module_run(args)
    with pytest.raises(Exit) as checked:
        module_run(dict(args, _ansible_check_mode=True))
    assert normal.value.args[0]["nodes"] == checked.value.args[0]["nodes"]


def test_invalid_layout_lists_every_error(module_run):
    with pytest.raises(Fail) as result:
        module_run({"engine": "vllm-mindspore", "model": "/m", "tensor_parallel_size": 8, "launcher": "mp",
                    "expert_parallel_size": 2, "nodes": NODES})
    out = result.value.args[0]
    # Both reasons, in words a user can act on, each on its own line of msg.
    assert out["errors"] == [
        "ascend_expert_parallel_size 2 has no effect while ascend_enable_expert_parallel is false; "
        "enable expert parallelism or remove the size",
        "TP 8 x PP 1 x DP 1 = 8 NPUs is more than the cluster's 4 NPUs (h 2, w 2)"]
    assert out["msg"] == "invalid layout:\n- " + "\n- ".join(out["errors"])


def test_reads_config_json_from_the_model_directory(module_run, tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"num_attention_heads": 6}))
    with pytest.raises(Fail) as result:
        module_run({"engine": "vllm-mindspore", "model": str(tmp_path), "tensor_parallel_size": 4, "nodes": NODES})
    assert "does not divide the model's 6 attention heads" in result.value.args[0]["msg"]


def test_explicit_config_path_must_exist(module_run, tmp_path):
    with pytest.raises(Fail) as result:
        module_run({"engine": "vllm-mindspore", "model": "m", "model_config_path": str(tmp_path / "nope.json"),
                    "nodes": NODES})
    assert "cannot read the model's config.json: ascend_model_config %s: no such file on the controller" % (
        tmp_path / "nope.json") in result.value.args[0]["msg"]


def test_model_config_dict_wins(module_run, tmp_path):
    with pytest.raises(Exit) as result:
        module_run({"engine": "vllm-mindspore", "model": "m", "model_config": {"num_attention_heads": 4},
                    "tensor_parallel_size": 2, "nodes": NODES})
    assert result.value.args[0]["model_checks"] == "checked the given model_config"


@pytest.mark.parametrize("probed, warnings", [
    (True, ["NPU devices were not detected; assumed 0..N-1 from ascend_npus_per_node on: h"]),
    # playbooks/plan.yml: no node is ever probed there, so the assumption is expected (its output shows it).
    (False, []),
])
def test_warnings_are_returned(module_run, probed, warnings):
    with pytest.raises(Exit) as result:
        module_run({"engine": "vllm-mindspore", "model": "m", "devices_probed": probed,
                    "nodes": [{"name": "h", "head": True, "node_ip": "192.0.2.1", "npus_per_node": 1}]})
    assert result.value.args[0]["plan_warnings"] == warnings


@pytest.mark.parametrize("args", [
    {"engine": "vllm-mindspore", "model": "/m", "data_parallel_size": 4, "nodes": NODES},
    {"engine": "vllm-ascend", "model": "/m", "data_parallel_size": 2, "launcher": "mp", "runtime": "container",
     "container_image": "quay.io/ascend/vllm-ascend:v0.23.0", "nodes": NODES},
])
def test_every_key_of_the_result_is_documented(module_run, args):
    """RETURN is what the roles read: every cluster and node key the planner gives must be in it."""
    returned = yaml.safe_load(parallel_plan.RETURN)
    with pytest.raises(Exit) as result:
        module_run(args)
    out = result.value.args[0]
    node_keys = set(key for node in out["nodes"].values() for key in node)
    assert sorted(set(out["cluster"]) - set(returned["cluster"]["contains"])) == []
    assert sorted(node_keys - set(returned["nodes"]["contains"])) == []
    # And nothing documented that the planner no longer gives.
    assert sorted(set(returned["cluster"]["contains"]) - set(out["cluster"])) == []
    assert sorted(set(returned["nodes"]["contains"]) - node_keys) == []
