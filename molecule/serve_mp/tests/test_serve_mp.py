"""Seed scenario 8 on Atlas A3 nodes: mp data parallelism with a headless worker, an API key."""

import time

from serve_checks import (INVENTORY, address_of, completion, flags, main_pid, node, playbook, recap, request, restarts,
                          serve_process, wait_healthy)

import testinfra.utils.ansible_runner

HOSTS = testinfra.utils.ansible_runner.AnsibleRunner(INVENTORY).get_hosts("all")
HEAD, WORKER = "mp-head", "mp-worker"
testinfra_hosts = ["podman://" + HEAD]
MODEL, NAME, KEY = "/models/deepseek-tiny", "deepseek-r1-w8a8", "sim-secret-7f3a9c"
HF_TOKEN = "sim-hf-token-52c1e8"


def test_head_runs_rank_0_and_1_with_the_coordinator():
    argv, env = serve_process(node(HEAD))
    assert argv[:3] == ["/opt/ascend-inference/venv/bin/vllm-mindspore", "serve", MODEL], argv
    found = flags(argv)
    head_ip = address_of(node(HEAD))
    assert {k: found.get(k) for k in ("--tensor-parallel-size", "--data-parallel-size", "--data-parallel-size-local",
                                      "--data-parallel-address", "--data-parallel-rpc-port", "--port")} == {
        "--tensor-parallel-size": "8", "--data-parallel-size": "4", "--data-parallel-size-local": "2",
        "--data-parallel-address": head_ip, "--data-parallel-rpc-port": "29550", "--port": "8000"}
    assert "--headless" not in found and "--data-parallel-start-rank" not in found
    assert found["--enable-expert-parallel"] is True
    assert found["--additional-config"] == '{"expert_parallel": 4}'
    assert found["--served-model-name"] == NAME
    # Every die of the A3 node, by logic ID: 2 local DP ranks x TP 8.
    assert env["ASCEND_RT_VISIBLE_DEVICES"] == ",".join(str(n) for n in range(16))


def test_worker_is_headless_from_rank_2():
    argv, _env = serve_process(node(WORKER))
    found = flags(argv)
    assert _env["ASCEND_RT_VISIBLE_DEVICES"] == ",".join(str(n) for n in range(16))
    assert found["--headless"] is True
    assert found["--data-parallel-start-rank"] == "2" and found["--data-parallel-size-local"] == "2"
    assert found["--data-parallel-address"] == address_of(node(HEAD))
    assert "--port" not in found


def test_each_node_has_its_environment():
    for name in HOSTS:
        _argv, env = serve_process(node(name))
        nic = node(name).check_output("ip -4 -o addr show scope global | awk '{print $2}'")
        for variable in ("GLOO_SOCKET_IFNAME", "HCCL_SOCKET_IFNAME", "TP_SOCKET_IFNAME"):
            assert env[variable] == nic, (name, variable, env.get(variable))
        assert env["MS_ENABLE_LCCL"] == "off" and env["HCCL_OP_EXPANSION_MODE"] == "AIV"
        assert env["VLLM_MS_MODEL_BACKEND"] == "MindFormers"
        assert env["VLLM_API_KEY"] == KEY
        assert env["HF_TOKEN"] == HF_TOKEN and env["VLLM_LOGGING_LEVEL"] == "INFO"
        # The default service account, in its state directory (no Ray here: no namespace to join).
        status = node(name).check_output("cat /proc/%d/status" % main_pid(node(name), "ascend-serve.service"))
        uid = node(name).user("ascend-inference").uid
        assert "\nUid:\t%d\t%d\t%d\t%d\n" % (uid, uid, uid, uid) in status, (name, status)
        assert env["HOME"] == "/var/lib/ascend-inference" and env["USER"] == "ascend-inference"


# Where a secret could leak on a node: files anyone may read (units, the plan, logs, the venv), the journal.
READABLE_FILES = ("find /etc /run /tmp /var/log /var/tmp /var/lib/ascend-inference /opt /root -xdev -type f -perm -o+r -size -4M -print0 "
                  "| xargs -0 grep -lF -e %s -e %s || true")


