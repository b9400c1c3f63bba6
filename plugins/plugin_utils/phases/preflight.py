# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The preflight's probe phase: what the node is - addresses, NPU chips, CANN, driver, model files, ports, the
installed engine and the Python that runs Ray - read by node_probe in one round trip, and what the inventory says
of the node beside it, kept as ascend_applied.preflight: the detection the plan is made again from, the node
checks judge and the later phases read. Detection only: it reads no file a role writes."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.module_utils.common.validation import check_type_bool

from ansible_collections.ascend.inference.plugins.module_utils.plan import preflight_checks
from ansible_collections.ascend.inference.plugins.plugin_utils.phases import npu_exporter, router
from ansible_collections.ascend.inference.plugins.plugin_utils.phases.phase import Refused

# What of node_probe's answer the checks and the later phases read.
KEPT = ("ipv4", "npu_smi", "npu", "device_files", "cann", "cann_version", "cann_notes", "cann_problems", "driver",
        "model", "models", "engine", "listeners", "container_mounts_missing", "service", "cann_env", "python",
        "present")
SETTINGS = {"npu_smi": "str", "ascend_home": "str", "cann_layout": "str", "device_map": "dict", "model": "str",
            "model_record": "str", "engine": "dict", "service_user": "str", "engine_container": "bool",
            "python": "dict", "context": "dict",
            "check_models": "bool"}


def node_ip(node):
    return str(node.var("ascend_node_ip", None) or node.var("ansible_host", None) or node.host)


def desired(node, settings):
    """settings: the node_probe options (npu_smi, ascend_home, cann_layout, device_map, model, model_record,
    engine, engine_container, service_user, python) and the checks' context (npu_smi, ascend_home,
    engine_env, model, cann_pending, model_pending)."""
    context = dict(settings.pop("context") or {})
    check_models = settings.pop("check_models", None)
    if check_models and "instances" in node.plan:
        # Several instances: the models of those on this node, where they are local paths.
        settings["models"] = sorted(set(
            plan["cluster"]["model"] for plan in node.plan["instances"].values()
            if node.host in plan["nodes"] and plan["cluster"]["model"].startswith("/")))
    entries = (node.plan.get("pd") or {}).values()
    proxies = [entry["proxy"] for entry in entries if entry["proxy"]["host"] == node.host]
    pools = [pool for entry in entries for pool in entry["pools"].values()
             if node.host in pool["hosts"] and entry["connector"].startswith("Mooncake")]
    wanted = (preflight_checks.PROXY_DISTRIBUTIONS if proxies else ()) + (
        preflight_checks.TRANSFER_ENGINES if pools else ())
    if wanted and settings.get("python"):
        settings["python"] = dict(settings["python"], distributions=sorted(
            set(settings["python"]["distributions"]) | set(wanted)))
    # As ansible-core 2.18 may render them inside a mapping: a null as "", a boolean as text.
    context["cann_pending"] = context.get("cann_pending") or None
    context["model_pending"] = check_type_bool(context.get("model_pending") or False)
    # What the phases that only remove things on this node would remove: where none of it is there, they skip their
    # round trip.
    settings["present"] = router.leftovers(node.plan) + npu_exporter.leftovers(node.plan)
    found = node.run("ascend.inference.node_probe", dict(
        dict((k, v) for k, v in settings.items() if v not in (None, "")), node=node.host))
    if found.get("failed"):
        raise Refused("%s: the probe failed: %s" % (node.host, found.get("msg")))
    address = node_ip(node)
    nics = sorted(name for name, addresses in (found.get("ipv4") or {}).items() if address in addresses)
    chips = [chip["logic"] for chip in found["npu"]["chips"]]
    record = dict((key, found.get(key)) for key in KEPT)
    record["context"] = dict(context, node_ip=address, ip_nics=nics,
                             nic=node.var("ascend_nic", None) or (nics[0] if nics else None))
    # What the plan is made again from (the inventory's ascend_nic and ascend_npu_devices come first).
    record["detected"] = {
        "nic": nics[0] if nics else None,
        "npu_devices": chips if found["npu_smi"]["rc"] == 0 and chips else None,
        "device_map": found["npu"]["device_map"] or None,
        "npu_family": found["npu"]["family"],
        "device_group": found["service"]["device_group"],
    }
    # Each proxy's script, as the service account would open it.
    record["pd_proxy"] = dict((proxy["script"], bool(node.run("ansible.builtin.stat", {"path": proxy["script"]}).get(
        "stat", {}).get("exists"))) for proxy in proxies if proxy["script"])
    record["engine_program"] = ({"program": settings["engine"]["program"],
                                 "python_env": settings["engine"]["python_env"],
                                 "found": found["engine"]["program"]} if found.get("engine") else {})
    return {"apply": None, "record": record, "fresh": True}
