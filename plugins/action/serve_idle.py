# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""An engine without requests as one task: polls its /metrics with the serve_idle module until it runs and queues
none, printing the counts as they change (see plugins/modules/serve_idle.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.ascend.inference.plugins.plugin_utils.polling import POLL_ARGUMENTS, PollingAction


class ActionModule(PollingAction):
    LABEL = "idle"
    ARGUMENTS = dict(POLL_ARGUMENTS, url=dict(type="str", required=True))
    _VALID_ARGS = frozenset(ARGUMENTS)

    def poll(self, args, task_vars):
        seen = self.run_on_target(self._task.action, args, task_vars)
        running, waiting = seen.get("running"), seen.get("waiting")
        if seen.get("status") != 200 or running is None:
            return False, "%s: %s" % (args["url"], "HTTP %s" % seen.get("status") if seen.get("status") != 200
                                      else "no vllm:num_requests_running"), seen
        status = "%g running, %g waiting" % (running, waiting or 0)
        return running == 0 and not waiting, status, seen

    def finish(self, result, done, seen, args):
        result.update(running=seen.get("running"), waiting=seen.get("waiting"))
        if not done:
            result.update(failed=True, msg="the engine at %s still had requests after %d s (running %s, waiting %s)"
                          % (args["url"], args["timeout"], seen.get("running"), seen.get("waiting")))
        return result
