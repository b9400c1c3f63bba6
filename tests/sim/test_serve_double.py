"""Unit tests of the vllm / vllm-mindspore serve doubles, on loopback.

Their Ray behaviour needs a Ray cluster and is tested in molecule/cluster.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
DOUBLES = os.path.join(HERE, "doubles")
# The real `vllm serve --help=all` captures and their reader, which the doubles parse options with.
VLLM_HELP = os.path.join(HERE, "..", "vllm_help")
# The metrics each vLLM release defines (tools/extract_vllm_metrics.py), which the double exports.
VLLM_METRICS = os.path.join(HERE, "..", "unit", "plugins", "module_utils", "engines", "fixtures", "vllm_metrics")


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def sim(tmp_path):
    """Start doubles against a scratch node with 4 NPUs; stops them afterwards."""
    lib = tmp_path / "lib"
    lib.mkdir()
    for name in ("ascend_sim.py", "vllm_sim.py", "kv_connector_sim.py", "vllm_metrics_sim.py"):
        shutil.copy(os.path.join(DOUBLES, name), lib / name)
    shutil.copytree(VLLM_HELP, lib / "vllm_help", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(VLLM_METRICS, lib / "vllm_metrics")
    (tmp_path / "root/dev").mkdir(parents=True)
    for name in ["davinci%d" % device for device in range(4)] + ["davinci_manager", "devmm_svm", "hisi_hdc"]:
        (tmp_path / "root" / "dev" / name).write_text("")
    (tmp_path / "model").mkdir()
    procs = []

    class Sim:
        help_dir = lib / "vllm_help"
        model = str(tmp_path / "model")
        # The host's Python has no vllm metadata: the release is given (vllm-mindspore 0.5.x runs on 0.11.0).
        env = {"PATH": os.environ["PATH"], "ASCEND_SIM_LIB": str(lib), "ASCEND_SIM_ROOT": str(tmp_path / "root"),
               "ASCEND_SIM_HANDSHAKE_TIMEOUT": "20", "ASCEND_SIM_VLLM_VERSION": "0.11.0"}

        def start(self, program, *args, **env):
            if "--headless" in args:
                # A headless engine stands for another node: that node's NPUs are not the head's.
                env.setdefault("ASCEND_SIM_LOCK_DIR", str(tmp_path / ("locks-%d" % len(procs))))
            proc = subprocess.Popen([sys.executable, os.path.join(DOUBLES, program)] + list(args),
                                    env=dict(self.env, **env), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True)
            procs.append(proc)
            return proc

        def run(self, program, *args, **env):
            proc = self.start(program, *args, **env)
            out, err = proc.communicate(timeout=60)
            return proc.returncode, out + err

    yield Sim()
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def get(port, path, key=None, body=None, host=None):
    request = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path),
                                     data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Content-Type": "application/json"})
    if host:
        request.add_header("Host", host)
    if key:
        request.add_header("Authorization", "Bearer " + key)
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return answer.status, json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def wait_http(port, proc, seconds=20):
    deadline = time.time() + seconds
    while time.time() < deadline:
        assert proc.poll() is None, proc.communicate()
        try:
            return get(port, "/health")
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.2)
    raise AssertionError("no answer on port %d" % port)


@pytest.mark.parametrize("args,message", [
    (["--tensor-parallel", "2"], "unrecognized arguments: --tensor-parallel"),
    (["--addition-config", "{}"], "unrecognized arguments: --addition-config"),
    (["--block-size", "7"], "argument --block-size: invalid choice: 7"),
    (["--tensor-parallel-size", "two"], "argument --tensor-parallel-size: invalid int value"),
    (["--enable-prefix-caching", "1"], "unrecognized arguments: 1"),
    (["--kv-cache-dtype", "fp16"], "argument --kv-cache-dtype: invalid choice: 'fp16'"),
    (["--additional-config", "{expert_parallel: 4}"], "argument --additional-config: not valid JSON"),
    (["--data-parallel-backend"], "argument --data-parallel-backend: expected one argument"),
])
def test_rejects_what_vllm_rejects(sim, args, message):
    code, output = sim.run("vllm-mindspore", "serve", sim.model, *args)
    assert code == 2 and message in output, output


def test_options_are_the_captured_ones(sim):
    """An option that the help capture lacks is refused, whatever the collection's table says."""
    capture = sim.help_dir / "vllm-0.11.0-serve-help.txt"
    text = capture.read_text()
    assert "  --max-num-seqs MAX_NUM_SEQS\n" in text
    capture.write_text(text.replace("  --max-num-seqs MAX_NUM_SEQS\n", ""))
    code, output = sim.run("vllm", "serve", sim.model, "--max-num-seqs", "8")
    assert code == 2 and "unrecognized arguments: --max-num-seqs 8" in output, output


