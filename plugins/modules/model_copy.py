#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# The work is done by the action plugin of the same name (plugins/action/model_copy.py).

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: model_copy
short_description: One node's part of the model's copy - in rounds or through the swarm - and the controller's aria2
version_added: 0.1.0
description:
  - Runs on every node of a run at once (one task), each with its O(transfer) from
    C(ascend.inference.model_schedule). A node waits until the nodes in its C(wait_for) are done - its sender,
    when that node receives in this run too, and the sender's previous receiver, so that a node sends to one node at
    a time and the rounds hold. The nodes' tasks learn of each other through files in O(status_dir) on the
    controller, so a failed sender fails its receivers at once instead of leaving them waiting.
  - "The copy: from the controller, rsync runs on the controller over the node's own connection (C(ssh) with its
    port, user, key and SSH arguments; C(podman exec -i) or C(docker exec -i); local) - root through C(sudo -n)
    where the connection becomes root that way; from another node, M(ascend.inference.model_transfer) fetches from
    that node's daemon. Files arrive with their times and mode 0644 (directories 0755); a file cut off by an
    interruption is kept in C(.ascend-model-partial) and resumed by the next run."
  - While it copies it prints the bytes of the model the node holds and the rate, such as C(node2 - model, round 2,
    from node1 - 120.0 MB of 300.0 MB (40%), 25.0 MB/s), every O(progress_every) seconds, and at the end what was
    sent and what the node had already (a resumed file).
  - Then every file is hashed (M(ascend.inference.model_check), the full check) and the node's record written;
    only then, when later rounds need it, the node serves the model itself (M(ascend.inference.model_transfer)).
  - "With O(pipeline) (the pipelined copy): follows the node's aria2, started by
    M(ascend.inference.model_transfer) with every other node's, until it holds every piece - a progress line
    every O(progress_every) seconds naming the holders sending, a warning naming a holder that sent and went
    silent for C(stall_timeout) seconds (aria2 takes its pieces from the others), its own aria2 started again once
    when it stops answering for twice that long, a failure after O(io_timeout) seconds without a byte. Every piece was
    checked as it arrived: the look that sees the end writes the record from the quick check, without hashing the
    files again. Then the node sends on while a peer that lacks pieces is connected to it, and stops its own aria2
    and removes the copy's secrets (RV(cleaned)). It leaves that to the cleanup after the copy on the tracker's
    node (the tracker is the controller's when it sends), after it named a stalled holder (whose aria2, started
    again, finds the nodes that stayed), and when those peers' pieces do not change for C(stall_timeout) seconds."
  - "O(controller_seed) V(start) (once for the run): makes the model's torrent from O(manifest) (the pieces' SHA-1
    read once per manifest digest and kept in O(cache)), then the swarm's tracker (python3's C(http.server), one
    fixed reply listing the controller, C(holders) and every node of O(addresses)) on C(tracker_port) and aria2
    seeding O(source) on O(port), both on the address the controller's route to the first node takes, until
    V(stop) (with O(seed_dir)) or the end of ansible-playbook."
extends_documentation_fragment:
  - ascend.inference.model_copy.transfer
author:
  - ascend.inference contributors (@ascend-inference)
attributes:
  action:
    description: Runs on the controller; executes M(ascend.inference.model_transfer) and M(ascend.inference.model_check)
      on the node, and rsync on the controller for a copy from there.
    support: full
  check_mode:
    description: Says which node would send the model and copies nothing.
    support: full
  diff_mode:
    description: There is nothing to diff.
    support: none
