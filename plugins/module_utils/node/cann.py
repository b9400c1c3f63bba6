# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""CANN and NPU driver versions from their install files (pure logic).

Two CANN layouts exist (see hardware-samples):
- ``ascend-toolkit`` (up to CANN 8.3): ``<root>/ascend-toolkit/<version>/<arch>-linux/ascend_toolkit_install.info``
  behind ``<root>/ascend-toolkit/latest``, environment from ``<root>/ascend-toolkit/set_env.sh``;
- ``cann`` (CANN 8.5 and later): ``<root>/cann-<version>/<arch>-linux/ascend_toolkit_install.info``,
  environment from ``<root>/cann/set_env.sh`` (Huawei's CANN 8.5 and 9.0 documentation), where ``cann``
  links to ``cann-<version>``; ``cann-<version>/set_env.sh`` is the same script. CANN 8.5 images also keep
  ``ascend-toolkit/latest`` and ``ascend-toolkit/set_env.sh`` pointing into that tree for compatibility.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import posixpath

LAYOUTS = ("ascend-toolkit", "cann")

# Where each layout keeps its install file (glob patterns under the Ascend root), its
# set_env.sh and its home, in the order they are tried.
INSTALL_INFO = {
    "ascend-toolkit": ("ascend-toolkit/latest/ascend_toolkit_install.info",
                       "ascend-toolkit/latest/*/ascend_toolkit_install.info"),
    "cann": ("cann/ascend_toolkit_install.info", "cann/*/ascend_toolkit_install.info",
             "cann-*/ascend_toolkit_install.info", "cann-*/*/ascend_toolkit_install.info"),
}
SET_ENV = {"ascend-toolkit": "ascend-toolkit/set_env.sh", "cann": "cann/set_env.sh"}


def parse_key_values(text):
    """key=value lines (install.info, version.info) as a dict; other lines are skipped."""
    found = {}
    for line in (text or "").splitlines():
        key, sep, value = line.strip().partition("=")
        if sep and key and key not in found:
            found[key] = value.strip()
    return found


def toolkit(install_info_text, path, layout, root, real_path=None):
    """What one install file says: version, innerversion, arch, layout, set_env, file (and its real path)."""
    info = parse_key_values(install_info_text)
    if not info.get("version"):
        return None
    return {
        "version": info["version"],
        "innerversion": info.get("innerversion"),
        "arch": info.get("arch"),
        "layout": layout,
        "set_env": posixpath.join(root, SET_ENV[layout]),
        "install_info": path,
        "real_path": real_path or path,
    }


def set_env_candidates(chosen, root):
    """Where the chosen toolkit's set_env.sh may be, in order: the layout's, then its own tree's."""
    candidates = [chosen["set_env"]]
    if chosen["layout"] == "cann":
        # The install file sits in cann-<version>/<arch>-linux/ (or in cann-<version>/ itself).
        tree = posixpath.dirname(chosen["real_path"])
        if not posixpath.basename(tree).startswith("cann-"):
            tree = posixpath.dirname(tree)
        candidates.append(posixpath.join(tree, "set_env.sh"))
    return candidates


def choose(found, wanted="auto"):
    """The toolkit the node uses, from toolkit() results by layout, and a note or a problem.

    found: {layout: [toolkit results, in the order their files were found]}. With both
    layouts installed the newer ``cann`` layout is used unless ``wanted`` names one.
    Several ``cann-<version>`` trees with no ``cann`` link to choose one are a problem.
    Returns (toolkit or None, notes, problems).
    """
    notes, problems = [], []
    found = dict(found)
    # ascend-toolkit/latest pointing into a cann-<version> tree is the compatibility link, not a second install.
    cann_files = set(t["real_path"] for t in found.get("cann", []))
    found["ascend-toolkit"] = [t for t in found.get("ascend-toolkit", []) if t["real_path"] not in cann_files]
    present = [layout for layout in LAYOUTS if found.get(layout)]
    if wanted != "auto":
        if wanted not in present:
            problems.append("preflight_cann_layout is %s but no %s layout is installed (found: %s)"
                            % (wanted, wanted, ", ".join(present) or "none"))
            return None, notes, problems
        present = [wanted]
    if not present:
        return None, notes, problems
    layout = "cann" if "cann" in present else present[0]
    if len(present) > 1:
        notes.append("both CANN layouts are installed; using %s %s (set preflight_cann_layout to choose)"
                     % (layout, found[layout][0]["version"]))
    versions = sorted(set(t["version"] for t in found[layout]))
    linked = [t for t in found[layout] if "/cann/" in t["install_info"] or "/latest/" in t["install_info"]]
    if len(versions) > 1 and not linked:
        problems.append("several CANN versions are installed (%s) and none is selected by a %s link"
                        % (", ".join(versions), "cann" if layout == "cann" else "latest"))
        return None, notes, problems
    return (linked or found[layout])[0], notes, problems


def driver(version_info_text):
    """The NPU driver's Version and Innerversion from driver/version.info, or None."""
    info = parse_key_values(version_info_text)
    if not info.get("Version"):
        return None
    return {"version": info["Version"], "innerversion": info.get("Innerversion")}
