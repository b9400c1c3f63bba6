# -*- coding: utf-8 -*-
"""The cann_packages module on this machine: stand-in packages that extract like makeself archives
(--noexec --extract=DIR), an Ascend home in a scratch directory, driver files from hardware_samples."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import platform

import pytest

from ansible_collections.ascend.inference.plugins.modules.cann_packages import main

ARCH = {"amd64": "x86_64", "arm64": "aarch64"}.get(platform.machine().lower(), platform.machine())
SAMPLES = os.path.join(os.path.dirname(__file__), "..", "module_utils", "node", "hardware_samples")


def sample(name):
    with open(os.path.join(SAMPLES, name)) as handle:
        return handle.read()


def package(directory, name, compatible):
    """A package whose --noexec --extract=DIR writes an install file (none when compatible is None)."""
    path = directory / name
    info = "" if compatible is None else "compatible_version=%s\\n" % compatible
    path.write_text('#!/bin/sh\nfor a in "$@"; do case "$a" in --extract=*) d=${a#--extract=};; esac; done\n'
                    'mkdir -p "$d/share" && printf "package_name=Ascend-cann-toolkit\\nversion=8.5.0\\n%s" '
                    '> "$d/share/ascend_toolkit_install.info"\n' % info)
    return str(path)


@pytest.fixture
def home(tmp_path):
    root = tmp_path / "Ascend"
    (root / "driver").mkdir(parents=True)
    (root / "driver" / "version.info").write_text(sample("driver-version.info__24.1.rc2.2__1.txt"))
    return root


def install_toolkit(root, version, compatible):
    tree = root / ("cann-%s" % version) / ("%s-linux" % ARCH)
    tree.mkdir(parents=True)
    (tree / "ascend_toolkit_install.info").write_text("version=%s\ncompatible_version=%s\n" % (version, compatible))
    (root / ("cann-%s" % version) / "set_env.sh").write_text("export X=1\n")
    if not (root / "cann").exists():
        os.symlink("cann-%s" % version, str(root / "cann"))


def run(run_module, tmp_path, root, paths, **extra):
    args = dict(packages=paths, ascend_home=str(root), work_dir=str(tmp_path / "work"))
    args.update(extra)
    done = run_module(main, args)
    assert not done.failed and done.result["changed"] is False
    return done.result


def test_a_fresh_node_installs_everything_after_reading_the_packages_list(run_module, tmp_path, home):
    paths = [package(tmp_path, "Ascend-cann-toolkit_8.5.0_linux-%s.run" % ARCH, "[V100R001C15],[V100R001C18]"),
             package(tmp_path, "Ascend-cann-nnal_8.5.0_linux-%s.run" % ARCH, None)]
    result = run(run_module, tmp_path, home, paths)
    assert result["problems"] == [] and result["install"] is True
    assert [(p["kind"], p["action"]) for p in result["packages"]] == [("toolkit", "install"), ("nnal", "install")]
    assert result["driver_check"]["ok"] is True
    assert result["driver_check"]["source"] == "share/ascend_toolkit_install.info in " + os.path.basename(paths[0])
    assert result["layout"] == "cann" and result["set_env"] == str(home / "cann" / "set_env.sh")
    assert result["in_use"] is None and result["driver"]["version"] == "24.1.rc2.2"
    assert os.listdir(str(tmp_path / "work")) == []  # the scratch extraction is gone


def test_check_mode_creates_no_work_directory(run_module, tmp_path, home):
    paths = [package(tmp_path, "Ascend-cann-toolkit_8.5.0_linux-%s.run" % ARCH, "[V100R001C18]")]
    result = run(run_module, tmp_path, home, paths, _ansible_check_mode=True)
    assert result["problems"] == [] and result["driver_check"]["ok"] is True
    assert not (tmp_path / "work").exists()


def test_the_toolkits_own_install_file_wins(run_module, tmp_path, home):
    # Two files with a list: another component's version.info sorts first, the toolkit's is used.
    path = tmp_path / ("Ascend-cann-toolkit_8.5.0_linux-%s.run" % ARCH)
    path.write_text('#!/bin/sh\nfor a in "$@"; do case "$a" in --extract=*) d=${a#--extract=};; esac; done\n'
                    'mkdir -p "$d/a" "$d/z" && echo "compatible_version=[V100R001C23]" > "$d/a/version.info" && '
                    'printf "package_name=Ascend-cann-toolkit\\ncompatible_version=[V100R001C18]\\n" '
                    '> "$d/z/ascend_toolkit_install.info"\n')
    result = run(run_module, tmp_path, home, [str(path)])
    assert result["problems"] == [] and result["driver_check"]["source"] == "z/ascend_toolkit_install.info in " + path.name


def test_a_driver_the_package_does_not_list_is_a_problem(run_module, tmp_path, home):
    paths = [package(tmp_path, "Ascend-cann-toolkit_8.5.0_linux-%s.run" % ARCH, "[V100R001C23]")]
    result = run(run_module, tmp_path, home, paths)
    assert result["problems"] == [
        "the NPU driver 24.1.rc2.2 (release V100R001C18) is not among the releases CANN 8.5.0 supports: "
        "[V100R001C23] (share/ascend_toolkit_install.info in %s)" % os.path.basename(paths[0])]
    # Waived: reported, not a problem.
    result = run(run_module, tmp_path, home, paths, driver_check=False)
    assert result["problems"] == [] and result["driver_check"]["ok"] is False


def test_a_package_without_a_list_and_not_in_the_table(run_module, tmp_path, home):
    paths = [package(tmp_path, "Ascend-cann-toolkit_8.5.0_linux-%s.run" % ARCH, None)]
    result = run(run_module, tmp_path, home, paths)
    assert len(result["problems"]) == 1
    assert result["problems"][0].startswith("Ascend-cann-toolkit_8.5.0_linux-%s.run holds no compatible_version "
                                            "list; CANN 8.5.0 carries no compatible_version list" % ARCH)


def test_installed_version_needs_nothing_and_is_checked_from_its_install_file(run_module, tmp_path, home):
    install_toolkit(home, "8.5.0", "[V100R001C18]")
    # The package would fail to extract: it must not be opened when its version is installed.
    broken = tmp_path / ("Ascend-cann-toolkit_8.5.0_linux-%s.run" % ARCH)
    broken.write_text("exit 7\n")
    result = run(run_module, tmp_path, home, [str(broken)])
    assert result["problems"] == [] and result["install"] is False
    assert result["packages"][0]["action"] == "none" and result["in_use"]["version"] == "8.5.0"
    assert result["driver_check"]["source"] == str(home / "cann" / ("%s-linux" % ARCH) / "ascend_toolkit_install.info")


def test_another_version_in_use_is_refused_unless_asked(run_module, tmp_path, home):
    install_toolkit(home, "8.5.0", "[V100R001C18]")
    paths = [package(tmp_path, "Ascend-cann-toolkit_9.0.1_linux-%s.run" % ARCH, "[V100R001C18]")]
    result = run(run_module, tmp_path, home, paths)
    assert result["problems"] == ["CANN 8.5.0 is installed and in use, the packages are 9.0.1; "
                                  "set cann_allow_version_change: true to change the version"]
    result = run(run_module, tmp_path, home, paths, allow_version_change=True)
    assert result["problems"] == [] and result["packages"][0]["action"] == "install"


def test_a_package_that_does_not_extract(run_module, tmp_path, home):
    broken = tmp_path / ("Ascend-cann-toolkit_8.5.0_linux-%s.run" % ARCH)
    broken.write_text("echo 'Verifying archive integrity... Error in MD5 checksums' >&2; exit 1\n")
    # 8.0.RC3 is in the table and the driver would pass it: a broken package must still stop the node,
    # whatever cann_driver_check says.
    broken = broken.rename(tmp_path / ("Ascend-cann-toolkit_8.0.RC3_linux-%s.run" % ARCH))
    for driver_check in (True, False):
        result = run(run_module, tmp_path, home, [str(broken)], driver_check=driver_check)
        assert result["problems"] == ["cannot extract %s: Verifying archive integrity... Error in MD5 checksums"
                                      % broken.name]


def test_missing_packages_are_problems_unless_still_to_be_copied(run_module, tmp_path, home):
    path = str(tmp_path / ("Ascend-cann-toolkit_8.5.0_linux-%s.run" % ARCH))
    nnal = str(tmp_path / ("Ascend-cann-nnal_8.5.0_linux-%s.run" % ARCH))
    assert run(run_module, tmp_path, home, [path])["problems"] == ["%s is not on the node" % path]
    # Check mode: the toolkit would be copied first; the nnal package is expected on the node (remote).
    # A node without a driver is refused even then.
    result = run(run_module, tmp_path, home, [path, nnal], pending=[path])
    assert result["problems"] == ["%s is not on the node" % nnal]
    result = run(run_module, tmp_path, home, [path], pending=[path])
    assert result["problems"] == [] and result["install"] is True
    assert result["driver_check"]["ok"] is None
    os.remove(str(home / "driver" / "version.info"))
    result = run(run_module, tmp_path, home, [path], pending=[path])
    assert result["problems"] == ["no NPU driver version (%s is missing or has no Version=)"
                                  % (home / "driver" / "version.info")]


def test_wrong_names_stop_before_anything_is_read(run_module, tmp_path, home):
    result = run(run_module, tmp_path, home, [str(tmp_path / ("Ascend-cann-nnal_8.5.0_linux-%s.run" % ARCH))])
    assert result["problems"][0] == "exactly one toolkit package is needed, found 0"
    # The version is reported (for the message); nothing is planned.
    assert result["version"] == "8.5.0" and result["packages"] == [] and result["install"] is False


def test_kernels_for_another_npu_family_are_refused(run_module, tmp_path, home):
    # An Atlas 300I Duo: hardware_samples/npu-smi-info-m__310P_atlas300I-duo__1.txt (its chip names redacted
    # to "Ascend xxx") and npu-smi-info__310P3_300I-Duo-x4_24.1.0.1__1.txt, as the preflight reads both.
    chip_map = os.path.join(SAMPLES, "npu-smi-info-m__310P_atlas300I-duo__1.txt")
    summary = os.path.join(SAMPLES, "npu-smi-info__310P3_300I-Duo-x4_24.1.0.1__1.txt")
    npu_smi = tmp_path / "npu-smi"
    npu_smi.write_text('#!/bin/sh\ncase "$2" in -m) cat "%s";; *) cat "%s";; esac\n' % (chip_map, summary))
    npu_smi.chmod(0o755)
    paths = [package(tmp_path, "Ascend-cann-toolkit_8.5.0_linux-%s.run" % ARCH, "[V100R001C18]"),
             package(tmp_path, "Ascend-cann-kernels-910b_8.5.0_linux-%s.run" % ARCH, None)]
    result = run(run_module, tmp_path, home, paths, npu_smi=str(npu_smi))
    assert result["npu_family"] == "310P"
    assert result["problems"] == ["Ascend-cann-kernels-910b_8.5.0_linux-%s.run is for 910B NPUs, this node's are 310P"
                                  % ARCH]
    # Where npu-smi does not answer, the family is not checked.
    result = run(run_module, tmp_path, home, paths, npu_smi=str(tmp_path / "no-npu-smi"))
    assert result["npu_family"] is None and result["problems"] == []
