# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the cann role (logic in module_utils/cann_install.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.ascend.inference.plugins.module_utils import cann_install


def cann_stage_plan(entries, work_dir):
    staged, problems = cann_install.stage_plan(entries, work_dir)
    return {"packages": staged, "problems": problems}


class FilterModule(object):
    def filters(self):
        return {"cann_stage_plan": cann_stage_plan}
