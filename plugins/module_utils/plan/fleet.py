# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Several model instances on one cluster (ascend_instances), planned as a whole (pure logic).

Each instance is planned by ``planner.make_plan`` on its own hosts and NPUs, with the cluster-wide ascend_*
variables as its defaults; this module checks the instances' keys and names, gives each its NPU share on every
host (disjoint), allocates every port an instance opens (API, DP RPC, Ray's GCS, HCCL's host listen ports) so that
no two owners meet on a host, and names each instance's units and files. The allocation is in the plan:
``allocation.ports`` ({host: [{port, count, owner, what}]}) and ``allocation.npus`` ({host: {NPU: instance}}).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import difflib
import re

from ansible_collections.ascend.inference.plugins.module_utils.plan import input_rules
from ansible_collections.ascend.inference.plugins.module_utils.plan import pd as pd_plan
from ansible_collections.ascend.inference.plugins.module_utils.plan import planner
from ansible_collections.ascend.inference.plugins.module_utils.plan import router as router_plan
from ansible_collections.ascend.inference.plugins.module_utils.runtime import unit_names

# An instance's name becomes part of unit names (ascend-serve-NAME.service) and file names.
NAME = re.compile(r"[a-z][a-z0-9-]{0,22}[a-z0-9]|[a-z]")
NAME_RULE = "1-24 lowercase letters, digits and '-', starting with a letter and not ending with '-'"

# The cluster variables an instance may set (without the ascend_ prefix).
INSTANCE_SETTINGS = ("engine", "engine_version", "model", "served_model_name", "launcher", "tensor_parallel_size",
                     "pipeline_parallel_size", "data_parallel_size", "enable_expert_parallel", "expert_parallel_size",
                     "additional_config", "serve_options", "extra_env", "model_backend", "api_port", "dp_rpc_port",
                     "ray_port")
PLACEMENT = ("hosts", "npus_per_host", "devices")
# The instance's model's config.json on the controller (the request reads it; the planner gets its content).
OWN_MODEL_CONFIG = "model_config"
# Cluster-wide: one value for every instance of the cluster.
CLUSTER_ONLY = ("runtime", "container_image", "container_engine", "service_user", "config_dir", "python_env",
                "ray_dashboard_host", "model_transfer_port", "api_key", "npus_per_node")

# HCCL's host ports with HCCL_IF_BASE_PORT set: base + physical device ID, the group leader's base + ID + 16 and the
# host data plane's base + ID + 8 (CANN's HCCL host code, topoinfo_detect.cc and hccl_communicator.cc; the CANN 8.5
# docs of HCCL_IF_BASE_PORT reserve 32 ports, 60000-60031 by default). Unset, rank 0 grabs a free port of
# 60000-60031 (an older CANN took 60000 fixed: vllm-ascend #405). One base for two instances is not enough: one's
# data-plane or leader port (+ 8, + 16) can be the other's base + ID. Each instance gets its own range per host.
HCCL_BASE_PORT = 60000
HCCL_LEADER_OFFSET = 16
HCCL_SPAN_STEP = 16
# An instance's base on a host: 60000 + 32 x the lowest physical ID it uses there. Disjoint NPUs give disjoint
# ranges while the IDs stay below 16 (a range ends before base + 32 x (its highest ID - lowest + 1)).
HCCL_SLOT = 32
# Mooncake's Ascend transport takes ports from 20000 up, 1000 per NPU of the node: nothing the plan allocates
# lies there (the KV transfer of disaggregated prefill and decode).
MOONCAKE_BASE_PORT = 20000
MOONCAKE_PORTS_PER_NPU = 1000
# Ports an allocation never hands out: Ray's own on every node (fixed ports and its workers' range).
RAY_RESERVED = [(port, 1, what) for port, what in sorted(input_rules.RAY_FIXED_PORTS.items())] + [
    (input_rules.RAY_WORKER_PORTS[0], input_rules.RAY_WORKER_PORTS[1] - input_rules.RAY_WORKER_PORTS[0] + 1,
     "Ray's worker ports")]
