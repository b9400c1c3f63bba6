# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every systemd unit the collection owns on a node, and the patterns that find them again (pure).

The one place these names are spelled: the planner copies the single model's into the plan (cluster.units, which
the roles, status.yml and the phases read), an instance of ascend_instances gets its own from ``instance_unit``,
and the sweeps, teardown.yml, remove_node.yml and the support bundle find what any plan left with the patterns
below. tests/integration/test_spelled_twice.py fails when a unit name is spelled anywhere else in plugins/.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

UNIT_DIR = "/etc/systemd/system"
# What every unit of the collection is called: ascend-<job>.service, ascend-<job>-<instance>.service.
PREFIX = "ascend-"
SUFFIX = ".service"
GLOB = PREFIX + "*" + SUFFIX

RAY = "ascend-ray.service"
SERVE = "ascend-serve.service"
# Container mode: the engine container, which runs Ray and serve inside.
ENGINE = "ascend-engine.service"
FIREWALL = "ascend-firewall.service"
# Serve's watchdog, where an engine spans nodes (host mode).
WATCHDOG = "ascend-watchdog.service"
ROUTER = "ascend-router.service"
NPU_EXPORTER = "ascend-npu-exporter.service"
# A prefill/decode instance's proxy (ascend-pd-<instance>.service).
PD_PROXY = "ascend-pd-%s.service"
# The model role's transient units, while a copy runs: rsync's daemon and client, aria2 and the tracker.
MODEL_SEED = "ascend-model-seed.service"
MODEL_FETCH = "ascend-model-fetch.service"
MODEL_SWARM = "ascend-model-swarm.service"
MODEL_TRACKER = "ascend-model-tracker.service"
# Earlier releases' Ray-only firewall, which the firewall phase removes.
LEGACY_FIREWALL = "ascend-ray-firewall.service"

# The single model's units by job: the plan's cluster.units.
SINGLE = {"ray": RAY, "serve": SERVE, "engine": ENGINE, "firewall": FIREWALL, "watchdog": WATCHDOG}
# The jobs an instance of ascend_instances runs in units of its own.
INSTANCE_JOBS = ("ray", "serve", "watchdog")

_INSTANCE = "[a-z0-9-]+"
# Each job's units, the single model's and every instance's: what the sweeps and teardown.yml look for.
RAY_UNITS = re.compile(r"ascend-ray(-%s)?\.service" % _INSTANCE)
SERVE_UNITS = re.compile(r"ascend-serve(-%s)?\.service" % _INSTANCE)
WATCHDOG_UNITS = re.compile(r"ascend-watchdog(-%s)?\.service" % _INSTANCE)
PD_PROXY_UNITS = re.compile(r"ascend-pd-%s\.service" % _INSTANCE)
# Any unit of a model, with its kind and instance (the support bundle's reading).
MODEL_UNITS = re.compile(r"ascend-(serve|ray|watchdog|pd)(?:-(%s))?\.service" % _INSTANCE)

# The configuration files the sweeps remove with them, in the config directory (ascend_config_dir).
# serve.env, and an instance's serve, node and secrets files.
SERVE_ENV_FILES = re.compile(r"serve\.env|(node|secrets|serve)-%s\.env" % _INSTANCE)
# node_env's files with instances: the single model's, and those of instances not on the node.
NODE_ENV_FILES = re.compile(r"(node|secrets)(-%s)?\.env" % _INSTANCE)
# The serve watchdogs' configurations and program.
WATCHDOG_FILES = re.compile(r"watchdog(-%s)?\.json|serve-watchdog\.py" % _INSTANCE)
# The prefill/decode proxies' environment files and LLMDataDist's rank tables.
PD_FILES = re.compile(r"pd-%s\.env|ranktable-%s\.json" % (_INSTANCE, _INSTANCE))
# Ray's files, the single model's (ray.env, ray-auth-token) and an instance's.
RAY_FILES = re.compile(r"ray(-%s)?\.env|ray-auth-token(-%s)?" % (_INSTANCE, _INSTANCE))


def instance_unit(job, name):
    """The unit of JOB (one of INSTANCE_JOBS) of the instance NAME."""
    if job not in INSTANCE_JOBS:
        raise ValueError("an instance runs no %s unit of its own" % job)
    return "%s%s-%s%s" % (PREFIX, job, name, SUFFIX)


def instance_units(name):
    """Every unit the instance NAME has of its own, by job."""
    return dict((job, instance_unit(job, name)) for job in INSTANCE_JOBS)
