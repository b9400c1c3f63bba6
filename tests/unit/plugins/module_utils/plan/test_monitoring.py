# -*- coding: utf-8 -*-
"""Metrics (module_utils/plan/monitoring and monitoring_rules, plugin_utils/phases/monitoring, the firewall phase's
monitoring hosts): the Prometheus targets from the plan and their labels, the rules' vLLM names checked against the metrics each
supported release defines (engines/fixtures/vllm_metrics, written by tools/extract_vllm_metrics.py from each wheel's
vllm/v1/metrics/loggers.py), and the dashboard shipped with the monitoring role."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import os
import re

import pytest

from ansible_collections.ascend.inference.plugins.module_utils.plan import fleet
from ansible_collections.ascend.inference.plugins.module_utils.plan import monitoring, monitoring_rules, request
from ansible_collections.ascend.inference.plugins.plugin_utils.phases import firewall, monitoring as phase_monitoring
from ansible_collections.ascend.inference.plugins.plugin_utils.phases.phase import Refused

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "engines", "fixtures", "vllm_metrics")
RELEASES = ("0.9.1", "0.11.0", "0.23.0", "0.30.0", "0.32.0", "0.33.0")
DASHBOARD = os.path.join(HERE, "..", "..", "..", "..", "..", "roles", "monitoring", "files",
                         "ascend-inference-dashboard.json")
QWEN = {"model_type": "qwen2", "num_attention_heads": 12, "num_key_value_heads": 12, "num_hidden_layers": 24}


def release(version):
    with open(os.path.join(FIXTURES, "vllm-%s.json" % version)) as handle:
        return json.load(handle)["metrics"]


def nodes(count=3):
    return [dict(name="n%d" % (i + 1), node_ip="10.0.0.%d" % (i + 1), nic="eth0", npus_per_node=8, head=i == 0)
            for i in range(count)]


FLEET = {
    "chat": {"served_model_name": "qwen", "hosts": ["n1"], "npus_per_host": 4, "tensor_parallel_size": 4},
    "embed": {"model": "/models/embed", "hosts": ["n1", "n2"], "devices": {"n1": [4, 5], "n2": [4, 5]},
              "tensor_parallel_size": 2, "data_parallel_size": 2, "api_port": 8001},
    "pd": {"served_model_name": "qwen-pd", "model": "/models/qwen",
           "prefill": {"hosts": ["n2"], "devices": {"n2": [6, 7]}, "tensor_parallel_size": 2},
           "decode": {"hosts": ["n3"], "devices": {"n3": [4, 5]}, "data_parallel_size": 2}},
}


def fleet_plan(instances=None):
    settings = {"engine": "vllm-ascend", "engine_version": "0.23.0", "model": "/models/default", "launcher": "mp"}
    return fleet.make_fleet_plan(settings, nodes(), copy.deepcopy(FLEET if instances is None else instances),
                                 {"pd": QWEN}, pd_proxy_dir="/opt/pd")


def section(plan, **settings):
    found, problems = monitoring.section(plan, settings)
    assert problems == []
    return found


def test_every_api_server_is_a_target_labelled_by_instance_model_role_node_and_rank():
    found = section(fleet_plan(), npu_exporter_enabled=True)
    engines = dict((group["labels"]["instance"], group) for group in found["targets"]["engines"])
    assert sorted(engines) == ["chat", "embed", "pd-decode", "pd-prefill"]
    # Behind the router, through its metrics port at the engine's own path, which it forwards to the API port's
    # /metrics only.
    assert engines["chat"] == {"targets": ["10.0.0.1:8404"],
                               "labels": {"instance": "chat", "model": "qwen", "role": "serve", "node": "n1",
                                          "__metrics_path__": "/engines/chat/n1/metrics"}}
    prefill_port = fleet_plan()["instances"]["pd-prefill"]["cluster"]["api_port"]
    assert [e for e in found["engine_metrics"] if e["path"].startswith("/engines/pd-prefill/")] == [
        {"path": "/engines/pd-prefill/n2/metrics", "address": "10.0.0.2", "port": prefill_port}]
    # DP over two nodes: the head serves the API (its first rank is 0); the headless node is no target.
    assert engines["embed"]["labels"] == {"instance": "embed", "model": "/models/embed", "role": "serve",
                                          "node": "n1", "dp_rank": "0", "__metrics_path__": "/engines/embed/n1/metrics"}
    assert engines["pd-prefill"]["labels"]["role"] == "prefill" and engines["pd-prefill"]["labels"]["node"] == "n2"
    assert engines["pd-decode"]["labels"]["role"] == "decode" and engines["pd-decode"]["labels"]["model"] == "qwen-pd"
    # The router's metrics port on its host, and each node's exporter on its cluster address.
    assert found["targets"]["router"] == [{"targets": ["10.0.0.1:8404"],
                                           "labels": {"instance": "router", "role": "router", "node": "n1"}}]
    exporters = [g["targets"] for g in found["targets"]["npu"]]
    assert exporters == [["10.0.0.1:8082"], ["10.0.0.2:8082"], ["10.0.0.3:8082"]]
    assert found["exporter"]["enabled"] and found["exporter"]["unit"] == "ascend-npu-exporter.service"


def test_removing_an_instance_changes_only_its_targets():
    before = section(fleet_plan())["targets"]
    instances = dict((k, v) for k, v in FLEET.items() if k != "chat")
    after = section(fleet_plan(instances))["targets"]
    # (embed's port is pinned; the pools' ports are the plan's to allocate.)
    assert [g["labels"] for g in before["engines"] if g["labels"]["instance"] != "chat"] == [
        g["labels"] for g in after["engines"]]
    assert [g for g in before["engines"] if g["labels"]["instance"] == "embed"] == [
        g for g in after["engines"] if g["labels"]["instance"] == "embed"]
    assert after["npu"] == [] and before["npu"] == []  # the exporter is off unless asked for


def test_a_single_model_is_one_instance_named_default():
    settings = {"engine": "vllm-ascend", "engine_version": "0.23.0", "model": "/models/qwen", "launcher": "mp",
                "tensor_parallel_size": 8}
    from ansible_collections.ascend.inference.plugins.module_utils.plan.planner import make_plan
    found = section(make_plan(settings, nodes(1)))
    assert found["targets"]["engines"] == [{"targets": ["10.0.0.1:8000"], "labels": {
        "instance": "default", "model": "/models/qwen", "role": "serve", "node": "n1"}}]
    assert found["targets"]["router"] == []


def test_the_exporter_port_may_not_be_one_the_plan_holds():
    found, problems = monitoring.section(fleet_plan(), {"npu_exporter_enabled": True, "npu_exporter_port": 8404})
    assert problems == ["ascend_npu_exporter_port 8404 on n1 is the router's ascend_router_metrics_port"]
    found, problems = monitoring.section(fleet_plan(), {"npu_exporter_port": 0})
    assert problems == ["ascend_npu_exporter_port must be a TCP port (1-65535), found 0"]
    # npu-exporter's own range: it would exit without serving.
    found, problems = monitoring.section(fleet_plan(), {"npu_exporter_enabled": True, "npu_exporter_port": 9100})
    assert problems == []
    found, problems = monitoring.section(fleet_plan(), {"npu_exporter_enabled": True, "npu_exporter_port": 50000})
    assert problems == ["ascend_npu_exporter_port 50000: npu-exporter accepts a port in 1025-40000 only (it exits "
                        "without serving otherwise)"]


def test_a_monitor_must_have_an_ipv4_address_the_firewall_can_admit():
    found, problems = monitoring.section(fleet_plan(), {"monitors": [{"name": "mon", "address": "mon.example"}]})
    assert problems == ["the monitoring host mon scrapes from 'mon.example': set its ascend_node_ip to the IPv4 "
                        "address it reaches the nodes from (the firewall admits it by address)"]


def test_monitors_outside_the_cluster_are_admitted_to_what_they_scrape():
    plan = fleet_plan()
    plan["monitoring"] = section(plan, npu_exporter_enabled=True,
                                 monitors=[{"name": "mon", "address": "10.0.0.9"}, {"name": "n1", "address": "10.0.0.1"}])
    assert plan["monitoring"]["admitted"] == ["10.0.0.9"]
    monitors, ports = firewall.scraped_ports(plan, "n1")
    # The router's metrics (the engines' through it), the exporter: no engine's API port, not the router's client
    # port.
    assert monitors == ["10.0.0.9"] and ports == [8082, 8404]
    assert firewall.scraped_ports(plan, "n3")[1] == [8082]
    plan["monitoring"] = section(plan)
    assert firewall.scraped_ports(plan, "n1") == ([], [])


def test_plan_request_carries_the_monitoring_section():
    params = dict((name, spec.get("default")) for name, spec in request.ARGUMENT_SPEC.items())
    params.update(engine="vllm-ascend", engine_version="0.23.0", model="/models/qwen", launcher="mp",
                  tensor_parallel_size=8, nodes=nodes(1), npu_exporter_enabled=True,
                  monitors=[{"name": "mon", "address": "192.0.2.9"}])
    answer = request.answer(params)
    assert not answer.get("failed"), answer
    assert answer["monitoring"]["admitted"] == ["192.0.2.9"]
    params.update(npu_exporter_port=8000)
    answer = request.answer(params)
    assert answer["failed"] and "ascend_npu_exporter_port 8000 on n1 is the model's ascend_api_port" in answer["msg"]


# --- rules -------------------------------------------------------------------------------------------------


def vllm_names(expr):
    return set(re.findall(r"vllm:[a-z_]+", expr))


def base(name):
    """A metric's name as loggers.py gives it (counters are scraped NAME_total, histograms NAME_bucket)."""
    return re.sub(r"_(total|bucket|sum|count)$", "", name)


