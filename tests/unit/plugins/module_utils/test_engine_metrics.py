# -*- coding: utf-8 -*-
"""engine_metrics.in_flight on /metrics as vLLM v1 writes it (prometheus_client's text format; labels model_name
and engine per vllm/v1/metrics/loggers.py): no capture from an Ascend node exists here, the sample below follows
that source, with two engines (DP 2 on the API node) and a timestamped sample."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.ascend.inference.plugins.module_utils.engine_metrics import in_flight

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