@pytest.mark.parametrize("program,env,args,message", [
    ("vllm-mindspore", {"GLOO_SOCKET_IFNAME": "nosuchnic0"}, [], "Unable to find address for: nosuchnic0"),
    ("vllm-mindspore", {"VLLM_MS_MODEL_BACKEND": "Torch"}, [], "VLLM_MS_MODEL_BACKEND 'Torch' is not one of"),
    ("vllm", {}, ["--headless", "--data-parallel-size", "2"], "HCCL_IF_IP is not set"),
    ("vllm", {"HCCL_IF_IP": "192.0.2.77"}, ["--distributed-executor-backend", "ray"], "is not an address of this"),
    ("vllm-mindspore", {}, ["--tensor-parallel-size", "8"], "8 NPUs needed on this node but only 4 visible"),
    ("vllm-mindspore", {"ASCEND_RT_VISIBLE_DEVICES": "0,1"}, ["--tensor-parallel-size", "4"], "only 2 visible"),
])
def test_checks_the_node_environment(sim, program, env, args, message):
    code, output = sim.run(program, "serve", sim.model, *args, **env)
    assert code == 1 and message in output, output


def test_missing_local_model_path(sim):
    code, output = sim.run("vllm", "serve", "/nonexistent/model")
    assert code == 1 and "/nonexistent/model is not a local folder" in output


def test_serves_the_openai_endpoints(sim):
    port = free_port()
    proc = sim.start("vllm-mindspore", "serve", sim.model, "--served-model-name", "qwen", "--port", str(port),
                     "--host", "127.0.0.1", "--trust-remote-code", "--tensor-parallel-size", "4",
                     GLOO_SOCKET_IFNAME="lo")
    assert wait_http(port, proc)[0] == 200
    status, models = get(port, "/v1/models")
    assert status == 200 and [m["id"] for m in models["data"]] == ["qwen"]
    request = {"model": "qwen", "prompt": "I am", "max_tokens": 120, "temperature": 0}
    status, first = get(port, "/v1/completions", body=request)
    assert status == 200 and first["choices"][0]["text"].strip()
    assert get(port, "/v1/completions", body=request)[1]["choices"] == first["choices"]
    status, error = get(port, "/v1/completions", body=dict(request, model=sim.model))
    assert status == 404 and "does not exist" in error["message"]


def test_api_key_protects_v1_only(sim):
    port = free_port()
    proc = sim.start("vllm", "serve", sim.model, "--port", str(port), "--host", "127.0.0.1", VLLM_API_KEY="s3cret")
    assert wait_http(port, proc)[0] == 200
    assert get(port, "/v1/models")[0] == 401
    assert get(port, "/v1/models", key="wrong")[0] == 401
    assert get(port, "/v1/models", key="s3cret")[0] == 200


# GHSA-94f4-hr76-p5j6: before vLLM 0.22, AuthenticationMiddleware checked Starlette's URL(scope=scope).path, which
# it rebuilds from the Host header; the route is the request line's. A forged Host skips the key (vllm-mindspore
# 0.5.1 runs on vLLM 0.11.0); from 0.22 the path checked is scope["path"] (0.23.0's api_server.py).
@pytest.mark.parametrize("version,forged", [("0.11.0", 200), ("0.23.0", 401)])
def test_a_forged_host_skips_the_key_before_0_22_only(sim, version, forged):
    port = free_port()
    proc = sim.start("vllm", "serve", sim.model, "--served-model-name", "qwen", "--port", str(port), "--host",
                     "127.0.0.1", VLLM_API_KEY="s3cret", ASCEND_SIM_VLLM_VERSION=version)
    assert wait_http(port, proc)[0] == 200
    request = {"model": "qwen", "prompt": "I am", "max_tokens": 4}
    assert get(port, "/v1/completions", body=request)[0] == 401
    assert get(port, "/v1/completions", body=request, host="x/health?")[0] == forged


def running(port):
    """vllm:num_requests_running as /metrics gives it (outside /v1: no key)."""
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5) as answer:
        text = answer.read().decode()
    return [float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
            if line.startswith('vllm:num_requests_running{engine="0",model_name="qwen"}')]


