"""The Prometheus files the monitoring role writes, checked by Prometheus' own promtool (Debian's prometheus package;
tests/run.sh unpacks it and names it in ASCEND_TEST_PROMTOOL): the configuration with its targets (check config),
the rules (check rules), and one promtool unit test per alert, firing where it must and silent where it must not.

The series are named and labelled as the scraped targets give them: vLLM's names per release (fixtures/
vllm_metrics), the labels of the collection's file-based service discovery (monitoring_plan), npu-exporter's
(component/npu-exporter/collector/metrics) and HAProxy 2.6's exporter (haproxy_server_status has one series per
state, as a capture of Debian 12's HAProxy shows)."""

import json
import os
import subprocess
import sys

import pytest
import yaml

from conftest import REPO

PROMTOOL = os.environ.get("ASCEND_TEST_PROMTOOL") or os.path.join(
    REPO, ".cache", "prometheus", "usr", "bin", "promtool")
# Prometheus' scrape interval as the monitoring role sets it by default.
with open(os.path.join(REPO, "roles", "monitoring", "defaults", "main.yml")) as _defaults:
    SCRAPE = yaml.safe_load(_defaults)["monitoring_scrape_interval"]


@pytest.fixture(scope="module")
def collection(collections_root):
    sys.path.insert(0, str(collections_root))
    from ansible_collections.ascend.inference.plugins.module_utils.plan import (
        fleet as instances, monitoring as monitoring_plan, monitoring_rules)
    from ansible_collections.ascend.inference.plugins.plugin_utils.phases import monitoring as phase_monitoring
    return instances, monitoring_plan, monitoring_rules, phase_monitoring


def promtool(*args, cwd=None):
    assert os.access(PROMTOOL, os.X_OK), "promtool not found at %s (tests/run.sh setup unpacks it)" % PROMTOOL
    return subprocess.run([PROMTOOL] + list(args), capture_output=True, text=True, timeout=120, check=False, cwd=cwd)


def fleet_plan(instances_module):
    nodes = [dict(name="n%d" % (i + 1), node_ip="10.0.0.%d" % (i + 1), nic="eth0", npus_per_node=8, head=i == 0)
             for i in range(3)]
    settings = {"engine": "vllm-ascend", "engine_version": "0.23.0", "model": "/models/default", "launcher": "mp"}
    return instances_module.make_fleet_plan(settings, nodes, {
        "chat": {"served_model_name": "qwen", "hosts": ["n1"], "npus_per_host": 4, "tensor_parallel_size": 4},
        "big": {"hosts": ["n2", "n3"], "npus_per_host": 8, "tensor_parallel_size": 8, "data_parallel_size": 2}})


def write_files(tmp_path, collection, thresholds=None):
    """What the monitoring phase writes on a monitoring host, under TMP_PATH; returns the configuration's path."""
    instances, monitoring_plan, _rules, phase_monitoring = collection
    plan = fleet_plan(instances)
    plan["monitoring"] = monitoring_plan.section(plan, {"npu_exporter_enabled": True})[0]
    config = tmp_path / "prometheus.yml"
    settings = {"thresholds": thresholds or {}, "scrape_interval": "15s", "evaluation_interval": "15s"}
    from ansible_collections.ascend.inference.plugins.plugin_utils.phases.node import render  # noqa: E402
    for path, _mode, content, values in phase_monitoring.files(plan, settings, str(tmp_path), str(config)):
        if values is not None:
            # As the node_phase action renders it.
            content = render("monitoring/prometheus.yml.j2", values)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as handle:
            handle.write(content)
    return config, plan


def test_the_configuration_targets_and_rules_pass_promtool(tmp_path, collection):
    config, plan = write_files(tmp_path, collection)
    checked = promtool("check", "config", str(config))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS" in checked.stdout and "rule files found" in checked.stdout, checked.stdout
    rules = promtool("check", "rules", str(tmp_path / "rules" / "ascend-inference.rules.yml"))
    assert rules.returncode == 0 and "SUCCESS: 16 rules found" in rules.stdout, rules.stdout + rules.stderr
    # The targets are file-based service discovery groups Prometheus reads: every engine and exporter is there.
    engines = json.loads((tmp_path / "targets" / "engines.json").read_text())
    assert sorted(g["labels"]["instance"] for g in engines) == ["big", "chat"]
    assert len(json.loads((tmp_path / "targets" / "npu.json").read_text())) == 3