# The ports an instance may set; one it does not is allocated from the cluster variable's value (ascend_<key>) up.
PORT_KEYS = ("api_port", "dp_rpc_port", "ray_port")


def variable(instance, key):
    return "ascend_instances.%s.%s" % (instance, key)


def _suggest(key, known):
    close = difflib.get_close_matches(str(key), known, n=1)
    return " (did you mean %s?)" % close[0] if close else ""


def key_problems(name, settings):
    """The problems of one instance's mapping: its name and its keys."""
    problems = []
    if not isinstance(name, str) or not NAME.fullmatch(name):
        problems.append("ascend_instances: the instance name %r becomes part of unit and file names: use %s"
                        % (name, NAME_RULE))
    if not isinstance(settings, dict):
        return problems + ["%s must be a mapping of the instance's settings (found %r)" % (
            "ascend_instances.%s" % name, settings)]
    known = list(INSTANCE_SETTINGS) + list(PLACEMENT) + [OWN_MODEL_CONFIG]
    if pd_plan.is_pd(settings):
        problems.extend(pd_plan.key_problems(name, settings, INSTANCE_SETTINGS))
        known += list(pd_plan.PD_KEYS)
    for key in sorted(settings, key=str):
        if key in CLUSTER_ONLY:
            problems.append("%s: %s is one for the whole cluster; set ascend_%s instead"
                            % (variable(name, key), key, key))
        elif key not in known:
            problems.append("%s is not an instance setting%s; an instance takes %s"
                            % (variable(name, key), _suggest(key, known), ", ".join(sorted(known))))
    return problems


class _Ports:
    """Every port owned on every host: (start, count, owner, what) each."""

    def __init__(self, hosts, npus_per_node):
        self.taken = dict((host, []) for host in hosts)
        self.mooncake = (MOONCAKE_BASE_PORT, npus_per_node * MOONCAKE_PORTS_PER_NPU)
        self.problems = []

    @staticmethod
    def _overlap(a_start, a_count, b_start, b_count):
        return a_start < b_start + b_count and b_start < a_start + a_count

    def clash(self, hosts, start, count, reserved_too=True):
        """The first (owner, what, host) a range would meet on HOSTS, or None."""
        for host in hosts:
            for have_start, have_count, owner, what in self.taken[host]:
                if self._overlap(start, count, have_start, have_count):
                    return owner, what, host
        if reserved_too:
            for have_start, have_count, what in RAY_RESERVED:
                if self._overlap(start, count, have_start, have_count):
                    return None, what, None
            if self._overlap(start, count, *self.mooncake):
                return None, "Mooncake's Ascend transport range %d-%d" % (
                    self.mooncake[0], sum(self.mooncake) - 1), None
        return None

    def allocate(self, hosts, base, count, owner, what, step=1):
        """The first free range of COUNT ports from BASE up, in steps of STEP, on every one of HOSTS."""
        start = base
        while start + count <= 65536:
            if self.clash(hosts, start, count) is None:
                self.hold(hosts, start, count, owner, what)
                return start
            start += step
        self.problems.append("%s: no free range of %d ports from %d on hosts %s"
                             % (owner, count, base, ", ".join(hosts)))
        return None

    def claim(self, hosts, start, count, owner, what, name):
        """A port the inventory set: refused where it meets another owner's, Ray's or Mooncake's."""
        found = self.clash(hosts, start, count)
        if found is not None:
            other, other_what, host = found
            where = " on host %s" % host if host else ""
            self.problems.append("%s %d%s is %s%s: choose another port" % (
                name, start, where, ("%s's %s" % (other, other_what)) if other else other_what,
                " (reserved on every node)" if not other else ""))
        self.hold(hosts, start, count, owner, what)

    def hold(self, hosts, start, count, owner, what):
        for host in hosts:
            self.taken[host].append((start, count, owner, what))

    def table(self):
        return dict((host, [{"port": s, "count": c, "owner": o, "what": w} for s, c, o, w in sorted(spans)])
                    for host, spans in self.taken.items())


