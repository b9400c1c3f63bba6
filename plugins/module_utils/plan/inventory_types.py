# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Type checks of the inventory variables the planner reads, before any role's argument spec sees them.

A role's argument-spec failure names neither the host nor, for a per-host value, the inventory
variable, and prints the whole spec; these checks give one sentence per variable, naming the hosts.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.module_utils.common import validation

from ansible_collections.ascend.inference.plugins.module_utils.runtime import container
from ansible_collections.ascend.inference.plugins.module_utils.plan import input_rules

# Per-host variables the planner reads through hostvars (roles/plan/templates/nodes.json.j2): type, elements.
HOST_VARIABLES = {
    "ascend_node_ip": ("str", None),
    "ascend_nic": ("str", None),
    "ascend_npu_devices": ("list", "int"),
    "ascend_npu_device_map": ("dict", None),
    "ascend_npus_per_node": ("int", None),
    "ascend_data_parallel_size_local": ("int", None),
    "ascend_data_parallel_start_rank": ("int", None),
}
WHAT = {"int": "a whole number", "bool": "true or false", "dict": "a mapping", "list": "a list",
        "str": "text", "path": "text (a path)"}
PLURAL = {"int": "whole numbers", "str": "texts", "dict": "mappings"}
# Variables of earlier releases: setting one is refused with what replaced it.
RENAMED = dict(container.RENAMED)
# The Ray-only firewall's: the firewall role protects both launchers and is on by default.
RENAMED.update({
    "ray_cluster_firewall": "firewall_enabled (the firewall role protects both launchers and is on by default)",
    "ray_cluster_firewall_open_ports": "firewall_open_ports",
    "preflight_cann_home": "preflight_ascend_home, the Ascend root that holds ascend-toolkit/ or cann-<version>/ and "
                           "driver/ (default /usr/local/Ascend)",
})


def _converted(value, kind):
    """The value as the argument spec would take it (Ansible's own conversions: INI and -e give text),
    or raise TypeError/ValueError."""
    if kind == "int":
        if isinstance(value, bool):
            raise TypeError("a boolean is not a number")
        return validation.check_type_int(value)
    if kind == "bool":
        return validation.check_type_bool(value)
    if kind == "dict":
        return validation.check_type_dict(value)
    if kind == "list":
        return validation.check_type_list(value)
    if kind in ("str", "path"):
        # Text only (0.5 and 0.50 are the same number but not the same release); a vault-encrypted
        # value is text too (an AnsibleVaultEncryptedUnicode before ansible-core 2.19).
        if isinstance(value, str) or input_rules.vaulted(value):
            return value
        raise TypeError("not text")
    return value  # raw and anything this table does not know


def _problem(variable, original, kind, elements=None, choices=None):
    value = original
    try:
        value = _converted(original, kind)
        if elements:
            value = [_converted(item, elements) for item in value]
    except (TypeError, ValueError):
        if elements and isinstance(value, list):
            return "%s must be a list of %s (found %r)" % (variable, PLURAL.get(elements, elements), original)
        hint = ": quote it" if kind in ("str", "path") and isinstance(original, (int, float)) else ""
        if kind in ("dict", "list") and isinstance(original, str) and original.lstrip()[:1] in ("{", "["):
            # -e NAME=VALUE ends VALUE at the first space: JSON in it arrives cut.
            hint = (": -e NAME=VALUE ends the value at its first space; pass JSON whole, as -e '{\"%s\": ...}', or "
                    "a file, as -e @vars.yml" % variable)
        return "%s must be %s (found %r, %s)%s" % (variable, WHAT.get(kind, kind), original,
                                                   input_rules.kind_of(original), hint)
    if choices and value not in choices:
        return "%s must be one of %s (found %r)" % (variable, ", ".join(str(c) for c in choices), value)
    if kind == "dict":
        # Through the module's JSON arguments such keys would arrive merged: only here can they be seen.
        keys = input_rules.non_text_keys(value, variable)
        if keys:
            return input_rules.key_problem(*keys[0])
    return None


def problems(values_by_host, cluster_options):
    """Sentences naming each badly typed variable once, with the hosts where it has that value.

    ``values_by_host``: {host: {variable: value}} of the variables set for each host;
    ``cluster_options``: the plan role's argument-spec options (type, elements, choices).
    """
    found = {}
    for host in values_by_host:
        values = values_by_host[host]
        for variable in sorted(values):
            if variable in RENAMED:
                problem = "%s is no longer read: use %s" % (variable, RENAMED[variable])
            elif values[variable] is None:
                continue  # unset: the plan applies its default
            elif variable in HOST_VARIABLES:
                kind, elements = HOST_VARIABLES[variable]
                problem = _problem(variable, values[variable], kind, elements)
            elif variable in cluster_options:
                spec = cluster_options[variable]
                problem = _problem(variable, values[variable], spec.get("type", "str"), spec.get("elements"),
                                   spec.get("choices"))
            else:
                continue
            if problem:
                found.setdefault(problem, []).append(host)
    return ["%s on host%s %s" % (problem, "s" if len(hosts) > 1 else "", ", ".join(hosts))
            for problem, hosts in sorted(found.items())]