options:
  transfer:
    description: This node's entry of the schedule (C(host), C(seeder), C(round), C(wait_for), C(serves)); omitted, the
      node holds the model and the task skips.
    type: dict
  addresses:
    description: Every node's cluster address by inventory name.
    type: dict
    default: {}
  path:
    description: The model directory on the node (C(ascend_model)).
    type: str
    required: true
  manifest:
    description: The model's manifest (M(ascend.inference.model_manifest)).
    type: dict
    default: {}
  record:
    description: The node's record of the model, written after the full check.
    type: str
    default: ""
  port:
    description: The transfer daemons' port (aria2's peer port in the pipelined copy).
    type: int
    default: 8730
  pipeline:
    description: The pipelined copy - C(torrent) (base64), C(control_port) (aria2's JSON-RPC on loopback),
      C(tracker) and C(tracker_port) (the swarm's tracker), C(holders) (the addresses of the nodes that hold the
      model), C(stall_timeout) and C(names) (inventory names by address).
    type: dict
  cache:
    description: O(controller_seed=start) - the file that keeps the pieces' SHA-1 of the manifest.
    type: str
    default: ""
  seed_dir:
    description: O(controller_seed=stop) - the directory RV(seed_dir) that V(start) returned.
    type: str
    default: ""
  controller_seed:
    description: V(start) or V(stop) the controller's aria2 (a pipelined copy from the controller).
    type: str
    choices: [start, stop]
  password:
    description: This run's transfer password; never shown, written to 0600 files on the nodes only.
    type: str
    required: true
  status_dir:
    description: A directory on the controller, the same for every node of the run (copies in rounds; the
      pipelined copy needs none).
    type: str
    default: ""
  source:
    description: The model's directory on the controller, for a node whose C(seeder) is null.
    type: str
  interval:
    description: Seconds between two looks at the copy.
    type: int
    default: 2
  progress_every:
    description: Seconds between two progress lines.
    type: int
    default: 10
"""

EXAMPLES = r"""
- name: Copy the model, round by round
  ascend.inference.model_copy:
    transfer: "{{ model_schedule.transfers | selectattr('host', 'eq', inventory_hostname) | first }}"
    addresses: {node1: 192.0.2.11, node2: 192.0.2.12}
    path: /models/Qwen2.5-7B-Instruct
    manifest: "{{ model_manifest }}"
    record: /etc/ascend-inference/model.manifest.json
    port: 8730
    password: "{{ model_copy_password }}"
    status_dir: /tmp/ascend-model-x1y2z3
    source: /data/models/Qwen2.5-7B-Instruct
  when: inventory_hostname in model_schedule.transfers | map(attribute='host')
"""

RETURN = r"""
copied_from:
  description: The sender - a node's inventory name, or V(controller).
  returned: when a copy ran or would run
  type: str
round:
  description: The copy's round.
  returned: when a copy ran
  type: int
seconds:
  description: How long the copy took (without the wait for its turn).
  returned: when a copy ran
  type: int
bytes_sent:
  description: Bytes rsync sent as data (null when it did not say); pipelined, the bytes the node fetched (the
    model's size less what it held, checked).
  returned: when a copy ran
  type: int
bytes_reused:
  description: Bytes rsync did not send because the node had them - the part of a file cut off by an interruption
    (resumed), or an earlier version of a file.
  returned: when a copy ran
  type: int
files_transferred:
  description: Files rsync transferred.
  returned: when a copy ran in rounds
  type: int
stalled:
  description: Holders that sent to the node and went silent (pipelined copy).
  returned: when a pipelined copy ran
  type: list
  elements: str
restarted:
  description: How often the node's own aria2 was started again after it stopped answering (pipelined copy).
  returned: when a pipelined copy ran
  type: int
cleaned:
  description: Whether the node stopped its own aria2 and removed the copy's secrets, once no peer that lacked
    pieces was connected to it (pipelined copy).
  returned: when a pipelined copy ran
  type: bool
address:
  description: The controller's address the nodes fetch from and ask its tracker at (O(controller_seed=start)).
  returned: with O(controller_seed=start)
  type: str
seed_dir:
  description: The controller's aria2's own directory (0700), for O(controller_seed=stop).
  returned: with O(controller_seed=start)
  type: str
torrent:
  description: The model's torrent, base64, for the nodes (O(controller_seed=start)). The task's result is
    hidden, since the torrent holds the run's password.
  returned: with O(controller_seed=start)
  type: str
"""
