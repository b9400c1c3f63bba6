# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""restart.yml's phases: Ray restarted without a configuration change (the head first; a worker waits for the
head's port, then restarts), then serve on every node that serves (together: the mp handshake completes in any
order); with several instances, each one's (or those named). In container mode the engine container's supervisor
restarts the process; a stopped container starts."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.ascend.inference.plugins.plugin_utils.phases import per_instance, ray as phase_ray
from ansible_collections.ascend.inference.plugins.plugin_utils.phases import backends
from ansible_collections.ascend.inference.plugins.plugin_utils.phases import phase
from ansible_collections.ascend.inference.plugins.plugin_utils.phases.phase import Refused

# instances: serve_restart_instances, a list or "a,b" as -e gives it.
SERVE_SETTINGS = {"instances": "raw"}


def _restart(node, name, wait=None):
    plan = node.plan
    if backends.mode(plan) == "host":
        # Started without being enabled (enabled false leaves a started unit's boot setting as it is): a unit
        # teardown.yml disabled stays disabled.
        return {"units": [{"name": plan["cluster"]["units"][name], "state": "started", "restart": True,
                           "enabled": False, "wait_for": wait}]}
    program = (node.applied("image") or {}).get("program")
    command = backends.restart_in_container(plan, {"program": program}, name, always=True)
    command["wait_for"] = wait
    return {"units": [{"name": plan["cluster"]["runtime"]["unit"], "state": "started", "enabled": False}],
            "commands": [command]}


def ray(node, settings):
    """settings: barrier_timeout (how long a worker waits for the head's port). With several instances, the Ray
    cluster of the node's instance on the Ray launcher, if one runs here."""
    if per_instance.is_fleet(node.plan):
        node = per_instance.ray_view(node)
        if node is None:
            return {"apply": None, "record": {"restarted": False}}
    head = node.plan["cluster"]["head"]
    wait = None if node.host == head else phase_ray.head_wait(node.plan, settings["barrier_timeout"])
    return {"apply": _restart(node, "ray", wait), "record": {"restarted": True}}


def _chosen(node, settings):
    chosen = settings.get("instances") or None
    if isinstance(chosen, str):
        chosen = [name.strip() for name in chosen.split(",") if name.strip()] or None
    return chosen


def rolling(node, settings):
    """Once for the play, with a router in front of the instances: the instances to restart one at a time (those
    named, else all, in name order), registered for restart.yml's loop; refused as the restart would be. The pools
    of a prefill/decode instance are no router server (its proxy is): they restart together (``together``)."""
    chosen = _chosen(node, settings)
    if not per_instance.is_fleet(node.plan) or not node.plan.get("router"):
        return {"apply": None, "record": None, "result": {"rolling": [], "together": []}}
    names = node.plan["cluster"]["instance_names"]
    unknown = sorted(set(chosen or []) - set(names))
    if unknown:
        raise Refused("no instance %s in ascend_instances (it has %s)" % (", ".join(unknown), ", ".join(names)))
    wanted = [n for n in names if chosen is None or n in chosen]
    servers = node.plan["router"]["backend_of"]
    return {"apply": None, "record": None, "result": {"rolling": [n for n in wanted if n in servers],
                                                      "together": [n for n in wanted if n not in servers]}}


SINGLE_REPLICA = ("instance %s is the only replica of %s behind the router: its clients get no answer while it "
                  "restarts (another instance with the same served_model_name would take them)")


SINGLE_MODEL = ("the model's serve %s in place on %s (its command or environment changed): it is its only replica, "
                "so its clients get no answer meanwhile. Two instances of it in ascend_instances behind the router "
                "restart one at a time instead")


