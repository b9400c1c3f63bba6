"""plan.yml on inventories of several instances (ascend_instances): example 11's plan, picture and host files, the
deploying playbooks' refusal before any host is touched, and bad instance inventories refused in one message each
naming the instance, the variable and the host."""

import ast
import json
import os
import subprocess

import pytest

from conftest import BIN, REPO, shown
from test_layout_picture import drawn

EXAMPLE = os.path.join(REPO, "inventories", "examples", "11-two-models-router", "hosts")


def test_example_11_plans_every_instance_on_disjoint_npus_and_ports(run_plan, tmp_path):
    proc, plans = run_plan(EXAMPLE)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sorted(plans) == ["node1", "node2", "node3"]
    picture = drawn((tmp_path / "plan" / "layout.svg").read_text())
    for host, plan in plans.items():
        # Every NPU of the host is drawn with the instance that holds it; each instance's devices are its own.
        held = dict((int(npu), name) for npu, name in plan["npus"].items())
        assert sorted(picture[host]) == sorted(held)
        for name, entry in plan["instances"].items():
            for device in entry["visible_devices"]:
                assert held[device] == name
                assert picture[host][device][1] == name
            assert entry["env"]["ASCEND_RT_VISIBLE_DEVICES"] == ",".join(str(d) for d in entry["visible_devices"])
            assert entry["env"]["HCCL_IF_BASE_PORT"] == str(entry["cluster"]["hccl_base_ports"][host])
        ports = []
        for span in plan["ports"]:
            ports.extend(range(span["port"], span["port"] + span["count"]))
        assert len(ports) == len(set(ports)), (host, plan["ports"])
    node1 = plans["node1"]["instances"]
    assert sorted(node1) == ["coder", "qwen-a"]
    # The instances that share node1 serve on the ports the plan allocated them, and the summary says so.
    assert node1["coder"]["serve_argv"][node1["coder"]["serve_argv"].index("--port") + 1] == "8000"
    assert node1["qwen-a"]["serve_argv"][node1["qwen-a"]["serve_argv"].index("--port") + 1] == "8001"
    assert "ascend-serve-qwen-a.service" in proc.stdout
    text = shown(proc.stdout)
    listening = text.split("ports each host listens on:")[1]
    assert [" ".join(line.split()) for line in listening.split("node2")[0].strip().splitlines()] == [
        "node1", "8000 coder api_port", "8001 qwen-a api_port", "8080 the router ascend_router_port",
        "8404 the router ascend_router_metrics_port", "29550 coder dp_rpc_port", "60000-60031 coder HCCL_IF_BASE_PORT",
        "60128-60159 qwen-a HCCL_IF_BASE_PORT"]
    # coder's DP worker on node2 holds the API and DP RPC numbers (they stay coder's) but listens on neither.
    assert [" ".join(line.split()) for line in listening.split("node2")[1].split("node3")[0].strip().splitlines()] == [
        "8001 qwen-b api_port", "60000-60031 coder HCCL_IF_BASE_PORT", "60128-60159 qwen-b HCCL_IF_BASE_PORT"]
    # The instance view is as complete as the single model's: the environment and the commands of every node.
    assert "export HCCL_IF_IP=192.0.2.12" in text and "--data-parallel-start-rank 1" in text
    # Fits a 100-column terminal once Ansible's debug output indents it by 8.
    assert max(len(line) for line in text.splitlines()) <= 92, text
    assert "instance  coder  coder  coder  coder  qwen-a  qwen-a  qwen-a  qwen-a" in proc.stdout


EXAMPLE_PD = os.path.join(REPO, "inventories", "examples", "12-deepseek-r1-pd-mooncake", "hosts")

# Every refusal of a deploy that the inventory alone decides (plan/fleet.py and plan/pd.py deploy_problems), one case
# each: (inventory, extra variables as JSON, a sentence of the refusal).
DEPLOY_REFUSALS = {
    "engines": (EXAMPLE, {"ascend_instances": {"a": {"engine": "vllm-mindspore", "engine_version": "0.5.1",
                                                     "hosts": ["node1"]}, "b": {"hosts": ["node2"]}}},
                "the instances set different engine (a: vllm-mindspore, b: vllm-ascend)"),
    "copied models": (EXAMPLE, {"model_source": "controller"},
                      "model_source copies one model to every node, and the instances serve several"),
    "pd proxy dir": (EXAMPLE_PD, {"ascend_pd_proxy_dir": None},
                     "instance r1 has prefill and decode pools: set ascend_pd_proxy_dir"),
    "pd without router": (EXAMPLE_PD, {"ascend_router_enabled": False},
                          "keep the router (ascend_router_enabled: true)"),
}


