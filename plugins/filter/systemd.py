# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""environment_file: NAME="value" lines that systemd's EnvironmentFile= and a POSIX shell both read back exactly
(logic in module_utils/runtime/systemd.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.ascend.inference.plugins.module_utils.runtime import systemd


def environment_file(value):
    try:
        return systemd.environment_file(value)
    except ValueError as exc:
        raise AnsibleFilterError("environment_file: %s" % exc)


class FilterModule(object):
    def filters(self):
        return {"environment_file": environment_file}
