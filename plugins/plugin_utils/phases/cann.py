# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cann role's first decision, on the controller (logic in module_utils/node/cann_install.py): where each package comes from and
where the node keeps it (cann_stage, its answer registered), refused naming what is wrong with cann_packages."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.ascend.inference.plugins.module_utils.node import cann_install
from ansible_collections.ascend.inference.plugins.plugin_utils.phases.phase import Refused

SETTINGS = {"packages": "list", "work_dir": "str"}


def stage(node, settings):
    """settings: packages (cann_packages), work_dir."""
    if not settings["packages"]:
        raise Refused("%s: cann_packages is empty" % node.host)
    staged, problems = cann_install.stage_plan(settings["packages"], settings["work_dir"])
    if problems:
        raise Refused("%s: %s" % (node.host, "; ".join(problems)))
    return {"apply": None, "record": None, "result": {"packages": staged}}
