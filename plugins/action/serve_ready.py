# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Readiness as one task: polls the API node with the serve_ready module - one run per poll, which asks GET
/health and, once it answers 200, GET /v1/models for the served model and the smoke test - printing the elapsed
time and the engine's latest log line as it waits (see plugins/modules/serve_ready.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.utils.display import Display
from ansible_collections.ascend.inference.plugins.plugin_utils import progress
from ansible_collections.ascend.inference.plugins.module_utils.engines.api_url import api_base, health_path
from ansible_collections.ascend.inference.plugins.plugin_utils.polling import POLL_ARGUMENTS, PollingAction

display = Display()


class ActionModule(PollingAction):
    LABEL = "ready"
    ARGUMENTS = dict(POLL_ARGUMENTS, url=dict(type="str", required=True), log_argv=dict(type="list", elements="str"),
                     model=dict(type="str"), smoke_prompt=dict(type="str"), smoke_max_tokens=dict(type="int", default=120),
                     list_models=dict(type="bool", default=True),
                     api_key=dict(type="str", no_log=True))
    _VALID_ARGS = frozenset(ARGUMENTS)
    log_line = None

    def prepare(self, args, task_vars):
        # The API key from the inventory or vault unless the task gives one: never a task argument of the roles.
        if args["api_key"] is None:
            args["api_key"] = self._templar.template(task_vars.get("ascend_api_key")) or None
        self.host = task_vars.get("inventory_hostname", "?")

    def poll(self, args, task_vars):
        seen = self.ask(args, task_vars)
        if seen.get("status") == 200:
            return True, "%s: HTTP 200" % health_path(args["url"]), seen
        self.log_line = progress.last_log_line(seen.get("log")) or self.log_line
        return False, progress.ready_status(progress.health_answer(seen), self.log_line), seen

    def ask(self, args, task_vars):
        """One run of the module on the target. With an API key it runs as under no_log: the task's keeps the module
        from logging its arguments on the node, the play context's keeps the connection from showing its raw answer
        at -vvv; only what is needed of its answer is kept."""
        contexts = [self._task, self._play_context, self._connection._play_context]
        no_log = [context.no_log for context in contexts]
        if args["api_key"]:
            for context in contexts:
                context.no_log = True
        try:
            answer = self.run_on_target(self._task.action, args, task_vars)
        finally:
            for context, value in zip(contexts, no_log):
                context.no_log = value
        return dict((key, answer.get(key)) for key in ("status", "msg", "log", "models", "smoke", "failed"))

    def finish(self, result, done, seen, args):
        result.update(status=seen.get("status"), log_line=self.log_line)
        if not done:
            result.update(failed=True, msg="no 200 from %s within %d s (last answer: %s)%s" % (
                args["url"], args["timeout"], progress.health_answer(seen),
                "; the engine's latest log line: " + self.log_line if self.log_line else ""))
            return result
        base = api_base(args["url"])
        if args["model"] and args["list_models"]:
            result["models"] = listed = seen.get("models") or []
            if args["model"] not in listed:
                result.update(failed=True, msg="GET %s/v1/models did not list %s (it listed: %s)" % (
                    base, args["model"], ", ".join(listed) or "nothing"))
                return result
        if args["smoke_prompt"] is not None:
            smoke = seen.get("smoke") or {}
            if smoke.get("status") != 200 or not smoke.get("text"):
                result.update(failed=True, msg="smoke test, POST %s/v1/completions: %s" % (base, (
                    "an empty completion" if smoke.get("status") == 200
                    else "HTTP %s (%s)" % (smoke.get("status"), progress.one_line(smoke.get("msg") or "no answer")))))
                return result
            result["answer"] = smoke["text"]
            display.display("%s: %s answers at %s: %s" % (self.host, args["model"], base,
                                                          args["smoke_prompt"] + smoke["text"]))
        return result