@pytest.mark.parametrize("version", RELEASES)
def test_every_recording_rule_reads_a_metric_each_release_shows(version):
    shown = dict((name, spec) for name, spec in release(version).items() if not spec["hidden"])
    for record, expr in monitoring_rules.RECORDS:
        names = vllm_names(expr)
        assert names, record
        # Where a rule names two ("a or b"), one of them is enough; each name exists in some release.
        assert any(base(name) in shown for name in names), (version, record, sorted(names))
        for name in names:
            assert any(base(name) in release(v) for v in RELEASES), name
            if base(name) in shown and shown[base(name)]["type"] == "counter":
                assert name.endswith("_total"), name


def test_the_names_differ_as_the_issue_says():
    """0.9.1: gpu_cache_usage_perc; 0.11: both (the old one hidden); 0.23 and later: only kv_cache_usage_perc."""
    assert "vllm:gpu_cache_usage_perc" in release("0.9.1") and "vllm:kv_cache_usage_perc" not in release("0.9.1")
    assert release("0.11.0")["vllm:gpu_cache_usage_perc"]["hidden"]
    assert not release("0.11.0")["vllm:kv_cache_usage_perc"]["hidden"]
    for version in ("0.23.0", "0.30.0", "0.32.0", "0.33.0"):
        assert "vllm:gpu_cache_usage_perc" not in release(version)


