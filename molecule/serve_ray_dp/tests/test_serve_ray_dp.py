"""Seed scenario 3: vllm-mindspore, Ray data parallelism (DP 4, 2 per node), serve on the head."""

import hashlib
import os
import warnings

from serve_checks import (address_of, completion, main_pid, node, playbook, reboot, recovered, serve_process,
                          watchdog_answered)

HEAD, WORKER = "dp-head", "dp-worker"
testinfra_hosts = ["podman://" + HEAD]
MODEL = "/models/qwen2.5-tiny"
VENV = "/opt/ascend-inference/venv"


def test_head_serves_all_dp_ranks_through_ray():
    argv, env = serve_process(node(HEAD))
    assert argv == [VENV + "/bin/vllm-mindspore", "serve", MODEL, "--tensor-parallel-size", "1",
                    "--data-parallel-size", "4", "--data-parallel-size-local", "2",
                    "--data-parallel-backend", "ray", "--port", "8000"], argv
    nic = node(HEAD).check_output("ip -4 -o addr show scope global | awk '{print $2}'")
    for variable in ("GLOO_SOCKET_IFNAME", "HCCL_SOCKET_IFNAME", "TP_SOCKET_IFNAME"):
        assert env[variable] == nic
    assert env["PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION"] == "python"
    assert env["MS_ALLOC_CONF"] == "enable_vmm:true" and env["ASCEND_RT_VISIBLE_DEVICES"] == "0,1"
    assert env["RAY_AUTH_MODE"] == "token"


def process_status(host, pid):
    """{field: value} of /proc/PID/status."""
    return dict(line.split(":", 1) for line in host.check_output("cat /proc/%d/status" % pid).splitlines())


def test_ray_and_the_engine_run_as_the_confined_service_account():
    for name in (HEAD, WORKER):
        host = node(name)
        account, devices = host.user("ascend-inference"), host.group("HwHiAiUser")
        # The simulated driver's device files, as on a 910 node (vllm-project/vllm-ascend#9490).
        assert host.check_output("stat -c '%U:%G %a' /dev/davinci0 /dev/davinci_manager").split("\n") == [
            "HwHiAiUser:HwHiAiUser 660"] * 2
        pids = [main_pid(host, "ascend-ray.service"), int(host.check_output("pgrep -x raylet"))]
        if name == HEAD:
            pids.append(main_pid(host, "ascend-serve.service"))
        for pid in pids:
            status = process_status(host, pid)
            assert set(status["Uid"].split()) == {str(account.uid)}, (name, pid, status["Uid"])
            assert set(status["Gid"].split()) == {str(account.gid)}, (name, pid, status["Gid"])
            assert str(devices.gid) in status["Groups"].split(), (name, pid, status["Groups"])
            assert status["NoNewPrivs"].strip() == "1", (name, pid)
        # The account holds the device group through the units only, and logs in nowhere.
        assert devices.name not in account.groups and account.shell == "/usr/sbin/nologin"
        assert host.check_output("stat -c '%U:%G %a' /etc/ascend-inference/ray-auth-token") == \
            "root:ascend-inference 640"
        assert host.check_output("systemctl show -p ProtectSystem -p PrivateTmp --value ascend-ray.service") \
            .split() == ["yes", "full"]
    # Ray's session is in Ray's private /tmp, which the engine's unit joins (it found the cluster: see the
    # placement groups).
    assert "ascend-ray.service" in node(HEAD).check_output(
        "systemctl show -p JoinsNamespaceOf --value ascend-serve.service")


def test_the_preflight_names_device_files_the_account_cannot_open():
    worker = node(WORKER)
    worker.check_output("chown root:root /dev/davinci1 && chmod 600 /dev/davinci1")
    try:
        code, out = playbook("check.yml")
    finally:
        worker.check_output("chown HwHiAiUser:HwHiAiUser /dev/davinci1 && chmod 660 /dev/davinci1")
    assert code != 0
    assert ("host dp-worker: the NPU device files belong to different groups (/dev/davinci0 HwHiAiUser; "
            "/dev/davinci1 root; /dev/davinci_manager HwHiAiUser") in out, out[-3000:]
    assert "ascend_service_user: root" in out


def test_every_dp_rank_holds_a_placement_group():
    journal = node(HEAD).check_output("journalctl -u ascend-serve.service --no-pager")
    assert "reserved 4 placement group(s) of 1 NPU(s) each" in journal


def test_worker_serves_nothing():
    assert not node(WORKER).file("/etc/systemd/system/ascend-serve.service").exists
    assert node(WORKER).service("ascend-ray.service").is_running


def test_completion_with_the_model_tag():
    text = completion(node(WORKER), address_of(node(HEAD)), MODEL)
    assert "simulated" in text


