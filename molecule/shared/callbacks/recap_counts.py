# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Test harness only (enabled by .config/molecule/config.yml): each playbook run's PLAY RECAP counts, one JSON line
per run in $MOLECULE_EPHEMERAL_DIRECTORY/recaps.jsonl, for the scenarios' tests of how many tasks a node goes through
(molecule/shared/task_counts.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: recap_counts
type: aggregate
short_description: Keep each run's recap counts for the molecule scenarios' tests
description:
  - Appends the playbook's name, whether it ran in check mode and each host's recap counts to
    C($MOLECULE_EPHEMERAL_DIRECTORY/recaps.jsonl).
requirements:
  - enabled in ANSIBLE_CALLBACKS_ENABLED
"""

import json
import os

from ansible import context
from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "recap_counts"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super(CallbackModule, self).__init__()
        self.playbook = None

    def v2_playbook_on_start(self, playbook):
        self.playbook = os.path.basename(playbook._file_name)

    def v2_playbook_on_stats(self, stats):
        directory = os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY")
        if not directory or not os.path.isdir(directory):
            return
        # The same counts the PLAY RECAP line prints for each host.
        line = {"playbook": self.playbook, "check": bool(context.CLIARGS.get("check")),
                "hosts": dict((host, stats.summarize(host)) for host in sorted(stats.processed))}
        with open(os.path.join(directory, "recaps.jsonl"), "a") as handle:
            handle.write(json.dumps(line, sort_keys=True) + "\n")
