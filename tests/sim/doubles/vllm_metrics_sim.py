"""The serve double's /metrics: the Prometheus metrics its vLLM release defines, with their names, types, labels
and buckets, read from tests/unit/plugins/module_utils/engines/fixtures/vllm_metrics/vllm-X.Y.Z.json (which
tools/extract_vllm_metrics.py reads from that release's vllm/v1/metrics/loggers.py), exported with
prometheus_client as vLLM does, and moved by the double's load.

What the default start-up shows, as vLLM's PrometheusStatLogger does: every metric created outside any condition
(those behind --show-hidden-metrics-for-version, LoRA, speculative decoding or KV-cache metrics are not), labelled
model_name (the first served name) and engine (the DP rank, "0" on one engine); request_success also by
finished_reason. Moved here: requests running and waiting (a request above ASCEND_SIM_MAX_RUNNING waits, as above
vLLM's --max-num-seqs), the KV-cache use (the tokens the running requests hold over ASCEND_SIM_KV_TOKENS), prompt
and generation tokens, finished requests, and the time to first token, inter-token latency, queue time and
end-to-end latency histograms. The rest stays at zero."""

import glob
import json
import os
import threading
import time

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics, generate_latest

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_LABELS = ("model_name", "engine")
# The fraction of the KV cache a request's tokens take is theirs over this many.
KV_TOKENS = int(os.environ.get("ASCEND_SIM_KV_TOKENS", "65536"))


def release_metrics(version):
    """The fixture of VERSION, else of the newest release below it (a double of a newer vLLM than any fixture)."""
    found = {}
    for name in glob.glob(os.path.join(HERE, "vllm_metrics", "vllm-*.json")):
        with open(name) as handle:
            fixture = json.load(handle)
        found[tuple(int(p) for p in fixture["vllm_version"].split("."))] = fixture
    wanted = tuple(int(p) for p in version.split(".")[:3] if p.isdigit())
    usable = [v for v in found if v <= wanted] or sorted(found)[:1]
    return found[max(usable)]["metrics"]


def _buckets(spec):
    if isinstance(spec, list):
        return spec
    # build_1_2_5_buckets(max_model_len): 1, 2, 5, 10, 20, ... up to the model's length.
    found, base = [], 1
    while base <= 8192:
        found += [b for b in (base, 2 * base, 5 * base) if b <= 8192]
        base *= 10
    return found


class Metrics:
    """vLLM's metrics for one API server of MODEL on RELEASE, and the load that moves them."""

    def __init__(self, release, model, max_running=None):
        if tuple(int(p) for p in release.split(".")[:2]) < (0, 23):
            # vllm/engine/metrics.py of 0.9.1 and 0.11 calls it on import; 0.23's tree has no such call.
            disable_created_metrics()
        self.registry = CollectorRegistry()
        self.model = model
        self.metrics = {}
        for name, spec in sorted(release_metrics(release).items()):
            labels = list(spec["labelnames"])
            if spec["conditions"] or not set(labels) <= set(DEFAULT_LABELS + ("finished_reason",)):
                continue
            kind = {"gauge": Gauge, "counter": Counter, "histogram": Histogram}[spec["type"]]
            extra = {"buckets": _buckets(spec["buckets"])} if spec["type"] == "histogram" and "buckets" in spec else {}
            self.metrics[name] = kind(name, spec["documentation"] or name, labels, registry=self.registry, **extra)
            if "finished_reason" not in labels:
                self.metrics[name].labels(model_name=model, engine="0")
        self.kv_name = "vllm:kv_cache_usage_perc" if "vllm:kv_cache_usage_perc" in self.metrics \
            else "vllm:gpu_cache_usage_perc"
        self.itl_name = "vllm:inter_token_latency_seconds" if "vllm:inter_token_latency_seconds" in self.metrics \
            else "vllm:time_per_output_token_seconds"
        self.lock = threading.Lock()
        self.slots = threading.Semaphore(int(max_running or os.environ.get("ASCEND_SIM_MAX_RUNNING", "256")))
        self.running = self.waiting = self.kv_tokens = 0

    def _set(self, name, value):
        if name in self.metrics:
            self.metrics[name].labels(model_name=self.model, engine="0").set(value)

    def _add(self, name, value, **labels):
        if name in self.metrics:
            self.metrics[name].labels(model_name=self.model, engine="0", **labels).inc(value)

    def _observe(self, name, value):
        if name in self.metrics:
            self.metrics[name].labels(model_name=self.model, engine="0").observe(value)

    def _gauges(self):
        self._set("vllm:num_requests_running", self.running)
        self._set("vllm:num_requests_waiting", self.waiting)
        self._set(self.kv_name, min(1.0, float(self.kv_tokens) / KV_TOKENS))

    def request(self, prompt_tokens, output_tokens):
        """A context for one request: it waits for a slot, runs, and is counted."""
        return _Request(self, prompt_tokens, output_tokens)

    def exposition(self):
        with self.lock:
            return generate_latest(self.registry).decode()


class _Request:
    def __init__(self, metrics, prompt_tokens, output_tokens):
        self.m, self.prompt, self.output = metrics, prompt_tokens, output_tokens
        self.arrived = self.started = self.first = self.last = None
        self.tokens = 0

    def __enter__(self):
        m = self.m
        self.arrived = time.time()
        with m.lock:
            m.waiting += 1
            m._gauges()
        m.slots.acquire()
        self.started = time.time()
        with m.lock:
            m.waiting -= 1
            m.running += 1
            m.kv_tokens += self.prompt + self.output
            m._gauges()
            m._observe("vllm:request_queue_time_seconds", self.started - self.arrived)
        return self

    def token(self):
        """One generated token sent."""
        now = time.time()
        with self.m.lock:
            if self.first is None:
                self.first = now
                self.m._observe("vllm:time_to_first_token_seconds", now - self.arrived)
            else:
                self.m._observe(self.m.itl_name, now - self.last)
            self.last = now
            self.tokens += 1

    def __exit__(self, kind, value, trace):
        m = self.m
        with m.lock:
            m.running -= 1
            m.kv_tokens -= self.prompt + self.output
            m._gauges()
            if kind is None:
                m._add("vllm:prompt_tokens", self.prompt)
                m._add("vllm:generation_tokens", self.tokens)
                m._add("vllm:request_success", 1, finished_reason="length")
                m._observe("vllm:e2e_request_latency_seconds", time.time() - self.arrived)
        m.slots.release()
        return False
