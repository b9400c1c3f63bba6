"""Without a host in ascend_monitor, deploy.yml writes the Prometheus files on the controller for the user's own
Prometheus (monitoring_export_dir, default beside the inventory): the single model's API server is the one engine
target, read through the router's metrics port on the head (the model's router by default), the files pass promtool,
and that target answers from outside the cluster (the scenario opens the metrics port, firewall_open_ports), while
the engine's API port does not."""

import json
import os
import socket
import subprocess
import urllib.error
import urllib.request

import pytest

from serve_checks import INVENTORY, PROJECT, address_of, node

HEAD = "tp-head"
testinfra_hosts = ["podman://" + HEAD]
EXPORT = os.path.join(os.path.dirname(INVENTORY), "prometheus")
PROMTOOL = os.path.join(PROJECT, ".cache", "prometheus", "usr", "bin", "promtool")


def test_the_files_for_your_own_prometheus_are_on_the_controller():
    with open(os.path.join(EXPORT, "targets", "engines.json")) as handle:
        engines = json.load(handle)
    head = address_of(node(HEAD))
    assert engines == [{"targets": ["%s:8404" % head],
                        "labels": {"instance": "default", "model": "qwen3", "role": "serve", "node": HEAD,
                                   "__metrics_path__": "/engines/default/%s/metrics" % HEAD}}]
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
    target = "http://%s:8404/engines/default/%s/metrics" % (head, HEAD)
    with urllib.request.urlopen(target, timeout=10) as answer:
        assert 'vllm:num_requests_running{engine="0",model_name="qwen3"}' in answer.read().decode()
    # Only an engine's /metrics there; and its API port is closed to this machine, which is no member.
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen("http://%s:8404/engines/default/%s/invocations" % (head, HEAD), timeout=10)
    assert refused.value.code == 404
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((head, 8000), timeout=5)
