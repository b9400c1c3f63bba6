"""What the long waits print: the barrier's joined/missing counts, the readiness line, the throttle."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible_collections.ascend.inference.plugins.plugin_utils import progress

PLAN = {
    "cluster": {"node_order": ["node1", "node2"]},
    "nodes": {"node2": {"node_ip": "192.0.2.12", "visible_devices": [0, 1, 2, 3]},
              "node1": {"node_ip": "192.0.2.11", "visible_devices": [4, 5, 6, 7]}},
}
EXPECTED = progress.expected_nodes(PLAN)


def probe(*nodes):
    return json.dumps([{"ip": ip, "npus": npus, "node_id": "id-%s" % ip} for ip, npus in nodes])


def test_expected_nodes_follow_the_plans_order_with_their_device_counts():
    assert EXPECTED == [{"name": "node1", "ip": "192.0.2.11", "npus": 4},
                        {"name": "node2", "ip": "192.0.2.12", "npus": 4}]


def test_a_missing_worker_is_named():
    state = progress.barrier_state(probe(("192.0.2.11", 4)), EXPECTED)
    assert state["missing"] == ["node2"] and not state["whole"]
    assert progress.barrier_status(state) == "1/2 nodes, 4/8 NPUs joined; missing: node2"


def test_the_whole_cluster():
    state = progress.barrier_state(probe(("192.0.2.12", 4.0), ("192.0.2.11", 4)), EXPECTED)
    assert state["whole"] and progress.barrier_status(state) == "2/2 nodes, 8/8 NPUs joined"


def test_a_node_with_fewer_npus_than_planned():
    state = progress.barrier_state(probe(("192.0.2.11", 4), ("192.0.2.12", 2)), EXPECTED)
    assert not state["whole"] and state["short"] == ["node2"]
    assert progress.barrier_status(state) == "2/2 nodes, 6/8 NPUs joined; fewer NPUs than planned: node2"


def test_a_node_outside_the_plan_keeps_the_cluster_from_being_whole_and_is_named():
    state = progress.barrier_state(probe(("192.0.2.11", 4), ("192.0.2.12", 4), ("192.0.2.99", 0)), EXPECTED)
    assert not state["whole"] and not state["missing"] and state["unexpected"] == ["192.0.2.99"]
    assert progress.barrier_status(state) == "2/2 nodes, 8/8 NPUs joined; not in the plan: 192.0.2.99"


def test_a_raylet_registered_twice_under_one_address_is_not_whole():
    state = progress.barrier_state(probe(("192.0.2.11", 4), ("192.0.2.11", 4)), EXPECTED)
    assert not state["whole"] and state["missing"] == ["node2"]


def test_no_answer_yet():
    line = progress.timed("Ray cluster", 3.7, 300, progress.barrier_status(None, "no Ray head answers at\n x"))
    assert line == "Ray cluster, 3 s of 300 s: no answer from the head yet (no Ray head answers at x)"


def test_the_failure_names_every_node_in_plan_order():
    state = progress.barrier_state(probe(("192.0.2.11", 3), ("192.0.2.99", 0)), EXPECTED)
    report = progress.barrier_report(EXPECTED, 20, state,
                                     unreachable={"node2": "Timeout when waiting for\n192.0.2.11:6379"})
    assert report.splitlines() == [
        "The Ray cluster is not whole after 20 s: expected 2 nodes and 8 NPUs.",
        "node1 (192.0.2.11): 3 NPUs (planned 4);",
        "node2 (192.0.2.12): NOT JOINED (cannot reach the head: Timeout when waiting for 192.0.2.11:6379);",
        "Ray nodes the plan does not hold: 192.0.2.99 (stop Ray there).",
    ]


def test_the_failure_when_the_head_never_answered():
    report = progress.barrier_report(EXPECTED, 300, None, "ConnectionError: no Ray head at 192.0.2.11:6379\n")
    assert report.splitlines()[1:] == ["node1 (192.0.2.11): NOT JOINED;", "node2 (192.0.2.12): NOT JOINED;",
                                       "probe error: ConnectionError: no Ray head at 192.0.2.11:6379"]


def test_unreadable_probe_output_raises_for_the_caller():
    with pytest.raises(ValueError):
        progress.barrier_state("Traceback ...", EXPECTED)


# A journal excerpt as `journalctl --output=cat --all` prints it; the loading line's format as in
# vllm-project/vllm-ascend#6734.
JOURNAL = ("(Worker_TP13_EP13 pid=5766) INFO 02-13 06:25:33 [compilation.py:903] Using OOT custom backend\n"
           "Loading safetensors checkpoint shards:   1% Completed | 1/99 [00:01<01:53,  1.16s/it]\n"
           "Loading safetensors checkpoint shards:   2% Completed | 2/99 [00:02<01:52,  1.16s/it]\n\n")


def test_the_latest_log_line():
    assert progress.last_log_line(JOURNAL) == \
        "Loading safetensors checkpoint shards:   2% Completed | 2/99 [00:02<01:52,  1.16s/it]"
    assert progress.last_log_line("") is None and progress.last_log_line(None) is None


def test_a_bar_redrawn_with_carriage_returns_shows_its_last_drawing():
    redrawn = "Loading: 10%|#  | 1/10\rLoading: 20%|## | 2/10\r"
    assert progress.last_log_line("started\n" + redrawn) == "Loading: 20%|## | 2/10"


def test_a_long_log_line_is_cut():
    line = progress.last_log_line("x" * 500)
    assert len(line) == progress.MAX_LOG_CHARS and line.endswith("...")


@pytest.mark.parametrize("result, answer", [
    ({"status": 503, "msg": "Status code was 503 and not [200]: HTTP Error 503"}, "HTTP 503"),
    ({"status": -1, "msg": "Status code was -1 and not [200]: Request failed: "
                           "<urlopen error [Errno 111] Connection refused>"}, "[Errno 111] Connection refused"),
    ({}, "no answer"),
])
def test_what_health_answered(result, answer):
    assert progress.health_answer(result) == answer


def test_the_readiness_line():
    status = progress.ready_status("HTTP 503", "Loading safetensors checkpoint shards:  50% Completed | 1/2")
    assert progress.timed("ready", 46.2, 1800, status) == \
        "ready, 46 s of 1800 s: /health: HTTP 503; engine: Loading safetensors checkpoint shards:  50% Completed | 1/2"
    assert progress.ready_status("HTTP 503", None) == "/health: HTTP 503"


def test_the_throttle_prints_changes_at_once_and_the_same_status_every_so_often():
    throttle = progress.Throttle(10)
    assert throttle.due(0, "a")
    assert not throttle.due(2, "a") and not throttle.due(9.9, "a")
    assert throttle.due(10, "a")
    assert throttle.due(11, "b") and not throttle.due(12, "b")
