# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""status.yml's phases, read-only: each node's units (in container mode the engine container's processes shown
as the host-mode units would be), on the head Ray's own view of the cluster, on the API node /health (status);
then, once, the table of the whole cluster and what the plan needs that is not running (status_report)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
from urllib.parse import quote

import json
import time

from ansible_collections.ascend.inference.plugins.module_utils.runtime import container
from ansible_collections.ascend.inference.plugins.plugin_utils.phases import per_instance, ray as phase_ray, serve
from ansible_collections.ascend.inference.plugins.module_utils.engines import metrics as engine_metrics
from ansible_collections.ascend.inference.plugins.module_utils.plan import monitoring as monitoring_plan, reports
from ansible_collections.ascend.inference.plugins.plugin_utils.phases.phase import Refused

SETTINGS = {"config_dir": "str", "python_env": "str"}

SHOWN = "--property=Id,LoadState,ActiveState,SubState,NRestarts,ActiveEnterTimestamp"


def status(node, settings):
    """settings: config_dir, python_env (where the ray phase put the probe, and Ray's Python). With several
    instances, each one's record on this node under ``instances``."""
    if per_instance.is_fleet(node.plan):
        found = dict((name, status(view, settings)["record"]) for name, view in per_instance.views(node)
                     if node.host in view.plan["nodes"])
        record = {"instances": found}
        router = node.plan.get("router")
        if router and node.host in router["hosts"]:
            record["router"] = router_status(node, router)
        proxies = dict((name, proxy_status(node, entry["proxy"])) for name, entry in (node.plan.get("pd") or {}).items()
                       if entry["proxy"]["host"] == node.host)
        if proxies:
            record["proxies"] = proxies
        return {"apply": None, "record": record}
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
    if serve.watched(cluster) and mine["serve_argv"]:
        # What the serve watchdog saw last (none when it is off or has not run yet).
        seen = node.run("ansible.builtin.command", {"argv": ["cat", serve.watchdog_state_file(plan)]})
        try:
            record["watchdog"] = json.loads(seen.get("stdout") or "null") if seen.get("rc") == 0 else None
        except ValueError:
            record["watchdog"] = None
    if mine["role"] == "head" and cluster["launcher"] == "ray":
        argv = phase_ray.probe_argv(plan, settings["config_dir"], settings["python_env"], program)
        ray = node.run("ansible.builtin.command", {"argv": argv})
        record["ray"] = dict((key, ray.get(key)) for key in ("rc", "stdout", "stderr"))
    if mine["serves_api"]:
        health = node.run("ansible.builtin.uri", {"url": "http://%s:%s/health" % (mine["node_ip"], cluster["api_port"]),
                                                  "timeout": 10, "status_code": [200]})
        record["health"] = {"status": health.get("status", -1), "msg": health.get("msg")}
        # vLLM serves /metrics outside /v1: no key.
        metrics = node.run("ansible.builtin.uri", {"url": "http://%s:%s/metrics" % (mine["node_ip"], cluster["api_port"]),
                                                   "timeout": 10, "return_content": True, "status_code": [200]})
        record["load"] = engine_metrics.load(metrics.get("content")) if metrics.get("status") == 200 else None
    # The single model's router (an instance's view has none: the fleet's branch above reads it once).
    router = plan.get("router")
    if router and node.host in router["hosts"]:
        record["router"] = router_status(node, router)
    return {"apply": None, "record": record}


def router_status(node, router):
    """The router's unit, and each replica's state as the router sees it (its runtime API)."""
    shown = node.run("ansible.builtin.command", {"argv": ["systemctl", "show", SHOWN, router["unit"]]})
    replicas = node.run("ascend.inference.router_server", {"socket": router["socket"]})
    return {"unit": reports.systemctl_units(shown.get("stdout") or "").get(router["unit"], {}),
            "servers": replicas.get("servers"), "msg": replicas.get("msg") if replicas.get("failed") else None}


def proxy_status(node, proxy):
    """A prefill/decode proxy's unit and its own health (it does not ask the pools: their units are read apart)."""
    shown = node.run("ansible.builtin.command", {"argv": ["systemctl", "show", SHOWN, proxy["unit"]]})
    url = "http://%s:%s%s" % (proxy["address"], proxy["port"], proxy["health_path"])
    health = node.run("ansible.builtin.uri", {"url": url, "timeout": 10, "status_code": [200]})
    return {"unit": reports.systemctl_units(shown.get("stdout") or "").get(proxy["unit"], {}),
            "health": {"status": health.get("status", -1), "msg": health.get("msg")}}


