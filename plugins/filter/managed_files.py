# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""files_settled: whether the managed_files module would change nothing, from what the preflight's probe read."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.ascend.inference.plugins.module_utils import managed_files


def files_settled(probed, key, files, directories=None, secrets=None):
    return managed_files.settled(probed, key, files, directories, secrets)


class FilterModule(object):
    def filters(self):
        return {"files_settled": files_settled}
