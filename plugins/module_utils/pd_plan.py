# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Prefill/decode disaggregation (pure logic): an instance of ascend_instances with ``prefill:`` and ``decode:``
pools becomes two instances, NAME-prefill and NAME-decode, planned like any other, joined by vllm-ascend's KV
connector (``--kv-transfer-config``, written here) and fronted by vllm-ascend's proxy (one unit per PD instance).

The rules, from vllm-ascend 0.23.0's source (docs/disaggregation.md names each file):
- each pool's ``kv_connector_extra_config.prefill``/``decode`` carries the pools' TP and DP sizes, its own equal to
  its own layout (utils.py, check_kv_extra_config);
- prefill TP >= decode TP (kv_p2p/mooncake_connector.py), divisible unless the model is DeepSeek-MLA
  (ascend_config.py);
- a pool binds ``kv_port`` .. ``kv_port`` + its NPUs (handshake port kv_port + dp_rank x tp x pp + the worker's
  rank), above the Ascend transport's own range [20000, 20000 + NPUs per node x 1000).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re
import shlex

POOLS = ("prefill", "decode")
# Instance keys that only a PD instance has.
PD_KEYS = ("prefill", "decode", "kv_transfer", "proxy_port")
# What a pool may set for itself; the rest of the instance's keys are shared by both pools.
POOL_SETTINGS = ("hosts", "npus_per_host", "devices", "tensor_parallel_size", "pipeline_parallel_size",
                 "data_parallel_size", "enable_expert_parallel", "expert_parallel_size", "additional_config",
                 "serve_options", "extra_env", "api_port", "dp_rpc_port", "launcher")
PLACEMENT = ("hosts", "npus_per_host", "devices")
KV_SETTINGS = ("connector", "kv_port", "extra_config")
ROLES = {"prefill": "kv_producer", "decode": "kv_consumer"}
# The connector vllm-ascend registers (vllm_ascend/distributed/kv_transfer/__init__.py) that this release builds.
CONNECTORS = ("MooncakeConnectorV1",)
NOT_BUILT = {
    "MooncakeLayerwiseConnector": "its proxy sends each request to the decode first and is called back at "
                                  "/v1/metaserver; this release builds the prefill-first flow of MooncakeConnectorV1",
}
# The vLLM releases whose vllm-ascend connector source was read for these rules.
MOONCAKE_VLLM = ("0.23.0",)
# The tutorial's per-role environment (pd_disaggregation_mooncake_multi_node.md), a default the user's wins over.
ROLE_ENV = {"prefill": {"HCCL_BUFFSIZE": "256"}, "decode": {"HCCL_BUFFSIZE": "600"}}
# vllm-ascend's proxy for the connector, in its examples/disaggregated_prefill_v1 (the sdist on PyPI carries it).
PROXY_SCRIPTS = {"MooncakeConnectorV1": "load_balance_proxy_server_example.py"}
PROXY_UNIT = "ascend-pd-%s.service"
PROXY_ENV = "pd-%s.env"
# NAME-prefill must still be an instance name (24 characters at most).
NAME_MAX = 16


def variable(name, *keys):
    return ".".join(("ascend_instances", name) + keys)


def is_pd(settings):
    return isinstance(settings, dict) and any(key in settings for key in PD_KEYS)


def pool_name(name, pool):
    return "%s-%s" % (name, pool)