def pd_report(plan, hosts, applied):
    """(lines, problems) of each prefill/decode instance's proxy: its unit and health, and which pools it joins."""
    lines, problems = [], []
    for name, entry in sorted((plan.get("pd") or {}).items()):
        proxy = entry["proxy"]
        pools = entry["pools"]
        if proxy["host"] not in hosts:
            continue
        found = ((applied(proxy["host"]) or {}).get("proxies") or {}).get(name) or {}
        unit, health = found.get("unit") or {}, found.get("health") or {}
        state = "%s/%s" % (unit.get("ActiveState", "?"), unit.get("SubState", "?"))
        lines.append("prefill/decode %s: proxy on %s (port %d) %s, %s %s; prefill %s on %s, decode %s on %s" % (
            name, proxy["host"], proxy["port"], state, proxy["health_path"], health.get("status", "?"),
            pools["prefill"]["instance"], ", ".join(pools["prefill"]["hosts"]), pools["decode"]["instance"],
            ", ".join(pools["decode"]["hosts"])))
        if unit.get("ActiveState") != "active":
            problems.append("- the proxy of %s on %s is %s (journalctl -u %s)"
                            % (name, proxy["host"], state, proxy["unit"]))
        elif health.get("status") != 200:
            problems.append("- the proxy of %s on %s: %s answered %s"
                            % (name, proxy["host"], proxy["health_path"], health.get("msg") or health.get("status")))
    return lines, problems


def router_report(plan, hosts, applied):
    """(lines of the router's table, problems): per router host its unit, and each model's replicas' states."""
    router = plan.get("router")
    if not router:
        return [], []
    lines, problems = [], []
    for host in router["hosts"]:
        if host not in hosts:
            continue
        found = (applied(host) or {}).get("router") or {}
        unit = found.get("unit") or {}
        state = "%s/%s" % (unit.get("ActiveState", "?"), unit.get("SubState", "?"))
        lines.append("router on %s (port %d): %s" % (host, router["port"], state))
        if unit.get("ActiveState") != "active":
            problems.append("- the router on %s is %s (journalctl -u %s)" % (host, state, router["unit"]))
            continue
        if found.get("msg"):
            problems.append("- the router on %s: %s" % (host, found["msg"]))
            continue
        servers = found.get("servers") or []
        for backend in router["backends"]:
            states = []
            for server in backend["servers"]:
                status = next((s["status"] for s in servers if s["backend"] == backend["name"]
                               and s["server"] == server["name"]), "not in the router")
                states.append("%s %s" % (server["name"], status))
                if status != "UP":
                    problems.append("- the router on %s: replica %s of %s is %s" % (
                        host, server["name"], backend["served_model_name"], status))
            lines.append("  %s: %s" % (backend["served_model_name"], ", ".join(states)))
    return lines, problems


def watchdog_report(plan, found):
    """(lines, problems) of an engine across nodes, from its watchdogs' state: the DP ranks that gave no answer to the
    head's last 1-token completions, and (mp) the headless nodes whose engines started after the head's front-end
    was up (vLLM's handshake is at start-up only: such engines are not part of the group)."""
    head = plan["cluster"]["head"]
    seen = (found.get(head) or {}).get("watchdog")
    if not serve.watched(plan["cluster"]) or not seen:
        return [], []
    lines, problems = [], []
    when = time.strftime("%H:%M:%S", time.localtime(seen.get("checked") or 0))
    unanswered = seen.get("unanswered") or []
    nodes = dict((rank, host) for host, entry in plan["nodes"].items() if entry["data_parallel_start_rank"] is not None
                 for rank in range(entry["data_parallel_start_rank"],
                                   entry["data_parallel_start_rank"] + entry["data_parallel_size_local"]))
    lines.append("watchdog on %s (%s): %s, %d restart(s) of %s" % (
        head, when, "DP ranks %s unanswered" % unanswered if unanswered else
        ("every DP rank answered" if seen.get("healthy_since") else "the API is not up"),
        seen.get("restarts", 0), plan["cluster"]["units"]["serve"]))
    if unanswered:
        owners = ", ".join(sorted(set(nodes.get(rank, "placed by Ray") for rank in unanswered)))
        then = ("it gave up restarting %s on %s after restarts that brought no answer: see journalctl -u %s" % (
            plan["cluster"]["units"]["serve"], head, plan["cluster"]["units"]["watchdog"]) if seen.get("gave_up") else
            "the head's watchdog restarts %s on %s if they keep failing" % (plan["cluster"]["units"]["serve"], head))
        problems.append("- DP rank(s) %s (on %s) gave no answer to the watchdog's 1-token completion at %s: %s" % (
            ", ".join(str(rank) for rank in unanswered), owners, when, then))
    up = seen.get("healthy_since")
    for host in plan["cluster"]["node_order"]:
        started = ((found.get(host) or {}).get("watchdog") or {}).get("serve_started")
        if host != head and up and started and started > up:
            problems.append("- the engines on %s started at %s, after the head's front-end on %s was up (%s): vLLM "
                            "takes a node into its data-parallel group at start-up only, so they serve nothing until "
                            "the head restarts" % (host, _clock(started), head, _clock(up)))
    return lines, problems


