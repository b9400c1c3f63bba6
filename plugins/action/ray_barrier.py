# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Ray barrier as one task: runs the cluster probe on the head until every planned node and NPU
has joined, printing who joined and who is missing as it waits (see plugins/modules/ray_barrier.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.ascend.inference.plugins.module_utils import progress
from ansible_collections.ascend.inference.plugins.plugin_utils.polling import POLL_ARGUMENTS, PollingAction


class ActionModule(PollingAction):
    LABEL = "Ray cluster"
    ARGUMENTS = dict(POLL_ARGUMENTS, argv=dict(type="list", elements="str", required=True),
                     plan=dict(type="dict", required=True),
                     unreachable=dict(type="dict", default={}))
    _VALID_ARGS = frozenset(ARGUMENTS)

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
            # The error and the reasons given stay for the report made again with more (ray_barrier_report).
            result.update(failed=True, error=error, unreachable=args["unreachable"], msg=progress.barrier_report(
                progress.expected_nodes(args["plan"]), args["timeout"], state, error, args["unreachable"]))
        return result
