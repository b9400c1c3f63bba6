"""Each broken precondition fails with its message and leaves the nodes as they were.

Every run adds a variable to ascend_extra_env: had the run gone through, the
node environment files would have changed.
"""

import hashlib
import json
import os
import subprocess
import time

import pytest
import testinfra
import testinfra.utils.ansible_runner

INVENTORY = os.environ["MOLECULE_INVENTORY_FILE"]
HOSTS = testinfra.utils.ansible_runner.AnsibleRunner(INVENTORY).get_hosts("all")
testinfra_hosts = ["podman://prep-head"]
PROJECT = os.environ.get("MOLECULE_PROJECT_DIRECTORY", os.getcwd())
STATE = "/etc/ascend-sim/node.json"


def node(name):
    return testinfra.get_host("podman://" + name)


def fingerprint():
    """What a run could change, on every node."""
    probe = "hostname; cat /etc/hostname /etc/hosts /etc/ascend-inference/node.env"
    return {name: hashlib.sha256(node(name).check_output(probe).encode()).hexdigest() for name in HOSTS}


def prepare(*extra):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(PROJECT, ".cache", "collections"),
               ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    overrides = {"ascend_extra_env": {"VLLM_LOGGING_LEVEL": "INFO", "ASCEND_PROBE": "would-change"}}
    proc = subprocess.run(["ansible-playbook", os.path.join(PROJECT, "playbooks", "prepare.yml"), "-i", INVENTORY,
                           "-e", json.dumps(overrides)] + list(extra),
                          capture_output=True, text=True, timeout=600, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def hardware(name, **changes):
    """Change a node's simulated hardware; returns a function that restores it."""
    host = node(name)
    saved = host.file(STATE).content_string
    state = dict(json.loads(saved), **changes)
    host.check_output("cat > %s <<'EOF'\n%s\nEOF\nascend-sim apply" % (STATE, json.dumps(state)))
    return lambda: host.check_output("cat > %s <<'EOF'\n%s\nEOF\nascend-sim apply" % (STATE, saved))


@pytest.fixture
def unchanged():
    before = fingerprint()
    yield
    assert fingerprint() == before, "a failed run changed a node"


def test_duplicate_host_names(unchanged):
    code, out = prepare("-e", "ascend_hostname=ascend-node")
    assert code != 0
    assert "ascend_hostname 'ascend-node' is given to several hosts: prep-head, prep-worker1, prep-worker2" in out


def test_wrong_nic(unchanged):
    code, out = prepare("-e", "ascend_nic=lo")
    assert code != 0
    assert "preflight found 3 problem(s); nothing was changed" in out
    for name in HOSTS:
        assert "host %s: ascend_nic lo does not carry ascend_node_ip" % name in out and "(found on: eth0)" in out


def test_cann_version_mismatch(unchanged):
    # An older CANN comes in the older layout: the versions are compared whatever the layout.
    restore = hardware("prep-worker2", cann_version="8.0.RC2", cann_layout="ascend-toolkit")
    try:
        code, out = prepare()
    finally:
        restore()
    assert code != 0
    assert ("CANN versions differ; every node must run the same: prep-head 8.5.0, prep-worker1 8.5.0, "
            "prep-worker2 8.0.RC2") in out


def test_a_chip_without_its_device_file(unchanged):
    restore = hardware("prep-worker1", missing_devices=[2])
    try:
        code, out = prepare()
    finally:
        restore()
    assert code != 0
    assert "preflight found 1 problem(s); nothing was changed" in out
    assert ("host prep-worker1: NPU 2 chip 0 (logic ID 2) has no /dev/davinci2 (physical ID from the logic ID, "
            "as on a host; found /dev/davinci0-1,3)") in out


def test_netdetect_unset_and_a_tls_switch_that_differs(unchanged):
    restore_head = hardware("prep-head", faults={"1": {"netdetect": False}})
    restore_worker = hardware("prep-worker2", tls={"7": 1})
    try:
        code, out = prepare()
    finally:
        restore_head()
        restore_worker()
    assert code != 0
    assert "NPU network check failed (2 failure(s))" in out
    rows = [line.split(None, 3) for line in out.splitlines() if line.startswith("prep-")]
    netdetect = [r for r in rows if r[:3] == ["prep-head", "1", "netdetect"]]
    assert netdetect and netdetect[0][3].endswith("netdetect addr: 0.0.0.0"), out
    # prep-worker2's second chip: logic ID 1, physical ID 7, the number hccn_tool takes.
    tls = [r for r in rows if r[:3] == ["prep-worker2", "7", "tls"]]
    assert tls and "tls switch[0] as on 8 other NPU(s)" in tls[0][3] and tls[0][3].endswith("tls switch[1]"), out


def test_one_npu_link_down(unchanged):
    restore = hardware("prep-worker1", faults={"1": {"link": "DOWN"}})
    try:
        code, out = prepare()
    finally:
        restore()
    assert code != 0
    assert "NPU network check failed (1 failure(s))" in out
    row = [line for line in out.splitlines() if line.startswith("prep-worker1") and " link " in line]
    assert row and "link status: DOWN" in row[0] and " 1 " in row[0], out


def test_npu_ping_failure(unchanged):
    restore = hardware("prep-head", faults={"0": {"ping_loss": True}})
    try:
        code, out = prepare()
    finally:
        restore()
    assert code != 0
    rows = [line for line in out.splitlines() if line.startswith("prep-head") and "ping" in line]
    assert len(rows) == 2, out  # one per other node
    assert all("100.00% packet loss" in row for row in rows)


def test_foreign_port_holder_and_missing_model(unchanged):
    head = node("prep-head")
    # A service that is not the collection's holds the head's API port.
    head.check_output("systemd-run --unit=foreign-api python3 -m http.server 8000")
    try:
        deadline = time.monotonic() + 10
        while not head.run("ss -ltnH 'sport = :8000'").stdout.strip() and time.monotonic() < deadline:
            time.sleep(0.2)
        code, out = prepare("-e", "ascend_model=/models/absent")
    finally:
        head.run("systemctl stop foreign-api")
    assert code != 0
    assert "host prep-head: ascend_api_port 8000 is in use by python3 (pid " in out, out
    for name in HOSTS:
        assert "host %s: ascend_model /models/absent does not exist or holds no file" % name in out
