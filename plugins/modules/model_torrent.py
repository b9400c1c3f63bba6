#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: model_torrent
short_description: The model's private torrent for the pipelined copy, made where the model comes from
version_added: 0.1.0
description:
  - Makes a private BitTorrent metainfo (BEP 3, BEP 27) of the manifest's files under O(path), in the manifest's
    order, whose top directory is O(name) (the model directory's name on the nodes). aria2 checks every piece
    against its SHA-1 as it arrives.
  - The pieces' SHA-1 are read once per manifest and kept in O(cache); a later run with the same manifest reads
    no file. O(nonce) (the run's password) goes into the info dictionary, so the info hash, which a peer must
    present to be served, is new each run and known only to the run's members.
author:
  - ascend.inference contributors (@ascend-inference)
attributes:
  check_mode:
    description: Makes nothing (a run with --check copies nothing).
    support: full
  diff_mode:
    description: There is nothing to diff.
    support: none
options:
  path:
    description: The model's directory where it comes from (the controller's O(path) or the head's C(ascend_model)).
    type: path
    required: true
  manifest:
    description: The model's manifest (M(ascend.inference.model_manifest)), with C(files) and C(digest).
    type: dict
    required: true
  name:
    description: The torrent's top directory, the model directory's name on the nodes.
    type: str
    required: true
  tracker:
    description: The tracker's address (the torrent announces to C(http://tracker:tracker_port/announce)).
    type: str
    required: true
  tracker_port:
    description: The tracker's port.
    type: int
    required: true
  nonce:
    description: A secret of this run, part of the info hash.
    type: str
    required: true
  cache:
    description: Where the pieces' SHA-1 are kept, for the manifest they were read for.
    type: path
    required: true
"""

EXAMPLES = r"""
- name: Make the model's torrent on the head
  ascend.inference.model_torrent:
    path: /models/Qwen2.5-7B-Instruct
    manifest: "{{ model_manifest }}"
    name: Qwen2.5-7B-Instruct
    tracker: 192.0.2.11
    tracker_port: 8731
    nonce: "{{ model_copy_password }}"
    cache: /etc/ascend-inference/model.pieces
  no_log: true
"""

RETURN = r"""
torrent:
  description: The torrent, base64.
  returned: success, not in check mode
  type: str
info_hash:
  description: Its info hash (hex).
  returned: success, not in check mode
  type: str
piece_length:
  description: Bytes per piece.
  returned: success, not in check mode
  type: int
pieces:
  description: How many pieces.
  returned: success, not in check mode
  type: int
hashed:
  description: Whether the files were read (false when the cache held this manifest's pieces).
  returned: success, not in check mode
  type: bool
"""

import base64

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ascend.inference.plugins.module_utils.model import swarm
from ansible_collections.ascend.inference.plugins.module_utils.model import torrent


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            manifest=dict(type="dict", required=True),
            name=dict(type="str", required=True),
            tracker=dict(type="str", required=True),
            tracker_port=dict(type="int", required=True),
            nonce=dict(type="str", required=True, no_log=True),
            cache=dict(type="path", required=True),
        ),
        supports_check_mode=True,
    )
    params = module.params
    if module.check_mode:
        module.exit_json(changed=False)
    try:
        meta, hashed, length, count = torrent.for_manifest(
            params["path"], params["manifest"], params["name"],
            swarm.announce_url(params["tracker"], params["tracker_port"]), params["nonce"], params["cache"])
    except (IOError, OSError) as exc:
        module.fail_json(msg="cannot read the model at %s: %s" % (params["path"], exc))
    module.exit_json(changed=False, torrent=base64.b64encode(meta).decode(), info_hash=torrent.info_hash(meta),
                     piece_length=length, pieces=count, hashed=hashed)


if __name__ == "__main__":
    main()
