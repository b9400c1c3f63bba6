"""Container mode on seed scenario 9's layout (vllm-ascend 0.23.0, Ray, TP 4 x PP 2 across two nodes).

Every node runs ascend-engine.service (nested podman in the simulated node), whose container runs the
collection's supervisor with Ray inside; the head's also runs `vllm serve` (the serve double).
"""

import json
import time

from serve_checks import address_of, completion, node, playbook, recap, recovered, request

HEAD, WORKER = "ct-head", "ct-worker"
testinfra_hosts = ["podman://" + HEAD]
MODEL, SERVED, KEY, HF_TOKEN = "/models/qwen3-tiny", "qwen3", "sim-ct-key-31d7", "sim-ct-hf-9b20"
SUPERVISOR = "/usr/local/lib/ascend-inference/engine_supervisor.py"
TOKEN = "/etc/ascend-inference/ray-auth-token"


def inside(host, command):
    return host.run("podman exec ascend-engine " + command)


def supervised(host):
    return json.loads(inside(host, "python3 %s status" % SUPERVISOR).stdout)


def settled(host, wanted, timeout=90):
    """The supervisor's processes once they are WANTED (names, all running): a reload is a signal the supervisor acts
    on in its own time (a removed process is stopped with its stop command, up to 40 s)."""
    deadline = time.time() + timeout
    while True:
        processes = supervised(host)
        if sorted(processes) == sorted(wanted) and all(p["state"] == "running" for p in processes.values()):
            return processes
        if time.time() > deadline:
            return processes
        time.sleep(2)


def container_id(host):
    return host.check_output("podman container inspect --format '{{.Id}}' ascend-engine")


def environ(host, pid):
    text = host.check_output("tr '\\0' '\\n' < /proc/%d/environ" % pid)
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def node_pid(host, pattern):
    """The node's pid of a process of the engine container (the node sees the container's processes)."""
    return int(host.check_output("pgrep -f -o '%s'" % pattern))


def ray_nodes(host, with_token=True):
    """`ray status` inside the head's container: (rc, output)."""
    env = "--env RAY_AUTH_MODE=token --env RAY_AUTH_TOKEN_PATH=%s " % TOKEN if with_token else ""
    result = host.run("podman exec %sascend-engine ray status --address %s:6379" % (env, address_of(host)))
    return result.rc, result.stdout + result.stderr


def alive_nodes(host):
    """The cluster probe inside the head's container: [{ip, npus, node_id}] of the alive nodes."""
    result = host.run("podman exec --env RAY_AUTH_MODE=token --env RAY_AUTH_TOKEN_PATH=%s ascend-engine python3 "
                      "/etc/ascend-inference/ray-cluster-nodes.py %s:6379" % (TOKEN, address_of(host)))
    return json.loads(result.stdout) if result.rc == 0 else []


def wait_for(predicate, seconds, what):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(2)
    raise AssertionError("%s not within %d s" % (what, seconds))


def test_ray_and_serve_run_in_the_engine_containers_and_host_units_are_gone():
    for name in (HEAD, WORKER):
        host = node(name)
        assert host.service("ascend-engine.service").is_running, name
        # The stand-in host-mode units of prepare.yml were stopped and removed.
        for unit in ("ascend-ray.service", "ascend-serve.service"):
            assert not host.file("/etc/systemd/system/" + unit).exists, (name, unit)
        assert host.run("pgrep -x sleep").rc == 1, name
        processes = supervised(host)
        assert processes["ray"]["state"] == "running", (name, processes)
        assert inside(host, "pgrep -x raylet").rc == 0, name
    assert supervised(node(HEAD))["serve"]["state"] == "running"
    assert "serve" not in supervised(node(WORKER))
    argv = node(HEAD).check_output("tr '\\0' ' ' < /proc/%d/cmdline" % node_pid(node(HEAD), "vllm serve"))
    assert "serve %s --tensor-parallel-size 4 --pipeline-parallel-size 2 --distributed-executor-backend ray" % MODEL \
        in argv, argv


