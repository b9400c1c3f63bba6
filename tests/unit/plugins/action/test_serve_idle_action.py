# -*- coding: utf-8 -*-
"""serve_idle's decisions on what the module read from an engine's /metrics: idle at 0 running and waiting, still
busy otherwise, idle when nothing listens (a stopped engine has nothing in flight), and failed at once when the
gauges are missing (vLLM with --disable-log-stats), rather than after serve_drain_timeout."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.ascend.inference.plugins.action.serve_idle import ActionModule

URL = "http://192.0.2.11:8000/metrics"


def decide(seen):
    action = ActionModule.__new__(ActionModule)
    action._task = type("Task", (), {"action": "ascend.inference.serve_idle"})()
    action.run_on_target = lambda name, args, task_vars: seen
    done, status, kept = action.poll({"url": URL, "timeout": 600}, {})
    return done, status, action.finish({}, done, kept, {"url": URL, "timeout": 600})


@pytest.mark.parametrize("seen,done,failed", [
    ({"status": 200, "running": 0.0, "waiting": 0.0, "refused": False}, True, False),
    ({"status": 200, "running": 1.0, "waiting": 0.0, "refused": False}, False, True),
    ({"status": 200, "running": 0.0, "waiting": 2.0, "refused": False}, False, True),
    ({"status": 503, "running": None, "waiting": None, "refused": False}, False, True),
    ({"status": -1, "running": None, "waiting": None, "refused": True}, True, False),
    ({"status": 200, "running": None, "waiting": None, "refused": False}, True, True),
])
def test_what_counts_as_idle(seen, done, failed):
    found_done, _status, result = decide(seen)
    assert found_done is done and bool(result.get("failed")) is failed, result


def test_missing_gauges_are_named():
    _done, status, result = decide({"status": 200, "running": None, "waiting": None, "refused": False})
    assert status == URL + ": no vllm:num_requests_running"
    assert "--disable-log-stats" in result["msg"]