def test_alerts_name_node_instance_and_npu_and_take_their_thresholds():
    groups = monitoring_rules.groups({"kv_cache_ratio": 0.5, "kv_cache_for": "30s", "engine_down_for": None}, "15s")
    alerts = dict((rule["alert"], rule) for rule in groups[0]["rules"] if "alert" in rule)
    assert sorted(alerts) == ["AscendEngineDown", "AscendEngineNotReady", "AscendKVCacheFull", "AscendNPUExporterDown",
                              "AscendNPULinkDown", "AscendNPUUnhealthy", "AscendRequestsPiling",
                              "AscendTimeToFirstTokenHigh"]
    assert alerts["AscendKVCacheFull"]["expr"] == "ascend:vllm_kv_cache_usage:ratio > 0.5"
    assert alerts["AscendKVCacheFull"]["for"] == "30s"
    assert alerts["AscendEngineDown"]["for"] == "1m"
    for name, rule in alerts.items():
        assert "{{ $labels.node }}" in rule["annotations"]["summary"], name
    for name in ("AscendNPUUnhealthy", "AscendNPULinkDown"):
        assert "{{ $labels.id }}" in alerts[name]["annotations"]["summary"]
    for name in ("AscendEngineDown", "AscendKVCacheFull", "AscendRequestsPiling", "AscendTimeToFirstTokenHigh"):
        assert "{{ $labels.instance }}" in alerts[name]["annotations"]["summary"]


def test_an_engine_in_maintenance_is_left_out_for_three_scrapes_after():
    """The window covers the `up` sample of the stopped engine that outlives the router's last MAINT sample (promtool
    runs the rule on the states HAProxy gives: tests/integration/test_monitoring_rules.py)."""
    assert [monitoring_rules.maintenance_window(i) for i in ("2s", "15s", "1m", "1m30s")] == [
        "30s", "45s", "180s", "270s"]
    expr = dict((r["alert"], r["expr"]) for r in monitoring_rules.groups(None, "20s")[0]["rules"]
                if "alert" in r)["AscendEngineDown"]
    assert expr == ('up{job="ascend-engine"} == 0 unless on (instance) label_replace(max by (server) (max_over_time('
                    'haproxy_server_status{job="ascend-router", state="MAINT"}[60s])) == 1, "instance", "$1", '
                    '"server", "(.+)")')


def test_the_rule_file_is_yaml_of_the_same_rules():
    yaml = pytest.importorskip("yaml")
    assert yaml.safe_load(monitoring_rules.render({"ttft_p95_seconds": 2}, "15s")) == {
        "groups": monitoring_rules.groups({"ttft_p95_seconds": 2}, "15s")}


