# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Ray barrier as one task: runs the cluster probe on the head until every planned node and NPU
has joined, printing who joined and who is missing as it waits (see plugins/modules/ray_barrier.py). Its
command line, and why a worker could not reach the head, come from the plan and the ray phase's records
unless given."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.ascend.inference.plugins.plugin_utils.phases import ray
from ansible_collections.ascend.inference.plugins.plugin_utils import progress
from ansible_collections.ascend.inference.plugins.plugin_utils.phases.node import APPLIED
from ansible_collections.ascend.inference.plugins.plugin_utils.polling import POLL_ARGUMENTS, PollingAction


def _applied(task_vars, templar, host, phase):
    hostvars = task_vars.get("hostvars") or {}
    facts = (hostvars[host].get("ansible_facts") or {}) if host in hostvars else {}
    return (templar.template(facts.get(APPLIED)) or {}).get(phase) or {}


class ActionModule(PollingAction):
    LABEL = "Ray cluster"
    ARGUMENTS = dict(POLL_ARGUMENTS, argv=dict(type="list", elements="str"), plan=dict(type="dict"),
                     config_dir=dict(type="path"), python_env=dict(type="path"),
                     unreachable=dict(type="dict"), failed=dict(type="dict"), checks=dict(type="dict", default={}))
    _VALID_ARGS = frozenset(ARGUMENTS)

    def run(self, tmp=None, task_vars=None):
        args = self.validate_argument_spec(argument_spec=self.ARGUMENTS)[1]
        if args["failed"] is None:
            return super(ActionModule, self).run(tmp, task_vars)
        # The report of a failed barrier again, with why each node that did not join cannot reach the head.
        result = super(PollingAction, self).run(tmp, task_vars)
        plan = args["plan"] or self._templar.template(task_vars["ascend_plan"])
        result.update(failed=True, changed=False, msg=progress.failed_barrier_report(
            plan, args["timeout"], args["failed"], args["checks"]))
        return result

    def prepare(self, args, task_vars):
        """The plan, the probe's command line and the reasons, where the task did not give them."""
        args["plan"] = plan = args["plan"] or self._templar.template(task_vars["ascend_plan"])
        cluster = plan["cluster"]
        if args["argv"] is None:
            head = cluster["head"]
            image = _applied(task_vars, self._templar, head, "image")
            # One probe run watches up to a polling period for the whole cluster: one `import ray` then, not one
            # per look (on a busy head, each slows Ray's own start).
            expected = progress.expected_nodes(plan)
            args["argv"] = ray.probe_argv(plan, args["config_dir"] or cluster["config_dir"],
                                          args["python_env"] or cluster["python_env"], image.get("program")) + [
                "--until", str(len(expected)), str(sum(node["npus"] for node in expected)),
                str(max(args["interval"], min(args["progress_every"], args["timeout"]) - args["interval"]))]
        if args["unreachable"] is None:
            # A worker's own wait for the head, where it timed out.
            args["unreachable"] = dict(
                (node, waited["msg"]) for node in cluster["node_order"]
                for waited in (_applied(task_vars, self._templar, node, "ray").get("waited") or {}).values()
                if waited and not waited.get("reached") and waited.get("msg"))

    def poll(self, args, task_vars):
        probe = self.run_on_target("ansible.builtin.command", {"argv": args["argv"]}, task_vars)
        state, error = None, None
        if probe.get("rc") == 0:
            try:
                state = progress.barrier_state(probe.get("stdout", ""), progress.expected_nodes(args["plan"]))
            except (ValueError, KeyError, TypeError) as exc:
                error = "unreadable probe output: %s" % exc
        else:
            error = probe.get("stderr") or probe.get("msg")
        return bool(state and state["whole"]), progress.barrier_status(state, error), (probe, state, error)

    def finish(self, result, done, seen, args):
        probe, state, error = seen
        # The probe's own answer is kept under probe_* (as "rc" it would decide the task's outcome itself).
        result.update(state=state, whole=done, probe_rc=probe.get("rc"), probe_stderr=progress.tail(probe.get("stderr", "")))
        if done:
            result.update(probe_stdout=probe.get("stdout", ""))
        else:
            # The failure is read by people: the message names every node; Ray's whole node list is left out.
            # The error and the reasons given stay for the report made again with more (the option failed).
            result.update(failed=True, error=error, unreachable=args["unreachable"], msg=progress.barrier_report(
                progress.expected_nodes(args["plan"]), args["timeout"], state, error, args["unreachable"]))
        return result
