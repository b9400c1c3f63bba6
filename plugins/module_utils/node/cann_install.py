# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which CANN packages a node needs, and whether its NPU driver may run them (pure logic).

Package names and installer flags are Huawei's published ones: ``Ascend-cann-toolkit_<ver>_linux-<arch>.run --full``;
the operators of an NPU family, ``Ascend-cann-kernels-<chip>_<ver>_linux[-<arch>].run`` (no architecture in the name
before 8.0.RC3), ``Atlas-A3-cann-kernels_<ver>_linux-<arch>.run`` (Atlas A3) and, from 8.5,
``Ascend-cann-<chip>-ops_<ver>_linux-<arch>.run``, all ``--install``; ``Ascend-cann-nnal_<ver>_linux-<arch>.run
--install``.

The driver check reads two files (hardware-samples): the toolkit's ``ascend_toolkit_install.info`` lists the driver
releases it supports, ``compatible_version=[V100R001C13,V100R001C19],[V100R001C30]``; the driver's ``version.info``
names its own release, ``Innerversion=V100R001C18SPC001B233``. A bracket of two releases is read as the inclusive
range between them (no document states the format; this reading is the only one that fits the captures).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import posixpath
import re

from ansible_collections.ascend.inference.plugins.module_utils.node import cann

KINDS = ("toolkit", "kernels", "nnal")  # the order they install in: kernels and nnal go into the toolkit's tree
PACKAGE_NAMES = {
    "toolkit": (re.compile(r"^Ascend-cann-toolkit_(?P<version>[^_]+)_linux-(?P<arch>[^.]+)[.]run$"),),
    "kernels": (re.compile(r"^Ascend-cann-kernels-(?P<chip>.+?)_(?P<version>\d[^_]*)_linux(?:-(?P<arch>[^.]+))?[.]run$"),
                re.compile(r"^Atlas-(?P<chip>A3)-cann-kernels_(?P<version>\d[^_]*)_linux-(?P<arch>[^.]+)[.]run$"),
                re.compile(r"^Ascend-cann-(?P<chip>[^-_]+)-ops_(?P<version>\d[^_]*)_linux-(?P<arch>[^.]+)[.]run$")),
    "nnal": (re.compile(r"^Ascend-cann-nnal_(?P<version>[^_]+)_linux-(?P<arch>[^.]+)[.]run$"),),
}
INSTALL_FLAG = {"toolkit": "--full", "kernels": "--install", "nnal": "--install"}

# Where a package carries no compatibility list: the NPU driver each CANN release was published with
# (the Ascend install guide's package table, _static/package_info.js of zheliuyu/docs-dev at 3c801af9,
# the 910B column; its 310P column differs for 7.0.1, 23.0.1). A driver of that release or newer is accepted.
DRIVER_PUBLISHED_WITH = {
    "7.0.0": "23.0.3",
    "7.0.1": "23.0.3",
    "8.0.RC1": "24.1.rc1",
    "8.0.RC2": "24.1.rc1",
    "8.0.RC3": "24.1.rc2",
    "8.0.0": "24.1.rc2",
    "8.1.RC1": "24.1.rc2",
    "8.2.RC1": "25.0.rc1",
}
# The operator package's chip and the NPU family it is for (the install guide's package table names
# Ascend-cann-kernels-910b and -310p; Atlas-A3-cann-kernels is Atlas A3's); other chips are not checked.
KERNELS_FAMILY = {"910b": "910B", "310p": "310P", "a3": "910_93"}
TABLE_SOURCE = "the Ascend install guide's package table (zheliuyu/docs-dev _static/package_info.js)"

_RELEASE = re.compile(r"^V(\d+)R(\d+)C(\d+)")


def parse_package(path):
    """{path, name, kind, version, arch, chip} for a CANN package file name, or None."""
    name = posixpath.basename(path)
    for kind in KINDS:
        match = next((m for m in (pattern.match(name) for pattern in PACKAGE_NAMES[kind]) if m), None)
        if match:
            found = match.groupdict()
            return {"path": path, "name": name, "kind": kind, "version": found["version"],
                    "arch": found.get("arch"), "chip": found.get("chip")}
    return None


