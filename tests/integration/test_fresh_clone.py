"""A fresh clone works as the README says: its controller setup line, then
`ansible-playbook deploy.yml -i <dir>/hosts` and `playbooks/plan.yml` on an INI
inventory, with nothing from tests/run.sh; and the git URL install."""

import os
import re
import subprocess

import pytest

from conftest import REPO

EXAMPLE = "inventories/examples/09-qwen3-235b-tp8-pp2-ray"


def run(args, **kwargs):
    proc = subprocess.run(args, capture_output=True, text=True, timeout=600, check=False, **kwargs)
    assert proc.returncode == 0, "%s\n%s%s" % (args, proc.stdout, proc.stderr)
    return proc


def setup_line():
    """The README's controller setup: the one command line that installs requirements.txt."""
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as readme:
        lines = [line.strip() for line in readme if re.match(r"^    \S.*pip install -r requirements\.txt", line)]
    assert len(lines) == 1, lines
    return lines[0]


def working_tree_commit(tmp_path):
    """A commit of the working tree as it is (new files included, ignored ones not),
    made with a throwaway index so that the checkout's index and refs stay as they are."""
    env = dict(os.environ, GIT_INDEX_FILE=str(tmp_path / "index"))
    run(["git", "read-tree", "HEAD"], cwd=REPO, env=env)
    run(["git", "add", "-A"], cwd=REPO, env=env)
    tree = run(["git", "write-tree"], cwd=REPO, env=env).stdout.strip()
    ident = dict(env, GIT_AUTHOR_NAME="test", GIT_AUTHOR_EMAIL="test@invalid",
                 GIT_COMMITTER_NAME="test", GIT_COMMITTER_EMAIL="test@invalid")
    return run(["git", "commit-tree", tree, "-p", "HEAD", "-m", "working tree"], cwd=REPO, env=ident).stdout.strip()


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fresh")
    commit = working_tree_commit(tmp)
    dest = tmp / "ascend-inference"
    # A local clone shares the object store, so the unreferenced commit is there to check out.
    run(["git", "clone", "-q", "--no-checkout", REPO, str(dest)])
    run(["git", "checkout", "-q", commit], cwd=str(dest))
    home = tmp / "home"
    home.mkdir()
    # A user's environment: no ANSIBLE_* settings, no virtualenv of ours, an empty ~/.ansible.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "VIRTUAL_ENV", "PYTHON"))}
    env.update(HOME=str(home), PIP_CACHE_DIR=os.path.expanduser("~/.cache/pip"),
               PATH=os.pathsep.join(p for p in env["PATH"].split(os.pathsep)
                                    if not p.startswith(os.path.join(REPO, ".venv"))))
    run(["bash", "-c", setup_line()], cwd=str(dest), env=env)
    return dest, env


def in_clone(clone, command):
    dest, env = clone
    return run(["bash", "-c", ". .venv/bin/activate && " + command], cwd=str(dest), env=env)


def test_the_clone_holds_no_cache_and_an_ini_example(clone):
    dest = clone[0]
    assert not (dest / ".cache").exists()
    assert (dest / EXAMPLE / "hosts").is_file() and (dest / EXAMPLE / "group_vars").is_dir()
    assert os.path.realpath(dest / "collections/ansible_collections/ascend/inference") == str(dest)


def test_deploy_yml_at_the_root_resolves_the_collection(clone):
    proc = in_clone(clone, "ansible-playbook deploy.yml -i %s/hosts --syntax-check" % EXAMPLE)
    assert "playbook: deploy.yml" in proc.stdout
    # From another directory too: Ansible reads the collections/ beside the playbook.
    proc = in_clone(clone, "cd / && ansible-playbook %s/deploy.yml -i %s/%s/hosts --syntax-check"
                    % (clone[0], clone[0], EXAMPLE))
    assert "playbook: %s/deploy.yml" % clone[0] in proc.stdout


def test_plan_yml_on_the_ini_inventory(clone):
    dest = clone[0]
    proc = in_clone(clone, "ansible-playbook playbooks/plan.yml -i %s/hosts -e ascend_plan_dir=%s/plan"
                    % (EXAMPLE, dest))
    assert "failed=0" in proc.stdout
    assert sorted(p.name for p in (dest / "plan").glob("*.json")) == ["node1.json", "node2.json"]
    for name in ("status", "teardown", "restart"):
        in_clone(clone, "ansible-playbook playbooks/%s.yml -i %s/hosts --syntax-check" % (name, EXAMPLE))


def test_install_from_the_git_url(clone, tmp_path):
    dest = clone[0]
    installed = tmp_path / "installed"
    in_clone(clone, "ansible-galaxy collection install git+file://%s -p %s" % (dest, installed))
    root = installed / "ansible_collections" / "ascend" / "inference"
    assert (root / "playbooks" / "deploy.yml").is_file() and (root / "plugins/modules/parallel_plan.py").is_file()
    # The checkout's own entry points are not part of the collection.
    assert not (root / "collections").exists() and not (root / "deploy.yml").exists()
    proc = in_clone(clone, "cd %s && ANSIBLE_COLLECTIONS_PATH=%s ansible-playbook ascend.inference.deploy -i %s/%s/hosts "
                    "--syntax-check" % (tmp_path, installed, dest, EXAMPLE))
    assert str(root / "playbooks" / "deploy.yml") in proc.stdout
