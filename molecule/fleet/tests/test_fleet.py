"""Several instances on three nodes (ascend_instances): each on its own NPUs, ports and HCCL range, with its own
units and environment; completions by model on each instance's port and through the router (HAProxy on fleet-n1);
a killed replica ejected; a changed setting rolled under a request loop; status, restart and removal per instance; a
prefill pool (fleet-n2) and a decode pool (fleet-n3) joined by the KV connector behind vllm-ascend's own proxy.

The serve double refuses an NPU or an HCCL port another engine holds (tests/sim/doubles/vllm_sim.py, claim_npus):
that the deploy converged at all shows the allocation disjoint on every node."""

import copy
import json
import os
import re
import shlex
import socket
import tempfile
import threading
import time
import urllib.parse
import warnings

from http_call import call
from serve_checks import (DASHBOARD, INVENTORY, address_of, empty_dashboard_panels, flags, node, playbook,
                          recap, request, rolled, router_status)

import pytest
import testinfra.utils.ansible_runner

HOSTS = testinfra.utils.ansible_runner.AnsibleRunner(INVENTORY).get_hosts("ascend_cluster")
N1, N2, N3 = "fleet-n1", "fleet-n2", "fleet-n3"
testinfra_hosts = ["podman://" + N3]
KEY = "sim-fleet-key-41d2"
CLIENT_KEY = "sim-fleet-client-5c1e"
ROUTER_PORT = 8080
EMBED_TOKEN = "sim-embed-token-9b7e"

# What the planner allocates (instances in name order: big, chat-a, chat-b, embed, pd-decode, pd-prefill): per node,
# each instance's unit -> (NPUs, API port or None on a headless node, HCCL_IF_BASE_PORT: 60000 + 32 x its lowest NPU).
EXPECTED = {
    N1: {"chat-a": ("0,1,2,3", "8000", "60000"), "embed": ("4,5", "8001", "60128")},
    N2: {"chat-b": ("0,1,2,3", "8000", "60000"), "embed": ("4,5", None, "60128"), "pd-prefill": ("6,7", "8002", "60192")},
    N3: {"big": ("0,1,2,3", "8000", "60000"), "pd-decode": ("4,5", "8001", "60128")},
}
# The router's servers and their models: the PD instance's server is its proxy (fleet-n3, port 8002).
MODELS = {"chat-a": "qwen", "chat-b": "qwen", "embed": "/models/embed", "big": "/models/big", "pd": "qwen-pd"}
SERVED = dict(MODELS, **{"pd-prefill": "qwen-pd", "pd-decode": "qwen-pd"})
PROXY_PORT = 8002
# Above the Ascend transport's range [20000, 28000) of 8-NPU nodes: the prefill pool's 2 NPUs, then the decode's.
KV_PORTS = {"pd-prefill": 28000, "pd-decode": 28002}


def unit(instance):
    return "ascend-serve-%s.service" % instance


def process(host, instance):
    """The instance's running serve process on HOST: (argv after the interpreter, environment)."""
    pid = int(host.check_output("systemctl show -p MainPID --value %s" % unit(instance)))
    assert pid > 0, "%s is not running on %s" % (unit(instance), host.backend.name)
    argv = host.file("/proc/%d/cmdline" % pid).content_string.rstrip("\0").split("\0")
    environ = host.check_output("tr '\\0' '\\n' < /proc/%d/environ" % pid)
    env = dict(line.split("=", 1) for line in environ.splitlines() if "=" in line)
    return (argv[1:] if os.path.basename(argv[0]).startswith("python") else argv), env


def test_each_instance_runs_on_its_own_npus_ports_and_hccl_range():
    for name, instances in EXPECTED.items():
        host = node(name)
        for instance, (devices, port, hccl) in instances.items():
            argv, env = process(host, instance)
            found = flags(argv)
            assert env["ASCEND_RT_VISIBLE_DEVICES"] == devices, (name, instance)
            assert env["HCCL_IF_BASE_PORT"] == hccl, (name, instance)
            assert found.get("--port") == port, (name, instance, argv)
        # Nothing else of serve runs there: no single-model unit, no other instance's.
        running = host.check_output("systemctl list-units --type=service --state=active --plain --no-legend "
                                    "'ascend-serve*' | awk '{print $1}'").split()
        assert sorted(running) == sorted(unit(i) for i in instances), (name, running)


