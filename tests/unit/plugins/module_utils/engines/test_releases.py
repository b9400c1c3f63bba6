# -*- coding: utf-8 -*-
"""The table of engines and vLLM releases (module_utils/engines/releases.py) against what each release needs
beside it: its option table, the --help capture it was checked against, the metrics its wheel defines, and for a
release with KV connectors the KVTransferConfig its wheel accepts. A release added in one place only fails here."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest

from ansible_collections.ascend.inference.plugins.module_utils.engines import metrics, option_tables, releases

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures")
HELP = os.path.join(HERE, "..", "..", "..", "..", "vllm_help")


def test_every_release_has_an_option_table():
    assert set(option_tables.OPTION_TABLES) == set(releases.VLLM_RELEASES)
    for version, table in option_tables.OPTION_TABLES.items():
        assert table.VLLM_VERSION == version


@pytest.mark.parametrize("version", sorted(releases.VLLM_RELEASES))
def test_every_release_has_its_captures(version):
    assert os.path.isfile(os.path.join(HELP, "vllm-%s-serve-help.txt" % version))
    with open(os.path.join(FIXTURES, "vllm_metrics", "vllm-%s.json" % version)) as handle:
        defined = json.load(handle)["metrics"]
    release = releases.VLLM_RELEASES[version]
    # The names the rules and status read are the wheel's own, shown without a flag.
    assert not defined[release["kv_cache_usage"]]["hidden"]
    assert defined[release["kv_cache_usage"]]["type"] == "gauge"
    assert defined[release["inter_token_latency"]]["type"] == "histogram"
    kv_config = os.path.join(FIXTURES, "kv_transfer_config", "vllm-%s.json" % version)
    assert os.path.isfile(kv_config) == bool(release["kv_connectors"])


def test_the_fixtures_name_no_release_the_table_lacks():
    shipped = set("vllm-%s.json" % version for version in releases.VLLM_RELEASES)
    for kind in ("vllm_metrics", "kv_transfer_config"):
        assert set(os.listdir(os.path.join(FIXTURES, kind))) <= shipped, kind
    helps = set(name for name in os.listdir(HELP) if name.endswith("-serve-help.txt"))
    assert helps == set("vllm-%s-serve-help.txt" % version for version in releases.VLLM_RELEASES)


def test_every_engines_default_release_is_shipped():
    for engine in releases.ENGINES:
        assert releases.vllm_version(engine, releases.DEFAULT_ENGINE_VERSIONS[engine]) in releases.VLLM_RELEASES


def test_the_probes_ask_for_vllm_and_every_engines_distribution():
    assert releases.DISTRIBUTIONS[0] == releases.VLLM_DISTRIBUTION
    assert set(releases.DISTRIBUTIONS[1:]) == set(releases.ENGINE_DISTRIBUTIONS.values())
    assert set(releases.PROGRAMS) == set(engine["serve"][0] for engine in releases.ENGINES.values())


def test_the_metric_names_newest_first():
    newest = releases.VLLM_RELEASES[releases.supported_vllm_versions()[-1]]
    assert releases.metric_names("kv_cache_usage")[0] == newest["kv_cache_usage"]
    assert metrics.KV_CACHE == tuple(releases.metric_names("kv_cache_usage"))
    # Each name once, however many releases share it.
    for kind in ("kv_cache_usage", "inter_token_latency"):
        names = releases.metric_names(kind)
        assert len(names) == len(set(names)) == len(set(r[kind] for r in releases.VLLM_RELEASES.values()))
