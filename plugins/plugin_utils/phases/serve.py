# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The serve phase's desired state: on every node the plan gives a serve command, the serve process (a unit on
the host, a process of the engine container) and its 0600 environment with the API key, restarted only where
its own command or environment changed; on the others, nothing of serve."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.ascend.inference.plugins.plugin_utils.phases import backends
from ansible_collections.ascend.inference.plugins.module_utils.engines import releases
from ansible_collections.ascend.inference.plugins.module_utils.runtime import service_account, systemd, unit_names
from ansible_collections.ascend.inference.plugins.plugin_utils.phases.phase import Refused

NO_KEY = ("no API key (ascend_api_key is unset): every cluster member (and a monitoring host, without the router) that "
          "reaches %s:%s can use the model. Set ascend_api_key (from ansible-vault or -e @secrets.yml); clients then "
          "send \"Authorization: Bearer <key>\".")
SETTINGS = {"python_env": "str", "executable": "str", "config_dir": "str", "restart_sec": "int", "node_env_file": "str",
            "secrets_file": "str", "ray_env_file": "str", "watchdog_enabled": "bool", "watchdog_interval": "int",
            "watchdog_probe_timeout": "int", "watchdog_failures": "int", "ready_timeout": "int"}
WATCHDOG_PROGRAM = "serve-watchdog.py"


def env_path(plan, settings):
    return "%s/%s" % (settings["config_dir"].rstrip("/"), plan["cluster"]["serve_env_file"].rsplit("/", 1)[-1])


def program(node, settings):
    """The serve program's path: where the preflight found it (the same name in the same environment), else
    looked up now as the preflight does (the engine's environment first, then PATH)."""
    wanted = settings["executable"] or node.plan["nodes"][node.host]["serve_argv"][0]
    found = (node.applied("preflight") or {}).get("engine_program") or {}
    if found.get("found") and found.get("program") == wanted and found.get("python_env") == settings["python_env"]:
        return found["found"]
    # `command -v` is a shell builtin.
    look = node.run("ansible.builtin.command", {"argv": [
        "sh", "-c", 'PATH="$1:$PATH"; command -v "$2"', "sh", settings["python_env"] + "/bin", wanted]})
    if look.get("rc") != 0 or not (look.get("stdout") or "").strip():
        raise Refused("%s: cannot find %s in %s/bin (serve_python_env) nor on PATH. Install %s there, or set "
                      "serve_executable to its path." % (node.host, wanted, settings["python_env"],
                                                         node.plan["cluster"]["engine"]))
    return look["stdout"].strip().splitlines()[0]


def environment(plan, settings, api_key):
    """serve.env: the engine's PATH (host mode) and the API key."""
    variables = {}
    if backends.mode(plan) == "host":
        variables["PATH"] = "%s/bin:%s" % (settings["python_env"], backends.PATH)
    if api_key:
        variables["VLLM_API_KEY"] = api_key
    try:
        return systemd.environment_file(variables).rstrip("\n")
    except ValueError:
        raise Refused("ascend_api_key cannot hold a line break")


def absent(node, settings):
    """A node that served under an earlier plan (mp before Ray, say) keeps nothing of serve."""
    plan = node.plan
    if backends.mode(plan) == "host":
        return backends.merge(backends.host_unit_absent(plan, "serve", [env_path(plan, settings)]),
                              backends.container_leftovers(plan))
    spec = backends.spec_path(plan, "serve")
    return {"absent": [spec, env_path(plan, settings)],
            "units": [{"name": plan["cluster"]["runtime"]["unit"], "reload_on": [spec],
                       "retries": backends.CONTAINER_RETRIES}]}