def _clock(epoch):
    return time.strftime("%H:%M:%S", time.localtime(epoch))


TTFT_WINDOW = "5m"


def prometheus_ttft(node, plan):
    """({instance: {p50, p95}} over the last TTFT_WINDOW from the first monitoring host's Prometheus, its address),
    or ({}, None) without one or when it does not answer."""
    monitoring = plan.get("monitoring") or {}
    if not monitoring.get("monitors"):
        return {}, None
    address = monitoring["monitors"][0]["address"]
    found = {}
    for key, q in (("p50", 0.5), ("p95", 0.95)):
        # An instance with several API servers: one quantile over all of them.
        query = "histogram_quantile(%s, sum by (instance, le) (ascend:vllm_time_to_first_token_seconds_bucket:rate5m))" % q
        answer = node.run("ansible.builtin.uri", {
            "url": "http://%s:%d/api/v1/query?query=%s" % (address, monitoring["prometheus_port"],
                                                           quote(query, safe="")),
            "timeout": 10, "return_content": True, "status_code": [200]})
        if answer.get("status") != 200:
            return {}, None
        for series in ((answer.get("json") or {}).get("data") or {}).get("result") or []:
            value = float(series["value"][1])
            if not math.isnan(value):  # NaN: no request in the window
                found.setdefault(series["metric"].get("instance"), {})[key] = value
    return found, address


def load_line(name, found, recent, address):
    """One instance's load: its API servers' requests and KV cache now, and its time to first token."""
    loads = [entry.get("load") for entry in found.values() if entry.get("load")]
    if not loads:
        return "load %s: no /metrics read" % name
    running, waiting = sum(l["running"] for l in loads), sum(l["waiting"] for l in loads)
    kv = [l["kv_cache"] for l in loads if l["kv_cache"] is not None]
    line = "load %s: %d running, %d waiting, KV cache %s" % (
        name, running, waiting, "%.0f%%" % (max(kv) * 100) if kv else "?")
    mine = recent.get(name) or {}
    if "p50" in mine or "p95" in mine:
        return line + ", time to first token p50 %s / p95 %s (last %s, Prometheus on %s)" % (
            _seconds(mine.get("p50")), _seconds(mine.get("p95")), TTFT_WINDOW, address)
    p50, p95, requests = engine_metrics.merged_quantiles(loads)
    if not requests:
        return line + ", time to first token: no request yet"
    return line + ", time to first token p50 %s / p95 %s (since the engine%s started, %d requests)" % (
        _seconds(p50), _seconds(p95), "s" if len(loads) > 1 else "", requests)


def _seconds(value):
    return "?" if value is None else "%.3g s" % value


def report(node, settings):
    """Once for the play: the table (one per instance); fails naming what is not running."""
    plan = node.plan
    hosts = node.play_hosts()
    recent, address = prometheus_ttft(node, plan)
    if per_instance.is_fleet(plan):
        tables, problems, loads = [], [], []
        for name, view in per_instance.views(node):
            found = dict((host, ((node.applied("status", host=host) or {}).get("instances") or {}).get(name) or {})
                         for host in set(hosts) | set(view.plan["cluster"]["node_order"]))
            tables.append("instance %s: %s" % (name, reports.status_table(view.plan, hosts, found)))
            loads.append(load_line(name, found, recent, address))
            problems += ["- instance %s: %s" % (name, line[2:]) for line in
                         reports.status_problems(view.plan, hosts, found).splitlines()]
            lines, found_problems = watchdog_report(view.plan, found)
            if lines:
                tables[-1] += "\n" + "\n".join(lines)
            problems += ["- instance %s: %s" % (name, line[2:]) for line in found_problems]
        for summary in (router_report, pd_report):
            lines, found_problems = summary(plan, hosts, lambda host: node.applied("status", host=host))
            if lines:
                tables.append("\n".join(lines))
            problems += found_problems
        tables.append("\n".join(loads))
        table = "\n\n".join(tables)
        if problems:
            raise Refused(table + "\n" + "\n".join(problems))
        return {"apply": None, "record": None, "show": table}
    # Every planned host: a head that answered for Ray and then dropped out of the run is still shown.
    found = dict((host, node.applied("status", host=host) or {})
                 for host in set(hosts) | set(plan["cluster"]["node_order"]))
    problems = reports.status_problems(plan, hosts, found)
    lines, watched = watchdog_report(plan, found)
    routed, router_problems = router_report(plan, hosts, found.get)
    problems = "\n".join(([problems] if problems else []) + watched + router_problems)
    table = "\n".join([reports.status_table(plan, hosts, found)] + lines + routed + [
        load_line(monitoring_plan.SINGLE, found, recent, address)])
    if problems:
        raise Refused(table + "\n" + problems)
    return {"apply": None, "record": None, "show": table}
