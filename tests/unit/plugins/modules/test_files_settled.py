# -*- coding: utf-8 -*-
"""The probe's view of managed files against what managed_files writes: files_settled answers true exactly
where the module, run again, would change nothing (both modules run on this machine's files)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import grp
import json
import os
import pwd

from ansible_collections.ascend.inference.plugins.module_utils.managed_files import settled
from ansible_collections.ascend.inference.plugins.modules import managed_files, node_probe

KEY = "k" * 32
ME = pwd.getpwuid(os.getuid()).pw_name
MY_GROUP = grp.getgrgid(os.getgid()).gr_name


def spec(tmp_path, env="A=1\n", secret="TOKEN=abc123\n"):
    """managed_files' options for a directory, a file and a secret file, owned by whoever runs the test."""
    base = str(tmp_path / "etc")
    owned = {"owner": ME, "group": MY_GROUP}
    return {
        "directories": [dict(owned, path=base, mode="0750")],
        "files": [dict(owned, path=base + "/node.env", content=env, mode="0644"),
                  dict(owned, path=base + "/secrets.env", mode="0600")],
        "secrets": {base + "/secrets.env": secret},
    }


def probe(run_module, tmp_path, key=KEY):
    return run_module(node_probe.main, {"npu_smi": "no-such-npu-smi", "file_dirs": [str(tmp_path / "etc")],
                                        "digest_key": key}).result


def agrees(run_module, tmp_path, wanted):
    """settled() by the probe's view, checked against the module's own answer, which must agree."""
    answer = settled(probe(run_module, tmp_path)["files"], KEY, wanted["files"], wanted["directories"],
                     wanted["secrets"])
    check = run_module(managed_files.main, dict(wanted, _ansible_check_mode=True)).result
    assert answer == (not check["changed"]), check["paths"]
    return answer


def test_settled_exactly_where_the_module_would_change_nothing(run_module, tmp_path):
    assert not agrees(run_module, tmp_path, spec(tmp_path))  # nothing written yet
    run_module(managed_files.main, spec(tmp_path))
    assert agrees(run_module, tmp_path, spec(tmp_path))
    assert not agrees(run_module, tmp_path, spec(tmp_path, env="A=2\n"))
    assert not agrees(run_module, tmp_path, spec(tmp_path, secret="TOKEN=other\n"))
    base = tmp_path / "etc"
    os.chmod(str(base / "secrets.env"), 0o640)
    assert not agrees(run_module, tmp_path, spec(tmp_path))
    os.chmod(str(base / "secrets.env"), 0o600)
    os.chmod(str(base), 0o755)
    assert not agrees(run_module, tmp_path, spec(tmp_path))
    os.chmod(str(base), 0o750)
    # A link in a file's place, even to the same content, is replaced by the module.
    os.rename(str(base / "node.env"), str(tmp_path / "real.env"))
    os.symlink(str(tmp_path / "real.env"), str(base / "node.env"))
    assert not agrees(run_module, tmp_path, spec(tmp_path))


def test_the_probe_shows_no_secret_and_no_plain_digest(run_module, tmp_path):
    run_module(managed_files.main, spec(tmp_path))
    found = probe(run_module, tmp_path)
    secret_file = str(tmp_path / "etc" / "secrets.env")
    assert found["files"][secret_file]["type"] == "file" and found["files"][secret_file]["mode"] == "0600"
    shown = json.dumps(found)
    assert "abc123" not in shown
    # The digest depends on the run's key: another key, another digest.
    assert probe(run_module, tmp_path, key="x" * 32)["files"][secret_file]["digest"] != \
        found["files"][secret_file]["digest"]
    # Under another key the same files are not settled.
    wanted = spec(tmp_path)
    assert not settled(found["files"], "x" * 32, wanted["files"], wanted["directories"], wanted["secrets"])


def test_digests_need_a_key_and_texts_are_read_as_they_are(run_module, tmp_path):
    (tmp_path / "hosts").write_text("127.0.0.1 localhost\n")
    (tmp_path / "dos").write_bytes(b"127.0.0.1 localhost\r\n")
    refused = run_module(node_probe.main, {"npu_smi": "no-such-npu-smi", "files": [str(tmp_path / "hosts")]})
    assert refused.failed and refused.result["msg"] == "digest_key is required with files or file_dirs"
    found = run_module(node_probe.main, {"npu_smi": "no-such-npu-smi",
                                         "texts": [str(tmp_path / "hosts"), str(tmp_path / "dos"),
                                                   str(tmp_path / "none")]}).result
    # Carriage returns kept: block_in_place must see them (blockinfile reads the bytes as they are).
    assert found["texts"] == {str(tmp_path / "hosts"): "127.0.0.1 localhost\n",
                              str(tmp_path / "dos"): "127.0.0.1 localhost\r\n", str(tmp_path / "none"): None}
    assert found["files"] == {}