def desired(node, settings):
    """settings: python_env, executable, config_dir, restart_sec, node_env_file, secrets_file, ray_env_file. In
    container mode the engine container's settings come with its image (ascend_applied.image)."""
    plan = node.plan
    cluster = plan["cluster"]
    host = node.host
    plan_node = plan["nodes"][host]
    api_key = node.var("ascend_api_key", None) or ""
    warnings = [NO_KEY % (plan_node["node_ip"], cluster["api_port"])] if plan_node["serves_api"] and not api_key else []
    if plan_node["serve_argv"] is None:
        return {"apply": absent(node, settings), "warnings": warnings, "record": {"serves": False}}
    ray = cluster["launcher"] == "ray"
    serve_env = env_path(plan, settings)
    state = {"directories": [{"path": settings["config_dir"]}], "files": [{"path": serve_env, "mode": "0600"}],
             "secrets": {serve_env: {"template": "serve/serve.env.j2",
                                     "values": {"environment": environment(plan, settings, api_key)}}}}
    if backends.mode(plan) == "container":
        image = backends.image_of(node)
        backends.config_problems(plan, host, {"serve_config_dir": settings["config_dir"],
                                              "node_env_secrets_file": settings["secrets_file"].rsplit("/", 1)[0]})
        env_files = [settings["secrets_file"]] + ([settings["ray_env_file"]] if ray else []) + [serve_env]
        spec = backends.process(plan, host, "serve", plan_node["serve_argv"], env_files, image, settings["restart_sec"],
                                after=["ray"] if ray else [])
        backends.merge(state, backends.host_leftovers(plan))
        backends.merge(state, backends.engine(node, image))
        state["files"].append(spec)
        state["units"][-1]["reload_on"] = [spec["path"], serve_env]
        return {"apply": state, "warnings": warnings, "record": {"serves": True}}
    unit = backends.unit_path(plan, "serve")
    state["files"].append({"path": unit, "mode": "0644", "template": "serve/ascend-serve.service.j2",
                           "values": unit_values(node, settings, program(node, settings), serve_env)})
    backends.merge(state, backends.container_leftovers(plan))
    # Under Ray, a restart of Ray restarts the engine with it (PartOf=): nothing more to do here for that.
    state["units"].append({"name": cluster["units"]["serve"], "file": unit, "state": "started",
                           "restart_on": [unit, serve_env]})
    state["account"] = backends.account(plan, service_account.COMMENT)
    backends.merge(state, watchdog(node, settings, serve_env))
    # Ray's unit is written first by deploy.yml; a --tags serve run finds it as it is. A check run rewrote nothing.
    if ray and not node.check_mode:
        state["peers"] = [{"unit": cluster["units"]["ray"], "user": cluster["service"]["user"]}]
    return {"apply": state, "warnings": warnings, "record": {"serves": True}}


def unit_values(node, settings, serve_program, serve_env):
    plan = node.plan
    cluster = plan["cluster"]
    plan_node = plan["nodes"][node.host]
    ray = cluster["launcher"] == "ray"
    units = cluster["units"]
    # secrets.env is optional ("-"): written by node_env, which a --tags serve run after an upgrade has not run yet.
    env_files = [settings["node_env_file"], "-" + settings["secrets_file"]] + (
        [settings["ray_env_file"]] if ray else []) + [serve_env]
    return {
        "engine": cluster["engine"], "role": plan_node["role"], "firewall": units["firewall"],
        "after": units["ray"] if ray else None, "part_of": units["ray"] if ray else None,
        "joins": units["ray"] if ray and cluster["service"]["confined"] else None,
        "env_files": env_files, "service_lines": backends.service_lines(plan, plan_node),
        "exec_start": backends.command_line([serve_program] + plan_node["serve_argv"][1:]),
        "restart_sec": settings["restart_sec"],
    }


WATCHDOG_COUNTS = ("interval", "probe_timeout", "failures")


def watchdog_problems(host, settings):
    """The watchdog's counts below 1 on HOST (SETTINGS: watchdog_interval, ...), from the inventory alone (plan.yml
    refuses them too)."""
    return ["%s: serve_watchdog_%s must be at least 1, not %s" % (host, key, settings["watchdog_" + key])
            for key in WATCHDOG_COUNTS if settings["watchdog_" + key] < 1]


