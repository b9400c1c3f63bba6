# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""ray_barrier_report: the failed barrier's report again, with why each node that did not join cannot reach the head;
ray_head_wait_reasons: why nodes could not reach the head, from their own waits for its port."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.ascend.inference.plugins.module_utils import progress


def ray_head_wait_reasons(plan, hostvars, check_var):
    """{node: why it cannot reach the head} for the planned nodes that registered CHECK_VAR (a wait for the
    head's Ray port) and whose wait timed out."""
    # hostvars is lazy: only the planned nodes' check results are read, where a node has one.
    checks = dict((node, hostvars[node][check_var]) for node in plan["cluster"]["node_order"]
                  if node in hostvars and check_var in hostvars[node])
    return progress.head_check_reasons(checks)


def ray_barrier_report(barrier, plan, hostvars, check_var, timeout):
    unreachable = dict(barrier.get("unreachable") or {})
    unreachable.update(ray_head_wait_reasons(plan, hostvars, check_var))
    return progress.barrier_report(progress.expected_nodes(plan), timeout, barrier.get("state"), barrier.get("error"),
                                   unreachable)


def ray_token_holders(hostvars, hosts, path):
    """The HOSTS that hold a token file at PATH: read by the role (its ray_cluster_node_token), or a file
    or a link there when the preflight's probe looked (its preflight_found.files; it does not follow links,
    which the role's read does: a link counts, so that a cluster is never re-keyed over one)."""
    holders = []
    for host in hosts:
        found = hostvars[host]
        read = found["ray_cluster_node_token"] if "ray_cluster_node_token" in found else {}
        probed = found["preflight_found"].get("files", {}) if "preflight_found" in found else {}
        if "content" in read or (probed.get(path) or {}).get("type") in ("file", "link"):
            holders.append(host)
    return holders


class FilterModule(object):
    def filters(self):
        return {"ray_barrier_report": ray_barrier_report, "ray_head_wait_reasons": ray_head_wait_reasons,
                "ray_token_holders": ray_token_holders}
