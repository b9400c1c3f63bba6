# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One node's preflight verdict from what node_probe read and the plan: its problems (each names the variable
to change), the notes to show, and what must agree across nodes (the engine and model summaries). Pure."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.ascend.inference.plugins.module_utils.engines import releases

DP_RPC_FLAG = "--data-parallel-rpc-port"


def _address_problems(context):
    nics = context["ip_nics"]
    if not nics:
        return ["ascend_node_ip %s is not an address of the node (it defaults to ansible_host)" % context["node_ip"]]
    if context["nic"] not in nics:
        return ["ascend_nic %s does not carry ascend_node_ip %s (found on: %s)"
                % (context["nic"], context["node_ip"], ", ".join(nics))]
    return []


def _npu_problems(probe, node, npu_smi):
    problems = []
    answer = probe["npu_smi"]
    if answer["rc"] != 0:
        problems.append("%s info -m failed (rc %s): %s" % (
            npu_smi, answer["rc"], (answer.get("stderr") or answer.get("stdout") or "").strip()))
    visible = node["visible_devices"]
    found = probe["npu"]["problems"]
    # A chip the plan does not use may lack its device file; one it uses may not.
    problems += [p["message"] for p in found if p["logic"] is None]
    problems += [p["message"] for p in found if p["logic"] is not None and p["logic"] in visible]
    chips = [chip["logic"] for chip in probe["npu"]["chips"]]
    missing = [device for index, device in enumerate(visible) if device not in chips and device not in visible[:index]]
    if answer["rc"] == 0 and missing:
        problems.append("%s: logic IDs %s are not NPU chips of the node (npu-smi info -m lists logic IDs %s)" % (
            node["devices_from"], ",".join(str(d) for d in missing), ",".join(str(c) for c in chips) or "none"))
    return problems


def _cann_problems(probe, context):
    if probe["cann_version"] and not probe["cann_problems"]:
        return []
    problems = list(probe["cann_problems"])
    if not probe["cann_version"]:
        pending = ""
        if context.get("cann_pending"):
            pending = ("; the cann role installs CANN %s on a run without --check, and the checks that read it "
                       "cannot run before" % context["cann_pending"])
        problems.append("preflight_ascend_home: no CANN toolkit under %s (looked for "
                        "ascend-toolkit/latest/*/ascend_toolkit_install.info and "
                        "cann-<version>/*/ascend_toolkit_install.info)%s" % (context["ascend_home"], pending))
    return problems


def _engine(probe, cluster, context, host):
    """(problems, note, summary) of the installed engine."""
    engine = probe.get("engine")
    if engine is None:
        return [], None, None
    if engine["program"] is None:
        return list(engine["problems"]), (
            "%s: %s is neither in %s/bin nor on PATH; install %s %s there before serve starts (its version is not "
            "checked)" % (host, cluster["engine_program"], context["engine_env"], cluster["engine_distribution"],
                          cluster["engine_version"])), None
    versions = engine["versions"]
    summary = "%s %s on vLLM %s" % (cluster["engine_distribution"],
                                    versions.get(cluster["engine_distribution"]) or "none", versions.get(releases.VLLM_DISTRIBUTION) or "none")
    return list(engine["problems"]), None, summary


def _model(probe, cluster, context, host):
    """(problems, note, summary) of the model's files."""
    model = probe.get("model")
    if model is None:
        return [], None, None
    summary = model if model["files"] > 0 else None
    if context.get("model_pending"):
        # In --check the model role copies nothing: what it would copy is not a problem of this run.
        return [], ("%s: ascend_model %s is not checked in --check: the model role copies it to this node on a run "
                    "without --check" % (host, context["model"])), summary
    problems = []
    if model["files"] == 0:
        problems.append("ascend_model %s does not exist or holds no file" % context["model"])
    if model.get("mismatch") is not None:
        problems.append("ascend_model %s does not match the manifest of the model copied to it (%s): %s"
                        % (context["model"], cluster["model_manifest"], model["mismatch"]))
    return problems, None, summary