def _hosts(name, settings, cluster_hosts, problems):
    hosts = settings.get("hosts")
    if hosts is None:
        return list(cluster_hosts)
    if not isinstance(hosts, list) or not hosts or not all(isinstance(h, str) for h in hosts):
        problems.append("%s must be a non-empty list of inventory host names, the instance's head first (found %r)"
                        % (variable(name, "hosts"), hosts))
        return []
    for host in sorted(set(h for h in hosts if hosts.count(h) > 1)):
        problems.append("%s names host %s twice" % (variable(name, "hosts"), host))
    outside = [h for h in hosts if h not in cluster_hosts]
    if outside:
        problems.append("%s names %s, not in group ascend_cluster (%s)" % (
            variable(name, "hosts"), ", ".join(outside), ", ".join(cluster_hosts)))
    return [h for h in dict.fromkeys(hosts) if h in cluster_hosts]


def _shares(names, instances, hosts_of, capacity, problems):
    """{instance: {host: [NPU logic IDs]}}: explicit devices first, then npus_per_host from the lowest free IDs (the
    instances in name order), else the whole node; every overlap named."""
    owner = dict((host, {}) for host in capacity)
    shares = dict((name, {}) for name in names)

    def take(name, host, devices):
        clashes = {}
        for device in devices:
            if device in owner[host]:
                clashes.setdefault(owner[host][device], []).append(device)
            else:
                owner[host][device] = name
        for other, ids in sorted(clashes.items()):
            problems.append("instances %s and %s both use NPU%s %s on host %s" % (
                other, name, "s" if len(ids) > 1 else "", ",".join(str(i) for i in ids), host))
        shares[name][host] = list(devices)

    explicit, counted, whole = [], [], []
    for name in names:
        settings = instances[name]
        if settings.get("devices") is not None and settings.get("npus_per_host") is not None:
            problems.append("%s and %s both place the instance: give one" % (
                variable(name, "devices"), variable(name, "npus_per_host")))
        if settings.get("devices") is not None:
            explicit.append(name)
        elif settings.get("npus_per_host") is not None:
            counted.append(name)
        else:
            whole.append(name)
    for name in explicit:
        devices = instances[name]["devices"]
        if not isinstance(devices, dict):
            problems.append("%s must map each of the instance's hosts to a list of NPU logic IDs (found %r)"
                            % (variable(name, "devices"), devices))
            continue
        for host in hosts_of[name]:
            ids = devices.get(host)
            if not isinstance(ids, list) or not ids or not all(planner._is_int(i) and i >= 0 for i in ids):
                problems.append("%s on host %s must be a non-empty list of NPU logic IDs (found %r)"
                                % (variable(name, "devices"), host, ids))
                continue
            unknown = [i for i in ids if i not in capacity[host]]
            if unknown:
                problems.append("%s on host %s names NPU%s %s, which the host does not have (it has %s)" % (
                    variable(name, "devices"), host, "s" if len(unknown) > 1 else "",
                    ",".join(str(i) for i in unknown), ",".join(str(i) for i in capacity[host])))
            take(name, host, ids)
        for host in sorted(set(devices) - set(hosts_of[name]), key=str):
            problems.append("%s names host %s, which is not among the instance's hosts" % (
                variable(name, "devices"), host))
    for name in counted:
        count = instances[name]["npus_per_host"]
        if not planner._is_int(count) or count < 1:
            problems.append("%s must be a positive integer (found %r)" % (variable(name, "npus_per_host"), count))
            continue
        for host in hosts_of[name]:
            free = [d for d in capacity[host] if d not in owner[host]]
            if count > len(free):
                held = sorted(set(owner[host].values()))
                problems.append("%s %d on host %s: only %d of its %d NPUs are free%s" % (
                    variable(name, "npus_per_host"), count, host, len(free), len(capacity[host]),
                    " (held by %s)" % ", ".join(held) if held else ""))
                continue
            take(name, host, free[:count])
    for name in whole:
        for host in hosts_of[name]:
            take(name, host, list(capacity[host]))
    return shares, owner


