# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The hostnames phase's desired state: this node's host name and the /etc/hosts block naming every node of
the plan (not only this run's: a run with --limit keeps the others' lines; a node remove_node.yml takes out goes). Refused for every node when two
would share a name or one is not a valid host name."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.ascend.inference.plugins.module_utils.node import etc_hosts
from ansible_collections.ascend.inference.plugins.plugin_utils.phases.phase import Refused

# RFC 1123 host name: dot-separated labels of letters, digits and inner hyphens.
VALID_NAME = r'^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?([.][A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$'
MARKER = "# {mark} ascend.inference cluster nodes"
# What node_apply sets itself; any other strategy is ansible.builtin.hostname's, run by the phase after the apply.
OWN_STRATEGIES = ("", "systemd", "file")
NODE_VARS = ("ascend_hostname", "ascend_node_ip", "ansible_host")
SETTINGS = {"strategy": "str", "manage_etc_hosts": "bool"}


def desired(node, settings):
    """settings: strategy, manage_etc_hosts."""
    # The plan's nodes: every host of ascend_cluster, but the one remove_node.yml takes out.
    hosts = sorted(node.plan["cluster"]["node_order"])
    nodes = dict((host, dict((name, node.var(name, None, host=host)) for name in NODE_VARS)) for host in hosts)
    names = etc_hosts.names(nodes)
    problems = etc_hosts.problems(names, VALID_NAME)
    if problems:
        raise Refused("; ".join(problems))
    name = names[node.host]
    state = {}
    strategy = settings["strategy"]
    if strategy == "file":
        # A bind-mounted /etc/hostname (containers) cannot be replaced by rename: written in place then.
        state["files"] = [{"path": "/etc/hostname", "content": name + "\n", "mode": "0644", "mount_point": True}]
        state["hostname"] = {"name": name, "strategy": "file"}
    elif strategy in OWN_STRATEGIES:
        state["hostname"] = {"name": name, "strategy": "systemd"}
    if settings["manage_etc_hosts"]:
        state["blocks"] = [{"path": "/etc/hosts", "marker": MARKER, "block": etc_hosts.etc_hosts_block(nodes)}]
    result = {"apply": state, "record": {"name": name}}
    if strategy not in OWN_STRATEGIES:
        # redhat's /etc/sysconfig/network, debian's whole file, ...: the module that knows them, in the task's mode.
        result["after"] = lambda applied: {"changed": by_module(node, name, strategy)}
    return result


def by_module(node, name, strategy):
    """Set NAME with ansible.builtin.hostname's STRATEGY; whether it changed (or would) the node."""
    done = node.run("ansible.builtin.hostname", {"name": name, "use": strategy}, checked=True)
    if done.get("failed"):
        raise Refused("%s: setting the host name %s with the %s strategy failed: %s"
                      % (node.host, name, strategy, done.get("msg")))
    return bool(done.get("changed"))