def test_the_ray_instance_runs_its_own_ray_cluster_on_its_host_only():
    host = node(N3)
    assert host.service("ascend-ray-big.service").is_running
    assert host.file("/etc/ascend-inference/ray-auth-token-big").mode in (0o600, 0o640)
    # Ray sees the instance's NPUs (its node environment), and big's engine runs on that cluster.
    ray_pid = int(host.check_output("systemctl show -p MainPID --value ascend-ray-big.service"))
    environ = host.check_output("tr '\\0' '\\n' < /proc/%d/environ" % ray_pid)
    assert "ASCEND_RT_VISIBLE_DEVICES=0,1,2,3" in environ.splitlines()
    # The engine is a client of that cluster (its token), and goes down with it (PartOf=). On one node TP 4 fits: vLLM
    # runs it without the Ray executor, as the planner's single-model plan would.
    _argv, env = process(host, "big")
    assert env["RAY_AUTH_TOKEN_PATH"] == "/etc/ascend-inference/ray-auth-token-big"
    assert "ascend-ray-big.service" in host.check_output("systemctl show -p PartOf --value %s" % unit("big"))
    # No other Ray: not the single model's unit, nothing on the hosts of the mp instances.
    for name in HOSTS:
        units = node(name).check_output("ls /etc/systemd/system").split()
        assert [u for u in units if u.startswith("ascend-ray")] == (["ascend-ray-big.service"] if name == N3 else [])
        # [r]aylet: a pattern that does not match the shell running pgrep.
        assert node(name).run("pgrep -f '[r]aylet'").rc == (0 if name == N3 else 1), name


def test_the_cross_node_instance_joins_its_headless_worker():
    argv, _env = process(node(N2), "embed")
    found = flags(argv)
    assert found["--headless"] is True and found["--data-parallel-start-rank"] == "1"
    assert found["--data-parallel-address"] == address_of(node(N1))
    assert found["--data-parallel-rpc-port"] == "29550"


def test_each_instance_answers_for_its_model_on_its_port():
    client = node(N3)
    for name, instances in EXPECTED.items():
        ip = address_of(node(name))
        for instance, (_devices, port, _hccl) in instances.items():
            if port is None:
                continue
            status, models = request(client, "http://%s:%s/v1/models" % (ip, port), key=KEY)
            assert status == 200 and [m["id"] for m in models["data"]] == [SERVED[instance]], (instance, models)
            status, answer = request(client, "http://%s:%s/v1/completions" % (ip, port),
                                     {"model": SERVED[instance], "prompt": "I am", "max_tokens": 8}, KEY)
            assert status == 200 and answer["model"] == SERVED[instance], (instance, answer)


def test_an_instances_secret_reaches_its_processes_only():
    host = node(N1)
    _argv, embed = process(host, "embed")
    _argv, chat = process(host, "chat-a")
    assert embed["EMBED_TOKEN"] == EMBED_TOKEN and "EMBED_TOKEN" not in chat
    assert embed["VLLM_API_KEY"] == KEY == chat["VLLM_API_KEY"]
    secrets = host.file("/etc/ascend-inference/secrets-embed.env")
    assert secrets.mode == 0o600 and EMBED_TOKEN in secrets.content_string
    assert EMBED_TOKEN not in host.file("/etc/ascend-inference/node-embed.env").content_string
    assert EMBED_TOKEN not in host.file("/etc/ascend-inference/secrets-chat-a.env").content_string
    # The single model's files and the login profile are not written with instances.
    for path in ("/etc/ascend-inference/node.env", "/etc/ascend-inference/serve.env",
                 "/etc/profile.d/ascend-inference.sh", "/etc/systemd/system/ascend-serve.service"):
        assert not host.file(path).exists, path


def test_behind_the_router_only_its_port_is_open_to_everyone():
    for name in HOSTS:
        rules = node(name).check_output("nft list table inet ascend_inference")
        opened = re.search(r"^\s*tcp dport \{ ([^}]*) \} accept", rules, re.M)
        ports = set(opened.group(1).split(", ")) if opened else set()
        assert not {"8000", "8001", str(PROXY_PORT)} & ports, (name, rules)
        assert ("8080" in ports) == (name == N1), (name, rules)
        # The monitoring host (fleet-mon) may read what it scrapes here: the router's metrics (the engines' through
        # it) and the NPU exporter; no engine's API port, not the router's client port (open to all anyway), not the
        # PD proxy.
        # (nft lists a set of one port without its braces.)
        scraped = re.search(r"ip saddr @monitors tcp dport (?:\{ ([^}]*) \}|(\d+)) accept", rules)
        assert scraped, (name, rules)
        assert set((scraped.group(1) or scraped.group(2)).split(", ")) == {
            N1: {"8082", "8404"}, N2: {"8082"}, N3: {"8082"}}[name], (name, rules)
    # From the controller, outside the cluster: the router answers, an engine's API port resets the connection.
    assert router("/health", key=None)[0] == 200
    with pytest.raises(OSError):
        socket.create_connection((address_of(node(N1)), 8000), timeout=5).close()


