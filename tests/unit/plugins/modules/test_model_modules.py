# -*- coding: utf-8 -*-
"""model_manifest and model_check on this machine's files: hashed once, checked, repaired, recorded."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os

import pytest

from ansible_collections.ascend.inference.plugins.modules import model_check
from ansible_collections.ascend.inference.plugins.modules import model_manifest


@pytest.fixture
def source(tmp_path):
    root = tmp_path / "source"
    (root / "weights").mkdir(parents=True)
    (root / "config.json").write_bytes(b'{"num_hidden_layers": 2}')
    (root / "weights" / "model-00001-of-00002.safetensors").write_bytes(os.urandom(3000))
    (root / "weights" / "model-00002-of-00002.safetensors").write_bytes(os.urandom(2000))
    return root


def manifest_of(run_module, root, cache, **args):
    done = run_module(model_manifest.main, dict({"path": str(root), "cache": str(cache), "save": True}, **args))
    assert not done.failed, done.result
    return done.result


def copy_tree(src, dst):
    for directory, _subdirs, names in os.walk(str(src)):
        target = os.path.join(str(dst), os.path.relpath(directory, str(src)))
        os.makedirs(target, exist_ok=True)
        for name in names:
            with open(os.path.join(directory, name), "rb") as a, open(os.path.join(target, name), "wb") as b:
                b.write(a.read())


def test_the_manifest_is_made_once_and_saved(run_module, source, tmp_path):
    cache = tmp_path / "cache" / "m.json"
    first = manifest_of(run_module, source, cache)
    assert first["changed"] and first["hashed"] == 3 and first["reused"] == 0
    assert first["manifest"]["count"] == 3 and first["manifest"]["bytes"] == 5024
    assert json.loads(cache.read_text())["path"] == str(source)
    second = manifest_of(run_module, source, cache)
    assert not second["changed"] and second["hashed"] == 0 and second["reused"] == 3
    assert second["manifest"] == first["manifest"]


def test_check_mode_hashes_nothing_new_and_writes_nothing(run_module, source, tmp_path):
    cache = tmp_path / "m.json"
    done = manifest_of(run_module, source, cache, _ansible_check_mode=True)
    assert not done["changed"] and not cache.exists() and done["manifest"]["digest"] is None


def test_an_empty_or_missing_source_is_refused(run_module, tmp_path):
    done = run_module(model_manifest.main, {"path": str(tmp_path / "nothing")})
    assert done.failed and done.result["msg"] == "%s does not exist or holds no file" % (tmp_path / "nothing")


def test_a_node_is_hashed_once_recorded_and_repaired(run_module, source, tmp_path):
    manifest = manifest_of(run_module, source, tmp_path / "m.json")["manifest"]
    node = tmp_path / "node"
    copy_tree(source, node)
    record = tmp_path / "etc" / "model.manifest.json"
    args = {"path": str(node), "manifest": manifest, "record": str(record)}
    first = run_module(model_check.main, args).result
    assert first["complete"] and first["hashed"] and first["recorded"] and first["changed"]
    assert json.loads(record.read_text())["digest"] == manifest["digest"]
    again = run_module(model_check.main, args).result
    assert again["complete"] and not again["hashed"] and not again["changed"]
    # Silent corruption (same size and time): only the full check sees it; the copy's preparation removes it.
    victim = node / "weights" / "model-00002-of-00002.safetensors"
    info = victim.stat()
    victim.write_bytes(b"\0" * 2000)
    os.utime(str(victim), ns=(info.st_atime_ns, info.st_mtime_ns))
    quick = run_module(model_check.main, args).result
    assert quick["complete"] and quick["corrupt"] == []
    full = run_module(model_check.main, dict(args, hash="always")).result
    assert full["corrupt"] == ["weights/model-00002-of-00002.safetensors"] and not full["complete"]
    assert full["removable"] == full["corrupt"] and full["removed"] == [] and victim.exists()
    assert full["bytes_missing"] == 2000 and not full["changed"]
    ready = run_module(model_check.main, dict(args, hash="never", prepare=True, remove=full["removable"])).result
    assert ready["removed"] == ["weights/model-00002-of-00002.safetensors"] and not victim.exists()
    assert ready["changed"] and ready["missing"] == ["weights/model-00002-of-00002.safetensors"]
    outside = run_module(model_check.main, dict(args, prepare=True, remove=["../etc/passwd"])).result
    assert outside["removed"] == []  # only files found under the model directory are removed


def test_check_mode_removes_nothing_and_extra_files_are_named(run_module, source, tmp_path):
    manifest = manifest_of(run_module, source, tmp_path / "m.json")["manifest"]
    node = tmp_path / "node"
    copy_tree(source, node)
    (node / "weights" / "model-00001-of-00002.safetensors").write_bytes(b"short")
    (node / "stray.safetensors").write_bytes(b"x")
    record = tmp_path / "model.manifest.json"
    args = {"path": str(node), "manifest": manifest, "record": str(record)}
    done = run_module(model_check.main, args).result
    assert done["removable"] == ["weights/model-00001-of-00002.safetensors"] and not done["changed"]
    assert done["extra"] == ["stray.safetensors"] and not done["complete"] and not record.exists()
    assert done["wrong_size"] == [{"path": "weights/model-00001-of-00002.safetensors", "size": 5, "expected": 3000}]
    # With remove_extra the extra file is the copy's to remove, not a problem.
    extra_ok = run_module(model_check.main, dict(args, remove_extra=True)).result
    assert extra_ok["extra"] == [] and extra_ok["removable"] == ["stray.safetensors",
                                                                 "weights/model-00001-of-00002.safetensors"]
    check = run_module(model_check.main, dict(args, prepare=True, remove=extra_ok["removable"],
                                              _ansible_check_mode=True)).result
    assert check["changed"] and sorted(check["removed"]) == extra_ok["removable"]
    assert (node / "weights" / "model-00001-of-00002.safetensors").read_bytes() == b"short"
    removed = run_module(model_check.main, dict(args, prepare=True, remove=extra_ok["removable"])).result
    assert sorted(removed["removed"]) == extra_ok["removable"] and not (node / "stray.safetensors").exists()


def test_a_source_node_is_recorded_without_hashing_and_space_is_reported(run_module, source, tmp_path):
    manifest = manifest_of(run_module, source, tmp_path / "m.json")["manifest"]
    record = tmp_path / "model.manifest.json"
    done = run_module(model_check.main, {"path": str(source), "manifest": manifest, "record": str(record),
                                         "hash": "never"}).result
    assert done["complete"] and not done["hashed"] and done["recorded"]
    assert json.loads(record.read_text())["files"][0]["sha256"] == hashlib.sha256(b'{"num_hidden_layers": 2}').hexdigest()
    empty = run_module(model_check.main, {"path": str(tmp_path / "absent" / "m"), "manifest": manifest,
                                          "record": str(tmp_path / "r.json")}).result
    assert not empty["complete"] and empty["bytes_missing"] == 5024 and empty["free_bytes"] > 0
    assert len(empty["missing"]) == 3 and not empty["recorded"]


def test_a_file_where_the_model_directory_goes_is_refused(run_module, source, tmp_path):
    manifest = manifest_of(run_module, source, tmp_path / "m.json")["manifest"]
    (tmp_path / "taken").write_text("x")
    done = run_module(model_check.main, {"path": str(tmp_path / "taken"), "manifest": manifest,
                                         "record": str(tmp_path / "r.json"), "prepare": True})
    assert done.failed and done.result["msg"] == "%s exists and is not a directory: the model goes there" % (
        tmp_path / "taken")


def test_a_broken_link_in_the_source_is_refused_and_a_missing_hub_model_may_pass(run_module, source, tmp_path):
    os.symlink(str(tmp_path / "gone"), str(source / "dangling.safetensors"))
    done = run_module(model_manifest.main, {"path": str(source)})
    assert done.failed and done.result["msg"] == "%s holds links that lead nowhere: dangling.safetensors; remove them" % source
    empty = run_module(model_manifest.main, {"path": str(tmp_path / "nothing"), "missing_ok": True})
    assert not empty.failed and empty.result["manifest"] is None


def test_the_prepared_directory_is_created_for_the_copy(run_module, source, tmp_path):
    manifest = manifest_of(run_module, source, tmp_path / "m.json")["manifest"]
    target = tmp_path / "models" / "m"
    args = {"path": str(target), "manifest": manifest, "record": str(tmp_path / "r.json")}
    first = run_module(model_check.main, args).result
    assert not first["exists"] and not first["changed"] and not target.exists()
    ready = run_module(model_check.main, dict(args, prepare=True, remove=first["removable"])).result
    assert ready["changed"] and target.is_dir() and oct(target.stat().st_mode & 0o777) == "0o755"
