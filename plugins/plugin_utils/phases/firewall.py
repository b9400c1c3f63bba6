# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The firewall phase's desired state: the members-only nftables rules and the unit that loads them before Ray
and serve, or (firewall_enabled false) neither, with a warning; in both cases without the Ray-only firewall of
earlier releases."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.ascend.inference.plugins.module_utils.runtime import unit_names

# The Ray-only firewall of releases before the firewall role (ray_cluster_firewall), removed where found; its
# rules were always here, whatever ascend_config_dir says now.
LEGACY_UNIT_PATH = "%s/%s" % (unit_names.UNIT_DIR, unit_names.LEGACY_FIREWALL)
LEGACY_RULES = "/etc/ascend-inference/ray-firewall.nft"
RULES = "firewall.nft"
WARNING = ("firewall_enabled is false on %s: every port of Ray and of the engine (Ray runs any code a client sends, "
           "CVE-2023-48022; the data-parallel RPC port takes the engine's internal messages) is open to anyone who "
           "reaches the node. Keep the nodes on an isolated network, or set firewall_enabled: true.")
SETTINGS = {"enabled": "bool", "open_ports": "list", "config_dir": "str", "ssh_port": "int"}


def desired(node, settings):
    """settings: enabled, open_ports, config_dir, ssh_port (the node's ansible_port, or None)."""
    cluster = node.plan["cluster"]
    unit = cluster["units"]["firewall"]
    unit_path = "%s/%s" % (cluster["unit_dir"], unit)
    rules_path = "%s/%s" % (settings["config_dir"], RULES)
    legacy = {"name": unit_names.LEGACY_FIREWALL, "file": LEGACY_UNIT_PATH, "state": "absent", "stop_last": True}
    state = {"absent": [LEGACY_UNIT_PATH, LEGACY_RULES]}
    if not settings["enabled"]:
        state["absent"] += [unit_path, rules_path]
        state["units"] = [legacy, {"name": unit, "file": unit_path, "state": "absent"}]
        return {"apply": state, "warnings": [WARNING % node.host], "record": {"enabled": False}}
    members = [node.plan["nodes"][name]["node_ip"] for name in cluster["node_order"]]
    # Open to everyone: firewall_open_ports, the router's port on its hosts and the port Ansible reaches this node
    # on. Never an engine's API port, router or not: vLLM answers /invocations, /tokenize and others there without
    # its key (docs/security.md); the router passes a client's paths only.
    instances = [plan["cluster"] for plan in (node.plan.get("instances") or {}).values()] or [cluster]
    router = node.plan.get("router")
    endpoints = [router["port"]] if router and node.host in router["hosts"] else []
    open_ports = set(int(port) for port in settings["open_ports"]) | set(int(port) for port in endpoints)
    # The firewall loads before every service of the collection.
    before = sorted(set(c["units"][name] for c in instances for name in ("ray", "serve")) |
                    set([router["unit"]] if router else []) |
                    set(entry["proxy"]["unit"] for entry in (node.plan.get("pd") or {}).values()))
    if settings.get("ssh_port"):
        open_ports.add(int(settings["ssh_port"]))
    monitors, scraped = scraped_ports(node.plan, node.host)
    # nft checks the rules before they are written: the package first where it is missing.
    state["packages"] = [{"name": "nftables", "program": "nft"}]
    state["directories"] = [{"path": settings["config_dir"]}]
    state["files"] = [
        {"path": rules_path, "mode": "0644", "validate": "nft --check --file %s", "template": "firewall/firewall.nft.j2",
         "values": {"members": ", ".join(members), "open_ports": ", ".join(str(p) for p in sorted(open_ports)),
                    "monitors": ", ".join(monitors), "scraped_ports": ", ".join(str(p) for p in scraped)}},
        {"path": unit_path, "mode": "0644", "template": "firewall/ascend-firewall.service.j2",
         "values": {"before": " ".join(before), "rules": rules_path}},
    ]
    state["units"] = [legacy, {"name": unit, "file": unit_path, "state": "started",
                               "restart_on": [rules_path, unit_path]}]
    return {"apply": state, "record": {"enabled": True}}


def scraped_ports(plan, host):
    """(the monitoring hosts that are no members, the ports of HOST they scrape): every target of the plan's
    monitoring section on this node (the router's metrics, through which it reads the engines' behind a router, else
    the engines' API ports; the NPU exporter)."""
    monitoring = plan.get("monitoring") or {}
    admitted = list(monitoring.get("admitted") or [])
    if not admitted:
        return [], []
    address = plan["nodes"][host]["node_ip"]
    ports = set()
    for groups in (monitoring.get("targets") or {}).values():
        for group in groups:
            for target in group["targets"]:
                target_address, port = target.rsplit(":", 1)
                if target_address == address and group["labels"].get("node") == host:
                    ports.add(int(port))
    return admitted, sorted(ports)
