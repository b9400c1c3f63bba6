# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure planning logic: inventory settings in, every node's commands out.

No Ansible and no I/O here, so that the rules can be unit tested and reused by
the module, the playbooks and the tests alike.  ``make_plan`` either returns a
plan or raises ``PlanError`` carrying *every* problem it found, each naming the
inventory variable, the host and the numbers involved.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress
import json
import shlex

from ansible_collections.ascend.inference.plugins.module_utils.runtime import container
from ansible_collections.ascend.inference.plugins.module_utils.engines import option_tables, releases
from ansible_collections.ascend.inference.plugins.module_utils.plan import input_rules, model_shape
from ansible_collections.ascend.inference.plugins.module_utils.runtime import service_account, unit_names

LAUNCHERS = ("ray", "mp")
MODEL_BACKENDS = ("MindFormers", "Native", "MindOne")

# Options the planner computes; a user who sets them in ascend_serve_options is
# told which inventory variable to use instead. The same list for every vLLM release.
OWNED_OPTIONS = {
    "model": "ascend_model",
    "model_tag": "ascend_model",
    "served_model_name": "ascend_served_model_name",
    "port": "ascend_api_port",
    "api_key": "ascend_api_key (passed as VLLM_API_KEY, never on the command line)",
    "hf_token": "HF_TOKEN in ascend_extra_env (a secret: kept in a 0600 file, never on the command line)",
    "tensor_parallel_size": "ascend_tensor_parallel_size",
    "pipeline_parallel_size": "ascend_pipeline_parallel_size",
    "data_parallel_size": "ascend_data_parallel_size",
    "data_parallel_size_local": "ascend_data_parallel_size_local (per host)",
    "data_parallel_start_rank": "ascend_data_parallel_start_rank (per host)",
    "data_parallel_address": "ascend_node_ip of the head",
    "data_parallel_rpc_port": "ascend_dp_rpc_port",
    "data_parallel_backend": "ascend_launcher",
    "distributed_executor_backend": "ascend_launcher",
    "headless": "the ascend_head / ascend_workers groups",
    "enable_expert_parallel": "ascend_enable_expert_parallel",
    "additional_config": "ascend_additional_config",
}

# Options that contradict the layout the planner builds: refused on every release, with the reason.
LAYOUT_OPTIONS = {
    "host": "the API server listens on every address; clients and the readiness check use the head's "
            "ascend_node_ip and ascend_api_port",
    "uds": "the API is served on TCP ascend_api_port, where the readiness check and clients reach it",
    "config": "a config file could set what the planner owns; give its options in ascend_serve_options",
    "grpc": "the readiness check and the smoke test speak the OpenAI HTTP API",
    "data_parallel_rank": "external load balancing (one API server per DP rank) is not a layout the planner "
                          "builds; it gives every node its ranks",
    "data_parallel_hybrid_lb": "the planner builds internal load balancing: one API server on the head",
    "data_parallel_external_lb": "the planner builds internal load balancing: one API server on the head",
    "data_parallel_multi_port_external_lb": "the planner builds internal load balancing: one API server on the head",
    "nnodes": "multi-node model parallelism runs through Ray here (ascend_launcher: ray)",
    "node_rank": "multi-node model parallelism runs through Ray here (ascend_launcher: ray)",
    "master_addr": "multi-node model parallelism runs through Ray here (ascend_launcher: ray)",
    "master_port": "multi-node model parallelism runs through Ray here (ascend_launcher: ray)",
}

# The one list of options refused on every vLLM release (docs/failures.md: "What the planner refuses").
REFUSED_OPTIONS = sorted(set(OWNED_OPTIONS) | set(LAYOUT_OPTIONS))

# Options that belong to the API server: given to the node that serves the API
# only (vLLM 0.23 and later refuse --api-server-count on a headless node).
API_NODE_OPTIONS = ("api_server_count",)

# Where the collection keeps its files on a node (ascend_config_dir) and the Python environment that holds Ray
# and the engine (ascend_python_env); every role reads them, and the files in the directory, from the plan.
CONFIG_DIR = "/etc/ascend-inference"
PYTHON_ENV = "/opt/ascend-inference/venv"
# The files in the config directory that more than one role reads: the node environment and its secrets (node_env
# writes them, the units load them), Ray's environment (ray_cluster writes it, serve's unit and the Ray clients load it) and each
# node's record of the model copied to it (the model role writes it, the preflight reads it).
CONFIG_FILES = {"node_env_file": "node.env", "secrets_env_file": "secrets.env", "ray_env_file": "ray.env",
                "serve_env_file": "serve.env", "model_manifest": "model.manifest.json"}