def test_a_broken_rule_is_what_promtool_refuses(tmp_path, collection):
    """The check can fail: a rule with a bad expression is refused."""
    _instances, _plan, rules, _phase = collection
    text = rules.render(None, SCRAPE).replace("npu_chip_info_health_status != 1", "npu_chip_info_health_status !=")
    (tmp_path / "bad.yml").write_text(text)
    checked = promtool("check", "rules", str(tmp_path / "bad.yml"))
    assert checked.returncode != 0 and "AscendNPUUnhealthy" in checked.stdout + checked.stderr


ENGINE = 'job="ascend-engine", instance="%s", model="qwen", role="serve", node="%s"'
ROUTER = 'job="ascend-router", instance="router", role="router", node="n1"'
NPU = 'job="ascend-npu", instance="%s", node="%s", id="%s", model_name="910B1-Ascend-V1", vdie_id="V", ' \
      'pcie_bus_info="0000:81:00.0", namespace="", pod_name="", container_name=""'


def npu_labels(node, npu):
    return {"job": "ascend-npu", "instance": node, "node": node, "id": npu, "model_name": "910B1-Ascend-V1",
            "vdie_id": "V", "pcie_bus_info": "0000:81:00.0"}


def engine_labels(instance, node):
    return {"instance": instance, "model": "qwen", "role": "serve", "node": node}


def annotations(rules, alert, labels, value):
    """The alert's annotations as Prometheus expands them for LABELS and VALUE (the few template forms the rules
    use)."""
    rule = next(r for group in rules.groups(None, SCRAPE) for r in group["rules"] if r.get("alert") == alert)
    found = {}
    for key, text in rule["annotations"].items():
        for name, label in labels.items():
            text = text.replace("{{ $labels.%s }}" % name, label)
        text = text.replace("{{ $value | humanizePercentage }}", "%g%%" % (value * 100))
        text = text.replace("{{ $value | humanizeDuration }}", "%.4gs" % value)
        text = text.replace("{{ $value }}", "%g" % value)
        found[key] = text
    return found


def alert_case(rules, alert, eval_time, firing):
    """[(labels, value)] firing at EVAL_TIME -> promtool's alert_rule_test entry."""
    exp = []
    for labels, value in firing:
        severity = next(r for g in rules.groups(None, SCRAPE) for r in g["rules"] if r.get("alert") == alert)["labels"]
        exp.append({"exp_labels": dict(labels, **severity),
                    "exp_annotations": annotations(rules, alert, labels, value)})
    return {"eval_time": eval_time, "alertname": alert, "exp_alerts": exp}


