"""bench/report.py: the hand-run baseline script, the PLAY RECAP parsers, the ratios, the targets
and the report."""

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


# The whole output of a real ansible-playbook run (ansible-core 2.19.14, the default callback with the
# collection's ansible.cfg: callback_result_format = yaml), of this playbook:
#   ANSIBLE_NOCOLOR=1 ANSIBLE_CONFIG=ansible.cfg .venv/bin/ansible-playbook -i 'node-a,node-b,' -c local \
#       -e ansible_python_interpreter=.venv/bin/python play.yml
#   - hosts: all
#     gather_facts: false
#     tasks:
#       - name: ok on both
#         ansible.builtin.debug:
#           msg: hi
#       - name: changed on node-a, skipped on node-b
#         ansible.builtin.command: "true"
#         when: inventory_hostname == 'node-a'
#       - name: skipped on both
#         ansible.builtin.debug:
#           msg: never
#         when: false
#       - name: failure ignored on node-b
#         ansible.builtin.command: "false"
#         when: inventory_hostname == 'node-b'
#         ignore_errors: true
#       - name: rescued on node-a
#         when: inventory_hostname == 'node-a'
#         block:
#           - name: fails
#             ansible.builtin.command: "false"
#         rescue:
#           - name: rescue
#             ansible.builtin.debug:
#               msg: rescued
#       - name: node-b stops here
#         ansible.builtin.meta: end_host
#         when: inventory_hostname == 'node-b'
#       - name: only node-a gets here
#         ansible.builtin.debug:
#           msg: last
# Trailing blanks are kept as \x20.
REAL_RUN = """
PLAY [all] *********************************************************************

TASK [ok on both] **************************************************************
ok: [node-a] =>\x20
    msg: hi
ok: [node-b] =>\x20
    msg: hi

TASK [changed on node-a, skipped on node-b] ************************************
skipping: [node-b]
changed: [node-a]

TASK [skipped on both] *********************************************************
skipping: [node-a]
skipping: [node-b]

TASK [failure ignored on node-b] ***********************************************
skipping: [node-a]
[ERROR]: Task failed: Module failed: non-zero return code
Origin: /tmp/recap/play.yml:14:7

12         msg: never
13       when: false
14     - name: failure ignored on node-b
         ^ column 7

fatal: [node-b]: FAILED! =>\x20
    changed: true
    cmd:
    - 'false'
    delta: '0:00:00.003713'
    end: '2026-12-03 04:57:19.001829'
    msg: non-zero return code
    rc: 1
    start: '2026-12-03 04:57:18.998116'
    stderr: ''
    stderr_lines: <omitted>
    stdout: ''
    stdout_lines: <omitted>
...ignoring

TASK [fails] *******************************************************************
skipping: [node-b]
[ERROR]: Task failed: Module failed: non-zero return code
Origin: /tmp/recap/play.yml:21:11

19       when: inventory_hostname == 'node-a'
20       block:
21         - name: fails
             ^ column 11

fatal: [node-a]: FAILED! =>\x20
    changed: true
    cmd:
    - 'false'
    delta: '0:00:00.003316'
    end: '2026-12-03 04:57:19.420114'
    msg: non-zero return code
    rc: 1
    start: '2026-12-03 04:57:19.416798'
    stderr: ''
    stderr_lines: <omitted>
    stdout: ''
    stdout_lines: <omitted>

TASK [rescue] ******************************************************************
ok: [node-a] =>\x20
    msg: rescued

TASK [node-b stops here] *******************************************************
skipping: [node-a]

TASK [node-b stops here] *******************************************************

TASK [only node-a gets here] ***************************************************
ok: [node-a] =>\x20
    msg: last

PLAY RECAP *********************************************************************
node-a                     : ok=4    changed=1    unreachable=0    failed=0    skipped=2    rescued=1    ignored=0  \x20
node-b                     : ok=2    changed=1    unreachable=0    failed=0    skipped=3    rescued=0    ignored=1  \x20

"""


