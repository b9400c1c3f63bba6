"""The molecule scenarios' bound on tasks per node (molecule/shared/task_counts.py) reads what the recap callback
(molecule/shared/callbacks/recap_counts.py) keeps of real ansible-playbook runs: a converge of 40 tasks passes, one of
41 fails naming the host, and a check-mode run or an earlier test sequence's runs are not counted."""

import os
import subprocess
import sys

import pytest
import yaml

from conftest import BIN, REPO

sys.path.insert(0, os.path.join(REPO, "molecule", "shared"))
import task_counts  # noqa: E402


def converge(directory, ansible_env, tasks, *extra):
    """Run a converge.yml of TASKS tasks on localhost (half ok, half skipped) with the callback enabled."""
    play = [{"name": "Converge", "hosts": "localhost", "gather_facts": False, "tasks": [
        {"name": "Task %d" % index, "ansible.builtin.debug": {"msg": "x"}, "when": index % 2 == 0}
        for index in range(tasks)]}]
    path = os.path.join(str(directory), "converge.yml")
    with open(path, "w") as handle:
        yaml.safe_dump(play, handle)
    env = dict(ansible_env, MOLECULE_EPHEMERAL_DIRECTORY=str(directory),
               ANSIBLE_CALLBACK_PLUGINS=os.path.join(REPO, "molecule", "shared", "callbacks"),
               ANSIBLE_CALLBACKS_ENABLED="recap_counts")
    proc = subprocess.run([os.path.join(BIN, "ansible-playbook"), path, "-i", "localhost,", "-c", "local"]
                          + list(extra), env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_forty_tasks_pass_and_forty_one_fail_naming_the_host(ansible_env, tmp_path, monkeypatch):
    monkeypatch.setenv("MOLECULE_EPHEMERAL_DIRECTORY", str(tmp_path))
    (tmp_path / "recaps.jsonl").write_text('{"playbook": "converge.yml", "check": false, "hosts": '
                                           '{"old": {"ok": 99, "skipped": 0}}}\n'
                                           '{"playbook": "create.yml", "check": false, "hosts": {}}\n')
    converge(tmp_path, ansible_env, 40, "--check")
    converge(tmp_path, ansible_env, 40)
    converge(tmp_path, ansible_env, 40)
    runs = task_counts.converge_runs()
    # Before the last create.yml and in check mode: not this sequence's converge or idempotence.
    assert [task_counts.tasks_per_host(run) for run in runs] == [{"localhost": 40}, {"localhost": 40}]
    task_counts.assert_within_bound()
    converge(tmp_path, ansible_env, 41)
    (tmp_path / "recaps.jsonl").write_text("".join(
        line for index, line in enumerate(open(str(tmp_path / "recaps.jsonl"))) if index != 3))
    with pytest.raises(AssertionError) as failed:
        task_counts.assert_within_bound()
    assert "the idempotence run (a no-op) went through more than 40 tasks on {'localhost': 41}" in str(failed.value)
