# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which vLLM each engine release runs on, and that vLLM's ``serve`` options.

The engines are vLLM plugins: ``vllm-mindspore serve`` and vllm-ascend's
``vllm serve`` parse exactly the options of the vLLM they are installed with.
vllm-ascend releases carry their vLLM's version number; vllm-mindspore pins
one vLLM per minor release (package metadata and release notes).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.ascend.inference.plugins.module_utils.engines import (
    vllm_options_0_9_1, vllm_options_0_11_0, vllm_options_0_23_0, vllm_options_0_33_0)

# vLLM release -> its serve option table (tools/regenerate_vllm_tables.sh writes them).
OPTION_TABLES = dict(
    (table.VLLM_VERSION, table) for table in (
        vllm_options_0_9_1, vllm_options_0_11_0, vllm_options_0_23_0, vllm_options_0_33_0))

# The engine release a deployment assumes when ascend_engine_version is unset: the
# releases the two documents were written for (vllm-mindspore 0.5.1; the
# vllm-ascend document's image vllm-ascend:v0.23.0).
DEFAULT_ENGINE_VERSIONS = {
    "vllm-mindspore": "0.5.1",
    "vllm-ascend": "0.23.0",
}

# The Python distribution that carries each engine (its metadata gives the installed version).
ENGINE_DISTRIBUTIONS = {
    "vllm-mindspore": "vllm-mindspore",
    "vllm-ascend": "vllm-ascend",
}

# vllm-mindspore minor release -> vLLM release.
_MINDSPORE_VLLM = {
    (0, 4): "0.9.1",
    (0, 5): "0.11.0",
}
# vllm-ascend releases that run on a vLLM other than their own number.
_ASCEND_EXCEPTIONS = {
    "0.11.0rc0": "0.11.0rc3",
    "0.14.0rc1": "0.14.1",
}
_RELEASE = re.compile(r"^(\d+)\.(\d+)\.(\d+)(rc\d+)?(\.post\d+)?$")


def vllm_version(engine, engine_version):
    """The vLLM release ``engine`` ``engine_version`` runs on, or raise ValueError saying why not."""
    match = _RELEASE.match(str(engine_version))
    if not match:
        raise ValueError("%r is not a release number such as %s" % (engine_version, DEFAULT_ENGINE_VERSIONS[engine]))
    if engine == "vllm-mindspore":
        vllm = _MINDSPORE_VLLM.get((int(match.group(1)), int(match.group(2))))
        if vllm is None:
            raise ValueError("vllm-mindspore %s: no known vLLM pairing (known: %s)" % (
                engine_version, ", ".join("%d.%d.x on vLLM %s" % (k + (v,)) for k, v in sorted(_MINDSPORE_VLLM.items()))))
    else:
        # Release candidates run on the final vLLM release (vllm-ascend's compatibility matrix:
        # v0.9.1rc1..rc3 on 0.9.1, v0.23.0rc1 on 0.23.0), but for the listed exceptions.
        release = "%s.%s.%s" % (match.group(1), match.group(2), match.group(3))
        vllm = _ASCEND_EXCEPTIONS.get(release + (match.group(4) or ""), release)
    if vllm not in OPTION_TABLES:
        raise ValueError("%s %s runs on vLLM %s, for which the collection ships no option table (tables: vLLM %s)"
                         % (engine, engine_version, vllm, ", ".join(supported_vllm_versions())))
    return vllm


def supported_vllm_versions():
    return sorted(OPTION_TABLES, key=version_key)


def previous_vllm_version(version):
    """The shipped table before ``version``'s, or None for the oldest."""
    ordered = supported_vllm_versions()
    index = ordered.index(version)
    return ordered[index - 1] if index else None


def version_key(version):
    """VERSION ("0.23.0", "0.9.1rc2") as a tuple of its numbers, for comparisons."""
    return tuple(int(part) for part in re.findall(r"\d+", version))