def test_every_deploy_refusal_of_the_inventory_has_a_case():
    # A new refusal in deploy_problems without a case here fails: plan.yml must be shown to make it too.
    appended = 0
    for name in ("fleet.py", "pd.py"):
        with open(os.path.join(REPO, "plugins", "module_utils", "plan", name)) as handle:
            tree = ast.parse(handle.read())
        function = next(node for node in tree.body if getattr(node, "name", None) == "deploy_problems")
        appended += sum(1 for node in ast.walk(function) if isinstance(node, ast.Attribute) and node.attr == "append")
    assert appended == len(DEPLOY_REFUSALS)


@pytest.mark.parametrize("case", sorted(DEPLOY_REFUSALS))
def test_plan_and_deploy_refuse_what_this_release_cannot_deploy(ansible_env, run_plan, tmp_path, case):
    inventory, extra, sentence = DEPLOY_REFUSALS[case]
    planned, plans = run_plan(inventory, "-e", json.dumps(extra))
    assert planned.returncode != 0 and plans == {}
    assert "ascend_instances: this release cannot deploy what is asked:\n- " in planned.stdout.replace("\\n", "\n")
    assert sentence in planned.stdout, planned.stdout
    if case != "engines":
        return
    # The deploy's verdict is the same, made before any host is touched.
    deployed = subprocess.run([os.path.join(BIN, "ansible-playbook"), os.path.join(REPO, "deploy.yml"), "-i",
                               inventory, "-e", json.dumps(extra)], cwd=str(tmp_path), env=ansible_env,
                              capture_output=True, text=True, timeout=300, check=False)
    assert deployed.returncode != 0
    assert sentence in deployed.stdout, deployed.stdout
    # The three hosts (192.0.2.0/24, TEST-NET-1) were never connected to.
    assert "UNREACHABLE" not in deployed.stdout and "unreachable=0" in deployed.stdout


def write(path, text):
    path.write_text(text)
    return path


BAD = """
all:
  vars:
    ansible_connection: local
ascend_cluster:
  vars:
    ascend_engine: vllm-ascend
    ascend_model: /models/m
    ascend_launcher: mp
    ascend_instances:
      chat:
        hosts: [node1]
        devices: {node1: [0, 1, 2, 3]}
        additional_config: {when: 2024-01-01}
      embed:
        hosts: [node1, node9]
        devices: {node1: [3, 4]}
        api_port: 10001
        tensor_paralel_size: 2
  children:
    ascend_head:
      hosts:
        node1: {ansible_host: 192.0.2.11}
    ascend_workers:
      hosts:
        node2: {ansible_host: 192.0.2.12}
"""


def test_bad_instances_are_refused_naming_instance_variable_and_host(run_plan, tmp_path):
    proc, plans = run_plan(write(tmp_path / "hosts.yml", BAD))
    assert proc.returncode != 0 and plans == {}
    output = proc.stdout
    # The keys first (a typo must not be ignored), and nothing planned on a mapping with an unknown key.
    assert "ascend_instances.embed.tensor_paralel_size is not an instance setting (did you mean " \
           "tensor_parallel_size?)" in output
    fixed = BAD.replace("        tensor_paralel_size: 2\n", "")
    proc, plans = run_plan(write(tmp_path / "hosts.yml", fixed))
    output = proc.stdout
    assert proc.returncode != 0 and plans == {}
    assert "ascend_instances.embed.hosts names node9, not in group ascend_cluster (node1, node2)" in output
    assert "instances chat and embed both use NPU 3 on host node1" in output
    fixed = fixed.replace("[3, 4]", "[4, 5]").replace("[node1, node9]", "[node1]")
    proc, plans = run_plan(write(tmp_path / "hosts.yml", fixed))
    output = proc.stdout
    assert proc.returncode != 0 and plans == {}
    assert "ascend_instances.embed.api_port 10001 is Ray's client server (reserved on every node)" in output
    fixed = fixed.replace("api_port: 10001", "api_port: 9000")
    proc, plans = run_plan(write(tmp_path / "hosts.yml", fixed))
    assert proc.returncode != 0 and plans == {}
    # YAML's date, refused by name instead of "Object of type ... is not JSON serializable".
    assert ("instance chat: ascend_instances.chat.additional_config holds 2024-01-01, which YAML read as a date: "
            "quote it to pass the text") in proc.stdout
    proc, plans = run_plan(write(tmp_path / "hosts.yml", fixed.replace("2024-01-01", "'2024-01-01'")))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert plans["node1"]["npus"] == {"0": "chat", "1": "chat", "2": "chat", "3": "chat", "4": "embed",
                                      "5": "embed", "6": None, "7": None}


