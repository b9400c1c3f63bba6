"""Several instances on three nodes (ascend_instances): each on its own NPUs, ports and HCCL range, with its own
units and environment; completions by model on each instance's port; status, restart and removal per instance.

The serve double refuses an NPU or an HCCL port another engine holds (tests/sim/doubles/vllm_sim.py, claim_npus):
that the deploy converged at all shows the allocation disjoint on every node."""

import json
import os
import re
import tempfile

from serve_checks import INVENTORY, address_of, flags, node, playbook, recap, request

import testinfra.utils.ansible_runner

HOSTS = testinfra.utils.ansible_runner.AnsibleRunner(INVENTORY).get_hosts("all")
N1, N2, N3 = "fleet-n1", "fleet-n2", "fleet-n3"
testinfra_hosts = ["podman://" + N3]
KEY = "sim-fleet-key-41d2"
EMBED_TOKEN = "sim-embed-token-9b7e"

# What the planner allocates (instances in name order: big, chat-a, chat-b, embed): per node, each instance's
# unit -> (NPUs, API port or None on a headless node, HCCL_IF_BASE_PORT).
EXPECTED = {
    N1: {"chat-a": ("0,1,2,3", "8000", "60000"), "embed": ("4,5,6,7", "8001", "60128")},
    N2: {"chat-b": ("0,1,2,3", "8000", "60000"), "embed": ("4,5,6,7", None, "60128")},
    N3: {"big": ("0,1,2,3,4,5,6,7", "8000", "60000")},
}
MODELS = {"chat-a": "qwen", "chat-b": "qwen", "embed": "/models/embed", "big": "/models/big"}


def unit(instance):
    return "ascend-serve-%s.service" % instance


def process(host, instance):
    """The instance's running serve process on HOST: (argv after the interpreter, environment)."""
    pid = int(host.check_output("systemctl show -p MainPID --value %s" % unit(instance)))
    assert pid > 0, "%s is not running on %s" % (unit(instance), host.backend.name)
    argv = host.file("/proc/%d/cmdline" % pid).content_string.rstrip("\0").split("\0")
    environ = host.check_output("tr '\\0' '\\n' < /proc/%d/environ" % pid)
    env = dict(line.split("=", 1) for line in environ.splitlines() if "=" in line)
    return (argv[1:] if os.path.basename(argv[0]).startswith("python") else argv), env


def test_each_instance_runs_on_its_own_npus_ports_and_hccl_range():
    for name, instances in EXPECTED.items():
        host = node(name)
        for instance, (devices, port, hccl) in instances.items():
            argv, env = process(host, instance)
            found = flags(argv)
            assert env["ASCEND_RT_VISIBLE_DEVICES"] == devices, (name, instance)
            assert env["HCCL_IF_BASE_PORT"] == hccl, (name, instance)
            assert found.get("--port") == port, (name, instance, argv)
        # Nothing else of serve runs there: no single-model unit, no other instance's.
        running = host.check_output("systemctl list-units --type=service --state=active --plain --no-legend "
                                    "'ascend-serve*' | awk '{print $1}'").split()
        assert sorted(running) == sorted(unit(i) for i in instances), (name, running)


def test_the_cross_node_instance_joins_its_headless_worker():
    argv, _env = process(node(N2), "embed")
    found = flags(argv)
    assert found["--headless"] is True and found["--data-parallel-start-rank"] == "2"
    assert found["--data-parallel-address"] == address_of(node(N1))
    assert found["--data-parallel-rpc-port"] == "29550"


def test_each_instance_answers_for_its_model_on_its_port():
    client = node(N3)
    for name, instances in EXPECTED.items():
        ip = address_of(node(name))
        for instance, (_devices, port, _hccl) in instances.items():
            if port is None:
                continue
            status, models = request(client, "http://%s:%s/v1/models" % (ip, port), key=KEY)
            assert status == 200 and [m["id"] for m in models["data"]] == [MODELS[instance]], (instance, models)
            status, answer = request(client, "http://%s:%s/v1/completions" % (ip, port),
                                     {"model": MODELS[instance], "prompt": "I am", "max_tokens": 8}, KEY)
            assert status == 200 and answer["model"] == MODELS[instance], (instance, answer)


