# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: image_archive
short_description: The image ID and tags of a container image archive on the controller
version_added: 0.2.0
description:
  - Reads the C(manifest.json) of a C(podman save) / C(docker save) archive (an uncompressed tar) without
    unpacking it, so that a node whose image already is the archive's is not sent hundreds of gigabytes.
  - The image ID is the digest of the image's config, as C(podman images) and C(docker images) show it.
options:
  _terms:
    description: Paths of archives on the controller.
    required: true
    type: list
    elements: path
author:
  - ascend.inference contributors (@ascend-inference)
"""

EXAMPLES = r"""
- name: Show the archive's image ID
  ansible.builtin.debug:
    msg: "{{ lookup('ascend.inference.image_archive', '/srv/images/vllm-ascend-v0.23.0.tar').id }}"
"""

RETURN = r"""
_raw:
  description: One mapping per archive with C(id) (C(sha256:<hex>)) and C(tags).
  type: list
  elements: dict
"""

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.ascend.inference.plugins.module_utils.node import readers


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        found = []
        for path in terms:
            try:
                image_id, tags = readers.image_archive(path)
            except ValueError as exc:
                raise AnsibleLookupError("engine_container_archive %s is not a podman/docker image archive: %s"
                                         % (path, exc))
            found.append({"id": image_id, "tags": tags})
        return found