def package_problems(paths, node_arch):
    """(packages in install order, problems): one toolkit, one version, the node's architecture, no repeats."""
    problems, packages = [], []
    for path in paths:
        package = parse_package(path)
        if package is None:
            problems.append("%s is not a CANN package name (Ascend-cann-toolkit_<version>_linux-<arch>.run, "
                            "Ascend-cann-kernels-<chip>_<version>_linux-<arch>.run or "
                            "Ascend-cann-nnal_<version>_linux-<arch>.run)" % posixpath.basename(path))
        else:
            packages.append(package)
    kinds = [p["kind"] for p in packages]
    if kinds.count("toolkit") != 1:
        problems.append("exactly one toolkit package is needed, found %d" % kinds.count("toolkit"))
    for kind in ("kernels", "nnal"):
        if kinds.count(kind) > 1:
            problems.append("more than one %s package: %s"
                            % (kind, ", ".join(p["name"] for p in packages if p["kind"] == kind)))
    versions = sorted(set(p["version"] for p in packages))
    if len(versions) > 1:
        problems.append("the packages are of different CANN versions (%s); install one version"
                        % ", ".join("%s %s" % (p["name"], p["version"]) for p in packages))
    for package in packages:
        if package["arch"] and package["arch"] != node_arch:
            problems.append("%s is built for %s, this node is %s" % (package["name"], package["arch"], node_arch))
    return sorted(packages, key=lambda p: KINDS.index(p["kind"])), problems


def kernels_problem(package, node_family):
    """A sentence when a kernels package is for another NPU family than the node's, else None."""
    wanted = KERNELS_FAMILY.get((package.get("chip") or "").lower())
    if package["kind"] != "kernels" or wanted is None or node_family in (None, "unknown") or node_family == wanted:
        return None
    return "%s is for %s NPUs, this node's are %s" % (package["name"], wanted, node_family)


def version_key(version):
    """(major, minor) of a CANN version: 8.3.RC2 -> (8, 3), 9.0.1 -> (9, 0)."""
    parts = re.findall(r"\d+", version.split(".RC")[0].split(".rc")[0])
    return tuple(int(p) for p in (parts + ["0", "0"])[:2])


def layout_for(version):
    """The layout a CANN version installs as: ``cann`` from 8.5 on, ``ascend-toolkit`` before."""
    return "cann" if version_key(version) >= (8, 5) else "ascend-toolkit"


def home_for(root, version):
    """The versioned tree a toolkit version installs into."""
    if layout_for(version) == "cann":
        return posixpath.join(root, "cann-%s" % version)
    return posixpath.join(root, "ascend-toolkit", version)


def set_env_for(root, version):
    return posixpath.join(root, cann.SET_ENV[layout_for(version)])


def release(innerversion):
    """V100R001C18SPC001B233 -> (100, 1, 18), or None."""
    match = _RELEASE.match(innerversion or "")
    return tuple(int(n) for n in match.groups()) if match else None


def release_name(key):
    return "V%03dR%03dC%02d" % key


def parse_compatible(text):
    """compatible_version's value as [(low, high)] release ranges; [] when absent or when any bracket is not
    one release or two (``[V100R001C13-V100R001C19]`` is unreadable, not C13)."""
    ranges = []
    for bracket in re.findall(r"\[([^\]]*)\]", text or ""):
        parts = [part.strip() for part in bracket.split(",")]
        if len(parts) > 2 or not all(re.match(r"^V\d+R\d+C\d+$", part) for part in parts):
            return []
        ends = [release(part) for part in parts]
        ranges.append((ends[0], ends[-1]))
    return ranges


def driver_version_key(version):
    """Order of driver versions: 24.1.rc2 < 24.1.rc2.2 < 24.1.0 < 24.1.1."""
    key = []
    for part in version.lower().split("."):
        match = re.match(r"^rc(\d+)$", part)
        key.append((0, int(match.group(1))) if match else (1, int(part) if part.isdigit() else 0))
    return tuple(key)


