"""The long waits print progress as they wait, in one task: the Ray barrier's joined/missing line and
readiness's elapsed time with the engine's latest log line (action plugins ray_barrier, serve_ready),
run here against a stand-in probe and a local HTTP server."""

import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import BIN

PLAN = {"cluster": {"node_order": ["node1", "node2"]},
        "nodes": {"node1": {"node_ip": "192.0.2.11", "visible_devices": [0, 1, 2, 3]},
                  "node2": {"node_ip": "192.0.2.12", "visible_devices": [0, 1, 2, 3]}}}
# Prints Ray's alive nodes as the collection's probe does: the head alone for the first `alone` calls.
PROBE = r'''
import json, sys
state, alone = sys.argv[1], int(sys.argv[2])
calls = int(open(state).read()) if __import__("os").path.exists(state) else 0
open(state, "w").write(str(calls + 1))
nodes = [{"ip": "192.0.2.11", "npus": 4}] + ([{"ip": "192.0.2.12", "npus": 4}] if calls >= alone else [])
print(json.dumps(nodes))
'''
# The engine's log as the journal would give it: one loading line more per call.
LOG = r'''
import os, sys
state = sys.argv[1]
calls = int(open(state).read()) if os.path.exists(state) else 0
open(state, "w").write(str(calls + 1))
print("INFO engine started")
print("Loading safetensors checkpoint shards: %3d%% Completed | %d/4 [00:0%d<00:00,  1.00s/it]" % (25 * min(calls, 4), min(calls, 4), calls))
'''


def playbook(tmp_path, env, tasks, *extra):
    path = tmp_path / "play.yml"
    path.write_text(json.dumps([{"hosts": "localhost", "gather_facts": False, "tasks": tasks}]))
    env = dict(env, ANSIBLE_STDOUT_CALLBACK="default")
    proc = subprocess.run([os.path.join(BIN, "ansible-playbook"), str(path), "-i", "localhost,", "-c", "local",
                           "-e", "ansible_python_interpreter=%s" % sys.executable] + list(extra),
                          cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=120, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def script(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return [sys.executable, str(path), str(tmp_path / (name + ".state"))]


def barrier_task(argv, timeout, **extra):
    return [{"ascend.inference.ray_barrier": dict(argv=argv, plan=PLAN, timeout=timeout, interval=1, **extra),
             "register": "barrier", "ignore_errors": True},
            {"ansible.builtin.debug": {"msg": "WHOLE={{ barrier.whole }} "
                                              "MISSING={{ (barrier.state or {}).missing | default('-') }} "
                                              "RC={{ barrier.probe_rc }}"}}]


def test_the_barrier_says_who_is_missing_until_the_cluster_is_whole(ansible_env, tmp_path):
    code, out = playbook(tmp_path, ansible_env, barrier_task(script(tmp_path, "probe.py", PROBE) + ["2"], 30))
    assert code == 0, out
    assert re.search(r"localhost: Ray cluster, \d+ s of 30 s: 1/2 nodes, 4/8 NPUs joined; missing: node2", out), out
    assert "WHOLE=True MISSING=[]" in out
    assert re.search(r"localhost: Ray cluster, \d+ s of 30 s: 2/2 nodes, 8/8 NPUs joined\n", out), out
    # One task: no retry lines, and the same status is not printed again within 10 s.
    assert "RETRYING" not in out and out.count("missing: node2") == 1, out


def test_the_barrier_gives_up_after_its_timeout_and_says_what_it_saw(ansible_env, tmp_path):
    start = time.monotonic()
    code, out = playbook(tmp_path, ansible_env, barrier_task(script(tmp_path, "probe.py", PROBE) + ["1000"], 3,
                                                             unreachable={"node2": "Timeout when waiting for x"}))
    assert code == 0 and 3 <= time.monotonic() - start < 60, out
    assert "WHOLE=False MISSING=['node2']" in out, out
    # It fails, naming every node: what the joined one brought, why the other did not join.
    assert "fatal: [localhost]: FAILED!" in out, out
    assert "The Ray cluster is not whole after 3 s: expected 2 nodes and 8 NPUs." in out, out
    assert "node1 (192.0.2.11): 4 NPUs (planned 4);" in out
    assert "node2 (192.0.2.12): NOT JOINED (cannot reach the head: Timeout when waiting for x);" in out


def test_the_barrier_shows_a_probe_that_fails(ansible_env, tmp_path):
    argv = [sys.executable, "-c", "import sys; sys.exit('no Ray head answers at 192.0.2.11:6379')"]
    code, out = playbook(tmp_path, ansible_env, barrier_task(argv, 2))
    assert code == 0, out
    assert re.search(r"localhost: Ray cluster, \d+ s of 2 s: no answer from the head yet "
                     r"\(no Ray head answers at 192\.0\.2\.11:6379\)", out), out
    assert "WHOLE=False MISSING=- RC=1" in out, out
    assert "probe error: no Ray head answers at 192.0.2.11:6379" in out, out


@pytest.fixture
def health_server():
    """/health answers 503 until `ready_at` (set by the test), then 200."""
    state = {"ready_at": float("inf")}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if time.monotonic() >= state["ready_at"] else 503)
            self.end_headers()

        def log_message(self, *_args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    state["url"] = "http://127.0.0.1:%d/health" % server.server_address[1]
    yield state
    server.shutdown()


def ready_task(url, log_argv, timeout):
    return [{"ascend.inference.serve_ready": {"url": url, "timeout": timeout, "interval": 1, "log_argv": log_argv},
             "register": "ready"},
            {"ansible.builtin.debug": {"msg": "STATUS={{ ready.status }}"}}]


def test_readiness_shows_the_engines_loading_lines_until_health_answers(ansible_env, tmp_path, health_server):
    health_server["ready_at"] = time.monotonic() + 6
    code, out = playbook(tmp_path, ansible_env, ready_task(health_server["url"], script(tmp_path, "log.py", LOG), 60))
    assert code == 0, out
    assert re.search(r"localhost: ready, \d+ s of 60 s: /health: HTTP 503; engine: Loading safetensors checkpoint "
                     r"shards:   0% Completed \| 0/4", out), out
    assert "engine: Loading safetensors checkpoint shards:  25% Completed | 1/4" in out, out
    assert "STATUS=200" in out and "RETRYING" not in out
    assert re.search(r"localhost: ready, \d+ s of 60 s: /health: HTTP 200\n", out), out


def test_readiness_fails_after_its_timeout_with_the_last_answer_and_log_line(ansible_env, tmp_path):
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        url = "http://127.0.0.1:%d/health" % free.getsockname()[1]
    code, out = playbook(tmp_path, ansible_env, ready_task(url, script(tmp_path, "log.py", LOG), 3))
    assert code != 0, out
    assert "Connection refused" in out and "/health: " in out, out
    assert "no 200 from %s within 3 s (last answer: [Errno 111] Connection refused); the engine's latest log line: " \
           "Loading safetensors checkpoint shards:" % url in out, out


def test_in_check_mode_the_waits_are_skipped_at_once(ansible_env, tmp_path):
    start = time.monotonic()
    tasks = barrier_task(script(tmp_path, "probe.py", PROBE) + ["1000"], 300)[:1] + \
        ready_task("http://127.0.0.1:9/health", None, 1800)[:1]
    code, out = playbook(tmp_path, ansible_env, tasks, "--check")
    assert code == 0 and time.monotonic() - start < 60, out
    assert out.count("skipping: [localhost]") == 2, out
    assert not (tmp_path / "probe.py.state").exists()