DEFAULTS = {
    "engine_version": None,
    "launcher": "ray",
    "served_model_name": None,
    "tensor_parallel_size": 1,
    "pipeline_parallel_size": 1,
    "data_parallel_size": 1,
    "enable_expert_parallel": False,
    "expert_parallel_size": None,
    "additional_config": {},
    "serve_options": {},
    "extra_env": {},
    # Secret variables of ascend_extra_env by name, each with the problems found in its
    # value: the plan role keeps the values themselves out of the plan (and its output).
    "secret_env": {},
    "api_port": 8000,
    "ray_port": 6379,
    "ray_dashboard_host": "127.0.0.1",
    "dp_rpc_port": 29550,
    # The model role's short-lived rsync daemons, while a copy runs; None where the role copies nothing.
    "model_transfer_port": None,
    "model_backend": "MindFormers",
    "model_config": None,
    "devices_pending": False,
    # False when no node was probed yet (playbooks/plan.yml): assumed devices are then expected.
    "devices_probed": True,
    # NPUs a single model leaves unused are warned about (an instance's share is the user's choice of placement).
    "idle_warning": True,
    # Who runs Ray and the engine: on hosts a dedicated, confined account unless root is chosen
    # (None: that default); in container mode the image's root.
    "service_user": None,
    # Where Ray and the engine run: on the host, or in one engine container per node.
    "runtime": "host",
    "container_image": None,
    "container_engine": "auto",
    "config_dir": CONFIG_DIR,
    "python_env": PYTHON_ENV,
}
HOST_SERVICE_USER = "ascend-inference"
NODE_DEFAULTS = {
    "head": False,
    "nic": None,
    "npu_devices": None,
    "device_map": None,
    "npu_family": None,
    "npus_per_node": 8,
    "data_parallel_size_local": None,
    "data_parallel_start_rank": None,
    # The group of the node's NPU device files, as the preflight found it.
    "device_group": None,
}


class PlanError(Exception):
    """The layout is invalid; ``errors`` lists every reason."""

    def __init__(self, errors):
        self.errors = list(errors)
        super(PlanError, self).__init__("\n".join(self.errors))


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _span(start, count):
    return "rank %d" % start if count == 1 else "ranks %d-%d" % (start, start + count - 1)


class _Checker:
    """Collects errors instead of stopping at the first."""

    def __init__(self):
        self.errors = []

    def fail(self, message, *args):
        self.errors.append(message % args if args else message)

    def positive(self, variable, value, host=None):
        if not _is_int(value) or value < 1:
            self.fail("%s%s must be a positive integer (found %r)", variable,
                      " on host %s" % host if host else "", value)
            return False
        return True

    def raise_if_any(self):
        if self.errors:
            raise PlanError(self.errors)


def _with_defaults(settings, defaults):
    merged = dict(defaults)
    merged.update({k: v for k, v in settings.items() if v is not None})
    return merged


def _node_devices(node, check):
    """The NPU ids a node may use: explicit, or 0..npus_per_node-1."""
    devices = node["npu_devices"]
    if devices is None:
        if check.positive("ascend_npus_per_node", node["npus_per_node"], node["name"]):
            return list(range(node["npus_per_node"])), "ascend_npus_per_node"
        return [], "ascend_npus_per_node"
    if not isinstance(devices, list) or not devices or not all(_is_int(d) and d >= 0 for d in devices):
        check.fail("ascend_npu_devices on host %s must be a non-empty list of NPU ids >= 0 (found %r)",
                   node["name"], devices)
        return [], "ascend_npu_devices"
    if len(set(devices)) != len(devices):
        check.fail("ascend_npu_devices on host %s lists a device twice (found %r)", node["name"], devices)
    return list(devices), "ascend_npu_devices"


def _physical_devices(node, devices, check):
    """The physical ID (/dev/davinciN, hccn_tool -i) of each logic ID the node uses."""
    mapping = {}
    for logic, physical in (node["device_map"] or {}).items():
        try:
            mapping[int(logic)] = int(physical)
        except (TypeError, ValueError):
            check.fail("ascend_npu_device_map on host %s must map logic IDs to physical IDs, both integers "
                       "(found %r: %r)", node["name"], logic, physical)
            continue
        if mapping[int(logic)] < 0 or int(logic) < 0:
            check.fail("ascend_npu_device_map on host %s maps %r to %r; IDs are >= 0", node["name"], logic, physical)
    physical = [mapping.get(device, device) for device in devices]
    for twice in sorted(set(p for p in physical if physical.count(p) > 1)):
        check.fail("host %s uses physical ID %d (/dev/davinci%d) for several logic IDs (%s): check "
                   "ascend_npu_device_map", node["name"], twice, twice,
                   ", ".join(str(d) for d, p in zip(devices, physical) if p == twice))
    return physical


def _order_nodes(nodes, check):
    heads = [n for n in nodes if n["head"]]
    if len(heads) != 1:
        check.fail("group ascend_head must hold exactly one host (found %d: %s)",
                   len(heads), ", ".join(n["name"] for n in heads) or "none")
    names = [n["name"] for n in nodes]
    for name in sorted(set(n for n in names if names.count(n) > 1)):
        check.fail("host %s appears twice in the node list", name)
    return heads[:1] + [n for n in nodes if not n["head"]] if heads else list(nodes)


