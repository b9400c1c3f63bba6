# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The programs a phase needs on the node: a distribution package installed where its program is not found (the
program is looked up anyway, so a node that has it costs no package-manager round trip), and what a program prints
of itself (``haproxy -vv``) checked against what the phase needs before anything is written."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

from ansible.module_utils.compat.version import LooseVersion

# Where system programs live besides PATH (a become method such as su may leave the sbin directories off it).
SYSTEM_DIRECTORIES = ["/usr/sbin", "/sbin", "/usr/local/sbin"]
# The package managers tried, in order: the first whose program is found installs.
MANAGERS = (
    # Waits for the dpkg lock (unattended-upgrades on a fresh Ubuntu node holds it) as the apt module does, and keeps
    # a configuration file changed on the node without asking.
    ("apt-get", ["apt-get", "install", "--yes", "--quiet", "--no-install-recommends", "-o", "DPkg::Lock::Timeout=120",
                 "-o", "Dpkg::Options::=--force-confdef", "-o", "Dpkg::Options::=--force-confold"]),
    ("dnf", ["dnf", "install", "--assumeyes", "--quiet"]),
    ("yum", ["yum", "install", "--assumeyes", "--quiet"]),
    ("zypper", ["zypper", "--non-interactive", "--quiet", "install"]),
)
# debconf asks nothing.
APT_ENVIRONMENT = {"DEBIAN_FRONTEND": "noninteractive"}


class Refused(Exception):
    """A program the phase cannot use, said in one message."""


def found(module, program):
    """The path of PROGRAM (a name or an absolute path), or None."""
    if os.path.isabs(program):
        return program if os.access(program, os.X_OK) else None
    return module.get_bin_path(program, opt_dirs=SYSTEM_DIRECTORIES)


def missing(module, packages):
    """The names of PACKAGES ({name, program}) whose program is not found here, each once, in order."""
    names = []
    for package in packages:
        if package["name"] not in names and not found(module, package["program"]):
            names.append(package["name"])
    return names


def install(module, names, node):
    """Install NAMES with the first package manager found; refuse naming the packages when none is or it fails."""
    for manager, argv in MANAGERS:
        path = module.get_bin_path(manager, opt_dirs=SYSTEM_DIRECTORIES)
        if not path:
            continue
        environment = APT_ENVIRONMENT if manager == "apt-get" else None
        rc, out, err = module.run_command([path] + argv[1:] + list(names), environ_update=environment)
        if rc != 0:
            raise Refused("%s: %s install %s failed (rc %d): %s" % (node, manager, " ".join(names), rc,
                                                                    (err or out).strip()[-1500:]))
        return manager
    raise Refused("%s: no package manager (%s) to install %s: install %s yourself" % (
        node, ", ".join(manager for manager, argv in MANAGERS), " ".join(names), " ".join(names)))


def judged(requirement, rc, out, err):
    """What is wrong with what REQUIREMENT's program printed (rc, out, err), or None: rc 0, a version matched by
    version_pattern (its first group) at least minimum, every word of contains printed."""
    said = (out or "") + (err or "")
    if rc != 0:
        return "exit %d: %s" % (rc, said.strip()[-500:] or "(nothing printed)")
    pattern = requirement.get("version_pattern")
    if pattern:
        match = re.search(pattern, said)
        if not match:
            return "no version in what it printed: %s" % (said.strip().splitlines() or ["(nothing)"])[0]
        if LooseVersion(match.group(1)) < LooseVersion(requirement["minimum"]):
            return "version %s, below %s" % (match.group(1), requirement["minimum"])
    absent = [word for word in requirement.get("contains") or [] if word not in said]
    if absent:
        return "%s not in what it printed" % ", ".join(absent)
    return None


def check(module, requirement, node):
    """Run REQUIREMENT's argv and refuse with its fix when what it printed does not do."""
    argv = list(requirement["argv"])
    program = found(module, argv[0])
    if not program:
        raise Refused("%s: %s is not installed: %s" % (node, argv[0], requirement["fix"]))
    rc, out, err = module.run_command([program] + argv[1:])
    problem = judged(requirement, rc, out, err)
    if problem:
        first = ((out or err or "").strip().splitlines() or [""])[0]
        raise Refused("%s: %s printed %r (%s): %s" % (node, " ".join(argv), first, problem, requirement["fix"]))
    return ((out or err or "").strip().splitlines() or [""])[0]
