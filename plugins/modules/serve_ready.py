#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# The action plugin of the same name (plugins/action/serve_ready.py) polls with this module: one call per poll.

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: serve_ready
short_description: Wait until the inference endpoint answers, showing the engine's progress, then the smoke test
version_added: 0.1.0
description:
  - Polls O(url) from the target until it answers 200; fails when O(timeout) seconds have passed.
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
  list_models:
    description:
      - Whether O(model) must be listed by C(GET /v1/models) before the smoke test; false for an endpoint that
        serves no model list (vllm-ascend's prefill/decode proxy).
    type: bool
    default: true
  api_key:
    description:
      - The key the C(/v1) requests carry (C(Authorization) header). Omitted - C(ascend_api_key) where the inventory or
        vault sets it (read by the action plugin, never shown).
    type: str
notes:
  - Each poll is one module run on the target - C(/health), and once it answers 200 C(/v1/models) and the smoke test
    in the same run; where C(/health) does not answer 200, O(log_argv) runs there too.
  - With a key, each poll runs as under C(no_log), so the key reaches neither the node's journal nor the output at
    C(-vvv).
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

import json
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import fetch_url
from ansible_collections.ascend.inference.plugins.module_utils.engines.api_url import api_base

# /v1/models is asked this many times after /health answered (the engine registers the model as it starts).
MODEL_ATTEMPTS = 12
SMOKE_TIMEOUT = 300


def request(module, url, headers=None, body=None, timeout=10):
    """(HTTP status or -1, the answer's JSON or None, the error message)."""
    data = json.dumps(body) if body is not None else None
    found_headers = dict(headers or {}, **({"Content-Type": "application/json"} if data else {}))
    response, info = fetch_url(module, url, data=data, headers=found_headers, method="POST" if data else "GET",
                               timeout=timeout)
    status = info.get("status", -1)
    text = response.read() if response else info.get("body")
    try:
        answer = json.loads(text) if text else None
    except ValueError:
        answer = None
    return status, answer, info.get("msg")


def models(module, base, headers, interval):
    """The served model names /v1/models lists, asked until it lists the one wanted or MODEL_ATTEMPTS ran out."""
    listed = []
    for attempt in range(MODEL_ATTEMPTS):
        status, answer, _msg = request(module, base + "/v1/models", headers)
        if status == 200:
            listed = [entry.get("id") for entry in (answer or {}).get("data") or [] if isinstance(entry, dict)]
            if module.params["model"] in listed:
                break
        if attempt + 1 < MODEL_ATTEMPTS:
            time.sleep(interval)
    return listed


def main():
    module = AnsibleModule(
        argument_spec=dict(
            url=dict(type="str", required=True),
            log_argv=dict(type="list", elements="str"),
            model=dict(type="str"),
            smoke_prompt=dict(type="str"),
            smoke_max_tokens=dict(type="int", default=120, no_log=False),
            list_models=dict(type="bool", default=True),
            api_key=dict(type="str", no_log=True),
            timeout=dict(type="int", required=True),
            interval=dict(type="int", default=2),
            progress_every=dict(type="int", default=10),
        ),
        supports_check_mode=False,
    )
    params = module.params
    status, _answer, msg = request(module, params["url"])
    result = {"changed": False, "status": status, "msg": msg}
    if status != 200:
        if params["log_argv"]:
            result["log"] = module.run_command(params["log_argv"])[1]
        module.exit_json(**result)
    base = api_base(params["url"])
    headers = {"Authorization": "Bearer %s" % params["api_key"]} if params["api_key"] else {}
    if params["model"] and params["list_models"]:
        result["models"] = models(module, base, headers, params["interval"])
        if params["model"] not in result["models"]:
            module.exit_json(**result)
    if params["smoke_prompt"] is not None:
        body = {"model": params["model"], "prompt": params["smoke_prompt"], "max_tokens": params["smoke_max_tokens"],
                "temperature": 0}
        smoke_status, answer, smoke_msg = request(module, base + "/v1/completions", headers, body, SMOKE_TIMEOUT)
        result["smoke"] = {"status": smoke_status, "msg": smoke_msg,
                           "text": (((answer or {}).get("choices") or [{}])[0] or {}).get("text") or ""}
    module.exit_json(**result)


if __name__ == "__main__":
    main()
