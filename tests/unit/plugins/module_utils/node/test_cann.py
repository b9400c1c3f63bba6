# -*- coding: utf-8 -*-
"""CANN toolkit and NPU driver versions from the install files in hardware_samples/."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.ascend.inference.plugins.module_utils.node import cann

ROOT = "/usr/local/Ascend"


@pytest.mark.parametrize("name,version,inner,arch", [
    ("ascend_toolkit_install.info__cann-8.0.RC3__1.txt", "8.0.RC3", "V100R001C19SPC001B155", "aarch64"),
    ("ascend_toolkit_install.info__cann-8.3.RC2__1.txt", "8.3.RC2", "V100R001C23SPC002B210", "aarch64"),
    ("ascend_toolkit_install.info__cann-8.5.0_new-cann-layout_aarch64__1.txt", "8.5.0", "V100R001C25SPC001B212",
     "aarch64"),
    ("ascend_nnae_install.info__cann-8.0.RC3__1.txt", "8.0.RC3", "V100R001C19SPC001B137", "x86_64"),
])
def test_install_info_captures(sample, name, version, inner, arch):
    found = cann.toolkit(sample(name), "/x/ascend_toolkit_install.info", "cann", ROOT)
    assert (found["version"], found["innerversion"], found["arch"]) == (version, inner, arch)


def test_install_info_keeps_the_first_of_each_key(sample):
    info = cann.parse_key_values(sample("ascend_toolkit_install.info__cann-8.3.RC2__1.txt"))
    assert info["path"] == "/usr/local/Ascend/ascend-toolkit/8.3.RC2/aarch64-linux"
    assert info["compatible_version"].startswith("[V100R001C15],[V100R001C18]")
    assert cann.toolkit("arch=x86_64\n", "/x", "cann", ROOT) is None and cann.toolkit(None, "/x", "cann", ROOT) is None


@pytest.mark.parametrize("name,version,inner", [
    ("driver-version.info__23.0.7__1.txt", "23.0.7", "V100R001C15SPC012B220"),
    ("driver-version.info__24.1.rc1__1.txt", "24.1.rc1", "V100R001C15SPC006B220"),
    ("driver-version.info__24.1.rc2.2__1.txt", "24.1.rc2.2", "V100R001C18SPC001B233"),
])
def test_driver_version_captures(sample, name, version, inner):
    assert cann.driver(sample(name)) == {"version": version, "innerversion": inner}


def test_no_driver_file():
    assert cann.driver(None) is None and cann.driver("Innerversion=V1\n") is None


def toolkit(version, layout, path, real=None):
    return cann.toolkit("version=%s\n" % version, path, layout, ROOT, real)


def test_choose_one_layout():
    old = toolkit("8.3.RC2", "ascend-toolkit", ROOT + "/ascend-toolkit/latest/aarch64-linux/ascend_toolkit_install.info")
    chosen, notes, problems = cann.choose({"ascend-toolkit": [old]})
    assert chosen["version"] == "8.3.RC2" and chosen["set_env"] == ROOT + "/ascend-toolkit/set_env.sh"
    assert notes == [] and problems == []
    new = toolkit("8.5.0", "cann", ROOT + "/cann/aarch64-linux/ascend_toolkit_install.info",
                  ROOT + "/cann-8.5.0/aarch64-linux/ascend_toolkit_install.info")
    chosen, notes, problems = cann.choose({"cann": [new]})
    assert (chosen["layout"], chosen["set_env"]) == ("cann", ROOT + "/cann/set_env.sh")
    assert cann.set_env_candidates(chosen, ROOT) == [ROOT + "/cann/set_env.sh", ROOT + "/cann-8.5.0/set_env.sh"]
    flat = toolkit("8.5.0", "cann", ROOT + "/cann-8.5.0/ascend_toolkit_install.info")
    assert cann.set_env_candidates(flat, ROOT)[1] == ROOT + "/cann-8.5.0/set_env.sh"


def test_choose_both_layouts_prefers_cann_unless_told():
    old = toolkit("8.3.RC2", "ascend-toolkit", ROOT + "/ascend-toolkit/latest/aarch64-linux/ascend_toolkit_install.info")
    new = toolkit("8.5.0", "cann", ROOT + "/cann/aarch64-linux/ascend_toolkit_install.info",
                  ROOT + "/cann-8.5.0/aarch64-linux/ascend_toolkit_install.info")
    chosen, notes, problems = cann.choose({"ascend-toolkit": [old], "cann": [new]})
    assert chosen["version"] == "8.5.0" and problems == []
    assert notes == ["both CANN layouts are installed; using cann 8.5.0 (set preflight_cann_layout to choose)"]
    chosen, notes, problems = cann.choose({"ascend-toolkit": [old], "cann": [new]}, "ascend-toolkit")
    assert chosen["version"] == "8.3.RC2" and notes == []
    chosen, notes, problems = cann.choose({"ascend-toolkit": [old]}, "cann")
    assert chosen is None and problems == ["preflight_cann_layout is cann but no cann layout is installed "
                                           "(found: ascend-toolkit)"]


def test_ascend_toolkit_latest_into_a_cann_tree_is_the_compatibility_link():
    real = ROOT + "/cann-8.5.0/aarch64-linux/ascend_toolkit_install.info"
    link = toolkit("8.5.0", "ascend-toolkit", ROOT + "/ascend-toolkit/latest/aarch64-linux/ascend_toolkit_install.info",
                   real)
    new = toolkit("8.5.0", "cann", ROOT + "/cann/aarch64-linux/ascend_toolkit_install.info", real)
    chosen, notes, problems = cann.choose({"ascend-toolkit": [link], "cann": [new]})
    assert chosen["layout"] == "cann" and notes == [] and problems == []


def test_several_cann_trees_and_no_link_is_a_problem():
    trees = [toolkit(v, "cann", ROOT + "/cann-%s/aarch64-linux/ascend_toolkit_install.info" % v) for v in ("8.5.0", "9.0.1")]
    chosen, notes, problems = cann.choose({"cann": trees})
    assert chosen is None
    assert problems == ["several CANN versions are installed (8.5.0, 9.0.1) and none is selected by a cann link"]
    chosen, _notes, problems = cann.choose({"cann": trees[:1]})
    assert chosen["version"] == "8.5.0" and problems == []


def test_nothing_installed():
    assert cann.choose({}) == (None, [], [])
