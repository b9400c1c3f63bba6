"""bench/report.py: the hand-run baseline script, the recap parser and the ratios."""

import json
import os
import shlex
import subprocess
import sys
from xml.etree import ElementTree

import pytest

from conftest import REPO

sys.path.insert(0, os.path.join(REPO, "bench"))
import report  # noqa: E402


def node(name, ip, head, ray_argv, serve_argv):
    return {"node_ip": ip, "env": {"ASCEND_RT_VISIBLE_DEVICES": "0,1", "GLOO_SOCKET_IFNAME": None},
            "ray_start_argv": ray_argv, "serve_argv": serve_argv,
            "cluster": {"head": head, "node_order": ["h", "w1", "w2"], "api_port": 8000}}


PLANS = {
    "h": node("h", "192.0.2.1", "h", ["ray", "start", "--head", "--port=6379", "--block"],
              ["vllm", "serve", "/m", "--additional-config", '{"a": 1}']),
    "w1": node("w1", "192.0.2.2", "h", ["ray", "start", "--address=192.0.2.1:6379", "--block"], None),
    "w2": node("w2", "192.0.2.3", "h", ["ray", "start", "--address=192.0.2.1:6379", "--block"], None),
}


def test_baseline_is_valid_bash_with_the_seed_steps(tmp_path):
    script = report.baseline_script(PLANS, "eth0", ["-i", "/key"])
    path = tmp_path / "baseline.sh"
    path.write_text(script)
    assert subprocess.run(["bash", "-n", str(path)], check=False).returncode == 0
    lines = script.splitlines()
    # The NIC the plan leaves to detection is filled in; Ray daemonizes (no --block).
    assert "export GLOO_SOCKET_IFNAME=eth0" in script and "--block" not in script
    head = [i for i, line in enumerate(lines) if "192.0.2.1 'source /root/ascend-env.sh && ray start --head" in line]
    workers = [i for i, line in enumerate(lines) if "--address=192.0.2.1:6379" in line]
    assert len(head) == 1 and len(workers) == 2 and all(lines[i].endswith("&") for i in workers)
    assert head[0] < min(workers), "the head starts before the workers"
    # The JSON stays one word through the local shell, ssh's remote shell and bash -c.
    serve = [line for line in lines if "nohup" in line]
    assert len(serve) == 1
    remote = shlex.split(shlex.split(serve[0])[3])
    assert remote[:3] == ["nohup", "bash", "-c"] and remote[4:] == [">", "/root/serve.log", "2>&1", "<", "/dev/null", "&"]
    assert shlex.split(remote[3]) == ["source", "/root/ascend-env.sh", "&&", "exec", "vllm", "serve", "/m",
                                      "--additional-config", '{"a": 1}']
    assert lines[-3].startswith("for _ in $(seq 600); do curl -sf -o /dev/null http://192.0.2.1:8000/health")


RECAP = """
PLAY RECAP *********************************************************************
bench-head                 : ok=97   changed=13   unreachable=0    failed=0    skipped=29   rescued=0    ignored=0
bench-worker-1             : ok=74   changed=0    unreachable=0    failed=0    skipped=33   rescued=0    ignored=0
"""


def test_changed_tasks_from_the_last_recap():
    assert report.changed_tasks("PLAY RECAP\nold : ok=1 changed=5 unreachable=0 failed=0\n" + RECAP) \
        == {"bench-head": 13}
    with pytest.raises(ValueError):
        report.changed_tasks("no recap here")


def test_ratios_and_targets_from_medians():
    samples = {"baseline": {"2": [10.0, 12.0, 11.0], "8": [20.0, 22.0, 21.0]},
               "deploy": {"2": [30.0, 33.0, 36.0], "8": [60.0, 66.0, 63.0]},
               "noop": {"2": [6.0, 6.0, 6.0], "8": [9.0, 9.0, 9.0]},
               "plan": {"256": [4.0, 5.0, 6.0]}}
    found = report.ratios(samples)
    assert found["deploy/baseline@2"] == {"median": 3.0, "min": 3.0}
    assert found["deploy@8/deploy@2"]["median"] == pytest.approx(63 / 33)
    assert found["baseline@8/baseline@2"]["median"] == pytest.approx(21 / 11)
    assert found["noop/deploy@max"]["median"] == pytest.approx(max(6 / 33, 9 / 63))
    assert found["plan@256"] == {"median": 5.0, "min": 4.0}
    table = report.markdown({"date": "d", "commit": "c", "cpus": 2, "reps": 3, "npus_per_node": 2, "image": "i"},
                            samples, json.loads(json.dumps(samples)))
    assert "| 2 | 10.0 / 11.0 / 12.0 | 30.0 / 33.0 / 36.0 | 6.0 / 6.0 / 6.0 | 3.00 (min 3.00) | 0.18 (min 0.20) |" in table
    assert "| plan for 256 nodes within 10 s | 5.00 | yes |" in table
    assert "| deploy within 1.3x of the baseline on 4 nodes | not measured | - |" in table
    assert "| 8 nodes within 1.25x of 2 nodes | 1.91 | no |" in table


def test_the_chart_plots_each_series_median_against_the_node_count():
    samples = {"baseline": {"2": [10.0, 12.0, 11.0], "8": [20.0, 22.0, 21.0]},
               "deploy": {"2": [30.0, 33.0, 36.0], "8": [60.0, 66.0, 63.0]},
               "noop": {"2": [6.0, 6.0, 6.0]}}
    svg = report.chart_svg(samples)
    root = ElementTree.fromstring(svg)
    ns = {"svg": "http://www.w3.org/2000/svg"}
    lines = root.findall("svg:polyline", ns)
    assert len(lines) == 3
    labels = [text.text for text in root.findall("svg:text", ns)]
    # Each point is labelled with its median; x ticks are the node counts, the legend names the series.
    for value in ("33.0", "63.0", "11.0", "21.0", "6.0"):
        assert value in labels, labels
    assert {"2", "8", "nodes (one step each, not to scale)", "deploy.yml", "by hand (baseline)"} <= set(labels)
    # Higher medians are drawn higher up: the 8-node deploy above the 2-node one, both above the baseline.
    deploy, _noop, baseline = [[tuple(map(float, p.split(","))) for p in line.get("points").split()] for line in lines]
    assert deploy[1][1] < deploy[0][1] and deploy[0][1] < baseline[0][1]
    assert deploy[0][0] < deploy[1][0]