def test_the_head_container_gets_its_planned_devices_numbered_from_zero():
    head = node(HEAD)
    # The node has /dev/davinci0-7; the plan gives the head logic IDs 4-7 (physical 4-7 on a host).
    devices = inside(head, "sh -c 'ls /dev | grep ^davinci'").stdout.split()
    assert devices == ["davinci4", "davinci5", "davinci6", "davinci7", "davinci_manager"], devices
    env = environ(head, node_pid(head, "vllm serve"))
    assert env["ASCEND_RT_VISIBLE_DEVICES"] == "0,1,2,3"
    # The node's own environment file keeps the host's numbering.
    assert 'ASCEND_RT_VISIBLE_DEVICES="4,5,6,7"' in head.file("/etc/ascend-inference/node.env").content_string
    # The image's CANN environment was loaded (its cann layout), not the host's.
    assert env["ASCEND_HOME_PATH"].startswith("/usr/local/Ascend/cann"), env["ASCEND_HOME_PATH"]


def test_ray_inside_the_containers_uses_token_authentication():
    head = node(HEAD)
    rc, out = ray_nodes(head, with_token=False)
    assert rc != 0 and ("auth" in out.lower() or "token" in out.lower()), out[-2000:]
    rc, out = ray_nodes(head)
    assert rc == 0 and "0.0/8.0 NPU" in out, out[-2000:]
    env = environ(head, node_pid(head, "raylet"))
    assert env["RAY_AUTH_MODE"] == "token" and env["RAY_AUTH_TOKEN_PATH"] == TOKEN
    assert "RAY_AUTH_TOKEN" not in env


def test_secrets_reach_the_engine_but_no_command_line_or_container_config():
    head = node(HEAD)
    env = environ(head, node_pid(head, "vllm serve"))
    assert env["VLLM_API_KEY"] == KEY and env["HF_TOKEN"] == HF_TOKEN
    for name in (HEAD, WORKER):
        host = node(name)
        cmdlines = host.check_output("cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '")
        config = host.check_output("podman container inspect ascend-engine")
        unit = host.file("/etc/systemd/system/ascend-engine.service").content_string
        for secret in (KEY, HF_TOKEN):
            assert secret not in cmdlines and secret not in config and secret not in unit, (name, secret)
        journal = host.check_output("journalctl -u ascend-engine.service --no-pager")
        assert KEY not in journal and HF_TOKEN not in journal, name


def test_completion_through_the_api_key():
    head, worker = node(HEAD), node(WORKER)
    status, _answer = request(worker, "http://%s:8000/v1/models" % address_of(head))
    assert status == 401
    assert "simulated" in completion(worker, address_of(head), SERVED, key=KEY)


def test_a_killed_container_comes_back_under_systemd_and_ray_rejoins():
    head, worker = node(HEAD), node(WORKER)
    before = container_id(worker)
    old_nodes = [n["node_id"] for n in alive_nodes(head)]
    assert len(old_nodes) == 2
    restarts = int(worker.check_output("systemctl show -p NRestarts --value ascend-engine.service"))
    worker.check_output("podman kill ascend-engine")
    wait_for(lambda: worker.run("podman container inspect --format '{{.State.Running}}' ascend-engine").stdout.strip()
             == "true" and container_id(worker) != before, 60, "a new engine container on the worker")
    assert int(worker.check_output("systemctl show -p NRestarts --value ascend-engine.service")) == restarts + 1
    # The new container's Ray joins the head again as a new node, and the old one is gone.
    wait_for(lambda: sorted(n["node_id"] for n in alive_nodes(head)) != sorted(old_nodes)
             and len(alive_nodes(head)) == 2 and sum(n["npus"] for n in alive_nodes(head)) == 8, 180,
             "the worker's Ray back in the cluster")
    # vLLM 0.23 ends the head's serve once a placement group lost its node (the serve double does too); systemd
    # starts it again, and it serves once the worker's Ray is back.
    recovered(worker, address_of(head), SERVED, 240, key=KEY)
    code, out = playbook("status.yml")
    assert code == 0, out[-3000:]
    assert "running in ascend-engine" in out and "Ray: 2/2 nodes alive, 8 NPUs" in out, out[-3000:]
    assert completion(worker, address_of(head), SERVED, key=KEY)


