"""This scenario's converge (a fresh deploy) and idempotence run (the no-op) each stay within the tasks per node that
molecule/shared/task_counts.py allows, counted from their recaps."""

from task_counts import assert_within_bound


def test_a_deploy_and_a_no_op_stay_within_the_tasks_per_node_bound():
    assert_within_bound()
