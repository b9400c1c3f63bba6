# -*- coding: utf-8 -*-
"""engine_metrics.in_flight on /metrics as vLLM v1 writes it (prometheus_client's text format; labels model_name
and engine per vllm/v1/metrics/loggers.py): no capture from an Ascend node exists here, the sample below follows
that source, with two engines (DP 2 on the API node) and a timestamped sample."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.ascend.inference.plugins.module_utils.engines.metrics import (
    in_flight, load, merged_quantiles, quantile)

METRICS = """# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="qwen"} 2.0
vllm:num_requests_running{engine="1",model_name="qwen"} 1.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="qwen"} 0.0
vllm:num_requests_waiting{engine="1",model_name="qwen"} 3.0 1764892800000
# HELP vllm:num_requests_running_total Not a gauge this reads.
vllm:num_requests_running_total{engine="0"} 9.0
vllm:kv_cache_usage_perc{engine="0",model_name="qwen"} 0.25
"""


def test_sums_each_gauge_over_the_engines():
    assert in_flight(METRICS) == {"vllm:num_requests_running": 3.0, "vllm:num_requests_waiting": 3.0}


def test_an_idle_engine_reads_zero_and_an_unknown_page_reads_nothing():
    idle = METRICS.replace("2.0", "0.0").replace("} 1.0", "} 0.0").replace("3.0 1764892800000", "0")
    assert in_flight(idle) == {"vllm:num_requests_running": 0.0, "vllm:num_requests_waiting": 0.0}
    assert in_flight("<html>Not Found</html>") == {}
    assert in_flight(None) == {}


HISTOGRAM = METRICS + """# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.1",model_name="qwen"} 0.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="1.0",model_name="qwen"} 6.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="10.0",model_name="qwen"} 9.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="qwen"} 10.0
vllm:time_to_first_token_seconds_bucket{engine="1",le="0.1",model_name="qwen"} 0.0
vllm:time_to_first_token_seconds_bucket{engine="1",le="1.0",model_name="qwen"} 4.0
vllm:time_to_first_token_seconds_bucket{engine="1",le="10.0",model_name="qwen"} 10.0
vllm:time_to_first_token_seconds_bucket{engine="1",le="+Inf",model_name="qwen"} 10.0
vllm:time_to_first_token_seconds_count{engine="0",model_name="qwen"} 10.0
"""


def test_load_sums_the_engines_and_reads_the_time_to_first_token_as_prometheus_would():
    found = load(HISTOGRAM)
    p50, p95, requests = merged_quantiles([found])
    assert (found["running"], found["waiting"], found["kv_cache"], requests) == (3.0, 3.0, 0.25, 20.0)
    # Summed over the engines: 10 of 20 under 1 s -> p50 is 1.0 (rank 10, the bucket's upper bound; Prometheus
    # interpolates 0.1 + 0.9 x (10 - 0) / 10). p95: rank 19, bucket (1, 10] holds 10..19 -> 1 + 9 x 9 / 9 = 10.
    assert p50 == 1.0
    assert p95 == 10.0


def test_quantiles_follow_histogram_quantile():
    assert quantile(0.5, [(1.0, 0.0), (2.0, 10.0), (float("inf"), 10.0)]) == 1.5
    # Above every finite bound: the highest finite bound (Prometheus' answer for the +Inf bucket).
    assert quantile(0.99, [(1.0, 1.0), (float("inf"), 10.0)]) == 1.0
    assert quantile(0.5, [(1.0, 0.0), (float("inf"), 0.0)]) is None


def test_vllm_0_9_1_names_the_kv_cache_gpu_cache_usage_perc():
    old = METRICS.replace("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")
    assert load(old)["kv_cache"] == 0.25
    assert merged_quantiles([load(old)])[0] is None
    assert load("<html>Not Found</html>") is None
