# -*- coding: utf-8 -*-
"""The engine_image module with a stand-in podman on PATH (this machine's podman is not assumed).

The stand-in keeps its images in a JSON file: `image inspect`, `load --input` (which reads the
archive's manifest.json, as `podman save` writes it), `pull` and `run ... python3 -c CODE ARG` (run
with this machine's Python: the real inspection code) behave as podman's for what the module uses.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import io
import json
import sys
import tarfile

import pytest

from ansible_collections.ascend.inference.plugins.modules.engine_image import main

IMAGE = "localhost/vllm-ascend-sim:v0.23.0"
HEX = "04598bc9955b" + "1" * 52
OTHER = "c0ffee" + "2" * 58
PODMAN = r'''#!%(python)s
import json, os, subprocess, sys, tarfile
state = %(state)r
images = json.load(open(state)) if os.path.exists(state) else {}
args = sys.argv[1:]
with open(state + ".log", "a") as log:
    log.write(" ".join(args[:2]) + "\n")
if args[:2] == ["image", "inspect"]:
    if args[-1] not in images:
        sys.exit("Error: %%s: image not known" %% args[-1])
    print(images[args[-1]])
elif args[0] == "load":
    manifest = json.loads(tarfile.open(args[-1]).extractfile("manifest.json").read())
    for tag in manifest[0]["RepoTags"]:
        images[tag] = manifest[0]["Config"][:-len(".json")]
    json.dump(images, open(state, "w"))
elif args[0] == "pull":
    images[args[1]] = "%(pulled)s"
    json.dump(images, open(state, "w"))
elif args[0] == "run":
    code = args.index("-c")
    sys.exit(subprocess.run([sys.executable] + args[code:]).returncode)
else:
    sys.exit("unexpected: %%s" %% args)
'''


def archive(path, image_hex, tags):
    manifest = json.dumps([{"Config": image_hex + ".json", "RepoTags": tags, "Layers": []}]).encode()
    with tarfile.open(str(path), "w") as tar:
        info = tarfile.TarInfo("manifest.json")
        info.size = len(manifest)
        tar.addfile(info, io.BytesIO(manifest))
    return str(path)


@pytest.fixture
def podman(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    state = str(tmp_path / "images.json")
    program = bin_dir / "podman"
    program.write_text(PODMAN % {"python": sys.executable, "state": state, "pulled": OTHER})
    program.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))

    class Podman(object):
        path = str(program)

        @staticmethod
        def images():
            try:
                return json.load(open(state))
            except IOError:
                return {}

        @staticmethod
        def calls():
            try:
                return open(state + ".log").read().splitlines()
            except IOError:
                return []

        @staticmethod
        def set(images):
            json.dump(images, open(state, "w"))
    return Podman


def test_an_archive_is_loaded_where_the_node_lacks_its_image_then_read_inside(run_module, podman, tmp_path):
    done = run_module(main, {"image": IMAGE, "archive": archive(tmp_path / "a.tar", HEX, [IMAGE])})
    assert not done.failed, done.result
    result = done.result
    assert result["changed"] and result["action"] == "loaded" and result["kind"] == "podman"
    assert result["program"] == podman.path and result["id"] == HEX and result["archive_id"] == "sha256:" + HEX
    # Read by the real inspection code (this machine's Python): its release, no engine installed here.
    assert result["inside"]["python"] == sys.version.split()[0] and result["error"] is None
    assert set(result["inside"]["versions"]) == {"vllm", "vllm-ascend", "vllm-mindspore", "ray"}
    # Again: the node's image is the archive's, so nothing is loaded.
    again = run_module(main, {"image": IMAGE, "archive": archive(tmp_path / "a.tar", HEX, [IMAGE])}).result
    assert not again["changed"] and again["action"] == "none"
    assert [c for c in podman.calls() if c.startswith("load")] == ["load --input"]


def test_a_new_archive_under_the_same_tag_is_loaded(run_module, podman, tmp_path):
    podman.set({IMAGE: OTHER})
    result = run_module(main, {"image": IMAGE, "archive": archive(tmp_path / "a.tar", HEX, [IMAGE])}).result
    assert result["action"] == "loaded" and result["id"] == HEX


def test_check_mode_says_it_would_load_and_loads_nothing(run_module, podman, tmp_path):
    result = run_module(main, {"image": IMAGE, "archive": archive(tmp_path / "a.tar", HEX, [IMAGE]),
                               "_ansible_check_mode": True}).result
    assert result["changed"] and result["action"] == "loaded" and result["id"] is None and result["inside"] is None
    assert podman.images() == {} and not [c for c in podman.calls() if c.startswith("load")]


def test_an_archive_of_another_image_is_refused_by_name(run_module, podman, tmp_path):
    done = run_module(main, {"image": IMAGE, "archive": archive(tmp_path / "a.tar", HEX, ["localhost/other:1"])})
    assert done.failed
    assert "does not hold ascend_container_image" in done.result["msg"] and "04598bc9955b" in done.result["msg"]


def test_an_unreadable_archive_is_an_error_not_a_traceback(run_module, podman, tmp_path):
    (tmp_path / "broken.tar").write_text("not a tar")
    result = run_module(main, {"image": IMAGE, "archive": str(tmp_path / "broken.tar")}).result
    assert result["error"].startswith("cannot read the image archive %s" % (tmp_path / "broken.tar"))
    assert not result["changed"]


def test_pull_only_where_the_image_is_missing(run_module, podman):
    result = run_module(main, {"image": IMAGE, "pull": True, "inspect": False}).result
    assert result["action"] == "pulled" and result["id"] == OTHER and result["inside"] is None
    again = run_module(main, {"image": IMAGE, "pull": True, "inspect": False}).result
    assert again["action"] == "none" and not again["changed"]


def test_present_means_present(run_module, podman):
    result = run_module(main, {"image": IMAGE, "inspect": False}).result
    assert result["id"] is None and result["action"] == "none" and not result["changed"]


def test_no_container_engine_is_named(run_module, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    result = run_module(main, {"image": IMAGE, "engine": "docker"}).result
    assert result["error"] == "no container engine found (docker)" and result["program"] is None
