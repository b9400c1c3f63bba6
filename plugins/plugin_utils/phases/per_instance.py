# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The per-instance phases of a plan of several instances (ascend_instances), as one apply per node: each
instance's desired state is the single-model phase's, computed on the instance's own plan (a view of the node
whose ``plan`` is the instance's), and the states are merged; an instance that does not run on the node, or is no
longer in the inventory, leaves nothing there (node_apply's sweeps find what an earlier plan left). A plan of one
model goes to the phase as before, with the sweeps of what instances left."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import posixpath

from ansible_collections.ascend.inference.plugins.plugin_utils.phases import (
    node_env as phase_node_env, ray as phase_ray, backends, serve as phase_serve)
from ansible_collections.ascend.inference.plugins.module_utils.plan import pd_ranktable, reports
from ansible_collections.ascend.inference.plugins.module_utils.runtime import (
    service_account, stale_units, systemd, unit_names)
from ansible_collections.ascend.inference.plugins.plugin_utils.phases.phase import Refused


class View(object):
    """NODE seen through one instance: its plan is the instance's, and ascend_extra_env is the cluster's with the
    instance's own over it (its secrets go to the instance's secrets file)."""

    def __init__(self, node, name, plan, extra_env):
        self._node = node
        self.instance = name
        self.plan = plan
        self._extra_env = extra_env

    def __getattr__(self, attribute):
        return getattr(self._node, attribute)

    def var(self, name, default=None, host=None):
        if name == "ascend_extra_env" and host is None:
            return self._extra_env
        return self._node.var(name, default, host)


def is_fleet(plan):
    return "instances" in plan


def router_servers(plan):
    """The instances the router balances (rolled one at a time, never restarted in place by a phase)."""
    return set((plan.get("router") or {}).get("backend_of") or {})


def views(node):
    """(name, view) of every instance of the plan, in name order."""
    plan = node.plan
    cluster_env = node.var("ascend_extra_env", {}) or {}
    instances = node.var("ascend_instances", {}) or {}
    found = []
    for name in plan["cluster"]["instance_names"]:
        own = (instances.get(name) or {}).get("extra_env") or {}
        env = dict(cluster_env, **own) if isinstance(own, dict) and isinstance(cluster_env, dict) else cluster_env
        found.append((name, View(node, name, plan["instances"][name], env)))
    return found


def listed(node, directory, pattern):
    """The names in DIRECTORY on the node that match PATTERN (a read, in --check too)."""
    found = node.run("ansible.builtin.find", {"paths": [directory], "file_type": "file"})
    names = [posixpath.basename(item["path"]) for item in found.get("files") or []]
    return sorted(name for name in names if pattern.fullmatch(name))


def _merged(results):
    state, warnings = {}, []
    for result in results:
        if result.get("apply"):
            backends.merge(state, result["apply"])
        warnings.extend(result.get("warnings") or [])
    return state, warnings


def serve(node, settings):
    """Every instance's serve process on the nodes it runs on; elsewhere, and for an instance no longer planned (or
    the single model's unit, or an instance's after a return to one model), its unit and environment removed."""
    if not is_fleet(node.plan):
        result = phase_serve.desired(node, settings)
        return _sweeping(node, settings, result, [node.plan["cluster"]["units"]["serve"]],
                         [phase_serve.env_path(node.plan, settings)], [])
    results, record, wanted, env_files = [], {}, [], []
    # A replica behind the router is not restarted here when its files change: restart.changed picks it (or one
    # that runs older files, however they changed) and serve's rolling.yml restarts it one at a time, drained.
    servers = router_servers(node.plan)
    rolled = {}
    for name, view in views(node):
        # The instance's own environment files (node_env wrote them from the same plan).
        mine = dict(settings, node_env_file=view.plan["cluster"]["node_env_file"],
                    secrets_file=view.plan["cluster"]["secrets_env_file"],
                    ray_env_file=view.plan["cluster"]["ray_env_file"])
        if node.host in view.plan["nodes"]:
            result = phase_serve.desired(view, mine)
            wanted.append(view.plan["cluster"]["units"]["serve"])
            env_files += [phase_serve.env_path(view.plan, settings), mine["node_env_file"], mine["secrets_file"]]
            unit = view.plan["cluster"]["units"]["serve"]
            if name in servers and result["apply"]:
                for spec in result["apply"].get("units") or []:
                    if spec["name"] == unit:
                        read = [mine["node_env_file"], mine["secrets_file"]]
                        rolled[name] = (unit, sorted(spec.pop("restart_on", [])) + read)
        else:
            result = {"apply": phase_serve.absent(view, mine), "record": {"serves": False}}
        results.append(result)
        record[name] = result["record"]["serves"]
    proxies = [entry["proxy"] for _name, entry in sorted((node.plan.get("pd") or {}).items())
               if entry["proxy"]["host"] == node.host]
    results.extend({"apply": _proxy(node, settings, proxy)} for proxy in proxies)
    state, warnings = _merged(results)
    tables = _rank_tables(node, state)
    result = {"apply": state, "warnings": warnings,
              "record": {"serves": any(record.values()), "instances": record,
                         "proxies": [proxy["unit"] for proxy in proxies],
                         # What restart.changed reads: each such replica's unit and files, and those stale already.
                         "rolled": dict((name, {"unit": unit, "paths": paths}) for name, (unit, paths) in rolled.items()),
                         "stale": _stale(node, rolled)}}
    return _sweeping(node, settings, result, wanted, env_files, proxies, tables)


def _stale(node, rolled):
    """The replicas of ROLLED ({name: (unit, paths)}) running on older files than they have (read in --check too)."""
    if not rolled:
        return []
    units = sorted(unit for unit, _paths in rolled.values())
    paths = sorted(set(path for _unit, found in rolled.values() for path in found))
    show, clock = stale_units.read_argvs(units, paths)
    shown = node.run("ansible.builtin.command", {"argv": show})
    read = node.run("ansible.builtin.command", {"argv": clock})
    return stale_units.stale(rolled, reports.systemctl_units(shown.get("stdout") or ""), read.get("stdout") or "")


def _rank_tables(node, state):
    """LLMDataDist's rank table (pd_ranktable) on every host of the instance's pools, from the NPU IPs the NPU
    network check read in this play; a pool restarts when its table changes. Returns the tables' paths."""
    plan = node.plan
    written = []
    for name, entry in sorted((plan.get("pd") or {}).items()):
        pools = [pool for pool in entry["pools"].values() if node.host in pool["hosts"]]
        if not entry.get("rank_table") or not pools:
            continue
        hosts = sorted(set(h for pool in entry["pools"].values() for h in pool["hosts"]))
        records = dict((host, node.applied("npu_query", host=host)) for host in hosts)
        table, problems = pd_ranktable.rank_table(entry, plan["instances"], records)
        if problems:
            raise Refused("instance %s: cannot write LLMDataDist's rank table %s:\n- %s"
                          % (name, entry["rank_table"], "\n- ".join(problems)))
        backends.merge(state, {"files": [{"path": entry["rank_table"], "mode": "0644",
                                          "content": pd_ranktable.render(table)}]})
        units = set(plan["instances"][pool["instance"]]["cluster"]["units"]["serve"] for pool in pools)
        for unit in state.get("units") or []:
            if unit["name"] in units and unit.get("state") == "started":
                unit["restart_on"] = list(unit.get("restart_on") or []) + [entry["rank_table"]]
        written.append(entry["rank_table"])
    return written


def _proxy(node, settings, proxy):
    """vllm-ascend's proxy of a prefill/decode instance: its unit, and a 0600 file with the engines' key."""
    plan = node.plan
    if not proxy["argv"]:
        raise Refused("%s: the proxy of a prefill/decode instance needs ascend_pd_proxy_dir" % node.host)
    api_key = node.var("ascend_api_key", None) or ""
    try:
        environment = systemd.environment_file({"OPENAI_API_KEY": api_key} if api_key else {}).rstrip("\n")
    except ValueError:
        raise Refused("ascend_api_key cannot hold a line break")
    unit = "%s/%s" % (plan["cluster"]["unit_dir"], proxy["unit"])
    values = {"instance": proxy["instance"], "firewall": plan["cluster"]["units"]["firewall"], "env_file": proxy["env_file"],
              "service_lines": service_account.unit_lines(plan["cluster"]["service"], []),
              "exec_start": backends.command_line(proxy["argv"]), "restart_sec": settings["restart_sec"]}
    return {"directories": [{"path": settings["config_dir"]}],
            "files": [{"path": proxy["env_file"], "mode": "0600"},
                      {"path": unit, "mode": "0644", "template": "serve/ascend-pd-proxy.service.j2", "values": values}],
            "secrets": {proxy["env_file"]: {"template": "serve/pd-proxy.env.j2", "values": {"environment": environment}}},
            "units": [{"name": proxy["unit"], "file": unit, "state": "started", "restart_on": [unit, proxy["env_file"]]}],
            "account": backends.account(plan, service_account.COMMENT)}


def _sweeping(node, settings, result, wanted_units, wanted_env, proxies, tables=()):
    """RESULT whose apply also removes every serve unit of the node that the plan does not name there (stopped and
    disabled first), and the environment files only such a unit read: an instance's serve, node and secrets
    files. In container mode the engine container's supervisor runs serve: no instance's unit stays (the single
    model's is the container backend's own leftover)."""
    plan = node.plan
    if plan["cluster"]["runtime"]["mode"] != "host":
        wanted_units = list(wanted_units) + [plan["cluster"]["units"]["serve"]]
    state = result.get("apply") or {}
    keep_env = [posixpath.basename(path) for path in wanted_env]
    watchdogs = [unit for unit in state.get("units") or []
                 if unit_names.WATCHDOG_UNITS.fullmatch(unit["name"]) and unit.get("state") == "started"]
    watchdog_files = [posixpath.basename(path) for unit in watchdogs for path in unit["restart_on"][1:]]
    backends.merge(state, {"sweep": [
        {"directory": plan["cluster"]["unit_dir"], "pattern": unit_names.WATCHDOG_UNITS.pattern,
         "keep": sorted(unit["name"] for unit in watchdogs), "units": True},
        {"directory": settings["config_dir"].rstrip("/"), "pattern": unit_names.WATCHDOG_FILES.pattern,
         "keep": sorted(set(watchdog_files))},
        {"directory": plan["cluster"]["unit_dir"], "pattern": unit_names.SERVE_UNITS.pattern,
         "keep": sorted(wanted_units), "units": True},
        {"directory": settings["config_dir"].rstrip("/"), "pattern": unit_names.SERVE_ENV_FILES.pattern, "keep": sorted(keep_env)},
        {"directory": plan["cluster"]["unit_dir"], "pattern": unit_names.PD_PROXY_UNITS.pattern,
         "keep": sorted(proxy["unit"] for proxy in proxies), "units": True},
        {"directory": settings["config_dir"].rstrip("/"), "pattern": unit_names.PD_FILES.pattern,
         "keep": sorted([posixpath.basename(proxy["env_file"]) for proxy in proxies] +
                        [posixpath.basename(path) for path in tables])},
    ]})
    result["apply"] = state
    return result


def node_env(node, settings):
    """Each instance's environment (node-NAME.env) and secrets (secrets-NAME.env) on the nodes it runs on; the
    single model's files and the login profile removed (each instance sees other NPUs: no one environment fits a
    shell), and the files of instances no longer planned here. With one model, the instances' files go."""
    config_dir = posixpath.dirname(settings["file"])
    if not is_fleet(node.plan):
        result = phase_node_env.desired(node, settings)
        backends.merge(result["apply"], {"sweep": [
            {"directory": config_dir, "pattern": unit_names.NODE_ENV_FILES.pattern,
             "keep": [posixpath.basename(settings["file"]), posixpath.basename(settings["secrets_file"])]}]})
        return result
    results, wanted = [], []
    # A replica behind the router restarts in the serve phase instead, one at a time (restart.changed finds it).
    servers = router_servers(node.plan)
    for name, view in views(node):
        cluster = view.plan["cluster"]
        if node.host not in view.plan["nodes"]:
            continue
        mine = dict(settings, file=cluster["node_env_file"], secrets_file=cluster["secrets_env_file"], profile=None,
                    services=[] if name in servers else [cluster["units"]["serve"]])
        wanted += [mine["file"], mine["secrets_file"]]
        results.append(phase_node_env.desired(view, mine))
    state, warnings = _merged(results)
    backends.merge(state, {"absent": [settings["profile"]], "sweep": [
        {"directory": config_dir, "pattern": unit_names.NODE_ENV_FILES.pattern, "keep": [posixpath.basename(p) for p in wanted]}]})
    return {"apply": state, "warnings": warnings, "record": {"files": wanted}}


def node_env_ray(node, settings):
    """node_env's second step, a Ray worker's restart after its head's: with several instances, none (each instance's
    Ray unit is its own, and node_env restarts only its serve)."""
    if is_fleet(node.plan):
        return {"apply": None, "record": None}
    return phase_node_env.ray_workers(node, settings)


def ray_view(node):
    """The view of the instance whose Ray cluster the node is in, or None: the planner puts a node in one Ray
    cluster at most (Ray's own ports are fixed)."""
    for _name, view in views(node):
        if node.host in view.plan["nodes"] and view.plan["cluster"]["launcher"] == "ray":
            return view
    return None


def ray_token(node, settings):
    """The token of the node's Ray cluster: an instance's own with several (ray-auth-token-NAME)."""
    view = ray_view(node) if is_fleet(node.plan) else node
    if view is None:
        return {"apply": None, "record": None, "result": {"held": False, "token": "", "candidate": ""}}
    return phase_ray.token_read(view, settings)


def ray(node, settings):
    """Ray of the plan's one model; with several instances, the Ray cluster of the instance on the Ray launcher
    that runs on the node (its own unit ascend-ray-NAME, token, environment and port), and no other: what another
    plan left (the single model's unit, an instance's no longer here) is stopped and removed."""
    config_dir = settings["config_dir"].rstrip("/")
    if not is_fleet(node.plan):
        result = phase_ray.desired(node, settings)
        files = phase_ray.paths(settings, node.plan)
        wanted = [node.plan["cluster"]["units"]["ray"]]
    else:
        view = ray_view(node)
        if view is None:
            result = {"apply": {"absent": [config_dir + "/" + phase_ray.PROBE]}, "record": {"restarted": False}}
            files, wanted = {}, []
        else:
            # Ray sees the instance's NPUs only: its node environment (ASCEND_RT_VISIBLE_DEVICES) and secrets.
            cluster = view.plan["cluster"]
            result = phase_ray.desired(view, dict(settings, node_env_file=cluster["node_env_file"],
                                                  secrets_file=cluster["secrets_env_file"]))
            files = phase_ray.paths(settings, view.plan)
            wanted = [view.plan["cluster"]["units"]["ray"]]
    state = result.get("apply") or {}
    backends.merge(state, {"sweep": [
        {"directory": node.plan["cluster"]["unit_dir"], "pattern": unit_names.RAY_UNITS.pattern, "keep": wanted, "units": True},
        {"directory": config_dir, "pattern": unit_names.RAY_FILES.pattern,
         "keep": sorted(posixpath.basename(files[key]) for key in ("env", "token") if key in files)}]})
    result["apply"] = state
    return result
