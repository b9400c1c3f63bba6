# -*- coding: utf-8 -*-
"""Which CANN packages to install and whether the NPU driver may run them, on the captured install files."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.ascend.inference.plugins.module_utils.node import cann
from ansible_collections.ascend.inference.plugins.module_utils.node import cann_install

ROOT = "/usr/local/Ascend"


def listed(sample, name):
    return cann.parse_key_values(sample(name))["compatible_version"]


def driver(sample, version):
    return cann.driver(sample("driver-version.info__%s__1.txt" % version))


@pytest.mark.parametrize("name,kind,version,arch,chip", [
    ("Ascend-cann-toolkit_8.5.0_linux-aarch64.run", "toolkit", "8.5.0", "aarch64", None),
    ("Ascend-cann-toolkit_8.1.RC1_linux-x86_64.run", "toolkit", "8.1.RC1", "x86_64", None),
    ("Ascend-cann-kernels-910b_8.1.RC1_linux-aarch64.run", "kernels", "8.1.RC1", "aarch64", "910b"),
    # Before 8.0.RC3 the kernels package named no architecture (the install guide's package table).
    ("Ascend-cann-kernels-310p_8.0.RC2_linux.run", "kernels", "8.0.RC2", None, "310p"),
    ("Ascend-cann-nnal_8.1.RC1_linux-aarch64.run", "nnal", "8.1.RC1", "aarch64", None),
    ("Atlas-A3-cann-kernels_8.3.RC2_linux-aarch64.run", "kernels", "8.3.RC2", "aarch64", "A3"),
    # From 8.5 the operators come as <chip>-ops.
    ("Ascend-cann-910b-ops_8.5.0_linux-aarch64.run", "kernels", "8.5.0", "aarch64", "910b"),
])
def test_package_names(name, kind, version, arch, chip):
    found = cann_install.parse_package("/srv/" + name)
    assert (found["kind"], found["version"], found["arch"], found["chip"]) == (kind, version, arch, chip)
    assert found["path"] == "/srv/" + name and found["name"] == name


def test_not_a_package_name():
    assert cann_install.parse_package("Ascend-cann-nnrt_8.5.0_linux-aarch64.run") is None
    assert cann_install.parse_package("toolkit.run") is None


def test_packages_install_toolkit_first():
    packages, problems = cann_install.package_problems(
        ["/p/Ascend-cann-nnal_8.5.0_linux-aarch64.run", "/p/Ascend-cann-kernels-910b_8.5.0_linux-aarch64.run",
         "/p/Ascend-cann-toolkit_8.5.0_linux-aarch64.run"], "aarch64")
    assert problems == []
    assert [p["kind"] for p in packages] == ["toolkit", "kernels", "nnal"]


def test_package_problems_name_each_mistake():
    _packages, problems = cann_install.package_problems(
        ["/p/Ascend-cann-kernels-910b_8.3.RC2_linux-aarch64.run", "/p/Ascend-cann-nnal_8.5.0_linux-x86_64.run",
         "/p/readme.txt"], "aarch64")
    assert problems == [
        "readme.txt is not a CANN package name (Ascend-cann-toolkit_<version>_linux-<arch>.run, "
        "Ascend-cann-kernels-<chip>_<version>_linux-<arch>.run or Ascend-cann-nnal_<version>_linux-<arch>.run)",
        "exactly one toolkit package is needed, found 0",
        "the packages are of different CANN versions (Ascend-cann-kernels-910b_8.3.RC2_linux-aarch64.run 8.3.RC2, "
        "Ascend-cann-nnal_8.5.0_linux-x86_64.run 8.5.0); install one version",
        "Ascend-cann-nnal_8.5.0_linux-x86_64.run is built for x86_64, this node is aarch64",
    ]


def test_two_toolkits_and_two_nnal_are_refused():
    _packages, problems = cann_install.package_problems(
        ["/a/Ascend-cann-toolkit_8.5.0_linux-aarch64.run", "/b/Ascend-cann-toolkit_8.5.0_linux-aarch64.run",
         "/a/Ascend-cann-nnal_8.5.0_linux-aarch64.run", "/b/Ascend-cann-nnal_8.5.0_linux-aarch64.run"], "aarch64")
    assert problems == ["exactly one toolkit package is needed, found 2",
                        "more than one nnal package: Ascend-cann-nnal_8.5.0_linux-aarch64.run, "
                        "Ascend-cann-nnal_8.5.0_linux-aarch64.run"]


@pytest.mark.parametrize("version,layout,home", [
    ("8.0.RC3", "ascend-toolkit", ROOT + "/ascend-toolkit/8.0.RC3"),
    ("8.3.RC2", "ascend-toolkit", ROOT + "/ascend-toolkit/8.3.RC2"),
    ("8.5.0", "cann", ROOT + "/cann-8.5.0"),
    ("9.0.1", "cann", ROOT + "/cann-9.0.1"),
    ("7.0.0", "ascend-toolkit", ROOT + "/ascend-toolkit/7.0.0"),
])
def test_layout_by_version(version, layout, home):
    assert cann_install.layout_for(version) == layout
    assert cann_install.home_for(ROOT, version) == home
    assert cann_install.set_env_for(ROOT, version) == ROOT + ("/cann/set_env.sh" if layout == "cann"
                                                              else "/ascend-toolkit/set_env.sh")


def test_compatible_lists_of_the_captures(sample):
    # A bracket of two releases is a range; one release stands alone.
    assert cann_install.parse_compatible(listed(sample, "ascend_toolkit_install.info__cann-8.0.RC3__1.txt")) == [
        ((100, 1, 13), (100, 1, 19)), ((100, 1, 30), (100, 1, 30))]
    assert cann_install.parse_compatible(listed(sample, "ascend_toolkit_install.info__cann-8.3.RC2__1.txt")) == [
        ((100, 1, c), (100, 1, c)) for c in (15, 18, 19, 20, 21, 23)]
    assert cann_install.parse_compatible("") == [] and cann_install.parse_compatible(None) == []
    assert cann_install.parse_compatible(listed(sample, "ascend_toolkit_install.info__cann-8.5.0_new-cann-layout_aarch64__1.txt")) \
        == [((100, 1, c), (100, 1, c)) for c in (15, 18, 19, 20, 21, 23)]
    # One unreadable bracket makes the list unreadable (a prefix match would read C13 alone).
    assert cann_install.parse_compatible("[garbage],[V100R001C15]") == []
    assert cann_install.parse_compatible("[V100R001C13-V100R001C19]") == []


def test_an_unreadable_list_is_refused_not_sent_to_the_table(sample):
    ok, _source, message = cann_install.judge_driver(driver(sample, "24.1.rc2.2"), "[V100R001C13-V100R001C19]",
                                                     "8.0.RC3", "x.info")
    assert ok is False
    assert message == "CANN 8.0.RC3's compatible_version cannot be read: [V100R001C13-V100R001C19] (x.info)"


def test_release_of_the_driver_captures(sample):
    assert cann_install.release(driver(sample, "24.1.rc2.2")["innerversion"]) == (100, 1, 18)
    assert cann_install.release(driver(sample, "23.0.7")["innerversion"]) == (100, 1, 15)
    assert cann_install.release("24.1.rc1") is None


@pytest.mark.parametrize("toolkit,driver_version", [
    # 8.3.RC2 lists C15 and C18: both captured drivers' releases.
    ("ascend_toolkit_install.info__cann-8.3.RC2__1.txt", "24.1.rc2.2"),
    ("ascend_toolkit_install.info__cann-8.3.RC2__1.txt", "23.0.7"),
    # 8.0.RC3's range C13..C19 holds C15 and C18.
    ("ascend_toolkit_install.info__cann-8.0.RC3__1.txt", "24.1.rc1"),
    ("ascend_toolkit_install.info__cann-8.5.0_new-cann-layout_aarch64__1.txt", "24.1.rc2.2"),
])
def test_listed_drivers_are_accepted(sample, toolkit, driver_version):
    info = cann.parse_key_values(sample(toolkit))
    ok, source, message = cann_install.judge_driver(driver(sample, driver_version), info["compatible_version"],
                                                    info["version"], "install.info")
    assert ok is True and source == "install.info"
    assert message.startswith("the NPU driver %s (release V100R001C" % driver_version)


def test_a_driver_release_not_listed_is_refused_naming_both_versions(sample):
    ok, source, message = cann_install.judge_driver(driver(sample, "24.1.rc2.2"), "[V100R001C23]", "8.5.0",
                                                    "ascend_toolkit_install.info in Ascend-cann-toolkit_8.5.0.run")
    assert ok is False
    assert message == ("the NPU driver 24.1.rc2.2 (release V100R001C18) is not among the releases CANN 8.5.0 "
                       "supports: [V100R001C23] (ascend_toolkit_install.info in Ascend-cann-toolkit_8.5.0.run)")


def test_no_driver_is_refused():
    ok, source, message = cann_install.judge_driver(None, "[V100R001C18]", "8.5.0", "x")
    assert (ok, source) == (False, "driver") and "driver/version.info" in message


def test_a_driver_without_a_release_cannot_be_matched():
    ok, _source, message = cann_install.judge_driver({"version": "24.1.0", "innerversion": None}, "[V100R001C18]",
                                                     "8.5.0", "x")
    assert ok is False and "has no release in its Innerversion" in message


def test_without_a_list_the_table_decides(sample):
    # 8.0.RC3 was published with driver 24.1.rc2: 24.1.rc2.2 is not older, 24.1.rc1 and 23.0.7 are.
    assert cann_install.judge_driver(driver(sample, "24.1.rc2.2"), None, "8.0.RC3", "no list")[:2] == (True, "table")
    ok, source, message = cann_install.judge_driver(driver(sample, "24.1.rc1"), None, "8.0.RC3", "no list")
    assert (ok, source) == (False, "table")
    assert "published with driver 24.1.rc2 and this node's driver 24.1.rc1 is older" in message
    ok, _source, message = cann_install.judge_driver(driver(sample, "24.1.rc2.2"), None, "9.0.1", "no list")
    assert ok is False and "cann_driver_check: false" in message


def test_driver_version_order():
    ordered = ["23.0.3", "23.0.7", "24.1.rc1", "24.1.rc2", "24.1.rc2.2", "24.1.0", "24.1.1", "25.0.rc1", "25.0.rc1.1"]
    assert sorted(ordered, key=cann_install.driver_version_key) == ordered


def test_nnal_version_file(sample):
    assert cann_install.parse_nnal_version(sample("nnal-atb-version.info__8.2.RC2__1.txt")) == "8.2.RC2"
    assert cann_install.parse_nnal_version("") is None and cann_install.parse_nnal_version(None) is None


def packages(*names):
    return cann_install.package_problems(["/p/" + n for n in names], "aarch64")[0]


def test_actions_install_only_what_is_missing():
    wanted = packages("Ascend-cann-toolkit_8.5.0_linux-aarch64.run", "Ascend-cann-nnal_8.5.0_linux-aarch64.run")
    planned, problems = cann_install.actions(wanted, {"version": "8.5.0"}, {"toolkit": True, "nnal": False}, False)
    assert problems == []
    expected = [("toolkit", "none", "--full"), ("nnal", "install", "--install")]
    assert [(p["kind"], p["action"], p["flag"]) for p in planned] == expected


def test_another_version_in_use_needs_a_request():
    wanted = packages("Ascend-cann-toolkit_8.5.0_linux-aarch64.run")
    _planned, problems = cann_install.actions(wanted, {"version": "8.3.RC2"}, {}, False)
    assert problems == ["CANN 8.3.RC2 is installed and in use, the packages are 8.5.0; "
                        "set cann_allow_version_change: true to change the version"]
    planned, problems = cann_install.actions(wanted, {"version": "8.3.RC2"}, {}, True)
    assert problems == [] and planned[0]["action"] == "install"
    # A fresh node: nothing in use, nothing to ask.
    assert cann_install.actions(wanted, None, {}, False)[1] == []


def test_going_back_across_layouts_is_refused():
    wanted = packages("Ascend-cann-toolkit_8.3.RC2_linux-aarch64.run")
    _planned, problems = cann_install.actions(wanted, {"version": "8.5.0", "layout": "cann"}, {}, True)
    assert problems == ["CANN 8.5.0 uses the cann layout and 8.3.RC2 installs as ascend-toolkit, which the cann layout "
                        "would hide; going back across layouts is not supported (remove the cann link and cann-8.5.0 "
                        "first)"]
    # Forward (8.3 -> 8.5) is allowed: the cann layout is the one used.
    forward = packages("Ascend-cann-toolkit_8.5.0_linux-aarch64.run")
    assert cann_install.actions(forward, {"version": "8.3.RC2", "layout": "ascend-toolkit"}, {}, True)[1] == []


def test_stage_plan_gives_node_paths_and_names_bad_entries():
    staged, problems = cann_install.stage_plan([
        {"src": "files/Ascend-cann-toolkit_8.5.0_linux-aarch64.run"},
        {"remote": "/mnt/cann/Ascend-cann-nnal_8.5.0_linux-aarch64.run", "url": ""},
        {"url": "https://example.invalid/Ascend-cann-kernels-910b_8.5.0_linux-aarch64.run?x=1", "checksum": "sha256:ab"},
        {"src": "a.run", "remote": "/b.run"},
        {"url": "https://example.invalid/Ascend-cann-nnal_8.5.0_linux-aarch64.run"},
        {"remote": "/mnt/notes.txt"},
        None,
    ], "/var/cache/c")
    assert [(s["source"], s["node_path"]) for s in staged] == [
        ("src", "/var/cache/c/Ascend-cann-toolkit_8.5.0_linux-aarch64.run"),
        ("remote", "/mnt/cann/Ascend-cann-nnal_8.5.0_linux-aarch64.run"),
        ("url", "/var/cache/c/Ascend-cann-kernels-910b_8.5.0_linux-aarch64.run")]
    assert problems == [
        "cann_packages[3] needs exactly one of src (on the controller), remote (on the node) or url, found src, remote",
        "cann_packages[4]: a url needs a checksum (<algorithm>:<hex>)",
        "cann_packages[5]: notes.txt is not a CANN package name",
        "cann_packages[6] needs exactly one of src (on the controller), remote (on the node) or url, found none",
    ]


def test_kernels_for_another_npu_family():
    kernels = cann_install.parse_package("Ascend-cann-kernels-910b_8.5.0_linux-aarch64.run")
    assert cann_install.kernels_problem(kernels, "310P") == (
        "Ascend-cann-kernels-910b_8.5.0_linux-aarch64.run is for 910B NPUs, this node's are 310P")
    assert cann_install.kernels_problem(kernels, "910B") is None
    assert cann_install.kernels_problem(kernels, None) is None and cann_install.kernels_problem(kernels, "unknown") is None
    a3 = cann_install.parse_package("Atlas-A3-cann-kernels_8.3.RC2_linux-aarch64.run")
    assert cann_install.kernels_problem(a3, "910B") == (
        "Atlas-A3-cann-kernels_8.3.RC2_linux-aarch64.run is for 910_93 NPUs, this node's are 910B")
    assert cann_install.kernels_problem(a3, "910_93") is None
    # A chip no source names is not judged.
    other = cann_install.parse_package("Ascend-cann-kernels-910c_8.3.RC2_linux-aarch64.run")
    assert cann_install.kernels_problem(other, "910B") is None
