# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The engines and their releases, in one table: what each engine is called, runs and is installed as, which vLLM
each release runs on, and what the collection relies on per vLLM release (the KV connectors vllm-ascend builds on
it, the names of its metrics).

The engines are vLLM plugins: ``vllm-mindspore serve`` and vllm-ascend's
``vllm serve`` parse exactly the options of the vLLM they are installed with
(option_tables.py has each release's). vllm-ascend releases carry their vLLM's
version number; vllm-mindspore pins one vLLM per minor release (package
metadata and release notes). docs/development/architecture.md lists what
else to touch when a release is added.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# Each engine (ascend_engine): the command that serves a model, the Python distribution that carries it (its
# metadata gives the installed version), and the release a deployment assumes when ascend_engine_version is unset:
# the releases the two documents were written for (vllm-mindspore 0.5.1; the vllm-ascend document's image
# vllm-ascend:v0.23.0).
ENGINES = {
    "vllm-mindspore": {"serve": ("vllm-mindspore", "serve"), "distribution": "vllm-mindspore",
                       "default_version": "0.5.1"},
    "vllm-ascend": {"serve": ("vllm", "serve"), "distribution": "vllm-ascend", "default_version": "0.23.0"},
}
# vLLM's own distribution, which every engine runs on.
VLLM_DISTRIBUTION = "vllm"

DEFAULT_ENGINE_VERSIONS = dict((name, engine["default_version"]) for name, engine in ENGINES.items())
ENGINE_DISTRIBUTIONS = dict((name, engine["distribution"]) for name, engine in ENGINES.items())
# The programs that serve, and every distribution whose version a probe reads (vLLM's first).
PROGRAMS = tuple(sorted(set(engine["serve"][0] for engine in ENGINES.values())))
DISTRIBUTIONS = (VLLM_DISTRIBUTION,) + tuple(sorted(ENGINE_DISTRIBUTIONS.values()))

# vllm-ascend's KV connectors for prefill/decode disaggregation.
MOONCAKE = "MooncakeConnectorV1"
LLMDATADIST = "LLMDataDistCMgrConnector"

# Per vLLM release the collection ships an option table for:
# - kv_connectors: the connectors vllm-ascend registers on it (vllm_ascend/distributed/__init__.py, 0.23's
#   kv_transfer/__init__.py) that the collection builds, the first the default; none where its source was not read
#   (0.30.0, 0.32.0, 0.33.0: the vllm-ascend source stored here ends at v0.25.1rc1), and pd.py refuses prefill/decode
#   there;
# - llmdd_rpc_port_env: the variable LLMDataDist reads its RPC base port from (vllm_ascend/envs.py; renamed in 0.10,
#   vllm-ascend #2399); None after 0.11 (LLMDataDist removed in vllm-ascend #4780, last in v0.11.0);
# - kv_cache_usage, inter_token_latency: the names of those metrics (vllm/v1/metrics/loggers.py of each wheel;
#   tests/unit/plugins/module_utils/engines/fixtures/vllm_metrics): 0.9.1 has the older names, and 0.11 still has
#   its KV one behind --show-hidden-metrics-for-version.
VLLM_RELEASES = {
    "0.9.1": {"kv_connectors": (LLMDATADIST,), "llmdd_rpc_port_env": "VLLM_LLMDD_RPC_PORT",
              "kv_cache_usage": "vllm:gpu_cache_usage_perc",
              "inter_token_latency": "vllm:time_per_output_token_seconds"},
    "0.11.0": {"kv_connectors": (LLMDATADIST,), "llmdd_rpc_port_env": "VLLM_ASCEND_LLMDD_RPC_PORT",
               "kv_cache_usage": "vllm:kv_cache_usage_perc", "inter_token_latency": "vllm:inter_token_latency_seconds"},
    "0.23.0": {"kv_connectors": (MOONCAKE,), "llmdd_rpc_port_env": None,
               "kv_cache_usage": "vllm:kv_cache_usage_perc", "inter_token_latency": "vllm:inter_token_latency_seconds"},
    "0.30.0": {"kv_connectors": (), "llmdd_rpc_port_env": None,
               "kv_cache_usage": "vllm:kv_cache_usage_perc", "inter_token_latency": "vllm:inter_token_latency_seconds"},
    "0.32.0": {"kv_connectors": (), "llmdd_rpc_port_env": None,
               "kv_cache_usage": "vllm:kv_cache_usage_perc", "inter_token_latency": "vllm:inter_token_latency_seconds"},
    "0.33.0": {"kv_connectors": (), "llmdd_rpc_port_env": None,
               "kv_cache_usage": "vllm:kv_cache_usage_perc", "inter_token_latency": "vllm:inter_token_latency_seconds"},
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
    if vllm not in VLLM_RELEASES:
        raise ValueError("%s %s runs on vLLM %s, for which the collection ships no option table (tables: vLLM %s)"
                         % (engine, engine_version, vllm, ", ".join(supported_vllm_versions())))
    return vllm


def supported_vllm_versions():
    return sorted(VLLM_RELEASES, key=version_key)


def previous_vllm_version(version):
    """The shipped table before ``version``'s, or None for the oldest."""
    ordered = supported_vllm_versions()
    index = ordered.index(version)
    return ordered[index - 1] if index else None


def version_key(version):
    """VERSION ("0.23.0", "0.9.1rc2") as a tuple of its numbers, for comparisons."""
    return tuple(int(part) for part in re.findall(r"\d+", version))


def metric_names(kind):
    """Every name of metric KIND (kv_cache_usage, inter_token_latency) across the shipped releases, the newest's
    first: ``a or b`` in PromQL keeps a's series where both exist, so a release that exports both counts once."""
    names = []
    for version in reversed(supported_vllm_versions()):
        if VLLM_RELEASES[version][kind] not in names:
            names.append(VLLM_RELEASES[version][kind])
    return names
