# -*- coding: utf-8 -*-
"""support_bundle records every command and file, with secrets redacted (fake tools, this machine)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import stat
import sys

from ansible_collections.ascend.inference.plugins.modules import support_bundle
from ansible_collections.ascend.inference.plugins.modules.support_bundle import main


def tool(tmp_path, name, body):
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_bundle_records_commands_and_files_without_secrets(run_module, tmp_path):
    npu_smi = tool(tmp_path, "npu-smi", 'echo "npu-smi $*"')
    hccn = tool(tmp_path, "hccn_tool", "exit 3")
    home = tmp_path / "Ascend"
    (home / "driver").mkdir(parents=True)
    (home / "driver" / "version.info").write_text("Version=24.1.rc2.2\n")
    env = tmp_path / "node.env"
    env.write_text('HF_TOKEN="hf_secret"\nASCEND_RT_VISIBLE_DEVICES="0,1"\n')
    serve_env = tmp_path / "serve.env"
    serve_env.write_text("VLLM_API_KEY=sk\n")
    # CANN's latest link, a serve program in the engine's environment, an instance's unit.
    (home / "ascend-toolkit" / "8.0.RC1").mkdir(parents=True)
    (home / "ascend-toolkit" / "latest").symlink_to("8.0.RC1")
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    tool(venv / "bin", "vllm", "")
    (venv / "bin" / "vllm").write_text("#!%s\n" % sys.executable)
    units = tmp_path / "units"
    units.mkdir()
    (units / "ascend-serve-chat.service").write_text("[Service]\nExecStart=/v/bin/vllm serve /m --port 8001\n")
    done = run_module(main, {"npu_smi": npu_smi, "hccn_tool": hccn, "ascend_home": str(home), "units": [],
                             "files": [str(env), str(serve_env)], "python_env": str(venv), "unit_dir": str(units),
                             "settings": {"ascend_engine": "vllm-ascend", "ascend_api_key": "sk", "ascend_launcher": None}})
    assert not done.failed and done.result["changed"] is False
    result = done.result["bundle"]
    assert result["format"] == 2 and result["devices"] == []  # no /dev/davinciN on this machine
    assert result["links"] == {str(home / "ascend-toolkit" / "latest"): "8.0.RC1"}
    assert result["engine"]["program"] == str(venv / "bin" / "vllm")
    assert result["engine"]["interpreter"] == sys.executable and set(result["engine"]["versions"]) == {
        "vllm", "vllm-ascend", "vllm-mindspore"}
    assert result["units"] == {"ascend-serve-chat.service": {"kind": "serve", "instance": "chat",
                                                             "ports": {"port": 8001}}}
    # Only the settings a replay needs, and never a secret.
    assert result["settings"] == {"ascend_engine": "vllm-ascend"}
    commands = dict((" ".join(c["argv"][1:]), c) for c in result["commands"] if c["argv"][0] == npu_smi)
    assert commands["info -m"] == {"argv": [npu_smi, "info", "-m"], "rc": 0, "stdout": "npu-smi info -m\n",
                                   "stderr": ""}
    assert result["files"][str(home / "driver" / "version.info")] == "Version=24.1.rc2.2\n"
    assert result["files"][str(env)] == 'HF_TOKEN=<redacted>\nASCEND_RT_VISIBLE_DEVICES="0,1"\n'
    assert str(serve_env) not in result["files"]


def test_pings_go_where_the_network_check_sends_them(run_module, tmp_path, monkeypatch):
    hccn = tool(tmp_path, "hccn_tool", 'echo "hccn_tool $*"; echo "3 packets transmitted, 0 received"; exit 1')
    peers = {"me": {"0": {"ip": "10.0.0.1"}}, "other": {"0": {"ip": "10.0.0.2"}, "1": {"ip": "10.0.0.3"}}}
    monkeypatch.setattr(support_bundle.readers, "davinci_devices", lambda: (["davinci4", "davinci5"], [4, 5]))
    done = run_module(main, {"hccn_tool": hccn, "ping_peers": peers, "me": "me"})
    # From the first NPU to the other node's first address; the answer as the tool gave it.
    assert done.result["bundle"] == {
        "pings": [{"device": 4, "address": "10.0.0.2", "node": "other", "kind": "ping"}],
        "commands": [{"argv": [hccn, "-i", "4", "-ping", "-g", "address", "10.0.0.2"], "rc": 1,
                      "stdout": "hccn_tool -i 4 -ping -g address 10.0.0.2\n3 packets transmitted, 0 received\n",
                      "stderr": ""}]}


def test_in_container_mode_the_engine_versions_are_the_images(run_module, tmp_path, monkeypatch):
    """The image's python3 answers container.INSPECT (as the engine_container role reads an image); the bundle keeps
    the engine distributions' versions."""
    answer = '{"python": "3.11.6", "versions": {"vllm": "0.23.0", "vllm-ascend": "0.23.0", "vllm-mindspore": null, ' \
             '"ray": "2.46.0"}, "files": {}, "set_env": []}'
    podman = tool(tmp_path, "podman", 'echo "$*" > %s/argv; echo \'%s\'' % (tmp_path, answer))
    monkeypatch.setenv("PATH", "%s:%s" % (tmp_path, os.environ["PATH"]))
    done = run_module(main, {"npu_smi": podman, "hccn_tool": podman, "units": [], "files": [],
                             "container_image": "quay.io/ascend/vllm-ascend:v0.23.0", "container_engine": "podman"})
    engine = done.result["bundle"]["engine"]
    assert engine["versions"] == {"vllm": "0.23.0", "vllm-ascend": "0.23.0", "vllm-mindspore": None}
    assert engine["image"] == "quay.io/ascend/vllm-ascend:v0.23.0" and engine["error"] is None
    assert (tmp_path / "argv").read_text().startswith("run --rm --pull=never --net=none --entrypoint=python3 quay.io/ascend/")