def test_recap_and_tasks_per_node_from_a_real_run():
    assert report.recap(REAL_RUN) == {
        "node-a": {"ok": 4, "changed": 1, "unreachable": 0, "failed": 0, "skipped": 2, "rescued": 1, "ignored": 0},
        "node-b": {"ok": 2, "changed": 1, "unreachable": 0, "failed": 0, "skipped": 3, "rescued": 0, "ignored": 1}}
    # node-a: 4 ok + 2 skipped = 6 tasks (the failed task its rescue caught counts as rescued, not ok),
    # node-b: 2 + 3 = 5 (it ended early); the mean is 5.5.
    assert report.tasks_per_node(REAL_RUN) == 5.5
    assert report.changed_tasks(REAL_RUN) == {"node-a": 1, "node-b": 1}
    # Only the last PLAY RECAP counts.
    earlier = "PLAY RECAP ***\nnode-a : ok=50 changed=0 unreachable=0 failed=0 skipped=50 rescued=0 ignored=0\n"
    assert report.tasks_per_node(earlier + REAL_RUN) == 5.5
    # bench-head 97 + 29 = 126, bench-worker-1 74 + 33 = 107: 116.5.
    assert report.tasks_per_node(RECAP) == 116.5
    with pytest.raises(ValueError):
        report.tasks_per_node("PLAY RECAP ***\n\n")


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
    # no-op / baseline at 2 nodes: 6 / 11 and 6 / 10 (the minima).
    assert "| 2 | 10.0 / 11.0 / 12.0 | 30.0 / 33.0 / 36.0 | 6.0 / 6.0 / 6.0 | 3.00 (min 3.00) | 0.55 (min 0.60) " \
        "| 0.18 (min 0.20) |" in table
    assert "| plan for 256 nodes within 10 s | 5.00 | yes |" in table
    # deploy / baseline at 8 nodes: 63 / 21; 4 nodes was not measured.
    assert "| deploy at most 2.0x the baseline at 4 and 8 nodes | 3.00 (at 8 nodes; 4 not measured) | no |" in table
    # The CPU seconds are the samples here: 33 / 2 = 16.5 per node at 2 nodes, 63 / 8 at 8.
    assert "| controller CPU at most 4.5 CPU-seconds per node per deploy at 2 nodes | 16.50 (at 2 nodes) | no |" in table
    assert "| controller CPU at most 2.5 CPU-seconds per node per deploy at 8 and 16 nodes | 7.88 " \
        "(at 8 nodes; 16 not measured) | no |" in table
    assert "Mitogen" not in table


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
    assert {"2", "8", "nodes (log2 scale)", "deploy.yml", "by hand (baseline)"} <= set(labels)
    # Higher medians are drawn higher up: the 8-node deploy above the 2-node one, both above the baseline.
    deploy, _noop, baseline = [[tuple(map(float, p.split(","))) for p in line.get("points").split()] for line in lines]
    assert deploy[1][1] < deploy[0][1] and deploy[0][1] < baseline[0][1]
    assert deploy[0][0] < deploy[1][0]


META = {"date": "d", "commit": "c", "cpus": 2, "reps": 3, "npus_per_node": 2, "image": "i"}


def three(median):
    """Three samples whose median is the given one (and whose minimum is one less)."""
    return [median + 2.0, median - 1.0, float(median)]


def issue_samples():
    """Medians at 2, 4, 8 and 16 nodes that meet every target, some of them just."""
    medians = {"baseline": {2: 10, 4: 12, 8: 20, 16: 24},
               "deploy": {2: 18, 4: 24, 8: 36, 16: 50},
               "noop": {2: 11, 4: 14.4, 8: 22, 16: 36}}
    samples = {kind: {str(size): three(value) for size, value in by_size.items()} for kind, by_size in medians.items()}
    samples["plan"] = {"256": [4.0, 5.0, 6.0]}
    cpu = {"deploy": {"2": three(9), "4": three(10), "8": three(20), "16": three(32)}}
    tasks = {"deploy": {"2": three(34), "4": three(33)}, "noop": {"2": three(40), "4": three(31)}}
    return samples, cpu, tasks


def by_label(rows):
    return dict((label, (value, detail, met)) for label, value, detail, met in rows)


TASKS = "at most 40 tasks per node, deploy and no-op (every size)"
NOOP_4 = "no-op deploy at most 1.2x the baseline at 4 nodes"
NOOP_16 = "no-op deploy at most 1.5x the baseline at 16 nodes"
DEPLOY = "deploy at most 2.0x the baseline at 4 and 8 nodes"
CPU_LARGE = "controller CPU at most 2.5 CPU-seconds per node per deploy at 8 and 16 nodes"
CPU_4 = "controller CPU at most 3.5 CPU-seconds per node per deploy at 4 nodes"
CPU_2 = "controller CPU at most 4.5 CPU-seconds per node per deploy at 2 nodes"
PLAN = "plan for 256 nodes within 10 s"


