# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The endpoint in front of the single model or the instances of ascend_instances (pure logic): which hosts run the
router, its ports (held in the plan's port allocation before the instances' are chosen; the single model's checked
against its own), and each served model's replicas, the servers the router balances.

The router is HAProxy (docs/instances.md says why): it routes by the request body's "model", so each served name
is one backend whose servers are the API nodes of the instances serving it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.ascend.inference.plugins.module_utils.plan.pd import POOLS
from ansible_collections.ascend.inference.plugins.module_utils.runtime import unit_names

# systemd's RuntimeDirectory of the unit, and HAProxy's admin socket in it (the rolling restart drains through it).
RUNTIME_DIRECTORY = "ascend-router"
SOCKET = "/run/%s/admin.sock" % RUNTIME_DIRECTORY
DEFAULTS = {"enabled": True, "hosts": None, "port": 8080, "metrics_port": 8404}
# The paths a client reaches through the router (POST with the model in the body; GET /v1/models and /health the
# router answers itself); any other is HAProxy's 404. vLLM's --api-key guards /v1 only (later releases also /v2,
# /inference, /cohere: docs/security.md): /invocations, /tokenize, /pooling, /classify, /score and /rerank answer
# without it, and so do a PD proxy's /instances/add and /instances/remove. Generation, then embedding and scoring
# (runner pooling) models.
CLIENT_PATHS = ("/v1/completions", "/v1/chat/completions", "/v1/embeddings", "/v1/score", "/v1/rerank")
# A prefill/decode proxy (vllm-ascend's load_balance_proxy examples) serves the first two only.
PD_CLIENT_PATHS = CLIENT_PATHS[:2]
# A served model's backend, whose servers are its replicas (the router's other backends are not:
# plan/monitoring.py's engine metrics, no_such_model).
REPLICA_BACKEND_PREFIX = "model-"
# A replica's health: GET /health on the server itself.
SERVER_HEALTH = {"address": None, "port": None, "path": "/health", "pool": None}
# A served name is a key of the router's map file (one line: name, whitespace, backend): no whitespace in it, and
# no '#', which starts a comment there.
MAP_KEY = re.compile(r"[^\s#]+")


def settings_of(params):
    """The router's part of parallel_plan's options: enabled, hosts (None: the default), port, metrics_port."""
    return dict((key, params.get("router_" + key, default) if params.get("router_" + key) is not None else default)
                for key, default in DEFAULTS.items())


def single_model(router, plan, name, ray_ports):
    """The single model's router (section or None, problems): by default on its head, so that its API port stays
    members-only like every instance's (vLLM answers /invocations and others without its key). NAME: the one
    server's (plan/monitoring.SINGLE); RAY_PORTS: input_rules.ray_ports under the Ray launcher, else None."""
    cluster = plan["cluster"]
    hosts, problems = router_hosts(router, cluster["node_order"][0], cluster["node_order"])
    if problems or not hosts:
        return None, problems
    # The model's own ports on every node (the router's hosts are among them).
    taken = dict((cluster[key], "ascend_" + key) for key in ("api_port", "ray_port", "dp_rpc_port") if cluster.get(key))
    if cluster.get("model_transfer_port"):
        for offset, what in enumerate(("", " + 1 (the model copy's tracker)", " + 2 (the model copy's control)")):
            taken[cluster["model_transfer_port"] + offset] = "ascend_model_transfer_port" + what
    ours = []
    for key, what in (("port", "ascend_router_port"), ("metrics_port", "ascend_router_metrics_port")):
        value = router[key]
        if not isinstance(value, int) or isinstance(value, bool) or not 0 < value < 65536:
            problems.append("%s must be a TCP port 1-65535 (found %r)" % (what, value))
        elif value in taken:
            problems.append("%s and %s are both %d: each service needs its own port" % (taken[value], what, value))
        else:
            taken[value] = what
            ours.append((value, what))
    if ray_ports is not None:
        problems.extend(ray_ports(ours))
    if problems:
        return None, problems
    addresses = dict((host, plan["nodes"][host]["node_ip"]) for host in cluster["node_order"])
    return section(router, hosts, [name], {name: plan}, addresses), []


