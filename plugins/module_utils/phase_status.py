# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""status.yml's phases, read-only: each node's units (in container mode the engine container's processes shown
as the host-mode units would be), on the head Ray's own view of the cluster, on the API node /health (status);
then, once, the table of the whole cluster and what the plan needs that is not running (status_report)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.ascend.inference.plugins.module_utils import container, phase_instances, phase_ray, reports
from ansible_collections.ascend.inference.plugins.module_utils.phase import Refused

SETTINGS = {"config_dir": "str", "python_env": "str"}

SHOWN = "--property=Id,LoadState,ActiveState,SubState,NRestarts,ActiveEnterTimestamp"


def status(node, settings):
    """settings: config_dir, python_env (where the ray phase put the probe, and Ray's Python). With several
    instances, each one's record on this node under ``instances``."""
    if phase_instances.is_fleet(node.plan):
        found = dict((name, status(view, settings)["record"]) for name, view in phase_instances.views(node)
                     if node.host in view.plan["nodes"])
        return {"apply": None, "record": {"instances": found}}
    plan = node.plan
    cluster, mine = plan["cluster"], plan["nodes"][node.host]
    shown = node.run("ansible.builtin.command", {"argv": ["systemctl", "show", SHOWN, cluster["units"]["ray"],
                                                          cluster["units"]["serve"], cluster["units"]["engine"]]})
    units = reports.systemctl_units(shown.get("stdout") or "")
    program = (node.applied("image") or {}).get("program")
    if cluster["runtime"]["mode"] == "container":
        # Ray and serve are processes of the engine container's supervisor.
        told = node.run("ansible.builtin.command", {"argv": container.supervisor_argv(program, "status")}) \
            if program else {}
        units.update(container.process_units(told.get("stdout") or "", units.get(cluster["units"]["engine"], {}),
                                             cluster["units"]))
    record = {"units": units}
    if mine["role"] == "head" and cluster["launcher"] == "ray":
        argv = phase_ray.probe_argv(plan, settings["config_dir"], settings["python_env"], program)
        ray = node.run("ansible.builtin.command", {"argv": argv})
        record["ray"] = dict((key, ray.get(key)) for key in ("rc", "stdout", "stderr"))
    if mine["serves_api"]:
        health = node.run("ansible.builtin.uri", {"url": "http://%s:%s/health" % (mine["node_ip"], cluster["api_port"]),
                                                  "timeout": 10, "status_code": [200]})
        record["health"] = {"status": health.get("status", -1), "msg": health.get("msg")}
    return {"apply": None, "record": record}


def report(node, settings):
    """Once for the play: the table (one per instance); fails naming what is not running."""
    plan = node.plan
    hosts = node.play_hosts()
    if phase_instances.is_fleet(plan):
        tables, problems = [], []
        for name, view in phase_instances.views(node):
            found = dict((host, ((node.applied("status", host=host) or {}).get("instances") or {}).get(name) or {})
                         for host in set(hosts) | set(view.plan["cluster"]["node_order"]))
            tables.append("instance %s: %s" % (name, reports.status_table(view.plan, hosts, found)))
            problems += ["- instance %s: %s" % (name, line[2:]) for line in
                         reports.status_problems(view.plan, hosts, found).splitlines()]
        table = "\n\n".join(tables)
        if problems:
            raise Refused(table + "\n" + "\n".join(problems))
        return {"apply": None, "record": None, "show": table}
    # Every planned host: a head that answered for Ray and then dropped out of the run is still shown.
    found = dict((host, node.applied("status", host=host) or {})
                 for host in set(hosts) | set(plan["cluster"]["node_order"]))
    problems = reports.status_problems(plan, hosts, found)
    table = reports.status_table(plan, hosts, found)
    if problems:
        raise Refused(table + "\n" + problems)
    return {"apply": None, "record": None, "show": table}
