# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""parallel_plan in the controller's own process: the plan is pure computation over the inventory, so
shipping the module to localhost and forking a Python for it (twice a deploy) bought nothing
(see plugins/modules/parallel_plan.py for the options and the result)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase
from ansible_collections.ascend.inference.plugins.module_utils.plan_request import ARGUMENT_SPEC, answer


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(ARGUMENT_SPEC)

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        params = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)[1]
        result.update(answer(params))
        if not result.get("failed"):
            result["warnings"] = result.get("warnings", []) + list(result["plan_warnings"])
        return result
