# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""layout_text: the plan's layout as a table per node (every NPU's DP rank, PP stage, TP rank, EP group)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.ascend.inference.plugins.module_utils.layout import render_text


def layout_text(plan):
    return render_text(plan)


class FilterModule(object):
    def filters(self):
        return {"layout_text": layout_text}