def _check_node_ips(nodes, check):
    seen = {}
    for node in nodes:
        ip = node["node_ip"]
        try:
            address = ipaddress.ip_address(ip)
        except (ValueError, TypeError):
            check.fail("ascend_node_ip on host %s must be an IP address (found %r; it defaults to "
                       "ansible_host)", node["name"], ip)
            continue
        if address.version != 4:
            # Ray's address, the members-only firewall and the node probe are IPv4 only.
            check.fail("ascend_node_ip on host %s is the IPv6 address %s: the collection needs the node's "
                       "IPv4 address (Ray's address, the firewall and the probe are IPv4 only)", node["name"], ip)
            continue
        seen.setdefault(ip, []).append(node["name"])
    for ip, hosts in sorted(seen.items()):
        if len(hosts) > 1:
            check.fail("ascend_node_ip %s is used by several hosts: %s", ip, ", ".join(hosts))


def _local_dp(nodes, dp, check):
    """DP ranks per node: explicit values kept, the rest split evenly, head first."""
    explicit = {}
    for node in nodes:
        value = node["data_parallel_size_local"]
        if value is None:
            continue
        if not _is_int(value) or value < 0:
            check.fail("ascend_data_parallel_size_local on host %s must be an integer >= 0 (found %r)",
                       node["name"], value)
            value = 0
        explicit[node["name"]] = value
    free = [n["name"] for n in nodes if n["name"] not in explicit]
    remaining = dp - sum(explicit.values())
    local = dict(explicit)
    if free:
        share, extra = divmod(max(remaining, 0), len(free))
        for index, name in enumerate(free):
            local[name] = share + (1 if index < extra else 0)
    total = sum(local.values())
    if total != dp:
        check.fail("ascend_data_parallel_size_local must sum to ascend_data_parallel_size %d over the "
                   "cluster (found %s = %d)", dp,
                   " + ".join("%s %d" % (n["name"], local[n["name"]]) for n in nodes), total)
    return local


def _start_ranks(nodes, local, launcher, dp, check):
    """First DP rank of each node; under mp the ranges must tile 0..DP-1."""
    ranks = {}
    next_rank = 0
    for node in nodes:
        given = node["data_parallel_start_rank"]
        if given is not None and launcher != "mp":
            check.fail("ascend_data_parallel_start_rank on host %s has no effect under the %s launcher "
                       "(only mp nodes take a start rank); remove it", node["name"], launcher)
        if given is not None and (not _is_int(given) or given < 0):
            check.fail("ascend_data_parallel_start_rank on host %s must be an integer >= 0 (found %r)",
                       node["name"], given)
            given = None
        ranks[node["name"]] = next_rank if given is None else given
        next_rank = ranks[node["name"]] + local[node["name"]]
    if launcher != "mp":
        return ranks
    if nodes and ranks[nodes[0]["name"]] != 0:
        check.fail("ascend_data_parallel_start_rank on head %s must be 0 (found %d)",
                   nodes[0]["name"], ranks[nodes[0]["name"]])
    balanced = sum(local.values()) == dp  # else the sum error already explains
    owner = {}
    for node in nodes:
        name = node["name"]
        for rank in range(ranks[name], ranks[name] + local[name]):
            if rank in owner:
                check.fail("start-rank overlap: host %s (%s) and host %s both claim DP rank %d",
                           name, _span(ranks[name], local[name]), owner[rank], rank)
                break
            if rank >= dp and balanced:
                check.fail("host %s claims DP rank %d (%s) but ascend_data_parallel_size is %d",
                           name, rank, _span(ranks[name], local[name]), dp)
                break
            owner[rank] = name
    missing = [str(rank) for rank in range(dp) if rank not in owner]
    if missing and balanced:
        check.fail("DP ranks owned by no node: %s; check ascend_data_parallel_start_rank", ", ".join(missing))
    return ranks


def _render_option(name, spec, value, check):
    """argv elements for one ascend_serve_options entry (no shell involved)."""
    flag = "--" + name.replace("_", "-")
    if value is None:
        return []
    kind = spec["kind"]
    if kind in ("flag", "bool_optional"):
        if not isinstance(value, bool):
            check.fail("ascend_serve_options.%s is a switch: set true or false (found %r)", name, value)
            return []
        if value:
            return [flag]
        if kind == "flag":
            return []
        return [spec.get("negative", "--no-" + name.replace("_", "-"))]
    if isinstance(value, bool):
        check.fail("ascend_serve_options.%s takes a value, not %r", name, value)
        return []
    values = value if isinstance(value, list) else [value]
    if kind != "multi" and len(values) != 1:
        check.fail("ascend_serve_options.%s takes one value (found %r)", name, value)
        return []
    rendered = []
    for item in values:
        text = json.dumps(item, sort_keys=True) if isinstance(item, (dict, list)) else str(item)
        if "choices" in spec and text not in spec["choices"]:
            check.fail("ascend_serve_options.%s must be one of %s (found %r)",
                       name, ", ".join(spec["choices"]), item)
        if spec.get("type") in ("int", "float") and not _is_number_text(text, spec["type"]):
            check.fail("ascend_serve_options.%s must be a%s %s (found %r)",
                       name, "n" if spec["type"] == "int" else "", spec["type"], item)
        rendered.append(text)
    # "--flag=value" keeps a value that starts with "-" from reading as a flag.
    if len(rendered) == 1 and rendered[0].startswith("-"):
        return ["%s=%s" % (flag, rendered[0])]
    return [flag] + rendered