def test_streams_events_and_counts_what_runs(sim):
    """A stream of server-sent events in chunks, ending in [DONE] (vLLM's streaming completions); while it runs,
    vllm:num_requests_running is 1 (a drain waits for 0)."""
    port = free_port()
    proc = sim.start("vllm", "serve", sim.model, "--served-model-name", "qwen", "--port", str(port), "--host",
                     "127.0.0.1", ASCEND_SIM_DECODE_SECONDS="0.1")
    assert wait_http(port, proc)[0] == 200
    assert running(port) == [0.0]
    body = json.dumps({"model": "qwen", "prompt": "I am", "max_tokens": 8, "stream": True}).encode()
    request = urllib.request.Request("http://127.0.0.1:%d/v1/completions" % port, data=body,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.headers["Content-Type"].startswith("text/event-stream")
        first = answer.readline()
        assert running(port) == [1.0]
        events = [first] + answer.read().split(b"\n\n")
    data = [e.strip() for e in b"".join(events).split(b"data: ") if e.strip()]
    assert data[-1] == b"[DONE]" and len(data) == 9, data
    assert json.loads(data[-2])["choices"][0]["finish_reason"] == "length"
    assert running(port) == [0.0]


def mp_common(rpc, dp=4):
    return ["--data-parallel-size", str(dp), "--data-parallel-size-local", "2", "--data-parallel-address",
            "127.0.0.1", "--data-parallel-rpc-port", str(rpc)]


def completion(port, rank=None, timeout=5):
    """A 1-token completion, to DP rank RANK where given (vLLM 0.23's X-data-parallel-rank header)."""
    request = urllib.request.Request("http://127.0.0.1:%d/v1/completions" % port,
                                     data=json.dumps({"model": "qwen", "prompt": "hi", "max_tokens": 1}).encode(),
                                     headers={"Content-Type": "application/json"})
    if rank is not None:
        request.add_header("X-data-parallel-rank", str(rank))
    with urllib.request.urlopen(request, timeout=timeout) as answer:
        return answer.status


def mp_group(sim, version, model=None):
    """A head (ranks 0-1) and a headless node (2-3) of one DP group, serving; returns (port, rpc, head, worker)."""
    port, rpc = free_port(), free_port()
    model = model or sim.model
    worker = sim.start("vllm", "serve", model, "--headless", "--data-parallel-start-rank", "2", *mp_common(rpc),
                       ASCEND_SIM_VLLM_VERSION=version, HCCL_IF_IP="127.0.0.1")
    time.sleep(1)  # the headless node starts first and keeps trying
    assert worker.poll() is None
    head = sim.start("vllm", "serve", model, "--served-model-name", "qwen", "--port", str(port), "--host",
                     "127.0.0.1", *mp_common(rpc), ASCEND_SIM_VLLM_VERSION=version, HCCL_IF_IP="127.0.0.1")
    assert wait_http(port, head)[0] == 200
    return port, rpc, head, worker


def test_mp_head_serves_once_every_rank_registered_in_any_order(sim):
    port, rpc = free_port(), free_port()
    common = mp_common(rpc, dp=6)
    sim.start("vllm-mindspore", "serve", sim.model, "--headless", "--data-parallel-start-rank", "2", *common)
    time.sleep(1)
    head = sim.start("vllm-mindspore", "serve", sim.model, "--port", str(port), "--host", "127.0.0.1", *common)
    time.sleep(2)  # the first node retries every second: it registers before the next one tries
    # While the head still waits (ranks 4-5), a node claiming taken ranks is refused; so is one without a start rank.
    for start in (["--data-parallel-start-rank", "2"], []):
        code, output = sim.run("vllm-mindspore", "serve", sim.model, "--headless", *(start + common))
        assert code == 1 and "refused this node" in output and "overlap" in output, output
    with pytest.raises((urllib.error.URLError, ConnectionError)):
        get(port, "/health")
    sim.start("vllm-mindspore", "serve", sim.model, "--headless", "--data-parallel-start-rank", "4", *common)
    assert wait_http(port, head)[0] == 200


def test_mp_a_restarted_headless_node_never_joins_and_exits_0(sim):
    """vLLM's handshake exists at start-up only (the module docstring of vllm_sim.py cites the lines)."""
    port, rpc, head, worker = mp_group(sim, "0.23.0")
    worker.kill()
    worker.communicate()
    code, output = sim.run("vllm", "serve", sim.model, "--headless", "--data-parallel-start-rank", "2",
                           *mp_common(rpc), ASCEND_SIM_VLLM_VERSION="0.23.0", ASCEND_SIM_HANDSHAKE_TIMEOUT="3",
                           HCCL_IF_IP="127.0.0.1")
    assert code == 0 and "Did not receive response from front-end process within 0.05 minutes" in output, output
    assert get(port, "/health")[0] == 200, "/health does not see a remote node's engines"


def test_mp_0_23_dense_request_to_a_lost_rank_hangs_and_others_answer(sim):
    port, rpc, head, worker = mp_group(sim, "0.23.0")
    assert [completion(port, rank) for rank in range(4)] == [200] * 4
    worker.kill()
    worker.communicate()
    time.sleep(0.5)
    assert completion(port, 1) == 200
    with pytest.raises((TimeoutError, urllib.error.URLError)):
        completion(port, 3, timeout=2)
    assert head.poll() is None and get(port, "/health")[0] == 200


@pytest.mark.parametrize("version,moe", [("0.11.0", False), ("0.23.0", True)])
def test_mp_lock_step_head_exits_on_the_next_request_after_a_loss(sim, tmp_path, version, moe):
    model = tmp_path / "moe"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"n_routed_experts": 8} if moe else {}))
    port, rpc, head, worker = mp_group(sim, version, str(model))
    assert completion(port) == 200
    worker.kill()
    worker.communicate()
    time.sleep(0.5)
    with pytest.raises((ConnectionError, urllib.error.URLError)):
        completion(port, 0)
    assert head.wait(timeout=10) == 1
    assert "all-reduce with ranks [2, 3] failed" in head.communicate()[1]