def router(path, body=None, key=CLIENT_KEY, stream=False):
    """A request to the router from the controller: (status, JSON, or a stream's data lines); -1 when lost."""
    return call("http://%s:%d%s" % (address_of(node(N1)), ROUTER_PORT, path), body, key, stream, timeout=30)


def complete(model, stream=False, key=CLIENT_KEY, tokens=8):
    return router("/v1/completions", {"model": model, "prompt": "I am", "max_tokens": tokens, "stream": stream},
                  key, stream)


def answered(host, port):
    """vllm:request_success_total of the engine on HOST:PORT, read from inside the cluster."""
    text = host.check_output("curl -s http://127.0.0.1:%d/metrics" % port)
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("vllm:request_success_total"))


def test_the_router_sends_each_model_to_its_instances():
    before = {"chat-a": answered(node(N1), 8000), "chat-b": answered(node(N2), 8000),
              "embed": answered(node(N1), 8001), "big": answered(node(N3), 8000)}
    for _attempt in range(6):
        status, answer = complete("qwen")
        assert status == 200 and answer["model"] == "qwen", answer
    for instance in ("embed", "big"):
        status, answer = complete(MODELS[instance])
        assert status == 200 and answer["model"] == MODELS[instance], answer
    after = {"chat-a": answered(node(N1), 8000), "chat-b": answered(node(N2), 8000),
             "embed": answered(node(N1), 8001), "big": answered(node(N3), 8000)}
    # qwen's six went to its two replicas, both; embed and big had one each.
    assert after["chat-a"] > before["chat-a"] and after["chat-b"] > before["chat-b"], (before, after)
    assert after["chat-a"] + after["chat-b"] - before["chat-a"] - before["chat-b"] == 6
    assert (after["embed"] - before["embed"], after["big"] - before["big"]) == (1, 1)
    status, events = complete("qwen", stream=True)
    assert status == 200 and events[-1] == "[DONE]", events
    status, answer = complete("/models/nope")
    assert status == 404 and answer["message"] == "The model `/models/nope` does not exist.", answer
    # The client's key is the router's to check; the engines' key is not a client's.
    assert complete("qwen", key=KEY)[0] == 401 and complete("qwen", key=None)[0] == 401
    status, models = router("/v1/models")
    assert status == 200 and sorted(m["id"] for m in models["data"]) == sorted(set(MODELS.values())), models


def replicas(host=None):
    """{instance: status} as the router on fleet-n1 gives it."""
    return router_status(host or node(N1))


def wait_for(condition, seconds, what):
    deadline = time.time() + seconds
    while not condition():
        assert time.time() < deadline, what()
        time.sleep(0.5)


def test_a_killed_replica_is_ejected_and_requests_keep_succeeding():
    host = node(N2)
    host.check_output("systemctl kill --signal=SIGKILL %s" % unit("chat-b"))
    # Refused connections go to the other replica (retry-on conn-failure): none is lost.
    answers = [complete("qwen")[0] for _attempt in range(10)]
    assert answers == [200] * 10, answers
    wait_for(lambda: replicas()["chat-b"] == "DOWN", 10, replicas)
    # systemd starts it again (serve_restart_sec); the router's checks take it back.
    wait_for(lambda: replicas()["chat-b"] == "UP", 120, replicas)
    assert replicas() == dict((name, "UP") for name in MODELS)


class Loop(threading.Thread):
    """Requests for qwen through the router, streaming every other one, until stopped; at most 1000 and 600 s."""

    def __init__(self):
        super(Loop, self).__init__(daemon=True)
        self.results, self.stop = [], threading.Event()

    def run(self):
        deadline = time.time() + 600
        while not self.stop.is_set() and len(self.results) < 1000 and time.time() < deadline:
            stream = len(self.results) % 2 == 1
            status, answer = complete("qwen", stream=stream, tokens=160)
            done = status == 200 and (answer[-1] == "[DONE]" if stream else answer["model"] == "qwen")
            self.results.append((stream, status, done, None if done else answer))


def under_load(*args):
    """A playbook run while four clients send qwen requests through the router, 160 tokens each (8 s at
    ASCEND_SIM_DECODE_SECONDS 0.05: leastconn gives each replica two in flight). Asserts no request was lost and some
    streamed; returns (rc, output)."""
    loops = [Loop() for _client in range(4)]
    for loop in loops:
        loop.start()
    try:
        rc, out = playbook(*args)
    finally:
        for loop in loops:
            loop.stop.set()
            loop.join(60)
    results = [r for loop in loops for r in loop.results]
    lost = [r for r in results if not r[2]]
    assert not lost and len(results) >= 8 and any(r[0] for r in results), (len(results), lost)
    return rc, out


