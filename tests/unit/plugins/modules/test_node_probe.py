# -*- coding: utf-8 -*-
"""The node_probe module on this machine, with a fake npu-smi and Ascend home (no /dev/davinciN here)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile

from ansible_collections.ascend.inference.plugins.module_utils.model import files as model_files
from ansible_collections.ascend.inference.plugins.module_utils.node.probe import unit_of_cgroup
from ansible_collections.ascend.inference.plugins.modules.node_probe import main

# Two chips of one card in npu-smi's `info -m` format (tab, 30-wide columns and one space, as its source prints).
CHIP_MAP = "\tNPU ID                         Chip ID                        Chip Logic ID                  Chip Name\n" \
           "\t1                              0                              0                              Ascend 310P3\n" \
           "\t1                              1                              1                              Ascend 310P3\n"


def fake_npu_smi(tmp_path, body):
    path = tmp_path / "npu-smi"
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_reads_every_answer_in_one_run(run_module, tmp_path):
    home = tmp_path / "Ascend"
    tree = home / "cann-8.5.0" / "aarch64-linux"
    tree.mkdir(parents=True)
    (tree / "ascend_toolkit_install.info").write_text("version=8.5.0\ninnerversion=V100R001C25SPC001B212\n")
    os.symlink("cann-8.5.0", str(home / "cann"))
    (home / "cann-8.5.0" / "set_env.sh").write_text("export ASCEND_HOME_PATH=/x\n")
    (home / "driver").mkdir()
    (home / "driver" / "version.info").write_text("Version=24.1.rc2.2\nInnerversion=V100R001C18SPC001B233\n")
    model = tmp_path / "model"
    (model / "sub").mkdir(parents=True)
    (model / "config.json").write_text("{}")
    (model / "sub" / "weights.bin").write_bytes(b"x" * 100)
    os.symlink(str(model / "config.json"), str(model / "link.json"))
    (tmp_path / "chip-map.txt").write_text(CHIP_MAP)
    npu_smi = fake_npu_smi(tmp_path, 'case "$2" in -m) cat "%s";; *) exit 0;; esac' % (tmp_path / "chip-map.txt"))
    # A port this test holds: the probe must name it and this process (preflight finds port holders so).
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    try:
        done = run_module(main, {"npu_smi": npu_smi, "ascend_home": str(home), "model": str(model),
                                 "_ansible_check_mode": True})
    finally:
        server.close()
    result = done.result
    assert not done.failed and result["changed"] is False
    assert result["npu_smi"]["rc"] == 0
    assert [(c["card"], c["chip"], c["logic"], c["physical"]) for c in result["npu"]["chips"]] == [
        (1, 0, 0, 0), (1, 1, 1, 1)]
    assert result["npu"]["family"] == "310P" and result["npu"]["npu_network"] is False
    assert result["npu"]["device_map"] == {"0": 0, "1": 1}
    # No /dev/davinciN on this machine: both chips are named as missing their device file.
    assert [p["message"].split(" (physical")[0] for p in result["npu"]["problems"]] == [
        "NPU 1 chip 0 (logic ID 0) has no /dev/davinci0", "NPU 1 chip 1 (logic ID 1) has no /dev/davinci1"]
    assert result["cann_version"] == "8.5.0"
    # Reached through the cann link, the path Huawei documents.
    assert result["cann"]["layout"] == "cann" and result["cann"]["set_env"] == str(home / "cann" / "set_env.sh")
    assert result["cann_problems"] == [] and result["cann_notes"] == []
    assert result["driver"] == {"version": "24.1.rc2.2", "innerversion": "V100R001C18SPC001B233"}
    # set_env.sh sourced by a clean shell, as node_env reads it: its variables and no bookkeeping of bash.
    assert result["cann_env"]["rc"] == 0 and result["cann_env"]["set_env"] == str(home / "cann" / "set_env.sh")
    assert result["cann_env"]["variables"]["ASCEND_HOME_PATH"] == "/x" and "SHLVL" not in result["cann_env"]["variables"]
    # The symbolic link is not counted; without a record of a copy nothing is compared with a manifest.
    assert result["model"] == {"files": 2, "bytes": 102, "digest": None, "mismatch": None}
    assert "127.0.0.1" in result["ipv4"]["lo"]
    with open("/proc/self/comm") as comm, open("/proc/self/cgroup") as cgroup:
        me, unit = comm.read().strip(), unit_of_cgroup(cgroup.read())
    ours = [s for s in result["listeners"] if s["port"] == port]
    # Our own socket: ss names the process and, with -e, its owner (for root by leaving "uid:" out).
    assert ours == [{"address": "127.0.0.1", "port": port, "process": me, "pid": os.getpid(), "uid": os.getuid(),
                     "unit": unit}]


def test_failing_or_missing_tools_are_reported_not_raised(run_module, tmp_path):
    broken = fake_npu_smi(tmp_path, "echo 'dcmi module initialize failed. ret is -8005' >&2; exit 187")
    done = run_module(main, {"npu_smi": broken, "ascend_home": str(tmp_path / "none"),
                             "model": str(tmp_path / "no-model")})
    assert not done.failed
    assert done.result["npu_smi"]["rc"] == 187 and "-8005" in done.result["npu_smi"]["stderr"]
    assert done.result["npu"]["chips"] == [] and done.result["npu"]["problems"] == []
    assert done.result["cann_version"] is None and done.result["cann"] is None and done.result["driver"] is None
    assert done.result["cann_env"] is None
    assert done.result["model"] == {"files": 0, "bytes": 0, "digest": None, "mismatch": None}
    missing = run_module(main, {"npu_smi": "no-such-npu-smi"})
    assert missing.result["npu_smi"]["rc"] == 127 and "not found" in missing.result["npu_smi"]["stderr"]
    assert missing.result["model"] is None


def test_a_copied_model_is_compared_with_its_manifest(run_module, tmp_path):
    """The model role's record (model_files.record) names what the node's files lack."""
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "extra.bin").write_bytes(b"e")
    files = [{"path": "config.json", "size": 2, "mtime_ns": 0, "sha256": "a" * 64},
             {"path": "w.safetensors", "size": 9, "mtime_ns": 0, "sha256": "b" * 64}]
    record = tmp_path / "model.manifest.json"
    record.write_text(json.dumps(model_files.record(
        {"format": 1, "files": files, "count": 2, "bytes": 11, "digest": model_files.digest(files)}, str(model))))
    done = run_module(main, {"npu_smi": "no-such-npu-smi", "model": str(model), "model_record": str(record)})
    assert done.result["model"]["digest"] == model_files.digest(files)
    assert done.result["model"]["mismatch"] == "1 missing (w.safetensors); 1 not in the manifest (extra.bin)"
    # A record of another model directory is not this one's.
    other = run_module(main, {"npu_smi": "no-such-npu-smi", "model": str(tmp_path), "model_record": str(record)})
    assert other.result["model"]["digest"] is None and other.result["model"]["mismatch"] is None


def test_a_device_map_that_is_not_numbers_fails(run_module, tmp_path):
    done = run_module(main, {"npu_smi": "no-such-npu-smi", "device_map": {"0": "x"}})
    assert done.failed and "ascend_npu_device_map must map logic IDs to physical IDs" in done.result["msg"]


def _engine_env(tmp_path, versions, shebang=None):
    """A Python environment with the given distributions' metadata and a `vllm` console script."""
    env = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    python = str(env / "bin" / "python3")
    purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    for name, version in versions.items():
        info = os.path.join(purelib, "%s-%s.dist-info" % (name.replace("-", "_"), version))
        os.makedirs(info)
        with open(os.path.join(info, "METADATA"), "w") as handle:
            handle.write("Metadata-Version: 2.1\nName: %s\nVersion: %s\n" % (name, version))
    script = env / "bin" / "vllm"
    script.write_text("%s\nprint('serve')\n" % (shebang or "#!" + python))
    script.chmod(0o755)
    return str(env), python


