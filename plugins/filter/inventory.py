# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""inventory_type_problems: every variable of the collection's roles, and the planner's host variables,
checked for type on every host at once."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import os

import yaml

from ansible.errors import AnsibleError

from ansible_collections.ascend.inference.plugins.module_utils import inventory_types

ROLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "roles")
# The plan role's argument spec types the cluster variables; the other roles' specs their own.
PLAN_SPEC = os.path.join(ROLES, "plan", "meta", "argument_specs.yml")


def role_options():
    """{variable: argument-spec option} over every entry point of every role, the plan role's first."""
    options = {}
    for path in [PLAN_SPEC] + sorted(glob.glob(os.path.join(ROLES, "*", "meta", "argument_specs.yml"))):
        with open(path) as handle:
            specs = yaml.safe_load(handle)["argument_specs"]
        for name in sorted(specs):
            for variable, option in (specs[name].get("options") or {}).items():
                options.setdefault(variable, option)
    return options


def _unresolved(value):
    """Whether a value is template text that ansible-core 2.18 gave back unresolved instead of raising."""
    return isinstance(value, str) and ("{{" in value or "{%" in value)


def inventory_type_problems(hostvars, hosts):
    options = role_options()
    wanted = set(options) | set(inventory_types.HOST_VARIABLES) | set(inventory_types.RENAMED)
    values = {}
    for host in hosts:
        host_vars = hostvars[host]
        values[host] = {}
        for name in wanted:
            if name in host_vars:  # set by the inventory or -e: role defaults are not host variables
                try:
                    value = host_vars[name]
                except AnsibleError:
                    continue  # a template that cannot be resolved yet (2.19): the role's own spec judges it later
                if not _unresolved(value):
                    values[host][name] = value
    return inventory_types.problems(values, options)


class FilterModule(object):
    def filters(self):
        return {"inventory_type_problems": inventory_type_problems}