def instances_with(extra):
    """The scenario's ascend_instances with EXTRA ({instance: {variable: value}}) set on those instances."""
    found = copy.deepcopy(testinfra.utils.ansible_runner.AnsibleRunner(INVENTORY).get_variables(N1)["ascend_instances"])
    for name, values in extra.items():
        found[name].update(values)
    return {"ascend_instances": found}


def test_a_changed_setting_rolls_the_replicas_through_deploy_and_loses_no_request():
    # An environment change of both replicas of qwen (node_env's files): deploy.yml takes them through the router
    # one at a time, as restart.yml does (real_vllm runs restart.yml on a real engine), while clients keep sending;
    # the other instances keep their processes.
    before = {(name, i): pid(node(name), i) for name, instances in EXPECTED.items() for i in instances}
    with tempfile.NamedTemporaryFile("w", suffix=".json") as handle:
        json.dump(instances_with({"chat-a": {"extra_env": {"ROLL_MARK": "1"}},
                                  "chat-b": {"extra_env": {"ROLL_MARK": "1"}}}), handle)
        handle.flush()
        rc, out = under_load("deploy.yml", "--tags", "node_env,serve", "-e", "@" + handle.name)
    assert rc == 0, out
    # A drain waited for a request that was running on the replica (the engine's vllm:num_requests_running).
    assert re.search(r"idle, \d+ s of 600 s: [1-9]\d* running", out), out
    # One at a time: chat-a back in the router before chat-b was drained.
    assert rolled(out) == ["drain", "maintenance", "back"] * 2, out
    after = {key: pid(node(key[0]), key[1]) for key in before}
    for key, was in before.items():
        assert (after[key] != was) == (key[1] in ("chat-a", "chat-b")), key
    for name, instance in ((N1, "chat-a"), (N2, "chat-b")):
        assert process(node(name), instance)[1].get("ROLL_MARK") == "1", instance
    assert replicas() == dict((name, "UP") for name in MODELS)
    # Back to the inventory's instances: rolled the same way, and a run after it changes nothing.
    rc, out = playbook("deploy.yml", "--tags", "node_env,serve")
    assert rc == 0 and rolled(out) == ["drain", "maintenance", "back"] * 2, out
    assert "ROLL_MARK" not in process(node(N1), "chat-a")[1]
    rc, out = playbook("deploy.yml", "--tags", "node_env,serve")
    assert rc == 0 and rolled(out) == [] and set(recap(out).values()) == {0}, out


def test_status_shows_every_instance_and_the_router():
    rc, out = playbook("status.yml")
    assert rc == 0, out
    for instance in set(SERVED) - {"pd"}:
        assert "instance %s: vllm-ascend %s" % (instance, "ray" if instance == "big" else "mp") in out, out
    # big's own Ray cluster, as its head sees it.
    assert "Ray: 1/1 nodes alive, 4 NPUs" in out, out
    assert ("prefill/decode pd: proxy on fleet-n3 (port %d) active/running, /healthcheck 200; prefill pd-prefill on "
            "fleet-n2, decode pd-decode on fleet-n3" % PROXY_PORT) in out, out
    assert "API http://%s:8001: /health 200" % address_of(node(N1)) in out
    assert "router on fleet-n1 (port 8080): active/running" in out, out
    assert "qwen: chat-a UP, chat-b UP" in out, out


def kv_config(instance):
    argv, env = process(node(N2 if instance == "pd-prefill" else N3), instance)
    return json.loads(flags(argv)["--kv-transfer-config"]), env


def test_prefill_and_decode_answer_through_the_router_with_the_kv_cache_moved():
    prefill, decode = node(N2), node(N3)
    # Each pool's connector configuration, as the planner wrote it (vllm-ascend's tutorial's fields).
    for instance, role in (("pd-prefill", "kv_producer"), ("pd-decode", "kv_consumer")):
        config, env = kv_config(instance)
        assert config == {"kv_connector": "MooncakeConnectorV1", "kv_role": role, "kv_port": KV_PORTS[instance],
                          "engine_id": instance, "kv_connector_extra_config": {
                              "prefill": {"tp_size": 2, "dp_size": 1, "pp_size": 1},
                              "decode": {"tp_size": 1, "dp_size": 2, "pp_size": 1}}}
        assert env["VLLM_HOST_IP"] == address_of(node(N2 if instance == "pd-prefill" else N3))
        assert env["HCCL_BUFFSIZE"] == ("256" if role == "kv_producer" else "600")
    # The prefill's handshake ports, on its cluster address: kv_port + each of its 2 workers.
    listening = prefill.check_output("ss -ltnH")
    for port in (28000, 28001):
        assert "%s:%d " % (address_of(prefill), port) in listening, listening
    before = (answered(prefill, 8002), answered(decode, 8001))
    status, answer = complete("qwen-pd")
    assert status == 200 and answer["model"] == "qwen-pd" and len(answer["choices"][0]["text"].split()) == 8, answer
    status, events = complete("qwen-pd", stream=True)
    assert status == 200 and events[-1] == "[DONE]" and len(events) == 9, events
    # Each request prefilled once on fleet-n2 (one token), decoded on fleet-n3 from the blocks it pulled there.
    assert (answered(prefill, 8002) - before[0], answered(decode, 8001) - before[1]) == (2, 2)
    pulled = decode.check_output("journalctl -u %s --no-pager -o cat | grep -c 'pulled .* from prefill engine "
                                 "pd-prefill-[0-9a-f]* at %s:28000' || true" % (unit("pd-decode"), address_of(prefill)))
    assert int(pulled) >= 2, pulled
    # The proxy's own administration is no client's: the router passes completions only to it.
    status, denied = router("/instances/add", {"model": "qwen-pd", "type": "decode", "instances": ["192.0.2.9:1"]})
    assert status == 404 and "<h1>404 Not Found</h1>" in denied, denied


