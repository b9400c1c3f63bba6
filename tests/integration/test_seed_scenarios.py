"""The ten seed scenarios: plan.yml on each example inventory must give the
seed's own commands, corrected where the seed is wrong, and its environment.

Each seed command below is copied from the seed documents (quotes balanced so
that it can be split like a shell would); CORRECTIONS lists, per scenario,
exactly what the planner changes and why. Nothing else may differ.
"""

import json
import os
import shlex

import pytest

from conftest import REPO

EXAMPLES = os.path.join(REPO, "inventories", "examples")

QWEN = "vllm-mindspore serve /path/to/Qwen2.5/model --trust-remote-code"
MOE = "vllm-mindspore serve /path/to/Qwen3-MOE --trust-remote-code --enable-expert-parallel"
R1_COMMON = ("vllm-mindspore serve MindSpore-Lab/DeepSeek-R1-0528-A8W8 {headless}--trust-remote-code "
             "--max-num-seqs=256 --max-model-len=32768 --max-num-batched-tokens=4096 --block-size=128 "
             "--gpu-memory-utilization=0.9 --tensor-parallel-size 4 --data-parallel-size 4 "
             "--data-parallel-size-local 2 ")
R1_CONFIG = "--addition-config '{\"data_parallel\": 4, \"model_parallel\": 4, \"expert_parallel\": 4}'"
QWEN3 = ("vllm serve Qwen/Qwen3-235B-A22B --distributed-executor-backend ray {pp}--tensor-parallel-size {tp} "
         "--enable-expert-parallel --seed 1024 --max-model-len 8192 --max-num-seqs 25 --served-model-name qwen "
         "--trust-remote-code --gpu-memory-utilization 0.9")

HEAD, WORKER = "node1", "node2"
HEAD_IP = "192.0.2.11"

# scenario: ({host: seed command or None}, {host: {flag: value, or None to drop}})
SEEDS = {
    "01-qwen2.5-tp4-single-node": ({HEAD: QWEN + " --tensor-parallel-size 4"}, {}),
    "02-qwen2.5-tp4-two-nodes-ray": (
        {HEAD: QWEN + " --tensor-parallel-size 4", WORKER: None},
        # TP 4 spans the two 2-NPU nodes: the Ray executor must be asked for.
        {HEAD: {"--distributed-executor-backend": "ray"}}),
    "03-qwen2.5-dp4-ray": (
        {HEAD: QWEN + " --data-parallel-size 4 --data-parallel-size-local 2 --data-parallel-backend=ray",
         WORKER: None},
        {HEAD: {"--tensor-parallel-size": "1"}}),
    "04-qwen2.5-dp4-mp": (
        {HEAD: QWEN + " --data-parallel-size 4 --data-parallel-size-local 2",
         WORKER: "vllm-mindspore serve /path/to/Qwen2.5/model --headless --trust-remote-code "
                 "--data-parallel-size 4 --data-parallel-size-local 2"},
        # The seed omits the head's address/port and the worker's start rank.
        {HEAD: {"--tensor-parallel-size": "1", "--data-parallel-address": HEAD_IP,
                "--data-parallel-rpc-port": "29550"},
         WORKER: {"--tensor-parallel-size": "1", "--data-parallel-address": HEAD_IP,
                  "--data-parallel-rpc-port": "29550", "--data-parallel-start-rank": "2"}}),
    "05-qwen3-moe-ep8-single-node": (
        {HEAD: MOE + " --addition-config '{\"expert_parallel\": 8}'"},
        # EP 8 needs TP x DP >= 8: the seed's command sets no TP.
        {HEAD: {"--tensor-parallel-size": "8"}}),
    "06-qwen3-moe-ep8-ray": (
        {HEAD: MOE + " --addition-config '{\"expert_parallel\": 8}' --data-parallel-backend=ray", WORKER: None},
        # The seed's Ray DP backend has no DP size; TP 4 x DP 2 fills EP 8.
        {HEAD: {"--tensor-parallel-size": "4", "--data-parallel-size": "2", "--data-parallel-size-local": "1"}}),
    "07-deepseek-r1-hybrid-ray": (
        {HEAD: R1_COMMON.format(headless="") + "--enable-expert-parallel " + R1_CONFIG
         + " --data-parallel-backend=ray", WORKER: None},
        {}),
    "08-deepseek-r1-w8a8-hybrid-mp": (
        {HEAD: R1_COMMON.format(headless="") + "--data-parallel-start-rank 0 --data-parallel-address 127.0.0.1 "
         "--data-parallel-rpc-port 29550 --enable-expert-parallel " + R1_CONFIG,
         WORKER: R1_COMMON.format(headless="--headless ") + "--data-parallel-start-rank 2 "
         "--data-parallel-address 127.0.0.1 --data-parallel-rpc-port 29550 --enable-expert-parallel " + R1_CONFIG},
        # No start rank on the head (FACTS.md); the address is the head's IP.
        {HEAD: {"--data-parallel-start-rank": None, "--data-parallel-address": HEAD_IP},
         WORKER: {"--data-parallel-address": HEAD_IP}}),
    "09-qwen3-235b-tp8-pp2-ray": ({HEAD: QWEN3.format(pp="--pipeline-parallel-size 2 ", tp=8), WORKER: None}, {}),
    "10-qwen3-235b-tp16-ray": ({HEAD: QWEN3.format(pp="", tp=16), WORKER: None}, {}),
}

