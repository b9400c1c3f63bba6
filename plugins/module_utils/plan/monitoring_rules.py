# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's Prometheus rules (pure logic): recording rules that give every supported vLLM release one set
of names, and the alerts, their thresholds and ``for:`` durations from the monitoring role's variables.

vLLM's names differ by release (engines/releases.py, VLLM_RELEASES: the KV-cache use and the inter-token latency
histogram were renamed in 0.11); each rule reads every shipped release's name, ``a or b`` keeping a's series where
both exist, so a release that exports both is not counted twice."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.ascend.inference.plugins.module_utils.engines import releases
from ansible_collections.ascend.inference.plugins.module_utils.plan.monitoring import JOBS

# Labels the engines' series carry from their targets (plan/monitoring.engine_targets).
BY = "instance, model, role, node"
THRESHOLDS = {
    "engine_down_for": "1m", "npu_unhealthy_for": "1m", "npu_link_down_for": "1m",
    "kv_cache_ratio": 0.9, "kv_cache_for": "10m",
    "waiting_requests": 10, "waiting_growth_window": "5m", "waiting_for": "10m",
    "ttft_p95_seconds": 5.0, "ttft_window": "5m", "ttft_for": "10m",
}

RECORDS = [
    ("ascend:vllm_requests_running", "sum by (%s) (vllm:num_requests_running)" % BY),
    ("ascend:vllm_requests_waiting", "sum by (%s) (vllm:num_requests_waiting)" % BY),
    # A fraction (vLLM: 1 is 100 percent), the fullest engine of the server.
    ("ascend:vllm_kv_cache_usage:ratio",
     "max by (%s) (%s)" % (BY, " or ".join(releases.metric_names("kv_cache_usage")))),
    ("ascend:vllm_time_to_first_token_seconds_bucket:rate5m",
     "sum by (%s, le) (rate(vllm:time_to_first_token_seconds_bucket[5m]))" % BY),
    ("ascend:vllm_inter_token_latency_seconds_bucket:rate5m",
     "sum by (%s, le) (%s)" % (BY, " or ".join("rate(%s_bucket[5m])" % name
                                               for name in releases.metric_names("inter_token_latency")))),
    ("ascend:vllm_requests_finished:rate5m", "sum by (%s) (rate(vllm:request_success_total[5m]))" % BY),
    ("ascend:vllm_generation_tokens:rate5m", "sum by (%s) (rate(vllm:generation_tokens_total[5m]))" % BY),
    ("ascend:vllm_prompt_tokens:rate5m", "sum by (%s) (rate(vllm:prompt_tokens_total[5m]))" % BY),
]


def settings_of(given):
    """THRESHOLDS with the given values over them (None: the default)."""
    merged = dict(THRESHOLDS)
    merged.update((key, value) for key, value in (given or {}).items() if value is not None and key in THRESHOLDS)
    return merged


# Prometheus' duration units in seconds.
UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}
# Prometheus' durations (model.ParseDuration): a number and a unit, one or several.
DURATION_PART = r"([0-9]+)(%s)" % "|".join(UNITS)


def seconds(duration):
    """A Prometheus duration (1m30s) in seconds."""
    return sum(int(number) * UNITS[unit] for number, unit in re.findall(DURATION_PART, duration))


def maintenance_window(scrape_interval):
    """How long after a replica leaves maintenance its engine's `up` may still be the sample taken while it was
    down: the engine's scrape comes up to one interval after it answers, the router's last MAINT sample up to one
    before it is put back; three intervals, and no less than 30 s for the jitter of short ones."""
    return "%ds" % max(30, int(round(3 * seconds(scrape_interval))))


def in_maintenance(window):
    """The instances some router had in maintenance (HAProxy's state MAINT) within WINDOW, labelled `instance`
    as the engines' series are: a server of the router is named as its instance (plan/router.section)."""
    return ('label_replace(max by (server) (max_over_time(haproxy_server_status{job="%s", state="MAINT"}[%s])) '
            '== 1, "instance", "$1", "server", "(.+)")' % (JOBS["router"], window))