def _renamed(errors, name, settings):
    """The planner's sentences about a cluster variable the instance sets, naming the instance's key instead."""
    keys = sorted((k for k in settings if k in INSTANCE_SETTINGS), key=len, reverse=True)
    out = []
    for error in errors:
        for key in keys:
            error = re.sub(r"\bascend_%s\b" % re.escape(key), variable(name, key), error)
        out.append("instance %s: %s" % (name, error))
    return out


def _instance_plan(name, settings, nodes, share, ports):
    """One instance's plan, or raise PlanError. SETTINGS: the cluster's with the instance's on top."""
    instance_nodes = []
    for index, node in enumerate(nodes):
        node = dict(node, head=index == 0, npu_devices=share[node["name"]])
        # DP ranks split evenly over the instance's hosts: the per-host variables describe one instance.
        node.pop("data_parallel_size_local", None)
        node.pop("data_parallel_start_rank", None)
        instance_nodes.append(node)
    settings = dict(settings, **dict((key, value) for key, value in ports.items() if value is not None))
    return planner.make_plan(dict(settings, idle_warning=False), instance_nodes)


def make_fleet_plan(settings, nodes, instances, model_configs=None, router=None, pd_proxy_dir=None):
    """Plan every instance of ascend_instances. SETTINGS: the cluster's (planner.DEFAULTS keys, engine, model), every
    instance's defaults; NODES: as for make_plan; INSTANCES: {name: settings}; MODEL_CONFIGS: {name: config.json}
    of the instances that name their own model (else the model's checks are skipped for them); ROUTER: the
    endpoint's settings (plan/router.DEFAULTS keys); PD_PROXY_DIR: where vllm-ascend's disaggregated-prefill proxy
    is on the nodes (instances with prefill and decode pools). Returns {"instances": {name: plan}, "allocation": {...},
    "cluster": {...}, "nodes": {...}, "router": {...} or None, "warnings": [...]} or raises PlanError with every
    problem."""
    router = dict(router_plan.DEFAULTS, **(router or {}))
    problems = []
    if not isinstance(instances, dict) or not instances:
        raise planner.PlanError(["ascend_instances must be a mapping of instance names to their settings (found %r)"
                                 % (instances,)])
    names = sorted(instances, key=str)
    for name in names:
        problems.extend(key_problems(name, instances[name]))
    if problems:
        raise planner.PlanError(problems)
    groups = [name for name in names if pd_plan.is_pd(instances[name])]
    problems.extend(pd_plan.name_problems(groups, names))
    if problems:
        raise planner.PlanError(problems)
    try:
        plan = _fleet_plan(settings, nodes, instances, model_configs, router, pd_proxy_dir)
    except planner.PlanError as error:
        raise planner.PlanError(pd_plan.renamed(error.errors, groups))
    plan["warnings"] = pd_plan.renamed(plan["warnings"], groups)
    return plan