ENGINE = {"program": "vllm", "distribution": "vllm-ascend", "version": "0.23.0", "vllm_version": "0.23.0"}


def test_the_engine_version_is_read_by_the_python_that_runs_it(run_module, tmp_path):
    env, python = _engine_env(tmp_path, {"vllm": "0.23.0", "vllm-ascend": "0.22.0"})
    done = run_module(main, {"npu_smi": "no-such-npu-smi", "engine": dict(ENGINE, python_env=env)})
    engine = done.result["engine"]
    assert engine["program"] == env + "/bin/vllm" and engine["interpreter"] == python
    assert engine["versions"] == {"vllm-ascend": "0.22.0", "vllm": "0.23.0"} and engine["error"] is None
    assert engine["problems"] == ["ascend_engine_version is 0.23.0 but the installed vllm-ascend is 0.22.0: "
                                  "%s/bin/vllm (Python %s)" % (env, python)]


def test_an_env_shebang_is_resolved_in_the_engine_environment_first(run_module, tmp_path):
    env, python = _engine_env(tmp_path, {"vllm": "0.23.0", "vllm-ascend": "0.23.0"}, shebang="#!/usr/bin/env python3")
    done = run_module(main, {"npu_smi": "no-such-npu-smi", "engine": dict(ENGINE, python_env=env)})
    assert done.result["engine"]["interpreter"] == python
    assert done.result["engine"]["problems"] == []