def watchdog_config(plan, host, settings):
    """What the serve watchdog of HOST watches (roles/serve/files/serve-watchdog.py), or None where none is needed.
    An engine that spans nodes does not put itself back together after a node restarts: under mp, vLLM's
    data-parallel handshake exists at start-up only; under Ray, vLLM 0.11 never notices a lost worker (0.23 exits,
    and Restart=always brings it back). Ray's serve runs on the head only: so does its watchdog."""
    cluster = plan["cluster"]
    if not settings.get("watchdog_enabled", True) or not watched(cluster):
        return None
    problems = watchdog_problems(host, settings)
    if problems:
        raise Refused("; ".join(problems))
    nodes = plan["nodes"]
    head = nodes[cluster["head"]]
    # Under Ray, Ray places the ranks: the probe names no node.
    rank_nodes = dict((str(rank), "placed by Ray") for rank in range(cluster["data_parallel_size"]))
    for name, entry in nodes.items():
        first = entry["data_parallel_start_rank"]
        if first is not None:
            for rank in range(first, first + entry["data_parallel_size_local"]):
                rank_nodes[str(rank)] = name
    release = releases.version_key(cluster["vllm_version"] or "0")
    return {
        "role": "head" if nodes[host]["serves_api"] else "worker",
        "serve_unit": cluster["units"]["serve"],
        "head_url": "http://%s:%s" % (head["node_ip"], cluster["api_port"]),
        "model": cluster["served_model_name"],
        "ranks": list(range(cluster["data_parallel_size"])),
        "rank_nodes": rank_nodes,
        # vLLM 0.23 routes a request to the rank in X-data-parallel-rank (entrypoints/openai/engine/serving.py).
        "rank_header": release >= (0, 23),
        "interval": settings["watchdog_interval"],
        "probe_timeout": settings["watchdog_probe_timeout"],
        "failures": settings["watchdog_failures"],
        # How long a headless node leaves engines connected to a head that is down: its longest start-up.
        "grace": settings["ready_timeout"],
        "state_file": watchdog_state_file(plan),
    }


def watched(cluster):
    """Whether the engine spans nodes (an mp data-parallel group across nodes, or Ray on several): a watchdog's."""
    return cluster["dp_rpc_port"] is not None if cluster["launcher"] == "mp" else len(cluster["node_order"]) > 1


def watchdog_state_file(plan):
    """Where the serve watchdog keeps what it saw (status.yml reads it)."""
    return "/run/%s.json" % plan["cluster"]["units"]["watchdog"][:-len(unit_names.SUFFIX)]


def watchdog(node, settings, serve_env):
    """The serve watchdog's program, configuration and unit (root: it restarts the serve unit), where
    watchdog_config gives one; else nothing (the serve sweep removes a watchdog no longer wanted)."""
    plan = node.plan
    config = watchdog_config(plan, node.host, settings)
    if config is None:
        return {}
    cluster = plan["cluster"]
    directory = settings["config_dir"].rstrip("/")
    program = "%s/%s" % (directory, WATCHDOG_PROGRAM)
    config_path = "%s/%s.json" % (directory, cluster["units"]["watchdog"][len(unit_names.PREFIX):-len(unit_names.SUFFIX)])
    unit = backends.unit_path(plan, "watchdog")
    values = {"serve_unit": cluster["units"]["serve"], "env_file": serve_env,
              "exec_start": backends.command_line(["/usr/bin/python3", program, config_path]),
              "remove_state": backends.command_line(["/bin/rm", "-f", config["state_file"]])}
    return {"files": [{"path": program, "mode": "0644", "source": "serve/" + WATCHDOG_PROGRAM},
                      {"path": config_path, "mode": "0644", "content": json.dumps(config, indent=2, sort_keys=True) + "\n"},
                      {"path": unit, "mode": "0644", "template": "serve/ascend-watchdog.service.j2", "values": values}],
            "units": [{"name": cluster["units"]["watchdog"], "file": unit, "state": "started",
                       "restart_on": [unit, config_path, program]}]}
