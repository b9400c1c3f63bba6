# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""inventory_type_problems: the planner's inventory variables checked for type on every host at once."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import yaml

from ansible_collections.ascend.inference.plugins.module_utils import inventory_types

# The plan role's argument spec is the one source of the cluster variables' types.
PLAN_SPEC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "roles", "plan", "meta",
                         "argument_specs.yml")


def inventory_type_problems(hostvars, hosts):
    with open(PLAN_SPEC) as handle:
        options = yaml.safe_load(handle)["argument_specs"]["main"]["options"]
    wanted = set(options) | set(inventory_types.HOST_VARIABLES)
    values = {}
    for host in hosts:
        host_vars = hostvars[host]
        values[host] = dict((name, host_vars[name]) for name in wanted if name in host_vars)
    return inventory_types.problems(values, options)


class FilterModule(object):
    def filters(self):
        return {"inventory_type_problems": inventory_type_problems}
