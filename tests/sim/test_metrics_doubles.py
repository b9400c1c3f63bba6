"""The metrics the doubles export: the serve double's vLLM metrics per release (names, types and labels from each
wheel's vllm/v1/metrics/loggers.py, tests/unit/plugins/module_utils/engines/fixtures/vllm_metrics) moving with its load,
and the NPU exporter double (Huawei MindCluster npu-exporter, component/npu-exporter of Ascend/mind-cluster
branch_v26.0.0: cmd/npu-exporter/main.go's flags, collector/metrics' names and labels) reading the simulated
node, refusing flags the real one does not define."""

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request

import pytest

import test_doubles

# The scratch node of the hardware doubles' tests (fixtures).
lib, node = test_doubles.lib, test_doubles.node
HERE = os.path.dirname(os.path.abspath(__file__))
DOUBLES = os.path.join(HERE, "doubles")
FIXTURES = os.path.join(HERE, "..", "unit", "plugins", "module_utils", "engines", "fixtures", "vllm_metrics")


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def exporter_port():
    """A free port the exporter accepts (paramValid: 1025-40000; the kernel's ephemeral ports are above)."""
    for candidate in range(30000, 30200):
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", candidate))
                return candidate
            except OSError:
                continue
    raise AssertionError("no free port in 30000-30199")


def fixture(version):
    with open(os.path.join(FIXTURES, "vllm-%s.json" % version)) as handle:
        return json.load(handle)["metrics"]


def families(text):
    """{name: type} of an exposition's # TYPE lines."""
    return dict(line.split()[2:4] for line in text.splitlines() if line.startswith("# TYPE "))


def samples(text, name):
    found = []
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            labels = dict(re.findall(r'(\w+)="([^"]*)"', line.split("}")[0])) if "{" in line else {}
            # NAME{LABELS} VALUE [TIMESTAMP]
            rest = line.split("}", 1)[1] if "{" in line else line.split(" ", 1)[1]
            found.append((labels, float(rest.split()[0])))
    return found


