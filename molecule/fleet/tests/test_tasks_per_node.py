"""This scenario's converge (a fresh deploy) and idempotence run (the no-op) each go through at most 40 tasks per node,
counted from their recaps (molecule/shared/task_counts.py)."""

from task_counts import assert_within_bound


def test_a_deploy_and_a_no_op_go_through_at_most_40_tasks_per_node():
    assert_within_bound()
