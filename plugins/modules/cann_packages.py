#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: cann_packages
short_description: Decide which CANN packages a node needs and whether its NPU driver may run them
version_added: 0.1.0
description:
  - Reads the CANN packages' file names (toolkit, kernels, nnal; one version, the node's architecture),
    the CANN toolkit the node uses, the kernels and nnal trees of that version and the NPU driver's
    C(driver/version.info), and returns, per package, whether it must be installed.
  - "Checks the driver before anything is installed: the NPU driver's release (C(Innerversion=V100R001C18...))
    must be in the toolkit's C(compatible_version) list, read from the installed toolkit's
    C(ascend_toolkit_install.info) when that version is installed, else from the package (extracted with
    C(--noexec --extract) into a temporary directory, searched for an install or version file that holds
    the list). A package without such a list falls back to a table of the driver each CANN release was
    published with (docs/cann.md gives the table and its source)."
  - "A different CANN version in use is a problem unless O(allow_version_change) is set: upgrades and
    downgrades happen on request only."
  - Reads only; the problems are returned, never raised, so the caller can name every node's at once.
author:
  - ascend.inference contributors (@ascend-inference)
attributes:
  check_mode:
    description: Reads the same in check mode; the module changes nothing there (its scratch extraction is removed).
    support: full
  diff_mode:
    description: There is nothing to diff.
    support: none
options:
  packages:
    description: The packages' paths on the node.
    type: list
    elements: path
    required: true
  ascend_home:
    description: The Ascend root the packages install into (their C(--install-path)).
    type: path
    default: /usr/local/Ascend
  work_dir:
    description:
      - Where the package's files are extracted to read its compatibility list (a scratch directory, removed
        afterwards); in check mode, where it does not exist yet, the system's temporary directory.
    type: path
    default: /var/cache/ascend-inference/cann
  allow_version_change:
    description: Install the packages' version even when another CANN version is in use.
    type: bool
    default: false
  driver_check:
    description: Check the NPU driver against the toolkit's list; V(false) reports the result without refusing.
    type: bool
    default: true
  npu_smi:
    description:
      - The npu-smi that names the node's NPUs (C(npu-smi info -m)); a kernels package for another NPU family
        (V(910b) on Atlas A2, V(310p) on Atlas 300I) is a problem. Where npu-smi does not answer, that is not checked.
    type: str
    default: npu-smi
  pending:
    description:
      - Packages still to be copied or downloaded (check mode, where nothing is copied). One of them that is not
        on the node yet is to be installed, its own list unread; any other package not on the node is a problem.
    type: list
    elements: path
    default: []
"""

EXAMPLES = r"""
- name: Decide what to install
  ascend.inference.cann_packages:
    packages:
      - /var/cache/ascend-inference/cann/Ascend-cann-toolkit_8.5.0_linux-{{ ansible_facts.architecture }}.run
      - /var/cache/ascend-inference/cann/Ascend-cann-nnal_8.5.0_linux-{{ ansible_facts.architecture }}.run
  register: cann_plan
"""

RETURN = r"""
version:
  description: The packages' CANN version (null when they name none or several).
  returned: always
  type: str
  sample: 8.5.0
layout:
  description: The layout that version installs as (V(ascend-toolkit) up to 8.3, V(cann) from 8.5).
  returned: always
  type: str
set_env:
  description: The set_env.sh of that layout under O(ascend_home).
  returned: always
  type: str
  sample: /usr/local/Ascend/cann/set_env.sh
in_use:
  description: The toolkit the node uses now (C(version), C(layout), C(install_info), C(set_env)), or null.
  returned: always
  type: dict
npu_family:
  description: The node's NPU family as npu-smi names it (read only for a kernels package), or null.
  returned: always
  type: str
  sample: 910B
driver:
  description: The NPU driver (C(version), C(innerversion)), or null.
  returned: always
  type: dict
  sample: {version: 24.1.rc2.2, innerversion: V100R001C18SPC001B233}
driver_check:
  description: C(ok), C(source) (the file the list came from, or V(table)) and C(message).
  returned: always
  type: dict
