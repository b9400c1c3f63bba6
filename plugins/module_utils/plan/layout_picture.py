# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A picture of the layout a plan computed: every node, every NPU, and on each NPU its DP rank, PP stage,
TP rank and EP group, as text for the terminal and as SVG (plan.yml writes layout.svg). Pure.

How NPUs get their ranks (vLLM's order): a node holds `data_parallel_size_local` DP replicas (all its NPUs
when the plan sets none, a TP x PP group spanning nodes); the nodes' NPUs, taken in the plan's node order
(the head first) and each node's ASCEND_RT_VISIBLE_DEVICES order, are the global ranks 0, 1, ..., except
that a node with a DP start rank (mp launcher) begins at that rank's first global rank; a global rank g is
DP rank g // (TP x PP), PP stage (g % (TP x PP)) // TP and TP rank g % TP. Under expert parallelism the
TP x DP ranks of one PP stage are split into groups of EP size in the order DP rank x TP + TP rank
(EP = TP x DP: one group per stage), numbered on across the stages. Which node's NPUs Ray's placement gives which DP rank is Ray's choice;
the picture shows the plan's order. NPUs a node has beyond its share are shown idle.

A plan of several instances (ascend_instances) is drawn host by host: every NPU the host has, with the instance
that holds it and that instance's ranks on it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from xml.sax.saxutils import escape


