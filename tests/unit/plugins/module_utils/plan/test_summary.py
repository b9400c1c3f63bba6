"""plan/summary.py: what plan.yml shows, in lines that fit a 100-column terminal and commands that still paste."""

import shlex

from ansible_collections.ascend.inference.plugins.module_utils.plan import summary
from ansible_collections.ascend.inference.plugins.module_utils.plan.fleet import make_fleet_plan

# Seed scenario 9's head: vllm-ascend's TP 8 x PP 2 over Ray (docs/layouts.md).
SERVE = ["vllm", "serve", "Qwen/Qwen3-235B-A22B", "--tensor-parallel-size", "8", "--pipeline-parallel-size", "2",
         "--distributed-executor-backend", "ray", "--port", "8000", "--enable-expert-parallel",
         "--served-model-name", "qwen", "--additional-config", '{"ascend_scheduler_config": {"enabled": true}}',
         "--gpu-memory-utilization", "0.9", "--max-model-len", "8192", "--trust-remote-code"]


def test_a_wrapped_command_pastes_back_to_the_same_argv_within_the_width():
    text = summary.wrap_command(SERVE, "serve: ", "    ")
    lines = text.splitlines()
    assert len(lines) > 1 and all(len(line) <= summary.WIDTH for line in lines)
    assert all(line.endswith(" \\") for line in lines[:-1])
    # What a shell reads: the continuations joined, the prefix dropped.
    assert shlex.split(text[len("serve: "):].replace("\\\n", " ")) == SERVE
    # An option stays on the line of its value.
    assert any(line.strip().startswith("--max-model-len 8192") or " --max-model-len 8192" in line for line in lines)


def test_a_word_longer_than_the_width_is_kept_whole():
    long_json = '{"kv_connector": "MooncakeConnectorV1", "kv_role": "kv_producer", "kv_port": "36000", "x": "%s"}' % (
        "y" * 60)
    text = summary.wrap_command(["vllm", "serve", "/m", "--kv-transfer-config", long_json], "serve: ", "    ")
    assert shlex.split(text[len("serve: "):].replace("\\\n", " "))[-1] == long_json


def test_prose_wraps_with_a_hanging_indent():
    text = summary.prose("model: not checked against its config.json: /models/Qwen2.5-Coder-32B-Instruct is not a "
                         "directory on the controller; set ascend_instances.coder.model_config to a copy of it", "  ")
    assert all(len(line) <= summary.WIDTH for line in text.splitlines())
    assert text.splitlines()[1].startswith("    ") and " ".join(text.split()).endswith("to a copy of it")


def test_an_instances_head_only_ports_are_listed_on_its_head_alone():
    nodes = [{"name": "n1", "head": True, "node_ip": "192.0.2.1", "npus_per_node": 8},
             {"name": "n2", "node_ip": "192.0.2.2", "npus_per_node": 8}]
    settings = {"engine": "vllm-ascend", "model": "/models/m", "launcher": "mp"}
    plan = make_fleet_plan(settings, nodes, {"dp": {"data_parallel_size": 2, "tensor_parallel_size": 8}})
    held = dict((host, [(span["port"], span["what"]) for span in spans])
                for host, spans in plan["allocation"]["ports"].items())
    shown = dict((host, [(span["port"], span["what"]) for span in spans])
                 for host, spans in summary.listening(dict(plan, instances=plan["instances"])).items())
    # The allocation holds the DP worker's API and DP RPC numbers on n2; nothing listens there.
    assert (8000, "api_port") in held["n2"] and (29550, "dp_rpc_port") in held["n2"]
    assert shown["n1"] == held["n1"] and shown["n2"] == [(60000, "HCCL_IF_BASE_PORT")]
