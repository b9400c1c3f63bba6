# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What playbooks/plan.yml shows of a plan, for a person at a 100-column terminal: per node the environment to
export and the commands to type (wrapped with shell continuations, so they still paste), the router, and for
several instances the ports each host listens on."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import shlex
import textwrap

# A 100-column terminal less the 8 columns Ansible's debug output indents a message by.
WIDTH = 92
# Ports an instance holds on all of its hosts (one number per instance) but listens on at its head only.
HEAD_ONLY_PORTS = ("api_port", "dp_rpc_port", "ray_port")


def wrap_command(argv, first, indent, width=WIDTH):
    """ARGV as shell lines of at most WIDTH columns where words allow: FIRST before the command, continuation lines
    indented by INDENT, an option kept with its value."""
    words = [shlex.quote(str(word)) for word in argv]
    units, index = [], 0
    while index < len(words):
        word = words[index]
        if word.startswith("-") and index + 1 < len(words) and not words[index + 1].startswith("-"):
            units.append(word + " " + words[index + 1])
            index += 2
        else:
            units.append(word)
            index += 1
    lines, line = [], first + units[0]
    for unit in units[1:]:
        # Room for " \\" at the end of a line that continues.
        if len(line) + 1 + len(unit) + 2 > width:
            lines.append(line + " \\")
            line = indent + unit
        else:
            line += " " + unit
    return "\n".join(lines + [line])


def prose(text, indent="", width=WIDTH):
    """TEXT in lines of at most WIDTH columns, continuation lines indented by two more than INDENT."""
    return textwrap.fill(text, width, initial_indent=indent, subsequent_indent=indent + "  ", break_long_words=False,
                         break_on_hyphens=False)


def _env_lines(env, indent):
    return ["%sexport %s=%s" % (indent, name, shlex.quote(value) if value is not None else "<detected on the node>")
            for name, value in sorted(env.items())]


def _devices(node):
    text = ",".join(str(d) for d in node["visible_devices"])
    if node.get("devices_from") == "ascend_npus_per_node":
        text += " (assumed from ascend_npus_per_node)"
    if node.get("physical_devices") not in (None, node["visible_devices"]):
        text += " (/dev/davinci%s)" % ",".join(str(d) for d in node["physical_devices"])
    return text


def single(plan):
    """The single model's view: every node, the model checks, where clients go."""
    out = []
    for host in plan["cluster"]["node_order"]:
        node = plan["nodes"][host]
        if out:
            out.append("")
        out.append(prose("%s %s (%s, NIC %s)" % (node["role"], host, node["node_ip"], node.get("nic") or (
            "<detected on the node: the NIC carrying %s>" % node["node_ip"]))))
        out.append("devices: " + _devices(node))
        out.extend(_env_lines(node["env"], ""))
        out.append(wrap_command(node["ray_start_argv"], "ray: ", "    ") if node.get("ray_start_argv")
                   else "ray: (no Ray under the mp launcher)")
        out.append(wrap_command(node["serve_argv"], "serve: ", "    ") if node.get("serve_argv")
                   else "serve: (none: the head serves for the whole Ray cluster)")
    out.append("")
    if plan.get("model_checks"):
        out.append(prose("model: " + plan["model_checks"]))
    router, api_port = plan.get("router"), plan["cluster"]["api_port"]
    if router:
        out.append(prose("router (%s) on %s, port %s for clients, metrics %s; the API port %s is members-only" % (
            router["unit"], ", ".join(router["hosts"]), router["port"], router["metrics_port"], api_port)))
    else:
        out.append(prose("no router (ascend_router_enabled: false): the API port %s is members-only" % api_port))
    return "\n".join(out)


