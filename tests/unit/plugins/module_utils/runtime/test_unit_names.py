# -*- coding: utf-8 -*-
"""The registry of unit names (module_utils/runtime/unit_names): every name a plan gives a unit or a file is found
again by the sweep, teardown and support-bundle patterns, and by its own job's pattern only."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.ascend.inference.plugins.module_utils.plan import planner
from ansible_collections.ascend.inference.plugins.module_utils.runtime import unit_names

UNIT_PATTERNS = {"ray": unit_names.RAY_UNITS, "serve": unit_names.SERVE_UNITS, "watchdog": unit_names.WATCHDOG_UNITS,
                 "pd": unit_names.PD_PROXY_UNITS}


def units_of(instance):
    """Every model unit a plan can give a node: the single model's, or the instance's, and its proxy."""
    found = dict((job, unit_names.instance_unit(job, instance) if instance else unit_names.SINGLE[job])
                 for job in unit_names.INSTANCE_JOBS)
    if instance:
        found["pd"] = unit_names.PD_PROXY % instance
    return found


@pytest.mark.parametrize("instance", [None, "chat", "qwen-7b"])
def test_each_unit_is_found_by_its_jobs_pattern_only(instance):
    for job, unit in units_of(instance).items():
        assert [kind for kind, pattern in UNIT_PATTERNS.items() if pattern.fullmatch(unit)] == [job], unit


@pytest.mark.parametrize("instance", [None, "chat", "qwen-7b"])
def test_the_support_bundle_reads_kind_and_instance_of_every_model_unit(instance):
    for job, unit in units_of(instance).items():
        assert unit_names.MODEL_UNITS.fullmatch(unit).groups() == (job, instance), unit


def test_the_units_outside_a_model_are_not_swept_as_one():
    others = [unit_names.ENGINE, unit_names.FIREWALL, unit_names.ROUTER, unit_names.NPU_EXPORTER, unit_names.MODEL_SEED,
              unit_names.MODEL_FETCH, unit_names.MODEL_SWARM, unit_names.MODEL_TRACKER]
    for unit in others:
        assert not any(pattern.fullmatch(unit) for pattern in UNIT_PATTERNS.values()), unit
        assert not unit_names.MODEL_UNITS.fullmatch(unit), unit


def test_every_unit_has_the_collections_prefix_and_suffix():
    names = list(unit_names.SINGLE.values()) + [unit_names.ROUTER, unit_names.NPU_EXPORTER, unit_names.PD_PROXY % "x",
                                                unit_names.MODEL_SEED, unit_names.MODEL_FETCH, unit_names.MODEL_SWARM,
                                                unit_names.MODEL_TRACKER, unit_names.LEGACY_FIREWALL]
    for name in names:
        assert name.startswith(unit_names.PREFIX) and name.endswith(unit_names.SUFFIX), name
    assert len(set(names)) == len(names)


def test_an_instance_runs_no_engine_or_firewall_of_its_own():
    with pytest.raises(ValueError):
        unit_names.instance_unit("engine", "chat")


@pytest.mark.parametrize("instance", [None, "chat"])
def test_the_file_sweeps_find_the_files_the_plan_names(instance):
    # The planner's files in the config directory; an instance's carry its name (plan/fleet.py: stem-NAME.suffix).
    def named(key):
        stem, suffix = planner.CONFIG_FILES[key].split(".", 1)
        return "%s-%s.%s" % (stem, instance, suffix) if instance else planner.CONFIG_FILES[key]
    for key in ("node_env_file", "secrets_env_file"):
        assert unit_names.NODE_ENV_FILES.fullmatch(named(key)), named(key)
    assert unit_names.RAY_FILES.fullmatch(named("ray_env_file"))
    assert unit_names.SERVE_ENV_FILES.fullmatch(named("serve_env_file"))
    if instance:
        # The serve sweep removes what only an instance's serve unit read.
        for key in ("node_env_file", "secrets_env_file"):
            assert unit_names.SERVE_ENV_FILES.fullmatch(named(key))
    assert not unit_names.SERVE_ENV_FILES.fullmatch(planner.CONFIG_FILES["node_env_file"])
    assert not any(pattern.fullmatch(planner.CONFIG_FILES["model_manifest"]) for pattern in (
        unit_names.NODE_ENV_FILES, unit_names.SERVE_ENV_FILES, unit_names.RAY_FILES, unit_names.PD_FILES,
        unit_names.WATCHDOG_FILES))
