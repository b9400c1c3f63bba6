#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# The work is done by the action plugin of the same name (plugins/action/ray_barrier.py).

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: ray_barrier
short_description: Wait until every planned node and NPU has joined the Ray cluster, showing who is missing
version_added: 0.1.0
description:
  - Runs O(argv) (the collection's cluster probe, which prints Ray's alive nodes as JSON) on the target, with
    M(ansible.builtin.command), until the alive nodes are the plan's nodes with all their NPUs, or O(timeout) seconds have passed.
  - >-
    While it waits it prints, in the terminal and in CI logs, a line such as
    C(node1: Ray cluster, 12 s of 300 s: 1/2 nodes, 4/8 NPUs joined; missing: node2) whenever what it
    sees changes, and every O(progress_every) seconds otherwise. One task; no retry lines.
  - >-
    Fails when the time is up, with one line per planned node - the NPUs it brought against the plan, or
    C(NOT JOINED) and, from O(unreachable), why - then any alive Ray node the plan does not hold and the
    probe's last error.
extends_documentation_fragment:
  - ascend.inference.polling
author:
  - ascend.inference contributors (@ascend-inference)
options:
  argv:
    description:
      - 'The probe''s command line; it prints C([{"ip": ..., "npus": ...}, ...]) for the alive nodes.'
      - Omitted - the cluster probe the ray phase installed in O(config_dir) on the head, run with Ray's Python
        (O(python_env)) or, in container mode, inside the head's engine container, as a client of a
        token-authenticated cluster where the head holds the token.
    type: list
    elements: str
  plan:
    description:
      - The plan (M(ascend.inference.parallel_plan)'s result); its C(cluster.node_order) and each node's
        C(node_ip) and C(visible_devices) say who must join with how many NPUs.
      - Omitted - C(ascend_plan).
    type: dict
  config_dir:
    description: Where the ray phase put the probe and the token; the plan's C(cluster.config_dir) when omitted.
    type: path
  python_env:
    description: Ray's Python environment on the head (host mode); the plan's C(cluster.python_env) when omitted.
    type: path
  unreachable:
    description:
      - Why a node did not join, by inventory name, where the node's own wait for the head said so (for
        example C(node2) with C(Timeout when waiting for 192.0.2.11:6379)); shown beside that node in the failure.
      - Omitted - what the workers' ray phase recorded of their wait for the head (C(ascend_applied.ray.waited)).
    type: dict
  failed:
    description:
      - A failed barrier's result - no polling then - the task fails with its report made again, with why each
        node that did not join cannot reach the head, from O(checks).
    type: dict
  checks:
    description: With O(failed), each node's own wait for the head's Ray port (M(ansible.builtin.wait_for)'s result),
      by inventory name.
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: Wait for every node and NPU to join
  ascend.inference.ray_barrier:
    argv: [/opt/ascend-inference/ray/bin/python, /etc/ascend-inference/ray-cluster-nodes.py, "192.0.2.11:6379"]
    plan: "{{ ascend_plan }}"
    timeout: 300
    unreachable: {node2: "Timeout when waiting for 192.0.2.11:6379"}
  register: ray_cluster_nodes

- name: The same, the probe and the reasons as the ray phase left them
  ascend.inference.ray_barrier:
    timeout: 300
"""

RETURN = r"""
whole:
  description: Every planned node alive with all its NPUs (and no other node).
  returned: always
  type: bool
state:
  description: What the last probe showed (C(nodes_joined), C(nodes_expected), C(npus_joined), C(npus_expected),
    C(joined) (NPUs by node name), C(missing), C(short), C(unexpected), C(whole)); null when the probe failed.
  returned: always
  type: dict
probe_rc:
  description: The last probe's exit status.
  returned: always
  type: int
probe_stdout:
  description: The last probe's output (its JSON).
  returned: when the cluster is whole
  type: str
probe_stderr:
  description: The last probe's error output, its last 5 lines.
  returned: always
  type: str
error:
  description: Why the last probe gave no answer (its error output, or why its output could not be read); null when it answered.
  returned: when the cluster is not whole
  type: str
unreachable:
  description: O(unreachable) as given (or read), for the report made again with O(failed).
  returned: when the cluster is not whole
  type: dict
attempts:
  description: How many times the probe ran.
  returned: always
  type: int
elapsed:
  description: Seconds from the first probe until the cluster was whole or O(timeout) ran out.
  returned: always
  type: int
"""
