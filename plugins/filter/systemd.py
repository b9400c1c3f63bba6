# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""systemd_command_line: an argv as an ExecStart= value that systemd parses back unchanged."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.ascend.inference.plugins.module_utils import systemd


def systemd_command_line(argv):
    try:
        return systemd.command_line(argv)
    except ValueError as exc:
        raise AnsibleFilterError("systemd_command_line: %s" % exc)


class FilterModule(object):
    def filters(self):
        return {"systemd_command_line": systemd_command_line}
