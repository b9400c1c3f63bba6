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


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def sim(tmp_path):
    """Start doubles against a scratch node with 4 NPUs; stops them afterwards."""
    lib = tmp_path / "lib"
    lib.mkdir()
    for name in ("ascend_sim.py", "vllm_sim.py"):
        shutil.copy(os.path.join(DOUBLES, name), lib / name)
    shutil.copytree(VLLM_HELP, lib / "vllm_help", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "root/dev").mkdir(parents=True)
    for device in range(4):
        (tmp_path / "root" / "dev" / ("davinci%d" % device)).write_text("")
    (tmp_path / "model").mkdir()
    procs = []

    class Sim:
        help_dir = lib / "vllm_help"
        model = str(tmp_path / "model")
        env = {"PATH": os.environ["PATH"], "ASCEND_SIM_LIB": str(lib), "ASCEND_SIM_ROOT": str(tmp_path / "root"),
               "ASCEND_SIM_HANDSHAKE_TIMEOUT": "20"}

        def start(self, program, *args, **env):
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


def get(port, path, key=None, body=None):
    request = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path),
                                     data=json.dumps(body).encode() if body is not None else None,
                                     headers={"Content-Type": "application/json"})
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
    capture = next(sim.help_dir.glob("vllm-*-serve-help.txt"))
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


def test_mp_head_serves_once_every_rank_registered_in_any_order(sim):
    port, rpc = free_port(), free_port()
    common = ["--data-parallel-size", "4", "--data-parallel-size-local", "2", "--data-parallel-address", "127.0.0.1",
              "--data-parallel-rpc-port", str(rpc)]
    worker = sim.start("vllm-mindspore", "serve", sim.model, "--headless", "--data-parallel-start-rank", "2", *common)
    time.sleep(1)  # the headless node starts first and keeps trying
    assert worker.poll() is None
    head = sim.start("vllm-mindspore", "serve", sim.model, "--port", str(port), "--host", "127.0.0.1", *common)
    assert wait_http(port, head)[0] == 200
    # A second node claiming the same ranks is refused; so is one without a start rank (0).
    for start in (["--data-parallel-start-rank", "2"], []):
        code, output = sim.run("vllm-mindspore", "serve", sim.model, "--headless", *(start + common))
        assert code == 1 and "refused this node" in output and "overlap" in output, output
    worker.kill()
    worker.communicate()
    deadline = time.time() + 10
    while get(port, "/health")[0] != 503 and time.time() < deadline:
        time.sleep(0.2)
    assert get(port, "/health")[0] == 503, "a lost headless node must show in /health"


def test_mp_head_refuses_ranks_outside_dp(sim):
    rpc = free_port()
    common = ["--data-parallel-size", "4", "--data-parallel-size-local", "2", "--data-parallel-address", "127.0.0.1",
              "--data-parallel-rpc-port", str(rpc)]
    sim.start("vllm-mindspore", "serve", sim.model, "--port", str(free_port()), "--host", "127.0.0.1", *common)
    code, output = sim.run("vllm-mindspore", "serve", sim.model, "--headless", "--data-parallel-start-rank", "3",
                           *common)
    assert code == 1 and "outside data_parallel_size 4" in output, output
