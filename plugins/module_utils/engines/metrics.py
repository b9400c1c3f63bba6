# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What an engine's /metrics says about its load (pure logic): the requests it runs and those waiting, summed over
its engines (vLLM v1 labels each gauge with model_name and engine, vllm/v1/metrics/loggers.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.ascend.inference.plugins.module_utils.engines import releases

# One sample of Prometheus' text format: a name, labels or none, a value (a timestamp may follow).
SAMPLE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{[^}]*\})?\s+(?P<value>\S+)(?:\s+\S+)?$")
GAUGES = ("vllm:num_requests_running", "vllm:num_requests_waiting")


def in_flight(text):
    """{gauge: the sum of its samples} for GAUGES in TEXT; a gauge with no sample is missing (not a vLLM /metrics,
    or one that changed its names)."""
    found = {}
    for line in (text or "").splitlines():
        match = SAMPLE.match(line.strip())
        if match and match.group("name") in GAUGES:
            try:
                value = float(match.group("value"))
            except ValueError:
                continue
            found[match.group("name")] = found.get(match.group("name"), 0.0) + value
    return found


LABELLED = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>[^}]*)\})?\s+(?P<value>\S+)(?:\s+\S+)?$")
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
# The KV-cache use under every shipped release's name, the newest's first.
KV_CACHE = tuple(releases.metric_names("kv_cache_usage"))
TTFT_BUCKET = "vllm:time_to_first_token_seconds_bucket"


def samples(text):
    """[(name, {label: value}, value)] of a Prometheus text exposition; lines that are none are skipped."""
    found = []
    for line in (text or "").splitlines():
        match = LABELLED.match(line.strip())
        if not match:
            continue
        try:
            value = float(match.group("value"))
        except ValueError:
            continue
        found.append((match.group("name"), dict(LABEL.findall(match.group("labels") or "")), value))
    return found


def quantile(q, buckets):
    """Prometheus' histogram_quantile over [(upper bound, cumulative count)]: linear within the bucket that holds
    the rank; None without observations. The +Inf bucket's rank answers its lower bound, as Prometheus does."""
    ordered = sorted(buckets)
    if not ordered or ordered[-1][1] <= 0:
        return None
    rank = q * ordered[-1][1]
    lower, below = 0.0, 0.0
    for bound, count in ordered:
        if count >= rank:
            if bound == float("inf"):
                return lower
            if count == below:
                return bound
            return lower + (bound - lower) * (rank - below) / (count - below)
        lower, below = bound, count
    return lower


def load(text):
    """What an API server's /metrics says of its load since it started: running and waiting requests (summed over
    its engines), the KV cache's use (its fullest engine; vLLM 0.9.1 names it gpu_cache_usage_perc), and the time to
    first token's buckets (merged_quantiles reads them, over one server or several). None where the page has no vLLM
    gauges."""
    found = samples(text)
    gauges = in_flight(text)
    if not gauges:
        return None
    kv = [value for name, _labels, value in found if name == KV_CACHE[0]] or \
        [value for name, _labels, value in found if name == KV_CACHE[1]]
    buckets = {}
    for name, labels, value in found:
        if name == TTFT_BUCKET and "le" in labels:
            bound = float("inf") if labels["le"] == "+Inf" else float(labels["le"])
            buckets[bound] = buckets.get(bound, 0.0) + value
    return {"running": gauges.get(GAUGES[0], 0.0), "waiting": gauges.get(GAUGES[1], 0.0),
            "kv_cache": max(kv) if kv else None,
            # By their le text (JSON has no infinity): status.yml keeps them in ascend_applied.
            "ttft_buckets": dict(("+Inf" if bound == float("inf") else repr(bound), count)
                                 for bound, count in buckets.items())}


def merged_quantiles(loads):
    """(p50, p95, requests) of the time to first token over several servers' load() answers: their buckets summed,
    as Prometheus' sum by (le) does."""
    summed = {}
    for found in loads:
        for le, count in (found.get("ttft_buckets") or {}).items():
            summed[le] = summed.get(le, 0.0) + count
    pairs = [(float("inf") if le == "+Inf" else float(le), count) for le, count in summed.items()]
    return quantile(0.5, pairs), quantile(0.95, pairs), summed.get("+Inf", 0.0)