packages:
  description: The packages in install order, each with C(path), C(name), C(kind), C(version), C(arch), C(chip),
    C(action) (V(install) or V(none)) and C(flag) (the installer's mode option).
  returned: always
  type: list
  elements: dict
install:
  description: Whether any package is to be installed.
  returned: always
  type: bool
problems:
  description: What stops the install on this node (wrong names, a version change not asked for, the driver).
  returned: always
  type: list
  elements: str
"""

import os
import platform
import shutil
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ascend.inference.plugins.module_utils.node import cann
from ansible_collections.ascend.inference.plugins.module_utils.node import cann_install
from ansible_collections.ascend.inference.plugins.module_utils.node import readers
from ansible_collections.ascend.inference.plugins.module_utils.node import npu

ARCHES = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}
INFO_NAMES = ("ascend_toolkit_install.info", "version.info")


def _package_list(module, package):
    """(compatible_version text or None, where it came from, extraction problem or None) from the package's files.

    Prefers the toolkit's own install file (package_name=Ascend-cann-toolkit), then any install or version file."""
    # A scratch directory in the work directory (the package's disk), else, in check mode, in the system's.
    work_dir = module.params["work_dir"]
    if not os.path.isdir(work_dir) and not module.check_mode:
        os.makedirs(work_dir, mode=0o700)
    scratch = tempfile.mkdtemp(prefix="cann-inspect-", dir=work_dir if os.path.isdir(work_dir) else None)
    try:
        rc, _out, err = readers.run(module, ["bash", package["path"], "--noexec", "--extract=%s" % scratch, "--quiet"])
        if rc != 0:
            return None, None, "cannot extract %s: %s" % (package["name"], (err or "").strip() or "rc %d" % rc)
        found = []
        for top, dirs, files in os.walk(scratch):
            dirs.sort()
            for name in sorted(files):
                if name in INFO_NAMES or name.endswith("install.info"):
                    info = cann.parse_key_values(readers.read(os.path.join(top, name)))
                    if info.get("compatible_version"):
                        own = info.get("package_name") == "Ascend-cann-toolkit"
                        where = "%s in %s" % (os.path.relpath(os.path.join(top, name), scratch), package["name"])
                        found.append((not own, where, info["compatible_version"]))
        if found:
            _other, where, listed = sorted(found)[0]
            return listed, where, None
        return None, "%s holds no compatible_version list" % package["name"], None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _present(home, root, version, in_use):
    """Which kinds of the pinned version are installed: the toolkit when it is the one in use, kernels by their
    tree (opp_kernel, as ascend-toolkit/latest lists it), nnal by nnal/atb/latest/version.info."""
    toolkit = bool(in_use) and in_use["version"] == version
    nnal = cann_install.parse_nnal_version(readers.read(os.path.join(root, "nnal", "atb", "latest", "version.info")))
    return {"toolkit": toolkit, "kernels": toolkit and os.path.isdir(os.path.join(home, "opp_kernel")),
            "nnal": nnal == version}


def _family(module):
    """The node's NPU family as the preflight tells it (npu-smi's chip table and summary), or None where
    npu-smi does not answer."""
    rc, out, _err = readers.run(module, [module.params["npu_smi"], "info", "-m"])
    chips = [row for row in npu.parse_chip_map(out) if row["logic"] is not None] if rc == 0 else []
    if not chips:
        return None
    summary_rc, summary_out, _err = readers.run(module, [module.params["npu_smi"], "info"])
    return npu.describe(chips, npu.parse_summary(summary_out) if summary_rc == 0 else [])["family"]


def main():
    module = AnsibleModule(
        argument_spec=dict(
            packages=dict(type="list", elements="path", required=True),
            ascend_home=dict(type="path", default="/usr/local/Ascend"),
            work_dir=dict(type="path", default="/var/cache/ascend-inference/cann"),
            allow_version_change=dict(type="bool", default=False),
            driver_check=dict(type="bool", default=True),
            npu_smi=dict(type="str", default="npu-smi"),
            pending=dict(type="list", elements="path", default=[]),
        ),
        supports_check_mode=True,
    )
    root = module.params["ascend_home"]
    node_arch = ARCHES.get(platform.machine().lower(), platform.machine())
    packages, problems = cann_install.package_problems(module.params["packages"], node_arch)
    missing = [p["path"] for p in packages if not os.path.isfile(p["path"])]
    problems.extend("%s is not on the node" % path for path in missing if path not in module.params["pending"])
    family = _family(module) if any(p["kind"] == "kernels" for p in packages) else None
    problems.extend(filter(None, (cann_install.kernels_problem(p, family) for p in packages)))
    versions = sorted(set(p["version"] for p in packages))
    version = versions[0] if len(versions) == 1 else None
    in_use, _notes, _problems = readers.cann_toolkit(root)
    driver_file = os.path.join(root, "driver", "version.info")
    driver = cann.driver(readers.read(driver_file))
    result = dict(changed=False, version=version, npu_family=family, layout=None, set_env=None, in_use=in_use, driver=driver,
                  driver_check=None, packages=[], install=False, problems=problems)
    if problems or version is None:
        module.exit_json(**result)
    result.update(layout=cann_install.layout_for(version), set_env=cann_install.set_env_for(root, version))
    home = cann_install.home_for(root, version)
    planned, version_problems = cann_install.actions(packages, in_use, _present(home, root, version, in_use),
                                                     module.params["allow_version_change"])
    problems.extend(version_problems)
    toolkit = planned[0]
    if toolkit["action"] == "none":
        info_path = in_use["install_info"]
        listed, origin = cann.parse_key_values(readers.read(info_path)).get("compatible_version"), info_path
    elif toolkit["path"] in missing:
        # Check mode before the copy: the list is unread, a missing driver is still a problem.
        if driver is None and module.params["driver_check"]:
            problems.append(cann_install.judge_driver(None, None, version, "", driver_file)[2])
        result.update(driver_check=dict(ok=None, source="not read", message="%s is not on the node yet; its list is "
                                        "read when it is" % toolkit["name"]),
                      packages=planned, install=True)
        module.exit_json(**result)
    else:
        listed, origin, unreadable = _package_list(module, toolkit)
        if unreadable:
            # Never left to the table or to cann_driver_check: this node's install would fail after others'.
            problems.append(unreadable)
            result.update(packages=planned)
            module.exit_json(**result)
    ok, source, message = cann_install.judge_driver(driver, listed, version, origin if listed else "no list",
                                                    driver_file)
    if listed is None and source != "driver":
        message = "%s; %s" % (origin, message)
    if not ok and module.params["driver_check"]:
        problems.append(message)
    result.update(driver_check=dict(ok=ok, source=source, message=message), packages=planned,
                  install=any(p["action"] == "install" for p in planned))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