def _is_number_text(text, type_name):
    try:
        (int if type_name == "int" else float)(text)
    except ValueError:
        # vLLM's human readable ints accept 1k / 2M / 1Gi style values too.
        return type_name == "int" and text[:-1].replace(".", "", 1).isdigit() and text[-1:].lower() in "kmgt"
    return True


def _user_options(options, release, check):
    """(argv for every serve node, argv for the API node only) from ascend_serve_options."""
    table = release["options"] if release else {}
    normalised = {}
    for key in sorted(options):
        name = _option_name(key)
        if name in OWNED_OPTIONS:
            check.fail("ascend_serve_options.%s is set by the planner; use %s instead", key, OWNED_OPTIONS[name])
        elif name in LAYOUT_OPTIONS:
            check.fail("ascend_serve_options.%s is refused: %s", key, LAYOUT_OPTIONS[name])
        elif release and name not in table:
            check.fail("ascend_serve_options.%s is not an option of `vllm serve` in vLLM %s (%s); "
                       "abbreviations are not accepted", key, release["vllm"], release["label"])
        elif name in normalised:
            check.fail("ascend_serve_options sets %s twice (as %s)", name, key)
        else:
            normalised[name] = options[key]
            for problem in input_rules.control_characters("ascend_serve_options.%s" % key, options[key]):
                check.fail(problem)
            for problem in input_rules.finite_numbers("ascend_serve_options.%s" % key, options[key]):
                check.fail(problem)
    everywhere, api_node = [], []
    for name in sorted(normalised):
        if name in table:
            argv = _render_option(name, table[name], normalised[name], check)
            (api_node if name in API_NODE_OPTIONS else everywhere).extend(argv)
    return everywhere, api_node


def _option_name(key):
    """An ascend_serve_options key as vLLM's option name (--max-model-len, max-model-len: max_model_len)."""
    return str(key).lstrip("-").replace("-", "_")


def _serve_option(options, name):
    """The value ascend_serve_options gives option NAME under any of its spellings."""
    for key, value in (options or {}).items():
        if _option_name(key) == name:
            return value
    return None


def _engine_release(settings, check):
    """The engine release, the vLLM it runs on and that vLLM's option table; None when unknown."""
    engine = settings["engine"]
    if engine not in releases.ENGINES:
        return None
    version = settings["engine_version"]
    if version is None:
        version = releases.DEFAULT_ENGINE_VERSIONS[engine]
    try:
        vllm = releases.vllm_version(engine, version)
    except ValueError as exc:
        check.fail("ascend_engine_version: %s", exc)
        return None
    return {"engine_version": str(version), "vllm": vllm,
            "label": "%s %s" % (engine, version),
            "options": option_tables.OPTION_TABLES[vllm].SERVE_OPTIONS}


def _expert_parallel(settings, tp, dp, check):
    """EP size (or None when off) and the additional-config it needs."""
    enabled = settings["enable_expert_parallel"]
    size = settings["expert_parallel_size"]
    user_config = settings["additional_config"]
    if not isinstance(user_config, dict):
        check.fail("ascend_additional_config must be a mapping (found %r)", user_config)
        user_config = {}
    for problem in input_rules.json_object("ascend_additional_config", user_config):
        check.fail(problem)
    if "expert_parallel" in user_config:
        check.fail("ascend_additional_config.expert_parallel is set by the planner; "
                   "use ascend_expert_parallel_size instead")
    config = {k: v for k, v in user_config.items() if k != "expert_parallel"}
    if size is not None and not check.positive("ascend_expert_parallel_size", size):
        return None, config
    if not enabled:
        if size is not None:
            check.fail("ascend_expert_parallel_size %d has no effect while ascend_enable_expert_parallel "
                       "is false; enable expert parallelism or remove the size", size)
        return None, config
    if size is None:
        return tp * dp, config
    if settings["engine"] != "vllm-mindspore":
        check.fail("ascend_expert_parallel_size is read by vllm-mindspore only; with %s the EP size is "
                   "TP x DP = %d: remove ascend_expert_parallel_size", settings["engine"], tp * dp)
        return tp * dp, config
    if size > tp * dp:
        check.fail("ascend_expert_parallel_size %d is larger than TP x DP = %d x %d = %d",
                   size, tp, dp, tp * dp)
    elif (tp * dp) % size:
        check.fail("ascend_expert_parallel_size %d does not divide TP x DP = %d x %d = %d: the experts are "
                   "spread over groups of equal size", size, tp, dp, tp * dp)
    config["expert_parallel"] = size
    return size, config