def test_targets_met():
    samples, cpu, tasks = issue_samples()
    rows = report.targets(samples, cpu, tasks)
    assert [row[0] for row in rows] == [TASKS, NOOP_4, NOOP_16, DEPLOY, CPU_LARGE, CPU_4, CPU_2, PLAN]
    found = by_label(rows)
    # The no-op at 2 nodes is just met.
    assert found[TASKS] == (40.0, "largest: no-op at 2 nodes", True)
    # 14.4/12 = 1.2 at 4 nodes (just), 36/24 = 1.5 at 16 (just).
    assert found[NOOP_4][0] == pytest.approx(1.2) and found[NOOP_4][1:] == ("at 4 nodes", True)
    assert found[NOOP_16] == (1.5, "at 16 nodes", True)
    # deploy / baseline: 24/12 = 2.0 at 4 (just), 36/20 = 1.8 at 8.
    assert found[DEPLOY] == (2.0, "largest at 4 nodes", True)
    # CPU per node: 20/8 = 2.5 (just), 32/16 = 2.0; 10/4 = 2.5; 9/2 = 4.5 (just).
    assert found[CPU_LARGE] == (2.5, "largest at 8 nodes", True)
    assert found[CPU_4] == (2.5, "at 4 nodes", True) and found[CPU_2] == (4.5, "at 2 nodes", True)
    assert found[PLAN] == (5.0, "", True)
    table = report.markdown(META, samples, cpu, tasks)
    assert "| %s | 1.20 (at 4 nodes) | yes |" % NOOP_4 in table
    assert "| %s | 2.00 (largest at 4 nodes) | yes |" % DEPLOY in table
    assert "| %s | 40.00 (largest: no-op at 2 nodes) | yes |" % TASKS in table


def test_targets_not_met():
    samples, cpu, tasks = issue_samples()
    samples["noop"]["16"] = three(40)      # 40/24 at 16 nodes
    samples["deploy"]["8"] = three(44)     # 44/20 = 2.2 at 8 nodes
    cpu["deploy"]["16"] = three(48)        # 48/16 = 3 CPU seconds per node
    tasks["deploy"]["4"] = three(41)
    samples["plan"]["256"] = [11.0, 12.0, 13.0]
    found = by_label(report.targets(samples, cpu, tasks))
    assert found[TASKS] == (41.0, "largest: deploy at 4 nodes", False)
    assert found[NOOP_16][0] == pytest.approx(40 / 24) and found[NOOP_16][2] is False
    assert found[DEPLOY][0] == pytest.approx(2.2) and found[DEPLOY][1:] == ("largest at 8 nodes", False)
    assert found[CPU_LARGE] == (3.0, "largest at 16 nodes", False)
    assert found[PLAN] == (12.0, "", False)
    table = report.markdown(META, samples, cpu, tasks)
    assert "| %s | 3.00 (largest at 16 nodes) | no |" % CPU_LARGE in table
    assert "| %s | 12.00 | no |" % PLAN in table


def test_targets_not_measured():
    # One size, no CPU seconds, no tasks, no plan.yml: nothing to judge but what 2 nodes measure.
    samples = {"baseline": {"2": three(10)}, "deploy": {"2": three(12)}, "noop": {"2": three(8)}}
    rows = report.targets(samples)
    assert [(row[1], row[3]) for row in rows] == [(None, None)] * 8
    table = report.markdown(META, samples)
    for label in (TASKS, NOOP_4, NOOP_16, DEPLOY, CPU_LARGE, CPU_4, CPU_2, PLAN):
        assert "| %s | - | not measured |" % label in table
    # Some of the sizes: judged on those, the others named.
    samples = {kind: {"2": three(10), "4": three(value)} for kind, value in (("baseline", 12), ("deploy", 15), ("noop", 9))}
    found = by_label(report.targets(samples))
    assert found[NOOP_4] == (0.75, "at 4 nodes", True)
    assert found[DEPLOY] == (1.25, "at 4 nodes; 8 not measured", True)
    assert found[CPU_LARGE] == (None, "", None)


