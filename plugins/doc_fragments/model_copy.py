# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # How the model role's modules hash files (model_manifest, model_check).
    HASHING = r"""
options:
  workers:
    description: Files hashed at once; 0 means one per CPU, at most 8.
    type: int
    default: 0
"""

    # How a copy of the model runs (model_transfer, model_copy).
    TRANSFER = r"""
options:
  bwlimit:
    description: rsync's C(--bwlimit) for a copy (for example V(100M), bytes per second); empty means none.
    type: str
    default: ""
  io_timeout:
    description: Seconds without data after which rsync gives up.
    type: int
    default: 600
  lifetime:
    description: Seconds after which systemd stops a transfer daemon or fetch whatever happens (C(RuntimeMaxSec=)).
    type: int
    default: 86400
"""