def test_an_instances_secret_reaches_its_processes_only():
    host = node(N1)
    _argv, embed = process(host, "embed")
    _argv, chat = process(host, "chat-a")
    assert embed["EMBED_TOKEN"] == EMBED_TOKEN and "EMBED_TOKEN" not in chat
    assert embed["VLLM_API_KEY"] == KEY == chat["VLLM_API_KEY"]
    secrets = host.file("/etc/ascend-inference/secrets-embed.env")
    assert secrets.mode == 0o600 and EMBED_TOKEN in secrets.content_string
    assert EMBED_TOKEN not in host.file("/etc/ascend-inference/node-embed.env").content_string
    assert EMBED_TOKEN not in host.file("/etc/ascend-inference/secrets-chat-a.env").content_string
    # The single model's files and the login profile are not written with instances.
    for path in ("/etc/ascend-inference/node.env", "/etc/ascend-inference/serve.env",
                 "/etc/profile.d/ascend-inference.sh", "/etc/systemd/system/ascend-serve.service"):
        assert not host.file(path).exists, path


def test_the_firewall_admits_every_instances_api_port():
    for name in HOSTS:
        rules = node(name).check_output("nft list table inet ascend_inference")
        opened = re.search(r"tcp dport \{ ([^}]*) \} accept", rules)
        assert opened and {"8000", "8001"} <= set(opened.group(1).split(", ")), (name, rules)


def test_status_shows_every_instance():
    rc, out = playbook("status.yml")
    assert rc == 0, out
    for instance in MODELS:
        assert "instance %s: vllm-ascend mp" % instance in out, out
    assert "API http://%s:8001: /health 200" % address_of(node(N1)) in out


def test_a_missing_instance_model_is_refused_naming_the_instance():
    host = node(N3)
    host.check_output("mv /models/big /models/big.away")
    try:
        rc, out = playbook("check.yml")
    finally:
        host.check_output("mv /models/big.away /models/big")
    assert rc != 0
    assert ("host fleet-n3: the model of instance big, /models/big, does not exist or holds no file "
            "(ascend_instances.big.model, else ascend_model)") in out, out
    # fleet-n1 holds the same directories but runs no instance of /models/big: nothing said of it there.
    assert "host fleet-n1: the model" not in out


def pid(host, instance):
    return int(host.check_output("systemctl show -p MainPID --value %s" % unit(instance)))


def test_restart_takes_the_instance_it_is_given():
    before = {(name, i): pid(node(name), i) for name, instances in EXPECTED.items() for i in instances}
    rc, out = playbook("restart.yml", "-e", "serve_restart_instances=embed", "--tags", "serve")
    assert rc == 0, out
    after = {key: pid(node(key[0]), key[1]) for key in before}
    for (name, instance), was in before.items():
        if instance == "embed":
            assert after[(name, instance)] != was, (name, instance)
        else:
            assert after[(name, instance)] == was, (name, instance)


def test_instances_removed_from_the_inventory_are_stopped_and_removed():
    # chat-a shares fleet-n1 with embed, big is alone on fleet-n3; chat-b and embed are pinned (devices, api_port).
    left = {"ascend_instances": {
        "chat-b": {"served_model_name": "qwen", "hosts": [N2], "devices": {N2: [0, 1, 2, 3]}, "api_port": 8000,
                   "tensor_parallel_size": 4},
        "embed": {"model": "/models/embed", "hosts": [N1, N2], "devices": {N1: [4, 5, 6, 7], N2: [4, 5, 6, 7]},
                  "api_port": 8001, "tensor_parallel_size": 2, "data_parallel_size": 4,
                  "extra_env": {"EMBED_TOKEN": EMBED_TOKEN}},
    }}
    kept = {(N1, "embed"): pid(node(N1), "embed"), (N2, "embed"): pid(node(N2), "embed"),
            (N2, "chat-b"): pid(node(N2), "chat-b")}
    with tempfile.NamedTemporaryFile("w", suffix=".json") as handle:
        json.dump(left, handle)
        handle.flush()
        rc, out = playbook("serve.yml", "-e", "@" + handle.name)
    assert rc == 0, out
    for name, instance in ((N3, "big"), (N1, "chat-a")):
        host = node(name)
        for path in ("/etc/systemd/system/%s" % unit(instance), "/etc/ascend-inference/serve-%s.env" % instance,
                     "/etc/ascend-inference/node-%s.env" % instance, "/etc/ascend-inference/secrets-%s.env" % instance):
            assert not host.file(path).exists, (name, path)
        assert host.run("systemctl is-active %s" % unit(instance)).stdout.strip() != "active"
        # The apply's own lines say it.
        assert "%s: /etc/systemd/system/%s removed" % (name, unit(instance)) in out, out
        assert "%s: %s stopped" % (name, unit(instance)) in out, out
    # The pinned instances were left running as they were, their files untouched.
    assert {key: pid(node(key[0]), key[1]) for key in kept} == kept
    assert recap(out)[N2] == 0, out
