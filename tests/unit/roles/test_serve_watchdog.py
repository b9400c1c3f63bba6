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
        "probe_timeout": 60, "rank_nodes": {"0": "h", "1": "h", "2": "w", "3": "w"}}
WORKER = dict(HEAD, role="worker")


def rounds(config, seen_list, state=None):
    """Every round's restart decision, and the last state and message."""
    state, decisions, message = dict(state or {}), [], None
    for seen in seen_list:
        state, restart, said = watchdog.decide(config, state, seen)
        decisions.append(restart)
        message = said or message
    return decisions, state, message


def head_seen(now, unanswered=(), healthy=True, started=100.0):
    return {"now": now, "serve_started": started, "healthy": healthy, "unanswered": list(unanswered)}


def test_the_head_restarts_after_a_rank_is_unanswered_failures_rounds_in_a_row():
    decisions, state, message = rounds(HEAD, [head_seen(110), head_seen(120, [2, 3]), head_seen(130, [2, 3])])
    assert decisions == [False, False, True]
    assert message.startswith("DP rank(s) 2 (w), 3 (w) did not answer a 1-token completion within 60s, 2 rounds")
    assert state["restarts"] == 1 and state["failed_rounds"] == 0


def test_an_answer_in_between_resets_the_count_and_a_down_head_is_not_probed():
    decisions, state, _message = rounds(HEAD, [head_seen(110, [2]), head_seen(120), head_seen(130, [2]),
                                        head_seen(140, [2], healthy=False), head_seen(150, [2])])
    assert decisions == [False] * 5
    # healthy_since: when the head was first seen answering in its current run (status.yml compares the headless
    # nodes' start with it).
    assert state["healthy_since"] == 150


def worker_seen(now, healthy, started=100.0):
    return {"now": now, "serve_started": started, "healthy": healthy, "unanswered": []}


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