def _instance(plan, name):
    instance = plan["instances"][name]
    cluster = instance["cluster"]
    out = [prose("instance %s: %s (%s) on %s %s, %s launcher, TP %s x PP %s x DP %s" % (
        name, cluster["served_model_name"], cluster["model"], cluster["engine"], cluster["engine_version"],
        cluster["launcher"], cluster["tensor_parallel_size"], cluster["pipeline_parallel_size"],
        cluster["data_parallel_size"]))]
    ports = ["API %s:%s" % (cluster["head"], cluster["api_port"])]
    if cluster.get("dp_rpc_port"):
        ports.append("DP RPC %s" % cluster["dp_rpc_port"])
    if cluster.get("ray_address"):
        ports.append("Ray %s" % cluster["ray_address"])
    units = [cluster["units"]["serve"]] + ([cluster["units"]["ray"]] if cluster.get("ray_address") else [])
    out.append(prose("%s; units %s" % (", ".join(ports), ", ".join(units)), "  "))
    if (plan.get("instance_model_checks") or {}).get(name):
        out.append(prose("model: " + plan["instance_model_checks"][name], "  "))
    for host in cluster["node_order"]:
        node = instance["nodes"][host]
        out.append("  %s %s NPUs %s" % (node["role"], host, _devices(node)))
        out.extend(_env_lines(node["env"], "    "))
        if node.get("ray_start_argv"):
            out.append(wrap_command(node["ray_start_argv"], "    ray: ", "        "))
        if node.get("serve_argv"):
            out.append(wrap_command(node["serve_argv"], "    serve: ", "        "))
    return out


def listening(plan):
    """{host: the allocation's spans on HOST that something listens on there}: an instance's API, DP RPC and Ray
    ports are held on each of its hosts, so that its number stays its own, and open on its head only."""
    found = {}
    for host, spans in plan["allocation"]["ports"].items():
        found[host] = [span for span in spans if not (
            span["what"] in HEAD_ONLY_PORTS and span["owner"] in plan["instances"]
            and plan["instances"][span["owner"]]["cluster"]["head"] != host)]
    return found


def instances(plan):
    """The view of several instances: each instance's nodes, the prefill/decode proxies, the router, the ports."""
    out = []
    for name in plan["cluster"]["instance_names"]:
        if out:
            out.append("")
        out.extend(_instance(plan, name))
    for name, entry in sorted((plan.get("pd") or {}).items()):
        pools = []
        for pool in ("prefill", "decode"):
            found = entry["pools"][pool]
            pools.append("%s %s on %s, KV ports %s-%s" % (pool, found["instance"], ", ".join(found["hosts"]),
                                                          found["kv_port"], found["kv_port"] + found["kv_ports"] - 1))
        heading = "prefill/decode %s (%s): %s; %s" % (name, entry["served_model_name"], entry["connector"],
                                                      "; ".join(pools))
        out += ["", prose(heading)]
        proxy = entry["proxy"]
        out.append(wrap_command(shlex.split(proxy["command"]), "  proxy %s on %s:%s: " % (
            proxy["unit"], proxy["host"], proxy["port"]), "      ") if proxy.get("command") else "  proxy %s on %s:%s"
            % (proxy["unit"], proxy["host"], proxy["port"]))
    router = plan.get("router")
    out.append("")
    if router:
        out.append(prose("router (%s) on %s, port %s, metrics %s (members only); the instances' API ports are "
                         "members-only" % (router["unit"], ", ".join(router["hosts"]), router["port"],
                                           router["metrics_port"])))
        for backend in router["backends"]:
            out.append(prose("model %s: %s" % (backend["served_model_name"], ", ".join(
                "%s at %s:%s" % (server["name"], server["address"], server["port"])
                for server in backend["servers"])), "  "))
    else:
        out.append(prose("no router (ascend_router_enabled: false): each instance on its own API port, members "
                         "only"))
    out += ["", "ports each host listens on:"]
    listened = listening(plan)
    for host in plan["cluster"]["node_order"]:
        out.append("  " + host)
        for span in listened[host]:
            ports = str(span["port"]) if span["count"] == 1 else "%d-%d" % (
                span["port"], span["port"] + span["count"] - 1)
            out.append("    %-12s %s %s" % (ports, span["owner"], span["what"]))
    return "\n".join(out)


def render(plan):
    """The text plan.yml shows of PLAN (parallel_plan's result)."""
    return instances(plan) if "instances" in plan else single(plan)