def _fleet_plan(settings, nodes, instances, model_configs, router, pd_proxy_dir):
    # A prefill/decode instance is planned as its two pools, NAME-prefill and NAME-decode.
    instances, pd_groups = pd_plan.expand(instances)
    model_configs = dict(model_configs or {})
    for group in pd_groups:
        for pool in pd_plan.POOLS:
            model_configs.setdefault(pd_plan.pool_name(group, pool), model_configs.get(group))
    names = sorted(instances, key=str)
    problems = []
    nodes = [planner._with_defaults(n, planner.NODE_DEFAULTS) for n in nodes]
    by_name = dict((n["name"], n) for n in nodes)
    heads = [n["name"] for n in nodes if n["head"]]
    cluster_hosts = heads[:1] + [n["name"] for n in nodes if not n["head"]]
    for node in nodes:
        for variable_name in ("data_parallel_size_local", "data_parallel_start_rank"):
            if node[variable_name] is not None:
                problems.append("ascend_%s on host %s describes one model's layout; with ascend_instances the "
                                "planner splits each instance's DP ranks evenly over its hosts: remove it"
                                % (variable_name, node["name"]))
    if settings.get("runtime") == "container":
        problems.append("ascend_runtime: container runs one engine container per node; with ascend_instances the "
                        "instances run on the host (ascend_runtime: host)")
    hosts_of = dict((name, _hosts(name, instances[name], cluster_hosts, problems)) for name in names)
    # The node's NPUs as make_plan reads them; its problems are make_plan's to name (on the instance's plan).
    capacity = dict((host, planner._node_devices(by_name[host], planner._Checker())[0]) for host in cluster_hosts)
    shares, owner = _shares(names, instances, hosts_of, capacity, problems)
    merged = dict((name, _merged(settings, instances[name])) for name in names)
    for name in names:
        if "model" in instances[name] or OWN_MODEL_CONFIG in instances[name]:
            merged[name]["model_config"] = (model_configs or {}).get(name)
    for group in pd_groups:
        for pool in pd_plan.POOLS:
            sub = merged[pd_plan.pool_name(group, pool)]
            sub["extra_env"] = pd_plan.role_env(pool, sub.get("extra_env"), pd_groups[group], sub)
    problems.extend(_served_names(names, merged))
    for name in names:
        if isinstance(merged[name].get("extra_env"), dict) and "HCCL_IF_BASE_PORT" in merged[name]["extra_env"]:
            problems.append("instance %s: HCCL_IF_BASE_PORT in ascend_extra_env or %s is allocated by the planner "
                            "with ascend_instances (each instance its own range): remove it"
                            % (name, variable(name, "extra_env")))
    problems.extend(_ray_sharing(names, merged, hosts_of))
    first_head = (hosts_of[names[0]] or cluster_hosts)[0]
    routers, found = router_plan.router_hosts(router, first_head, cluster_hosts)
    problems.extend(found)
    if problems:
        raise planner.PlanError(problems)
    largest = max([len(ids) for ids in capacity.values()] + [1])
    ports = _Ports(cluster_hosts, largest)
    if routers:
        router_plan.claim_ports(ports, router, routers)
    if planner._is_int(settings.get("model_transfer_port")):
        ports.hold(cluster_hosts, settings["model_transfer_port"], 3, "the model role",
                   "copy: peers, tracker, local control (ascend_model_transfer_port and the two after it)")
    physical = dict((name, _physical_ids(shares[name], by_name)) for name in names)
    allocated = _allocate(names, instances, merged, hosts_of, settings, ports, physical)
    if ports.problems:
        raise planner.PlanError(ports.problems)

    plans, warnings = {}, []
    for name in names:
        try:
            plan = _instance_plan(name, merged[name], [by_name[h] for h in hosts_of[name]], shares[name],
                                  allocated[name]["settings"])
        except planner.PlanError as error:
            problems.extend(_renamed(error.errors, name, instances[name]))
            continue
        _name_instance(plan, name, allocated[name])
        plans[name] = plan
        warnings.extend("instance %s: %s" % (name, w) for w in plan.pop("warnings"))
    pd = _pd_sections(pd_groups, plans, merged, ports, pd_proxy_dir, largest) if not problems else {}
    problems.extend(ports.problems)
    if routers:
        problems.extend(router_plan.served_name_problems([name for name in names if name in plans], plans))
    if problems:
        raise planner.PlanError(problems)
    warnings.extend(_unpinned(names, instances, hosts_of, plans))
    cluster, fleet_nodes = _common(plans, names, cluster_hosts, by_name)
    cluster["mooncake_ports"] = {"start": ports.mooncake[0], "count": ports.mooncake[1]}
    return {
        "instances": plans,
        "allocation": {"ports": ports.table(),
                       "npus": dict((host, dict((str(d), owner[host].get(d)) for d in capacity[host]))
                                    for host in cluster_hosts)},
        "cluster": cluster,
        "nodes": fleet_nodes,
        "router": router_plan.section(router, routers, names, plans,
                                      dict((host, by_name[host]["node_ip"]) for host in cluster_hosts), pd),
        "pd": pd,
        "warnings": warnings,
    }


