"""The router's configuration, as the router phase writes it (plugins/plugin_utils/phases/router.py and the role's
templates), run by the real HAProxy (Debian 12's 2.6 package, tests/sim/setup-host.sh installs it) in front of
serve doubles on loopback: routing by the body's model, keys, streaming, health, ejection, drain.

The drain goes through the collection's own router_server module functions (HAProxy's runtime API)."""

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest

import test_serve_double
from http_call import call
from test_serve_double import free_port, wait_http

# The doubles' fixture, used by name.
sim = test_serve_double.sim

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"
ENGINE_KEY, CLIENT_KEY = "engine-key-7f", "client-key-3a"

pytestmark = pytest.mark.skipif(not os.path.exists(HAPROXY), reason="haproxy is installed by tests/sim/setup-host.sh")


def collection(tmp_path):
    """The collection importable as ansible_collections.ascend.inference (the repository under that name)."""
    root = tmp_path / "collections"
    (root / "ansible_collections" / "ascend").mkdir(parents=True)
    os.symlink(REPO, root / "ansible_collections" / "ascend" / "inference")
    sys.path.insert(0, str(root))


class Node(object):
    """The phase's view of the router host: the plan and the two variables it reads."""

    def __init__(self, plan, variables, render):
        self.host, self.plan, self.variables, self.render = "r1", plan, variables, render

    def var(self, name, default=None, host=None):
        return self.variables.get(name, default)