def changed(node, settings):
    """After the serve phase (serve_group's, alike on every host): the replicas behind the router that run on files
    changed by this run (the serve phase's own, or an earlier phase's such as node_env's) or on files older than those
    on the node (a run that stopped before it restarted them), in name order, for serve's rolling.yml. A replica whose unit
    started in this run runs its files already. In --check, the ones that would be: named, not restarted. The single
    model restarted in place (its only replica): a warning says where."""
    plan = node.plan
    if not per_instance.is_fleet(plan):
        # One model, one replica: its serve restarted in place where its files changed (node_env's or serve's step).
        unit = plan["cluster"]["units"]["serve"]
        restarted = [host for host in node.play_hosts() if any(
            phase.stepped(node.applied(name, host=host) or {}, unit, ("restart", "try-restart"))
            for name in ("node_env", "serve"))]
        verb = "would restart" if node.check_mode else "restarted"
        warnings = [SINGLE_MODEL % (verb, ", ".join(restarted))] if restarted else []
        return {"apply": None, "record": None, "warnings": warnings, "result": {"rolling": []}}
    if not plan.get("router"):
        return {"apply": None, "record": None, "result": {"rolling": []}}
    due = set()
    for host in node.play_hosts():
        record = node.applied("serve", host) or {}
        paths = set(record.get("changed_paths") or []) | set(
            (node.applied("node_env", host=host) or {}).get("changed_paths") or [])
        started = set(step["unit"] for step in record.get("steps") or [] if step["action"] == "start")
        for name, entry in (record.get("rolled") or {}).items():
            if entry["unit"] not in started and paths & set(entry["paths"]):
                due.add(name)
        due |= set(record.get("stale") or [])
    names = [name for name in plan["cluster"]["instance_names"] if name in due]
    router = plan["router"]
    backends_of = dict((backend["name"], backend) for backend in router["backends"])
    warnings = []
    for name in names:
        backend = backends_of[router["backend_of"][name]]
        if len(backend["servers"]) == 1:
            warnings.append(SINGLE_REPLICA % (name, backend["served_model_name"]))
    if node.check_mode and names:
        warnings.append("would restart %s one at a time behind the router (drained, in maintenance, restarted, put "
                        "back): their files change" % ", ".join(names))
    return {"apply": None, "record": None, "warnings": warnings,
            "result": {"rolling": [] if node.check_mode else names}}


def serve(node, settings):
    """settings: instances (the names of those to restart, from ascend_instances; empty: all)."""
    chosen = _chosen(node, settings)
    if chosen and not per_instance.is_fleet(node.plan):
        raise Refused("serve_restart_instances names %s, but ascend_instances is not set: restart.yml restarts the "
                      "one model's serve" % ", ".join(chosen))
    if per_instance.is_fleet(node.plan):
        unknown = sorted(set(chosen or []) - set(node.plan["cluster"]["instance_names"]))
        if unknown:
            raise Refused("no instance %s in ascend_instances (it has %s)" % (
                ", ".join(unknown), ", ".join(node.plan["cluster"]["instance_names"])))
        state, restarted = {}, []
        for name, view in per_instance.views(node):
            mine = view.plan["nodes"].get(node.host)
            if mine and mine["serve_argv"] is not None and (chosen is None or name in chosen):
                backends.merge(state, _restart(view, "serve"))
                restarted.append(name)
        return {"apply": state if restarted else None, "record": {"restarted": bool(restarted), "instances": restarted}}
    if node.plan["nodes"][node.host]["serve_argv"] is None:
        return {"apply": None, "record": {"restarted": False}}
    return {"apply": _restart(node, "serve"), "record": {"restarted": True}}


def serve_group(node, settings):
    """After the serve phase: where an mp data-parallel group spans nodes and the phase (re)started the serve unit of
    some of its nodes only, the others restart too. vLLM takes a node into the group at start-up only: a node
    restarted alone is never taken back by the running head, and a restarted head waits for nodes whose engines
    still wait for the old one."""
    views = per_instance.views(node) if per_instance.is_fleet(node.plan) else [(None, node)]
    state, restarted = {}, []
    for name, view in views:
        plan = view.plan
        cluster = plan["cluster"]
        mine = plan["nodes"].get(node.host)
        if (backends.mode(plan) != "host" or cluster["launcher"] != "mp" or cluster["dp_rpc_port"] is None
                or not mine or mine["serve_argv"] is None):
            continue
        unit = cluster["units"]["serve"]
        started = dict((host, phase.stepped(node.applied("serve", host=host) or {}, unit, ("start", "restart")))
                       for host, entry in plan["nodes"].items() if entry["serve_argv"] is not None)
        if any(started.values()) and not started[node.host]:
            backends.merge(state, _restart(view, "serve"))
            restarted.append(name or unit)
    # And the replicas behind the router to restart one at a time afterwards (the same list on every host, for
    # rolling.yml's loop; its warnings said once, by the play's first host).
    due = changed(node, settings)
    warnings = (due.get("warnings") or []) if node.host == node.play_hosts()[0] else []
    return {"apply": state if restarted else None, "record": {"restarted": restarted}, "result": due["result"],
            "warnings": warnings}
