#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# The work is done by the action plugin of the same name (plugins/action/serve_ready.py).

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: serve_ready
short_description: Wait until the inference endpoint answers GET /health, showing the engine's progress
version_added: 0.1.0
description:
  - Polls O(url) from the target with M(ansible.builtin.uri) until it answers 200; fails when O(timeout) seconds have passed.
  - >-
    While it waits it prints, in the terminal and in CI logs, the elapsed time, what /health answered and the
    latest line of the engine's log (O(log_argv), e.g. the checkpoint-loading percentage), such as
    C(node1: ready, 46 s of 1800 s: /health: Connection refused; engine: Loading safetensors checkpoint
    shards:  50% Completed | 1/2 [00:01<00:01,  1.02s/it]), whenever that changes and every O(progress_every)
    seconds otherwise. One task; no retry lines.
extends_documentation_fragment:
  - ascend.inference.polling
author:
  - ascend.inference contributors (@ascend-inference)
options:
  url:
    description: The health URL, as the target reaches it.
    type: str
    required: true
  log_argv:
    description:
      - A command on the target whose output ends with the engine's latest log line (its last non-empty line is
        shown; of a progress bar redrawn with carriage returns, the last drawing).
      - For a systemd unit, C(journalctl --all) (without it, journalctl shows a line holding a carriage return
        as C([blob data])).
    type: list
    elements: str
"""

EXAMPLES = r"""
- name: Wait for GET /health
  ascend.inference.serve_ready:
    url: http://192.0.2.11:8000/health
    timeout: 1800
    log_argv: [journalctl, --unit=ascend-serve.service, --lines=5, --no-pager, --output=cat, --all]
"""

RETURN = r"""
status:
  description: The last HTTP status (-1 when nothing answered).
  returned: always
  type: int
log_line:
  description: The engine's latest log line seen, null without O(log_argv) or output.
  returned: always
  type: str
attempts:
  description: How many polls ran.
  returned: always
  type: int
elapsed:
  description: Seconds from the first poll until /health answered 200 or O(timeout) ran out.
  returned: always
  type: int
"""
