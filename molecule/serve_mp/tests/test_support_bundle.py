"""playbooks/collect.yml on the A3 cluster, and each node's bundle replayed on a fresh simulated node
(tests/sim/replay.sh): the replay must detect and find what the live preflight did."""

import json
import os
import subprocess

import pytest

from serve_checks import INVENTORY, PROJECT, node, playbook

import testinfra.utils.ansible_runner

HOSTS = testinfra.utils.ansible_runner.AnsibleRunner(INVENTORY).get_hosts("all")
testinfra_hosts = ["podman://mp-head"]
KEY, HF_TOKEN = "sim-secret-7f3a9c", "sim-hf-token-52c1e8"
STATE = "/etc/ascend-sim/node.json"
# Pings reach other nodes; a replayed node is alone.
CROSS_NODE = ("ping", "hccs_ping")


@pytest.fixture(scope="module")
def faulty_die():
    """Die 5 of mp-worker loses its netdetect address, so that there is a problem to find as well."""
    worker = node("mp-worker")
    saved = worker.file(STATE).content_string
    state = dict(json.loads(saved), faults={"5": {"netdetect": False}})
    worker.check_output("cat > %s <<'EOF'\n%s\nEOF\nascend-sim apply" % (STATE, json.dumps(state)))
    yield
    worker.check_output("cat > %s <<'EOF'\n%s\nEOF\nascend-sim apply" % (STATE, saved))


def live_reports(directory):
    """The read-only preflight and NPU network check on the live nodes, as tests/sim/replay.yml reports them."""
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(PROJECT, "collections"))
    proc = subprocess.run(["ansible-playbook", os.path.join(PROJECT, "tests", "sim", "replay.yml"), "-i", INVENTORY,
                           "-e", "report_dir=%s" % directory], capture_output=True, text=True, timeout=600,
                          check=False, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return dict((host, json.loads((directory / (host + ".json")).read_text())) for host in HOSTS)


def comparable(report):
    """What one node's report says of that node: not its pings, and not the cluster-wide refusal."""
    found = dict((k, v) for k, v in report.items() if k != "refused")
    found["problems"] = dict(report["problems"], npu_network=[
        f for f in report["problems"]["npu_network"] if not f["check"].startswith(CROSS_NODE)])
    return found


def test_collected_bundles_replay_to_what_the_live_nodes_showed(tmp_path, faulty_die):
    live = tmp_path / "live"
    live.mkdir()
    reports = live_reports(live)
    bundle = tmp_path / "bundle"
    code, out = playbook("collect.yml", "-e", "ascend_bundle_dir=%s" % bundle)
    assert code == 0, out[-3000:]
    assert (tmp_path / "bundle.tar.gz").stat().st_size > 0
    for host in HOSTS:
        text = (bundle / (host + ".json")).read_text()
        assert KEY not in text and HF_TOKEN not in text
        collected = json.loads(text)
        assert collected["format"] == 1 and collected["inventory_hostname"] == host
        replay = subprocess.run([os.path.join(PROJECT, "tests", "sim", "replay.sh"), str(bundle / (host + ".json"))],
                                capture_output=True, text=True, timeout=600, check=False)
        assert replay.returncode == 0, replay.stderr[-3000:]
        replayed = json.loads(replay.stdout)
        assert comparable(replayed) == comparable(reports[host]), host
    # What the live A3 nodes showed, and so the replays too.
    worker = reports["mp-worker"]
    assert worker["family"] == "910_93" and worker["devices"] == list(range(16))
    assert worker["chips"][3] == {"card": 1, "chip": 1, "logic": 3, "physical": 3}
    assert worker["cann"] == {"version": "8.0.RC1", "layout": "ascend-toolkit"}
    assert [(f["device"], f["check"], f["found"]) for f in worker["problems"]["npu_network"]] == [
        (5, "netdetect", "netdetect addr: 0.0.0.0")]
    assert reports["mp-head"]["problems"] == {"preflight": [], "npu_network": []}
    assert "mp-worker            5      netdetect" in reports["mp-head"]["refused"]