def test_a_stopped_decode_takes_the_route_out_and_is_named_by_the_proxy_and_by_status():
    decode = node(N3)
    assert replicas()["pd"] == "UP"
    decode.check_output("systemctl stop %s" % unit("pd-decode"))
    stopped = time.time()
    try:
        # The router's checks ask each pool's /health (the proxy's /healthcheck answers ok whatever they do): out
        # after router_check_fall (2) checks of 500 ms; HAProxy's 503 then, not the proxy's empty 200.
        wait_for(lambda: replicas()["pd"] == "DOWN", 10, replicas)
        took = time.time() - stopped
        status, answer = complete("qwen-pd")
        assert status == 503 and "No server is available" in answer, (status, answer)
        # vllm-ascend's proxy swallows the decode's failure once the stream has begun: HTTP 200 and no completion.
        status, answer = request(decode, "http://%s:%d/v1/completions" % (address_of(decode), PROXY_PORT),
                                 {"model": "qwen-pd", "prompt": "I am", "max_tokens": 2})
        assert (status, answer) == (200, ""), (status, answer)
        said = decode.check_output("journalctl -u ascend-pd-pd.service --no-pager -o cat --since -2min")
        assert "Error during streaming from decoder %s:8001" % address_of(decode) in said, said
        rc, out = playbook("status.yml")
        assert rc != 0 and "- instance pd-decode: fleet-n3: %s is not active" % unit("pd-decode") in out, out
    finally:
        decode.check_output("systemctl start %s" % unit("pd-decode"))
    wait_for(lambda: request(decode, "http://%s:8001/health" % address_of(decode))[0] == 200, 60,
             lambda: "pd-decode did not answer /health again")
    wait_for(lambda: replicas()["pd"] == "UP", 10, replicas)
    assert complete("qwen-pd")[0] == 200
    warnings.warn("a stopped decode pool: the prefill/decode route out of the router after %.1f s" % took)


def test_a_prefill_npu_that_cannot_reach_the_decode_node_is_named():
    """Only the PD pings leave from NPU 7 of fleet-n2 (the node's own pings leave from its first NPU, 0): its lost
    pings to fleet-n3's decode NPU are the prefill-to-decode check's alone."""
    host, state = node(N2), "/etc/ascend-sim/node.json"
    saved = host.file(state).content_string
    faulty = dict(json.loads(saved), faults={"7": {"ping_loss": True}})
    host.check_output("cat > %s <<'EOF'\n%s\nEOF" % (state, json.dumps(faulty)))
    try:
        rc, out = playbook("check.yml", "--tags", "npu_network")
    finally:
        host.check_output("cat > %s <<'EOF'\n%s\nEOF" % (state, saved))
    assert rc != 0, out
    rows = re.findall(r"^(?:.*\| )?(fleet-n\d)\s+(\d+)\s+ping (\S+) \((fleet-n\d)\)", out, re.M)
    assert sorted(set((row[0], row[1], row[3]) for row in rows)) == [(N2, "7", N3)], out


# --- metrics: Prometheus on fleet-mon -----------------------------------------------------------------------

MON = "fleet-mon"


def prometheus(path):
    """Prometheus' HTTP API on fleet-mon, read there: the answer's data."""
    answer = json.loads(node(MON).check_output("curl -s --max-time 10 %s" % shlex.quote("http://127.0.0.1:9090" + path)))
    assert answer["status"] == "success", answer
    return answer["data"]


def query(expr):
    return prometheus("/api/v1/query?query=" + urllib.parse.quote(expr, safe=""))["result"]


