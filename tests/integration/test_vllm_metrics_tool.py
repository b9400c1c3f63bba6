"""tools/extract_vllm_metrics.py, which writes the fixtures of the metrics each vLLM release defines (the rules,
the dashboard and the serve double are checked against them), on a logger written the ways vLLM's loggers.py
writes its metrics: self._gauge_cls(...) and prometheus_client classes, label names through a variable, buckets
as a list literal, a variable or a call, a metric behind show_hidden_metrics and one behind another condition."""

import importlib.util
import json
import os
import zipfile

from conftest import REPO

SOURCE = '''
from prometheus_client import Counter, Gauge, Histogram


class PrometheusStatLogger:
    _gauge_cls = Gauge

    def __init__(self, vllm_config):
        labelnames = ["model_name", "engine"]
        ttft_buckets = [0.001, 0.5, 1.0]
        self.gauge_running = self._gauge_cls(
            name="vllm:num_requests_running",
            documentation="Number of requests " "in model execution batches.",
            labelnames=labelnames)
        if self.show_hidden_metrics:
            self.gauge_old = self._gauge_cls(name="vllm:gpu_cache_usage_perc", documentation="GPU KV-cache usage.",
                                             labelnames=labelnames)
        if vllm_config.lora_config is not None:
            self.gauge_lora = self._gauge_cls(name="vllm:lora_requests_info", documentation="LoRA",
                                              labelnames=["max_lora", "waiting_lora_adapters"])
        self.counter_success = Counter(name="vllm:request_success", documentation="Finished.",
                                       labelnames=labelnames + ["finished_reason"])
        self.histogram_ttft = Histogram(name="vllm:time_to_first_token_seconds", documentation="TTFT.",
                                        buckets=ttft_buckets, labelnames=labelnames)
        self.histogram_tokens = Histogram(name="vllm:request_prompt_tokens", documentation="Prompt tokens.",
                                          buckets=build_1_2_5_buckets(max_model_len), labelnames=labelnames)
        self.other = Gauge(name="not_vllm", documentation="ignored")
'''


def tool():
    path = os.path.join(REPO, "tools", "extract_vllm_metrics.py")
    spec = importlib.util.spec_from_file_location("extract_metrics", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_names_types_labels_buckets_and_conditions_are_read():
    found = tool().extract(SOURCE)
    assert sorted(found) == ["vllm:gpu_cache_usage_perc", "vllm:lora_requests_info", "vllm:num_requests_running",
                             "vllm:request_prompt_tokens", "vllm:request_success", "vllm:time_to_first_token_seconds"]
    assert found["vllm:num_requests_running"] == {
        "type": "gauge", "documentation": "Number of requests in model execution batches.",
        "labelnames": ["model_name", "engine"], "conditions": [], "hidden": False}
    assert found["vllm:gpu_cache_usage_perc"]["hidden"] is True
    assert found["vllm:lora_requests_info"]["conditions"] == ["vllm_config.lora_config is not None"]
    assert not found["vllm:lora_requests_info"]["hidden"]
    assert (found["vllm:request_success"]["type"], found["vllm:request_success"]["labelnames"]) == (
        "counter", ["model_name", "engine", "finished_reason"])
    assert found["vllm:time_to_first_token_seconds"]["buckets"] == [0.001, 0.5, 1.0]
    assert found["vllm:request_prompt_tokens"]["buckets"] == "build_1_2_5_buckets(max_model_len)"


def test_a_wheel_is_read_with_its_version_and_hash(tmp_path, monkeypatch):
    wheel = tmp_path / "vllm-9.9.9-cp38-abi3-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("vllm/v1/metrics/loggers.py", SOURCE)
        archive.writestr("vllm-9.9.9.dist-info/METADATA", "Name: vllm\nVersion: 9.9.9\n")
    out = tmp_path / "out.json"
    monkeypatch.setattr("sys.argv", ["extract", "--wheel", str(wheel), "--out", str(out)])
    tool().main()
    written = json.loads(out.read_text())
    assert (written["vllm_version"], written["source"], written["wheel"]) == (
        "9.9.9", "vllm/v1/metrics/loggers.py", wheel.name)
    assert len(written["wheel_sha256"]) == 64 and "vllm:request_success" in written["metrics"]
