"""The pyACL import's mode check (plugins/plugin_utils/phases/pyacl.py VERIFY, exit 5) agrees with the file module
call it lets the phase skip (READABLE, recursive, links not followed): it reports a tree exactly where that call
would change something, and nothing once it has run."""

import json
import os
import subprocess
import sys

import pytest

from conftest import BIN, REPO

sys.path.insert(0, os.path.join(REPO, "collections"))
from ansible_collections.ascend.inference.plugins.plugin_utils.phases import pyacl  # noqa: E402


def verify(tree, site):
    """The phase's command with the import replaced by `pass`: rc 0, or 5 where a mode is to be set."""
    set_env = tree.parent / "set_env.sh"
    set_env.write_text("")
    return subprocess.run(["bash", "-c", pyacl.VERIFY, "verify", str(set_env), str(site), sys.executable, "pass",
                           str(tree)], capture_output=True, text=True, check=False).returncode


def file_task(ansible_env, tree):
    """The phase's correction (ansible.builtin.file with its arguments) on TREE; whether it changed something. (Not
    in check mode: there the file module reports a link in the tree as a change that a real run never makes.)"""
    node = Recorder()
    pyacl.correct_modes(node, {"install_path": str(tree)})
    (module, args), = node.ran
    proc = subprocess.run([os.path.join(BIN, "ansible"), "localhost", "-c", "local", "-m", module,
                           "-a", json.dumps(args), "-o"],
                          env=ansible_env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return '"changed": true' in proc.stdout


class Recorder(object):
    """A node that records the module calls a phase asks for."""
    host = "n1"

    def __init__(self):
        self.ran = []

    def run(self, module, args):
        self.ran.append((module, args))
        return {"rc": 0}


def make_tree(tmp_path, modes):
    tree = tmp_path / "pyACL"
    site = tree / "python" / "site-packages"
    (site / "acl").mkdir(parents=True)
    (site / "acl" / "__init__.py").write_text("")
    (site / "acl" / "libacl.so").write_text("")
    outside = tmp_path / "outside.so"
    outside.write_text("")
    os.chmod(str(outside), 0o600)
    os.symlink(str(outside), str(site / "acl" / "linked.so"))  # a link: neither checks nor changes it
    for relative, mode in sorted(modes.items(), key=lambda item: -len(item[0])):
        os.chmod(str(tree / relative), mode)
    return tree, site


RIGHT = {"python/site-packages/acl/__init__.py": 0o644, "python/site-packages/acl/libacl.so": 0o755}


@pytest.mark.parametrize("modes", [
    {},
    {"python/site-packages/acl/__init__.py": 0o600, "python/site-packages/acl/libacl.so": 0o700,
     "python/site-packages/acl": 0o700, "python": 0o700, ".": 0o700},  # a makeself install under umask 077
    {"python/site-packages/acl/__init__.py": 0o664},  # writable by the group
    {"python/site-packages/acl/libacl.so": 0o744},  # executable by its owner only
    {"python/site-packages": 0o2755},  # a set-group-ID directory
], ids=["right", "umask-077", "group-writable", "owner-executable", "setgid-directory"])
def test_the_check_agrees_with_the_file_task(ansible_env, tmp_path, modes):
    tree, site = make_tree(tmp_path, dict(RIGHT, **modes))
    found = verify(tree, site)
    changed = file_task(ansible_env, tree)
    assert found == (5 if changed else 0)
    assert changed == bool(modes)
    assert verify(tree, site) == 0
    assert not file_task(ansible_env, tree)


def test_a_missing_version_and_an_install_directory_the_task_must_see(tmp_path):
    tree, site = make_tree(tmp_path, RIGHT)
    assert verify(tree, tmp_path / "elsewhere") == 4
    assert verify(tmp_path / "no-such-dir", site) == 5
    # A link in the install directory's place: the file task (follow: false) refuses it, so it must run.
    os.symlink(str(tree), str(tmp_path / "linked"))
    assert verify(tmp_path / "linked", site) == 5