def test_no_engine_is_a_note_and_no_vllm_metadata_a_problem(run_module, tmp_path):
    absent = run_module(main, {"npu_smi": "no-such-npu-smi",
                               "engine": dict(ENGINE, program="no-such-engine", python_env=str(tmp_path / "none"))})
    assert absent.result["engine"]["program"] is None and absent.result["engine"]["problems"] == []
    env, python = _engine_env(tmp_path, {"vllm-ascend": "0.23.0"})
    done = run_module(main, {"npu_smi": "no-such-npu-smi", "engine": dict(ENGINE, python_env=env)})
    assert done.result["engine"]["problems"] == [
        "vllm-ascend 0.23.0 runs on vLLM 0.23.0 but no vllm distribution is installed: %s/bin/vllm (Python %s)"
        % (env, python)]
    omitted = run_module(main, {"npu_smi": "no-such-npu-smi"})
    assert omitted.result["engine"] is None


def test_pips_sh_trampoline_is_read_with_the_environments_python(run_module, tmp_path):
    """pip writes a /bin/sh trampoline instead of a #! line when the environment's path is too long."""
    python = str(tmp_path / "venv" / "bin" / "python3")
    trampoline = "#!/bin/sh\n'''exec' \"%s\" \"$0\" \"$@\"\n' '''" % python
    env, found_python = _engine_env(tmp_path, {"vllm": "0.23.0", "vllm-ascend": "0.23.0"}, shebang=trampoline)
    done = run_module(main, {"npu_smi": "no-such-npu-smi", "engine": dict(ENGINE, python_env=env)})
    assert found_python == python and done.result["engine"]["interpreter"] == python
    assert done.result["engine"]["problems"] == []


