# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/serve/files/serve-watchdog.py's decisions (a program on the nodes, loaded here from its file)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib.util
import os

PROGRAM = os.path.join(os.path.dirname(__file__), "..", "..", "..", "roles", "serve", "files", "serve-watchdog.py")
SPEC = importlib.util.spec_from_file_location("serve_watchdog", PROGRAM)
watchdog = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(watchdog)

HEAD = {"role": "head", "serve_unit": "ascend-serve.service", "head_url": "http://192.0.2.10:8000", "failures": 2,
        "probe_timeout": 60, "rank_nodes": {"0": "h", "1": "h", "2": "w", "3": "w"}, "grace": 600}
WORKER = dict(HEAD, role="worker")


def rounds(config, seen_list, state=None):
    """Every round's restart decision, and the last state and message."""
    state, decisions, message = dict(state or {}), [], None
    for seen in seen_list:
        state, restart, said = watchdog.decide(config, state, seen)
        decisions.append(restart)
        message = said or message
    return decisions, state, message


def head_seen(now, unanswered=(), healthy=True, started=100.0, waiting=0.0):
    return {"now": now, "serve_started": started, "healthy": healthy, "unanswered": list(unanswered),
            "waiting": waiting, "connections": []}


def test_the_head_restarts_after_a_rank_is_unanswered_failures_rounds_in_a_row():
    decisions, state, message = rounds(HEAD, [head_seen(110), head_seen(120, [2, 3]), head_seen(130, [2, 3])])
    assert decisions == [False, False, True]
    assert message.startswith("DP rank(s) 2 (w), 3 (w) gave no answer to a 1-token completion within 60s, 2 rounds")
    assert state["restarts"] == 1 and state["failed_rounds"] == 0


def test_an_answer_in_between_resets_the_count_and_a_down_head_is_not_probed():
    decisions, state, _message = rounds(HEAD, [head_seen(110, [2]), head_seen(120), head_seen(130, [2]),
                                        head_seen(140, [2], healthy=False), head_seen(150, [2])])
    assert decisions == [False] * 5
    # healthy_since: when the head was first seen answering in its current run (status.yml compares the headless
    # nodes' start with it).
    assert state["healthy_since"] == 150


def worker_seen(now, healthy, started=100.0, connections=()):
    return {"now": now, "serve_started": started, "healthy": healthy, "unanswered": [], "waiting": None,
            "connections": list(connections)}


# A headless rank's connection to the head's DP port, and the one its ZMQ socket opens again to a restarted head.
FIRST = "192.0.2.11:41000 192.0.2.10:29550"
AGAIN = "192.0.2.11:41002 192.0.2.10:29550"


def test_a_headless_node_restarts_once_when_the_head_it_joined_went_away():
    decisions, state, message = rounds(WORKER, [worker_seen(110, True), worker_seen(120, False),
                                                worker_seen(130, False), worker_seen(140, False, started=135.0),
                                                worker_seen(150, False, started=135.0)])
    assert decisions == [False, False, True, False, False]
    assert "head's API at http://192.0.2.10:8000 has been down for 2 polls" in message


def test_a_headless_node_started_after_the_head_was_last_seen_up_waits_for_it():
    """The head is loading after a start-up this node took part in: restarting would break it."""
    seen = [worker_seen(110, True, started=105.0)] + [worker_seen(t, False, started=115.0) for t in (120, 130, 140)]
    decisions, _state, _message = rounds(WORKER, seen)
    assert decisions == [False] * 4


def test_a_headless_node_that_never_saw_its_head_up_does_nothing():
    decisions, _state, _message = rounds(WORKER, [worker_seen(t, False) for t in (110, 120, 130, 140)])
    assert decisions == [False] * 4


def test_a_busy_engine_is_not_restarted_for_a_late_answer():
    decisions, state, _message = rounds(HEAD, [head_seen(t, [2], waiting=5.0) for t in (110, 120, 130, 140)])
    assert decisions == [False] * 4 and state.get("failed_rounds", 0) == 0


def test_the_head_gives_up_after_restarts_that_bring_no_answer_and_resumes_after_one():
    seen = []
    for restart in range(4):
        base = 1000 * restart
        seen += [head_seen(base + 10, [2]), head_seen(base + 20, [2])]
    decisions, state, message = rounds(HEAD, seen)
    assert decisions.count(True) == 3 and state["gave_up"] and "no more restarts" in message
    # One answered round, and it restarts again when a rank is lost later.
    decisions, state, _message = rounds(HEAD, [head_seen(5010), head_seen(5020, [1]), head_seen(5030, [1])], state)
    assert decisions == [False, False, True] and not state["gave_up"]


def test_a_head_that_keeps_its_connections_is_waited_for_until_the_grace():
    """The head stopped answering but its processes hold this node's connections (busy, hung), or it lost power
    without closing them: this node's engines are left alone until the grace (a start-up's longest wait)."""
    decisions, state, _message = rounds(WORKER, [worker_seen(110, True, connections=[FIRST])] + [
        worker_seen(t, False, connections=[FIRST]) for t in (120, 130, 140)])
    assert decisions == [False] * 4
    decisions, _state, _message = rounds(WORKER, [worker_seen(120 + 600, False, connections=[FIRST])], state)
    assert decisions == [True]


def test_a_connection_opened_to_a_restarted_head_does_not_hold():
    """Seen with a real vLLM 0.32 (molecule/real_vllm): the rebooted worker's rank sent its handshake to the running
    head; when that head restarted, the rank's socket connected to the new one by itself, but the rank never joined
    its start-up. So only the connections held while the head was up keep this node waiting."""
    decisions, _state, message = rounds(WORKER, [worker_seen(110, True, connections=[FIRST])] + [
        worker_seen(t, False, connections=[AGAIN]) for t in (120, 130)])
    assert decisions == [False, False, True], message


def test_an_http_error_is_an_answer_and_silence_is_not():
    """status_of against a local server: 401 is an answer (the front-end is there); a closed port is none."""
    import http.server
    import threading

    class Refuse(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.send_response(401)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Refuse)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        config = {"model": "m", "head_url": "http://127.0.0.1:%d" % server.server_port, "probe_timeout": 5,
                  "rank_header": True, "ranks": [0, 1]}
        assert watchdog.unanswered(config) == []
    finally:
        server.shutdown()
        server.server_close()
    assert watchdog.unanswered(dict(config, rank_header=False)) == [0, 1]