def test_mp_a_headless_node_whose_head_went_away_waits(sim):
    port, rpc, head, worker = mp_group(sim, "0.11.0")
    head.kill()
    head.communicate()
    time.sleep(2)
    assert worker.poll() is None, "vLLM's headless engines are not told that the front-end is gone"


def test_mp_head_refuses_ranks_outside_dp(sim):
    rpc = free_port()
    common = ["--data-parallel-size", "4", "--data-parallel-size-local", "2", "--data-parallel-address", "127.0.0.1",
              "--data-parallel-rpc-port", str(rpc)]
    sim.start("vllm-mindspore", "serve", sim.model, "--port", str(free_port()), "--host", "127.0.0.1", *common)
    code, output = sim.run("vllm-mindspore", "serve", sim.model, "--headless", "--data-parallel-start-rank", "3",
                           *common)
    assert code == 1 and "outside data_parallel_size 4" in output, output


# --- what differs by vLLM release ------------------------------------------------

@pytest.mark.parametrize("version,accepted,refused", [
    ("0.11.0", ["--swap-space", "4"], ["--optimization-level", "2"]),
    ("0.23.0", ["--optimization-level", "2"], ["--swap-space", "4"]),
    ("0.33.0", ["--disable-prefix-caching"], ["--no-enable-prefix-caching"]),
    ("0.9.1", ["--swap-space", "4"], ["--api-server-count", "2", "--served-model-name", "x", "--no-such"]),
])
def test_accepts_the_options_of_its_release_only(sim, version, accepted, refused):
    code, output = sim.run("vllm", "serve", "/nonexistent/model", *accepted, ASCEND_SIM_VLLM_VERSION=version)
    assert code == 1 and "is not a local folder" in output and "(vLLM %s)" % version in output, output
    code, output = sim.run("vllm", "serve", "/nonexistent/model", *refused, ASCEND_SIM_VLLM_VERSION=version)
    unknown = refused[-1] if refused[-1].startswith("--") else " ".join(refused)
    assert code == 2 and "unrecognized arguments: %s" % unknown in output, output


@pytest.mark.parametrize("version,count,message", [
    ("0.23.0", "1", "--api-server-count=1 cannot be used with --headless"),
    ("0.33.0", "1", "--api-server-count=1 cannot be used with --headless"),
    ("0.11.0", "2", "api_server_count can't be set in headless mode"),
    ("0.9.1", "2", "api_server_count can't be set in headless mode"),
])
def test_api_server_count_is_refused_on_a_headless_node(sim, version, count, message):
    code, output = sim.run("vllm-mindspore", "serve", sim.model, "--headless", "--api-server-count", count,
                           "--data-parallel-size", "2", "--data-parallel-size-local", "1",
                           ASCEND_SIM_VLLM_VERSION=version)
    assert code == 1 and message in output, output


def test_api_server_count_1_on_a_headless_node_passes_before_0_23(sim):
    rpc = free_port()
    proc = sim.start("vllm-mindspore", "serve", sim.model, "--headless", "--api-server-count", "1",
                     "--data-parallel-size", "2", "--data-parallel-size-local", "1", "--data-parallel-address",
                     "127.0.0.1", "--data-parallel-rpc-port", str(rpc), ASCEND_SIM_HANDSHAKE_TIMEOUT="2")
    out, err = proc.communicate(timeout=30)
    assert "cannot be used with --headless" not in err and "Did not receive response from front-end" in err, err


