# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The inventory as the plan reads it, on the controller: every variable of the collection's roles and the
planner's host variables checked for type on every host at once (one message naming each variable and host,
before any role's own argument spec), and the groups the plan needs."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import os

import yaml

from ansible.errors import AnsibleError

from ansible_collections.ascend.inference.plugins.module_utils.plan import inventory_types

ROLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "roles")
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


def type_problems(hostvars, hosts):
    """Sentences naming every variable of the wrong type and the hosts that set it (inventory or -e: role
    defaults are not host variables)."""
    options = role_options()
    wanted = set(options) | set(inventory_types.HOST_VARIABLES) | set(inventory_types.RENAMED)
    values = {}
    for host in hosts:
        host_vars = hostvars[host]
        values[host] = {}
        for name in wanted:
            if name in host_vars:
                try:
                    value = host_vars[name]
                except AnsibleError:
                    continue  # a template that cannot be resolved yet (2.19): the role's own spec judges it later
                if not _unresolved(value):
                    values[host][name] = value
    return inventory_types.problems(values, options)


def group_problem(groups):
    """The sentence saying what is wrong with the groups, or None."""
    cluster, head = groups.get("ascend_cluster") or [], groups.get("ascend_head") or []
    workers = groups.get("ascend_workers") or []
    if cluster and len(head) == 1 and head[0] in cluster and not set(workers) - set(cluster):
        return None
    return ("The inventory needs a group ascend_cluster whose children are ascend_head (exactly one host) and "
            "ascend_workers (zero or more). Found ascend_cluster: %s; ascend_head: %s; ascend_workers: %s."
            % (", ".join(cluster) or "none", ", ".join(head) or "none", ", ".join(workers) or "none"))


def api_key_problems(hostvars, hosts):
    """An API key that is not text (YAML reads 0123 as a number)."""
    problems = []
    for host in hosts:
        host_vars = hostvars[host]
        key = host_vars.get("ascend_api_key") if "ascend_api_key" in host_vars else None
        # A vaulted key is text once decrypted (2.18: AnsibleVaultEncryptedUnicode, a str from 2.19 on).
        if key is not None and not isinstance(key, str) and type(key).__name__ != "AnsibleVaultEncryptedUnicode":
            kind = next((t.__name__ for t in (bool, int, float, list, dict) if isinstance(key, t)), type(key).__name__)
            problems.append("ascend_api_key on host %s is not text but %s: quote it in the inventory or vault (YAML "
                            "reads 0123 as a number, and the key must stay exactly as written)." % (host, kind))
    return problems
