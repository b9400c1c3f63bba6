"""Seed scenario 3: vllm-mindspore, Ray data parallelism (DP 4, 2 per node), serve on the head."""

from serve_checks import address_of, completion, node, serve_process

HEAD, WORKER = "dp-head", "dp-worker"
testinfra_hosts = ["podman://" + HEAD]
MODEL = "/models/qwen2.5-tiny"


def test_head_serves_all_dp_ranks_through_ray():
    argv, env = serve_process(node(HEAD))
    assert argv == ["/usr/local/bin/vllm-mindspore", "serve", MODEL, "--tensor-parallel-size", "1",
                    "--data-parallel-size", "4", "--data-parallel-size-local", "2",
                    "--data-parallel-backend", "ray", "--port", "8000"], argv
    nic = node(HEAD).check_output("ip -4 -o addr show scope global | awk '{print $2}'")
    for variable in ("GLOO_SOCKET_IFNAME", "HCCL_SOCKET_IFNAME", "TP_SOCKET_IFNAME"):
        assert env[variable] == nic
    assert env["PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION"] == "python"
    assert env["MS_ALLOC_CONF"] == "enable_vmm:true" and env["ASCEND_RT_VISIBLE_DEVICES"] == "0,1"
    assert env["RAY_AUTH_MODE"] == "token"


def test_every_dp_rank_holds_a_placement_group():
    journal = node(HEAD).check_output("journalctl -u ascend-serve.service --no-pager")
    assert "reserved 4 placement group(s) of 1 NPU(s) each" in journal


def test_worker_serves_nothing():
    assert not node(WORKER).file("/etc/systemd/system/ascend-serve.service").exists
    assert node(WORKER).service("ascend-ray.service").is_running


def test_completion_with_the_model_tag():
    text = completion(node(WORKER), address_of(node(HEAD)), MODEL)
    assert "simulated" in text