def firing(alert):
    return [a["labels"] for a in prometheus("/api/v1/alerts")["alerts"]
            if a["labels"]["alertname"] == alert and a["state"] == "firing"], \
        dict((a["labels"].get("instance", ""), a["annotations"]) for a in prometheus("/api/v1/alerts")["alerts"]
             if a["labels"]["alertname"] == alert)


def test_prometheus_outside_the_cluster_scrapes_every_engine_the_router_and_the_npus():
    def active():
        return prometheus("/api/v1/targets?state=active")["activeTargets"]

    wait_for(lambda: active() and all(t["health"] == "up" for t in active()), 60,
             lambda: [(t["labels"], t["health"], t["lastError"]) for t in active() if t["health"] != "up"])
    by_job = {}
    for target in active():
        by_job.setdefault(target["labels"]["job"], []).append(target["labels"])
    engines = dict((labels["instance"], labels) for labels in by_job["ascend-engine"])
    assert sorted(engines) == ["big", "chat-a", "chat-b", "embed", "pd-decode", "pd-prefill"]
    assert (engines["pd-prefill"]["role"], engines["pd-prefill"]["node"]) == ("prefill", N2)
    assert (engines["pd-decode"]["role"], engines["pd-decode"]["model"]) == ("decode", "qwen-pd")
    assert (engines["embed"]["node"], engines["embed"]["dp_rank"]) == (N1, "0")
    assert [labels["node"] for labels in by_job["ascend-router"]] == [N1]
    assert sorted(labels["node"] for labels in by_job["ascend-npu"]) == [N1, N2, N3]
    # fleet-mon is no member: it reads every engine through the router's metrics port, and reaches neither an
    # engine's API port (vLLM serves /invocations there without its key) nor the PD proxy's.
    assert set(t["scrapeUrl"].split("/engines/")[0] for t in active() if t["labels"]["job"] == "ascend-engine") == {
        "http://%s:8404" % address_of(node(N1))}
    for url in ("http://%s:8000/invocations" % address_of(node(N1)), "http://%s:8000/metrics" % address_of(node(N3)),
                "http://%s:%d/healthcheck" % (address_of(node(N3)), PROXY_PORT)):
        refused = node(MON).run("curl -s --max-time 5 -o /dev/null %s" % url)
        assert refused.rc == 7, (url, refused)  # curl: connection refused (the firewall's reset)
    # Through the router, an engine's /metrics and nothing else of it.
    engine = "http://%s:8404/engines/chat-a/%s" % (address_of(node(N1)), N1)
    assert request(node(MON), engine + "/metrics")[0] == 200
    assert request(node(MON), engine + "/invocations", {"model": "qwen", "prompt": "I am", "max_tokens": 2})[0] == 404


def test_every_dashboard_panel_returns_data_through_prometheus():
    for model in ("qwen", "/models/embed", "/models/big", "qwen-pd"):
        for _attempt in range(3):
            assert complete(model, tokens=4)[0] == 200, model
    with open(DASHBOARD) as handle:
        board = json.load(handle)
    for variable in board["templating"]["list"]:
        if variable["type"] == "query":
            # label_values(SELECTOR, LABEL): Grafana asks the label values API.
            selector, label = re.match(r"label_values\((.*), (\w+)\)$", variable["definition"]).groups()
            values = prometheus("/api/v1/label/%s/values?match[]=%s" % (label, urllib.parse.quote(selector)))
            assert values, variable["name"]

    # The rate panels need two scrapes after the requests and a rule evaluation (2 s each).
    wait_for(lambda: not empty_dashboard_panels(query), 60, lambda: empty_dashboard_panels(query))


def test_status_shows_each_instances_load_and_its_time_to_first_token():
    rc, out = playbook("status.yml")
    assert rc == 0, out
    for instance in ("chat-a", "chat-b", "big"):
        assert re.search(r"load %s: \d+ running, \d+ waiting, KV cache \d+%%, time to first token p50 [0-9.e-]+ s / "
                         r"p95 [0-9.e-]+ s \(last 5m, Prometheus on %s\)" % (instance, address_of(node(MON))), out), out


def test_a_stopped_engine_raises_engine_down_naming_it():
    host = node(N2)
    host.check_output("systemctl stop %s" % unit("chat-b"))
    started = time.time()
    try:
        wait_for(lambda: firing("AscendEngineDown")[0], 60, lambda: prometheus("/api/v1/alerts"))
        elapsed = time.time() - started
        labels, annotations = firing("AscendEngineDown")
        assert [(l["instance"], l["node"], l["role"]) for l in labels] == [("chat-b", N2, "serve")]
        assert annotations["chat-b"]["summary"] == "Engine chat-b (serve) on fleet-n2 is down"
        # for: 6s, scrapes and evaluations every 2 s.
        assert elapsed < 30, elapsed
    finally:
        host.check_output("systemctl start %s" % unit("chat-b"))
        wait_for(lambda: replicas().get("chat-b") == "UP", 120, replicas)
    wait_for(lambda: not firing("AscendEngineDown")[0], 60, lambda: prometheus("/api/v1/alerts"))


