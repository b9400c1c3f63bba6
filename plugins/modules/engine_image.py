#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: engine_image
short_description: Put the engine image on an Ascend node and read what it holds
version_added: 0.2.0
description:
  - Finds the container engine (O(engine)), makes sure the node has O(image) - pulled from its registry
    when missing (O(pull)), or loaded from a C(podman save) / C(docker save) archive on the node when
    the node's image is not the archive's (O(archive)) - and reads, inside the image, what the
    collection depends on - the engine's, vLLM's and Ray's releases from their package metadata,
    Python's release, the CANN toolkit's install files and the CANN environment scripts.
  - The inspection runs C(python3) in a throw-away container without network.
author:
  - ascend.inference contributors (@ascend-inference)
attributes:
  check_mode:
    description: Reports whether it would pull or load, and what a present image holds; changes nothing.
    support: full
  diff_mode:
    description: Images have no diff.
    support: none
options:
  engine:
    description: The container engine; V(auto) takes podman where it is on PATH, else docker.
    type: str
    choices: [auto, podman, docker]
    default: auto
  image:
    description: The image reference (name and tag).
    type: str
    required: true
  pull:
    description: Pull O(image) when the node does not have it.
    type: bool
    default: false
  archive:
    description:
      - A C(podman save) / C(docker save) archive on the node holding O(image); loaded when the node has no
        image by that name or another image than the archive's (its ID, from the archive's manifest).
    type: path
  inspect:
    description: Read the releases and CANN files inside the image.
    type: bool
    default: true
  expect_id:
    description:
      - The image ID the node will have once an archive from the controller is sent and loaded (read by the action
        plugin only). In check mode, a node whose image is another is recorded as one that would load it.
    type: str
  run:
    description: How the phases that run the image run it (read by the action plugin only, kept with what was found) -
      C(cache_dir), C(shm_size), C(extra_args), C(stop_timeout).
    type: dict
notes:
  - What it found is kept as the fact C(ascend_applied.image) (C(program), C(kind), C(id), C(archive_id), C(action),
    C(inside), C(error), C(run)), which the ray and serve phases read in container mode.
"""

EXAMPLES = r"""
- name: Load the engine image from an archive on the node and read it
  ascend.inference.engine_image:
    image: quay.io/ascend/vllm-ascend:v0.23.0
    archive: /srv/images/vllm-ascend-v0.23.0.tar
  register: engine_image
"""

RETURN = r"""
program:
  description: The container engine's path (null when none is installed).
  returned: always
  type: str
  sample: /usr/bin/podman
kind:
  description: V(podman) or V(docker).
  returned: always
  type: str
id:
  description: The node's image ID for O(image) after any pull or load (null when it has none).
  returned: always
  type: str
  sample: 0f3c2a61b0a8d4f1e0b1a7f5c9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0
archive_id:
  description: The image ID of O(archive), null without one.
  returned: always
  type: str
action:
  description: What was done (or, in check mode, would be) - V(none), V(pulled) or V(loaded).
  returned: always
  type: str
inside:
  description:
    - What the image holds (null when it is not on the node or O(inspect) is false) - C(python),
      C(versions) by distribution (C(vllm), C(vllm-ascend), C(vllm-mindspore), C(ray); null when not
      installed), C(files) (the CANN install files by path) and C(set_env) (the CANN environment scripts).
  returned: always
  type: dict
error:
  description: Why the image could not be read or put in place, else null.
  returned: always
  type: str
"""

import json

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ascend.inference.plugins.module_utils.runtime import container
from ansible_collections.ascend.inference.plugins.module_utils.node.readers import image_archive
from ansible_collections.ascend.inference.plugins.module_utils.node.readers import run as _run


def _program(module, engine):
    for name in (["podman", "docker"] if engine == "auto" else [engine]):
        path = module.get_bin_path(name)
        if path:
            return path, name
    return None, None


def _image_id(module, program, image):
    rc, out, _err = _run(module, [program, "image", "inspect", "--format", "{{.Id}}", image])
    return out.strip().splitlines()[0] if rc == 0 and out.strip() else None


def main():
    module = AnsibleModule(
        argument_spec=dict(
            engine=dict(type="str", default="auto", choices=list(container.CONTAINER_ENGINES)),
            image=dict(type="str", required=True),
            pull=dict(type="bool", default=False),
            archive=dict(type="path"),
            inspect=dict(type="bool", default=True),
            # Read by the action plugin, which does not pass it on.
            expect_id=dict(type="str"),
            run=dict(type="dict"),
        ),
        supports_check_mode=True,
    )
    params = module.params
    result = {"changed": False, "program": None, "kind": None, "id": None, "archive_id": None,
              "action": "none", "inside": None, "error": None}
    program, kind = _program(module, params["engine"])
    if not program:
        result["error"] = "no container engine found (%s)" % (
            "podman or docker" if params["engine"] == "auto" else params["engine"])
        module.exit_json(**result)
    result.update(program=program, kind=kind)
    image = params["image"]
    node_id = _image_id(module, program, image)
    if params["archive"]:
        try:
            result["archive_id"] = image_archive(params["archive"])[0]
        except ValueError as exc:
            result["error"] = "cannot read the image archive %s: %s" % (params["archive"], exc)
            module.exit_json(**result)
        if not container.same_image(node_id, result["archive_id"]):
            result.update(changed=True, action="loaded")
            if not module.check_mode:
                rc, out, err = _run(module, [program, "load", "--input", params["archive"]])
                if rc != 0:
                    module.fail_json(msg="%s load --input %s failed (rc %d): %s"
                                     % (program, params["archive"], rc, (err or out).strip()[-500:]), **result)
                node_id = _image_id(module, program, image)
                if not container.same_image(node_id, result["archive_id"]):
                    module.fail_json(msg="%s holds image %s but %s is %s after loading it: the archive does not "
                                     "hold ascend_container_image (its tags name another image)" % (
                                         params["archive"], container.short_id(result["archive_id"]), image,
                                         container.short_id(node_id) or "not there"), **result)
    elif params["pull"] and node_id is None:
        result.update(changed=True, action="pulled")
        if not module.check_mode:
            rc, out, err = _run(module, [program, "pull", image])
            if rc != 0:
                module.fail_json(msg="%s pull %s failed (rc %d): %s" % (program, image, rc, (err or out).strip()[-500:]),
                                 **result)
            node_id = _image_id(module, program, image)
    result["id"] = node_id
    if node_id and params["inspect"]:
        rc, out, err = _run(module, [program, "run", "--rm", "--net=none", "--entrypoint=python3", image]
                            + container.inspect_argv())
        try:
            result["inside"] = json.loads(out.strip().splitlines()[-1]) if rc == 0 else None
        except (ValueError, IndexError):
            result["inside"] = None
        if result["inside"] is None:
            result["error"] = "python3 in %s could not tell its releases (rc %d): %s" % (
                image, rc, (err or out).strip()[-300:])
    module.exit_json(**result)


if __name__ == "__main__":
    main()
