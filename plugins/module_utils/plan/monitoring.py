# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The plan's monitoring section (pure logic): what Prometheus scrapes, as file-based service discovery groups with
the labels a person filters by, the NPU exporter on each node, and the monitoring hosts the firewall admits.

- engines: every API server's /metrics (vLLM serves it on the API port, outside /v1, without the key; behind a
  router, read through the router's metrics port at /engines/INSTANCE/NODE/metrics), labelled
  instance (the ascend_instances name, ``default`` for the single model), model (the served name), role (serve,
  prefill or decode), node and dp_rank (the node's first DP rank, where DP spans nodes). The label ``instance``
  replaces Prometheus' host:port: a person filters by the name they gave.
- router: HAProxy's prometheus-exporter on each router host (plan/router.py's metrics_port).
- npu: the NPU exporter (Huawei MindCluster npu-exporter) on every node, where enabled.
Changing the instances changes these groups only: Prometheus reads them again without a restart."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress

from ansible_collections.ascend.inference.plugins.module_utils.runtime import unit_names

DEFAULTS = {"npu_exporter_enabled": False, "npu_exporter_port": 8082, "monitors": []}
# npu-exporter's own range (cmd/npu-exporter/main.go, paramValid: "the port is invalid").
EXPORTER_PORTS = (1025, 40000)
JOBS = {"engines": "ascend-engine", "router": "ascend-router", "npu": "ascend-npu"}
# Prometheus' own port on the monitoring hosts: the distribution package's default, which the role keeps.
PROMETHEUS_PORT = 9090
SINGLE = "default"
# An engine's /metrics at the router's metrics port: instance, node (each API server of an instance is one target).
ENGINE_METRICS_PATH = "/engines/%s/%s/metrics"


def _instances(plan):
    """(instance name, role, instance plan) of every instance; the single model's plan is one named SINGLE."""
    if "instances" not in plan:
        return [(SINGLE, "serve", plan)]
    pools = {}
    for entry in (plan.get("pd") or {}).values():
        for pool, info in entry["pools"].items():
            pools[info["instance"]] = pool
    return [(name, pools.get(name, "serve"), plan["instances"][name]) for name in plan["cluster"]["instance_names"]]


def engine_metrics(plan):
    """Every API server whose /metrics is scraped: instance, role, node, its address and API port, and the labels
    that say whose it is."""
    found = []
    for name, role, instance in _instances(plan):
        cluster = instance["cluster"]
        for host in cluster["node_order"]:
            node = instance["nodes"][host]
            if not node["serves_api"]:
                continue
            labels = {"instance": name, "model": cluster["served_model_name"] or cluster["model"], "role": role,
                      "node": host}
            if node.get("data_parallel_start_rank") is not None and cluster.get("data_parallel_size", 1) > 1:
                labels["dp_rank"] = str(node["data_parallel_start_rank"])
            found.append({"path": ENGINE_METRICS_PATH % (name, host), "address": node["node_ip"],
                          "port": cluster["api_port"], "labels": labels})
    return found


def engine_targets(plan, engines):
    """One group per API server. Behind a router, read through its metrics port at the engine's own path (the
    router forwards GET /metrics of that engine only), so that a monitoring host is admitted to no engine's API port:
    vLLM serves /invocations, /tokenize and others there without its key. Without one, the API port itself."""
    router = plan.get("router")
    groups = []
    for engine in engines:
        if router:
            via = router["hosts"][0]
            target = "%s:%d" % (router["addresses"][via], router["metrics_port"])
            labels = dict(engine["labels"], __metrics_path__=engine["path"])
        else:
            target, labels = "%s:%d" % (engine["address"], engine["port"]), dict(engine["labels"])
        groups.append({"targets": [target], "labels": labels})
    return groups


def router_targets(plan):
    router = plan.get("router")
    if not router:
        return []
    return [{"targets": ["%s:%d" % (router["addresses"][host], router["metrics_port"])],
             "labels": {"instance": "router", "role": "router", "node": host}} for host in router["hosts"]]


def npu_targets(plan, exporter):
    if not exporter["enabled"]:
        return []
    return [{"targets": ["%s:%d" % (plan["nodes"][host]["node_ip"], exporter["port"])],
             "labels": {"instance": host, "node": host}} for host in exporter["hosts"]]


def port_problems(plan, exporter):
    """The exporter's port where the plan already holds it on a node."""
    problems = []
    allocation = (plan.get("allocation") or {}).get("ports") or {}
    for host in exporter["hosts"]:
        spans = allocation.get(host)
        if spans is None:  # the single model: its own ports
            cluster = plan["cluster"]
            spans = [{"port": cluster.get(key), "count": 1, "owner": "the model", "what": "ascend_" + key}
                     for key in ("api_port", "ray_port", "dp_rpc_port", "model_transfer_port") if cluster.get(key)]
        for span in spans:
            if span["port"] <= exporter["port"] < span["port"] + span["count"]:
                problems.append("ascend_npu_exporter_port %d on %s is %s's %s" % (exporter["port"], host,
                                                                                  span["owner"], span["what"]))
                break
    return problems


def section(plan, settings):
    """The plan's ``monitoring``: settings holds npu_exporter_enabled, npu_exporter_port and monitors (a list of
    {name, address}: the hosts of group ascend_monitor). Returns (section, problems)."""
    settings = dict(DEFAULTS, **dict((k, v) for k, v in (settings or {}).items() if v is not None))
    hosts = list(plan["cluster"]["node_order"])
    exporter = {"enabled": bool(settings["npu_exporter_enabled"]), "port": int(settings["npu_exporter_port"]),
                "unit": unit_names.NPU_EXPORTER, "hosts": hosts,
                "addresses": dict((host, plan["nodes"][host]["node_ip"]) for host in hosts)}
    problems = []
    if not 1 <= exporter["port"] <= 65535:
        problems.append("ascend_npu_exporter_port must be a TCP port (1-65535), found %d" % exporter["port"])
    elif exporter["enabled"] and not EXPORTER_PORTS[0] <= exporter["port"] <= EXPORTER_PORTS[1]:
        problems.append("ascend_npu_exporter_port %d: npu-exporter accepts a port in %d-%d only (it exits without "
                        "serving otherwise)" % ((exporter["port"],) + EXPORTER_PORTS))
    elif exporter["enabled"]:
        problems += port_problems(plan, exporter)
    for monitor in settings["monitors"]:
        try:
            ipaddress.IPv4Address(u"%s" % monitor["address"])
        except ValueError:
            problems.append("the monitoring host %s scrapes from %r: set its ascend_node_ip to the IPv4 address it "
                            "reaches the nodes from (the firewall admits it by address)"
                            % (monitor["name"], monitor["address"]))
    members = set(exporter["addresses"].values())
    monitors = [{"host": m["name"], "address": m["address"]} for m in settings["monitors"]]
    engines = engine_metrics(plan)
    targets = {"engines": engine_targets(plan, engines), "router": router_targets(plan),
               "npu": npu_targets(plan, exporter)}
    return {"exporter": exporter, "monitors": monitors, "jobs": dict(JOBS), "targets": targets,
            # What the router's metrics port forwards (path -> address, port), with a router.
            "engine_metrics": [dict((k, e[k]) for k in ("path", "address", "port")) for e in engines]
            if plan.get("router") else [],
            "prometheus_port": PROMETHEUS_PORT,
            # The addresses the firewall admits to the scraped ports besides the members.
            "admitted": sorted(set(m["address"] for m in monitors) - members)}, problems