def groups(given, scrape_interval):
    """The rule file's group: the recording rules, then the alerts. given: the thresholds set (None: the defaults);
    scrape_interval: Prometheus' (monitoring_scrape_interval), which sets how long a maintenance is remembered."""
    t = settings_of(given)
    engine, npu = JOBS["engines"], JOBS["npu"]
    ttft = "histogram_quantile(0.95, sum by (%s, le) (rate(vllm:time_to_first_token_seconds_bucket[%s])))" % (
        BY, t["ttft_window"])
    # A replica the rolling restart (or an operator) put in maintenance at the router is down as planned.
    engine_down = 'up{job="%s"} == 0 unless on (instance) %s' % (
        engine, in_maintenance(maintenance_window(scrape_interval)))
    alerts = [
        _alert("AscendEngineDown", engine_down, t["engine_down_for"], "critical",
               "Engine {{ $labels.instance }} ({{ $labels.role }}) on {{ $labels.node }} is down",
               "Prometheus cannot read /metrics of {{ $labels.instance }}'s API server on {{ $labels.node }} "
               "({{ $labels.model }}): its serve process is not running or not listening. "
               "playbooks/status.yml names the unit."),
        # Answers /metrics, but its GET /health fails: the router has marked it DOWN (HAProxy 2.6's exporter gives
        # one series per state). A replica in maintenance is MAINT, not checked; a drained one whose checks fail is
        # DOWN (HAProxy 2.6.12's exporter says DRAIN only while its checks pass): restart.yml puts a drained replica in
        # maintenance before stopping it, and docs/monitoring.md asks operators to do the same.
        _alert("AscendEngineNotReady", 'haproxy_server_status{job="%s", state="DOWN"} == 1' % JOBS["router"],
               t["engine_down_for"], "critical",
               "Replica {{ $labels.server }} fails the router's health check on {{ $labels.node }}",
               "The router on {{ $labels.node }} sends no request to instance {{ $labels.server }} (backend "
               "{{ $labels.proxy }}): its GET /health does not answer 200 (a prefill/decode instance: its prefill "
               "or decode pool's /health, or its proxy's; AscendEngineDown names a pool that is down)."),
        _alert("AscendNPUUnhealthy", "npu_chip_info_health_status != 1", t["npu_unhealthy_for"], "critical",
               "NPU {{ $labels.id }} on {{ $labels.node }} is unhealthy",
               "npu-exporter reports health {{ $value }} (1 is healthy) for NPU {{ $labels.id }} "
               "({{ $labels.model_name }}) on {{ $labels.node }}; npu-smi info -t health -i ID names the fault."),
        _alert("AscendNPULinkDown", "npu_chip_info_link_status == 0", t["npu_link_down_for"], "critical",
               "NPU {{ $labels.id }} on {{ $labels.node }}: its network link is down",
               "The NPU's RoCE link (hccn_tool -i ID -link -g) is down on {{ $labels.node }}: collective "
               "operations across nodes through NPU {{ $labels.id }} fail or hang."),
        _alert("AscendNPUExporterDown", 'up{job="%s"} == 0' % npu, t["npu_unhealthy_for"], "warning",
               "The NPU exporter on {{ $labels.node }} is down",
               "Prometheus cannot read the NPU exporter on {{ $labels.node }}: its NPUs are not watched."),
        _alert("AscendKVCacheFull", "ascend:vllm_kv_cache_usage:ratio > %s" % _number(t["kv_cache_ratio"]),
               t["kv_cache_for"], "warning",
               "KV cache of {{ $labels.instance }} on {{ $labels.node }} is {{ $value | humanizePercentage }} full",
               "{{ $labels.instance }} ({{ $labels.model }}) has used more than %s of its KV cache for %s: "
               "requests queue or are preempted." % (_percent(t["kv_cache_ratio"]), t["kv_cache_for"])),
        _alert("AscendRequestsPiling",
               "ascend:vllm_requests_waiting > %s and delta(ascend:vllm_requests_waiting[%s]) > 0" % (
                   _number(t["waiting_requests"]), t["waiting_growth_window"]),
               t["waiting_for"], "warning",
               "{{ $value }} requests wait at {{ $labels.instance }} on {{ $labels.node }}, and more each time",
               "More than %s requests wait at {{ $labels.instance }} ({{ $labels.model }}) and their number "
               "grew over every %s for %s: it takes requests faster than it answers them."
               % (_number(t["waiting_requests"]), t["waiting_growth_window"], t["waiting_for"])),
        _alert("AscendTimeToFirstTokenHigh", "%s > %s" % (ttft, _number(t["ttft_p95_seconds"])), t["ttft_for"],
               "warning",
               "Time to first token at {{ $labels.instance }} on {{ $labels.node }}: p95 {{ $value | humanizeDuration }}",
               "The 95th percentile of the time to first token at {{ $labels.instance }} ({{ $labels.model }}) "
               "over %s has been above %ss for %s." % (t["ttft_window"], _number(t["ttft_p95_seconds"]),
                                                       t["ttft_for"])),
    ]
    # One group: Prometheus evaluates a group's rules in order, so the alerts read the records of the same evaluation
    # (groups run concurrently: an alert in another group could read the record's previous value).
    return [{"name": "ascend-inference", "rules": [{"record": name, "expr": expr} for name, expr in RECORDS] + alerts}]


def _number(value):
    return ("%g" % value) if isinstance(value, float) else str(value)


def _percent(ratio):
    return "%g%%" % (float(ratio) * 100)


def _alert(name, expr, duration, severity, summary, description):
    return {"alert": name, "expr": expr, "for": duration, "labels": {"severity": severity},
            "annotations": {"summary": summary, "description": description}}


def render(given, scrape_interval):
    """The rule file's text: YAML, each scalar written as a JSON string or number (valid YAML)."""
    return "# Written by ascend.inference (monitoring role); changes are replaced.\n" + _yaml(
        {"groups": groups(given, scrape_interval)}, 0) + "\n"


def _yaml(value, indent):
    pad = " " * indent
    if isinstance(value, dict):
        lines = []
        for key, item in value.items():
            if isinstance(item, (dict, list)) and item:
                lines.append("%s%s:\n%s" % (pad, key, _yaml(item, indent + 2)))
            else:
                lines.append("%s%s: %s" % (pad, key, json.dumps(item)))
        return "\n".join(lines)
    if isinstance(value, list):
        lines = []
        for item in value:
            text = _yaml(item, indent + 2) if isinstance(item, (dict, list)) else pad + "  " + json.dumps(item)
            lines.append("%s- %s" % (pad, text.lstrip()))
        return "\n".join(lines)
    return pad + json.dumps(value)