def test_secrets_are_required_and_never_on_a_command_line_in_a_readable_file_or_the_journal():
    head_ip = address_of(node(HEAD))
    assert request(node(WORKER), "http://%s:8000/v1/models" % head_ip)[0] == 401
    status, models = request(node(WORKER), "http://%s:8000/v1/models" % head_ip, key=KEY)
    assert status == 200 and [m["id"] for m in models["data"]] == [NAME]
    for name in HOSTS:
        host = node(name)
        command_lines = host.check_output("cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '")
        assert KEY not in command_lines and HF_TOKEN not in command_lines
        for path in ("/etc/ascend-inference/serve.env", "/etc/ascend-inference/secrets.env"):
            secrets = host.file(path)
            assert secrets.mode == 0o600 and secrets.user == "root", path
        assert HF_TOKEN in host.file("/etc/ascend-inference/secrets.env").content_string
        assert HF_TOKEN not in host.file("/etc/ascend-inference/node.env").content_string
        assert host.check_output(READABLE_FILES % (KEY, HF_TOKEN)) == "", name
        journal = host.check_output("journalctl --no-pager --output=cat")
        assert "ascend-serve" in journal or "Started" in journal
        assert KEY not in journal and HF_TOKEN not in journal, name


def test_completion_from_the_other_node():
    assert completion(node(WORKER), address_of(node(HEAD)), NAME, key=KEY)


def test_a_verbose_run_that_rewrites_the_secrets_shows_them_nowhere():
    # Stale secrets on the worker: the run must rewrite serve.env and secrets.env (and so could print them,
    # --diff included), and the plan is computed again (its module's arguments are shown at -vvv).
    stale_key, stale_token = "stale-key-0b5e1d", "stale-hf-4d2a7c"
    node(WORKER).check_output("sed -i 's/^VLLM_API_KEY=.*/VLLM_API_KEY=%s/' /etc/ascend-inference/serve.env" % stale_key)
    node(WORKER).check_output("sed -i 's/^HF_TOKEN=.*/HF_TOKEN=%s/' /etc/ascend-inference/secrets.env" % stale_token)
    worker_pid = main_pid(node(WORKER), "ascend-serve.service")
    code, out = playbook("deploy.yml", "--tags", "node_env,serve", "-vvv", "--diff")
    assert code == 0, out[-3000:]
    for secret in (KEY, stale_key, HF_TOKEN, stale_token):
        assert secret not in out, secret
    # Both files rewritten, and the worker's serve restarted for them (a new process): secrets.env and the restart
    # of what loads it (node_env's step), serve.env and serve's restart (serve's step); nothing anywhere else.
    assert recap(out) == {HEAD: 0, WORKER: 2}, out[-3000:]
    for line in ("/etc/ascend-inference/secrets.env content", "/etc/ascend-inference/serve.env content",
                 "ascend-serve.service restarted"):
        assert "%s: %s" % (WORKER, line) in out, out[-3000:]
    assert main_pid(node(WORKER), "ascend-serve.service") != worker_pid
    assert KEY in node(WORKER).check_output("cat /etc/ascend-inference/serve.env")
    assert HF_TOKEN in node(WORKER).check_output("cat /etc/ascend-inference/secrets.env")


def test_killed_worker_is_restarted_and_the_endpoint_recovers():
    worker = node(WORKER)
    before = restarts(worker, "ascend-serve.service")
    worker.check_output("systemctl kill --signal=KILL ascend-serve.service")
    head_ip = address_of(node(HEAD))
    deadline = time.time() + 90
    while restarts(worker, "ascend-serve.service") == before:
        assert time.time() < deadline, "systemd did not restart the killed serve"
        time.sleep(2)
    # The head lost ranks 2-3 (unhealthy) until the restarted worker registered again.
    assert "lost mp-worker" in node(HEAD).check_output("journalctl -u ascend-serve.service --no-pager -n 50")
    wait_healthy(node(HEAD), head_ip, 120)
    assert completion(node(HEAD), head_ip, NAME, key=KEY)
    # status.yml counts the restart where it happened.
    code, out = playbook("status.yml")
    assert code == 0, out[-3000:]
    lines = {line.split()[0]: line for line in out.splitlines()
             if line.strip().startswith((HEAD + " ", WORKER + " ")) and " restarts" in line}
    assert "active/running, %d restarts" % restarts(worker, "ascend-serve.service") in lines[WORKER], lines
    assert restarts(worker, "ascend-serve.service") >= 1
    assert "active/running, 0 restarts" in lines[HEAD], lines