def judge_driver(driver, compatible_text, version, origin, origin_driver="driver/version.info"):
    """(ok, how it was decided, message) for running CANN ``version`` on ``driver`` ({version, innerversion}).

    compatible_text is the toolkit's compatible_version value (or None) and origin names the file it came from.
    """
    if not driver:
        return False, "driver", "no NPU driver version (%s is missing or has no Version=)" % origin_driver
    ranges = parse_compatible(compatible_text)
    if compatible_text and not ranges:
        return False, origin, "CANN %s's compatible_version cannot be read: %s (%s)" % (version, compatible_text, origin)
    if ranges:
        own = release(driver.get("innerversion"))
        listed = compatible_text.strip()
        if own is None:
            return False, origin, ("the NPU driver %s has no release in its Innerversion (%s), so it cannot be "
                                   "matched against CANN %s's list %s"
                                   % (driver["version"], driver.get("innerversion"), version, listed))
        if any(low <= own <= high for low, high in ranges):
            return True, origin, ("the NPU driver %s (release %s) is in CANN %s's list %s (%s)"
                                  % (driver["version"], release_name(own), version, listed, origin))
        return False, origin, ("the NPU driver %s (release %s) is not among the releases CANN %s supports: %s (%s)"
                               % (driver["version"], release_name(own), version, listed, origin))
    published = DRIVER_PUBLISHED_WITH.get(version)
    if published is None:
        return False, "table", ("CANN %s carries no compatible_version list and is not in %s; its driver "
                                "requirement cannot be checked (set cann_driver_check: false to install anyway)"
                                % (version, TABLE_SOURCE))
    if driver_version_key(driver["version"]) >= driver_version_key(published):
        return True, "table", ("CANN %s carries no compatible_version list; it was published with driver %s and "
                               "this node's driver %s is not older (%s)"
                               % (version, published, driver["version"], TABLE_SOURCE))
    return False, "table", ("CANN %s carries no compatible_version list; it was published with driver %s and "
                            "this node's driver %s is older (%s)" % (version, published, driver["version"], TABLE_SOURCE))


def parse_nnal_version(text):
    """The ATB version from nnal/atb/latest/version.info ('Ascend-cann-atb : 8.2.RC2'), or None."""
    for line in (text or "").splitlines():
        key, sep, value = line.strip().partition(":")
        if sep and key.strip() == "Ascend-cann-atb":
            return value.strip()
    return None


def actions(packages, in_use, present, allow_change):
    """Each package with ``action`` (install or none), and the problems that stop the install.

    in_use: the toolkit the node uses ({version, layout}) or None; present: {kind: True when the pinned
    version of that kind is installed}.
    """
    problems, planned = [], []
    version = packages[0]["version"] if packages else None
    if in_use and version and in_use["version"] != version and not allow_change:
        problems.append("CANN %s is installed and in use, the packages are %s; set cann_allow_version_change: true "
                        "to change the version" % (in_use["version"], version))
    elif in_use and version and in_use.get("layout") == "cann" and layout_for(version) == "ascend-toolkit":
        # The cann layout wins wherever both are installed (cann.choose): the older tree would never be used.
        problems.append("CANN %s uses the cann layout and %s installs as ascend-toolkit, which the cann layout would "
                        "hide; going back across layouts is not supported (remove the cann link and cann-%s first)"
                        % (in_use["version"], version, in_use["version"]))
    for package in packages:
        needed = not present.get(package["kind"])
        planned.append(dict(package, action="install" if needed else "none", flag=INSTALL_FLAG[package["kind"]]))
    return planned, problems


def stage_plan(entries, work_dir):
    """Where each package comes from and where the node keeps it: (entries, problems).

    entries: [{src | remote | url (with checksum)}]. Each result has ``source`` (src, remote or url),
    ``node_path`` and the entry's own keys.
    """
    staged, problems = [], []
    for index, entry in enumerate(entries or []):
        entry = dict((key, value) for key, value in (entry or {}).items() if value)
        sources = [key for key in ("src", "remote", "url") if key in entry]
        where = "cann_packages[%d]" % index
        if len(sources) != 1:
            problems.append("%s needs exactly one of src (on the controller), remote (on the node) or url, found %s"
                            % (where, ", ".join(sources) or "none"))
            continue
        source = sources[0]
        if source == "url" and not entry.get("checksum"):
            problems.append("%s: a url needs a checksum (<algorithm>:<hex>)" % where)
            continue
        location = entry[source]
        name = posixpath.basename(location.split("?", 1)[0])
        if parse_package(name) is None:
            problems.append("%s: %s is not a CANN package name" % (where, name))
            continue
        node_path = location if source == "remote" else posixpath.join(work_dir, name)
        staged.append(dict(entry, source=source, name=name, node_path=node_path))
    return staged, problems
