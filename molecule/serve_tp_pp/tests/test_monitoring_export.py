"""Without a host in ascend_monitor, deploy.yml writes the Prometheus files on the controller for the user's own
Prometheus (monitoring_export_dir, default beside the inventory): the single model's API server is the one engine
target, the files pass promtool, and that target's /metrics answers from outside the cluster (no router: the API
port, and /metrics on it, are open to everyone, as docs/monitoring.md says)."""

import json
import os
import subprocess
import urllib.request

from serve_checks import INVENTORY, PROJECT, address_of, node

HEAD = "tp-head"
testinfra_hosts = ["podman://" + HEAD]
EXPORT = os.path.join(os.path.dirname(INVENTORY), "prometheus")
PROMTOOL = os.path.join(PROJECT, ".cache", "prometheus", "usr", "bin", "promtool")


def test_the_files_for_your_own_prometheus_are_on_the_controller():
    with open(os.path.join(EXPORT, "targets", "engines.json")) as handle:
        engines = json.load(handle)
    head = address_of(node(HEAD))
    assert engines == [{"targets": ["%s:8000" % head],
                        "labels": {"instance": "default", "model": "qwen3", "role": "serve", "node": HEAD}}]
    with open(os.path.join(EXPORT, "targets", "npu.json")) as handle:
        assert json.load(handle) == []  # ascend_npu_exporter is off here
    for name in ("rules/ascend-inference.rules.yml", "grafana/ascend-inference.json",
                 "grafana/ascend-inference-provisioning.yml"):
        assert os.path.isfile(os.path.join(EXPORT, name)), name
    # Written as the user who runs the playbook, not root's alone.
    assert os.stat(os.path.join(EXPORT, "prometheus.yml")).st_uid == os.geteuid()
    checked = subprocess.run([PROMTOOL, "check", "config", os.path.join(EXPORT, "prometheus.yml")],
                             capture_output=True, text=True, timeout=60, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    with urllib.request.urlopen("http://%s:8000/metrics" % head, timeout=10) as answer:
        assert 'vllm:num_requests_running{engine="0",model_name="qwen3"}' in answer.read().decode()
