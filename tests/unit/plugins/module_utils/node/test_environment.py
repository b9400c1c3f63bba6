"""node.env's variables: what set_env.sh exports (read as the node_env role reads it), pyACL, the plan."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import subprocess

from ansible_collections.ascend.inference.plugins.module_utils.node import environment

# The simulated toolkit's set_env.sh: the export lines of
# hardware-samples/set_env.sh__ascend-toolkit-layout_cann-8.0.0__1.txt, as captured.
SET_ENV = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "sim", "doubles", "set_env.ascend-toolkit.sh")


def test_what_a_clean_shell_exports_after_sourcing_set_env():
    # The command of roles/node_env/tasks/cann.yml.
    out = subprocess.run(["env", "-i", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "bash", "-c",
                          '. "$1" >/dev/null 2>&1 || exit 3; env -0', "set_env", SET_ENV],
                         capture_output=True, text=True, check=True).stdout
    found = environment.sourced_env(out)
    assert found["ASCEND_TOOLKIT_HOME"] == "/usr/local/Ascend/ascend-toolkit/latest"
    assert found["ASCEND_OPP_PATH"] == "/usr/local/Ascend/ascend-toolkit/latest/opp"
    assert found["LD_LIBRARY_PATH"].startswith("/usr/local/Ascend/ascend-toolkit/latest/tools/aml/lib64:")
    assert found["PYTHONPATH"].startswith("/usr/local/Ascend/ascend-toolkit/latest/python/site-packages:")
    assert not set(found) & environment.SHELL_BOOKKEEPING


def test_a_value_with_a_line_break_and_an_equals_sign_survives():
    assert environment.sourced_env("A=1\x00B=x=y\nz\x00PWD=/root\x00_=/usr/bin/env\x00") == {"A": "1", "B": "x=y\nz"}


def test_pyacl_first_on_pythonpath_and_the_plan_over_everything():
    cann = {"PYTHONPATH": "/cann/site-packages", "ASCEND_OPP_PATH": "/cann/opp", "HCCL_IF_IP": "from-cann"}
    env = environment.node_environment(cann, "/pyacl/site-packages", {"HCCL_IF_IP": "192.0.2.11"})
    assert env == {"PYTHONPATH": "/pyacl/site-packages:/cann/site-packages", "ASCEND_OPP_PATH": "/cann/opp",
                   "HCCL_IF_IP": "192.0.2.11"}
    assert environment.node_environment({}, "/pyacl", {})["PYTHONPATH"] == "/pyacl"
    assert "PYTHONPATH" not in environment.node_environment({}, None, {})
    assert cann["PYTHONPATH"] == "/cann/site-packages"  # the input is left alone