@pytest.mark.parametrize("version,start,hybrid", [("0.11.0", "0", False), ("0.11.0", "1", True),
                                                  ("0.23.0", "0", True), ("0.9.1", "1", False)])
def test_a_start_rank_on_the_head_switches_to_hybrid_load_balancing(sim, version, start, hybrid):
    """Hybrid LB: the head serves its own ranks only; its start-up is complete without the headless node, which
    then never gets the handshake."""
    port, rpc = free_port(), free_port()
    common = ["--data-parallel-size", "4", "--data-parallel-size-local", "2", "--data-parallel-address", "127.0.0.1",
              "--data-parallel-rpc-port", str(rpc)]
    head = sim.start("vllm-mindspore", "serve", sim.model, "--port", str(port), "--host", "127.0.0.1",
                     "--data-parallel-start-rank", start, *common, ASCEND_SIM_VLLM_VERSION=version)
    worker = sim.start("vllm-mindspore", "serve", sim.model, "--headless", "--data-parallel-start-rank", "2",
                       *common, ASCEND_SIM_VLLM_VERSION=version, ASCEND_SIM_HANDSHAKE_TIMEOUT="3")
    assert wait_http(port, head)[0] == 200
    if hybrid:
        out, err = worker.communicate(timeout=30)
        assert worker.returncode == 0 and "Did not receive response from front-end" in err, err
        assert "hybrid load balancing: this API server serves DP ranks" in head_log(head)
    else:
        time.sleep(1)
        assert worker.poll() is None


def head_log(proc):
    proc.kill()
    return proc.communicate()[1]


def test_the_api_server_count_default_follows_the_release(sim):
    for version, servers in (("0.11.0", 1), ("0.23.0", 2)):
        port = free_port()
        head = sim.start("vllm-mindspore", "serve", sim.model, "--port", str(port), "--host", "127.0.0.1",
                         "--data-parallel-size", "2", ASCEND_SIM_VLLM_VERSION=version)
        assert wait_http(port, head)[0] == 200
        assert "%d API server(s)" % servers in head_log(head)