@pytest.fixture
def serve(tmp_path):
    """Start the serve double on a scratch node as RELEASE; yields (port, stop)."""
    lib_dir = tmp_path / "lib"
    lib_dir.mkdir()
    for name in ("ascend_sim.py", "vllm_sim.py", "kv_connector_sim.py", "vllm_metrics_sim.py"):
        shutil.copy(os.path.join(DOUBLES, name), lib_dir / name)
    shutil.copytree(os.path.join(HERE, "..", "vllm_help"), lib_dir / "vllm_help",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(FIXTURES, lib_dir / "vllm_metrics")
    (tmp_path / "root/dev").mkdir(parents=True)
    for name in ["davinci%d" % d for d in range(4)] + ["davinci_manager", "devmm_svm", "hisi_hdc"]:
        (tmp_path / "root/dev" / name).write_text("")
    (tmp_path / "model").mkdir()
    procs = []

    def start(release, **env):
        port = free_port()
        proc = subprocess.Popen(
            [sys.executable, os.path.join(DOUBLES, "vllm"), "serve", str(tmp_path / "model"), "--served-model-name",
             "qwen", "--port", str(port), "--host", "127.0.0.1"],
            env=dict({"PATH": os.environ["PATH"], "ASCEND_SIM_LIB": str(lib_dir), "ASCEND_SIM_VLLM_VERSION": release,
                      "ASCEND_SIM_ROOT": str(tmp_path / "root")}, **env),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs.append(proc)
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                urllib.request.urlopen("http://127.0.0.1:%d/health" % port, timeout=2).read()
                return port
            except OSError:
                assert proc.poll() is None, proc.communicate()
                time.sleep(0.2)
        raise AssertionError("the double did not serve")

    yield start
    for proc in procs:
        proc.kill()
        proc.wait()


def scrape(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5) as answer:
        return answer.read().decode()


# Every release whose metrics were read from its wheel (tools/extract_vllm_metrics.py).
CAPTURED = sorted((name[len("vllm-"):-len(".json")] for name in os.listdir(FIXTURES)),
                  key=lambda version: tuple(int(part) for part in version.split(".")))


@pytest.mark.parametrize("release", CAPTURED)
def test_serve_double_exports_the_releases_metrics(serve, release):
    text = scrape(serve(release))
    shown = families(text)
    defined = fixture(release)
    default_labels = {"model_name", "engine", "finished_reason"}
    expected = dict((name, spec["type"]) for name, spec in defined.items()
                    if not spec["conditions"] and set(spec["labelnames"]) <= default_labels)
    # Every metric the release creates unconditionally with these labels, of its type, and nothing it lacks
    # (prometheus_client names a counter's family NAME_total; _created series only where vLLM leaves them on).
    created = [name for name in shown if name.endswith("_created")]
    assert bool(created) == (release not in ("0.9.1", "0.11.0"))
    assert dict((re.sub("_total$", "", name) if kind == "counter" else name, kind) for name, kind in shown.items()
                if name.startswith("vllm:") and name not in created) == expected
    # The KV-cache name of the release (0.11 hides the old one behind --show-hidden-metrics-for-version).
    assert ("vllm:gpu_cache_usage_perc" in shown) == (release == "0.9.1")
    assert ("vllm:kv_cache_usage_perc" in shown) == (release != "0.9.1")
    assert samples(text, "vllm:num_requests_running") == [({"engine": "0", "model_name": "qwen"}, 0.0)]


def completion(port, tokens):
    body = json.dumps({"model": "qwen", "prompt": "one two three", "max_tokens": tokens}).encode()
    request = urllib.request.Request("http://127.0.0.1:%d/v1/completions" % port, data=body,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())


def test_serve_double_metrics_move_with_its_load(serve):
    """One request at a time (ASCEND_SIM_MAX_RUNNING=1): while two are sent, one runs and one waits, the KV cache
    holds the running one's tokens; afterwards both are counted, with their tokens and times."""
    port = serve("0.23.0", ASCEND_SIM_MAX_RUNNING="1", ASCEND_SIM_DECODE_SECONDS="0.1", ASCEND_SIM_KV_TOKENS="100")
    threads = [threading.Thread(target=completion, args=(port, 10)) for _request in range(2)]
    for thread in threads:
        thread.start()
    time.sleep(0.5)
    text = scrape(port)
    assert samples(text, "vllm:num_requests_running")[0][1] == 1.0
    assert samples(text, "vllm:num_requests_waiting")[0][1] == 1.0
    # 3 prompt words and 10 tokens of 100.
    assert samples(text, "vllm:kv_cache_usage_perc")[0][1] == pytest.approx(0.13)
    for thread in threads:
        thread.join(timeout=30)
    text = scrape(port)
    assert samples(text, "vllm:num_requests_running")[0][1] == 0.0
    assert samples(text, "vllm:kv_cache_usage_perc")[0][1] == 0.0
    assert samples(text, "vllm:request_success_total") == [
        ({"engine": "0", "finished_reason": "length", "model_name": "qwen"}, 2.0)]
    assert samples(text, "vllm:generation_tokens_total")[0][1] == 20.0
    assert samples(text, "vllm:prompt_tokens_total")[0][1] == 6.0
    assert samples(text, "vllm:time_to_first_token_seconds_count")[0][1] == 2.0
    # The second waited for the first (about a second): its first token came later.
    assert samples(text, "vllm:time_to_first_token_seconds_sum")[0][1] > 1.0
    assert samples(text, "vllm:inter_token_latency_seconds_count")[0][1] == 18.0


# --- npu-exporter ------------------------------------------------------------------------------------------


def start_exporter(node, *args):
    proc = subprocess.Popen([sys.executable, os.path.join(DOUBLES, "npu-exporter")] + list(args), env=node.env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return proc


def test_exporter_refuses_flags_it_does_not_define(node, tmp_path):
    node.write(profile="A2", npu_count=2)
    done = node.run("npu-exporter", "-port=8082", "-ip=127.0.0.1", "-listen=:8082")
    assert done.returncode == 2 and done.stderr.startswith("flag provided but not defined: -listen\n"), done.stderr
    assert "Usage of npu-exporter:" in done.stderr
    done = node.run("npu-exporter", "-port=eighty")
    assert done.returncode == 2 and 'invalid value "eighty" for flag -port: parse error' in done.stderr
    # paramValid's refusals are logged and main returns: status 0, nothing listens.
    log = tmp_path / "exporter.log"
    done = node.run("npu-exporter", "-port=80", "-ip=127.0.0.1", "-logFile=%s" % log)
    assert done.returncode == 0 and "the port is invalid" in done.stdout and "the port is invalid" in log.read_text()
    done = node.run("npu-exporter", "-port=8082", "-logFile=%s" % log)
    assert done.returncode == 0 and "the listen ip is invalid" in done.stdout
    assert node.run("npu-exporter", "--version").stdout.startswith("NPU-exporter version: v26.0.0_linux-")


def test_exporter_serves_the_nodes_npus_and_their_faults(node, tmp_path):
    node.write(profile="A2", npu_count=4, faults={"2": {"health": "Critical"}, "3": {"link": "DOWN"}})
    port = exporter_port()
    proc = start_exporter(node, "-port=%d" % port, "-ip=127.0.0.1", "-logFile=%s" % (tmp_path / "e.log"))
    try:
        deadline = time.time() + 20
        while True:
            try:
                text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=2).read().decode()
                break
            except OSError:
                assert time.time() < deadline and proc.poll() is None, proc.communicate()
                time.sleep(0.2)
        # Any other path is the index page; other methods are not found.
        assert b"/metrics" in urllib.request.urlopen("http://127.0.0.1:%d/anything" % port, timeout=2).read()
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(urllib.request.Request("http://127.0.0.1:%d/metrics" % port, data=b"x"), timeout=2)
        assert refused.value.code == 404
    finally:
        proc.kill()
        proc.wait()
    assert all(kind == "gauge" for kind in families(text).values())
    health = dict((labels["id"], value) for labels, value in samples(text, "npu_chip_info_health_status"))
    assert health == {"0": 1.0, "1": 1.0, "2": 0.0, "3": 1.0}
    link = dict((labels["id"], value) for labels, value in samples(text, "npu_chip_info_link_status"))
    assert link == {"0": 1.0, "1": 1.0, "2": 1.0, "3": 0.0}
    labels = samples(text, "npu_chip_info_hbm_used_memory")[0][0]
    assert sorted(labels) == ["container_name", "id", "model_name", "namespace", "pcie_bus_info", "pod_name",
                              "vdie_id"]
    assert labels["model_name"] == "910B1-Ascend-V1"
    # Per-chip lines carry a millisecond timestamp, as the real exporter's do.
    line = next(l for l in text.splitlines() if l.startswith("npu_chip_info_utilization{"))
    assert abs(int(line.split()[-1]) / 1000.0 - time.time()) < 60
    assert samples(text, "machine_npu_nums") == [({}, 4.0)]
    # npu-smi shows the same fault.
    assert "Critical" in node.run("npu-smi", "info").stdout
