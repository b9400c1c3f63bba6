#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# The action plugin of the same name (plugins/action/serve_idle.py) polls with this module: one call per poll.

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: serve_idle
short_description: Wait until an engine runs no request (a drained replica, before its restart)
version_added: 0.1.0
description:
  - Polls O(url) (the engine's C(/metrics), outside C(/v1), so no key) from the target until C(vllm:num_requests_running)
    and C(vllm:num_requests_waiting), summed over the engine's engines, are both 0; fails when O(timeout) seconds
    have passed, with the counts last seen.
  - The rolling restart of C(playbooks/restart.yml) waits so on a replica the router no longer sends requests to.
extends_documentation_fragment:
  - ascend.inference.polling
author:
  - ascend.inference contributors (@ascend-inference)
options:
  url:
    description: The engine's metrics URL, as the target reaches it.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Wait until chat-a runs no request
  ascend.inference.serve_idle:
    url: http://192.0.2.11:8000/metrics
    timeout: 600
"""

RETURN = r"""
running:
  description: C(vllm:num_requests_running) last seen (summed), or null when it was not read.
  returned: always
  type: float
waiting:
  description: C(vllm:num_requests_waiting) last seen (summed), or null when it was not read.
  returned: always
  type: float
refused:
  description: Whether the connection was refused - no engine listens there, so none runs a request.
  returned: always
  type: bool
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import fetch_url
from ansible_collections.ascend.inference.plugins.module_utils.engines.metrics import in_flight


def main():
    module = AnsibleModule(
        argument_spec=dict(url=dict(type="str", required=True), timeout=dict(type="int", required=True),
                           interval=dict(type="int", default=2), progress_every=dict(type="int", default=10)),
        supports_check_mode=False)
    response, info = fetch_url(module, module.params["url"], timeout=10)
    status = info.get("status", -1)
    text = response.read().decode("utf-8", "replace") if response else ""
    found = in_flight(text) if status == 200 else {}
    # Nothing listens: no engine runs there, so none has a request in flight.
    refused = status == -1 and "refused" in (info.get("msg") or "").lower()
    module.exit_json(changed=False, status=status, msg=info.get("msg"), refused=refused,
                     running=found.get("vllm:num_requests_running"), waiting=found.get("vllm:num_requests_waiting"))


if __name__ == "__main__":
    main()