def test_an_npu_fault_raises_the_npu_alert_naming_node_and_npu():
    host, state = node(N3), "/etc/ascend-sim/node.json"
    saved = host.file(state).content_string
    faulty = dict(json.loads(saved), faults={"7": {"health": "Critical"}})
    host.check_output("cat > %s <<'EOF'\n%s\nEOF" % (state, json.dumps(faulty)))
    try:
        wait_for(lambda: firing("AscendNPUUnhealthy")[0], 60, lambda: prometheus("/api/v1/alerts"))
        labels, annotations = firing("AscendNPUUnhealthy")
        assert [(l["node"], l["id"]) for l in labels] == [(N3, "7")]
        assert annotations[N3]["summary"] == "NPU 7 on fleet-n3 is unhealthy"
    finally:
        host.check_output("cat > %s <<'EOF'\n%s\nEOF" % (state, saved))
    wait_for(lambda: not firing("AscendNPUUnhealthy")[0], 60, lambda: prometheus("/api/v1/alerts"))


def test_a_missing_instance_model_is_refused_naming_the_instance():
    host = node(N3)
    host.check_output("mv /models/big /models/big.away")
    try:
        rc, out = playbook("check.yml")
    finally:
        host.check_output("mv /models/big.away /models/big")
    assert rc != 0
    assert ("host fleet-n3: the model of instance big, /models/big, does not exist or holds no file "
            "(ascend_instances.big.model, else ascend_model)") in out, out
    # fleet-n1 holds the same directories but runs no instance of /models/big: nothing said of it there.
    assert "host fleet-n1: the model" not in out


def pid(host, instance):
    return int(host.check_output("systemctl show -p MainPID --value %s" % unit(instance)))


def test_restart_takes_the_instance_it_is_given():
    before = {(name, i): pid(node(name), i) for name, instances in EXPECTED.items() for i in instances}
    rc, out = playbook("restart.yml", "-e", "serve_restart_instances=embed", "--tags", "serve")
    assert rc == 0, out
    after = {key: pid(node(key[0]), key[1]) for key in before}
    for (name, instance), was in before.items():
        if instance == "embed":
            assert after[(name, instance)] != was, (name, instance)
        else:
            assert after[(name, instance)] == was, (name, instance)


# What is left after the removal below: chat-b and embed, pinned (devices, api_port), on fleet-n1 and fleet-n2.
LEFT = {"ascend_instances": {
    "chat-b": {"served_model_name": "qwen", "hosts": [N2], "devices": {N2: [0, 1, 2, 3]}, "api_port": 8000,
               "tensor_parallel_size": 4},
    "embed": {"model": "/models/embed", "hosts": [N1, N2], "devices": {N1: [4, 5], N2: [4, 5]},
              "api_port": 8001, "tensor_parallel_size": 2, "data_parallel_size": 2,
              "extra_env": {"EMBED_TOKEN": EMBED_TOKEN}},
}}


def with_left(*args):
    """A playbook run with the instances of LEFT: (rc, output)."""
    with tempfile.NamedTemporaryFile("w", suffix=".json") as handle:
        json.dump(LEFT, handle)
        handle.flush()
        return playbook(*(args + ("-e", "@" + handle.name)))