def _env(settings, node, multi_node, devices):
    """The node's environment, exactly the variables the seeds export."""
    engine, launcher, nic = settings["engine"], settings["launcher"], node["nic"]
    env = {"ASCEND_RT_VISIBLE_DEVICES": ",".join(str(d) for d in devices)}
    if engine == "vllm-mindspore":
        env.update({
            "MS_ENABLE_LCCL": "off",
            "HCCL_OP_EXPANSION_MODE": "AIV",
            "MS_ALLOC_CONF": "enable_vmm:true",
            "VLLM_MS_MODEL_BACKEND": settings["model_backend"],
        })
        if launcher == "ray":
            env["PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION"] = "python"
    if engine == "vllm-ascend":
        if launcher == "ray":
            env["RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES"] = "1"
        if multi_node:
            env["HCCL_IF_IP"] = node["node_ip"]
            if launcher == "mp":
                env.update({"OMP_PROC_BIND": "false", "HCCL_BUFFSIZE": "1024"})
    # Cross-node traffic (gloo, HCCL, TP) must leave through the cluster NIC;
    # only the node can tell its name, so an undetected NIC stays None.
    if multi_node or launcher == "ray":
        for name in ("GLOO_SOCKET_IFNAME", "HCCL_SOCKET_IFNAME", "TP_SOCKET_IFNAME"):
            env[name] = nic
    extra = settings["extra_env"]
    env.update({str(k): (None if v is None else str(v)) for k, v in extra.items()})
    return env


def _ray_start_argv(settings, node, head):
    common = ["--node-ip-address=%s" % node["node_ip"], "--disable-usage-stats", "--block"]
    if node is head:
        return ["ray", "start", "--head", "--port=%d" % settings["ray_port"],
                "--dashboard-host=%s" % settings["ray_dashboard_host"]] + common
    return ["ray", "start", "--address=%s:%d" % (head["node_ip"], settings["ray_port"])] + common