def test_installed_engine_is_found_by_its_metadata(tmp_path):
    """`ascend-sim apply` installs the double as pip installs the engine; the double reads its release from it."""
    root = tmp_path / "root"
    lib = tmp_path / "lib"
    shutil.copytree(DOUBLES, lib)
    shutil.copytree(VLLM_HELP, lib / "vllm_help", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "etc/ascend-sim").mkdir(parents=True)
    (root / "etc/ascend-sim/node.json").write_text(json.dumps(
        {"engine": {"name": "vllm-ascend", "version": "0.23.0", "vllm": "0.23.0", "env": "/opt/engine"}}))
    env = {"PATH": os.environ["PATH"], "ASCEND_SIM_ROOT": str(root), "ASCEND_SIM_LIB": str(lib)}
    subprocess.run([sys.executable, str(lib / "ascend-sim"), "apply"], env=env, check=True)
    script = root / "opt/engine/bin/vllm"
    assert script.read_text().startswith("#!%s/opt/engine/bin/python3\n" % root)
    assert not (root / "opt/engine/bin/vllm-mindspore").exists()
    done = subprocess.run([str(script), "serve", "/nonexistent/model", "--optimization-level", "2"], env=env,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 1 and "(vLLM 0.23.0)" in done.stderr and "is not a local folder" in done.stderr, \
        done.stderr
    # Another engine replaces it, metadata and script.
    (root / "etc/ascend-sim/node.json").write_text(json.dumps(
        {"engine": {"name": "vllm-mindspore", "version": "0.5.1", "vllm": "0.11.0", "env": "/opt/engine"}}))
    subprocess.run([sys.executable, str(lib / "ascend-sim"), "apply"], env=env, check=True)
    assert not script.exists()
    found = subprocess.run([str(root / "opt/engine/bin/python3"), "-c",
                            "import importlib.metadata as m; print(m.version('vllm'), m.version('vllm-mindspore'))"],
                           capture_output=True, text=True, check=True).stdout.split()
    assert found == ["0.11.0", "0.5.1"]
    done = subprocess.run([str(root / "opt/engine/bin/vllm-mindspore"), "serve", "/m", "--optimization-level", "2"],
                          env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 2 and "unrecognized arguments: --optimization-level 2" in done.stderr, done.stderr


# --- several engines on one node (ascend_instances) ------------------------------------------------

def test_two_engines_on_disjoint_npus_and_hccl_ranges_both_serve(sim):
    first, second = free_port(), free_port()
    a = sim.start("vllm-mindspore", "serve", sim.model, "--port", str(first), "--tensor-parallel-size", "2",
                  ASCEND_RT_VISIBLE_DEVICES="0,1", HCCL_IF_BASE_PORT=str(free_port()))
    b = sim.start("vllm-mindspore", "serve", sim.model, "--port", str(second), "--tensor-parallel-size", "2",
                  ASCEND_RT_VISIBLE_DEVICES="2,3", HCCL_IF_BASE_PORT=str(free_port() + 100))
    assert wait_http(first, a)[0] == 200 and wait_http(second, b)[0] == 200


@pytest.mark.parametrize("tp, message", [
    ("2", "socket type[0] listen on device 1 port[16666] fail"),
    ("1", "Free memory on device npu:1 on startup is less than desired GPU memory utilization"),
])
def test_a_second_engine_on_an_npu_in_use_fails(sim, tp, message):
    port = free_port()
    first = sim.start("vllm-mindspore", "serve", sim.model, "--port", str(port), "--tensor-parallel-size", tp,
                      ASCEND_RT_VISIBLE_DEVICES="1,2")
    assert wait_http(port, first)[0] == 200
    code, output = sim.run("vllm-mindspore", "serve", sim.model, "--port", str(free_port()), "--tensor-parallel-size",
                           tp, ASCEND_RT_VISIBLE_DEVICES="1,3")
    assert code == 1 and message in output, output


def test_an_hccl_base_port_in_use_fails(sim):
    base = free_port()
    port = free_port()
    first = sim.start("vllm-mindspore", "serve", sim.model, "--port", str(port), "--tensor-parallel-size", "2",
                      ASCEND_RT_VISIBLE_DEVICES="0,1", HCCL_IF_BASE_PORT=str(base))
    assert wait_http(port, first)[0] == 200
    # Another engine on other NPUs whose range meets the first one's (base + physical ID 1 = base - 1 + 2).
    code, output = sim.run("vllm-mindspore", "serve", sim.model, "--port", str(free_port()), "--tensor-parallel-size",
                           "2", ASCEND_RT_VISIBLE_DEVICES="2,3", HCCL_IF_BASE_PORT=str(base - 1))
    assert code == 1 and "HCCL init failed: bind 0.0.0.0 port %d failed" % (base + 1) in output, output


# --- prefill/decode disaggregation (kv_connector_sim.py: vllm-ascend 0.23.0's MooncakeConnectorV1) ---------------

def kv_ports(count=2, start=21000):
    """The first of COUNT consecutive free ports below the kernel's ephemeral range (a pool binds kv_port up to
    kv_port + its ranks: an ephemeral port next to a free one may be taken by any connection meanwhile)."""
    for first in range(start, 31000, 16):
        probes = []
        try:
            for port in range(first, first + count):
                probe = socket.socket()
                probes.append(probe)
                probe.bind(("127.0.0.1", port))
            return first
        except OSError:
            continue
        finally:
            for probe in probes:
                probe.close()
    raise AssertionError("no %d free consecutive ports in %d-31000" % (count, start))


def kv_config(role, kv_port, **extra):
    sizes = {"prefill": {"tp_size": 2, "dp_size": 1}, "decode": {"tp_size": 1, "dp_size": 1}}
    config = {"kv_connector": "MooncakeConnectorV1", "kv_role": role, "kv_port": kv_port,
              "engine_id": "pd-" + role, "kv_connector_extra_config": sizes}
    config.update(extra)
    return json.dumps(config)


def start_pool(sim, tmp_path, role, devices, tp, kv_port, **extra):
    port = free_port()
    proc = sim.start("vllm", "serve", sim.model, "--served-model-name", "qwen", "--port", str(port), "--host",
                     "127.0.0.1", "--tensor-parallel-size", str(tp), "--kv-transfer-config",
                     kv_config(role, kv_port, **extra), ASCEND_SIM_VLLM_VERSION="0.23.0",
                     ASCEND_RT_VISIBLE_DEVICES=devices, VLLM_HOST_IP="127.0.0.1", ASCEND_SIM_KV_TIMEOUT="3",
                     ASCEND_SIM_LOCK_DIR=str(tmp_path / ("locks-" + role)))
    assert wait_http(port, proc)[0] == 200
    return port, proc


def prefill_request(prompt="I am"):
    """What vllm-ascend's proxy sends the prefill (load_balance_proxy_server_example.py, build_prefill_request)."""
    return {"model": "qwen", "prompt": prompt, "max_tokens": 1, "min_tokens": 1, "stream": False,
            "kv_transfer_params": {"do_remote_decode": True, "do_remote_prefill": False, "remote_engine_id": None,
                                   "remote_block_ids": None, "remote_host": None, "remote_port": None}}


def test_prefill_answers_kv_params_and_the_decode_pulls_from_its_port(sim, tmp_path):
    kv_port = kv_ports()
    prefill, prefill_proc = start_pool(sim, tmp_path, "kv_producer", "0,1", 2, kv_port)
    decode, decode_proc = start_pool(sim, tmp_path, "kv_consumer", "2", 1, kv_ports(1, start=kv_port + 16))
    # The producer binds kv_port .. kv_port + TP - 1 (one handshake port per worker).
    for port in (kv_port, kv_port + 1):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    status, first = get(prefill, "/v1/completions", body=prefill_request())
    params = first["kv_transfer_params"]
    assert status == 200 and len(first["choices"][0]["text"].split()) == 1
    assert set(params) == {"do_remote_prefill", "do_remote_decode", "remote_block_ids", "remote_engine_id",
                           "remote_host", "remote_port", "remote_request_id", "remote_pcp_size", "remote_dcp_size",
                           "remote_ptp_size", "last_token_id", "remote_multi_nodes_meta_mapping",
                           "num_prompt_blocks", "remote_block_size"}
    # vllm-ascend appends a uuid to the configured engine_id.
    assert params["remote_engine_id"].startswith("pd-kv_producer-") and params["remote_port"] == kv_port
    status, answer = get(decode, "/v1/completions", body={"model": "qwen", "prompt": "I am", "max_tokens": 8,
                                                          "kv_transfer_params": params})
    assert status == 200 and len(answer["choices"][0]["text"].split()) == 8
    # The blocks were handed over once: the same params again find nothing held.
    status, again = get(decode, "/v1/completions", body={"model": "qwen", "prompt": "I am", "max_tokens": 8,
                                                         "kv_transfer_params": params})
    assert status == 500 and "no KV blocks held" in again["message"], again
    status, wrong = get(decode, "/v1/completions", body={"model": "qwen", "prompt": "x", "kv_transfer_params": dict(
        get(prefill, "/v1/completions", body=prefill_request("x"))[1]["kv_transfer_params"], remote_engine_id="other")})
    assert status == 500 and "unknown engine_id other" in wrong["message"]
    prefill_proc.kill()
    prefill_proc.communicate()
    status, dead = get(decode, "/v1/completions", body={"model": "qwen", "prompt": "y", "kv_transfer_params": params})
    assert status == 500 and dead["message"].startswith(
        "KV transfer from prefill engine %s at 127.0.0.1:%d failed" % (params["remote_engine_id"], kv_port))
    decode_proc.kill()
    assert "pulled 1 KV blocks of request" in decode_proc.communicate()[1]


def test_a_decode_whose_extra_config_differs_is_refused(sim, tmp_path):
    kv_port = kv_ports()
    prefill, _proc = start_pool(sim, tmp_path, "kv_producer", "0,1", 2, kv_port)
    differs = {"prefill": {"tp_size": 4, "dp_size": 1}, "decode": {"tp_size": 1, "dp_size": 1}}
    decode, _decode = start_pool(sim, tmp_path, "kv_consumer", "2", 1, kv_ports(1, start=kv_port + 16),
                                 kv_connector_extra_config=differs)
    params = get(prefill, "/v1/completions", body=prefill_request())[1]["kv_transfer_params"]
    status, answer = get(decode, "/v1/completions", body={"model": "qwen", "prompt": "I am",
                                                          "kv_transfer_params": params})
    assert status == 500 and "kv_connector_extra_config differs" in answer["message"]


@pytest.mark.parametrize("extra,message", [
    ({"kv_ports": 1}, "Extra inputs are not permitted"),
    ({"kv_role": "prefill"}, "Unsupported kv_role: prefill"),
    ({"kv_connector_extra_config": {"prefill": {"tp_size": 4}}},
     "KV transfer 'prefill' config has a conflicting tensor parallel size. Expected 2, but got 4."),
    ({"kv_connector_extra_config": {"prefill": {"tp_size": 2}, "decode": {"tp_size": 4}}},
     "prefill_tp_size: 2 must be greater than or equal to the decode_tp_size: 4"),
])
def test_the_connector_refuses_what_vllm_ascend_refuses(sim, extra, message):
    code, out = sim.run("vllm", "serve", sim.model, "--tensor-parallel-size", "2", "--kv-transfer-config",
                        kv_config("kv_producer", free_port(), **extra), ASCEND_SIM_VLLM_VERSION="0.23.0",
                        ASCEND_RT_VISIBLE_DEVICES="0,1")
    assert code != 0 and message in out, out


def llmdatadist_config(role):
    """vllm-ascend 0.11's examples/disaggregated_prefill_v1/README.md, as the planner writes it."""
    return json.dumps({"kv_connector": "LLMDataDistCMgrConnector", "kv_buffer_device": "npu", "kv_role": role,
                       "kv_parallel_size": 1, "engine_id": "pd-" + role,
                       "kv_connector_module_path": "vllm_ascend.distributed.llmdatadist_c_mgr_connector"})


def test_llmdatadist_pools_read_the_rank_table_and_pull_on_the_rpc_port(sim, tmp_path):
    table = tmp_path / "ranktable.json"
    table.write_text(json.dumps({"version": "1.2", "server_count": "1", "status": "completed",
                                 "prefill_device_list": [
                                     {"server_id": "127.0.0.1", "device_id": str(d), "device_ip": "10.0.0.%d" % d,
                                      "cluster_id": str(d + 1)} for d in (0, 1)],
                                 "decode_device_list": [
                                     {"server_id": "127.0.0.1", "device_id": "2", "device_ip": "10.0.0.2",
                                      "cluster_id": "3"}]}))
    rpc = kv_ports(4)
    started = []
    for role, devices, tp, port in (("kv_producer", "0,1", 2, rpc), ("kv_consumer", "2", 1, kv_ports(4, rpc + 16))):
        api = free_port()
        proc = sim.start("vllm", "serve", sim.model, "--served-model-name", "qwen", "--port", str(api), "--host",
                         "127.0.0.1", "--tensor-parallel-size", str(tp), "--kv-transfer-config",
                         llmdatadist_config(role), ASCEND_RT_VISIBLE_DEVICES=devices, VLLM_HOST_IP="127.0.0.1",
                         DISAGGREGATED_PREFILL_RANK_TABLE_PATH=str(table), VLLM_ASCEND_LLMDD_RPC_PORT=str(port),
                         ASCEND_SIM_LOCK_DIR=str(tmp_path / ("locks-" + role)))
        assert wait_http(api, proc)[0] == 200
        started.append(api)
    prefill, decode = started
    params = get(prefill, "/v1/completions", body=prefill_request())[1]["kv_transfer_params"]
    # update_state_after_alloc's fields; the RPC port is VLLM_ASCEND_LLMDD_RPC_PORT's (0.11's name).
    assert set(params) == {"do_remote_prefill", "do_remote_decode", "remote_block_ids", "remote_engine_id",
                           "remote_host", "remote_port", "remote_tp_size"}
    assert (params["remote_engine_id"], params["remote_port"], params["remote_tp_size"]) == ("pd-kv_producer", rpc, "2")
    status, answer = get(decode, "/v1/completions", body={"model": "qwen", "prompt": "I am", "max_tokens": 4,
                                                          "kv_transfer_params": params})
    assert status == 200 and len(answer["choices"][0]["text"].split()) == 4, answer


def test_llmdatadist_without_its_entry_in_the_rank_table_does_not_start(sim, tmp_path):
    table = tmp_path / "ranktable.json"
    table.write_text(json.dumps({"prefill_device_list": [{"server_id": "10.1.1.1", "device_id": "0",
                                                          "device_ip": "10.0.0.0", "cluster_id": "1"}],
                                 "decode_device_list": []}))
    code, out = sim.run("vllm", "serve", sim.model, "--kv-transfer-config", llmdatadist_config("kv_producer"),
                        ASCEND_RT_VISIBLE_DEVICES="0", VLLM_HOST_IP="127.0.0.1",
                        DISAGGREGATED_PREFILL_RANK_TABLE_PATH=str(table))
    assert code != 0 and "Can't read the target server_id 127.0.0.1 and device_rank 0 from rank table" in out, out
    code, out = sim.run("vllm", "serve", sim.model, "--kv-transfer-config", llmdatadist_config("kv_producer"),
                        ASCEND_RT_VISIBLE_DEVICES="0")
    assert code != 0 and "DISAGGREGATED_PREFILL_RANK_TABLE_PATH" in out, out
