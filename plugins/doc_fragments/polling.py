# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # The options of the waits that poll and print progress (plugins/plugin_utils/polling.py).
    DOCUMENTATION = r"""
attributes:
  action:
    description: The wait and its progress lines run on the controller; each poll runs the modules the
      description names on the target.
    support: full
  check_mode:
    description: Skipped in check mode, where nothing was started that could be waited for (a task with
      C(check_mode=false) runs it).
    support: none
  diff_mode:
    description: Changes nothing, so there is nothing to show.
    support: none
options:
  timeout:
    description: Seconds to wait in all.
    type: int
    required: true
  interval:
    description: Seconds between two polls.
    type: int
    default: 2
  progress_every:
    description: Seconds between two progress lines while nothing changes (a change is shown at once, the end always).
    type: int
    default: 10
"""
