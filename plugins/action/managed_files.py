# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""managed_files with its skip decided on the controller: where the probe's view (the options probed and
digest_key) shows every path as the module would leave it, the node is not contacted at all (see
plugins/modules/managed_files.py for the options and the result)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible.plugins.action import ActionBase
from ansible_collections.ascend.inference.plugins.module_utils.managed_files import settled


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        args = dict(self._task.args)
        # Read here only: the module has no use for them, and the probe's view can be long.
        probed, key = args.pop("probed", None), args.pop("digest_key", None)
        if settled(probed, key, args.get("files"), args.get("directories"), args.get("secrets")):
            wanted = list(args.get("directories") or []) + list(args.get("files") or [])
            result.update(skipped=True, changed=False, changed_paths=[],
                          paths=dict((os.path.normpath(spec["path"]), []) for spec in wanted),
                          skip_reason="the probe saw every path as it would be written")
            return result
        result.update(self._execute_module(module_name=self._task.action, module_args=args, task_vars=task_vars))
        return result
