# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Prefill/decode disaggregation (pure logic): an instance of ascend_instances with ``prefill:`` and ``decode:``
pools becomes two instances, NAME-prefill and NAME-decode, planned like any other, joined by vllm-ascend's KV
connector (``--kv-transfer-config``, written here) and fronted by vllm-ascend's proxy (one unit per PD instance).
vllm-ascend 0.23 pairs them through Mooncake (MooncakeConnectorV1); 0.9.1 and 0.11 through LLMDataDist
(LLMDataDistCMgrConnector, with a rank table: pd_ranktable.py). A release whose connector source was not read (0.30,
0.32, 0.33: engines/releases.py) is refused.

The Mooncake rules, from vllm-ascend 0.23.0's source (docs/disaggregation.md names each file):
- each pool's ``kv_connector_extra_config.prefill``/``decode`` carries the pools' TP and DP sizes, its own equal to
  its own layout (utils.py, check_kv_extra_config);
- prefill TP >= decode TP (kv_p2p/mooncake_connector.py), divisible unless the model is DeepSeek-MLA
  (ascend_config.py);
- the prefill pool binds ``kv_port`` .. ``kv_port`` + its NPUs (handshake port kv_port + dp_rank x tp x pp + the
  worker's rank; the decode only connects), above the Ascend transport's own range [20000, 20000 + NPUs per node x
  1000). The decode's range is held too: the layer-wise connector binds on that side.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re
import shlex

from ansible_collections.ascend.inference.plugins.module_utils.engines import releases
from ansible_collections.ascend.inference.plugins.module_utils.runtime import unit_names

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
MOONCAKE = releases.MOONCAKE
LLMDATADIST = releases.LLMDATADIST
# The connectors each vLLM release's vllm-ascend registers and this release builds, the first the default; only
# releases whose source was read (engines/releases.py).
CONNECTORS = dict((vllm, release["kv_connectors"]) for vllm, release in releases.VLLM_RELEASES.items()
                  if release["kv_connectors"])
NOT_BUILT = {
    "MooncakeLayerwiseConnector": "its proxy sends each request to the decode first and is called back at "
                                  "/v1/metaserver; this release builds the prefill-first flow of MooncakeConnectorV1",
    "MooncakeConnectorStoreV1": "it pools the KV cache in a Mooncake store instead of passing it from prefill to "
                                "decode",
}
# LLMDataDist's RPC base port, under the name each release reads (vllm_ascend/envs.py; renamed in 0.10, #2399), and
# its default there. A worker binds base + DP rank x TP + TP rank (llmdatadist_c_mgr_connector.py).
RPC_PORT_ENV = dict((vllm, release["llmdd_rpc_port_env"]) for vllm, release in releases.VLLM_RELEASES.items()
                    if release["llmdd_rpc_port_env"])
RPC_PORT_BASE = 5557
RANK_TABLE_ENV = "DISAGGREGATED_PREFILL_RANK_TABLE_PATH"
RANK_TABLE = "ranktable-%s.json"
# The 0.23 tutorial's per-role environment (pd_disaggregation_mooncake_multi_node.md), under the user's.
ROLE_ENV = {"prefill": {"HCCL_BUFFSIZE": "256"}, "decode": {"HCCL_BUFFSIZE": "600"}}
# vllm-ascend's proxy, in its examples/disaggregated_prefill_v1 (0.9.1: disaggregate_prefill_v1); the sdist on PyPI
# carries it.
PROXY_SCRIPT = "load_balance_proxy_server_example.py"
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
        problems.extend(_option_problems(name, pool_settings.get("serve_options"), (pool,)))
    problems.extend(_option_problems(name, settings.get("serve_options"), ()))
    kv = settings.get("kv_transfer", {})
    if not isinstance(kv, dict):
        problems.append("%s must be a mapping (found %r)" % (variable(name, "kv_transfer"), kv))
        kv = {}
    for key in sorted(kv, key=str):
        if key not in KV_SETTINGS:
            problems.append("%s is not a KV transfer setting; kv_transfer takes %s"
                            % (variable(name, "kv_transfer", key), ", ".join(KV_SETTINGS)))
    connector = kv.get("connector")
    known = sorted(set(c for found in CONNECTORS.values() for c in found))
    if connector in NOT_BUILT:
        problems.append("%s %s is not built by this release: %s" % (
            variable(name, "kv_transfer", "connector"), connector, NOT_BUILT[connector]))
    elif connector is not None and connector not in known:
        problems.append("%s must be one of %s (found %r)" % (
            variable(name, "kv_transfer", "connector"), ", ".join(known), connector))
    extra = kv.get("extra_config", {})
    if not isinstance(extra, dict) or not all(isinstance(key, str) for key in extra):
        problems.append("%s must be a mapping with string keys (found %r)"
                        % (variable(name, "kv_transfer", "extra_config"), extra))
    elif any(pool in extra for pool in POOLS):
        problems.append("%s: prefill and decode are written by the planner from the pools' layouts"
                        % variable(name, "kv_transfer", "extra_config"))
    return problems


# serve_options a pool may not set: the connector's configuration, and context parallelism, which multiplies the
# ports a prefill binds (kv_port + DP rank x TP x PP x PCP, mooncake_connector.py) beyond the planner's count.
PD_OWNED_OPTIONS = {
    "kv_transfer_config": "is written by the planner for the pools: set %s instead",
    "prefill_context_parallel_size": "is not planned with prefill and decode pools (it widens the KV port ranges %s "
                                     "allocates)",
    "decode_context_parallel_size": "is not planned with prefill and decode pools (it widens the KV port ranges %s "
                                    "allocates)",
}


def _option_problems(name, options, where):
    problems = []
    for key in sorted(options or {}, key=str) if isinstance(options, dict) else []:
        option = str(key).lstrip("-").replace("-", "_")
        if option in PD_OWNED_OPTIONS:
            problems.append("%s.%s %s" % (variable(name, *(where + ("serve_options",))), option,
                                          PD_OWNED_OPTIONS[option] % variable(name, "kv_transfer")))
    return problems


def name_problems(groups, names):
    """An instance named like a PD instance's pool would be taken for it."""
    problems = []
    for group in sorted(groups):
        for pool in POOLS:
            if pool_name(group, pool) in names:
                problems.append("ascend_instances: %s is the name of instance %s's %s pool: rename one of them"
                                % (pool_name(group, pool), group, pool))
    return problems


def served_name_problems(groups, plans):
    """A PD instance's served name is its own: the router sends it to the proxy alone."""
    problems = []
    for group in sorted(groups):
        mine = set(pool_name(group, pool) for pool in POOLS)
        served = plans[pool_name(group, "decode")]["cluster"]["served_model_name"]
        others = sorted(name for name, plan in plans.items()
                        if name not in mine and plan["cluster"]["served_model_name"] == served)
        if others:
            problems.append("instance %s (prefill/decode) and %s serve the same name %r: the router sends it to the "
                            "PD instance's proxy only; give each its own served_model_name"
                            % (group, ", ".join(others), served))
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


def role_env(pool, extra_env, settings, merged):
    """The pool's environment: with Mooncake, the 0.23 tutorial's per-role defaults under the user's. SETTINGS: the PD
    instance's; MERGED: the pool's settings (engine and release)."""
    try:
        vllm = releases.vllm_version(merged.get("engine"), merged.get("engine_version") or
                                     releases.DEFAULT_ENGINE_VERSIONS.get(merged.get("engine")))
    except ValueError:
        return extra_env  # make_plan names the release's problem
    if connector_of(settings, vllm) != MOONCAKE or not isinstance(extra_env, (dict, type(None))):
        return extra_env
    return dict(ROLE_ENV[pool], **(extra_env or {}))


def connector_of(settings, vllm):
    return (settings.get("kv_transfer") or {}).get("connector") or CONNECTORS.get(vllm, (MOONCAKE,))[0]


def renamed(problems, groups):
    """The planner's sentences about NAME-prefill/NAME-decode, naming the PD instance's pool instead."""
    out = []
    for problem in problems:
        for name in groups:
            for pool in POOLS:
                # A pool's own key, or one both pools share from the instance.
                problem = re.sub(r"%s\.(\w+)" % re.escape(variable(pool_name(name, pool))),
                                 lambda found: variable(name, *((pool,) if found.group(1) in POOL_SETTINGS else ())
                                                        + (found.group(1),)), problem)
                problem = re.sub(r"\binstance %s\b" % re.escape(pool_name(name, pool)),
                                 "instance %s (%s pool)" % (name, pool), problem)
        out.append(problem)
    return out


# vLLM 0.23's is_deepseek_mla (vllm/transformers_utils/model_arch_config_convertor.py): these model types with a
# kv_lora_rank (DeepSeek V4, with compress_ratios: a head_dim).
MLA_MODEL_TYPES = ("AXK1", "deepseek_v2", "deepseek_v3", "deepseek_v32", "deepseek_v4", "deepseek_mtp", "glm_moe_dsa",
                   "glm4_moe_lite", "glm4_moe_lite_mtp", "kimi_k2", "kimi_linear", "longcat_flash", "pangu_ultra_moe",
                   "pangu_ultra_moe_mtp", "bailing_hybrid")


def _is_mla(model_config):
    """Whether vLLM takes the model for DeepSeek-style MLA, or None if its config.json is unknown."""
    if not isinstance(model_config, dict):
        return None
    config = model_config.get("text_config") if isinstance(model_config.get("text_config"), dict) else model_config
    if config.get("model_type") not in MLA_MODEL_TYPES:
        return False
    if "compress_ratios" in config:
        return config.get("head_dim") is not None
    return config.get("kv_lora_rank") is not None


def layout_problems(name, settings, plans, merged):
    """What vllm-ascend's connector would refuse at start-up, refused before anything starts."""
    prefill, decode = (plans[pool_name(name, pool)]["cluster"] for pool in POOLS)
    problems = []
    engine, version, vllm = prefill["engine"], prefill["engine_version"], prefill["vllm_version"]
    if engine != "vllm-ascend":
        return ["instance %s: prefill/decode disaggregation runs on vllm-ascend's KV connectors; %s %s has none "
                "this collection builds" % (name, engine, version)]
    if vllm not in CONNECTORS:
        # A release whose vllm_ascend/distributed/ was not read (engines/releases.py: no kv_connectors).
        return ["instance %s: vllm-ascend %s (vLLM %s) is refused for prefill/decode pools: its KV connector source "
                "(vllm_ascend/distributed/) could not be read, so this collection does not know which connectors that "
                "release registers; it builds those of vllm-ascend on vLLM %s" % (
                    name, version, vllm, ", ".join(sorted(CONNECTORS, key=releases.version_key)))]
    connector = connector_of(settings, vllm)
    if connector not in CONNECTORS[vllm]:
        return ["instance %s: %s %s on vllm-ascend %s: this release builds %s there" % (
            name, variable(name, "kv_transfer", "connector"), connector, version, ", ".join(CONNECTORS[vllm]))]
    if connector == LLMDATADIST:
        for key in ("kv_port", "extra_config"):
            if (settings.get("kv_transfer") or {}).get(key) is not None:
                problems.append("instance %s: %s is Mooncake's; LLMDataDistCMgrConnector reads neither (its ports are "
                                "%s and up, allocated)" % (name, variable(name, "kv_transfer", key),
                                                           RPC_PORT_ENV[vllm]))
    for key in ("engine", "engine_version", "model", "served_model_name"):
        if prefill[key] != decode[key]:
            problems.append("instance %s: the pools run different %s (prefill %s, decode %s): set it once, at "
                            "%s" % (name, key, prefill[key], decode[key], variable(name, key)))
    ptp, dtp = prefill["tensor_parallel_size"], decode["tensor_parallel_size"]
    if connector != MOONCAKE:
        return problems
    if ptp < dtp:
        problems.append("instance %s: %s %d is below %s %d; vllm-ascend's Mooncake connector needs prefill TP >= "
                        "decode TP (mooncake_connector.py)" % (
                            name, variable(name, "prefill", "tensor_parallel_size"), ptp,
                            variable(name, "decode", "tensor_parallel_size"), dtp))
    elif ptp % dtp and _is_mla(merged[pool_name(name, "prefill")].get("model_config")) is False:
        problems.append("instance %s: prefill TP %d is not a multiple of decode TP %d; vllm-ascend needs that for a "
                        "model without DeepSeek's MLA (ascend_config.py)" % (name, ptp, dtp))
    if decode["pipeline_parallel_size"] != 1:
        # The connector asserts kv_connector_extra_config.decode.pp_size == 1, which carries the decode's PP here.
        problems.append("instance %s: %s must be 1 (vllm-ascend's Mooncake connector asserts the decode's pp_size "
                        "is 1: mooncake_connector.py)" % (name, variable(name, "decode", "pipeline_parallel_size")))
    return problems


def allocate(name, settings, plans, ports, base):
    """The pools' KV port ranges and the proxy's port, held in the allocation: {prefill: port, decode: port,
    proxy: port, proxy_host: host}. Mooncake: KV_TRANSFER.kv_port, where set, is the prefill's (refused in its
    transport's range), the rest from BASE (the first port above that range) up, each pool's NPUs wide.
    LLMDataDist: each pool's RPC ports from vllm-ascend's default up, (DP, at least 2) x TP wide (a worker binds
    base + DP rank x TP + TP rank; without a DP rank, base + TP + TP rank)."""
    kv = settings.get("kv_transfer") or {}
    vllm = plans[pool_name(name, "prefill")]["cluster"]["vllm_version"]
    mooncake = connector_of(settings, vllm) == MOONCAKE
    what = "KV transfer ports (kv_port + NPUs)" if mooncake else "LLMDataDist RPC ports (%s + ranks)" % (
        RPC_PORT_ENV.get(vllm))
    out = {}
    start = base if mooncake else RPC_PORT_BASE
    for pool in POOLS:
        cluster = plans[pool_name(name, pool)]["cluster"]
        hosts = cluster["node_order"]
        count = cluster["npus_required"] if mooncake else max(cluster["data_parallel_size"], 2) * cluster[
            "tensor_parallel_size"]
        owner = pool_name(name, pool)
        if mooncake and pool == "prefill" and kv.get("kv_port") is not None:
            value = kv["kv_port"]
            if not isinstance(value, int) or isinstance(value, bool) or not 0 < value < 65536 - count:
                ports.problems.append("%s must be a TCP port with room for the pool's %d NPUs above it (found %r)"
                                      % (variable(name, "kv_transfer", "kv_port"), count, value))
                out[pool] = None
                continue
            ports.claim(hosts, value, count, owner, what, variable(name, "kv_transfer", "kv_port"))
            out[pool] = value
        else:
            out[pool] = ports.allocate(hosts, start, count, owner, what)
        if out[pool] is not None:
            start = max(start, out[pool] + count)
        out[pool + "_count"] = count
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
    """The pool's --kv-transfer-config (KVTransferConfig's fields; tests check them against each vLLM's class).
    LLMDataDist's is vllm-ascend 0.11's README's (examples/disaggregated_prefill_v1), without its kv_port, which
    that connector does not read."""
    kv = settings.get("kv_transfer") or {}
    vllm = plans[pool_name(name, pool)]["cluster"]["vllm_version"]
    connector = connector_of(settings, vllm)
    if connector == LLMDATADIST:
        return {"kv_connector": connector, "kv_buffer_device": "npu", "kv_role": ROLES[pool], "kv_parallel_size": 1,
                "engine_id": pool_name(name, pool),
                "kv_connector_module_path": "vllm_ascend.distributed.llmdatadist_c_mgr_connector"}
    # The decode reads prefill.pp_size for the prefill's layer split and ports (mooncake_connector.py).
    sizes = dict((other, {"tp_size": plans[pool_name(name, other)]["cluster"]["tensor_parallel_size"],
                          "dp_size": plans[pool_name(name, other)]["cluster"]["data_parallel_size"],
                          "pp_size": plans[pool_name(name, other)]["cluster"]["pipeline_parallel_size"]})
                 for other in POOLS)
    extra = dict(kv.get("extra_config") or {}, **sizes)
    return {"kv_connector": connector, "kv_role": ROLES[pool], "kv_port": kv_port,
            "engine_id": pool_name(name, pool), "kv_connector_extra_config": extra}


def finish(name, settings, plans, allocated, proxy_dir):
    """Write the pools' KV configuration into their plans (every serve node's argv; VLLM_HOST_IP, the address the
    connector advertises) and return the plan's ``pd`` entry for NAME."""
    pools = {}
    vllm = plans[pool_name(name, "prefill")]["cluster"]["vllm_version"]
    rank_table = None
    if connector_of(settings, vllm) == LLMDATADIST:
        rank_table = "%s/%s" % (plans[pool_name(name, "prefill")]["cluster"]["config_dir"], RANK_TABLE % name)
    for pool in POOLS:
        plan = plans[pool_name(name, pool)]
        config = transfer_config(name, pool, settings, plans, allocated[pool])
        text = json.dumps(config, sort_keys=True, separators=(",", ":"))
        for node in plan["nodes"].values():
            # The address the connector advertises, and LLMDataDist finds its rank table entries by.
            node["env"].setdefault("VLLM_HOST_IP", node["node_ip"])
            if rank_table:
                node["env"][RANK_TABLE_ENV] = rank_table
                node["env"][RPC_PORT_ENV[vllm]] = str(allocated[pool])
            if node["serve_argv"]:
                node["serve_argv"] = node["serve_argv"] + ["--kv-transfer-config", text]
                node["serve_command"] = shlex.join(node["serve_argv"])
        cluster = plan["cluster"]
        cluster["pd"] = {"instance": name, "pool": pool, "kv_transfer_config": config}
        head = cluster["node_order"][0]
        pools[pool] = {"instance": pool_name(name, pool), "hosts": cluster["node_order"], "head": head,
                       "address": plan["nodes"][head]["node_ip"], "api_port": cluster["api_port"],
                       "kv_port": allocated[pool], "kv_ports": allocated[pool + "_count"],
                       "engine_id": config["engine_id"], "kv_transfer_config": config}
    decode = plans[pool_name(name, "decode")]
    proxy_host = allocated["proxy_host"]
    address = decode["nodes"][proxy_host]["node_ip"]
    connector = pools["prefill"]["kv_transfer_config"]["kv_connector"]
    script = "%s/%s" % (proxy_dir.rstrip("/"), PROXY_SCRIPT) if proxy_dir else None
    argv = None
    if script:
        argv = ["%s/bin/python" % decode["cluster"]["python_env"], script, "--host", address,
                "--port", str(allocated["proxy"]),
                "--prefiller-hosts", pools["prefill"]["address"], "--prefiller-ports", str(pools["prefill"]["api_port"]),
                "--decoder-hosts", pools["decode"]["address"], "--decoder-ports", str(pools["decode"]["api_port"])]
    return {
        "connector": connector, "served_model_name": decode["cluster"]["served_model_name"],
        "pools": pools, "rank_table": rank_table,
        "proxy": {"instance": name, "host": proxy_host, "address": address, "port": allocated["proxy"],
                  "script": script,
                  "argv": argv, "command": shlex.join(argv) if argv else None,
                  "unit": unit_names.PD_PROXY % name, "env_file": "%s/%s" % (decode["cluster"]["config_dir"], PROXY_ENV % name),
                  # vllm-ascend's proxy answers its own health at /healthcheck (it does not ask the pools).
                  "health_path": "/healthcheck"},
    }


def deploy_problems(plan):
    problems = []
    for name, entry in sorted((plan.get("pd") or {}).items()):
        if plan.get("router") is None:
            # load_balance_proxy_server_example.py checks no key, sends OPENAI_API_KEY to every backend it is given
            # and serves POST /instances/add and /instances/remove.
            problems.append("instance %s has prefill and decode pools: vllm-ascend's proxy checks no client key and "
                            "serves /instances/add and /instances/remove, which hand out the engines' key; keep the "
                            "router (ascend_router_enabled: true): it checks clients' keys and passes completions only"
                            % name)
        if entry["proxy"]["script"] is None:
            problems.append("instance %s has prefill and decode pools: set ascend_pd_proxy_dir to the directory of "
                            "vllm-ascend's examples/disaggregated_prefill_v1 on %s (the proxy that joins the pools; "
                            "the vllm-ascend sdist on PyPI and its images carry it)" % (name, entry["proxy"]["host"]))
    return problems
