#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# The work is done by the action plugin of the same name (plugins/action/node_phase.py).

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: node_phase
short_description: One phase of a node's desired state, computed on the controller and applied in one round trip
version_added: "0.1.0"
description:
  - The step each role of the collection takes for its phase. On the controller, from the plan (C(ascend_plan)),
    the role's O(settings) and what earlier phases of the run recorded, it computes the node's desired state -
    directories, files (content, mode, owner, group), the service account, the systemd units with what restarts
    them, their order - and applies it with M(ascend.inference.node_apply), one module call per node.
  - Where the runtime is a container (C(ascend_runtime)), Ray and serve are processes of the engine container;
    the phase's state says so, not the role.
  - >-
    Prints one line per changed path and per unit step (C(node1: /etc/ascend-inference/ray.env content),
    C(node1: ascend-ray.service restarted)), and keeps what it did as the fact C(ascend_applied.<phase>), the
    only thing a later phase reads of it.
  - A refusal (two nodes with one host name, a head that lost the Ray token, different images) fails every node
    before anything is written, with a message that names the variable and the host.
  - Internal to the collection's roles; its phases and settings may change between releases.
author:
  - ascend.inference contributors (@ascend-inference)
attributes:
  action:
    description: Computed on the controller; the node sees one M(ascend.inference.node_apply) call.
    support: full
  check_mode:
    description: Reports what would change and which units would start, restart or stop; changes nothing.
    support: full
  diff_mode:
    description: One entry per changed path; secret content is never shown.
    support: full
options:
  phase:
    description:
      - V(preflight) - the detection (M(ascend.inference.node_probe)); it starts the run's C(ascend_applied).
      - V(npu_query), V(npu_ping), V(npu_report) - the NPU network check (V(npu_report) once for the play).
      - V(hostnames), V(node_env), V(firewall) - the prepare play's phases; V(node_env_ray) - after V(node_env), a Ray
        worker's Ray restarted once its head's did; V(pyacl) - pyACL installed where its version does not import
        (host mode).
      - V(ray_install) - Ray in the engine's Python environment where the preflight did not find it (host mode).
      - V(ray_token) - reads each node's Ray token, and draws one the cluster may need (run with C(no_log)).
      - V(ray), V(serve) - the processes, on the host or in the engine container; V(serve_group) - after V(serve),
        the other nodes of an mp data-parallel group that spans nodes restarted where V(serve) restarted some of them,
        and the replicas behind the router whose files changed, to restart one at a time (returned as C(rolling)).
      - V(router) - the endpoint in front of the instances (HAProxy) on the plan's router hosts.
      - V(ray_restart), V(serve_restart) - restart.yml's phases (V(serve_rolling), once - the instances to restart one
        at a time behind the router); V(teardown) - every service stopped and disabled; V(remove_node) - on the node
        C(playbooks/remove_node.yml) takes out, every unit and the collection's files removed.
      - V(status), V(status_report) - status.yml's reads (V(status_report) once for the play).
      - V(cann_stage) - where each of C(cann_packages) comes from and where the node keeps it (registered).
      - V(npu_exporter) - Huawei's NPU exporter as a unit on the node; V(monitoring) - Prometheus' configuration,
        targets and rules on a monitoring host (or in an export directory).
      - V(model_settings), V(model_schedule) - the model role's variables checked, then who copies the model from
        whom (both once for the play; the schedule registered); V(model_hub) - the hub's download command.
    type: str
    required: true
    choices: [cann_stage, firewall, hostnames, model_hub, model_schedule, model_settings, monitoring, node_env,
              node_env_ray, npu_exporter, npu_ping, npu_query, npu_report, preflight, pyacl, ray, ray_install,
              ray_restart, ray_token, remove_node, router, serve, serve_group, serve_restart, serve_rolling, status,
              status_report, teardown]
  settings:
    description: The role's variables the phase reads (each role's C(tasks/main.yml) passes them).
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: Apply the firewall phase
  ascend.inference.node_phase:
    phase: firewall
    settings:
      enabled: true
      open_ports: [22]
      config_dir: /etc/ascend-inference
      ssh_port: null
"""

RETURN = r"""
changed_paths:
  description: The paths written (see M(ascend.inference.node_apply)).
  returned: when the phase applies a state
  type: list
  elements: str
steps:
  description: The unit steps, in order, each with the time it ended on the node.
  returned: when the phase applies a state
  type: list
  elements: dict
rolling:
  description: With V(serve_rolling) or V(serve_group), the instances to restart one at a time behind the router, in
    order.
  returned: with V(serve_rolling) or V(serve_group)
  type: list
  elements: str
ansible_facts:
  description: C(ascend_applied) - this run's results by phase, this one added (C(changed_paths), C(removed_paths),
    C(steps), C(commands) and what the phase records, such as C(restarted) for V(ray)).
  returned: always
  type: dict
"""