def test_the_service_account_is_told_what_it_cannot_read(run_module, tmp_path):
    # pytest's tmp_path lies under a 0700 directory of root's: an account other than root cannot pass it.
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    # The first closed directory from / down is the one named.
    closed = next(p for p in list(reversed(tmp_path.parents)) + [tmp_path]
                  if stat.S_IMODE(p.stat().st_mode) & 0o001 == 0)
    done = run_module(main, {"npu_smi": fake_npu_smi(tmp_path, "exit 0"), "ascend_home": str(tmp_path / "none"),
                             "model": str(model), "service_user": "nobody"})
    service = done.result["service"]
    assert service["user"] == "nobody" and service["device_group"] is None  # no /dev/davinci* here
    info = closed.stat()
    # nobody is an account the collection did not create: named as such, with the rest.
    assert service["problems"][0].startswith("ascend_service_user nobody is an existing account on host this node")
    unreadable = ("ascend_service_user cannot read the model %s: %s is %s (uid %d, gid %d); make it readable for the "
                  "account (for CANN: install it with --install-for-all), or set ascend_service_user: root"
                  % (model, closed, stat.filemode(info.st_mode), info.st_uid, info.st_gid))
    assert service["problems"][1:] == [unreadable]
    as_root = run_module(main, {"npu_smi": fake_npu_smi(tmp_path, "exit 0"), "ascend_home": str(tmp_path / "none"),
                                "model": str(model)})
    assert as_root.result["service"] == {"user": "root", "device_group": None, "problems": []}


def test_the_service_account_is_told_which_model_file_it_cannot_read(run_module, tmp_path):
    # A model the account can reach (/tmp is open to all): one file root's alone, one dangling link skipped.
    model = tempfile.mkdtemp(prefix="model-", dir="/tmp")
    try:
        os.chmod(model, 0o755)
        with open(os.path.join(model, "config.json"), "w") as handle:
            handle.write("{}")
        weights = os.path.join(model, "weights.bin")
        with open(weights, "wb") as handle:
            handle.write(b"x")
        os.chmod(weights, 0o600)
        os.symlink(os.path.join(model, "missing"), os.path.join(model, "dangling"))
        done = run_module(main, {"npu_smi": fake_npu_smi(tmp_path, "exit 0"), "ascend_home": str(tmp_path / "none"),
                                 "model": model, "service_user": "nobody"})
        info = os.stat(weights)
        assert done.result["service"]["problems"][1:] == [
            "ascend_service_user cannot read the model's %s: %s is -rw------- (uid %d, gid %d); make it readable "
            "for the account (for CANN: install it with --install-for-all), or set ascend_service_user: root"
            % (weights, weights, info.st_uid, info.st_gid)]
    finally:
        shutil.rmtree(model)


def test_the_paths_a_phase_would_remove_are_looked_for_a_dangling_link_counting(run_module, tmp_path):
    (tmp_path / "unit").write_text("[Unit]\n")
    os.symlink(str(tmp_path / "gone"), str(tmp_path / "link"))
    paths = [str(tmp_path / name) for name in ("unit", "link", "missing")]
    done = run_module(main, {"npu_smi": "no-such-npu-smi", "present": paths})
    assert done.result["present"] == dict(zip(paths, [True, True, False]))
    # Detection only: nothing of what the roles write is read.
    assert not set(done.result) & {"paths", "units", "files", "texts", "hostname"}


def test_a_python_environments_versions_are_read_by_its_interpreter(run_module, tmp_path):
    env, python = _engine_env(tmp_path, {"ray": "2.52.1"})
    done = run_module(main, {"npu_smi": "no-such-npu-smi", "python": {"path": python, "distributions": ["ray", "vllm"]}})
    found = done.result["python"]
    assert found["path"] == python and found["error"] is None
    assert found["version"] == "%d.%d.%d" % sys.version_info[:3]
    assert found["distributions"] == {"ray": "2.52.1", "vllm": None}
    # No environment yet: no version, no error (ray_cluster creates it).
    missing = run_module(main, {"npu_smi": "no-such-npu-smi", "python": {"path": str(tmp_path / "none" / "bin" / "python")}})
    assert missing.result["python"]["version"] is None and missing.result["python"]["error"] is None
    assert run_module(main, {"npu_smi": "no-such-npu-smi"}).result["python"] is None
