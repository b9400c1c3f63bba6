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
short_description: Wait until the inference endpoint answers, showing the engine's progress, then the smoke test
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
  model:
    description:
      - Once /health answered, ask C(GET /v1/models) (on O(url) without its C(/health)) until it lists this served
        model name, up to 12 times O(interval) apart; fail naming what it listed otherwise.
    type: str
  smoke_prompt:
    description:
      - Then send the seeds' smoke test, C(POST /v1/completions) of this prompt to O(model) (temperature 0), which
        must answer 200 with a completion that is not empty; the prompt and answer are printed. Omit to skip it.
    type: str
  smoke_max_tokens:
    description: The smoke test's C(max_tokens).
    type: int
    default: 120
notes:
  - The requests to C(/v1) carry an C(Authorization) header with C(ascend_api_key) where the inventory or vault sets it
    (read by the action plugin, never a task argument); they run as under C(no_log), so the key reaches neither the
    node's journal nor the output at C(-vvv).
"""

EXAMPLES = r"""
- name: Wait for readiness, then run the smoke test
  ascend.inference.serve_ready:
    url: http://192.0.2.11:8000/health
    timeout: 1800
    log_argv: [journalctl, --unit=ascend-serve.service, --lines=5, --no-pager, --output=cat, --all]
    model: qwen2.5
    smoke_prompt: I am
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
models:
  description: What C(GET /v1/models) listed, with O(model).
  returned: when /health answered and O(model) is given
  type: list
  elements: str
answer:
  description: The smoke test's completion.
  returned: when O(smoke_prompt) is given and the test passed
  type: str
"""