def test_bad_thresholds_are_refused_naming_the_variable_and_host():
    given = {"kv_cache_for": "ten minutes", "kv_cache_ratio": "high", "nope": 1}
    problems = phase_monitoring.thresholds_problems("mon", given)
    assert problems == [
        "monitoring_alert_thresholds on mon: unknown keys nope (known: %s)" % ", ".join(
            sorted(monitoring_rules.THRESHOLDS)),
        "monitoring_alert_thresholds.kv_cache_for on mon must be a Prometheus duration such as 5m or 90s "
        "(found 'ten minutes')",
        "monitoring_alert_thresholds.kv_cache_ratio on mon must be a number of at least 0 (found 'high')"]


# --- dashboard ---------------------------------------------------------------------------------------------

VLLM_LISTED = ("vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
               "vllm:gpu_cache_usage_perc", "vllm:time_to_first_token_seconds", "vllm:inter_token_latency_seconds",
               "vllm:time_per_output_token_seconds", "vllm:request_success", "vllm:generation_tokens",
               "vllm:prompt_tokens", "vllm:e2e_request_latency_seconds")
NPU_LISTED = ("npu_chip_info_utilization", "npu_chip_info_hbm_used_memory", "npu_chip_info_hbm_total_memory",
              "npu_chip_info_temperature", "npu_chip_info_power", "npu_chip_info_health_status",
              "npu_chip_info_link_status")


def dashboard_exprs():
    with open(DASHBOARD) as handle:
        board = json.load(handle)
    return [target["expr"] for panel in board["panels"] for target in panel["targets"]]


def expanded(expr):
    """EXPR with each recording rule it reads replaced by that rule's expression."""
    for record, rule in monitoring_rules.RECORDS:
        expr = expr.replace(record, "(%s)" % rule)
    return expr


def test_every_listed_metric_is_in_a_panel():
    text = " ".join(expanded(expr) for expr in dashboard_exprs())
    for name in VLLM_LISTED + NPU_LISTED:
        assert re.search(re.escape(name) + r"(_total|_bucket)?\b", text), name
    # Every listed vLLM metric exists in some supported release, with the name the panel reads.
    for name in VLLM_LISTED:
        assert any(name in release(v) for v in RELEASES), name


def test_every_recording_rule_a_panel_reads_exists():
    records = set(name for name, _expr in monitoring_rules.RECORDS)
    for expr in dashboard_exprs():
        for name in re.findall(r"ascend:[a-z_:0-9]+", expr):
            assert name in records, name


def test_a_plan_without_monitoring_is_refused_with_what_to_do():
    with pytest.raises(Refused, match="run the preflight"):
        phase_monitoring.files({"cluster": {}}, {"thresholds": {}}, "/d", "/d/prometheus.yml")


# --- status.yml's load line ------------------------------------------------------------------------------------


def test_the_load_line_says_where_its_time_to_first_token_comes_from():
    from ansible_collections.ascend.inference.plugins.plugin_utils.operations import status
    # 12 requests: 6 under 0.5 s, 6 between 0.5 and 2.5 s.
    load = {"running": 2.0, "waiting": 1.0, "kv_cache": 0.25,
            "ttft_buckets": {"0.5": 6.0, "2.5": 12.0, "+Inf": 12.0}}
    found = {"n1": {"load": load}, "n2": {}}
    assert status.load_line("chat", found, {}, None) == (
        "load chat: 2 running, 1 waiting, KV cache 25%, time to first token p50 0.5 s / p95 2.3 s (since the engine "
        "started, 12 requests)")
    # Two API servers of one instance: their buckets summed (the second's requests were all slow): 6 of 24 under
    # 0.5 s, p50 = 0.5 + 2 x (12 - 6) / 18, p95 = 0.5 + 2 x (22.8 - 6) / 18.
    slow = dict(load, kv_cache=0.5, ttft_buckets={"0.5": 0.0, "2.5": 12.0, "+Inf": 12.0})
    assert status.load_line("chat", {"n1": {"load": load}, "n2": {"load": slow}}, {}, None) == (
        "load chat: 4 running, 2 waiting, KV cache 50%, time to first token p50 1.17 s / p95 2.37 s (since the engines "
        "started, 24 requests)")
    recent = {"chat": {"p50": 0.125, "p95": 0.25}}
    assert status.load_line("chat", found, recent, "10.0.0.9").endswith(
        "time to first token p50 0.125 s / p95 0.25 s (last 5m, Prometheus on 10.0.0.9)")
    assert status.load_line("chat", {"n1": {"load": None}}, {}, None) == "load chat: no /metrics read"
    idle = dict(load, ttft_buckets={"0.5": 0.0, "+Inf": 0.0})
    line = status.load_line("chat", {"n1": {"load": idle}}, {}, None)
    assert line.endswith("time to first token: no request yet")
