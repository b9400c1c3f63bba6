#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: plan_files
short_description: Write every node's plan as one JSON file per node
version_added: 0.1.0
description:
  - Writes C(<path>/<node>.json) for every node of a plan computed by
    M(ascend.inference.parallel_plan), holding the node's commands, environment
    and devices, with the cluster-wide settings under C(cluster); for a plan of several instances, the node's
    entry in each instance it takes part in (under C(instances)) and the ports and NPUs allocated on it.
  - One task for the whole cluster, so a plan of hundreds of nodes takes one
    module run; only files whose content differs are rewritten.
  - Also writes C(<path>/layout.svg), a drawing of the layout (every node and NPU with its DP rank, PP stage,
    TP rank and EP group).
  - Files of nodes no longer in the plan are left alone.
author:
  - ascend.inference contributors (@ascend-inference)
attributes:
  check_mode:
    description: Reports which files would be written and writes none.
    support: full
  diff_mode:
    description: Shows each changed node file's old and new content; for the picture (C(layout.svg)) only that
      it is redrawn and its sizes (its XML says nothing the node files do not).
    support: full
options:
  path:
    description: Directory for the files; created (mode 0755) when missing.
    type: path
    required: true
  plan:
    description: The registered result of M(ascend.inference.parallel_plan) (its C(nodes) and C(cluster)).
    type: dict
    required: true
  mode:
    description: Mode of the files written.
    type: raw
    default: "0644"
"""

EXAMPLES = r"""
- name: Compute the plan
  ascend.inference.parallel_plan:
    engine: vllm-ascend
    model: /models/Qwen3-235B-A22B
    tensor_parallel_size: 8
    pipeline_parallel_size: 2
    nodes:
      - {name: node1, head: true, node_ip: 192.0.2.11, nic: enp1s0}
      - {name: node2, node_ip: 192.0.2.12, nic: enp1s0}
  register: ascend_plan
  delegate_to: localhost
  run_once: true

- name: Write plan/node1.json and plan/node2.json
  ascend.inference.plan_files:
    path: plan
    plan: "{{ ascend_plan }}"
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
written:
  description: The files written (or, in check mode, that would be), sorted.
  returned: always
  type: list
  elements: str
  sample: [plan/node1.json]
summary:
  description: What C(playbooks/plan.yml) shows of the plan, in lines of at most 100 columns where words allow -
    per node the environment and the commands (with shell continuations), the model checks, the router; for several
    instances, each one's nodes and the ports each host listens on.
  returned: always
  type: str
layout:
  description: The layout as text, a table per node (every NPU's DP rank, PP stage, TP rank and EP group), as
    C(layout.svg) draws it.
  returned: always
  type: str
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ascend.inference.plugins.module_utils.plan.layout_picture import render_text
from ansible_collections.ascend.inference.plugins.module_utils.plan.documents import node_documents
from ansible_collections.ascend.inference.plugins.module_utils.plan import summary


def _current(path):
    try:
        with open(path) as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def _diff(path, before, after):
    if path.endswith(".svg"):
        return {"prepared": "%s redrawn from the plan (%s -> %d bytes)\n"
                % (path, "%d" % len(before) if before is not None else "new", len(after))}
    return {"before_header": path, "after_header": path, "before": before or "", "after": after}


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            plan=dict(type="dict", required=True),
            mode=dict(type="raw", default="0644"),
        ),
        supports_check_mode=True,
    )
    directory, plan = module.params["path"], module.params["plan"]
    if not isinstance(plan.get("nodes") or plan.get("instances"), dict) or not isinstance(plan.get("cluster"), dict):
        module.fail_json(msg="plan must be the result of ascend.inference.parallel_plan (with cluster, and nodes or "
                             "instances)")
    written, diffs, mode_changed = [], [], False
    if not os.path.isdir(directory) and not module.check_mode:
        os.makedirs(directory, 0o755)
    for name, text in sorted(node_documents(plan).items()):
        path = os.path.join(directory, name)
        before = _current(path)
        if before != text:
            written.append(path)
            diffs.append(_diff(path, before, text))
            if not module.check_mode:
                # Whole files or none: a reader never sees half a plan.
                tmp = path + ".tmp"
                with open(tmp, "w") as handle:
                    handle.write(text)
                module.atomic_move(tmp, path)
        if os.path.exists(path) and module.set_mode_if_different(path, module.params["mode"], False):
            mode_changed = True
    result = {"changed": bool(written) or mode_changed, "written": written, "layout": render_text(plan),
              "summary": summary.render(plan)}
    if module._diff:
        result["diff"] = diffs
    module.exit_json(**result)


if __name__ == "__main__":
    main()
