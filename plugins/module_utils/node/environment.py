# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A node's environment file: what CANN's set_env.sh exports, pyACL on PYTHONPATH, the plan's variables."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# What a shell sets for itself; not CANN's.
SHELL_BOOKKEEPING = frozenset(["PWD", "OLDPWD", "SHLVL", "_"])


# set_env.sh sourced by a clean shell (its output dropped, rc 3 when it fails), then every variable NUL-separated;
# the script's path follows. The node_env role runs the same argv where the preflight's probe did not.
SOURCE_ARGV = ["env", "-i", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
               "bash", "-c", '. "$1" >/dev/null 2>&1 || exit 3; env -0', "set_env"]


def sourced_env(env0_output):
    """The variables of `env -0` (NUL-separated NAME=value entries) run by a clean shell that sourced
    set_env.sh, without the shell's own bookkeeping. A value may hold line breaks; NUL cannot occur."""
    found = {}
    for entry in env0_output.split("\x00"):
        if "=" in entry:
            name, value = entry.split("=", 1)
            if name not in SHELL_BOOKKEEPING:
                found[name] = value
    return found


def node_environment(cann_vars, pyacl_site_packages, plan_env):
    """CANN's variables, then pyACL's site-packages first on PYTHONPATH (where pyACL is installed),
    then the plan's variables over both (the plan holds the seeds' exports and ascend_extra_env)."""
    env = dict(cann_vars or {})
    if pyacl_site_packages:
        env["PYTHONPATH"] = pyacl_site_packages + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update(plan_env)
    return env