def _check_capacity(settings, nodes, devices, local, world, check):
    tp, pp, dp = (settings[k] for k in ("tensor_parallel_size", "pipeline_parallel_size",
                                        "data_parallel_size"))
    total = sum(len(devices[n["name"]]) for n in nodes)
    if tp * pp * dp > total:
        check.fail("TP %d x PP %d x DP %d = %d NPUs is more than the cluster's %d NPUs (%s)",
                   tp, pp, dp, tp * pp * dp, total,
                   ", ".join("%s %d" % (n["name"], len(devices[n["name"]])) for n in nodes))
        return
    largest = max(len(devices[n["name"]]) for n in nodes)
    if settings["launcher"] == "mp":
        if world > largest:
            check.fail("ascend_tensor_parallel_size %d x ascend_pipeline_parallel_size %d = %d NPUs does not fit "
                       "on one node (largest has %d) under ascend_launcher mp; cross-node "
                       "model parallelism needs ascend_launcher: ray", tp, pp, world, largest)
            return
        for node in nodes:
            name = node["name"]
            if local[name] == 0:
                check.fail("host %s has ascend_data_parallel_size_local 0 under the mp launcher; every mp "
                           "node runs at least one DP rank: raise ascend_data_parallel_size or drop the host",
                           name)
            elif local[name] * world > len(devices[name]):
                check.fail("host %s: ascend_data_parallel_size_local %d x TP %d x PP %d = %d NPUs but the "
                           "node has %d (ascend_npu_devices)", name, local[name], tp, pp,
                           local[name] * world, len(devices[name]))
    elif dp > 1:
        # Ray places each DP rank's TP x PP bundles on a single node.
        head = nodes[0]["name"]
        if world > largest:
            check.fail("with ascend_data_parallel_size %d under Ray each DP rank's TP %d x PP %d = %d NPUs "
                       "must fit on one node (largest has %d)", dp, tp, pp, world, largest)
        elif local[head] * world > len(devices[head]):
            check.fail("head %s: ascend_data_parallel_size_local %d x TP %d x PP %d = %d NPUs but the head "
                       "has %d", head, local[head], tp, pp, local[head] * world, len(devices[head]))
        elif sum(len(devices[n["name"]]) // world for n in nodes) < dp:
            check.fail("the nodes can hold only %d DP ranks of TP %d x PP %d NPUs each, not "
                       "ascend_data_parallel_size %d", sum(len(devices[n["name"]]) // world for n in nodes),
                       tp, pp, dp)


def _idle(settings, nodes, devices, local, world):
    """A warning naming the NPUs the layout leaves unused (a typo in a size often does), or none."""
    tp, pp, dp = (settings[k] for k in ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size"))
    layout = "TP %d x PP %d x DP %d" % (tp, pp, dp)
    sizes = "ascend_tensor_parallel_size, ascend_pipeline_parallel_size, ascend_data_parallel_size"
    if settings["launcher"] == "mp":
        # Each mp node runs its DP ranks on its lowest NPUs.
        idle = [(n["name"], devices[n["name"]][local[n["name"]] * world:]) for n in nodes]
        idle = [(host, left) for host, left in idle if left]
        if not idle:
            return []
        return ["%s leaves NPUs idle: %s. Check %s, or give those hosts ascend_npu_devices"
                % (layout, "; ".join("host %s NPUs %s" % (host, ",".join(str(d) for d in left))
                                     for host, left in idle), sizes)]
    total = sum(len(devices[n["name"]]) for n in nodes)
    used = tp * pp * dp
    if used >= total:
        return []
    # Ray places the ranks: which NPUs stay idle is its choice, how many is not.
    return ["%s uses %d of the cluster's %d NPUs (%s): %d stay idle. Check %s" % (
        layout, used, total, ", ".join("host %s %d" % (n["name"], len(devices[n["name"]])) for n in nodes),
        total - used, sizes)]


def _serve_argv(settings, node, head, multi_node, local, ranks, world, devices, shared, api_node):
    """The node's serve command, or None when the node serves nothing."""
    launcher, dp = settings["launcher"], settings["data_parallel_size"]
    if launcher == "ray" and node is not head:
        return None
    name = node["name"]
    argv = list(releases.ENGINES[settings["engine"]]["serve"]) + [settings["model"]]
    if node is not head:
        argv.append("--headless")
    argv += ["--tensor-parallel-size", str(settings["tensor_parallel_size"])]
    if settings["pipeline_parallel_size"] > 1:
        argv += ["--pipeline-parallel-size", str(settings["pipeline_parallel_size"])]
    if launcher == "ray" and world > len(devices[head["name"]]):
        argv += ["--distributed-executor-backend", "ray"]
    if dp > 1:
        argv += ["--data-parallel-size", str(dp)]
        if multi_node:
            argv += ["--data-parallel-size-local", str(local[name])]
        if launcher == "ray":
            argv += ["--data-parallel-backend", "ray"]
        elif multi_node:
            # The head owns rank 0 implicitly: an explicit start rank on a
            # non-headless node switches vLLM to hybrid load balancing.
            if node is not head:
                argv += ["--data-parallel-start-rank", str(ranks[name])]
            argv += ["--data-parallel-address", head["node_ip"],
                     "--data-parallel-rpc-port", str(settings["dp_rpc_port"])]
    if node is head:
        return argv + ["--port", str(settings["api_port"])] + shared + api_node
    return argv + shared


def _check_settings(settings, check):
    if settings["engine"] not in releases.ENGINES:
        check.fail("ascend_engine must be one of %s (found %r)", ", ".join(sorted(releases.ENGINES)),
                   settings["engine"])
    if settings["launcher"] not in LAUNCHERS:
        check.fail("ascend_launcher must be one of %s (found %r)", ", ".join(LAUNCHERS), settings["launcher"])
    if str(settings["model_backend"]).lower() not in [b.lower() for b in MODEL_BACKENDS]:
        check.fail("ascend_model_backend must be one of %s, any case (found %r)",
                   ", ".join(MODEL_BACKENDS), settings["model_backend"])
    if not isinstance(settings.get("model"), str) or not settings["model"].strip():
        check.fail("ascend_model is required: the model path or tag passed to serve (found %r)",
                   settings.get("model"))
    sizes_ok = all([check.positive("ascend_tensor_parallel_size", settings["tensor_parallel_size"]),
                    check.positive("ascend_pipeline_parallel_size", settings["pipeline_parallel_size"]),
                    check.positive("ascend_data_parallel_size", settings["data_parallel_size"])])
    for variable, key in (("ascend_api_port", "api_port"), ("ascend_ray_port", "ray_port"),
                          ("ascend_dp_rpc_port", "dp_rpc_port"), ("ascend_model_transfer_port", "model_transfer_port")):
        port = settings[key]
        if key == "model_transfer_port" and port is None:
            continue
        if key == "model_transfer_port" and _is_int(port) and 65533 <= port < 65536:
            check.fail("ascend_model_transfer_port must leave the two ports after it for the copy's tracker and "
                       "aria2's local control (found %r)", port)
        elif not _is_int(port) or not 0 < port < 65536:
            check.fail("%s must be a TCP port 1-65535 (found %r)", variable, port)
    ports = [(settings["api_port"], "ascend_api_port"), (settings["dp_rpc_port"], "ascend_dp_rpc_port")]
    if _is_int(settings["model_transfer_port"]):
        ports += [(settings["model_transfer_port"], "ascend_model_transfer_port"),
                  (settings["model_transfer_port"] + 1, "ascend_model_transfer_port + 1 (the model copy's tracker)"),
                  (settings["model_transfer_port"] + 2, "ascend_model_transfer_port + 2 (the model copy's control)")]
    if settings["launcher"] == "ray":
        ports.append((settings["ray_port"], "ascend_ray_port"))
    seen = {}
    for port, variable in ports:
        if port in seen:
            check.fail("%s and %s are both %r: each service needs its own port", seen[port], variable, port)
        seen[port] = variable
    if not isinstance(settings["serve_options"], dict):
        check.fail("ascend_serve_options must be a mapping (found %r)", settings["serve_options"])
        settings["serve_options"] = {}
    if not isinstance(settings["extra_env"], dict):
        check.fail("ascend_extra_env must be a mapping (found %r)", settings["extra_env"])
        settings["extra_env"] = {}
    for problem in input_rules.extra_env(settings["extra_env"]):
        check.fail(problem)
    for name in sorted(settings["secret_env"]):
        for problem in settings["secret_env"][name]:
            check.fail(problem)
    for variable, key in (("ascend_model", "model"), ("ascend_served_model_name", "served_model_name"),
                          ("ascend_ray_dashboard_host", "ray_dashboard_host"),
                          ("ascend_engine_version", "engine_version")):
        for problem in input_rules.control_characters(variable, settings.get(key)):
            check.fail(problem)
    for problem in container.settings_problems(settings["runtime"], settings["container_image"],
                                               settings["container_engine"], settings["service_user"]):
        check.fail(problem)
    for problem in input_rules.control_characters("ascend_container_image", settings["container_image"]):
        check.fail(problem)
    for variable, key in (("ascend_config_dir", "config_dir"), ("ascend_python_env", "python_env")):
        value = settings[key]
        if not isinstance(value, str) or not value.startswith("/") or value.rstrip("/") == "":
            check.fail("%s must be an absolute path other than / (found %r)", variable, value)
        else:
            for problem in input_rules.control_characters(variable, value):
                check.fail(problem)
    if settings["runtime"] == "container" and isinstance(settings["config_dir"], str) \
            and settings["config_dir"].rstrip("/") != container.CONFIG_DIR:
        check.fail("ascend_config_dir must stay %s in container mode (ascend_runtime: container): the engine container "
                   "mounts that directory (found %r)", container.CONFIG_DIR, settings["config_dir"])
    settings["service_user"] = container.service_user(settings["runtime"], settings["service_user"],
                                                      HOST_SERVICE_USER)
    for problem in service_account.user_problems(settings["service_user"]):
        check.fail(problem)
    if settings["launcher"] == "ray" and all(_is_int(p) for p, _v in ports):
        # The DP RPC port is the mp launcher's.
        checked = [p for p in ports if p[1] == "ascend_api_port" or p[1].startswith("ascend_model_transfer_port")]
        for problem in input_rules.ray_ports(checked, settings["ray_port"]):
            check.fail(problem)
    return sizes_ok


def _additional_config_warnings(config, tp, dp, warnings):
    for key, value in (("model_parallel", tp), ("data_parallel", dp)):
        if key in config:
            note = "" if config[key] == value else "; it says %r while the planner uses %d" % (config[key], value)
            warnings.append("ascend_additional_config.%s is not read by vllm-mindspore (TP and DP come from "
                            "the flags)%s" % (key, note))


def config_paths(config_dir):
    """The plan's config directory and the files in it that several roles read (CONFIG_FILES)."""
    config_dir = config_dir.rstrip("/")
    paths = dict((key, config_dir + "/" + name) for key, name in CONFIG_FILES.items())
    paths["config_dir"] = config_dir
    return paths


def make_plan(settings, nodes):
    """Plan a cluster.

    ``settings``: the cluster's options (keys of ``DEFAULTS`` plus ``engine``
    and ``model``).  ``nodes``: dicts with ``name``, ``node_ip`` and the keys
    of ``NODE_DEFAULTS``.  Returns ``{"cluster": ..., "nodes": {name: ...},
    "warnings": [...]}`` or raises ``PlanError``.
    """
    settings = _with_defaults(settings, DEFAULTS)
    nodes = [_with_defaults(n, NODE_DEFAULTS) for n in nodes]
    check = _Checker()
    warnings = []
    sizes_ok = _check_settings(settings, check)
    # Checked as a whole above; from here on only the public variables reach a node's environment.
    settings["extra_env"], direct_secrets = input_rules.split_env(settings["extra_env"])
    if not nodes:
        check.fail("group ascend_cluster has no hosts")
        check.raise_if_any()

    nodes = _order_nodes(nodes, check)
    for node in nodes:
        for problem in input_rules.host_name(node["name"]):
            check.fail(problem)
        for problem in input_rules.control_characters("ascend_nic", node["nic"], node["name"]):
            check.fail(problem)
    _check_node_ips(nodes, check)
    devices, device_source = {}, {}
    for node in nodes:
        devices[node["name"]], device_source[node["name"]] = _node_devices(node, check)
    physical = dict((n["name"], _physical_devices(n, devices[n["name"]], check)) for n in nodes)
    release = _engine_release(settings, check)
    shared, api_node = _user_options(settings["serve_options"], release, check)
    if not sizes_ok:
        check.raise_if_any()
    tp, pp, dp = (settings[k] for k in ("tensor_parallel_size", "pipeline_parallel_size",
                                        "data_parallel_size"))
    world = tp * pp
    ep_size, additional_config = _expert_parallel(settings, tp, dp, check)
    _additional_config_warnings(additional_config, tp, dp, warnings)
    local = _local_dp(nodes, dp, check)
    ranks = _start_ranks(nodes, local, settings["launcher"], dp, check)
    assumed = [n["name"] for n in nodes if device_source[n["name"]] == "ascend_npus_per_node"]
    # Before the preflight detects the devices, an assumed count must not refuse the layout.
    if all(devices.values()) and settings["launcher"] in LAUNCHERS and not (settings["devices_pending"] and assumed):
        _check_capacity(settings, nodes, devices, local, world, check)
        if settings["idle_warning"] and not check.errors:
            warnings.extend(_idle(settings, nodes, devices, local, world))
    found, warned = model_shape.problems(settings["model_config"], (tp, pp, ep_size),
                                         _serve_option(settings["serve_options"], "max_model_len"),
                                         settings["extra_env"])
    for problem in found:
        check.fail(problem)
    warnings.extend(warned)
    check.raise_if_any()

    head = nodes[0]
    multi_node = len(nodes) > 1
    if settings["served_model_name"]:
        shared = ["--served-model-name", str(settings["served_model_name"])] + shared
    if ep_size is not None:
        shared = ["--enable-expert-parallel"] + shared
    if additional_config:
        shared = ["--additional-config", json.dumps(additional_config, sort_keys=True)] + shared

    service = service_account.account(settings["service_user"])
    planned = {}
    for node in nodes:
        name = node["name"]
        serve = _serve_argv(settings, node, head, multi_node, local, ranks, world, devices, shared, api_node)
        ray = _ray_start_argv(settings, node, head) if settings["launcher"] == "ray" else None
        env = _env(settings, node, multi_node, devices[name])
        planned[name] = {
            "role": "head" if node is head else "worker",
            "node_ip": node["node_ip"],
            "nic": node["nic"],
            "serve_argv": serve,
            "serve_command": shlex.join(serve) if serve else None,
            "serves_api": node is head,
            "ray_start_argv": ray,
            "ray_start_command": shlex.join(ray) if ray else None,
            "env": env,
            "unresolved_env": sorted(k for k, v in env.items() if v is None),
            "visible_devices": devices[name],
            "physical_devices": physical[name],
            "npu_family": node["npu_family"],
            "devices_from": device_source[name],
            "data_parallel_size_local": local[name],
            "data_parallel_start_rank": ranks[name] if settings["launcher"] == "mp" and dp > 1 else None,
            "service_groups": [node["device_group"]] if service["confined"] and node["device_group"] else [],
            "container": container.node_container(settings["runtime"], env, physical[name], settings["extra_env"]),
        }
    # A plan from the inventory alone (no node probed) shows where it assumed; it has nothing to warn about.
    if assumed and not settings["devices_pending"] and settings["devices_probed"]:
        warnings.append("NPU devices were not detected; assumed 0..N-1 from ascend_npus_per_node on: %s"
                        % ", ".join(assumed))
    ray_launcher = settings["launcher"] == "ray"
    plan = {
        "cluster": {
            "engine": settings["engine"],
            "engine_version": release["engine_version"],
            "engine_distribution": releases.ENGINE_DISTRIBUTIONS[settings["engine"]],
            "engine_program": releases.ENGINES[settings["engine"]]["serve"][0],
            "vllm_version": release["vllm"],
            "launcher": settings["launcher"],
            "model": settings["model"],
            "served_model_name": settings["served_model_name"] or settings["model"],
            "head": head["name"],
            "node_order": [n["name"] for n in nodes],
            "tensor_parallel_size": tp,
            "pipeline_parallel_size": pp,
            "data_parallel_size": dp,
            "world_size": world,
            "npus_required": world * dp,
            "expert_parallel_size": ep_size,
            "additional_config": additional_config,
            "api_port": settings["api_port"],
            # Cluster-wide values the roles read from here, not from the inventory again.
            "ray_port": settings["ray_port"] if ray_launcher else None,
            "ray_address": "%s:%d" % (head["node_ip"], settings["ray_port"]) if ray_launcher else None,
            "dp_rpc_port": settings["dp_rpc_port"] if settings["launcher"] == "mp" and dp > 1 and multi_node else None,
            "model_transfer_port": settings["model_transfer_port"],
            # The pipelined copy: its tracker (members), aria2's JSON-RPC (loopback).
            "model_tracker_port": settings["model_transfer_port"] + 1 if settings["model_transfer_port"] else None,
            "model_control_port": settings["model_transfer_port"] + 2 if settings["model_transfer_port"] else None,
            "python_env": settings["python_env"].rstrip("/"),
            # The systemd units the roles install, by job: every role, status.yml and teardown.yml read them here.
            "units": dict(unit_names.SINGLE),
            "unit_dir": unit_names.UNIT_DIR,
            "service": service,
            "runtime": container.runtime(settings["runtime"], settings["container_image"],
                                         settings["container_engine"]),
            "secret_env_names": sorted(set(settings["secret_env"]) | set(direct_secrets)),
            "ray_nodes_expected": len(nodes) if ray_launcher else None,
            "ray_npus_expected": sum(len(devices[n["name"]]) for n in nodes) if ray_launcher else None,
        },
        "nodes": planned,
        "warnings": warnings,
    }
    # config_dir and the paths of CONFIG_FILES in it
    plan["cluster"].update(config_paths(settings["config_dir"]))
    return plan
