# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Readiness as one task: polls GET /health on the API node until it answers 200, printing the elapsed time and
the engine's latest log line as it waits; then, where asked, GET /v1/models until it lists the served model and
the smoke test, POST /v1/completions (see plugins/modules/serve_ready.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible.utils.display import Display
from ansible_collections.ascend.inference.plugins.module_utils import progress
from ansible_collections.ascend.inference.plugins.plugin_utils.polling import POLL_ARGUMENTS, PollingAction

display = Display()

# /v1/models is asked this many times after /health answered (the engine registers the model as it starts).
MODEL_ATTEMPTS = 12
SMOKE_TIMEOUT = 300


class ActionModule(PollingAction):
    LABEL = "ready"
    ARGUMENTS = dict(POLL_ARGUMENTS, url=dict(type="str", required=True), log_argv=dict(type="list", elements="str"),
                     model=dict(type="str"), smoke_prompt=dict(type="str"), smoke_max_tokens=dict(type="int", default=120))
    _VALID_ARGS = frozenset(ARGUMENTS)
    log_line = None
    headers = None

    def prepare(self, args, task_vars):
        # The API key from the inventory or vault, never a task argument: requests to /v1 carry it.
        key = self._templar.template(task_vars.get("ascend_api_key")) or ""
        self.headers = {"Authorization": "Bearer %s" % key} if key else {}

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
        base = args["url"][:-len("/health")] if args["url"].endswith("/health") else args["url"].rstrip("/")
        if args["model"]:
            listed = self.wait_for_model(base, args)
            result["models"] = listed
            if args["model"] not in listed:
                result.update(failed=True, msg="GET %s/v1/models did not list %s after %d attempts (it listed: %s)" % (
                    base, args["model"], MODEL_ATTEMPTS, ", ".join(listed) or "nothing"))
                return result
        if args["smoke_prompt"] is not None:
            answer, problem = self.smoke(base, args)
            if problem:
                result.update(failed=True, msg="smoke test, POST %s/v1/completions: %s" % (base, problem))
                return result
            result["answer"] = answer
            display.display("%s: %s answers at %s: %s" % (self._task_vars_host, args["model"], base,
                                                          args["smoke_prompt"] + answer))
        return result

    def run(self, tmp=None, task_vars=None):
        self._task_vars = task_vars
        self._task_vars_host = (task_vars or {}).get("inventory_hostname", "?")
        return super(ActionModule, self).run(tmp, task_vars)

    def request(self, args):
        """A uri call on the target whose result keeps only what is needed: with the API key in its headers, it runs as
        under no_log (nothing in the node's journal, its raw answer not shown at -vvv) and its invocation is not
        kept."""
        # The task's no_log keeps the module from logging its arguments on the node; the play context's keeps the
        # connection from showing the module's raw answer at -vvv.
        contexts = [self._task, self._play_context, self._connection._play_context]
        no_log = [context.no_log for context in contexts]
        if self.headers:
            for context in contexts:
                context.no_log = True
        try:
            answer = self.run_on_target("ansible.builtin.uri", dict(args, headers=self.headers), self._task_vars)
        finally:
            for context, value in zip(contexts, no_log):
                context.no_log = value
        return {"status": answer.get("status"), "json": answer.get("json"), "msg": answer.get("msg")}

    def wait_for_model(self, base, args):
        listed = []
        for attempt in range(MODEL_ATTEMPTS):
            answer = self.request({"url": base + "/v1/models", "status_code": [200], "timeout": 10})
            if answer["status"] == 200:
                listed = [entry.get("id") for entry in (answer["json"] or {}).get("data") or [] if isinstance(entry, dict)]
                if args["model"] in listed:
                    break
            if attempt + 1 < MODEL_ATTEMPTS:
                time.sleep(args["interval"])
        return listed

    def smoke(self, base, args):
        """(the completion's text, or None with what was wrong)."""
        answer = self.request({"url": base + "/v1/completions", "method": "POST", "body_format": "json",
                               "body": {"model": args["model"], "prompt": args["smoke_prompt"],
                                        "max_tokens": args["smoke_max_tokens"], "temperature": 0},
                               "status_code": [200], "timeout": SMOKE_TIMEOUT})
        if answer["status"] != 200:
            return None, "HTTP %s (%s)" % (answer["status"], progress.one_line(answer["msg"] or "no answer"))
        text = (((answer["json"] or {}).get("choices") or [{}])[0] or {}).get("text") or ""
        if not text:
            return None, "an empty completion"
        return text, None
