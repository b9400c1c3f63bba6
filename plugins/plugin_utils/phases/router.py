# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The router phase's desired state: on the plan's router hosts, HAProxy's configuration (one backend per served
model, a server per replica), the served-name map, the /v1/models answer, the clients' keys and the engines' key
(0600, never on a command line) and ascend-router.service, reloaded when the routes change (connections in flight
finish on the old worker) and restarted when a key or the unit changes; elsewhere, none of it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.ascend.inference.plugins.module_utils.runtime import systemd
from ansible_collections.ascend.inference.plugins.plugin_utils.phases.phase import Refused, seen_absent
from ansible_collections.ascend.inference.plugins.module_utils.plan.router import RUNTIME_DIRECTORY
from ansible_collections.ascend.inference.plugins.module_utils.runtime import unit_names

SETTINGS = {"package": "str", "program": "str", "maxconn": "int", "buffer_bytes": "int", "timeout_seconds": "int",
            "check_interval_ms": "int", "check_fall": "int", "check_rise": "int", "check_timeout_ms": "int",
            "tls_certificate": "str"}
# The configuration reads the model with json_query (HAProxy 2.6 is the oldest tested) and serves metrics with the
# prometheus-exporter service, which a distribution may build without.
OLDEST = "2.6"
FIX = ("the router needs HAProxy %s or later built with the Prometheus exporter (haproxy -vv lists "
       "prometheus-exporter among its services); set router_package and router_program to such a build" % OLDEST)
# Each replica is up after router_check_rise checks: bounded at a minute past the first of them.
HEALTH_TIMEOUT = 60
WARNING_OPEN = ("the router on %s checks no client key: neither router_client_keys nor ascend_api_key is set, so "
                "anyone who reaches port %d can use every model")


def paths(plan):
    directory = plan["cluster"]["config_dir"] + "/router"
    return {"directory": directory, "config": directory + "/haproxy.cfg", "map": directory + "/models.map",
            "models": directory + "/models.json", "keys": directory + "/clients.keys",
            "env": directory + "/router.env", "unit": "%s/%s" % (plan["cluster"]["unit_dir"], unit_names.ROUTER)}


def leftovers(plan):
    """What a node the router does not run on may hold of an earlier plan's: the preflight looks for it."""
    where = paths(plan)
    return [where["unit"], where["directory"]]


def client_keys(node):
    """The keys clients present: router_client_keys, else the engines' own key (clients keep the key they had)."""
    keys, problem = client_keys_of(node.host, node.var)
    if problem:
        raise Refused(problem)
    return keys


def client_keys_of(host, var):
    """(the client keys of router host HOST, what is wrong with them or None); VAR(name, default) reads a variable.
    plan.yml judges them too, from the inventory."""
    keys = var("router_client_keys", None)
    if keys is None:
        engine = var("ascend_api_key", None)
        keys = [engine] if engine else []
    well_formed = isinstance(keys, list) and all(
        isinstance(k, str) and k and k.strip() == k and "\n" not in k for k in keys)
    if not well_formed:
        return keys, ("router_client_keys on host %s must be a list of keys, each text without surrounding spaces or "
                      "line breaks" % host)
    return keys, None


def models_answer(router):
    """GET /v1/models through the router: every served name, as vLLM lists one (id, object, owned_by)."""
    return json.dumps({"object": "list", "data": [
        {"id": b["served_model_name"], "object": "model", "owned_by": "vllm"} for b in router["backends"]]},
        sort_keys=True) + "\n"


def desired(node, settings):
    """settings: package (the distribution's, installed where program is missing), program (the haproxy binary),
    maxconn, buffer_bytes, timeout_seconds, check_interval_ms, check_fall, check_rise, check_timeout_ms,
    tls_certificate (a PEM on the node, or None: plain HTTP)."""
    plan = node.plan
    router = plan.get("router")
    where = paths(plan)
    if not router or node.host not in router["hosts"]:
        if seen_absent(node, leftovers(plan)):
            return {"apply": None, "record": {"routes": False}}
        return {"apply": {"units": [{"name": unit_names.ROUTER, "file": where["unit"], "state": "absent"}],
                          "absent": [where["unit"], where["directory"]]},
                "record": {"routes": False}}
    keys = client_keys(node)
    engine_key = node.var("ascend_api_key", None) or ""
    address = router["addresses"][node.host]
    values = dict(settings, backends=router["backends"], socket=router["socket"],
                  client_keys=bool(keys), engine_key=bool(engine_key), keys_file=where["keys"],
                  map_file=where["map"], models_file=where["models"],
                  # HAProxy's conditions: AND binds before ||.
                  health_down=" || ".join("{ path /health } down_" + b["name"] for b in router["backends"]),
                  bind=":%d" % router["port"], metrics_bind="%s:%d" % (address, router["metrics_port"]),
                  # Each engine's /metrics for the monitoring hosts, which reach no engine's API port.
                  engine_metrics=(plan.get("monitoring") or {}).get("engine_metrics") or [])
    routes = "".join("%s %s\n" % (b["served_model_name"], b["name"]) for b in router["backends"])
    env = systemd.environment_file({"ASCEND_ROUTER_ENGINE_KEY": engine_key} if engine_key else {})
    files = [
        {"path": where["map"], "mode": "0644", "content": routes},
        {"path": where["models"], "mode": "0644", "content": models_answer(router)},
        {"path": where["keys"], "mode": "0600"},
        {"path": where["env"], "mode": "0600"},
        # Not checked by the apply (it checks every file before writing any, and this one reads the files above):
        # the unit checks it (haproxy -c) before a start or a reload, so a bad one never replaces running routes.
        {"path": where["config"], "mode": "0644", "template": "router/haproxy.cfg.j2", "values": values},
        {"path": where["unit"], "mode": "0644", "template": "router/ascend-router.service.j2",
         "values": {"program": settings["program"], "config": where["config"], "env_file": where["env"],
                    "runtime_directory": RUNTIME_DIRECTORY, "after": plan["cluster"]["units"]["firewall"]}},
    ]
    secrets = {where["keys"]: "".join("Bearer %s\n" % key for key in keys), where["env"]: env}
    unit = {"name": unit_names.ROUTER, "file": where["unit"], "state": "started",
            # The engines' key is in the environment of the process; the rest is read again by a reload.
            "restart_on": [where["unit"], where["env"]],
            "reload_on": [where["config"], where["map"], where["models"], where["keys"]]}
    scheme = "https" if settings["tls_certificate"] else "http"
    result = {"apply": {"packages": [{"name": settings["package"], "program": settings["program"]}],
                        "requires": [{"argv": [settings["program"], "-vv"], "minimum": OLDEST,
                                      "version_pattern": r"HAProxy version ([0-9.]+)",
                                      "contains": ["prometheus-exporter"], "fix": FIX}],
                        # The configuration directory too: in container mode nothing else makes it on the host.
                        "directories": [{"path": plan["cluster"]["config_dir"]},
                                        {"path": where["directory"], "mode": "0755"}], "files": files,
                        "secrets": secrets, "units": [unit],
                        "answers": [{"label": "the router's /health", "timeout": HEALTH_TIMEOUT,
                                     "url": "%s://127.0.0.1:%d/health" % (scheme, router["port"])}]},
              "record": {"routes": True}}
    if not keys:
        result["warnings"] = [WARNING_OPEN % (node.host, router["port"])]
    return result