MS_ENV = {"MS_ENABLE_LCCL": "off", "HCCL_OP_EXPANSION_MODE": "AIV", "MS_ALLOC_CONF": "enable_vmm:true",
          "VLLM_MS_MODEL_BACKEND": "MindFormers"}
RAY_MS_ENV = dict(MS_ENV, PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION="python",
                  GLOO_SOCKET_IFNAME=None, HCCL_SOCKET_IFNAME=None, TP_SOCKET_IFNAME=None)


def parse(argv):
    """(program, model, {flag: value or True}) of a serve argv."""
    flags, index, rest = {}, 0, argv[3:]
    while index < len(rest):
        token = rest[index]
        assert token.startswith("--"), token
        if "=" in token:
            key, value = token.split("=", 1)
            flags[key] = value
            index += 1
        elif index + 1 < len(rest) and not rest[index + 1].startswith("--"):
            flags[token], index = rest[index + 1], index + 2
        else:
            flags[token], index = True, index + 1
    return argv[:2], argv[2], flags


def corrected_seed(command, corrections):
    """The seed command with the corrections every scenario shares, then its own."""
    program, model, flags = parse(shlex.split(command))
    if "--addition-config" in flags:
        # vLLM's flag is --additional-config; of its keys only expert_parallel is read.
        config = json.loads(flags.pop("--addition-config"))
        config = {k: v for k, v in config.items() if k == "expert_parallel"}
        flags["--additional-config"] = json.dumps(config, sort_keys=True)
    if "--headless" not in flags:
        flags["--port"] = "8000"  # the planner always states the API port on the serving node
    if "--tensor-parallel-size" not in flags and "--distributed-executor-backend" not in flags:
        flags.setdefault("--tensor-parallel-size", "1")
    for flag, value in corrections.items():
        if value is None:
            flags.pop(flag, None)
        else:
            flags[flag] = value
    return program, model, flags


@pytest.mark.parametrize("scenario", sorted(SEEDS))
def test_planned_commands_match_the_corrected_seed(scenario, run_plan):
    proc, plans = run_plan(os.path.join(EXAMPLES, scenario, "hosts"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    commands, corrections = SEEDS[scenario]
    assert sorted(plans) == sorted(commands)
    for host, seed in commands.items():
        planned = plans[host]["serve_argv"]
        if seed is None:
            assert planned is None, "%s: workers under Ray run no serve" % host
            continue
        assert parse(planned) == corrected_seed(seed, corrections.get(host, {})), host
        assert shlex.split(plans[host]["serve_command"]) == planned


@pytest.mark.parametrize("scenario", sorted(s for s in SEEDS if "ray" in s))
def test_ray_scenarios_start_ray_on_every_node(scenario, run_plan):
    plans = run_plan(os.path.join(EXAMPLES, scenario, "hosts"))[1]
    head, worker = plans[HEAD], plans[WORKER]
    assert head["ray_start_argv"][:3] == ["ray", "start", "--head"]
    assert "--address=%s:6379" % HEAD_IP in worker["ray_start_argv"]
    npus = head["cluster"]["ray_npus_expected"]
    assert head["cluster"]["ray_nodes_expected"] == 2
    assert npus == 2 * len(head["visible_devices"])


@pytest.mark.parametrize("scenario,expected", [
    ("03-qwen2.5-dp4-ray", dict(RAY_MS_ENV, ASCEND_RT_VISIBLE_DEVICES="0,1")),
    ("07-deepseek-r1-hybrid-ray", dict(RAY_MS_ENV, ASCEND_RT_VISIBLE_DEVICES="0,1,2,3,4,5,6,7")),
    ("01-qwen2.5-tp4-single-node", dict(MS_ENV, ASCEND_RT_VISIBLE_DEVICES="0,1,2,3")),
])
def test_mindspore_environment_is_the_seeds(scenario, expected, run_plan):
    plans = run_plan(os.path.join(EXAMPLES, scenario, "hosts"))[1]
    assert plans[HEAD]["env"] == expected


def test_vllm_ascend_environment_is_the_seeds(run_plan):
    plans = run_plan(os.path.join(EXAMPLES, "09-qwen3-235b-tp8-pp2-ray", "hosts"))[1]
    for host, ip in ((HEAD, HEAD_IP), (WORKER, "192.0.2.12")):
        assert plans[host]["env"] == {
            "HCCL_IF_IP": ip, "GLOO_SOCKET_IFNAME": None, "TP_SOCKET_IFNAME": None, "HCCL_SOCKET_IFNAME": None,
            "RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES": "1",
            "ASCEND_RT_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7"}
        assert plans[host]["unresolved_env"] == ["GLOO_SOCKET_IFNAME", "HCCL_SOCKET_IFNAME", "TP_SOCKET_IFNAME"]
