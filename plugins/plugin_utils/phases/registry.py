# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every phase node_phase runs, by name: what computes a node's desired state, and the types of the settings it
takes. The one list of phases: plugins/modules/node_phase.py documents exactly these choices and the roles and
playbooks name no other (tests/integration/test_phase_registry.py compares them)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.ascend.inference.plugins.plugin_utils.operations import restart, status, teardown
from ansible_collections.ascend.inference.plugins.plugin_utils.phases import (
    cann, firewall, hostnames, model, monitoring, node_env, npu_exporter, npu_network, per_instance, preflight,
    pyacl, ray, router, serve)

# The role phases, in the order a deploy runs them.
ROLE_PHASES = {
    "cann_stage": (cann.stage, cann.SETTINGS),
    "model_settings": (model.settings, model.SETTINGS),
    "model_schedule": (model.schedule, model.SETTINGS),
    "model_hub": (model.hub, model.SETTINGS),
    "preflight": (preflight.desired, preflight.SETTINGS),
    "npu_query": (npu_network.query, npu_network.SETTINGS),
    "npu_ping": (npu_network.ping, npu_network.SETTINGS),
    "npu_report": (npu_network.report, {}),
    "hostnames": (hostnames.desired, hostnames.SETTINGS),
    "pyacl": (pyacl.desired, pyacl.SETTINGS),
    "node_env": (per_instance.node_env, node_env.SETTINGS),
    "node_env_ray": (per_instance.node_env_ray, node_env.SETTINGS),
    "firewall": (firewall.desired, firewall.SETTINGS),
    "ray_install": (ray.install, ray.SETTINGS),
    "ray_token": (per_instance.ray_token, ray.SETTINGS),
    "ray": (per_instance.ray, ray.SETTINGS),
    "serve": (per_instance.serve, serve.SETTINGS),
    "serve_group": (restart.serve_group, {}),
    "router": (router.desired, router.SETTINGS),
    "npu_exporter": (npu_exporter.desired, npu_exporter.SETTINGS),
    "monitoring": (monitoring.desired, monitoring.SETTINGS),
}
# The operations' phases: restart.yml, teardown.yml, remove_node.yml, status.yml.
OPERATIONS = {
    "ray_restart": (restart.ray, ray.SETTINGS),
    "serve_restart": (restart.serve, restart.SERVE_SETTINGS),
    "serve_rolling": (restart.rolling, restart.SERVE_SETTINGS),
    "teardown": (teardown.desired, {}),
    "remove_node": (teardown.removed, teardown.REMOVE_SETTINGS),
    "status": (status.status, status.SETTINGS),
    "status_report": (status.report, {}),
}
PHASES = dict(ROLE_PHASES, **OPERATIONS)
