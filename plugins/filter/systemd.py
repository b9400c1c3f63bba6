# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What systemd reads back exactly: systemd_command_line (an argv as an ExecStart= value) and
environment_file (NAME="value" lines that EnvironmentFile= and a POSIX shell both read back);
service_unit_lines (the [Service] lines that run a unit as the plan's service account, confined)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.ascend.inference.plugins.module_utils import service_account
from ansible_collections.ascend.inference.plugins.module_utils import systemd


def _refusing_as_filter_error(function, name):
    def wrapped(value):
        try:
            return function(value)
        except ValueError as exc:
            raise AnsibleFilterError("%s: %s" % (name, exc))
    return wrapped


systemd_command_line = _refusing_as_filter_error(systemd.command_line, "systemd_command_line")
environment_file = _refusing_as_filter_error(systemd.environment_file, "environment_file")


class FilterModule(object):
    def filters(self):
        return {"systemd_command_line": systemd_command_line, "environment_file": environment_file,
                "service_unit_lines": service_account.unit_lines}