def test_value_labels_of_one_node_count_are_moved_apart():
    column = report.spread([[100.0, 1.0, "a"], [104.0, 2.0, "b"], [160.0, 3.0, "c"]], 13, 300)
    assert [label[0] for label in column] == [100.0, 113.0, 160.0]
    # Near the bottom, the whole column moves up rather than below the plot.
    assert [label[0] for label in report.spread([[295.0, 1, "a"], [296.0, 2, "b"]], 13, 300)] == [287.0, 300.0]
    samples = {"baseline": {"2": three(20)}, "deploy": {"2": three(21)}, "noop": {"2": three(20.5)}}
    root = ElementTree.fromstring(report.chart_svg(samples))
    ns = {"svg": "http://www.w3.org/2000/svg"}
    heights = sorted(float(t.get("y")) for t in root.findall("svg:text", ns) if t.text in ("20.0", "21.0", "20.5"))
    assert len(heights) == 3 and all(b - a >= 13 for a, b in zip(heights, heights[1:]))


def test_per_node_columns_and_mitogen_only_with_samples():
    samples = {"baseline": {"2": three(10), "4": three(12)}, "deploy": {"2": three(30), "4": three(40)},
               "noop": {"2": three(20), "4": three(24)}}
    cpu = {"baseline": {"2": three(1), "4": three(2)}, "deploy": {"2": three(9), "4": three(10)},
           "noop": {"2": three(7), "4": three(8)}}
    tasks = {"deploy": {"2": [120.0, 121.0, 120.5], "4": [110.0, 110.0, 111.0]},
             "noop": {"2": [118.0, 118.0, 118.0], "4": [107.5, 107.5, 107.5]}}
    table = report.markdown(META, samples, cpu, tasks)
    assert "Mitogen" not in table
    assert "| nodes | deploy CPU (s/node) | no-op deploy CPU (s/node) | deploy tasks/node | no-op deploy tasks/node |" in table
    # 9/2 = 4.5 and 7/2 = 3.5 CPU seconds per node; tasks: medians 120.5 and 118.
    assert "| 2 | 4.50 | 3.50 | 120.5 | 118.0 |" in table
    assert "| 4 | 2.50 | 2.00 | 110.0 | 107.5 |" in table
    assert len(ElementTree.fromstring(report.chart_svg(samples)).findall("{http://www.w3.org/2000/svg}polyline")) == 3

    samples.update(deploy_mitogen={"2": three(15), "4": [19.0, 21.0, 20.0]}, noop_mitogen={"2": three(6), "4": three(8)})
    cpu.update(deploy_mitogen={"2": three(5), "4": three(6)}, noop_mitogen={"2": three(3), "4": three(4)})
    tasks.update(deploy_mitogen={"2": three(120.5), "4": three(110)}, noop_mitogen={"2": three(118), "4": three(107.5)})
    table = report.markdown(dict(META, mitogen="0.3.29"), samples, cpu, tasks)
    assert "with Mitogen 0.3.29's strategy `mitogen_linear`" in table
    assert "| nodes | baseline (s) | deploy (s) | no-op deploy (s) | deploy, Mitogen (s) | no-op, Mitogen (s) " \
        "| deploy / baseline | no-op / baseline | no-op / deploy |" in table
    # 4 nodes: 40/12, 24/12, 24/40.
    assert "| 4 | 11.0 / 12.0 / 14.0 | 39.0 / 40.0 / 42.0 | 23.0 / 24.0 / 26.0 | 19.0 / 20.0 / 21.0 | 7.0 / 8.0 / 10.0 " \
        "| 3.33 (min 3.55) | 2.00 (min 2.09) | 0.60 (min 0.59) |" in table
    assert "| nodes | baseline | deploy | no-op deploy | deploy, Mitogen | no-op, Mitogen |" in table
    assert "| 2 | 1.0 | 9.0 | 7.0 | 5.0 | 3.0 |" in table
    # Mitogen per node at 2 nodes: 5/2, 3/2 CPU seconds.
    assert "| 2 | 4.50 | 3.50 | 2.50 | 1.50 | 120.5 | 118.0 | 120.5 | 118.0 |" in table
    assert len(ElementTree.fromstring(report.chart_svg(samples)).findall("{http://www.w3.org/2000/svg}polyline")) == 5
    # Only deploy_mitogen measured: both Mitogen columns, the missing one as "-".
    del samples["noop_mitogen"]
    assert "| 2 | 9.0 / 10.0 / 12.0 | 29.0 / 30.0 / 32.0 | 19.0 / 20.0 / 22.0 | 14.0 / 15.0 / 17.0 | - |" \
        in report.markdown(META, samples)