def test_each_alert_fires_where_it_must_and_not_elsewhere(tmp_path, collection):
    _instances, _plan, rules, _phase = collection
    (tmp_path / "rules.yml").write_text(rules.render(None, SCRAPE))
    chat_down = dict(engine_labels("chat", "n1"), job="ascend-engine")
    unhealthy, link_down = npu_labels("n2", "3"), npu_labels("n3", "5")
    replica = {"job": "ascend-router", "instance": "router", "role": "router", "node": "n1", "proxy": "model-chat",
               "server": "chat", "state": "DOWN"}
    series = [
        # chat's server stops answering after 30 s; big's keeps answering.
        ('up{%s}' % (ENGINE % ("chat", "n1")), "1 1 0x60"),
        ('up{%s}' % (ENGINE % ("big", "n2")), "1x62"),
        # The router marks chat DOWN after 30 s (its /health fails); big stays UP.
        ('haproxy_server_status{%s, proxy="model-chat", server="chat", state="DOWN"}' % ROUTER, "0 0 1x60"),
        ('haproxy_server_status{%s, proxy="model-big", server="big", state="DOWN"}' % ROUTER, "0x62"),
        ('haproxy_server_status{%s, proxy="model-big", server="big", state="MAINT"}' % ROUTER, "0x62"),
        # mid restarted as restart.yml does it (drained, then MAINT while its engine is down, put back once it
        # answers; the states the real_vllm scenario reads from HAProxy while it rolls): its `up` is still the down
        # sample 30 s after it left MAINT, and nothing pages. stuck left MAINT at 60 s and never answered again.
        ('up{%s}' % (ENGINE % ("mid", "n3")), "1 1 0 0 0 0 0 0 0 0 0 0 1x50"),
        ('haproxy_server_status{%s, proxy="model-mid", server="mid", state="MAINT"}' % ROUTER,
         "0 0 1 1 1 1 1 1 1 1 0x52"),
        ('haproxy_server_status{%s, proxy="model-mid", server="mid", state="DOWN"}' % ROUTER, "0x62"),
        ('up{%s}' % (ENGINE % ("stuck", "n3")), "1 1 0x60"),
        ('haproxy_server_status{%s, proxy="model-stuck", server="stuck", state="MAINT"}' % ROUTER, "0 0 1 1 0x58"),
        # NPU 3 of n2 turns unhealthy; NPU 5 of n3 loses its link; the others stay well.
        ('npu_chip_info_health_status{%s}' % (NPU % ("n2", "n2", "3")), "1 1 0x60"),
        ('npu_chip_info_health_status{%s}' % (NPU % ("n2", "n2", "2")), "1x62"),
        ('npu_chip_info_link_status{%s}' % (NPU % ("n3", "n3", "5")), "1 1 0x60"),
        ('npu_chip_info_link_status{%s}' % (NPU % ("n3", "n3", "4")), "1x62"),
        # -1: the exporter could not read the link (hccn_tool failed): unknown is not down.
        ('npu_chip_info_link_status{%s}' % (NPU % ("n3", "n3", "6")), "-1x62"),
        # n3's exporter is down; n2's answers.
        ('up{job="ascend-npu", instance="n3", node="n3"}', "0x62"),
        ('up{job="ascend-npu", instance="n2", node="n2"}', "1x62"),
    ]
    kv = [
        # vLLM 0.23 (kv_cache_usage_perc) at 95 %, vLLM 0.9.1 (gpu_cache_usage_perc) at 95 % and at 50 %.
        ('vllm:kv_cache_usage_perc{%s, engine="0", model_name="qwen"}' % (ENGINE % ("chat", "n1")), "0.95x80"),
        ('vllm:gpu_cache_usage_perc{%s, engine="0", model_name="qwen"}' % (ENGINE % ("old", "n2")), "0.95x80"),
        ('vllm:gpu_cache_usage_perc{%s, engine="0", model_name="qwen"}' % (ENGINE % ("calm", "n3")), "0.5x80"),
        # chat's waiting requests grow by one every 15 s; big's stay at 20 (many, but not growing).
        ('vllm:num_requests_waiting{%s, engine="0", model_name="qwen"}' % (ENGINE % ("chat", "n1")), "0+1x80"),
        ('vllm:num_requests_waiting{%s, engine="0", model_name="qwen"}' % (ENGINE % ("big", "n2")), "20x80"),
    ]
    ttft = []
    for instance, node, slow in (("chat", "n1", True), ("big", "n2", False)):
        labels = ENGINE % (instance, node) + ', engine="0", model_name="qwen"'
        # Ten requests every 15 s: chat's first tokens take 1-10 s, big's under 1 s.
        ttft += [('vllm:time_to_first_token_seconds_bucket{%s, le="1"}' % labels, "0+0x80" if slow else "0+10x80"),
                 ('vllm:time_to_first_token_seconds_bucket{%s, le="10"}' % labels, "0+10x80"),
                 ('vllm:time_to_first_token_seconds_bucket{%s, le="+Inf"}' % labels, "0+10x80")]
    cases = [
        alert_case(rules, "AscendEngineDown", "1m", []),  # down for 30 s: pending, not firing
        alert_case(rules, "AscendEngineDown", "2m", [(chat_down, 0)]),
        # stuck: down and out of maintenance since 60 s, pending once the 45 s window (3 scrapes) passed.
        alert_case(rules, "AscendEngineDown", "3m", [(chat_down, 0),
                                                     (dict(engine_labels("stuck", "n3"), job="ascend-engine"), 0)]),
        alert_case(rules, "AscendEngineNotReady", "1m", []),
        alert_case(rules, "AscendEngineNotReady", "2m", [(replica, 1)]),
        alert_case(rules, "AscendNPUUnhealthy", "1m", []),
        alert_case(rules, "AscendNPUUnhealthy", "2m", [(unhealthy, 0)]),
        alert_case(rules, "AscendNPULinkDown", "1m", []),
        alert_case(rules, "AscendNPULinkDown", "2m", [(link_down, 0)]),
        alert_case(rules, "AscendNPUExporterDown", "30s", []),
        alert_case(rules, "AscendNPUExporterDown", "2m", [({"job": "ascend-npu", "instance": "n3", "node": "n3"}, 0)]),
    ]
    kv_cases = [
        alert_case(rules, "AscendKVCacheFull", "5m", []),
        alert_case(rules, "AscendKVCacheFull", "12m", [(engine_labels("chat", "n1"), 0.95),
                                                       (engine_labels("old", "n2"), 0.95)]),
        alert_case(rules, "AscendRequestsPiling", "5m", []),
        # Above 10 after 150 s, growing; 10 minutes later it fires, at 40 + 12 = 52 waiting.
        alert_case(rules, "AscendRequestsPiling", "13m", [(engine_labels("chat", "n1"), 52)]),
    ]
    ttft_cases = [
        alert_case(rules, "AscendTimeToFirstTokenHigh", "5m", []),
        # p95 of observations spread over (1, 10]: 1 + 9 x 0.95 = 9.55 s.
        alert_case(rules, "AscendTimeToFirstTokenHigh", "17m", [(engine_labels("chat", "n1"), 9.55)]),
    ]
    tests = {"rule_files": ["rules.yml"], "evaluation_interval": "15s", "tests": [
        {"interval": "15s", "input_series": [{"series": s, "values": v} for s, v in series], "alert_rule_test": cases},
        {"interval": "15s", "input_series": [{"series": s, "values": v} for s, v in kv], "alert_rule_test": kv_cases},
        {"interval": "15s", "input_series": [{"series": s, "values": v} for s, v in ttft],
         "alert_rule_test": ttft_cases},
    ]}
    (tmp_path / "tests.yml").write_text(json.dumps(tests, indent=1))
    done = promtool("test", "rules", "tests.yml", cwd=str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    # Every alert of the rule file has a firing and a silent case.
    names = set(r["alert"] for g in rules.groups(None, SCRAPE) for r in g["rules"] if "alert" in r)
    tested = [c for t in tests["tests"] for c in t["alert_rule_test"]]
    assert names == set(c["alertname"] for c in tested if c["exp_alerts"]) == set(
        c["alertname"] for c in tested if not c["exp_alerts"])


def test_a_rolling_restart_pages_no_one_even_with_a_short_for(tmp_path, collection):
    """engine_down_for as short as the real_vllm scenario's (10 s): a replica restarted behind the router, whose
    `up` is still the sample of its down engine one scrape after it left maintenance, never fires; one that stays
    down after maintenance does."""
    _instances, _plan, rules, _phase = collection
    (tmp_path / "rules.yml").write_text(rules.render({"engine_down_for": "10s"}, "15s"))
    series = [
        ('up{%s}' % (ENGINE % ("mid", "n3")), "1 1 0 0 0 0 0 0 0 0 0 0 1x50"),
        ('haproxy_server_status{%s, proxy="model-mid", server="mid", state="MAINT"}' % ROUTER,
         "0 0 1 1 1 1 1 1 1 1 1 0x51"),
        ('up{%s}' % (ENGINE % ("stuck", "n3")), "1 1 0x60"),
        ('haproxy_server_status{%s, proxy="model-stuck", server="stuck", state="MAINT"}' % ROUTER, "0 0 1 1 0x58"),
    ]
    stuck = dict(engine_labels("stuck", "n3"), job="ascend-engine")
    # mid: MAINT until 150 s, its up 0 until the 180 s sample; stuck: out of MAINT at 60 s, still down.
    cases = [alert_case(rules, "AscendEngineDown", "%ds" % at, [(stuck, 0)] if at >= 120 else [])
             for at in (45, 90, 150, 165, 175, 195)]
    tests = {"rule_files": ["rules.yml"], "evaluation_interval": "5s", "tests": [
        {"interval": "15s", "input_series": [{"series": s, "values": v} for s, v in series],
         "alert_rule_test": cases}]}
    (tmp_path / "tests.yml").write_text(json.dumps(tests, indent=1))
    done = promtool("test", "rules", "tests.yml", cwd=str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
