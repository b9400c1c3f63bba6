# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The inventory as the plan reads it, on the controller: every variable of the collection's roles and the
planner's host variables checked for type on every host at once (one message naming each variable and host,
before any role's own argument spec), the groups the plan needs, the required variables, and every ascend_
variable the collection does not know (a typo is refused with the closest known name, never ignored)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import difflib
import functools
import glob
import os

import yaml

from ansible.errors import AnsibleError

from ansible_collections.ascend.inference.plugins.module_utils.plan import inventory_types

ROLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "roles")
# The plan role's argument spec types the cluster variables; the other roles' specs their own.
PLAN_SPEC = os.path.join(ROLES, "plan", "meta", "argument_specs.yml")
# The collection's variables start so; any other such name on a host is a mistake unless the user claims it.
PREFIX = "ascend_"
OWN = "ascend_own_variables"
# What the collection sets on the hosts itself: the plan (registered by the plan role), the phases' record (a fact).
RESULTS = ("ascend_plan", "ascend_applied")
# What playbooks read beside the roles' variables: where plan.yml writes the plan, where collect.yml packs a bundle.
PLAYBOOK_VARIABLES = {"ascend_plan_dir": "playbooks/plan.yml", "ascend_bundle_dir": "playbooks/collect.yml"}


@functools.lru_cache(maxsize=None)
def role_options():
    """{variable: argument-spec option} over every entry point of every role, the plan role's first. Read once per
    process (the specs are the collection's files; a plan asks for them several times); callers only read it."""
    options = {}
    for path in [PLAN_SPEC] + sorted(glob.glob(os.path.join(ROLES, "*", "meta", "argument_specs.yml"))):
        with open(path) as handle:
            specs = yaml.safe_load(handle)["argument_specs"]
        for name in sorted(specs):
            for variable, option in (specs[name].get("options") or {}).items():
                options.setdefault(variable, option)
    return options


def known_variables():
    """Every variable name the collection reads or sets: the roles' argument specs, the planner's host variables,
    the renamed ones (refused with their new name), the collection's results and the playbooks' own."""
    return (set(role_options()) | set(inventory_types.HOST_VARIABLES) | set(inventory_types.RENAMED) | set(RESULTS)
            | set(PLAYBOOK_VARIABLES))


def _closest(name, known):
    """': did you mean X?' for the known ascend_ name closest to NAME, compared without the prefix they share."""
    found = difflib.get_close_matches(name[len(PREFIX):], sorted(k[len(PREFIX):] for k in known), n=1, cutoff=0.75)
    return ": did you mean %s%s?" % (PREFIX, found[0]) if found else ""


def _claimed(host_vars, host):
    """The host's ascend_own_variables: (names, a problem or None)."""
    if OWN not in host_vars:
        return set(), None
    try:
        names = host_vars[OWN]
    except AnsibleError:
        names = None
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        return set(), "%s on host %s must be a list of variable names (found %r)" % (OWN, host, names)
    return set(names), None


def unknown_problems(hostvars, hosts, extra_vars):
    """Sentences naming every ascend_ variable of HOSTS that the collection does not know (inventory or -e), and every
    -e variable that lacks the ascend_ prefix of a known one, each with the closest known name. Reads names only:
    no value is templated but ascend_own_variables."""
    known = known_variables()
    prefixed = [name for name in known if name.startswith(PREFIX)]
    problems, unknown = [], {}
    for name in sorted(extra_vars):
        if name.startswith(PREFIX) and name not in known:
            unknown.setdefault(name, None)
        elif not name.startswith(PREFIX) and PREFIX + name in known:
            problems.append("-e %s is not a variable of this collection: did you mean %s%s?" % (name, PREFIX, name))
    for host in hosts:
        host_vars = hostvars[host]
        claimed, problem = _claimed(host_vars, host)
        if problem:
            problems.append(problem)
        for name in host_vars:
            if name.startswith(PREFIX) and name not in known and name not in claimed and name not in extra_vars:
                unknown.setdefault(name, []).append(host)
    for name, where in sorted(unknown.items()):
        origin = "-e %s" % name if where is None else "%s on host%s %s" % (
            name, "s" if len(where) > 1 else "", ", ".join(where))
        problems.append("%s is not a variable of this collection%s (a variable of your own: list it in %s)" % (
            origin, _closest(name, prefixed), OWN))
    return problems


def required_problems(hostvars, hosts):
    """Sentences naming each variable the plan role requires that a host lacks, and where to set it."""
    options = role_options()
    required = sorted(name for name, option in options.items() if option.get("required"))
    found = []
    for name in required:
        lacking = [host for host in hosts if name not in hostvars[host]]
        if lacking:
            found.append("%s is not set for host%s %s: set it for the whole cluster in group_vars/ascend_cluster.yml "
                         "(next to the inventory file) or in the inventory's ascend_cluster vars" % (
                             name, "s" if len(lacking) > 1 else "", ", ".join(lacking)))
    return found


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
    if not cluster or len(head) != 1 or head[0] not in cluster or set(workers) - set(cluster):
        return ("The inventory needs a group ascend_cluster whose children are ascend_head (exactly one host) and "
                "ascend_workers (zero or more). Found ascend_cluster: %s; ascend_head: %s; ascend_workers: %s."
                % (", ".join(cluster) or "none", ", ".join(head) or "none", ", ".join(workers) or "none"))
    if head[0] in workers:
        return ("host %s is in both ascend_head and ascend_workers: the cluster's head is not also one of its "
                "workers; take it out of ascend_workers" % head[0])
    neither = [host for host in cluster if host not in head and host not in workers]
    if neither:
        return ("host%s %s %s in ascend_cluster but in neither ascend_head nor ascend_workers (a misspelt group name?): "
                "put each node in one of the two" % ("s" if len(neither) > 1 else "", ", ".join(neither),
                                                     "are" if len(neither) > 1 else "is"))
    return None


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
