"""A single Atlas 300I Duo node (4 cards x 2 Ascend 310P3 chips, NPU IDs 1, 2, 4, 5) deployed with
deploy.yml: eight devices by their logic IDs, no NPU network to check, vllm-ascend serving with TP 8."""

import json
import os
import re
import subprocess

import pytest
import testinfra

PROJECT = os.environ.get("MOLECULE_PROJECT_DIRECTORY", os.getcwd())
NAME = "sim-duo"
MODEL = "/models/qwen2.5-duo"
testinfra_hosts = ["podman://" + NAME]


def address_of(host):
    return re.search(r"inet (\d+\.\d+\.\d+\.\d+)/", host.check_output("ip -4 -o addr show scope global")).group(1)


@pytest.fixture(scope="module")
def deployed(tmp_path_factory):
    """deploy.yml with an inventory of this one node, as a user of a 300I Duo server writes it."""
    duo = testinfra.get_host("podman://" + NAME)
    duo.check_output("mkdir -p %s && echo '%s' > %s/config.json" % (MODEL, json.dumps(
        {"num_attention_heads": 16, "num_key_value_heads": 8, "num_hidden_layers": 8}), MODEL))
    inventory = tmp_path_factory.mktemp("duo") / "hosts.yml"
    inventory.write_text(json.dumps({"ascend_cluster": {
        "children": {"ascend_head": {"hosts": {NAME: {"ascend_node_ip": address_of(duo)}}}},
        "vars": {"ansible_connection": "containers.podman.podman", "ansible_python_interpreter": "/usr/bin/python3",
                 "ascend_engine": "vllm-ascend", "ascend_model": MODEL, "ascend_served_model_name": "qwen2.5",
                 "ascend_launcher": "mp", "ascend_tensor_parallel_size": 8,
                 "pyacl_package_remote": "/opt/ascend-packages/Ascend-cann-nnrt_8.0.RC1_linux-%s.run"
                                         % duo.check_output("uname -m"),
                 "hostnames_strategy": "file", "serve_ready_timeout": 300}}}))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(PROJECT, "collections"),
               ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    proc = subprocess.run(["ansible-playbook", os.path.join(PROJECT, "playbooks", "deploy.yml"), "-i", str(inventory)],
                          capture_output=True, text=True, timeout=900, check=False, env=env)
    return proc.returncode, proc.stdout + proc.stderr


def test_the_duo_node_deploys_without_an_npu_network_check(deployed):
    code, out = deployed
    assert code == 0, out[-4000:]
    flat = " ".join(out.split())  # the callback may wrap long messages
    assert ("sim-duo: Atlas 300I Duo / 300I Pro (Ascend 310P) has no NPU network ports, so hccn_tool is not "
            "run there") in flat, out[-4000:]
    assert "hccn_tool asked about" not in out


def test_eight_chips_of_four_cards_serve_by_logic_id(host, deployed):
    pid = int(host.check_output("systemctl show -p MainPID --value ascend-serve.service"))
    environ = host.check_output("tr '\\0' '\\n' < /proc/%d/environ" % pid).splitlines()
    assert "ASCEND_RT_VISIBLE_DEVICES=0,1,2,3,4,5,6,7" in environ
    argv = host.file("/proc/%d/cmdline" % pid).content_string.split("\0")
    assert "--tensor-parallel-size" in argv and argv[argv.index("--tensor-parallel-size") + 1] == "8"
    # npu-smi lists four cards (1, 2, 4, 5) of two chips: eight devices, not four.
    assert re.findall(r"NPU ID\s+: (\d+)", host.check_output("npu-smi info -l")) == ["1", "2", "4", "5"]


def test_the_duo_answers_a_completion(host, deployed):
    body = json.dumps({"model": "qwen2.5", "prompt": "I am", "max_tokens": 8, "temperature": 0})
    out = host.check_output("curl -sS --max-time 30 http://127.0.0.1:8000/v1/completions "
                            "-H 'Content-Type: application/json' -d '%s'" % body)
    assert json.loads(out)["choices"][0]["text"].startswith(" simulated")
