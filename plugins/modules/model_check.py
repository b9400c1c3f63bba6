#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: model_check
short_description: Check a node's copy of the model against its manifest, and record it when it matches
version_added: 0.1.0
description:
  - The quick check compares the files under O(path) with the manifest by names and sizes - files missing, of
    another size, or not in the manifest. The full check also hashes every file of the right size and names
    those whose sha256 differs.
  - O(hash) V(auto) runs the full check where the node's record (O(record)) does not hold this manifest yet, so
    a node is hashed once for each model it gets and quick-checked on every later run.
  - It names what a copy replaces (RV(removable)) - files whose size or content is wrong (rsync would keep a
    file of the right size and time), rsync's temporary files left by a copy that was cut off, and, with
    O(remove_extra), files the manifest does not hold - and removes nothing unless O(prepare), which creates
    the model directory (root, 0755) where it is missing and removes the files O(remove) names (RV(removable)
    of an earlier call, once the run has decided to copy).
  - When the files match (and were hashed, or O(hash) is V(never) - the source's own files), the manifest and
    O(path) are written to O(record), which the preflight and later runs read.
extends_documentation_fragment:
  - ascend.inference.model_copy.hashing
author:
  - ascend.inference contributors (@ascend-inference)
attributes:
  check_mode:
    description: Checks and hashes as in a real run; removes nothing and writes no record, and says what it would.
    support: full
  diff_mode:
    description: Shows the record's manifest digest and file count before and after, and the files it removes.
    support: full
options:
  path:
    description: The model directory on the node (C(ascend_model)).
    type: path
    required: true
  manifest:
    description: The manifest (M(ascend.inference.model_manifest)'s C(manifest)).
    type: dict
    required: true
  record:
    description: The node's record of the model it holds.
    type: path
    required: true
  hash:
    description: V(always) - the full check; V(never) - the quick check only; V(auto) - the full check where the
      record does not hold this manifest.
    type: str
    choices: [auto, always, never]
    default: auto
  remove_extra:
    description: Count files the manifest does not hold among RV(removable) instead of RV(extra).
    type: bool
    default: false
  prepare:
    description: Make the node ready for a copy - create the model directory, remove the files of O(remove).
    type: bool
    default: false
  remove:
    description: With O(prepare), files to remove, relative to O(path) (an earlier call's RV(removable)).
    type: list
    elements: str
    default: []
  keep_partial:
    description: With O(prepare), keep the manifest's files that are shorter than they should be or of the right
      size with wrong content - the pipelined copy checks them piece by piece and fetches only the bad pieces.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Check the node's model, hashing it where it was not checked against this manifest
  ascend.inference.model_check:
    path: /models/Qwen2.5-7B-Instruct
    manifest: "{{ model_source_manifest.manifest }}"
    record: /etc/ascend-inference/model.manifest.json
  register: model_node
"""

RETURN = r"""
complete:
  description: Every manifest file is there with its size (and, where hashed, its sha256).
  returned: always
  type: bool
missing:
  description: Manifest files the node lacks.
  returned: always
  type: list
  elements: str
wrong_size:
  description: Manifest files of another size, each C(path), C(size), C(expected).
  returned: always
  type: list
  elements: dict
corrupt:
  description: Files whose sha256 is not the manifest's (full check only).
  returned: always
  type: list
  elements: str
extra:
  description: Files under O(path) the manifest does not hold and that stay (not O(remove_extra)); they stop a run.
  returned: always
  type: list
  elements: str
removable:
  description: What a copy replaces or O(remove_extra) removes - files of the wrong size or content, rsync's
    temporary files of a copy cut off (while no copy runs), extra files with O(remove_extra).
  returned: always
  type: list
  elements: str
removed:
  description: Files O(prepare) removed (in check mode, would remove).
  returned: always
  type: list
  elements: str
exists:
  description: Whether the model directory existed.
  returned: always
  type: bool
leftovers:
  description: Whether a copy's configuration or secrets are on the node (a run killed before its cleanup).
  returned: always
  type: bool
bytes_missing:
  description: Bytes a copy must bring (missing files and files of another size or content).
  returned: always
  type: int
free_bytes:
  description: Bytes free for unprivileged use on the file system that holds (or will hold) O(path).
  returned: always
  type: int
hashed:
  description: Whether the files were hashed (the full check ran).
  returned: always
  type: bool
recorded:
  description: Whether O(record) holds this manifest after the run (written now or before).
  returned: always
  type: bool
rsync:
  description: Whether rsync is installed on the node (a copy in rounds needs it).
  returned: always
  type: bool
aria2:
  description: Whether aria2c is installed on the node (the pipelined copy needs it).
  returned: always
  type: bool
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ascend.inference.plugins.module_utils.model import files as model_files
from ansible_collections.ascend.inference.plugins.module_utils.node.readers import read
from ansible_collections.ascend.inference.plugins.module_utils.runtime import unit_names


def _free_bytes(path):
    while path and not os.path.exists(path):
        path = os.path.dirname(path)
    info = os.statvfs(path or "/")
    return info.f_bavail * info.f_frsize


def _remove(path, names):
    for name in names:
        try:
            os.unlink(os.path.join(path, name))
        except OSError as exc:
            if os.path.exists(os.path.join(path, name)):
                raise RuntimeError("cannot remove %s: %s" % (os.path.join(path, name), exc))


def _fetching(module):
    systemctl = module.get_bin_path("systemctl")
    if not systemctl:
        return False
    rc, _out, _err = module.run_command([systemctl, "is-active", "--quiet", unit_names.MODEL_FETCH])
    return rc == 0


def _summary(data):
    return "digest %s, %d files\n" % (data["digest"], data["count"]) if data else "no record\n"


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            manifest=dict(type="dict", required=True),
            record=dict(type="path", required=True),
            hash=dict(type="str", choices=["auto", "always", "never"], default="auto"),
            remove_extra=dict(type="bool", default=False),
            prepare=dict(type="bool", default=False),
            remove=dict(type="list", elements="str", default=[]),
            keep_partial=dict(type="bool", default=False),
            workers=dict(type="int", default=0),
        ),
        supports_check_mode=True,
    )
    params = module.params
    path, manifest = params["path"].rstrip("/") or "/", params["manifest"]
    if os.path.lexists(path) and not os.path.isdir(path):
        module.fail_json(msg="%s exists and is not a directory: the model goes there" % path)
    exists = os.path.isdir(path)
    removed = []
    if params["prepare"]:
        # First, so that what it answers is the directory as the copy finds it.
        sizes = dict((entry["path"], entry["size"]) for entry in manifest["files"])
        removed = sorted(name for name in params["remove"]
                         if not os.path.isabs(name) and ".." not in name.split(os.sep)
                         and os.path.isfile(os.path.join(path, name))
                         and not (params["keep_partial"] and name in sizes
                                  and os.path.getsize(os.path.join(path, name)) <= sizes[name]))
        if not module.check_mode:
            if not exists:
                model_files.make_model_dir(path)
            try:
                _remove(path, removed)
            except RuntimeError as exc:
                module.fail_json(msg=str(exc))
    found = model_files.walk(path) if os.path.isdir(path) else {}
    if module.check_mode:
        found = dict((name, entry) for name, entry in found.items() if name not in removed)
    result = model_files.compare(manifest, found)
    earlier = model_files.read_record(read(params["record"]), path)
    hashes_known = bool(manifest.get("digest"))
    mode = params["hash"]
    hashed = hashes_known and (mode == "always" or (mode == "auto" and (earlier or {}).get("digest") != manifest["digest"]))
    corrupt = []
    if hashed:
        sizes_ok = [f for f in manifest["files"] if f["path"] in found and found[f["path"]][0] == f["size"]]
        sums = model_files.hash_files(path, [f["path"] for f in sizes_ok], params["workers"])
        corrupt = [f["path"] for f in sizes_ok if sums.get(f["path"]) != f["sha256"]]
        result["bytes_missing"] += sum(f["size"] for f in sizes_ok if f["path"] in corrupt)
    # rsync's temporary files are garbage unless a copy (of an interrupted run) is still writing them.
    stale = result["transient"] if not _fetching(module) else []
    removable = sorted(corrupt + [w["path"] for w in result["wrong_size"]] + stale
                       + (result["extra"] if params["remove_extra"] else []))
    # Extra files stop the run unless remove_extra lets a copy's preparation remove them.
    extra = [name for name in result["extra"] if name not in removable]
    complete = not (result["missing"] or result["wrong_size"] or corrupt)
    saved = model_files.record(manifest, path)
    trusted = hashed or mode == "never"
    created = params["prepare"] and not exists
    changed = bool(removed) or created
    recorded = earlier == saved
    if complete and not result["extra"] and hashes_known and trusted and not recorded:
        changed = recorded = True
        if not module.check_mode:
            model_files.write_record(params["record"], saved)
    diff = {"before_header": params["record"], "after_header": params["record"],
            "before": _summary(earlier), "after": _summary(saved if recorded else earlier)}
    if removed:
        diff["before"] += "".join("%s\n" % name for name in removed)
    if created:
        diff["after"] += "%s/ created\n" % path
    module.exit_json(changed=changed, complete=complete, exists=exists, missing=result["missing"],
                     wrong_size=result["wrong_size"], corrupt=corrupt, extra=extra, removable=removable,
                     removed=removed, bytes_missing=result["bytes_missing"], free_bytes=_free_bytes(path),
                     hashed=bool(hashed), recorded=recorded, rsync=module.get_bin_path("rsync") is not None,
                     aria2=module.get_bin_path("aria2c") is not None,
                     leftovers=os.path.exists(model_files.RUNTIME_DIR), diff=diff)


if __name__ == "__main__":
    main()
