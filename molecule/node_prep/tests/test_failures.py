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


def prepare(*extra, cann=False):
    """prepare.yml; the checks' failures are this file's subject, so the cann role (installed already, tested in
    test_cann.py) is skipped unless ``cann``, and the model role (tested in test_model.py) always."""
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(PROJECT, "collections"),
               ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    overrides = {"ascend_extra_env": {"VLLM_LOGGING_LEVEL": "INFO", "ASCEND_PROBE": "would-change"}}
    proc = subprocess.run(["ansible-playbook", os.path.join(PROJECT, "playbooks", "prepare.yml"), "-i", INVENTORY,
                           "-e", json.dumps(overrides), "--skip-tags", "model" if cann else "cann,model"] + list(extra),
                          capture_output=True, text=True, timeout=600, check=False, env=env)
    return proc.returncode, proc.stdout + proc.stderr


def table(out):
    """The rows of the NPU network failure table: [host, device, check, rest] (ansible prints the table
    twice: once each)."""
    rows = [line.strip().split(None, 3) for line in out.splitlines() if line.strip().startswith("prep-")]
    rows = [r for r in rows if len(r) == 4 and (r[1].isdigit() or r[1] == "all")]
    return [r for i, r in enumerate(rows) if r[:3] not in [seen[:3] for seen in rows[:i]]]


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


def test_wrong_nic_and_a_failing_npu_smi(unchanged):
    restore = hardware("prep-worker1", fail={"npu-smi": "dcmi module initialize failed. ret is -8005"})
    try:
        code, out = prepare("-e", "ascend_nic=lo")
    finally:
        restore()
    assert code != 0
    assert "preflight found 4 problem(s); nothing was changed" in out
    for name in HOSTS:
        assert "host %s: ascend_nic lo does not carry ascend_node_ip" % name in out and "(found on: eth0)" in out
    assert "host prep-worker1: npu-smi info -m failed (rc 1): dcmi module initialize failed. ret is -8005" in out, out[-3000:]


def test_cann_version_mismatch(unchanged):
    # An older CANN comes in the older layout: the versions are compared whatever the layout. The sim
    # replaces the node's CANN trees, so they are kept aside and put back.
    worker = node("prep-worker2")
    worker.check_output("tar -C /usr/local/Ascend -cf /tmp/ascend-cann.tar cann cann-8.5.0")
    restore = hardware("prep-worker2", cann_version="8.0.RC2", cann_layout="ascend-toolkit")
    try:
        code, out = prepare()
        cann_code, cann_out = prepare(cann=True)
    finally:
        restore()
        worker.check_output("rm -rf /usr/local/Ascend/ascend-toolkit && tar -C /usr/local/Ascend -xf /tmp/ascend-cann.tar")
    assert code != 0
    assert ("CANN versions differ; every node must run the same: prep-head 8.5.0, prep-worker1 8.5.0, "
            "prep-worker2 8.0.RC2") in out
    # With cann_packages, the cann role stops first: it changes versions on request only.
    assert cann_code != 0
    assert ("prep-worker2: CANN 8.5.0 is not installed: CANN 8.0.RC2 is installed and in use, the packages are "
            "8.5.0; set cann_allow_version_change: true to change the version") in cann_out, cann_out[-3000:]


def test_a_chip_without_its_device_file_and_a_model_that_differs(unchanged):
    restore = hardware("prep-worker1", missing_devices=[2])
    # One more file on one node: the model is not the same everywhere.
    node("prep-worker2").check_output("head -c 1000 /dev/zero > /models/tiny/extra.bin")
    try:
        code, out = prepare()
    finally:
        restore()
        node("prep-worker2").check_output("rm /models/tiny/extra.bin")
    assert code != 0
    assert "preflight found 2 problem(s); nothing was changed" in out
    # The model role recorded the manifest on every node: the file it does not hold is named.
    assert ("host prep-worker2: ascend_model /models/tiny does not match the manifest of the model copied to it "
            "(/etc/ascend-inference/model.manifest.json): 1 not in the manifest (extra.bin)") in out, out[-3000:]
    assert ("host prep-worker1: NPU 2 chip 0 (logic ID 2) has no /dev/davinci2 (physical ID from the logic ID, "
            "as on a host; found /dev/davinci0-1,3)") in out


def test_every_npu_network_failure_in_one_table(unchanged):
    """netdetect unset, a TLS switch that differs, an unhealthy NPU with no LLDP, gateway or IP
    (hccn_tool's answers for these: hardware-samples, through the double), and a node without hccn.conf."""
    bad = {"net_health": "Init", "lldp": False, "gateway": False, "ip": False}
    restore_head = hardware("prep-head", faults={"1": {"netdetect": False}, "2": bad})
    restore_worker = hardware("prep-worker2", tls={"7": 1}, hccn_conf=False)
    try:
        code, out = prepare()
    finally:
        restore_head()
        restore_worker()
    assert code != 0
    rows = table(out)
    failed = {tuple(r[:3]): r[3] for r in rows}
    for check in ("net_health", "lldp", "gateway", "ip"):
        assert ("prep-head", "2", check) in failed, (check, out[-4000:])
    assert "Init" in failed[("prep-head", "2", "net_health")]
    assert failed[("prep-worker2", "all", "hccn.conf")].split()[-1] == "missing", out[-4000:]
    assert "NPU network check failed (%d failure(s))" % len(rows) in out
    netdetect = [r for r in rows if r[:3] == ["prep-head", "1", "netdetect"]]
    assert netdetect and netdetect[0][3].endswith("netdetect addr: 0.0.0.0"), out
    # prep-worker2's second chip: logic ID 1, physical ID 7, the number hccn_tool takes.
    tls = [r for r in rows if r[:3] == ["prep-worker2", "7", "tls"]]
    assert tls and "tls switch[0] as on 8 other NPU(s)" in tls[0][3] and tls[0][3].endswith("tls switch[1]"), out


def test_one_npu_link_down_and_a_node_whose_hccn_tool_fails(unchanged):
    restore = hardware("prep-worker1", faults={"1": {"link": "DOWN"}})
    # No sample shows hccn_tool failing outright: the message is made up; the role must show it per NPU.
    broken = "simulated: hccn_tool cannot reach the driver"
    restore_worker = hardware("prep-worker2", fail={"hccn_tool": broken})
    try:
        code, out = prepare()
    finally:
        restore()
        restore_worker()
    assert code != 0
    row = [line for line in out.splitlines() if line.startswith("prep-worker1") and " link " in line]
    assert row and "link status: DOWN" in row[0] and " 1 " in row[0], out
    worker2 = [r for r in table(out) if r[0] == "prep-worker2"]
    # Both of its NPUs (physical IDs 6 and 7), every query, with the tool's own message.
    assert {r[1] for r in worker2} == {"6", "7"} and all(broken in r[3] for r in worker2), out[-4000:]
    # Nothing else failed: the other nodes' pings to prep-worker2 are not made (it told no NPU IP).
    assert [r for r in table(out) if r[0] != "prep-worker2"] == [row[0].split(None, 3)], out[-4000:]


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
