# -*- coding: utf-8 -*-
"""support_bundle records every command and file, with secrets redacted (fake tools, this machine)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import stat

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
    done = run_module(main, {"npu_smi": npu_smi, "hccn_tool": hccn, "ascend_home": str(home), "units": [],
                             "files": [str(env), str(serve_env)]})
    assert not done.failed and done.result["changed"] is False
    result = done.result["bundle"]
    assert result["format"] == 1 and result["devices"] == []  # no /dev/davinciN on this machine
    commands = dict((" ".join(c["argv"][1:]), c) for c in result["commands"] if c["argv"][0] == npu_smi)
    assert commands["info -m"] == {"argv": [npu_smi, "info", "-m"], "rc": 0, "stdout": "npu-smi info -m\n",
                                   "stderr": ""}
    assert result["files"][str(home / "driver" / "version.info")] == "Version=24.1.rc2.2\n"
    assert result["files"][str(env)] == 'HF_TOKEN=<redacted>\nASCEND_RT_VISIBLE_DEVICES="0,1"\n'
    assert str(serve_env) not in result["files"]
