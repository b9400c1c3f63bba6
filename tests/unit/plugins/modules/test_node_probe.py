# -*- coding: utf-8 -*-
"""The node_probe module on this machine, with fake npu-smi and CANN home."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import stat

from ansible_collections.ascend.inference.plugins.modules.node_probe import main


def fake_npu_smi(tmp_path, body):
    path = tmp_path / "npu-smi"
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_reads_every_answer_in_one_run(run_module, tmp_path):
    home = tmp_path / "toolkit"
    (home / "latest" / "x86_64-linux").mkdir(parents=True)
    (home / "latest" / "x86_64-linux" / "ascend_toolkit_install.info").write_text("version=8.0.RC1\n")
    model = tmp_path / "model"
    (model / "sub").mkdir(parents=True)
    (model / "config.json").write_text("{}")
    (model / "sub" / "weights.bin").write_bytes(b"x" * 100)
    os.symlink(str(model / "config.json"), str(model / "link.json"))
    npu_smi = fake_npu_smi(tmp_path, "printf 'NPU ID : 0\\nNPU ID : 3\\n'")
    done = run_module(main, {"npu_smi": npu_smi, "cann_home": str(home), "model": str(model),
                             "_ansible_check_mode": True})
    result = done.result
    assert not done.failed and result["changed"] is False
    assert result["npu_smi"]["rc"] == 0 and result["npu_smi"]["ids"] == [0, 3]
    assert result["cann_version"] == "8.0.RC1"
    assert result["model"] == {"files": 2, "bytes": 102}  # the symbolic link is not counted
    assert "127.0.0.1" in result["ipv4"]["lo"]
    assert all(isinstance(port["port"], int) for port in result["listeners"])


def test_failing_or_missing_tools_are_reported_not_raised(run_module, tmp_path):
    broken = fake_npu_smi(tmp_path, "echo 'dcmi module initialize failed' >&2; exit 3")
    done = run_module(main, {"npu_smi": broken, "cann_home": str(tmp_path / "none"),
                             "model": str(tmp_path / "no-model")})
    assert not done.failed
    assert done.result["npu_smi"]["rc"] == 3 and "dcmi" in done.result["npu_smi"]["stderr"]
    assert done.result["cann_version"] is None and done.result["model"] == {"files": 0, "bytes": 0}
    missing = run_module(main, {"npu_smi": "no-such-npu-smi"})
    assert missing.result["npu_smi"]["rc"] == 127 and "not found" in missing.result["npu_smi"]["stderr"]
    assert missing.result["model"] is None