def key_problems(name, settings, known_instance_keys):
    """The problems of a PD instance's keys (its name, its pools', kv_transfer's)."""
    problems = []
    if isinstance(name, str) and len(name) > NAME_MAX:
        problems.append("ascend_instances: the instance name %r has a prefill and a decode pool, whose units are "
                        "named %s-prefill and %s-decode: use at most %d characters" % (name, name, name, NAME_MAX))
    for key in PLACEMENT:
        if key in settings:
            problems.append("%s: a prefill/decode instance is placed per pool: set %s and %s"
                            % (variable(name, key), variable(name, "prefill", key), variable(name, "decode", key)))
    for pool in POOLS:
        pool_settings = settings.get(pool)
        if not isinstance(pool_settings, dict):
            problems.append("%s must be a mapping of the %s pool's settings, at least its hosts (found %r)"
                            % (variable(name, pool), pool, pool_settings))
            continue
        if not pool_settings.get("hosts"):
            problems.append("%s is required: the hosts of the %s pool, its head first" % (
                variable(name, pool, "hosts"), pool))
        for key in sorted(pool_settings, key=str):
            if key not in POOL_SETTINGS:
                shared = " (shared by both pools: set %s)" % variable(name, key) if key in known_instance_keys else ""
                problems.append("%s is not a pool setting%s; a pool takes %s"
                                % (variable(name, pool, key), shared, ", ".join(POOL_SETTINGS)))
        options = pool_settings.get("serve_options")
        if isinstance(options, dict) and any(str(k).lstrip("-").replace("-", "_") == "kv_transfer_config"
                                             for k in options):
            problems.append("%s.kv_transfer_config is written by the planner for the pools: set %s instead"
                            % (variable(name, pool, "serve_options"), variable(name, "kv_transfer")))
    options = settings.get("serve_options")
    if isinstance(options, dict) and any(str(k).lstrip("-").replace("-", "_") == "kv_transfer_config"
                                         for k in options):
        problems.append("%s.kv_transfer_config is written by the planner for the pools: set %s instead"
                        % (variable(name, "serve_options"), variable(name, "kv_transfer")))
    kv = settings.get("kv_transfer", {})
    if not isinstance(kv, dict):
        problems.append("%s must be a mapping (found %r)" % (variable(name, "kv_transfer"), kv))
        kv = {}
    for key in sorted(kv, key=str):
        if key not in KV_SETTINGS:
            problems.append("%s is not a KV transfer setting; kv_transfer takes %s"
                            % (variable(name, "kv_transfer", key), ", ".join(KV_SETTINGS)))
    connector = kv.get("connector", CONNECTORS[0])
    if connector in NOT_BUILT:
        problems.append("%s %s is not built by this release: %s" % (
            variable(name, "kv_transfer", "connector"), connector, NOT_BUILT[connector]))
    elif connector not in CONNECTORS:
        problems.append("%s must be one of %s (found %r)" % (
            variable(name, "kv_transfer", "connector"), ", ".join(CONNECTORS), connector))
    extra = kv.get("extra_config", {})
    if not isinstance(extra, dict):
        problems.append("%s must be a mapping (found %r)" % (variable(name, "kv_transfer", "extra_config"), extra))
    elif any(pool in extra for pool in POOLS):
        problems.append("%s: prefill and decode are written by the planner from the pools' layouts"
                        % variable(name, "kv_transfer", "extra_config"))
    return problems


def expand(instances):
    """(instances with every PD instance replaced by its two pools, {PD instance: its settings})."""
    flat, groups = {}, {}
    for name, settings in instances.items():
        if not is_pd(settings):
            flat[name] = settings
            continue
        shared = dict((k, v) for k, v in settings.items() if k not in PD_KEYS)
        for pool in POOLS:
            own = settings[pool]
            merged = dict(shared, **own)
            if isinstance(shared.get("extra_env"), dict) and isinstance(own.get("extra_env"), dict):
                merged["extra_env"] = dict(shared["extra_env"], **own["extra_env"])
            flat[pool_name(name, pool)] = merged
        groups[name] = settings
    return flat, groups


def role_env(pool, extra_env):
    """The pool's environment: the tutorial's per-role defaults under the user's."""
    return dict(ROLE_ENV[pool], **(extra_env or {}))


def renamed(problems, groups):
    """The planner's sentences about NAME-prefill/NAME-decode, naming the PD instance's pool instead."""
    out = []
    for problem in problems:
        for name in groups:
            for pool in POOLS:
                problem = problem.replace(variable(pool_name(name, pool)) + ".", variable(name, pool) + ".")
                problem = re.sub(r"\binstance %s\b" % re.escape(pool_name(name, pool)),
                                 "instance %s (%s pool)" % (name, pool), problem)
        out.append(problem)
    return out


def _is_mla(model_config):
    """DeepSeek's multi-head latent attention (vLLM's is_deepseek_mla reads kv_lora_rank), or None if unknown."""
    if not isinstance(model_config, dict):
        return None
    return model_config.get("kv_lora_rank") is not None


