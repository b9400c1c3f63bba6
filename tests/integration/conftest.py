"""Fixtures that run the collection's playbooks the way a user does."""

import json
import os
import re
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)


@pytest.fixture(scope="session")
def collections_root(tmp_path_factory):
    """A fresh ansible_collections/ascend/inference copy of the working tree."""
    root = tmp_path_factory.mktemp("collections")
    subprocess.run([os.path.join(REPO, "tests", "build-tree.sh"), str(root)], check=True, stdout=subprocess.DEVNULL)
    return root


@pytest.fixture
def ansible_env(collections_root, tmp_path):
    env = dict(os.environ)
    env.update(
        ANSIBLE_COLLECTIONS_PATH=str(collections_root),
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_FORCE_COLOR="0",
        PWD=str(tmp_path),
    )
    env.pop("ANSIBLE_CONFIG", None)
    return env


@pytest.fixture
def run_plan(ansible_env, tmp_path):
    """Run playbooks/plan.yml on an inventory; returns (process, {host: plan})."""

    def run(inventory, *extra):
        out = tmp_path / "plan"
        proc = subprocess.run(
            [os.path.join(BIN, "ansible-playbook"), os.path.join(REPO, "playbooks", "plan.yml"),
             "-i", str(inventory), "-e", "ascend_plan_dir=%s" % out] + list(extra),
            cwd=str(tmp_path), env=ansible_env, capture_output=True, text=True, timeout=300, check=False)
        plans = {}
        if out.is_dir():
            plans = {p.stem: json.loads(p.read_text()) for p in out.glob("*.json")}
        return proc, plans

    return run


def shown(stdout, task="Show the plan"):
    """The message a debug TASK showed, as its text (the default callback prints it as JSON outside the repository's
    ansible.cfg)."""
    block = stdout.split("TASK [%s]" % task)[1].split("\nTASK [")[0]
    return json.loads(re.search(r'^\s*"msg": (".*")$', block, re.M).group(1))