def _instance_model_problems(probe, plan, host, context):
    """Several instances: the model of each one on this node must hold files (ascend_model is not checked)."""
    found = probe.get("models") or {}
    if context.get("model_pending"):
        return []
    problems = []
    for name, instance in sorted((plan.get("instances") or {}).items()):
        path = instance["cluster"]["model"]
        if host in instance["nodes"] and path in found and not found[path]["files"]:
            problems.append("the model of instance %s, %s, does not exist or holds no file (ascend_instances.%s.model, "
                            "else ascend_model)" % (name, path, name))
    return problems


# What vllm-ascend's prefill/decode proxy imports (examples/disaggregated_prefill_v1/load_balance_proxy_server_example.py;
# vLLM's fastapi[standard] brings them).
PROXY_DISTRIBUTIONS = ("fastapi", "httpx", "uvicorn")
# Mooncake's transfer engine, which the connector imports (kv_p2p/mooncake_connector.py: mooncake.engine): the NPU
# build on PyPI, or a build from Mooncake's source, which is named without the suffix.
TRANSFER_ENGINES = ("mooncake-transfer-engine-npu", "mooncake-transfer-engine")


def _pd_problems(probe, plan, host):
    """Prefill/decode pools: Mooncake's transfer engine where a pool runs; the proxy's script and the packages it
    imports on the host that runs it."""
    problems = []
    python = probe.get("python") or {}
    found = python.get("distributions") or {}
    for name, entry in sorted((plan.get("pd") or {}).items()):
        pools = [pool for pool in entry["pools"].values() if host in pool["hosts"]]
        if pools and entry["connector"].startswith("Mooncake") and python.get("version") and not any(found.get(d) for d in TRANSFER_ENGINES):
            problems.append("instance %s: %s, the engine's Python, has no Mooncake transfer engine (%s), which "
                            "vllm-ascend's connector imports (mooncake.engine): pip install "
                            "mooncake-transfer-engine-npu there" % (name, python.get("path"), " or ".join(TRANSFER_ENGINES)))
        proxy = entry["proxy"]
        if proxy["host"] != host or not proxy["script"]:
            continue
        if not (probe.get("pd_proxy") or {}).get(proxy["script"]):
            problems.append("instance %s: vllm-ascend's proxy %s does not exist (ascend_pd_proxy_dir: the directory "
                            "examples/disaggregated_prefill_v1 of vllm-ascend's source, which its sdist on PyPI holds)"
                            % (name, proxy["script"]))
        missing = [d for d in PROXY_DISTRIBUTIONS if python.get("version") and not found.get(d)]
        if missing:
            problems.append("instance %s: the proxy runs on %s, which lacks %s (vLLM installs them with the engine)"
                            % (name, python.get("path"), ", ".join(missing)))
    return problems


def _pd_ports(plan, host):
    """[(port, variable)] of the prefill/decode pools' KV ports and proxies on this node: MooncakeConnectorV1 binds
    on the prefill only (the decode connects), LLMDataDist's workers on both sides."""
    wanted = []
    for name, entry in sorted((plan.get("pd") or {}).items()):
        mooncake = entry["connector"].startswith("Mooncake")
        what = "KV port" if mooncake else "LLMDataDist RPC port"
        for pool, found in sorted(entry["pools"].items()):
            if host in found["hosts"] and not (mooncake and pool == "decode"):
                wanted += [(port, "ascend_instances.%s.kv_transfer (the %s pool's %s %d of %d-%d)" % (
                    name, pool, what, port, found["kv_port"], found["kv_port"] + found["kv_ports"] - 1))
                    for port in range(found["kv_port"], found["kv_port"] + found["kv_ports"])]
        if entry["proxy"]["host"] == host:
            wanted.append((entry["proxy"]["port"], "ascend_instances.%s.proxy_port" % name))
    return wanted


