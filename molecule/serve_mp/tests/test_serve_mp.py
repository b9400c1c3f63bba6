"""Seed scenario 8 on Atlas A3 nodes: mp data parallelism with a headless worker, an API key."""

import time
import warnings

from serve_checks import (INVENTORY, address_of, completion, flags, main_pid, node, playbook, reboot, recap, recovered,
                          request, restarts, serve_process, watchdog_answered)

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
    # of what loads it (node_env's step), serve.env and serve's restart (serve's step). The head restarts with it:
    # vLLM takes a node into the DP group at start-up only (serve_group). Nothing else anywhere.
    assert recap(out) == {HEAD: 1, WORKER: 2}, out[-3000:]
    for line in ("/etc/ascend-inference/secrets.env content", "/etc/ascend-inference/serve.env content",
                 "ascend-serve.service restarted"):
        assert "%s: %s" % (WORKER, line) in out, out[-3000:]
    assert "%s: ascend-serve.service restarted" % HEAD in out, out[-3000:]
    assert main_pid(node(WORKER), "ascend-serve.service") != worker_pid
    assert KEY in node(WORKER).check_output("cat /etc/ascend-inference/serve.env")
    assert HF_TOKEN in node(WORKER).check_output("cat /etc/ascend-inference/secrets.env")


def head_restarts():
    return restarts(node(HEAD), "ascend-serve.service")


def back(seconds):
    return recovered(node(WORKER), address_of(node(HEAD)), NAME, seconds, KEY)


def status_lines():
    # status.yml reads the watchdog's last round: one after the recovery.
    watchdog_answered(node(HEAD), 60)
    code, out = playbook("status.yml")
    assert code == 0, out[-3000:]
    return out


def test_killed_worker_is_restarted_and_the_group_forms_again():
    """The worker's engines restart alone (systemd). vLLM's head never takes them back (its handshake is over) and
    its next request's DP wave fails (lock-step: vLLM 0.11, MoE): the head's watchdog probe meets that, the head
    exits, systemd restarts it, and the worker joins its start-up."""
    worker = node(WORKER)
    before, head_before = restarts(worker, "ascend-serve.service"), head_restarts()
    worker.check_output("systemctl kill --signal=KILL ascend-serve.service")
    deadline = time.time() + 90
    while restarts(worker, "ascend-serve.service") == before:
        assert time.time() < deadline, "systemd did not restart the killed serve"
        time.sleep(2)
    took = back(150)
    head_log = node(HEAD).check_output("journalctl -u ascend-serve.service --no-pager -n 200")
    assert "lost mp-worker" in head_log and "all-reduce with ranks [2, 3] failed" in head_log
    assert head_restarts() > head_before
    # Shown in pytest's warnings summary: the figure the notes report.
    warnings.warn("killed worker engines: completions again %.0f s after systemd restarted them" % took)
    out = status_lines()
    assert "every DP rank answered" in out, out[-3000:]


def test_a_rebooted_head_is_taken_back_without_a_person():
    """A rebooted headless node is real_vllm's test, against a real vLLM head."""
    for name in (HEAD,):
        reboot(name)
        took = back(240)
        warnings.warn("%s rebooted: completions again %.0f s after podman restart returned" % (name, took))
        out = status_lines()
        assert "every DP rank answered" in out, out[-3000:]
    # The worker's watchdog restarted its engines when the rebooted head went away.
    log = node(WORKER).check_output("journalctl -u ascend-watchdog.service --no-pager -n 100")
    assert "restarting ascend-serve.service so that they join the head's next start-up" in log, log
