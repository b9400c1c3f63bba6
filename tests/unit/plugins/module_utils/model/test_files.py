"""The model's manifest, the checks against it, the fan-out's rounds and the copy's command lines."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os

import pytest

from ansible_collections.ascend.inference.plugins.module_utils.model import files


def write(root, path, data):
    full = os.path.join(str(root), path)
    if not os.path.isdir(os.path.dirname(full)):
        os.makedirs(os.path.dirname(full))
    with open(full, "wb") as handle:
        handle.write(data)
    return full


def sha(data):
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def model(tmp_path):
    write(tmp_path, "config.json", b"{}")
    write(tmp_path, "weights/part-1.safetensors", b"a" * 1000)
    write(tmp_path, "weights/part-2.safetensors", b"b" * 500)
    return tmp_path


def hasher(root):
    calls = []

    def run(paths):
        calls.append(sorted(paths))
        return files.hash_files(str(root), paths, workers=2)
    run.calls = calls
    return run


def test_the_manifest_holds_every_file_with_its_size_and_sha256(model):
    manifest, cost = files.build_manifest(files.walk(str(model)), hasher=hasher(model))
    assert [(f["path"], f["size"], f["sha256"]) for f in manifest["files"]] == [
        ("config.json", 2, sha(b"{}")),
        ("weights/part-1.safetensors", 1000, sha(b"a" * 1000)),
        ("weights/part-2.safetensors", 500, sha(b"b" * 500)),
    ]
    assert manifest["count"] == 3 and manifest["bytes"] == 1502
    assert manifest["digest"] == files.digest(manifest["files"])
    assert cost == {"hashed": 3, "reused": 0, "changed": [], "unreadable": []}


def test_a_model_is_hashed_once_and_a_changed_file_again(model):
    first = files.build_manifest(files.walk(str(model)), hasher=hasher(model))[0]
    cached = files.record(first, str(model))
    again = hasher(model)
    second, cost = files.build_manifest(files.walk(str(model)), cached, hasher=again)
    assert again.calls == [] and cost["reused"] == 3 and second["digest"] == first["digest"]
    write(model, "weights/part-2.safetensors", b"c" * 700)
    third, cost = files.build_manifest(files.walk(str(model)), cached, hasher=again)
    assert again.calls == [["weights/part-2.safetensors"]]
    assert third["digest"] != first["digest"] and cost["hashed"] == 1 and cost["reused"] == 2


def test_a_rehash_names_content_that_changed_under_the_same_size_and_time(model):
    first = files.build_manifest(files.walk(str(model)), hasher=hasher(model))[0]
    path = os.path.join(str(model), "weights/part-1.safetensors")
    info = os.stat(path)
    write(model, "weights/part-1.safetensors", b"x" * 1000)
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    cached = files.record(first, str(model))
    trusted = files.build_manifest(files.walk(str(model)), cached, hasher=hasher(model))[0]
    assert trusted["digest"] == first["digest"]  # the quick way cannot see it
    rehashed, cost = files.build_manifest(files.walk(str(model)), cached, rehash=True, hasher=hasher(model))
    assert cost["changed"] == ["weights/part-1.safetensors"] and rehashed["digest"] != first["digest"]


def test_without_a_hasher_sizes_are_known_and_the_digest_is_not(model):
    manifest, cost = files.build_manifest(files.walk(str(model)))
    assert manifest["digest"] is None and all(f["sha256"] is None for f in manifest["files"])
    assert manifest["bytes"] == 1502 and cost["hashed"] == 0


def test_hidden_entries_at_the_top_partial_directories_and_rsync_temporaries_are_not_the_model(model):
    write(model, ".cache/huggingface/download/config.json.metadata", b"m")
    write(model, ".git/lfs/objects/ab/cd", b"x" * 100)
    write(model, ".gitattributes", b"*.safetensors filter=lfs")
    write(model, "weights/.hidden-but-nested", b"n")
    write(model, "weights/.ascend-model-partial/part-1.safetensors", b"a" * 10)
    write(model, "weights/.part-2.safetensors.Ab12Cd", b"b" * 10)
    # A top-level file on its way: rsync's temporary file is hidden too, and kept (to count and clean it).
    write(model, ".tokenizer.json.Zz99Yy", b"t" * 7)
    found = files.walk(str(model))
    assert sorted(found) == [".tokenizer.json.Zz99Yy", "config.json", "weights/.hidden-but-nested",
                             "weights/.part-2.safetensors.Ab12Cd", "weights/part-1.safetensors",
                             "weights/part-2.safetensors"]
    manifest = files.build_manifest(found, hasher=hasher(model))[0]
    assert [f["path"] for f in manifest["files"]] == [
        "config.json", "weights/.hidden-but-nested", "weights/part-1.safetensors", "weights/part-2.safetensors"]
    # Against a manifest that holds tokenizer.json, its temporary file is a copy on its way, not an extra file.
    with_tokenizer = {"files": manifest["files"] + [{"path": "tokenizer.json", "size": 9, "sha256": "t"}]}
    result = files.compare(with_tokenizer, found)
    assert result["transient"] == [".tokenizer.json.Zz99Yy", "weights/.part-2.safetensors.Ab12Cd"]
    assert result["extra"] == [] and result["missing"] == ["tokenizer.json"]
    assert files.bytes_present(with_tokenizer, found, {}) == manifest["bytes"] + 7


def test_a_link_loop_ends_and_links_are_followed(model, tmp_path_factory):
    outside = tmp_path_factory.mktemp("blobs")
    write(outside, "blob", b"z" * 30)
    os.symlink(os.path.join(str(outside), "blob"), os.path.join(str(model), "linked.safetensors"))
    os.symlink(str(model), os.path.join(str(model), "weights", "loop"))
    found = files.walk(str(model))
    assert found["linked.safetensors"][0] == 30
    assert not [path for path in found if path.startswith("weights/loop/weights/loop")]


def test_the_quick_check_names_missing_wrong_extra_and_moving_files(model):
    manifest = files.build_manifest(files.walk(str(model)), hasher=hasher(model))[0]
    os.unlink(os.path.join(str(model), "config.json"))
    write(model, "weights/part-2.safetensors", b"b" * 100)
    write(model, "extra.safetensors", b"e")
    write(model, "weights/.part-2.safetensors.XyZ123", b"b" * 50)
    result = files.compare(manifest, files.walk(str(model)))
    assert result == {
        "missing": ["config.json"],
        "wrong_size": [{"path": "weights/part-2.safetensors", "size": 100, "expected": 500}],
        "extra": ["extra.safetensors"],
        "transient": ["weights/.part-2.safetensors.XyZ123"],
        "bytes_missing": 502,
    }
    assert files.mismatch(dict(result, corrupt=["weights/part-1.safetensors"])) == (
        "1 missing (config.json); 1 of another size (weights/part-2.safetensors: 100 bytes, manifest 500); "
        "1 whose sha256 differs from the manifest (weights/part-1.safetensors); 1 not in the manifest "
        "(extra.safetensors)")
    assert files.mismatch(files.compare(manifest, dict(
        (f["path"], (f["size"], 0)) for f in manifest["files"]))) is None


def test_bytes_present_count_complete_files_and_files_on_their_way(model):
    manifest = files.build_manifest(files.walk(str(model)), hasher=hasher(model))[0]
    found = {"config.json": (2, 0), "weights/.part-1.safetensors.Ab12Cd": (400, 0)}
    assert files.bytes_present(manifest, found, {"weights/part-2.safetensors": 120}) == 2 + 400 + 120
    # A temporary file longer than the file cannot count more than the file.
    assert files.bytes_present(manifest, {"weights/.part-2.safetensors.Ab12Cd": (900, 0)}, {}) == 500
    assert files.partial_path("weights/part-2.safetensors") == "weights/.ascend-model-partial/part-2.safetensors"


def rounds(result):
    return [(t["seeder"], t["host"], t["round"], t["after"], t["wait_for"], t["serves"]) for t in result["transfers"]]


def test_from_the_controller_once_then_the_holders_double_each_round():
    nodes = ["n%d" % i for i in range(8)]
    result = files.schedule(nodes, set())
    assert result["lines"] == [
        "round 1: the controller -> n0",
        "round 2: n0 -> n1",
        "round 3: n0 -> n2, n1 -> n3",
        "round 4: n0 -> n4, n1 -> n5, n2 -> n6, n3 -> n7",
    ]
    assert rounds(result)[:4] == [
        (None, "n0", 1, None, [], True),
        ("n0", "n1", 2, None, ["n0"], True),
        ("n0", "n2", 3, "n1", ["n0", "n1"], True),
        ("n1", "n3", 3, None, ["n1"], True),
    ]
    assert result["rounds"] == 4 and result["seeds"] == []
    # Every receiver waits only for hosts before it (Ansible starts hosts in order, whatever its forks).
    for transfer in result["transfers"]:
        assert all(nodes.index(host) < nodes.index(transfer["host"]) for host in transfer["wait_for"])


def test_nodes_that_hold_the_model_send_it_and_the_controller_sends_nothing():
    result = files.schedule(["a", "b", "c", "d"], {"c"})
    assert result["lines"] == ["round 1: c -> a", "round 2: c -> b, a -> d"]
    assert result["seeds"] == ["c"]
    assert rounds(result)[0] == ("c", "a", 1, None, [], True)
    # c is serving before the copies start (the seeds' task): nobody waits for it.
    assert rounds(result)[1] == ("c", "b", 2, "a", ["a"], False)


def test_the_head_as_source_and_no_fanout():
    assert files.schedule(["head", "w1", "w2"], set(), source="head")["lines"] == [
        "round 1: head -> w1", "round 2: head -> w2"]
    result = files.schedule(["head", "w1", "w2", "w3"], set(), source="head")
    assert result["lines"] == ["round 1: head -> w1", "round 2: head -> w2, w1 -> w3"]
    plain = files.schedule(["head", "w1", "w2"], set(), source=None, fanout=False)
    assert plain["lines"] == ["round 1: the controller -> head, the controller -> w1, the controller -> w2"]
    assert all(t["wait_for"] == [] and not t["serves"] for t in plain["transfers"])
    nothing = {"transfers": [], "seeds": [], "rounds": 0, "lines": [], "pipelined": False}
    assert files.schedule(["a", "b"], {"a", "b"}) == nothing


def test_the_swarm_from_three_receivers_on():
    # auto: two receivers stay in rounds, three make a swarm where every holder sends from the start.
    assert not files.schedule(["head", "w1", "w2"], set(), source="head", pipeline="auto")["pipelined"]
    found = files.schedule(["head", "w1", "w2", "w3"], {"w3"}, source="head", pipeline="auto")
    assert not found["pipelined"]
    found = files.schedule(["head", "w1", "w2", "w3"], set(), source="head", pipeline="auto")
    assert found["pipelined"] and found["seeds"] == ["head"] and found["rounds"] == 1
    assert [t["host"] for t in found["transfers"]] == ["w1", "w2", "w3"]
    assert all(t["wait_for"] == [] and t["seeder"] is None for t in found["transfers"])
    assert found["lines"] == ["swarm: head send to w1, w2, w3 at once, each passing on the pieces it has checked"]
    # From the controller, with a node that holds the model already.
    found = files.schedule(["a", "b", "c"], {"b"}, pipeline="always")
    assert found["pipelined"] and found["seeds"] == ["b"]
    assert found["lines"] == ["swarm: the controller, b send to a, c at once, each passing on the pieces it has checked"]
    assert not files.schedule(["a", "b", "c", "d"], set(), pipeline="never")["pipelined"]


def test_rsync_command_lines():
    assert files.fetch_argv("192.0.2.11", 8730, "/models/m/", "/run/p", "100M", 300) == [
        "rsync", "--recursive", "--copy-links", "--times", "--chmod=D0755,F0644", "--partial",
        "--partial-dir=.ascend-model-partial", "--exclude=/.*", "--stats", "--timeout=300", "--bwlimit=100M",
        "--contimeout=30", "--password-file=/run/p", "rsync://ascend-model@192.0.2.11:8730/model/", "/models/m/"]
    argv = files.push_argv("/data/m", "node1:/models/m", "podman exec -i", "sudo -n rsync")
    assert argv[-4:] == ["--rsh=podman exec -i", "--rsync-path=sudo -n rsync", "/data/m/", "node1:/models/m/"]
    assert files.rsh_option(["ssh", "-o", "ProxyCommand=ssh -W %h:%p jump", "-i", "/k ey"]) == \
        "ssh -o 'ProxyCommand=ssh -W %h:%p jump' -i '/k ey'"
    assert files.rsh_option(["ssh", "-o", "X=it's"]) == 'ssh -o "X=it\'s"'
    with pytest.raises(ValueError):
        files.rsh_option(["ssh", "-o", "both ' and \""])


def test_the_daemon_serves_read_only_to_the_members_with_a_password():
    config = files.seed_config("/models/m", ["192.0.2.11", "192.0.2.12"], "/run/s", 300)
    lines = [line.strip() for line in config.splitlines()]
    for expected in ("[model]", "path = /models/m", "read only = yes", "list = no", "hosts allow = 192.0.2.11 192.0.2.12",
                     "hosts deny = *", "auth users = ascend-model:ro", "secrets file = /run/s", "strict modes = yes",
                     "timeout = 300", "exclude = .ascend-model-partial/"):
        assert expected in lines
    with pytest.raises(ValueError):
        files.seed_config("/models/m\nuid = root", ["192.0.2.11"], "/run/s")


def test_rsync_statistics_and_progress_lines():
    output = ("Number of regular files transferred: 3\nTotal file size: 80,000,003 bytes\n"
              "Literal data: 39,798,083 bytes\nMatched data: 40,201,920 bytes\n")
    assert files.rsync_stats(output) == {"literal": 39798083, "matched": 40201920, "files_transferred": 3}
    assert files.rsync_stats("") == {"literal": None, "matched": None, "files_transferred": None}
    assert files.progress_status("node1", 120 * 10 ** 6, 300 * 10 ** 6, 25 * 10 ** 6) == \
        "from node1: 120.0 MB of 300.0 MB (40%), 25.0 MB/s"
    assert files.progress_status(None, 0, 0, 0) == "from the controller: 0 B of 0 B (100%), 0 B/s"


def test_the_roles_variables_and_the_nodes_problems():
    assert files.settings_problems("none", "tag") == []
    assert files.settings_problems("ftp", "/m") == [
        "model_source must be one of none, controller, head, shared, huggingface, modelscope (found 'ftp')"]
    problems = files.settings_problems("controller", "Qwen/Qwen2.5", "", None, "node1", ["node1"])
    assert problems[0].startswith("ascend_model must be an absolute directory path below / when model_source is "
                                  "controller (found 'Qwen/Qwen2.5')")
    assert problems[1] == "model_source controller needs model_src, the model's directory on the controller"
    assert files.settings_problems("head", "/m", head="node1", hosts=["node2"]) == [
        "model_source head: the head node1 holds the model's source but is not in this run (--limit); include it"]
    assert files.settings_problems("huggingface", "/m", head="node1", hosts=["node1"])[0].startswith(
        "model_source huggingface needs model_hub_repo")
    results = {"n1": {"complete": False, "extra": ["x.bin"], "bytes_missing": 5, "free_bytes": 100},
               "n2": {"complete": False, "extra": [], "bytes_missing": 3 * 10 ** 9, "free_bytes": 10 ** 9,
                      "missing": ["a"]}}
    assert files.node_problems("controller", results) == [
        "n1: 1 file(s) under the model directory are not in the model's manifest (x.bin): remove them, or set "
        "model_remove_extra: true",
        "n2: the copy needs 3.0 GB more, but only 1.0 GB is free there"]
    assert files.node_problems("shared", {"n2": results["n2"]}) == [
        "n2 does not see the model on the shared mount as the head does: 1 missing (a)"]


def test_hub_commands():
    assert files.hub_download_argv("huggingface", "hf", "Qwen/Q", "", "/models/q") == [
        "hf", "download", "Qwen/Q", "--local-dir", "/models/q"]
    assert files.hub_download_argv("modelscope", "modelscope", "Qwen/Q", "v1", "/models/q") == [
        "modelscope", "download", "--model", "Qwen/Q", "--local_dir", "/models/q", "--revision", "v1"]


def test_records_are_read_only_for_their_model(model):
    manifest = files.build_manifest(files.walk(str(model)), hasher=hasher(model))[0]
    text = json.dumps(files.record(manifest, "/models/m"))
    assert files.read_record(text, "/models/m")["digest"] == manifest["digest"]
    assert files.read_record(text, "/models/other") is None
    assert files.read_record("not json", "/models/m") is None
    assert files.read_record(None, "/models/m") is None


def test_after_a_checked_copy_the_record_is_written_only_when_names_and_sizes_match(model, tmp_path_factory):
    manifest = files.build_manifest(files.walk(str(model)), hasher=hasher(model))[0]
    record = str(tmp_path_factory.mktemp("records") / "model.json")
    result = files.record_checked_copy(manifest, str(model), record, files.walk(str(model)))
    assert result["recorded"] and not files.mismatch(result)
    with open(record) as handle:
        assert json.load(handle) == files.record(manifest, str(model))
    assert oct(os.stat(record).st_mode & 0o777) == "0o644"
    os.unlink(record)
    write(model, "weights/part-2.safetensors", b"b" * 499)
    result = files.record_checked_copy(manifest, str(model), record, files.walk(str(model)))
    assert not result["recorded"] and not os.path.exists(record)
    assert files.mismatch(result) == "1 of another size (weights/part-2.safetensors: 499 bytes, manifest 500)"
    write(model, "weights/part-2.safetensors", b"b" * 500)
    write(model, "notes.txt", b"x")
    result = files.record_checked_copy(manifest, str(model), record, files.walk(str(model)))
    assert not result["recorded"] and result["extra"] == ["notes.txt"] and not os.path.exists(record)


def test_a_checked_copy_is_judged_from_the_walk_its_caller_made(model, tmp_path_factory, monkeypatch):
    # swarm_status walks the model once, for the fetch's time and for this check.
    manifest = files.build_manifest(files.walk(str(model)), hasher=hasher(model))[0]
    record = str(tmp_path_factory.mktemp("records") / "model.json")
    found = files.walk(str(model))
    monkeypatch.setattr(files, "walk", lambda *args, **kwargs: pytest.fail("walked the model again"))
    assert files.record_checked_copy(manifest, str(model), record, found)["recorded"]
    del found["weights/part-2.safetensors"]
    result = files.record_checked_copy(manifest, str(model), record, found)
    assert not result["recorded"] and result["missing"] == ["weights/part-2.safetensors"]
