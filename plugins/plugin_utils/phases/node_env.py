# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node_env phase's desired state: the node environment (the plan's variables over what CANN's set_env.sh
exports, pyACL first on PYTHONPATH), the secret variables of ascend_extra_env in their own 0600 file, and the
profile snippet; a change to either environment file restarts the services that load them where they run. A Ray
worker's Ray restarts in a second step (``ray_workers``), after its head's: a worker that starts while its head stops
joins the old head and stays out of the cluster for a minute or more (molecule/ray shows it)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import posixpath

from ansible_collections.ascend.inference.plugins.module_utils.plan import input_rules
from ansible_collections.ascend.inference.plugins.module_utils.node import environment
from ansible_collections.ascend.inference.plugins.plugin_utils.phases import phase, ray as phase_ray
from ansible_collections.ascend.inference.plugins.module_utils.runtime import systemd
from ansible_collections.ascend.inference.plugins.plugin_utils.phases.phase import Refused

DEFAULT_SET_ENV = "/usr/local/Ascend/ascend-toolkit/set_env.sh"
# How long a worker waits for the port of a head that restarted in the first step (Type=simple: the head's restart
# returned before Ray listens). Past it the worker restarts all the same and the apply says so (``waited``).
HEAD_WAIT = 120
SETTINGS = {"file": "str", "secrets_file": "str", "profile": "str", "cann_set_env": "str", "services": "list",
            "pyacl_site_packages": "str"}


def cann_variables(node, set_env):
    """What SET_ENV exports: the preflight's reading where it sourced the same script, else read now."""
    found = (node.applied("preflight") or {}).get("cann_env") or {}
    if found.get("set_env") == set_env and found.get("rc") == 0:
        return found.get("variables") or {}
    read = node.run("ansible.builtin.command", {"argv": environment.SOURCE_ARGV + [set_env]})
    if read.get("rc") != 0:
        said = (read.get("stderr") or read.get("msg") or "").strip()
        raise Refused("%s: sourcing %s failed (rc %s): %s" % (node.host, set_env, read.get("rc"), said))
    return environment.sourced_env(read.get("stdout", ""))


def desired(node, settings):
    """settings: file, secrets_file, profile (None: none written), cann_set_env, services, pyacl_site_packages."""
    plan_node = node.plan["nodes"][node.host]
    if plan_node["unresolved_env"]:
        raise Refused("%s on host %s need the NIC that carries %s, which was not found: set ascend_nic."
                      % (", ".join(plan_node["unresolved_env"]), node.host, plan_node["node_ip"]))
    cann = {}
    # In container mode the processes load the image's CANN (the file then holds the plan's variables, for
    # shells on the host).
    if node.plan["cluster"]["runtime"]["mode"] == "host":
        found = (node.applied("preflight") or {}).get("cann") or {}
        cann = cann_variables(node, settings["cann_set_env"] or found.get("set_env") or DEFAULT_SET_ENV)
    variables = environment.node_environment(cann, settings["pyacl_site_packages"], plan_node["env"])
    ray = ray_worker_unit(node, settings["services"])
    secret = input_rules.split_env(node.var("ascend_extra_env", {}) or {})[1]
    env_file, secrets_file = settings["file"], settings["secrets_file"]
    try:
        text, secret_text = systemd.environment_file(variables), systemd.environment_file(secret)
    except ValueError as error:
        raise Refused("the environment of host %s: %s" % (node.host, error))
    state = {
        "directories": [{"path": posixpath.dirname(env_file)}],
        "files": [
            # Files of earlier releases held the secret variables: a diff would show them going.
            {"path": env_file, "mode": "0600", "diff": False, "template": "node_env/node.env.j2",
             "values": {"host": node.host, "environment": text.rstrip("\n")}},
            {"path": secrets_file, "mode": "0600"},
        ] + ([{"path": settings["profile"], "mode": "0644", "template": "node_env/profile.sh.j2",
               "values": {"file": env_file}}] if settings["profile"] else []),
        "secrets": {secrets_file: {"template": "node_env/secrets.env.j2", "values": {"environment": secret_text.rstrip("\n")}}},
        # Where they run (the engine container reloads: its supervisor restarts what reads a changed file).
        "units": [{"name": name, "try_restart_on": [env_file, secrets_file]}
                  for name in settings["services"] if name != ray],
    }
    result = {"apply": state, "record": {"file": env_file}}
    if ray:
        result["after"] = lambda applied: {
            "ray_due": bool({env_file, secrets_file} & set(applied.get("changed_paths") or []))}
    return result


def ray_worker_unit(node, services):
    """The Ray unit of the node, when the node is a worker of the plan's Ray cluster on the host and SERVICES
    restarts it; else None. (With several instances each one's Ray unit is its own, which SERVICES does not name.)"""
    cluster = node.plan["cluster"]
    if cluster["launcher"] != "ray" or cluster["runtime"]["mode"] != "host" or node.host == cluster["head"]:
        return None
    unit = cluster["units"]["ray"]
    return unit if unit in services else None


def ray_workers(node, settings):
    """The second step on a Ray worker: its Ray restarts where it runs, when its own environment changed in the
    first step or its head's Ray restarted there (then once the head's port answers)."""
    unit = ray_worker_unit(node, settings["services"])
    if unit is None:
        return {"apply": None, "record": None}
    head = node.plan["cluster"]["head"]
    head_restarted = phase.stepped(node.applied("node_env", host=head) or {}, unit, ("try-restart",))
    if not (head_restarted or (node.applied("node_env") or {}).get("ray_due")):
        return {"apply": None, "record": None}
    wait = phase_ray.head_wait(node.plan, HEAD_WAIT) if head_restarted else None
    return {"apply": {"units": [{"name": unit, "restart": True, "wait_for": wait}]}, "record": None}
