"""playbooks/collect.yml on the A3 cluster, and each node's bundle replayed on a fresh simulated node
(tests/sim/replay.sh): the replay must detect and find what the live preflight did."""

import json
import os
import subprocess


from serve_checks import INVENTORY, PROJECT, node, playbook

import testinfra.utils.ansible_runner

HOSTS = testinfra.utils.ansible_runner.AnsibleRunner(INVENTORY).get_hosts("all")
testinfra_hosts = ["podman://mp-head"]
KEY, HF_TOKEN = "sim-secret-7f3a9c", "sim-hf-token-52c1e8"
STATE = "/etc/ascend-sim/node.json"


def set_state(host, change):
    """The node's simulated hardware and software with CHANGE applied; returns the state as it was."""
    saved = host.file(STATE).content_string
    state = dict(json.loads(saved), **change)
    host.check_output("cat > %s <<'EOF'\n%s\nEOF\nascend-sim apply" % (STATE, json.dumps(state)))
    return saved


def apply_faults(faults):
    """FAULTS: {host: (state change, shell command or None)}; returns what restores the nodes."""
    saved = {}
    for name, (change, command) in faults.items():
        saved[name] = set_state(node(name), change)
        if command:
            node(name).check_output(command)
    return saved


def restore(saved):
    for name, text in saved.items():
        node(name).check_output("cat > %s <<'EOF'\n%s\nEOF\nascend-sim apply" % (STATE, text))


# What users meet, one per kind, for the live checks to find and the replays to find again. The preflight's own first:
# - mp-worker: die 5 lost its netdetect address, and its engine is vllm-mindspore 0.4.0, not the planned release;
# - mp-head: /dev/davinci3 belongs to root, not to the driver's group the other device files have (the service
#   account could not open it).
# Then, alone (a refused preflight stops the check before the pings), the NPU network's:
# - mp-head: its pings leave from die 0 and lose every packet.
def preflight_faults():
    engine = dict(json.loads(node("mp-worker").file(STATE).content_string)["engine"], version="0.4.0")
    return {"mp-worker": ({"faults": {"5": {"netdetect": False}}, "engine": engine}, None),
            "mp-head": ({}, "chgrp root /dev/davinci3")}


NETWORK_FAULTS = {"mp-head": ({"faults": {"0": {"ping_loss": True}}}, None)}


def live_reports(directory):
    """The read-only preflight and NPU network check on the live nodes, as tests/sim/replay.yml reports them."""
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(PROJECT, "collections"))
    proc = subprocess.run(["ansible-playbook", os.path.join(PROJECT, "tests", "sim", "replay.yml"), "-i", INVENTORY,
                           "-e", "report_dir=%s" % directory], capture_output=True, text=True, timeout=600,
                          check=False, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return dict((host, json.loads((directory / (host + ".json")).read_text())) for host in HOSTS)


def comparable(report):
    """What one node's report says of that node: not the cluster-wide refusal."""
    return dict((k, v) for k, v in report.items() if k != "refused")


def collected_and_replayed(tmp_path):
    """The live reports, and each node's bundle as collected and as replayed."""
    live = tmp_path / "live"
    live.mkdir()
    reports = live_reports(live)
    bundle = tmp_path / "bundle"
    code, out = playbook("collect.yml", "-e", "ascend_bundle_dir=%s" % bundle)
    assert code == 0, out[-3000:]
    assert (tmp_path / "bundle.tar.gz").stat().st_size > 0
    bundles, replays = {}, {}
    for host in HOSTS:
        text = (bundle / (host + ".json")).read_text()
        assert KEY not in text and HF_TOKEN not in text
        bundles[host] = json.loads(text)
        replay = subprocess.run([os.path.join(PROJECT, "tests", "sim", "replay.sh"), str(bundle / (host + ".json"))],
                                capture_output=True, text=True, timeout=600, check=False)
        assert replay.returncode == 0, replay.stderr[-3000:]
        replays[host] = json.loads(replay.stdout)
        assert comparable(replays[host]) == comparable(reports[host]), host
    return reports, bundles


def test_collected_bundles_replay_to_what_the_live_nodes_showed(tmp_path):
    saved = apply_faults(preflight_faults())
    try:
        reports, bundles = collected_and_replayed(tmp_path)
    finally:
        restore(saved)
    for host in HOSTS:
        collected = bundles[host]
        assert collected["format"] == 2 and collected["inventory_hostname"] == host
        assert collected["units"]["ascend-serve.service"] == {
            "kind": "serve", "instance": None,
            "ports": {"port": 8000, "data-parallel-rpc-port": 29550} if host == "mp-head" else {
                "data-parallel-rpc-port": 29550}}
    # What the live A3 nodes showed, and so the replays too: each fault is found where it was made.
    worker, head = reports["mp-worker"], reports["mp-head"]
    assert worker["family"] == "910_93" and worker["devices"] == list(range(16))
    assert worker["chips"][3] == {"card": 1, "chip": 1, "logic": 3, "physical": 3}
    assert worker["cann"] == {"version": "8.0.RC1", "layout": "ascend-toolkit"}
    assert [(f["device"], f["check"], f["found"]) for f in worker["problems"]["npu_network"]] == [
        (5, "netdetect", "netdetect addr: 0.0.0.0")]
    assert [p for p in worker["problems"]["preflight"] if "the installed vllm-mindspore is 0.4.0" in p], worker
    assert [p for p in head["problems"]["preflight"] if "/dev/davinci3 root" in p], head["problems"]


def test_ping_loss_to_a_peer_replays(tmp_path):
    saved = apply_faults(NETWORK_FAULTS)
    try:
        reports, bundles = collected_and_replayed(tmp_path)
    finally:
        restore(saved)
    head = reports["mp-head"]
    # Die 0 pings the worker's first NPU IP and (Atlas A3) its first vNIC over HCCS: both lose everything.
    assert sorted(f["check"].split()[0] for f in head["problems"]["npu_network"]) == ["hccs_ping", "ping"], head
    assert all(f["device"] == 0 and "(mp-worker)" in f["check"] for f in head["problems"]["npu_network"]), head
    assert [t["kind"] for t in bundles["mp-head"]["pings"]] == ["ping", "hccs_ping"]
    assert reports["mp-worker"]["problems"] == {"preflight": [], "npu_network": []}