def _pd_sections(pd_groups, plans, merged, ports, proxy_dir, largest):
    """Each prefill/decode instance's checks, KV ports, --kv-transfer-config and proxy ({name: plan's pd entry});
    problems go to PORTS.problems."""
    out = {}
    ports.problems.extend(pd_plan.served_name_problems(pd_groups, plans))
    for group in sorted(pd_groups):
        found = pd_plan.layout_problems(group, pd_groups[group], plans, merged)
        if found:
            ports.problems.extend(found)
            continue
        # The first port above Mooncake's Ascend transport range on the largest node.
        base = MOONCAKE_BASE_PORT + largest * MOONCAKE_PORTS_PER_NPU
        allocated = pd_plan.allocate(group, pd_groups[group], plans, ports, base)
        if None not in allocated.values():
            out[group] = pd_plan.finish(group, pd_groups[group], plans, allocated, proxy_dir)
    return out


# What every instance's plan has alike (the make_plan of the same cluster settings), kept at the top of a plan of
# instances for the roles that read the cluster, not an instance: the runtime, the paths, the service account.
COMMON = ("runtime", "python_env", "config_dir", "unit_dir", "service", "model_transfer_port")
# The same only where every instance sets it alike, else None: the preflight's engine lookup reads them.
ALIKE = ("engine", "engine_version", "engine_distribution", "engine_program", "vllm_version", "launcher")


def _common(plans, names, hosts, by_name):
    """The cluster part and the per-host part of a plan of instances: what the roles read that is not an
    instance's. A host's ``serves_api`` is false: each instance's API node is in the instance's plan."""
    first = plans[names[0]]["cluster"]
    cluster = dict((key, first[key]) for key in COMMON)
    for key in ALIKE:
        values = set(plans[name]["cluster"][key] for name in names)
        cluster[key] = values.pop() if len(values) == 1 else None
    cluster.update(planner.config_paths(first["config_dir"]))
    cluster.update({
        "instance_names": names, "node_order": hosts, "head": hosts[0], "model": None, "served_model_name": None,
        "units": dict(unit_names.SINGLE), "ray_port": None, "api_port": None,
        "ray_instances": [name for name in names if plans[name]["cluster"]["launcher"] == "ray"],
        "secret_env_names": sorted(set(n for name in names for n in plans[name]["cluster"]["secret_env_names"])),
    })
    # Where every instance serves one model (ascend_model, the default), the model role copies it as for a single
    # model: its path and the copy's ports. Several models: None (deploy_problems refuses a copy).
    models = set(plans[name]["cluster"]["model"] for name in names)
    if len(models) == 1:
        cluster.update(model=models.pop(), model_tracker_port=first["model_tracker_port"],
                       model_control_port=first["model_control_port"])
    nodes = {}
    for index, host in enumerate(hosts):
        mine = [name for name in names if host in plans[name]["nodes"]]
        entries = [plans[name]["nodes"][host] for name in mine]
        devices = sorted(set(d for entry in entries for d in entry["visible_devices"]))
        physical = dict((d, p) for entry in entries for d, p in zip(entry["visible_devices"], entry["physical_devices"]))
        first_entry = entries[0] if entries else {}
        nodes[host] = {
            "role": "head" if index == 0 else "worker", "instances": mine,
            # The instance whose Ray cluster the node is in (one at most: _ray_sharing).
            "ray_instance": next((name for name in mine if plans[name]["cluster"]["launcher"] == "ray"), None),
            "node_ip": by_name[host]["node_ip"], "nic": first_entry.get("nic", by_name[host]["nic"]),
            "serve_argv": None, "serve_command": None, "serves_api": False, "ray_start_argv": None,
            "ray_start_command": None, "env": {}, "unresolved_env": sorted(set(
                name for entry in entries for name in entry["unresolved_env"])),
            "visible_devices": devices, "physical_devices": [physical[d] for d in devices],
            "devices_from": first_entry.get("devices_from", "ascend_npus_per_node"),
            "npu_family": first_entry.get("npu_family"),
            "service_groups": sorted(set(g for entry in entries for g in entry["service_groups"])),
            "container": None,
        }
    return cluster, nodes


