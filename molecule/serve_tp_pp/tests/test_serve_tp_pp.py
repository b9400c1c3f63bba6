"""Seed scenario 9 on Atlas A3 nodes: vllm-ascend, Ray, TP 16 x PP 2 over two nodes of 16 dies;
restarts and a plan change."""

import json
import re

from serve_checks import address_of, completion, flags, main_pid, node, playbook, serve_process

HEAD, WORKER = "tp-head", "tp-worker"
testinfra_hosts = ["podman://" + HEAD]
MODEL, NAME = "/models/qwen3-tiny", "qwen3"


def pids():
    """Main PIDs of the services that run here: Ray on both nodes, serve on the head."""
    return {(name, unit): main_pid(node(name), unit)
            for name, unit in ((HEAD, "ascend-ray.service"), (WORKER, "ascend-ray.service"),
                               (HEAD, "ascend-serve.service"))}


def test_head_serves_with_the_ray_executor():
    argv, env = serve_process(node(HEAD))
    assert argv[:3] == ["/opt/ascend-inference/venv/bin/vllm", "serve", MODEL], argv
    found = flags(argv)
    assert found["--tensor-parallel-size"] == "16" and found["--pipeline-parallel-size"] == "2"
    assert found["--distributed-executor-backend"] == "ray" and found["--port"] == "8000"
    assert "--data-parallel-size" not in found and "--headless" not in found
    head_ip = address_of(node(HEAD))
    assert env["HCCL_IF_IP"] == head_ip
    nic = node(HEAD).check_output("ip -4 -o addr show scope global | awk '{print $2}'")
    assert env["GLOO_SOCKET_IFNAME"] == nic and env["TP_SOCKET_IFNAME"] == nic
    assert env["RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES"] == "1"
    # Every die of the A3 node, by logic ID.
    assert env["ASCEND_RT_VISIBLE_DEVICES"] == ",".join(str(n) for n in range(16))
    # The engine is a Ray client of the token-protected cluster.
    assert env["RAY_AUTH_MODE"] == "token"


def test_worker_runs_ray_only():
    worker = node(WORKER)
    assert worker.service("ascend-ray.service").is_running
    assert not worker.file("/etc/systemd/system/ascend-serve.service").exists
    ray_env = worker.check_output("tr '\\0' '\\n' < /proc/%d/environ" % main_pid(worker, "ascend-ray.service"))
    assert "HCCL_IF_IP=%s" % address_of(worker) in ray_env.splitlines()


def test_root_was_chosen_so_the_units_run_as_root_unconfined():
    head = node(HEAD)
    for unit in ("ascend-ray.service", "ascend-serve.service"):
        status = head.check_output("cat /proc/%d/status" % main_pid(head, unit))
        assert re.search(r"^Uid:\s+0\s+0\s+0\s+0$", status, re.M), (unit, status)
        assert head.check_output("systemctl show -p User -p PrivateTmp --value %s" % unit).split() == ["no"], unit
    assert not head.user("ascend-inference").exists


def test_the_engine_holds_npus_on_both_nodes():
    journal = node(HEAD).check_output("journalctl -u ascend-serve.service --no-pager")
    assert "reserved 1 placement group(s) of 32 NPU(s) each" in journal


def test_ray_counts_16_npus_per_a3_node_through_pyacl():
    head = node(HEAD)
    head.check_output("cat > /tmp/ray-nodes.py <<'EOF'\nimport json, ray\nray.init(address='auto', logging_level='ERROR')\n"
                      "print(json.dumps([n['Resources'] for n in ray.nodes() if n['Alive']]))\nEOF")
    out = head.check_output("env -i bash -c 'set -a; . /etc/ascend-inference/node.env; . /etc/ascend-inference/ray.env; "
                            "/opt/ascend-inference/venv/bin/python /tmp/ray-nodes.py'")
    resources = json.loads(out.strip().splitlines()[-1])
    assert sorted(r.get("NPU") for r in resources) == [16.0, 16.0]
    # The accelerator type comes from acl.get_soc_name(): Ray imported pyACL with the CANN environment.
    assert all(r.get("accelerator_type:Ascend910_9391") == 1.0 for r in resources), resources


def test_completion_from_the_worker():
    assert completion(node(WORKER), address_of(node(HEAD)), NAME)


