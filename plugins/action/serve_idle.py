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
        if seen.get("refused"):
            # A stopped or crashed engine: nothing in flight, and the restart is what it needs.
            return True, "%s: nothing listens (no engine runs there)" % args["url"], seen
        if seen.get("status") == 200 and running is None:
            # Waiting would not change it (vLLM started with --disable-log-stats exports no gauges): said now.
            return True, "%s: no vllm:num_requests_running" % args["url"], dict(seen, missing=True)
        if seen.get("status") != 200:
            return False, "%s: HTTP %s" % (args["url"], seen.get("status")), seen
        status = "%g running, %g waiting" % (running, waiting or 0)
        return running == 0 and not waiting, status, seen

    def finish(self, result, done, seen, args):
        result.update(running=seen.get("running"), waiting=seen.get("waiting"))
        if seen.get("missing"):
            result.update(failed=True, msg="the engine at %s exports no vllm:num_requests_running, so its drain cannot "
                          "be waited for (is --disable-log-stats in ascend_serve_options?)" % args["url"])
        elif not done:
            result.update(failed=True, msg="the engine at %s still had requests after %d s (running %s, waiting %s)"
                          % (args["url"], args["timeout"], seen.get("running"), seen.get("waiting")))
        return result