def _unpinned(names, instances, hosts_of, plans):
    """Instances sharing a host whose API port or NPUs the planner chose: they move (and restart) when an instance
    before them in name order comes or goes."""
    warnings = []
    for name in names:
        sharing = sorted(other for other in names if other != name and set(hosts_of[other]) & set(hosts_of[name]))
        if not sharing:
            continue
        chosen, pins = [], []
        if instances[name].get("api_port") is None:
            chosen.append("its api_port %s" % plans[name]["cluster"]["api_port"])
            pins.append("api_port")
        if instances[name].get("devices") is None:
            chosen.append("its NPUs")
            pins.append("devices")
        if chosen:
            one = len(chosen) == 1
            warnings.append("instance %s shares hosts with %s: %s %s allocated in name order, so adding or removing an "
                            "instance before it moves %s and restarts it; set %s to keep %s"
                            % (name, ", ".join(sharing), " and ".join(chosen), "is" if one else "are",
                               "it" if one else "them", " and ".join(pins), "it" if one else "them"))
    return warnings


def _merged(settings, instance):
    merged = dict(settings)
    # An instance's own served name: a cluster-wide one would make every instance a replica of one model.
    if "model" in instance:
        merged["served_model_name"] = None
    merged.update(dict((k, v) for k, v in instance.items() if k in INSTANCE_SETTINGS))
    if isinstance(instance.get("extra_env"), dict) and isinstance(settings.get("extra_env"), dict):
        # The instance's secrets reach the planner as the cluster's do: by name, with what is wrong with them.
        public, secret = input_rules.split_env(instance["extra_env"])
        merged["extra_env"] = dict(settings["extra_env"], **public)
        merged["secret_env"] = dict(settings.get("secret_env") or {}, **input_rules.secret_env_summary(secret))
    return merged


def _served_names(names, merged):
    """Instances that share a served name are replicas of one model: the same model, or refused."""
    problems, models = [], {}
    for name in names:
        served = merged[name].get("served_model_name") or merged[name].get("model")
        models.setdefault(served, []).append(name)
    for served, group in sorted(models.items(), key=lambda item: str(item[0])):
        different = sorted(set(str(merged[n].get("model")) for n in group))
        if len(different) > 1:
            problems.append("instances %s share the served model name %r but serve different models (%s): replicas "
                            "serve one model; give each model its own served_model_name"
                            % (", ".join(group), served,
                               "; ".join("%s: %s" % (n, merged[n].get("model")) for n in group)))
    return problems


def _ray_sharing(names, merged, hosts_of):
    """One Ray cluster per node: Ray's fixed ports (8265, 10001, 52365) and its workers' range would collide."""
    problems, ray_on = [], {}
    for name in names:
        if merged[name].get("launcher", planner.DEFAULTS["launcher"]) == "ray":
            for host in hosts_of[name]:
                ray_on.setdefault(host, []).append(name)
    for host, group in sorted(ray_on.items()):
        if len(group) > 1:
            problems.append("instances %s all run on the Ray launcher on host %s: one Ray cluster per node is "
                            "built (Ray's own ports 8265, 10001, 52365 and its workers' range 10002-19999 would "
                            "collide); set launcher: mp on all but one of them, or give them different hosts"
                            % (", ".join(group), host))
    return problems


