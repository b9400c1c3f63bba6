# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The role settings a deploy would refuse from the inventory alone, judged when the plan is made (plan.yml and the
deploy's first plan), on the hosts the plan gives each role, by the phase's own rule: a mistake is named before any
node is touched, not after the phases before it have changed the nodes."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.ascend.inference.plugins.plugin_utils import inventory
from ansible_collections.ascend.inference.plugins.plugin_utils.phases import npu_exporter, router, serve


def _reader(host_vars, options):
    """VAR(name, default) for a host: its variable, else the role's default (role defaults are no host variables)."""
    def var(name, default=None):
        if name in host_vars:
            return host_vars[name]
        return options.get(name, {}).get("default", default)
    return var


def _exporter(plan, readers):
    exporter = (plan.get("monitoring") or {}).get("exporter") or {}
    if not exporter.get("enabled"):
        return []
    found = []
    for host in exporter.get("hosts") or []:
        var = readers[host]
        found += npu_exporter.settings_problems(host, var("npu_exporter_binary"), var("npu_exporter_extra_args"))
    return found


def _router(plan, readers):
    return [problem for problem in (router.client_keys_of(host, readers[host])[1]
                                    for host in (plan.get("router") or {}).get("hosts") or []) if problem]


def _watchdog(plan, readers):
    found = []
    for host in plan["cluster"]["node_order"]:
        settings = dict(("watchdog_" + key, readers[host]("serve_watchdog_" + key)) for key in serve.WATCHDOG_COUNTS)
        # A value of the wrong type was refused before the plan was made.
        if all(isinstance(value, int) for value in settings.values()):
            found += serve.watchdog_problems(host, settings)
    return found


# Every rule, by the phase that applies it (a test runs each through plan.yml).
RULES = {"npu_exporter": _exporter, "router": _router, "serve": _watchdog}


def problems(hostvars, plan):
    """Sentences naming every setting of PLAN's hosts that a deploy would refuse."""
    options = inventory.role_options()
    readers = dict((host, _reader(hostvars[host], options)) for host in plan["cluster"]["node_order"])
    found = []
    for name in sorted(RULES):
        found += RULES[name](plan, readers)
    return found