def npu_labels(plan):
    """[{name, role, ip, npus: [{device, physical, dp, pp, tp, ep}]}] in node order; an idle NPU's
    ranks are None, and ep is None without expert parallelism."""
    cluster = plan["cluster"]
    tp, pp = cluster["tensor_parallel_size"], cluster["pipeline_parallel_size"]
    dp = cluster["data_parallel_size"]
    ep = cluster.get("expert_parallel_size")
    world = tp * pp
    total = world * dp
    rank = 0
    nodes = []
    for name in cluster["node_order"]:
        node = plan["nodes"][name]
        devices = node["visible_devices"]
        physical = node.get("physical_devices") or devices
        local = node.get("data_parallel_size_local")
        # A replica wider than the node (TP x PP across nodes) takes all of it; else its local replicas.
        share = len(devices) if local is None or world > len(devices) else min(len(devices), local * world)
        start = node.get("data_parallel_start_rank")
        if start is not None:
            # mp launcher: the node's ranks begin where --data-parallel-start-rank says, whatever the order.
            rank = start * world
        npus = []
        for index, device in enumerate(devices):
            entry = {"device": device, "physical": physical[index], "dp": None, "pp": None, "tp": None, "ep": None}
            if index < share and rank < total:
                entry.update(dp=rank // world, pp=(rank % world) // tp, tp=rank % tp)
                if ep:
                    # Groups numbered across stages: stage p holds groups p x (TP x DP / EP) onwards.
                    entry["ep"] = entry["pp"] * max(1, tp * dp // ep) + (entry["dp"] * tp + entry["tp"]) // ep
                rank += 1
            npus.append(entry)
        nodes.append({"name": name, "role": node["role"], "ip": node["node_ip"], "npus": npus})
    return nodes


def fleet_labels(plan):
    """npu_labels for a plan of several instances: every host of the cluster in its order, each NPU with the
    instance that holds it (``instance``, None when free) and that instance's ranks on it."""
    by_host = {}
    for name in plan["cluster"]["instance_names"]:
        for node in npu_labels(plan["instances"][name]):
            for npu in node["npus"]:
                held = dict(npu, instance=name, role=node["role"], ip=node["ip"])
                by_host.setdefault(node["name"], {})[npu["device"]] = held
    nodes = []
    for host in plan["cluster"]["node_order"]:
        held = by_host.get(host, {})
        npus = []
        for device in sorted(int(d) for d in plan["allocation"]["npus"][host]):
            npus.append(held.get(device) or {"device": device, "physical": device, "dp": None, "pp": None,
                                             "tp": None, "ep": None, "instance": None})
        heads = sorted(set(n["instance"] for n in held.values() if n["role"] == "head"))
        ip = next((n["ip"] for n in held.values()), "")
        nodes.append({"name": host, "role": "head of %s" % ", ".join(heads) if heads else "node", "ip": ip,
                      "npus": npus})
    return nodes


def _fleet_title(plan):
    parts = []
    for name in plan["cluster"]["instance_names"]:
        cluster = plan["instances"][name]["cluster"]
        parts.append("%s: %s TP %d x PP %d x DP %d" % (name, cluster["served_model_name"], cluster["tensor_parallel_size"],
                                                       cluster["pipeline_parallel_size"],
                                                       cluster["data_parallel_size"]))
    return "%d instances - %s" % (len(parts), "; ".join(parts))


def _title(cluster):
    parts = ["TP %d" % cluster["tensor_parallel_size"], "PP %d" % cluster["pipeline_parallel_size"],
             "DP %d" % cluster["data_parallel_size"]]
    if cluster.get("expert_parallel_size"):
        parts.append("EP %d" % cluster["expert_parallel_size"])
    return "%s on %s (%s launcher): %s" % (cluster["model"], cluster["engine"], cluster["launcher"], " x ".join(parts))


def _cell(npu, key):
    value = npu[key]
    return "-" if value is None else str(value)


def render_text(plan):
    """The layout as a table per node: one column per NPU, one row per parallel dimension."""
    cluster = plan["cluster"]
    rows = [("DP rank", "dp"), ("PP stage", "pp"), ("TP rank", "tp")]
    if "instances" in plan:
        rows.insert(0, ("instance", "instance"))
        if any(p["cluster"].get("expert_parallel_size") for p in plan["instances"].values()):
            rows.append(("EP group", "ep"))
        lines, nodes = [_fleet_title(plan)], fleet_labels(plan)
    else:
        if cluster.get("expert_parallel_size"):
            rows.append(("EP group", "ep"))
        lines, nodes = [_title(cluster)], npu_labels(plan)
    for node in nodes:
        lines.append("")
        lines.append("%s %s (%s)" % (node["role"], node["name"], node["ip"]))
        table = [["NPU"] + [str(npu["device"]) for npu in node["npus"]]]
        table += [[label] + [_cell(npu, key) for npu in node["npus"]] for label, key in rows]
        widths = [max(len(row[column]) for row in table) for column in range(len(table[0]))]
        for row in table:
            lines.append("  " + "  ".join(cell.rjust(width) if column else cell.ljust(width)
                                          for column, (cell, width) in enumerate(zip(row, widths))).rstrip())
    return "\n".join(lines)


# One colour per DP rank (repeating), idle NPUs grey.
PALETTE = ("#cfe2f3", "#d9ead3", "#fff2cc", "#f4cccc", "#d9d2e9", "#fce5cd", "#d0e0e3", "#ead1dc")
BOX_W, BOX_H, GAP, MARGIN, NODE_HEAD = 116, 78, 8, 16, 28


def render_svg(plan):
    """The layout as an SVG drawing: a row of NPU boxes per node, each labelled with its ranks (and its instance,
    coloured by instance, in a plan of several)."""
    fleet = "instances" in plan
    nodes = fleet_labels(plan) if fleet else npu_labels(plan)
    title = _fleet_title(plan) if fleet else _title(plan["cluster"])
    colours = dict((name, index) for index, name in enumerate(plan["cluster"].get("instance_names") or []))
    widest = max([len(node["npus"]) for node in nodes] + [1])
    width = 2 * MARGIN + widest * (BOX_W + GAP) - GAP
    row_h = NODE_HEAD + BOX_H + GAP * 2
    height = MARGIN * 2 + 24 + len(nodes) * row_h
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
           'font-family="monospace" font-size="12">' % (width, height, width, height),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="%d" font-size="14" font-weight="bold">%s</text>'
           % (MARGIN, MARGIN + 12, escape(title))]
    for row, node in enumerate(nodes):
        top = MARGIN + 24 + row * row_h
        out.append('<g class="node" id="node-%s">' % escape(node["name"], {'"': "&quot;"}))
        out.append('<text x="%d" y="%d" font-weight="bold">%s %s (%s)</text>'
                   % (MARGIN, top + 18, escape(node["role"]), escape(node["name"]), escape(node["ip"])))
        for column, npu in enumerate(node["npus"]):
            x, y = MARGIN + column * (BOX_W + GAP), top + NODE_HEAD
            colour = colours.get(npu.get("instance")) if fleet else npu["dp"]
            fill = "#eeeeee" if npu["dp"] is None else PALETTE[colour % len(PALETTE)]
            labels = ["NPU %d (davinci%d)" % (npu["device"], npu["physical"])]
            if fleet and npu.get("instance"):
                labels.append(npu["instance"])
            if npu["dp"] is None:
                labels.append("idle" if not npu.get("instance") else "held, idle")
            else:
                labels += ["DP %d  PP %d" % (npu["dp"], npu["pp"]), "TP %d" % npu["tp"]]
                if npu["ep"] is not None:
                    labels.append("EP group %d" % npu["ep"])
            out.append('<g class="npu" data-device="%d">' % npu["device"])
            out.append('<rect x="%d" y="%d" width="%d" height="%d" rx="6" fill="%s" stroke="#555555"/>'
                       % (x, y, BOX_W, BOX_H, fill))
            for line, label in enumerate(labels):
                out.append('<text x="%d" y="%d" font-size="%d">%s</text>'
                           % (x + 6, y + 16 + line * 16, 10 if line == 0 else 12, escape(label)))
            out.append("</g>")
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out) + "\n"