def hccl_span(physical_ids):
    """The HCCL host ports an instance may bind from its base: up to base + the largest physical ID + 16 (the
    group leader's), rounded up to a multiple of 16."""
    needed = max(list(physical_ids) + [0]) + HCCL_LEADER_OFFSET + 1
    return -(-needed // HCCL_SPAN_STEP) * HCCL_SPAN_STEP


def _physical_ids(share, nodes):
    """{host: the physical IDs (/dev/davinciN) of an instance's share there}, as make_plan maps them (its problems
    are make_plan's to name)."""
    return dict((host, planner._physical_devices(nodes[host], devices, planner._Checker()))
                for host, devices in share.items() if devices)


def _allocate(names, instances, merged, hosts_of, settings, ports, physical):
    """Per instance: the ports it sets, then the ones allocated ({settings: {key: port}, hccl_base_port})."""
    out = dict((name, {"settings": {}, "hccl_base_port": None}) for name in names)
    wanted = dict((name, _wanted(merged[name], hosts_of[name])) for name in names)
    # Ports the inventory set first, so that an allocation steps around them.
    for name in names:
        for key in PORT_KEYS:
            value = instances[name].get(key)
            # A port the instance sets is held even where it opens none there: no other owner gets that number.
            if value is not None:
                if not planner._is_int(value) or not 0 < value < 65536:
                    ports.problems.append("%s must be a TCP port 1-65535 (found %r)" % (variable(name, key), value))
                    continue
                ports.claim(hosts_of[name], value, 1, name, key, variable(name, key))
                out[name]["settings"][key] = value
    for name in names:
        for key in PORT_KEYS:
            if key in wanted[name] and key not in out[name]["settings"]:
                base = settings.get(key) if planner._is_int(settings.get(key)) else planner.DEFAULTS[key]
                out[name]["settings"][key] = ports.allocate(hosts_of[name], base, 1, name, key)
        # HCCL's range follows the instance's NPUs on each host, not the other instances: removing one leaves the
        # others' environment (and processes) as they are.
        out[name]["hccl_base_port"] = {}
        for host, ids in sorted(physical[name].items()):
            base = HCCL_BASE_PORT + HCCL_SLOT * min(ids)
            ports.claim([host], base, hccl_span(ids), name, "HCCL_IF_BASE_PORT",
                        "instance %s's HCCL range (HCCL_IF_BASE_PORT) from" % name)
            out[name]["hccl_base_port"][host] = base
    return out


def _wanted(settings, hosts):
    """The ports an instance opens: the API always; DP RPC under mp with DP over several hosts; Ray's GCS port."""
    wanted = ["api_port"]
    launcher = settings.get("launcher", planner.DEFAULTS["launcher"])
    dp = settings.get("data_parallel_size", 1)
    if launcher == "mp" and len(hosts) > 1 and planner._is_int(dp) and dp > 1:
        wanted.append("dp_rpc_port")
    if launcher == "ray":
        wanted.append("ray_port")
    return wanted


def _name_instance(plan, name, allocated):
    """The instance's units, files and HCCL ports in its plan."""
    cluster = plan["cluster"]
    cluster["instance"] = name
    cluster["units"] = dict(cluster["units"], **unit_names.instance_units(name))
    for key in ("node_env_file", "secrets_env_file", "serve_env_file", "ray_env_file", "model_manifest"):
        directory, base = cluster[key].rsplit("/", 1)
        stem, suffix = base.split(".", 1)
        cluster[key] = "%s/%s-%s.%s" % (directory, stem, name, suffix)
    cluster["hccl_base_ports"] = dict(allocated["hccl_base_port"])
    for host, node in plan["nodes"].items():
        node["env"]["HCCL_IF_BASE_PORT"] = str(allocated["hccl_base_port"][host])


def deploy_problems(plan):
    """What this release cannot deploy of a plan of instances (plan.yml refuses it as the deploy does), one sentence each."""
    problems = []
    cluster = plan["cluster"]
    for key, variable_name in (("engine", "engine"), ("engine_version", "engine_version")):
        if cluster[key] is None:
            problems.append("the instances set different %s (%s): a node's Python environment (ascend_python_env) "
                            "holds one engine, so every instance runs the same one" % (variable_name, ", ".join(
                                "%s: %s" % (name, plan["instances"][name]["cluster"][key])
                                for name in cluster["instance_names"])))
    if cluster["model_transfer_port"] is not None and cluster["model"] is None:
        problems.append("model_source copies one model to every node, and the instances serve several (%s): put each "
                        "instance's model on its hosts (model_source: none; the preflight checks the files)" % "; ".join(
                            "%s: %s" % (name, plan["instances"][name]["cluster"]["model"])
                            for name in cluster["instance_names"]))
    return problems + pd_plan.deploy_problems(plan)
