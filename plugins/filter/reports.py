# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that turn what every host registered into the texts the playbooks show: the preflight's
report, status.yml's table and problems (logic in module_utils/reports.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.ascend.inference.plugins.module_utils import reports


def _found(hostvars, hosts, names):
    """{host: {key: hostvars[host][variable]}} for the variables a host has (`names`: {key: variable})."""
    found = {}
    for host in hosts:
        mine = hostvars[host] if host in hostvars else {}
        found[host] = dict((key, mine[variable]) for key, variable in names.items() if variable in mine)
    return found


PREFLIGHT = {"problems": "preflight_problems", "cann_version": "preflight_cann_version",
             "engine_summary": "preflight_engine_summary", "model_summary": "preflight_model_summary"}
# Registered by status.yml (the units) and by the ray_cluster and serve roles' status entry points.
STATUS = {"units": "status_unit_state", "ray": "ray_cluster_status", "health": "serve_status"}


def preflight_report(hostvars, hosts, runtime_mode, model):
    return reports.preflight_report(hosts, _found(hostvars, hosts, PREFLIGHT), runtime_mode, model)


def _status(hostvars, hosts, plan):
    # Every planned host: a head that answered for Ray and then dropped out of the run is still shown.
    return _found(hostvars, set(hosts) | set(plan["cluster"]["node_order"]), STATUS)


def status_table(hostvars, hosts, plan):
    return reports.status_table(plan, hosts, _status(hostvars, hosts, plan))


def status_problems(hostvars, hosts, plan):
    return reports.status_problems(plan, hosts, _status(hostvars, hosts, plan))


class FilterModule(object):
    def filters(self):
        return {"preflight_report": preflight_report, "status_table": status_table,
                "status_problems": status_problems, "systemctl_units": reports.systemctl_units}