def test_example_11_pins_what_shares_a_host(run_plan):
    proc, _plans = run_plan(EXAMPLE)
    assert proc.returncode == 0 and "[WARNING]" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr


def test_example_12_plans_the_tutorials_prefill_and_decode_pools(run_plan):
    """vllm-ascend 0.23's pd_disaggregation_mooncake_multi_node tutorial as an inventory: each pool's serve command
    carries its --kv-transfer-config, the KV ports lie above Mooncake's range of 16-NPU nodes, and the summary
    names the proxy."""
    example = os.path.join(REPO, "inventories", "examples", "12-deepseek-r1-pd-mooncake", "hosts")
    proc, plans = run_plan(example)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for host, pool, role in (("p1", "r1-prefill", "kv_producer"), ("p2", "r1-prefill", "kv_producer"),
                             ("d1", "r1-decode", "kv_consumer"), ("d2", "r1-decode", "kv_consumer")):
        entry = plans[host]["instances"][pool]
        argv = entry["serve_argv"]
        config = json.loads(argv[argv.index("--kv-transfer-config") + 1])
        assert config["kv_role"] == role and config["kv_port"] >= 36000, (host, config)
        assert config["kv_connector_extra_config"] == {"prefill": {"tp_size": 8, "dp_size": 4, "pp_size": 1},
                                                       "decode": {"tp_size": 1, "dp_size": 32, "pp_size": 1}}
        assert entry["env"]["VLLM_HOST_IP"] == "192.0.2.%d" % (21 + ["p1", "p2", "d1", "d2"].index(host))
    assert "ascend-pd-r1.service" in proc.stdout, proc.stdout


def test_a_node_to_remove_is_planned_without_or_refused_with_the_reason(run_plan, tmp_path):
    """remove_node.yml's plan (plan_removed_node): the head is refused, a host an instance still names is refused
    with the planner's reason, an unknown name is refused; a node no instance needs is left out of the plan."""
    proc, _plans = run_plan(EXAMPLE, "-e", "plan_removed_node=node1")
    assert proc.returncode != 0
    assert ("node=node1 is the cluster's head (group ascend_head): it cannot be taken out while it is; make another "
            "host the head and deploy first") in proc.stdout, proc.stdout
    proc, _plans = run_plan(EXAMPLE, "-e", "plan_removed_node=node3")
    assert proc.returncode != 0
    assert ("without node3 (node=node3), the cluster cannot be planned: invalid layout:\\n- ascend_instances.big.hosts "
            "names node3, not in group ascend_cluster (node1, node2)") in proc.stdout, proc.stdout
    proc, _plans = run_plan(EXAMPLE, "-e", "plan_removed_node=node9")
    assert proc.returncode != 0 and "node=node9 is not a host of the group ascend_cluster" in proc.stdout
    # big moved off node3: node3 holds nothing, and the plan is made without it.
    moved = ('{"ascend_instances": {"big": {"model": "/models/big", "hosts": ["node2"], "npus_per_host": 4, '
             '"tensor_parallel_size": 4}}}')
    proc, plans = run_plan(EXAMPLE, "-e", "plan_removed_node=node3", "-e", moved)
    assert proc.returncode == 0, proc.stdout
    assert sorted(plans) == ["node1", "node2"]
