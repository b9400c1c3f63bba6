# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""parallel_plan in the controller's own process: the plan is pure computation over the inventory, so
shipping the module to localhost and forking a Python for it bought nothing (see plugins/modules/parallel_plan.py
for the options and the result). Without the nodes option it reads them from the inventory (checked first: the
groups, every role variable's type on every host, the API key) and from what the preflight detected; with
check_nodes, it judges every node of the play against the plan and fails with every host's problems."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display
from ansible.utils.vars import load_extra_vars
from ansible_collections.ascend.inference.plugins.module_utils.node import etc_hosts
from ansible_collections.ascend.inference.plugins.module_utils.plan import (
    input_rules, nodes as plan_nodes, preflight_checks, reports)
from ansible_collections.ascend.inference.plugins.module_utils.plan.request import ARGUMENT_SPEC, answer
from ansible_collections.ascend.inference.plugins.plugin_utils import deploy_settings, inventory
from ansible_collections.ascend.inference.plugins.plugin_utils.phases.node import APPLIED

display = Display()


def _preflight(hostvars, host):
    facts = hostvars[host].get("ansible_facts") or {} if host in hostvars else {}
    return (facts.get(APPLIED) or {}).get("preflight")


def monitor_of(host, variables):
    """A host of group ascend_monitor: the address it scrapes from, read as a node's is."""
    found = dict((name, variables[name]) for name in ("ascend_node_ip", "ansible_host") if name in variables)
    return {"name": host, "address": str(etc_hosts.address(host, found))}


def removal_problem(groups, removed):
    """Why REMOVED (remove_node.yml's node) cannot be taken out, or None."""
    if not removed:
        return None
    if removed not in (groups.get("ascend_cluster") or []):
        return "node=%s is not a host of the group ascend_cluster: name the inventory host to take out" % removed
    if removed in (groups.get("ascend_head") or []):
        return ("node=%s is the cluster's head (group ascend_head): it cannot be taken out while it is; make another "
                "host the head and deploy first" % removed)
    return None


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(ARGUMENT_SPEC)

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        task_vars = task_vars or {}
        from_inventory = self._task.args.get("nodes") is None
        if from_inventory:
            # Before the options are validated: the inventory's variables, named as the inventory names them.
            problems = self.inventory_problems(task_vars)
            if problems:
                result.update(failed=True, msg=problems)
                return result
        params = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)[1]
        removed = params.get("removed_node")
        if from_inventory:
            problem = removal_problem(task_vars.get("groups") or {}, removed)
            if problem:
                result.update(failed=True, msg=problem)
                return result
            params["nodes"] = self.inventory_nodes(task_vars, removed)
            if "devices_probed" not in self._task.args:
                hostvars = task_vars.get("hostvars") or {}
                params["devices_probed"] = any(_preflight(hostvars, node["name"]) for node in params["nodes"])
            if "extra_env" not in self._task.args:
                # ascend_extra_env read here, not given as an argument: its secret values stay out of the task's.
                params["extra_env"] = self._templar.template(task_vars.get("ascend_extra_env")) or {}
            if "instances" not in self._task.args:
                # The same for ascend_instances, whose extra_env may hold secrets too.
                params["instances"] = self._templar.template(task_vars.get("ascend_instances"))
            groups = task_vars.get("groups") or {}
            if params["router_hosts"] is None and "ascend_router" in groups:
                # An empty group is refused by the planner, not taken for the default.
                params["router_hosts"] = list(groups["ascend_router"])
            if params["monitors"] is None:
                hostvars = task_vars.get("hostvars") or {}
                params["monitors"] = [monitor_of(host, hostvars.get(host) or {})
                                      for host in groups.get("ascend_monitor") or []]
        # Secret variables reach the planner by name only, with what is wrong with their values.
        public, secret = input_rules.split_env(params["extra_env"])
        params["extra_env"] = public
        params["secret_env"] = dict(params["secret_env"] or {}, **input_rules.secret_env_summary(secret))
        check_nodes = params.pop("check_nodes")
        result.update(answer(params))
        if result.get("failed"):
            if removed:
                result["msg"] = "without %s (node=%s), the cluster cannot be planned: %s" % (
                    removed, removed, result["msg"])
            return result
        if from_inventory:
            # What a later phase would refuse of the roles' settings, refused before any node is touched.
            kept = dict((key, result[key]) for key in ("cluster", "router", "monitoring") if key in result)
            problems = deploy_settings.problems(task_vars.get("hostvars") or {}, kept)
            if problems:
                result.update(failed=True, msg="\n- ".join(["the roles' settings:"] + problems))
                return result
        result["warnings"] = result.get("warnings", []) + list(result["plan_warnings"])
        if check_nodes:
            # A plan of instances is judged with each instance's ports and model.
            kept = ("cluster", "nodes", "instances", "router", "pd", "monitoring")
            plan = dict((key, result[key]) for key in kept if key in result)
            report, problems = self.node_report(task_vars, plan)
            result["node_problems"] = problems
            if report:
                result.update(failed=True, msg=report)
        return result

    def inventory_problems(self, task_vars):
        """One message naming what the inventory gets wrong, or None."""
        groups, hostvars = task_vars.get("groups") or {}, task_vars.get("hostvars") or {}
        problem = inventory.group_problem(groups)
        if problem:
            return problem
        hosts = list(task_vars.get("ansible_play_hosts_all") or groups["ascend_cluster"])
        # A misspelt name first: it is often why a required one is missing. The -e variables as given (parsed once by
        # ansible-playbook, cached).
        found = inventory.unknown_problems(hostvars, hosts, load_extra_vars(self._loader)) + \
            inventory.required_problems(hostvars, hosts)
        if found:
            return "\n- ".join(["the inventory's variables:"] + found)
        found = inventory.api_key_problems(hostvars, hosts)
        if found:
            return "\n".join(found)
        found = inventory.type_problems(hostvars, hosts)
        if found:
            return "\n- ".join(["inventory variables of the wrong type:"] + found)
        return None

    def inventory_nodes(self, task_vars, removed=None):
        """parallel_plan's nodes from every host of ascend_cluster (not only this run's) but REMOVED."""
        groups, hostvars = task_vars["groups"], task_vars["hostvars"]
        nodes = []
        for host in [name for name in groups["ascend_cluster"] if name != removed]:
            variables = dict((name, hostvars[host][name]) for name in plan_nodes.VARIABLES if name in hostvars[host])
            detected = (_preflight(hostvars, host) or {}).get("detected")
            nodes.append(plan_nodes.node(host, host in groups["ascend_head"], variables, detected))
        return nodes

    def node_report(self, task_vars, plan):
        """(the report, '' when all is well; {host: its problems}): every play host judged against PLAN from what its
        probe recorded, the notes shown."""
        hostvars = task_vars["hostvars"]
        hosts = list(task_vars.get("ansible_play_hosts") or [])
        found = {}
        for host in hosts:
            probed = _preflight(hostvars, host)
            if not probed:
                continue
            checks = preflight_checks.node_checks(probed, plan, host, probed["context"])
            for note in checks["notes"]:
                display.display(note)
            found[host] = dict(checks, cann_version=probed.get("cann_version"))
        report = reports.preflight_report(hosts, found, plan["cluster"]["runtime"]["mode"], plan["cluster"]["model"])
        return report, dict((host, checks["problems"]) for host, checks in found.items())