@pytest.fixture
def router(sim, tmp_path):  # noqa: F811 (the fixture imported above)
    collection(tmp_path)
    from ansible_collections.ascend.inference.plugins.plugin_utils.phases import router as phase_router
    from ansible_collections.ascend.inference.plugins.module_utils.plan import router as router_plan
    from ansible_collections.ascend.inference.plugins.plugin_utils.phases.node import render
    from ansible_collections.ascend.inference.plugins.modules import router_server
    from ansible_collections.ascend.inference.plugins.module_utils.apply import programs

    ports = dict((name, free_port()) for name in ("a1", "a2", "big", "router", "metrics"))
    engines = {}
    for name, served in (("a1", "qwen"), ("a2", "qwen"), ("big", "big")):
        # Each double holds its own NPUs (lock directory) and streams a token every 50 ms.
        engines[name] = sim.start("vllm", "serve", sim.model, "--served-model-name", served, "--port",
                                  str(ports[name]), "--host", "127.0.0.1", VLLM_API_KEY=ENGINE_KEY,
                                  ASCEND_SIM_DECODE_SECONDS="0.05", ASCEND_SIM_LOCK_DIR=str(tmp_path / name))
    for name, proc in engines.items():
        assert wait_http(ports[name], proc)[0] == 200

    def server(name):
        return {"name": name, "host": "r1", "address": "127.0.0.1", "port": ports[name]}

    plan = {"cluster": {"config_dir": str(tmp_path / "etc"), "unit_dir": str(tmp_path / "units"),
                        "units": {"firewall": "ascend-firewall.service"}},
            "router": {"hosts": ["r1"], "addresses": {"r1": "127.0.0.1"}, "port": ports["router"],
                       "metrics_port": ports["metrics"], "unit": "ascend-router.service",
                       "socket": str(tmp_path / "admin.sock"),
                       "backends": [{"name": "model-a1", "served_model_name": "qwen", "checks": [router_plan.SERVER_HEALTH],
                                     "allowed_paths": list(router_plan.CLIENT_PATHS),
                                     "servers": [server("a1"), server("a2")]},
                                    # As a prefill/decode instance's proxy: completions only (router_plan).
                                    {"name": "model-big", "served_model_name": "big", "checks": [router_plan.SERVER_HEALTH],
                                     "allowed_paths": list(router_plan.PD_CLIENT_PATHS),
                                     "servers": [server("big")]},
                                    # A prefill/decode route as plan/router.section writes it: up while its pool
                                    # (a1 stands for the decode pool) and its server (big, for the proxy) answer.
                                    {"name": "model-pd", "served_model_name": "pdq",
                                     "checks": [{"address": "127.0.0.1", "port": ports["a1"], "path": "/health",
                                                 "pool": "pd-decode"}, dict(router_plan.SERVER_HEALTH)],
                                     "allowed_paths": list(router_plan.PD_CLIENT_PATHS),
                                     "servers": [dict(server("big"), name="pd")]}]},
            # Each engine's /metrics at the router's metrics port, as plan/monitoring.section gives them.
            "monitoring": {"engine_metrics": [{"path": "/engines/%s/r1/metrics" % name, "address": "127.0.0.1",
                                               "port": ports[name]} for name in ("a1", "big")]}}
    settings = {"package": "haproxy", "program": HAPROXY, "maxconn": 200, "buffer_bytes": 65536, "timeout_seconds": 60,
                "check_interval_ms": 300, "check_fall": 2, "check_rise": 1, "check_timeout_ms": 2000,
                "tls_certificate": ""}
    state = phase_router.desired(Node(plan, {"ascend_api_key": ENGINE_KEY, "router_client_keys": [CLIENT_KEY]},
                                      render), settings)["apply"]
    for directory in state["directories"]:
        os.makedirs(directory["path"], exist_ok=True)
    for spec in state["files"]:
        os.makedirs(os.path.dirname(spec["path"]), exist_ok=True)
        text = render(spec["template"], spec["values"]) if "template" in spec else \
            spec.get("content", state["secrets"].get(spec["path"]))
        with open(spec["path"], "w") as handle:
            handle.write(text)
    # What the apply asks of the program, judged on this machine's real HAProxy (Debian 12's 2.6).
    (build,) = state["requires"]
    said = subprocess.run([HAPROXY, "-vv"], capture_output=True, text=True, check=False)
    assert programs.judged(build, said.returncode, said.stdout, said.stderr) is None, said.stdout[:300]
    config = plan["cluster"]["config_dir"] + "/router/haproxy.cfg"
    checked = subprocess.run([HAPROXY, "-c", "-q", "-f", config], capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # As the unit runs it: the engines' key from its environment file.
    proc = subprocess.Popen([HAPROXY, "-db", "-f", config], env=dict(os.environ, ASCEND_ROUTER_ENGINE_KEY=ENGINE_KEY),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    class Router(object):
        port = ports["router"]
        engine_ports = ports

        @staticmethod
        def replicas():
            return router_server.servers(router_server.command(plan["router"]["socket"], "show stat"))

        @staticmethod
        def set_state(backend, name, state):
            return router_server.command(plan["router"]["socket"], "set server %s/%s state %s" % (backend, name, state))

    found = Router()
    found.engines = engines
    try:
        deadline = time.time() + 20
        while ask(found.port, "/health")[0] != 200:
            assert proc.poll() is None and time.time() < deadline, proc.communicate()[0]
            time.sleep(0.2)
        yield found
    finally:
        proc.kill()
        proc.communicate()


def ask(port, path, body=None, key=CLIENT_KEY, stream=False):
    """(status, JSON answer, or for a stream the list of its data lines); -1 when lost."""
    return call("http://127.0.0.1:%d%s" % (port, path), body, key, stream)


def success_count(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5) as answer:
        lines = answer.read().decode().splitlines()
    return sum(float(line.rsplit(" ", 1)[1]) for line in lines if line.startswith("vllm:request_success_total"))


def complete(port, model, stream=False, key=CLIENT_KEY):
    return ask(port, "/v1/completions", {"model": model, "prompt": "I am", "max_tokens": 4, "stream": stream}, key,
               stream)


def test_routes_by_model_checks_keys_and_streams(router):
    status, answer = complete(router.port, "big")
    assert status == 200 and answer["model"] == "big", answer
    for _attempt in range(4):
        status, answer = complete(router.port, "qwen")
        assert status == 200 and answer["model"] == "qwen", answer
    # Balanced over both replicas of qwen; none of them reached big.
    assert success_count(router.engine_ports["a1"]) >= 1 and success_count(router.engine_ports["a2"]) >= 1
    assert success_count(router.engine_ports["big"]) == 1
    status, events = complete(router.port, "qwen", stream=True)
    assert status == 200 and events[-1] == "[DONE]" and len(events) == 5, events
    status, answer = complete(router.port, "nope")
    assert status == 404 and answer["message"] == "The model `nope` does not exist.", answer
    status, answer = ask(router.port, "/v1/completions", {"prompt": "no model"})
    assert status == 400 and answer["message"].startswith("no model in the request body"), answer
    # The client's key is checked at the router; the engines' key is not the client's.
    assert complete(router.port, "qwen", key=None)[0] == 401
    assert complete(router.port, "qwen", key=ENGINE_KEY)[0] == 401
    # Whatever the path's spelling: %76 is "v", which the engine would decode; nothing without a key passes.
    body = {"model": "qwen", "prompt": "I am", "max_tokens": 4}
    for path in ("/%761/completions", "//v1/completions", "/metrics", "/v1/models"):
        assert ask(router.port, path, body if "completions" in path else None, key=None)[0] == 401, path
    status, models = ask(router.port, "/v1/models")
    assert status == 200 and [m["id"] for m in models["data"]] == ["qwen", "big", "pdq"], models
    # /health needs no key, as vLLM's.
    assert ask(router.port, "/health", key=None)[0] == 200
    # Only a client's paths reach an engine, with a key: HAProxy's own 404 page for the paths the engines answer
    # without their key (/invocations serves completions, /tokenize; a PD proxy's /instances/add would hand out
    # the engines' key). The double answers /invocations and /tokenize as vLLM 0.32 does (test_double_matches_real).
    for model, path in (("qwen", "/invocations"), ("qwen", "/tokenize"), ("qwen", "/pooling"), ("big", "/v1/embeddings"),
                        ("big", "/instances/add")):
        status, denied = ask(router.port, path, {"model": model, "prompt": "I am", "max_tokens": 4})
        assert status == 404 and "<h1>404 Not Found</h1>" in denied, (path, denied)


def test_the_metrics_port_serves_each_engines_metrics_and_nothing_else_of_it(router):
    def get(path, body=None):
        request = urllib.request.Request("http://127.0.0.1:%d%s" % (router.engine_ports["metrics"], path),
                                         data=json.dumps(body).encode() if body else None)
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    status, text = get("/engines/a1/r1/metrics")
    assert status == 200 and "vllm:request_success_total" in text, text[:300]
    # The router's own metrics stay where they were.
    status, text = get("/metrics")
    assert status == 200 and "haproxy_server_status" in text, text[:300]
    # No other path of an engine, no other engine (a2 is not listed), no POST: the router's empty 404 (an engine's
    # has a JSON body), the engine never asked.
    before = success_count(router.engine_ports["a1"])
    for path, body in (("/engines/a2/r1/metrics", None), ("/engines/a1/r1/invocations", None),
                       ("/engines/a1/r1/metrics", {"model": "qwen", "prompt": "I am", "max_tokens": 2}),
                       ("/invocations", {"model": "qwen", "prompt": "I am", "max_tokens": 2}), ("/tokenize", None)):
        status, text = get(path, body)
        assert (status, text) == (404, ""), path
    assert success_count(router.engine_ports["a1"]) == before


def test_a_killed_replica_is_ejected_and_requests_keep_succeeding(router):
    router.engines["a2"].kill()
    answers = [complete(router.port, "qwen")[0] for _attempt in range(10)]
    assert answers == [200] * 10, answers
    deadline = time.time() + 5
    while router_status(router, "a2") != "DOWN":
        assert time.time() < deadline, router.replicas()
        time.sleep(0.2)
    assert ask(router.port, "/health", key=None)[0] == 200
    # The last replica of a model gone: /health says so.
    router.engines["big"].kill()
    deadline = time.time() + 5
    while ask(router.port, "/health", key=None)[0] != 503:
        assert time.time() < deadline, router.replicas()
        time.sleep(0.2)


def test_a_prefill_decode_route_is_out_while_a_pool_is_down(router):
    """vllm-ascend's proxy answers /healthcheck whatever its pools do: the route's checks ask the pools too."""
    wait_status(router, "pd", "UP")
    router.engines["a1"].kill()
    wait_status(router, "pd", "DOWN")
    # Its proxy still answers; the router sends nothing to it: HAProxy's 503, no empty 200.
    assert ask(router.port, "/health", key=None)[0] == 503
    status, answer = complete(router.port, "pdq")
    assert status == 503 and "No server is available" in answer, (status, answer)
    assert router_status(router, "big") == "UP" and complete(router.port, "qwen")[0] == 200


def wait_status(router, name, status, seconds=5):
    deadline = time.time() + seconds
    while router_status(router, name) != status:
        assert time.time() < deadline, router.replicas()
        time.sleep(0.2)


def router_status(router, name):
    return next(r["status"] for r in router.replicas() if r["server"] == name)


def test_a_drained_replica_finishes_its_stream_and_takes_no_new_request(router):
    results = {}

    def stream():
        results["stream"] = complete(router.port, "qwen", stream=True)

    # A stream of 4 tokens at 50 ms each is in flight on one replica when both are considered.
    thread = threading.Thread(target=stream)
    thread.start()
    time.sleep(0.1)
    busy = [name for name in ("a1", "a2") if running(router.engine_ports[name])]
    assert len(busy) == 1, busy
    assert router.set_state("model-a1", busy[0], "drain").strip() == ""
    idle = ({"a1", "a2"} - set(busy)).pop()
    before = success_count(router.engine_ports[busy[0]])
    answers = [complete(router.port, "qwen")[0] for _attempt in range(4)]
    thread.join(10)
    assert answers == [200] * 4 and results["stream"][0] == 200 and results["stream"][1][-1] == "[DONE]", results
    # The drained replica finished only the stream; the new requests all went to the other.
    assert success_count(router.engine_ports[busy[0]]) == before + 1
    assert success_count(router.engine_ports[idle]) >= 4
    assert router_status(router, busy[0]) == "DRAIN"


def test_a_drained_replica_that_answers_late_is_not_taken_for_down(router):
    """A real vLLM 0.32 on two cores, drained and busy with a long stream, answered /health in over 500 ms
    (molecule/real_vllm). A check waits check_timeout_ms (2 s here) for the answer, not the 300 ms interval: the
    replica stays DRAIN, never DOWN (HAProxy's exporter shows a drained replica whose checks fail as DOWN, which
    AscendEngineNotReady reads)."""
    assert router.set_state("model-a1", "a2", "drain").strip() == ""
    engine = router.engines["a2"]
    seen = set()
    # Stopped for four check intervals: every check meanwhile is answered once it runs again, 1.2 s late.
    os.kill(engine.pid, signal.SIGSTOP)
    try:
        deadline = time.time() + 1.2
        while time.time() < deadline:
            seen.add(router_status(router, "a2"))
            time.sleep(0.1)
    finally:
        os.kill(engine.pid, signal.SIGCONT)
    deadline = time.time() + 2
    while time.time() < deadline:
        seen.add(router_status(router, "a2"))
        time.sleep(0.1)
    assert seen == {"DRAIN"}, seen


def running(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5) as answer:
        lines = answer.read().decode().splitlines()
    return sum(float(line.rsplit(" ", 1)[1]) for line in lines if line.startswith("vllm:num_requests_running"))