def test_results_round_trip_and_old_results_json(tmp_path):
    results = report.Results(str(tmp_path), dict(META, mitogen=None))
    results.add(2, "deploy", 30.004, cpu=9.0, changed={"bench-head": 3}, tasks=120.333)
    results.add(2, "noop", 20.0, cpu=7.0, changed={}, tasks=118.0)
    results.save()
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["seconds"]["deploy"] == {"2": [30.0]}
    assert data["tasks_per_node"] == {"deploy": {"2": [120.33]}, "noop": {"2": [118.0]}}
    assert data["changed"]["deploy"] == {"2": [{"bench-head": 3}]}
    # A results.json from before tasks per node and Mitogen: the report leaves them out.
    old = {"meta": META, "seconds": {"baseline": {"2": three(10)}, "deploy": {"2": three(30)}, "noop": {"2": three(20)}},
           "cpu_seconds": {"baseline": {"2": three(1)}, "deploy": {"2": three(9)}, "noop": {"2": three(7)}},
           "changed": {"deploy": {"2": [{"bench-head": 3}] * 3}}, "ratios": {}}
    (tmp_path / "results.json").write_text(json.dumps(old))
    report.Results.load(str(tmp_path)).write_report()
    table = (tmp_path / "results.md").read_text()
    assert "| 2 | 9.0 / 10.0 / 12.0 | 29.0 / 30.0 / 32.0 | 19.0 / 20.0 / 22.0 | 3.00 (min 3.22) | 2.00 (min 2.11) " \
        "| 0.67 (min 0.66) |" in table
    assert "| nodes | deploy CPU (s/node) | no-op deploy CPU (s/node) |" in table and "| 2 | 4.50 | 3.50 |" in table
    assert "tasks/node" not in table and "Mitogen" not in table
    assert len(ElementTree.fromstring((tmp_path / "results.svg").read_text()).findall(
        "{http://www.w3.org/2000/svg}polyline")) == 3


def test_projection_to_128_nodes_from_the_medians():
    # 2 nodes: 30 s for 120 tasks, 0.25 s a task. 4 nodes (the largest): 10 CPU-s, 2.5 a node, 110 tasks.
    samples = {"baseline": {"2": three(10), "4": three(12)}, "deploy": {"2": three(30), "4": three(40)}}
    cpu = {"deploy": {"2": three(9), "4": three(10)}}
    tasks = {"deploy": {"2": [120.0, 120.0, 120.0], "4": [110.0, 110.0, 110.0]}}
    found = report.projection(samples, cpu, tasks, nodes=128, cores=(2, 16), forks=(20, 128))
    assert (found["from"], found["cpu_per_node"], found["cpu_total"], found["tasks"], found["task_seconds"]) == \
        ((2, 4), 2.5, 320.0, 110.0, 0.25)
    # CPU bound 320/2 = 160 s and 320/16 = 20 s; latency bound 110 x 0.25 = 27.5 s a round,
    # 7 rounds of 20 forks (192.5 s) or 1 of 128.
    assert found["wall"] == {(2, 20): 192.5, (2, 128): 160.0, (16, 20): 192.5, (16, 128): 27.5}
    table = report.markdown(META, samples, cpu, tasks)
    assert "## Projection to 128 nodes (arithmetic from the medians above, not a run)" in table
    assert "| controller cores | forks 20 | forks 64 | forks 128 |" in table
    # Default cores and forks: 8 cores, 64 forks: max(320/8 = 40, 27.5 x 2 = 55).
    assert "| 8 | 192 s | 55 s | 40 s |" in table
    # Without task counts (older results.json files) there is nothing to project from.
    assert report.projection(samples, cpu, None) is None and "Projection" not in report.markdown(META, samples, cpu)


def test_the_nodes_cpu_and_the_floor_it_sets():
    samples = {"baseline": {"4": three(12)}, "deploy": {"4": three(28)}, "noop": {"4": three(16)}}
    cpu = {"baseline": {"4": three(0.4)}, "deploy": {"4": three(9)}, "noop": {"4": three(8)}}
    node_cpu = {"baseline": {"4": three(10)}, "deploy": {"4": three(30)}, "noop": {"4": three(20)}}
    table = report.markdown(META, samples, cpu, None, node_cpu)
    assert "| nodes | baseline, nodes | deploy, nodes | no-op deploy, nodes | baseline, floor (s) | deploy, floor (s) " \
        "| no-op deploy, floor (s) |" in table
    # (controller + nodes) / 2 CPUs: (9 + 30) / 2 for the deploy, (8 + 20) / 2 for the no-op.
    assert "| 4 | 10.0 | 30.0 | 20.0 | 5.2 | 19.5 | 14.0 |" in table
    assert "nodes, floor" not in report.markdown(META, samples, cpu)
