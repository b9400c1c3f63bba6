"""The Ray cluster as systemd services: whole, secured, and self-healing."""

import json
import os
import re
import socket
import time

import pytest

import testinfra
import testinfra.utils.ansible_runner

HOSTS = testinfra.utils.ansible_runner.AnsibleRunner(os.environ["MOLECULE_INVENTORY_FILE"]).get_hosts("all")
HEAD = "ray-head"
testinfra_hosts = ["podman://" + name for name in HOSTS]
VENV = "/opt/ascend-inference/venv"
TOKEN_ENV = "RAY_AUTH_MODE=token RAY_AUTH_TOKEN_PATH=/etc/ascend-inference/ray-auth-token"
NPUS = 4 + 3 + 2  # ray-worker1 may use 3 of its 4 NPUs (ascend_npu_devices)


def node(name):
    return testinfra.get_host("podman://" + name)


def address_of(host):
    return re.search(r"inet (\d+\.\d+\.\d+\.\d+)/", host.check_output("ip -4 -o addr show scope global")).group(1)


def cluster():
    """The alive nodes as the head's Ray sees them: [{ip, npus, node_id}], one entry per raylet."""
    out = node(HEAD).run("%s %s/bin/python /etc/ascend-inference/ray-cluster-nodes.py %s:6379"
                         % (TOKEN_ENV, VENV, address_of(node(HEAD))))
    return json.loads(out.stdout) if out.rc == 0 else []


def wait_whole(seconds, replaced=()):
    """Wait until one raylet per node holds every NPU, none of them a raylet in `replaced` (node IDs)."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        seen = cluster()
        if (sorted(n["ip"] for n in seen) == sorted(address_of(node(name)) for name in HOSTS)
                and sum(n["npus"] for n in seen) == NPUS and not {n["node_id"] for n in seen} & set(replaced)):
            return {n["ip"]: n["npus"] for n in seen}
        time.sleep(3)
    raise AssertionError("cluster not whole after %d s (replaced raylets %s): %s" % (seconds, list(replaced), cluster()))


def test_service_runs_the_planned_command(host):
    service = host.service("ascend-ray.service")
    assert service.is_running and service.is_enabled
    pid = host.check_output("systemctl show -p MainPID --value ascend-ray.service")
    argv = host.file("/proc/%s/cmdline" % pid).content_string.split("\0")
    assert argv[1] == VENV + "/bin/ray" and argv[2] == "start" and "--block" in argv
    assert "--node-ip-address=%s" % address_of(host) in argv
    if host.backend.name == HEAD:
        assert "--head" in argv and "--dashboard-host=127.0.0.1" in argv and "--port=6379" in argv
    else:
        assert "--address=%s:6379" % address_of(node(HEAD)) in argv


def ray_status():
    """`ray status` for a shell on a node: Ray's session is in its unit's private /tmp, so the address is given."""
    return "%s/bin/ray status --address=%s:6379" % (VENV, address_of(node(HEAD)))


def test_ray_status_counts_nodes_and_the_environments_npus():
    host = node(HEAD)
    seen = wait_whole(60)
    assert seen[address_of(node("ray-worker1"))] == 3, "ASCEND_RT_VISIBLE_DEVICES must narrow Ray's count"
    status = host.check_output("%s %s" % (TOKEN_ENV, ray_status()))
    assert re.search(r"/%d\.0 NPU" % NPUS, status), status


def test_token_is_required_and_private(host):
    token = host.file("/etc/ascend-inference/ray-auth-token")
    # Ray reads it as the service account.
    assert (token.mode, token.user, token.group) == (0o640, "root", "ascend-inference")
    assert token.content_string == node(HEAD).file("/etc/ascend-inference/ray-auth-token").content_string
    if host.backend.name == HEAD:
        refused = host.run(ray_status())
        # Refused for the token, not for any other reason (the same call with it is answered).
        assert refused.rc != 0 and "InvalidAuthToken" in refused.stderr, refused.stderr[-2000:]
        wrong = host.run("RAY_AUTH_MODE=token RAY_AUTH_TOKEN=%s %s" % ("x" * 64, ray_status()))
        assert wrong.rc != 0 and "InvalidAuthToken" in wrong.stderr, wrong.stderr[-2000:]
        assert host.run("%s %s" % (TOKEN_ENV, ray_status())).rc == 0


def test_dashboard_only_on_the_heads_loopback(host):
    head_ip = address_of(node(HEAD))
    if host.backend.name == HEAD:
        assert host.run("curl -sf -o /dev/null http://127.0.0.1:8265/").rc == 0
    else:
        assert host.run("curl -s -m 5 -o /dev/null http://%s:8265/" % head_ip).rc != 0


def test_firewall_refuses_non_members(host):
    """The firewall role (on by default): this machine (not a member) is refused on every port Ray listens on."""
    rules = host.check_output("nft list table inet ascend_inference")
    for name in HOSTS:
        assert address_of(node(name)) in rules
    ip = address_of(host)
    # Every port Ray listens on for the network (random ones included) refuses a non-member.
    listening = {int(line.split()[3].rsplit(":", 1)[1]) for line in host.check_output("ss -ltnH").splitlines()
                 if not line.split()[3].startswith(("127.", "[::1]"))}
    assert listening, "Ray listens on no port"
    for port in sorted(listening):
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection((ip, port), timeout=5)


def test_firewall_admits_members_and_the_routers_port_only():
    # The head runs the model's router (port 8080 by default); the API port (8000) is members-only: vLLM answers
    # /invocations and others there without its key (docs/security.md). Stand-ins listen on both.
    host = node(HEAD)
    ip = address_of(host)
    probe = "python3 -c 'import socket; socket.create_connection((\"%s\", 6379), timeout=5)'" % ip
    assert node("ray-worker1").run(probe).rc == 0, "a member must reach the head"
    for port in (8000, 8080):
        host.check_output("systemd-run --unit=probe-%d python3 -m http.server %d" % (port, port))
    try:
        deadline = time.time() + 20
        while True:
            try:
                socket.create_connection((ip, 8080), timeout=5).close()
                break
            except OSError:
                assert time.time() < deadline, "the router's port must stay open to everyone"
                time.sleep(1)
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection((ip, 8000), timeout=5)
        assert node("ray-worker1").run(probe.replace("6379", "8000")).rc == 0, "a member must reach the API port"
    finally:
        host.run("systemctl stop probe-8000.service probe-8080.service")