def test_status_shows_every_service():
    code, out = playbook("status.yml")
    assert code == 0, out[-3000:]
    assert "Ray: 2/2 nodes alive, 32 NPUs" in out
    assert "API http://%s:8000: /health 200" % address_of(node(HEAD)) in out
    for name in (HEAD, WORKER):
        assert [line for line in out.splitlines() if line.strip().startswith(name + " ") and "active/running" in line]
    # The model's router on the head, with its one replica up.
    assert "router on %s (port 8080): active/running" % HEAD in out and "  qwen3: default UP" in out, out[-3000:]
    # No monitoring host: the time to first token from the engine's own histogram (the smoke test and the
    # completion above were answered).
    assert re.search(r"load default: 0 running, 0 waiting, KV cache 0%, time to first token p50 [0-9.e-]+ s / p95 "
                     r"[0-9.e-]+ s \(since the engine started, [1-9][0-9]* requests\)", out), out[-3000:]


def started(name, unit):
    """When the unit last became active, in the kernel's monotonic clock (one kernel: comparable across nodes)."""
    return int(node(name).check_output("systemctl show -p ActiveEnterTimestampMonotonic --value %s" % unit))


def test_restart_restarts_ray_head_then_workers_then_serve():
    before = pids()
    code, out = playbook("restart.yml")
    assert code == 0, out[-3000:]
    after = pids()
    assert all(after[key] != before[key] for key in before), (before, after)
    # serve is PartOf= Ray and so restarts with the head's Ray (systemd's Restart= then starts it again while the
    # workers' Ray is down): neither its PID nor its start time shows the order. The applies' own lines do - the
    # head's Ray, then the worker's, then the barrier, then serve restarted by restart.yml's serve phase.
    order = ["%s: ascend-ray.service restarted" % HEAD, "%s: ascend-ray.service restarted" % WORKER,
             "%s: Ray cluster, " % HEAD, "%s: ascend-serve.service restarted" % HEAD]
    assert all(line in out for line in order), out[-3000:]
    assert [out.index(line) for line in order] == sorted(out.index(line) for line in order), out[-3000:]
    assert started(HEAD, "ascend-ray.service") < started(WORKER, "ascend-ray.service") \
        < started(HEAD, "ascend-serve.service")
    assert completion(node(WORKER), address_of(node(HEAD)), NAME)


def test_restart_with_tags_serve_leaves_ray_alone():
    before = pids()
    code, out = playbook("restart.yml", "--tags", "serve")
    assert code == 0, out[-3000:]
    after = pids()
    assert after[(HEAD, "ascend-serve.service")] != before[(HEAD, "ascend-serve.service")]
    assert after[(HEAD, "ascend-ray.service")] == before[(HEAD, "ascend-ray.service")]
    assert after[(WORKER, "ascend-ray.service")] == before[(WORKER, "ascend-ray.service")]
    assert completion(node(WORKER), address_of(node(HEAD)), NAME)


def test_a_new_tp_restarts_only_the_head_serve():
    before = pids()
    code, out = playbook("deploy.yml", "-e", json.dumps({"ascend_tensor_parallel_size": 8}))
    assert code == 0, out[-3000:]
    # deploy.yml imports preflight.yml in each phase; only the first probes the nodes.
    assert out.count("TASK [ascend.inference.preflight : Probe the node]") == 1, out[-3000:]
    after = pids()
    assert after[(HEAD, "ascend-serve.service")] != before[(HEAD, "ascend-serve.service")]
    assert {k: v for k, v in after.items() if k != (HEAD, "ascend-serve.service")} == \
        {k: v for k, v in before.items() if k != (HEAD, "ascend-serve.service")}, "Ray must not restart"
    found = flags(serve_process(node(HEAD))[0])
    # World size 16 fits the head's 16 dies: no Ray executor any more.
    assert found["--tensor-parallel-size"] == "8" and "--distributed-executor-backend" not in found
    assert completion(node(WORKER), address_of(node(HEAD)), NAME)


def test_cann_80_from_the_packages_in_the_ascend_toolkit_layout():
    arch = node(HEAD).check_output("uname -m")
    for name in (HEAD, WORKER):
        host = node(name)
        assert host.check_output("readlink /usr/local/Ascend/ascend-toolkit/latest") == "8.0.RC1"
        info = host.file("/usr/local/Ascend/ascend-toolkit/8.0.RC1/%s-linux/ascend_toolkit_install.info" % arch)
        assert "version=8.0.RC1\n" in info.content_string
        # nnal, installed with the toolkit's set_env.sh sourced (its installer refuses otherwise).
        assert "Ascend-cann-atb : 8.0.RC1" in host.file("/usr/local/Ascend/nnal/atb/latest/version.info").content_string
        assert not host.file("/usr/local/Ascend/cann").exists