def node_ports(plan, host):
    """[(port, variable)] this node's services listen on."""
    cluster, node = plan["cluster"], plan["nodes"][host]
    ports = []
    if node["serves_api"]:
        ports.append((cluster["api_port"], "ascend_api_port"))
    if node["role"] == "head" and node.get("ray_start_argv"):
        ports.append((cluster["ray_port"], "ascend_ray_port"))
    if node["role"] == "head" and DP_RPC_FLAG in (node.get("serve_argv") or []):
        ports.append((cluster["dp_rpc_port"], "ascend_dp_rpc_port"))
    return ports


def _port_problems(probe, plan, host):
    """A port the node's services need that something else holds (this collection's units may hold theirs)."""
    ours = set(plan["cluster"]["units"].values())
    wanted = node_ports(plan, host)
    for name, instance in sorted((plan.get("instances") or {}).items()):
        # Several instances: each one's ports on this node, named by the instance's own variables.
        ours |= set(instance["cluster"]["units"].values())
        if host in instance["nodes"]:
            wanted += [(port, "ascend_instances.%s.%s" % (name, variable.replace("ascend_", "", 1)))
                       for port, variable in node_ports(instance, host)]
    ours |= set(entry["proxy"]["unit"] for entry in (plan.get("pd") or {}).values())
    wanted += _pd_ports(plan, host)
    router = plan.get("router")
    if router and host in router["hosts"]:
        ours.add(router["unit"])
        wanted += [(router["port"], "ascend_router_port"), (router["metrics_port"], "ascend_router_metrics_port")]
    problems = []
    for port, variable in wanted:
        holders = [s for s in probe["listeners"] if int(s["port"]) == int(port)]
        if not holders or holders[0]["unit"] in ours:
            continue
        holder = holders[0]
        if holder["process"]:
            who = "%s (pid %s)" % (holder["process"], holder["pid"])
        else:
            who = "a process of uid %s%s" % ("?" if holder["uid"] is None else holder["uid"],
                                             " in " + holder["unit"] if holder["unit"] else "")
        problems.append("%s %s is in use by %s" % (variable, port, who))
    return problems


def node_checks(probe, plan, host, context):
    """{problems, notes, engine_summary, model_summary} of one node.

    ``probe`` is node_probe's result; ``context`` holds what the inventory and the run say of the node:
    node_ip, ip_nics (the interfaces carrying it), nic (ascend_nic), npu_smi, ascend_home, engine_env, model
    (ascend_model), cann_pending (the version the cann role installs on a run without --check, in --check),
    model_pending (--check and the model role has yet to copy the model)."""
    cluster, node = plan["cluster"], plan["nodes"][host]
    host_mode = cluster["runtime"]["mode"] == "host"
    problems = _address_problems(context) + _npu_problems(probe, node, context["npu_smi"])
    if host_mode:  # in container mode the image brings CANN
        problems += _cann_problems(probe, context)
    if probe.get("container_mounts_missing"):
        problems.append("ascend_runtime container: the engine container mounts %s from the host (the NPU driver's "
                        "files, as the vllm-ascend document runs its image), which this node lacks; install the NPU "
                        "driver (and its tools) on the host" % ", ".join(probe["container_mounts_missing"]))
    notes = ["%s: %s" % (host, "; ".join(probe["cann_notes"]))] if probe.get("cann_notes") else []
    engine_problems, engine_note, engine_summary = _engine(probe, cluster, context, host)
    problems += engine_problems + list(probe["service"]["problems"])
    model_problems, model_note, model_summary = _model(probe, cluster, context, host)
    problems += model_problems + _instance_model_problems(probe, plan, host, context) + _port_problems(probe, plan, host)
    problems += _pd_problems(probe, plan, host)
    notes += [note for note in (engine_note, model_note) if note]
    return {"problems": problems, "notes": notes, "engine_summary": engine_summary, "model_summary": model_summary}