def layout_problems(name, plans, merged):
    """What vllm-ascend's connector would refuse at start-up, refused before anything starts."""
    prefill, decode = (plans[pool_name(name, pool)]["cluster"] for pool in POOLS)
    problems = []
    engine, version, vllm = prefill["engine"], prefill["engine_version"], prefill["vllm_version"]
    if engine != "vllm-ascend":
        return ["instance %s: prefill/decode disaggregation runs on vllm-ascend's KV connectors; %s %s has none "
                "this collection builds" % (name, engine, version)]
    if vllm not in MOONCAKE_VLLM:
        return ["instance %s: vllm-ascend %s (vLLM %s): this release builds the Mooncake connector of vllm-ascend "
                "%s only (vllm-ascend 0.9-0.11 pair pools through LLMDataDistCMgrConnector and a rank table, not "
                "built yet)" % (name, version, vllm, ", ".join(MOONCAKE_VLLM))]
    for key in ("engine", "engine_version", "model", "served_model_name"):
        if prefill[key] != decode[key]:
            problems.append("instance %s: the pools run different %s (prefill %s, decode %s): set it once, at "
                            "%s" % (name, key, prefill[key], decode[key], variable(name, key)))
    ptp, dtp = prefill["tensor_parallel_size"], decode["tensor_parallel_size"]
    if ptp < dtp:
        problems.append("instance %s: %s %d is below %s %d; vllm-ascend's Mooncake connector needs prefill TP >= "
                        "decode TP (mooncake_connector.py)" % (
                            name, variable(name, "prefill", "tensor_parallel_size"), ptp,
                            variable(name, "decode", "tensor_parallel_size"), dtp))
    elif ptp % dtp and _is_mla(merged[pool_name(name, "prefill")].get("model_config")) is False:
        problems.append("instance %s: prefill TP %d is not a multiple of decode TP %d; vllm-ascend needs that for a "
                        "model without DeepSeek's MLA (ascend_config.py)" % (name, ptp, dtp))
    if decode["pipeline_parallel_size"] != 1:
        problems.append("instance %s: %s must be 1 (the connector's decode side has no pipeline stages)"
                        % (name, variable(name, "decode", "pipeline_parallel_size")))
    return problems


def allocate(name, settings, plans, ports, base):
    """The pools' KV port ranges and the proxy's port, held in the allocation: {prefill: port, decode: port,
    proxy: port, proxy_host: host}. KV_TRANSFER.kv_port, where set, is the prefill's (refused in Mooncake's
    range); the rest from BASE (the first port above that range) up."""
    kv = settings.get("kv_transfer") or {}
    out = {}
    start = base
    for pool in POOLS:
        cluster = plans[pool_name(name, pool)]["cluster"]
        hosts = cluster["node_order"]
        count = cluster["npus_required"]
        owner = pool_name(name, pool)
        if pool == "prefill" and kv.get("kv_port") is not None:
            value = kv["kv_port"]
            if not isinstance(value, int) or isinstance(value, bool) or not 0 < value < 65536 - count:
                ports.problems.append("%s must be a TCP port with room for the pool's %d NPUs above it (found %r)"
                                      % (variable(name, "kv_transfer", "kv_port"), count, value))
                continue
            ports.claim(hosts, value, count, owner, "KV transfer ports (kv_port + NPUs)",
                        variable(name, "kv_transfer", "kv_port"))
            out[pool] = value
        else:
            out[pool] = ports.allocate(hosts, start, count, owner, "KV transfer ports (kv_port + NPUs)")
        if out[pool] is not None:
            start = max(start, out[pool] + count)
    decode = plans[pool_name(name, "decode")]["cluster"]
    out["proxy_host"] = decode["node_order"][0]
    wanted = settings.get("proxy_port")
    if wanted is not None:
        if not isinstance(wanted, int) or isinstance(wanted, bool) or not 0 < wanted < 65536:
            ports.problems.append("%s must be a TCP port 1-65535 (found %r)" % (variable(name, "proxy_port"), wanted))
        else:
            ports.claim([out["proxy_host"]], wanted, 1, name, "the PD proxy", variable(name, "proxy_port"))
        out["proxy"] = wanted
    else:
        out["proxy"] = ports.allocate([out["proxy_host"]], decode["api_port"], 1, name, "the PD proxy")
    return out


