# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The texts the playbooks show from what every host found: the preflight's report and status.yml's
table and problems. Pure: each takes the plan and, per host, what the host's tasks registered."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

STATUS_COLUMNS = "%-20s %-7s %-50s %s"


def systemctl_units(stdout):
    """`systemctl show --property=Id,...` of several units as {Id: {property: value}} (blocks split by
    an empty line, as systemctl prints them)."""
    units = {}
    for block in stdout.split("\n\n"):
        props = dict(line.split("=", 1) for line in block.splitlines() if "=" in line)
        if props:
            units[props.get("Id", "?")] = props
    return units


def _differ(values):
    return len(set(json.dumps(value, sort_keys=True) for value in values.values())) > 1


def _model_texts(models):
    """{host: what its model is} for comparing: the manifest digest where every host has a record of the model
    copied to it, else the count and bytes of its files."""
    if models and all(model.get("digest") for model in models.values()):
        return dict((host, "manifest %s" % model["digest"][:12]) for host, model in models.items())
    return dict((host, "%d files, %d bytes" % (model["files"], model["bytes"])) for host, model in models.items())


def preflight_report(hosts, found, runtime_mode, model):
    """Every problem of every host, then what must agree across hosts; "" when all is well.

    `found` holds per host its `problems` (list) and, where the host read them, `cann_version`,
    `engine_summary` and `model_summary` (node_probe's model: files, bytes, digest). The CANN versions are
    compared on hosts only: in container mode the engine runs on the image's CANN. The models are compared by
    their manifest digest where every node has one, by their files' count and bytes otherwise."""
    lines = ["host %s: %s" % (host, problem) for host in hosts for problem in found.get(host, {}).get("problems") or []]

    def seen(key):
        # Empty or null: the host has none to compare (no CANN, no engine found, no model file); ansible-core
        # 2.18 renders a null fact as "".
        return dict((host, found[host][key]) for host in hosts if found.get(host, {}).get(key))

    cann = seen("cann_version")
    if runtime_mode == "host" and _differ(cann):
        lines.append("CANN versions differ; every node must run the same: "
                     + ", ".join("%s %s" % item for item in cann.items()))
    engines = seen("engine_summary")
    if _differ(engines):
        lines.append("the installed engines differ between nodes: " + "; ".join("%s: %s" % item for item in engines.items()))
    models = _model_texts(seen("model_summary"))
    if _differ(models):
        lines.append("ascend_model %s differs between nodes: %s" % (model, "; ".join("%s: %s" % item for item in models.items())))
    if not lines:
        return ""
    return "preflight found %d problem(s); nothing was changed:\n%s" % (len(lines), "\n".join("- " + line for line in lines))


def _unit(state, wanted):
    if state.get("LoadState", "") != "loaded":
        return "not installed" if wanted else "-"
    text = "%s/%s, %s restarts" % (state.get("ActiveState"), state.get("SubState"), state.get("NRestarts", "?"))
    if state.get("ActiveState") == "active":
        # "Wed 2026-12-02 06:18:10 UTC" -> "2026-12-02 06:18:10"
        text += ", since " + " ".join(state.get("ActiveEnterTimestamp", "").split(" ")[1:3])
    return text


def _ray_answer(ray):
    """Ray's alive nodes from the probe's registered result, or None when it gave no JSON."""
    if ray.get("rc") != 0:
        return None
    return json.loads(ray.get("stdout") or "[]")


def _last_line(text):
    return (text or "").strip().split("\n")[-1]


def status_table(plan, hosts, found):
    """status.yml's table: the layout, one line per node (its Ray and serve units), Ray's view, the endpoint.

    `found` holds per host `units` ({unit: systemctl properties}) and, where they ran, `ray` (the probe's
    registered result) and `health` (the uri result)."""
    cluster, nodes = plan["cluster"], plan["nodes"]
    order = [host for host in cluster["node_order"] if host in hosts]
    lines = ["%s %s: TP %s x PP %s x DP %s, model %s" % (
        cluster["engine"], cluster["launcher"], cluster["tensor_parallel_size"], cluster["pipeline_parallel_size"],
        cluster["data_parallel_size"], cluster["served_model_name"]),
        STATUS_COLUMNS % ("host", "role", "ray", "serve")]
    for host in order:
        units = found.get(host, {}).get("units") or {}
        lines.append(STATUS_COLUMNS % (
            host, nodes[host]["role"], _unit(units.get(cluster["units"]["ray"], {}), cluster["launcher"] == "ray"),
            _unit(units.get(cluster["units"]["serve"], {}), bool(nodes[host]["serve_argv"]))))
    for host in cluster["node_order"]:
        ray = found.get(host, {}).get("ray") or {}
        if "rc" not in ray:
            continue
        alive = _ray_answer(ray)
        if alive is None:
            lines.append("Ray: no answer from the head (%s)" % _last_line(ray.get("stderr")))
        else:
            lines.append("Ray: %d/%s nodes alive, %d NPUs (%s)" % (
                len(alive), cluster["ray_nodes_expected"], int(sum(node.get("npus") or 0 for node in alive)),
                ", ".join(node["ip"] for node in alive)))
    for host in cluster["node_order"]:
        health = found.get(host, {}).get("health") or {}
        if "status" not in health:
            continue
        answer = health["status"] if health["status"] > 0 else "no answer (%s)" % health.get("msg", "")
        lines.append("API http://%s:%s: /health %s" % (nodes[host]["node_ip"], cluster["api_port"], answer))
    return "\n".join(lines)


def status_problems(plan, hosts, found):
    """What the plan needs that is not running, one line each; "" when all is well."""
    cluster, nodes = plan["cluster"], plan["nodes"]
    lines = []
    for host in [host for host in cluster["node_order"] if host in hosts]:
        mine = found.get(host, {})
        units = mine.get("units") or {}
        for job, wanted in (("ray", cluster["launcher"] == "ray"), ("serve", bool(nodes[host]["serve_argv"]))):
            if wanted and units.get(cluster["units"][job], {}).get("ActiveState") != "active":
                lines.append("- %s: %s is not active" % (host, cluster["units"][job]))
        ray = mine.get("ray") or {}
        if "rc" in ray:
            alive = _ray_answer(ray)
            if alive is None or len(alive) != cluster["ray_nodes_expected"]:
                lines.append("- Ray on %s does not see the %s planned nodes" % (host, cluster["ray_nodes_expected"]))
        health = mine.get("health") or {}
        if "status" in health and health["status"] != 200:
            lines.append("- %s: the endpoint's /health did not answer 200" % host)
    return "\n".join(lines)
