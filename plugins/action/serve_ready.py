# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Readiness as one task: polls GET /health on the API node until it answers 200, printing the
elapsed time and the engine's latest log line as it waits (see plugins/modules/serve_ready.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.ascend.inference.plugins.module_utils import progress
from ansible_collections.ascend.inference.plugins.plugin_utils.polling import POLL_ARGUMENTS, PollingAction


class ActionModule(PollingAction):
    LABEL = "ready"
    ARGUMENTS = dict(POLL_ARGUMENTS, url=dict(type="str", required=True), log_argv=dict(type="list", elements="str"))
    _VALID_ARGS = frozenset(ARGUMENTS)
    log_line = None

    def poll(self, args, task_vars):
        health = self.run_on_target("ansible.builtin.uri", {"url": args["url"], "status_code": [200], "timeout": 10},
                                    task_vars)
        if health.get("status") == 200:
            return True, "/health: HTTP 200", health
        if args["log_argv"]:
            journal = self.run_on_target("ansible.builtin.command", {"argv": args["log_argv"]}, task_vars)
            self.log_line = progress.last_log_line(journal.get("stdout")) or self.log_line
        return False, progress.ready_status(progress.health_answer(health), self.log_line), health

    def finish(self, result, done, seen, args):
        result.update(status=seen.get("status"), log_line=self.log_line)
        if not done:
            result.update(failed=True, msg="no 200 from %s within %d s (last answer: %s)%s" % (
                args["url"], args["timeout"], progress.health_answer(seen),
                "; the engine's latest log line: " + self.log_line if self.log_line else ""))
        return result