def transfer_config(name, pool, settings, plans, kv_port):
    """The pool's --kv-transfer-config (KVTransferConfig's fields; tests check them against each vLLM's class)."""
    kv = settings.get("kv_transfer") or {}
    sizes = dict((other, {"tp_size": plans[pool_name(name, other)]["cluster"]["tensor_parallel_size"],
                          "dp_size": plans[pool_name(name, other)]["cluster"]["data_parallel_size"]})
                 for other in POOLS)
    extra = dict(kv.get("extra_config") or {}, **sizes)
    return {"kv_connector": kv.get("connector", CONNECTORS[0]), "kv_role": ROLES[pool], "kv_port": kv_port,
            "engine_id": pool_name(name, pool), "kv_connector_extra_config": extra}


def finish(name, settings, plans, allocated, proxy_dir):
    """Write the pools' KV configuration into their plans (every serve node's argv; VLLM_HOST_IP, the address the
    connector advertises) and return the plan's ``pd`` entry for NAME."""
    pools = {}
    for pool in POOLS:
        plan = plans[pool_name(name, pool)]
        config = transfer_config(name, pool, settings, plans, allocated[pool])
        text = json.dumps(config, sort_keys=True, separators=(",", ":"))
        for node in plan["nodes"].values():
            node["env"].setdefault("VLLM_HOST_IP", node["node_ip"])
            if node["serve_argv"]:
                node["serve_argv"] = node["serve_argv"] + ["--kv-transfer-config", text]
                node["serve_command"] = shlex.join(node["serve_argv"])
        cluster = plan["cluster"]
        cluster["pd"] = {"instance": name, "pool": pool, "kv_transfer_config": config}
        head = cluster["node_order"][0]
        pools[pool] = {"instance": pool_name(name, pool), "hosts": cluster["node_order"], "head": head,
                       "address": plan["nodes"][head]["node_ip"], "api_port": cluster["api_port"],
                       "kv_port": allocated[pool], "kv_ports": cluster["npus_required"],
                       "engine_id": config["engine_id"], "kv_transfer_config": config}
    decode = plans[pool_name(name, "decode")]
    proxy_host = allocated["proxy_host"]
    address = decode["nodes"][proxy_host]["node_ip"]
    connector = pools["prefill"]["kv_transfer_config"]["kv_connector"]
    script = "%s/%s" % (proxy_dir.rstrip("/"), PROXY_SCRIPTS[connector]) if proxy_dir else None
    argv = None
    if script:
        argv = ["%s/bin/python" % decode["cluster"]["python_env"], script, "--host", address,
                "--port", str(allocated["proxy"]),
                "--prefiller-hosts", pools["prefill"]["address"], "--prefiller-ports", str(pools["prefill"]["api_port"]),
                "--decoder-hosts", pools["decode"]["address"], "--decoder-ports", str(pools["decode"]["api_port"])]
    return {
        "connector": connector, "served_model_name": decode["cluster"]["served_model_name"],
        "pools": pools,
        "proxy": {"host": proxy_host, "address": address, "port": allocated["proxy"], "script": script,
                  "argv": argv, "command": shlex.join(argv) if argv else None,
                  "unit": PROXY_UNIT % name, "env_file": "%s/%s" % (decode["cluster"]["config_dir"], PROXY_ENV % name),
                  # vllm-ascend's proxy answers its own health at /healthcheck (it does not ask the pools).
                  "health_path": "/healthcheck"},
    }


def deploy_problems(plan):
    problems = []
    for name, entry in sorted((plan.get("pd") or {}).items()):
        if entry["proxy"]["script"] is None:
            problems.append("instance %s has prefill and decode pools: set ascend_pd_proxy_dir to the directory of "
                            "vllm-ascend's examples/disaggregated_prefill_v1 on %s (the proxy that joins the pools; "
                            "the vllm-ascend sdist on PyPI and its images carry it)" % (name, entry["proxy"]["host"]))
    return problems
