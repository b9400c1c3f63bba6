#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: model_manifest
short_description: The manifest of a model directory at its source - every file's path, size and sha256
version_added: 0.1.0
description:
  - Walks O(path) (links followed, rsync's partial directories and temporary files left out) and returns every
    regular file's path, size, modification time and sha256, their count and bytes, and one digest over them.
  - A model is hashed once - a file whose size and modification time equal those in O(cache) keeps the sha256
    recorded there; only new or changed files are read. O(rehash) reads every file again (the full check at the
    source) and names the files whose content changed under the same size and time.
  - Runs where the model's source is - on the controller (C(delegate_to) V(localhost)) for a directory there, on
    the head for a model already on it.
extends_documentation_fragment:
  - ascend.inference.model_copy.hashing
author:
  - ascend.inference contributors (@ascend-inference)
attributes:
  check_mode:
    description: In check mode files the cache does not cover are not hashed (their sha256 and the digest are
      null, their sizes are known) and the cache is not written.
    support: full
  diff_mode:
    description: There is nothing to diff.
    support: none
options:
  path:
    description: The model directory.
    type: path
    required: true
  cache:
    description: A JSON file holding an earlier manifest of O(path) (this module's, or a node's record of the model).
    type: path
  save:
    description: Write the manifest to O(cache) when it changed (a directory on the controller, say).
    type: bool
    default: false
  rehash:
    description: Hash every file again instead of trusting O(cache) for files of the same size and time.
    type: bool
    default: false
  missing_ok:
    description: Where O(path) holds no file, return a null manifest instead of failing (check mode before a hub
      download).
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: The manifest of the model on the controller, hashed once
  ascend.inference.model_manifest:
    path: /data/models/Qwen2.5-7B-Instruct
    cache: ~/.cache/ascend-inference/model-manifests/Qwen2.5-7B-Instruct.json
    save: true
  delegate_to: localhost
  run_once: true
  register: model_source_manifest
"""

RETURN = r"""
manifest:
  description: C(format), C(files) (each C(path), C(size), C(mtime_ns), C(sha256)), C(count), C(bytes), C(digest);
    null where O(missing_ok) let a missing model pass.
  returned: always
  type: dict
  sample:
    format: 1
    files: [{path: config.json, size: 644, mtime_ns: 1733130000000000000, sha256: 9f86d0...}]
    count: 1
    bytes: 644
    digest: 2c26b4...
hashed:
  description: Files read and hashed by this run.
  returned: always
  type: int
reused:
  description: Files whose sha256 came from O(cache).
  returned: always
  type: int
content_changed:
  description: With O(rehash), files whose content is not the one O(cache) recorded although size and time are.
  returned: always
  type: list
  elements: str
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ascend.inference.plugins.module_utils.model import files as model_files
from ansible_collections.ascend.inference.plugins.module_utils.node.readers import read


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            cache=dict(type="path"),
            save=dict(type="bool", default=False),
            rehash=dict(type="bool", default=False),
            missing_ok=dict(type="bool", default=False),
            workers=dict(type="int", default=0),
        ),
        supports_check_mode=True,
    )
    path, cache = module.params["path"].rstrip("/") or "/", module.params["cache"]
    broken = []
    found = model_files.walk(path, broken) if os.path.isdir(path) else {}
    if not found:
        if module.params["missing_ok"]:
            module.exit_json(changed=False, manifest=None, hashed=0, reused=0, content_changed=[])
        module.fail_json(msg="%s does not exist or holds no file" % path)
    if broken:
        # rsync --copy-links stops on them: say so before any copy starts.
        module.fail_json(msg="%s holds links that lead nowhere: %s; remove them" % (path, ", ".join(sorted(broken))))
    cached = model_files.read_record(read(cache), path) if cache else None
    hasher = None
    if not module.check_mode:
        def hasher(paths):
            return model_files.hash_files(path, paths, module.params["workers"])
    manifest, cost = model_files.build_manifest(found, cached, module.params["rehash"], hasher)
    if cost["unreadable"]:
        module.fail_json(msg="%s: cannot read %s" % (path, ", ".join(cost["unreadable"])))
    changed = False
    saved = model_files.record(manifest, path)
    if cache and module.params["save"] and not module.check_mode and saved != cached:
        directory = os.path.dirname(cache)
        if not os.path.isdir(directory):
            os.makedirs(directory, 0o700)
        temporary = cache + ".tmp"
        with open(temporary, "w") as handle:
            json.dump(saved, handle, sort_keys=True)
        os.rename(temporary, cache)
        changed = True
    module.exit_json(changed=changed, manifest=manifest, hashed=cost["hashed"], reused=cost["reused"],
                     content_changed=cost["changed"])


if __name__ == "__main__":
    main()