def test_serve_finds_the_engine_in_its_environment_clears_a_stale_worker_unit_and_can_skip_the_smoke_test():
    head, worker = node(HEAD), node(WORKER)
    # The worker served under an earlier plan: a unit and its secrets are left.
    worker.check_output("printf '[Service]\\nExecStart=/bin/sleep infinity\\n' > /etc/systemd/system/ascend-serve.service"
                        " && echo VLLM_API_KEY=old > /etc/ascend-inference/serve.env"
                        " && systemctl daemon-reload && systemctl start ascend-serve.service")
    # The engine is installed in the engine's Python environment, which comes before PATH:
    # a broken one on PATH must not be taken.
    head.check_output("printf '#!/bin/sh\\nexit 3\\n' > /usr/local/bin/vllm-mindspore && chmod 755 /usr/local/bin/vllm-mindspore")

    def requests(kind):
        # Not the watchdog's probes (their User-Agent, which the double logs).
        return len([line for line in head.check_output("journalctl -u ascend-serve.service --no-pager").splitlines()
                    if '"%s HTTP/1.1" 200' % kind in line and "ascend-serve-watchdog" not in line])

    smoke_tests, health_checks = requests("POST /v1/completions"), requests("GET /health")
    code, out = playbook("serve.yml", "-e", "serve_smoke_test=false")
    assert code == 0, out[-3000:]
    assert not worker.file("/etc/systemd/system/ascend-serve.service").exists
    assert not worker.file("/etc/ascend-inference/serve.env").exists
    assert worker.run("pgrep -x sleep").rc == 1
    assert serve_process(head)[0][0] == VENV + "/bin/vllm-mindspore"
    # Readiness was waited for (new GET /health); no completion was asked for.
    assert requests("GET /health") > health_checks and requests("POST /v1/completions") == smoke_tests
    assert completion(worker, address_of(head), MODEL)
    head.check_output("rm /usr/local/bin/vllm-mindspore")


def test_the_deployment_came_over_ssh_as_deploy_and_became_root_with_sudo():
    """molecule.yml: the converge and the tests' runs connect as `deploy`, root logins are off."""
    for name in (HEAD, WORKER):
        log = node(name).check_output("journalctl --no-pager --output=cat SYSLOG_IDENTIFIER=sshd SYSLOG_IDENTIFIER=sudo")
        assert "Accepted publickey for deploy" in log, name
        assert "Accepted publickey for root" not in log and "Accepted password" not in log, name
        # sudo's own log line for Ansible's become wrapper (sudo escapes the command's spaces).
        assert [line for line in log.splitlines()
                if line.strip().startswith("deploy : ") and "USER=root" in line and "BECOME-SUCCESS" in line], name


def test_the_model_came_from_the_controller_over_ssh_with_sudo():
    """The model role's rsync from the controller runs over the deploy user's SSH with `sudo -n rsync`: sudo logs it."""
    source = os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "model-src", "model.safetensors")
    with open(source, "rb") as handle:
        want = hashlib.sha256(handle.read()).hexdigest()
    for name in (HEAD, WORKER):
        host = node(name)
        assert host.check_output("sha256sum %s/model.safetensors" % MODEL).split()[0] == want, name
        assert host.file("/etc/ascend-inference/model.manifest.json").exists, name
    log = node(HEAD).check_output("journalctl --no-pager --output=cat SYSLOG_IDENTIFIER=sudo")
    # The controller sends to the head once; the worker gets it from the head.
    assert [line for line in log.splitlines() if "USER=root" in line and "COMMAND=/usr/bin/rsync --server" in line], log
    assert "COMMAND=/usr/bin/rsync --server" not in node(WORKER).check_output(
        "journalctl --no-pager --output=cat SYSLOG_IDENTIFIER=sudo")


def test_a_group_or_account_this_collection_did_not_create_is_refused():
    head, worker = node(HEAD), node(WORKER)
    # The head has a group of the account's name with a member; the worker an account of that name.
    head.check_output("groupadd --system svc-taken && usermod -a -G svc-taken deploy")
    worker.check_output("useradd --system --no-create-home --shell /bin/sh svc-taken")
    try:
        code, out = playbook(os.path.join(os.path.dirname(__file__), "..", "service-account-only.yml"),
                             "-e", "ascend_service_user=svc-taken")
        head_user = head.run("getent passwd svc-taken")
        worker_shell = worker.check_output("getent passwd svc-taken | cut -d: -f7")
    finally:
        head.run("userdel svc-taken; groupdel svc-taken")
        worker.run("userdel svc-taken; groupdel svc-taken")
    assert code != 0
    assert "The group svc-taken exists on host dp-head" in out and 'members "deploy"' in out, out[-3000:]
    assert "ascend_service_user svc-taken is an existing account on host dp-worker" in out, out[-3000:]
    # Nothing was taken over: no account made beside the group, the foreign account's shell kept.
    assert head_user.rc == 2 and worker_shell == "/bin/sh"


def test_a_rebooted_worker_and_then_a_rebooted_head_are_taken_back_without_a_person():
    """Last in this file: a reboot clears the journals the tests above read. Ray launcher, vLLM 0.11: the engine
    never notices that the Ray worker of two DP ranks went with its node, and requests wait
    (tests/sim/doubles/vllm_sim.py cites the lines). The head's watchdog finds the unanswered probe and restarts
    the head's serve, whose new placement groups take the rebooted node once Ray has it again. A rebooted head
    brings Ray and serve back by itself; the worker's Ray joins it again (its unit restarts whenever it exits)."""
    for name in (WORKER, HEAD):
        reboot(name)
        took = recovered(node(WORKER), address_of(node(HEAD)), MODEL, 300)
        warnings.warn("%s rebooted: completions again %.0f s after podman restart returned" % (name, took))
        if name == WORKER:
            # The engine on the head lost two ranks with the worker's Ray: only its watchdog brought it back.
            log = node(HEAD).check_output("journalctl -u ascend-watchdog.service --no-pager -n 200")
            assert "gave no answer to a 1-token completion" in log and "restarting ascend-serve.service" in log, log
        # status.yml reads the watchdog's last round: one after the recovery.
        watchdog_answered(node(HEAD), 60)
        code, out = playbook("status.yml")
        assert code == 0 and "every DP rank answered" in out, out[-3000:]