def test_instances_removed_from_the_inventory_are_stopped_and_removed():
    # chat-a shares fleet-n1 with embed, big is alone on fleet-n3; chat-b and embed are pinned (devices, api_port).
    kept = {(N1, "embed"): pid(node(N1), "embed"), (N2, "embed"): pid(node(N2), "embed"),
            (N2, "chat-b"): pid(node(N2), "chat-b")}
    router_pid = int(node(N1).check_output("systemctl show -p MainPID --value ascend-router.service"))
    prometheus_pid = int(node(MON).check_output("systemctl show -p MainPID --value prometheus.service"))
    rc, out = with_left("deploy.yml", "--tags", "ray,serve,router,monitoring")
    assert rc == 0, out
    for name, instance in ((N3, "big"), (N1, "chat-a"), (N2, "pd-prefill"), (N3, "pd-decode")):
        host = node(name)
        for path in ("/etc/systemd/system/%s" % unit(instance), "/etc/ascend-inference/serve-%s.env" % instance,
                     "/etc/ascend-inference/node-%s.env" % instance, "/etc/ascend-inference/secrets-%s.env" % instance):
            assert not host.file(path).exists, (name, path)
        assert host.run("systemctl is-active %s" % unit(instance)).stdout.strip() != "active"
        # The apply's own lines say it.
        assert "%s: /etc/systemd/system/%s removed" % (name, unit(instance)) in out, out
    assert "%s: %s stopped" % (N1, unit("chat-a")) in out, out
    # The PD instance's proxy went with its pools.
    for path in ("/etc/systemd/system/ascend-pd-pd.service", "/etc/ascend-inference/pd-pd.env"):
        assert not node(N3).file(path).exists, path
    assert "%s: ascend-pd-pd.service stopped" % N3 in out, out
    # big's Ray cluster went first (ray.yml's play), and its engine with it (PartOf=): its unit, token and environment.
    for path in ("/etc/systemd/system/ascend-ray-big.service", "/etc/ascend-inference/ray-auth-token-big",
                 "/etc/ascend-inference/ray-big.env"):
        assert not node(N3).file(path).exists, path
    assert "%s: ascend-ray-big.service stopped" % N3 in out, out
    assert node(N3).run("pgrep -f '[r]aylet'").rc == 1
    # The pinned instances were left running as they were, their files untouched.
    assert {key: pid(node(key[0]), key[1]) for key in kept} == kept
    # The router lost their entries by a reload (its process stays): big is no model now, qwen is chat-b's alone.
    assert int(node(N1).check_output("systemctl show -p MainPID --value ascend-router.service")) == router_pid
    assert "fleet-n1: ascend-router.service reloaded" in out, out
    assert replicas() == {"chat-b": "UP", "embed": "UP"}
    assert complete("/models/big")[0] == 404 and complete("qwen-pd")[0] == 404
    assert complete("qwen")[0] == 200
    # Prometheus' targets lost them too, by the targets file alone: its process stays, and it was not reloaded.
    targets = json.loads(node(MON).file("/etc/prometheus/ascend-inference/targets/engines.json").content_string)
    assert sorted(group["labels"]["instance"] for group in targets) == ["chat-b", "embed"]
    assert int(node(MON).check_output("systemctl show -p MainPID --value prometheus.service")) == prometheus_pid
    assert "fleet-mon: prometheus.service" not in out, out
    wait_for(lambda: sorted(set(t["labels"]["instance"] for t in prometheus("/api/v1/targets?state=active")[
        "activeTargets"] if t["labels"]["job"] == "ascend-engine")) == ["chat-b", "embed"], 60,
        lambda: prometheus("/api/v1/targets?state=active"))


def test_a_node_no_instance_needs_any_more_is_taken_out():
    """After the removal above fleet-n3 holds no instance: remove_node.yml takes it out of the cluster."""
    gone = address_of(node(N3))
    rc, out = with_left("remove_node.yml", "-e", "node=" + N3)
    assert rc == 0, out
    for name in (N1, N2):
        hosts = node(name).file("/etc/hosts").content_string
        block = hosts.split("BEGIN ascend.inference cluster nodes")[1].split("END ascend.inference")[0]
        assert N3 not in block and N1 in block, (name, hosts)
        members = node(name).check_output("nft list set inet ascend_inference members")
        assert gone not in members and address_of(node(N1)) in members, (name, members)
    # Its units and the collection's files went, its firewall table with them; the installed engine stays.
    host = node(N3)
    for unit in ("ascend-firewall.service", "ascend-npu-exporter.service"):
        assert not host.file("/etc/systemd/system/" + unit).exists, unit
        assert host.run("systemctl is-active %s" % unit).stdout.strip() != "active", unit
    assert not host.file("/etc/ascend-inference").exists
    assert not host.file("/usr/local/bin/ascend-npu-exporter").exists
    assert host.run("nft list table inet ascend_inference").rc != 0
    # Its own /etc/hosts keeps no block of the cluster's names.
    assert "ascend.inference cluster nodes" not in host.file("/etc/hosts").content_string
    assert host.file("/opt/ascend-inference/venv/bin/vllm").exists
    # Prometheus no longer scrapes its exporter; the others are still served through the router.
    npus = json.loads(node(MON).file("/etc/prometheus/ascend-inference/targets/npu.json").content_string)
    assert sorted(group["labels"]["node"] for group in npus) == [N1, N2]
    assert complete("qwen")[0] == 200 and complete("/models/embed")[0] == 200
    # A second run changes nothing; the head cannot be taken out.
    rc, out = with_left("remove_node.yml", "-e", "node=" + N3)
    assert rc == 0 and set(recap(out).values()) == {0}, out
    rc, out = with_left("remove_node.yml", "-e", "node=" + N1)
    assert rc != 0 and "node=fleet-n1 is the cluster's head (group ascend_head)" in out, out
