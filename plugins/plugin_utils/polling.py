# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A wait as one task (controller side): poll the target until done or out of time, printing a progress
line when what is seen changes and every `progress_every` seconds otherwise, and always the last one."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display
from ansible_collections.ascend.inference.plugins.plugin_utils import progress

display = Display()

POLL_ARGUMENTS = dict(
    timeout=dict(type="int", required=True),
    interval=dict(type="int", default=2),
    progress_every=dict(type="int", default=10),
)


class PollingAction(ActionBase):
    """Subclasses set LABEL, ARGUMENTS (and _VALID_ARGS from them) and implement
    poll(args, task_vars) -> (done, status, seen) and finish(result, done, seen, args) -> result; prepare(args,
    task_vars) may complete the arguments first."""

    TRANSFERS_FILES = False
    LABEL = ""
    ARGUMENTS = {}

    def run(self, tmp=None, task_vars=None):
        result = super(PollingAction, self).run(tmp, task_vars)
        args = self.validate_argument_spec(argument_spec=self.ARGUMENTS)[1]
        if self._play_context.check_mode:
            # Nothing was started that could be waited for; the poll's modules would only skip.
            result.update(skipped=True, changed=False, msg="a wait is not run in check mode")
            return result
        self.prepare(args, task_vars)
        throttle = progress.Throttle(args["progress_every"])
        host = task_vars.get("inventory_hostname", "?")
        start = time.monotonic()
        attempts = 0
        try:
            while True:
                attempts += 1
                done, status, seen = self.poll(args, task_vars)
                elapsed = time.monotonic() - start
                last = done or elapsed >= args["timeout"]
                if throttle.due(elapsed, status) or last:
                    display.display("%s: %s" % (host, progress.timed(self.LABEL, elapsed, args["timeout"], status)))
                if last:
                    break
                time.sleep(args["interval"])
        finally:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        result.update(changed=False, attempts=attempts, elapsed=int(elapsed))
        return self.finish(result, done, seen, args)

    def run_on_target(self, module_name, module_args, task_vars):
        return self._execute_module(module_name=module_name, module_args=module_args, task_vars=task_vars)

    def prepare(self, args, task_vars):
        """What the polls need that the task did not give (ARGS may be completed here)."""

    def poll(self, args, task_vars):
        raise NotImplementedError

    def finish(self, result, done, seen, args):
        raise NotImplementedError
