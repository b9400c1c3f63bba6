"""How many tasks a node goes through in the scenario's converge (a fresh deploy) and its idempotence run (the
no-op), read from their PLAY RECAPs (molecule/shared/callbacks/recap_counts.py keeps them): ok + skipped, as
bench/report.py counts them. One apply per phase keeps a deploy at most MOST_TASKS per node (test harness only)."""

import json
import os

MOST_TASKS = 40


def converge_runs():
    """The recaps of this test sequence's converge.yml runs not in check mode: the converge, then the idempotence."""
    with open(os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "recaps.jsonl")) as handle:
        runs = [json.loads(line) for line in handle if line.strip()]
    starts = [index for index, run in enumerate(runs) if run["playbook"] == "create.yml"]
    since = runs[starts[-1]:] if starts else runs
    return [run for run in since if run["playbook"] == "converge.yml" and not run["check"]]


def tasks_per_host(run):
    return dict((host, counts["ok"] + counts["skipped"]) for host, counts in run["hosts"].items())


def assert_within_bound():
    """The converge and the idempotence run each went through at most MOST_TASKS tasks on every host."""
    runs = converge_runs()
    assert len(runs) >= 2, "expected the converge and the idempotence run, found %d run(s)" % len(runs)
    for kind, run in (("the converge (a fresh deploy)", runs[0]), ("the idempotence run (a no-op)", runs[1])):
        over = dict((host, count) for host, count in tasks_per_host(run).items() if count > MOST_TASKS)
        assert not over, "%s went through more than %d tasks on %s" % (kind, MOST_TASKS, over)
