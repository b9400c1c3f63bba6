# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The preflight's verdict on one node (logic in module_utils/preflight_checks.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.ascend.inference.plugins.module_utils import preflight_checks


class FilterModule(object):
    def filters(self):
        return {"preflight_node_checks": preflight_checks.node_checks}