def test_an_image_that_differs_between_nodes_is_refused_before_anything_changes():
    head, worker = node(HEAD), node(WORKER)
    image = worker.check_output("podman container inspect --format '{{.ImageName}}' ascend-engine")
    original = worker.check_output("podman image inspect --format '{{.Id}}' %s" % image)
    # Another image under the same name on the worker (a tag moved by hand, a pull of a newer build).
    worker.check_output("podman run --name other --entrypoint true %s && podman commit -q other %s && podman rm other"
                        % (image, image))
    changed = worker.check_output("podman image inspect --format '{{.Id}}' %s" % image)
    running = {name: container_id(node(name)) for name in (HEAD, WORKER)}
    pids = {name: supervised(node(name)) for name in (HEAD, WORKER)}
    try:
        code, out = playbook("ray.yml", "-e", "engine_container_image_source=present")
    finally:
        worker.check_output("podman tag %s %s" % (original, image))
    assert code != 0
    words = " ".join(out.split())  # the output callback folds long messages
    assert "is not the same image on every node" in words, out[-3000:]
    assert "%s on ct-head" % original[:12] in words and "%s on ct-worker" % changed[:12] in words, out[-3000:]
    # Nothing restarted.
    for name in (HEAD, WORKER):
        assert container_id(node(name)) == running[name]
        assert {p: s["pid"] for p, s in supervised(node(name)).items()} == {p: s["pid"] for p, s in pids[name].items()}
    assert recap(out).get(WORKER, 0) == 0 and recap(out).get(HEAD, 0) == 0, out[-2000:]


def test_restart_restarts_ray_head_first_then_serve_inside_the_containers():
    head, worker = node(HEAD), node(WORKER)
    before = {name: supervised(node(name)) for name in (HEAD, WORKER)}
    code, out = playbook("restart.yml")
    assert code == 0, out[-3000:]
    after = {name: supervised(node(name)) for name in (HEAD, WORKER)}
    for name in (HEAD, WORKER):
        assert after[name]["ray"]["pid"] != before[name]["ray"]["pid"], name
        assert after[name]["ray"]["state"] == "running", name
    # The engine is a Ray driver: it restarted with the head's Ray, and answers again.
    assert after[HEAD]["serve"]["pid"] != before[HEAD]["serve"]["pid"]
    assert len(alive_nodes(head)) == 2
    assert completion(worker, address_of(head), SERVED, key=KEY)


def test_the_mp_launcher_in_containers_serves_on_every_node_without_ray():
    """Switched to the multiprocess launcher (DP 2, one rank per node): serve in both containers, the
    worker headless from rank 1; Ray leaves both supervisors, the containers themselves stay."""
    head, worker = node(HEAD), node(WORKER)
    running = {name: container_id(node(name)) for name in (HEAD, WORKER)}
    code, out = playbook("deploy.yml", "-e", json.dumps({
        "ascend_launcher": "mp", "ascend_tensor_parallel_size": 4, "ascend_pipeline_parallel_size": 1,
        "ascend_data_parallel_size": 2}))
    assert code == 0, out[-3000:]
    for name in (HEAD, WORKER):
        processes = settled(node(name), ["serve"])
        assert sorted(processes) == ["serve"] and processes["serve"]["state"] == "running", (name, processes)
        assert inside(node(name), "pgrep -x raylet").rc == 1, name
        assert container_id(node(name)) == running[name], name
        assert not node(name).file("/etc/ascend-inference/engine/ray.json").exists, name
    argv = worker.check_output("tr '\\0' ' ' < /proc/%d/cmdline" % node_pid(worker, "vllm serve"))
    assert "--headless" in argv and "--data-parallel-start-rank 1" in argv, argv
    assert "simulated" in completion(worker, address_of(head), SERVED, key=KEY)


def test_teardown_stops_the_engine_containers_and_leaves_nothing_running():
    code, out = playbook("teardown.yml")
    assert code == 0, out[-3000:]
    for name in (HEAD, WORKER):
        host = node(name)
        assert not host.service("ascend-engine.service").is_enabled, name
        assert host.run("podman container exists ascend-engine").rc == 1, name
        left = host.run("pgrep -af '[r]aylet|[v]llm serve'")
        assert left.rc == 1, (name, left.stdout, host.run("ps -eo pid,stat,etime,args").stdout)