def router_hosts(router, first_head, cluster_hosts):
    """(the hosts that run the router, problems). Default: the head of the first instance in name order."""
    if not router["enabled"]:
        return [], []
    hosts = router["hosts"]
    if hosts is None:
        return [first_head], []
    if not hosts:
        return [], ["group ascend_router has no host: name the hosts that run the router, or remove the group "
                    "(the default is the head of the first instance, %s)" % first_head]
    outside = [h for h in hosts if h not in cluster_hosts]
    if outside:
        return [], ["group ascend_router names %s, not in group ascend_cluster: this release runs the router on "
                    "cluster members (%s)" % (", ".join(outside), ", ".join(cluster_hosts))]
    return list(dict.fromkeys(hosts)), []


def claim_ports(ports, router, hosts):
    """The router's listener and its metrics port on each router host, before any instance's is chosen."""
    for key, what in (("port", "ascend_router_port"), ("metrics_port", "ascend_router_metrics_port")):
        value = router[key]
        if not isinstance(value, int) or isinstance(value, bool) or not 0 < value < 65536:
            ports.problems.append("%s must be a TCP port 1-65535 (found %r)" % (what, value))
            continue
        ports.claim(hosts, value, 1, "the router", what, what)


def section(router, hosts, names, plans, addresses, pd=None):
    """The plan's ``router``: None when disabled, else its hosts and their addresses, its ports, unit, and one
    backend per served model name whose servers are the instances serving it (name order); a prefill/decode
    instance's server is its proxy (PD: plan/pd.finish's entries), not its pools."""
    if not router["enabled"]:
        return None
    pd = pd or {}
    pools = set(pool["instance"] for entry in pd.values() for pool in entry["pools"].values())
    backends, order = {}, []
    # Each backend's checks: GET PATH on ADDRESS:PORT (None: the server's own), all answering 200 for it to be up.
    for name in sorted(pd):
        proxy = pd[name]["proxy"]
        served = str(pd[name]["served_model_name"])
        order.append(served)
        # vllm-ascend's proxy answers its /healthcheck whatever its pools do: the route is up while each pool's
        # head answers /health (HAProxy's checks connect to each in turn), and the proxy its own.
        pool_checks = [{"address": pd[name]["pools"][pool]["address"], "port": pd[name]["pools"][pool]["api_port"],
                        "path": "/health", "pool": pd[name]["pools"][pool]["instance"]} for pool in POOLS]
        backends[served] = {"name": REPLICA_BACKEND_PREFIX + name, "served_model_name": served,
                            "checks": pool_checks + [dict(SERVER_HEALTH, path=proxy["health_path"])],
                            "allowed_paths": list(PD_CLIENT_PATHS),
                            "servers": [{"name": name, "host": proxy["host"], "address": proxy["address"],
                                         "port": proxy["port"]}]}
    for name in names:
        if name in pools:
            continue
        cluster = plans[name]["cluster"]
        served = str(cluster["served_model_name"])
        if served not in backends:
            order.append(served)
            # HAProxy's names take letters, digits, '-', '_', '.' and ':': the first replica's instance name is one.
            backends[served] = {"name": REPLICA_BACKEND_PREFIX + name, "served_model_name": served, "checks": [dict(SERVER_HEALTH)],
                                "allowed_paths": list(CLIENT_PATHS), "servers": []}
        head = cluster["node_order"][0]
        backends[served]["servers"].append({"name": name, "host": head, "address": plans[name]["nodes"][head]["node_ip"],
                                            "port": cluster["api_port"]})
    return {"hosts": hosts, "addresses": dict((host, addresses[host]) for host in hosts), "port": router["port"],
            "metrics_port": router["metrics_port"], "unit": unit_names.ROUTER, "socket": SOCKET,
            "backends": [backends[served] for served in order],
            # Each instance's backend: the rolling restart drains the instance there.
            "backend_of": dict((server["name"], backend["name"]) for backend in backends.values()
                               for server in backend["servers"])}


def served_name_problems(names, plans):
    """Served names the router's map cannot hold."""
    problems = []
    for name in names:
        served = str(plans[name]["cluster"]["served_model_name"])
        if not MAP_KEY.fullmatch(served):
            problems.append("instance %s: the served model name %r has whitespace or '#': the router routes by it; "
                            "set served_model_name without them" % (name, served))
    return problems
