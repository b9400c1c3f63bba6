# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ray phase's desired state (Ray launcher): the cluster's token, Ray's environment, its process (a unit on
the host, a process of the engine container) and, on the head, the cluster probe. The head applies first; a worker
waits for the head's port before its Ray starts and restarts when the head's did. Under the mp launcher, nothing
of Ray stays. The ray_token phase, before it, reads every node's token (and draws one the cluster may need)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible.module_utils.compat.version import LooseVersion

from ansible_collections.ascend.inference.plugins.module_utils.runtime import container, service_account
from ansible_collections.ascend.inference.plugins.plugin_utils.phases import backends
from ansible_collections.ascend.inference.plugins.plugin_utils.phases.phase import Refused, stepped

TOKEN = "ray-auth-token"
PROBE = "ray-cluster-nodes.py"
# Ray 2.52 and later authenticate with a token (RAY_AUTH_MODE=token).
TOKEN_RAY = "2.52"
# `ray start --block` exits 1 after `ray stop`: the expected end of a stop (the unit says so).
RESTART_SEC = 5
# What the ray_token phase read on each node, as the role registers it (no_log): a fact would be shown again by every
# later phase's result.
TOKEN_READ = "ray_cluster_token_read"
# The token: read where it is, else 64 letters and digits drawn on the node, in case the cluster needs one.
READ_TOKEN = ('if [ -e "$1" ] || [ -L "$1" ]; then echo held; cat "$1" 2>/dev/null; '
              'else echo new; LC_ALL=C tr -dc A-Za-z0-9 </dev/urandom | head -c 64; fi')
SETTINGS = {"env": "str", "create_env": "bool", "version": "str", "package": "str", "wheelhouse": "str", "auth": "str",
            "config_dir": "str", "barrier_timeout": "int", "firewall_enabled": "bool", "node_env_file": "str",
            "secrets_file": "str", "check_peer": "bool"}


def paths(settings, plan):
    """The token and Ray's environment, an instance's own (ray-auth-token-NAME, ray-NAME.env) in a plan of
    instances: its Ray cluster's; the probe is the same script for every cluster."""
    config = settings["config_dir"]
    instance = plan["cluster"].get("instance")
    suffix = "-" + instance if instance else ""
    return {"token": config + "/" + TOKEN + suffix, "env": "%s/ray%s.env" % (config, suffix),
            "probe": config + "/" + PROBE}


def members(node):
    """The hosts of this run in the node's Ray cluster (the plan's nodes: an instance's hosts with several)."""
    return [host for host in node.play_hosts() if host in node.plan["nodes"]]


def token_read(node, settings):
    """The ray_token phase: what the node holds, registered by the role under TOKEN_READ (no_log: its content and a
    drawn candidate); never a fact."""
    read = node.run("ansible.builtin.command", {"argv": ["sh", "-c", READ_TOKEN, "sh", paths(settings, node.plan)["token"]]})
    if read.get("rc") != 0:
        raise Refused("%s: cannot read the Ray token (rc %s): %s" % (node.host, read.get("rc"), read.get("stderr")))
    lines = (read.get("stdout") or "").split("\n", 1)
    held = lines[0] == "held"
    value = lines[1].strip() if len(lines) > 1 else ""
    return {"apply": None, "record": None,
            "result": {"held": held, "token": value if held else "", "candidate": "" if held else value}}


def install_argv(settings):
    """Create the environment where it is missing (ray_cluster_create_env), install Ray, print Python's version.
    pip itself rather than ansible.builtin.pip, which needs `packaging` in the node's system Python."""
    env = settings["env"]
    pip = [env + "/bin/pip", "install", "--disable-pip-version-check", "--quiet"]
    if settings["wheelhouse"]:
        pip += ["--no-index", "--find-links", settings["wheelhouse"]]
    script = ('[ -x "$1/bin/python" ] || { [ "$2" = yes ] && python3 -m venv "$1"; } || '
              '{ echo "no Python environment at $1 (ray_cluster_create_env is false)" >&2; exit 3; }; '
              'env="$1"; shift 2; "$@" && "$env/bin/python" -c "import sys; print(sys.version.split()[0])"')
    return ["sh", "-c", script, "sh", env, "yes" if settings["create_env"] else "no"] + pip + [
        "%s==%s" % (settings["package"], settings["version"])]


def install(node, settings):
    """The ray_install phase (host mode): Ray in the engine's Python environment where the preflight did not find
    this version there; what the node runs (or will, once installed) recorded for the check across nodes."""
    python = (node.applied("preflight") or {}).get("python") or {}
    probed = python.get("path") == settings["env"] + "/bin/python" and python.get("version") and not python.get("error")
    if probed and (python.get("distributions") or {}).get("ray") == settings["version"]:
        return {"apply": None, "record": {"python": python["version"], "ray": settings["version"]}}
    if node.check_mode:
        return {"apply": None, "changed": True,
                "record": {"python": python.get("version") or "(environment not created yet)", "ray": settings["version"]}}
    done = node.run("ansible.builtin.command", {"argv": install_argv(settings)})
    if done.get("rc") != 0:
        raise Refused("%s: installing Ray %s in %s failed (rc %s): %s" % (
            node.host, settings["version"], settings["env"], done.get("rc"),
            ((done.get("stderr") or "") + (done.get("stdout") or "")).strip()[-1500:]))
    return {"apply": None, "changed": True, "notes": ["Ray %s installed in %s" % (settings["version"], settings["env"])],
            "record": {"python": done["stdout"].strip().splitlines()[-1], "ray": settings["version"]}}


def versions(node, settings):
    """{host: {python, ray}} that each node of the run runs, or will once installed."""
    found = {}
    for host in members(node):
        if backends.mode(node.plan) == "container":
            inside = (node.applied("image", host=host) or {}).get("inside") or {}
            found[host] = {"python": inside.get("python") or "(image not loaded yet)",
                           "ray": (inside.get("versions") or {}).get("ray") or settings["version"]}
        else:
            found[host] = node.applied("ray_install", host=host) or {
                "python": "(environment not created yet)", "ray": settings["version"]}
    return found


def token_auth(node, settings, found):
    """Whether Ray authenticates by token, with the warnings and refusals that go with it."""
    ray = found[node.host]["ray"]
    auth = settings["auth"] == "token" or (settings["auth"] == "auto" and LooseVersion(ray) >= LooseVersion(TOKEN_RAY))
    warnings = []
    if not auth:
        where = "image" if backends.mode(node.plan) == "container" else "environment"
        if settings["auth"] != "none" and not settings["firewall_enabled"]:
            raise Refused("Ray %s on host %s has no token authentication (Ray 2.52 or later has it) and firewall_enabled "
                          "is false: anyone who reaches Ray's ports could run code on the cluster (CVE-2023-48022). "
                          "Turn the members-only firewall on (firewall_enabled: true), use an %s with Ray 2.52 or "
                          "later, or accept the risk with ray_cluster_auth: none." % (ray, node.host, where))
        # The host in the text: Ansible shows a warning given twice once.
        warnings.append("%s: Ray %s runs without token authentication (%s): anyone who reaches its ports can run code "
                        "on the cluster (CVE-2023-48022). %s" % (
                            node.host, ray, "ray_cluster_auth: none" if settings["auth"] == "none" else "too old for it",
                            "The members-only firewall is on." if settings["firewall_enabled"]
                            else "The members-only firewall is OFF: keep the nodes on an isolated network."))
    return auth, warnings


def cluster_token(node, settings):
    """The head's token, else the one the head drew; refused where the head lost its token while others keep one
    (generating a new one would silently re-key the cluster)."""
    head = node.plan["cluster"]["head"]
    if head not in node.play_hosts():
        raise Refused("The Ray head %s is not in this run (--limit?): the cluster's token and the restart order come "
                      "from it; include it in --limit." % head)
    held = node.var(TOKEN_READ, None, host=head) or {}
    if held.get("token"):
        return held["token"]
    holders = [host for host in members(node)
               if host != head and (node.var(TOKEN_READ, None, host=host) or {}).get("held")]
    token_file = paths(settings, node.plan)["token"]
    if holders:
        raise Refused("The head %s has no Ray token (%s) but %s %s one: copy a worker's %s back to the head (same "
                      "owner, group and mode), or, to give the cluster a new token on purpose, delete it on every node "
                      "and run again (every node's Ray restarts)."
                      % (head, token_file, ", ".join(holders), "has" if len(holders) == 1 else "have", token_file))
    if not held.get("candidate"):
        raise Refused("the Ray head %s drew no token (the ray_token phase did not run on it)" % head)
    return held["candidate"]


def absent(node, settings):
    """Under the mp launcher no Ray runs: a node deployed with Ray before keeps neither its process nor its
    environment or token (a later switch back to Ray starts a new cluster with a new token)."""
    plan = node.plan
    files = paths(settings, plan)
    leftovers = [files["env"], files["token"], files["probe"]]
    if backends.mode(plan) == "host":
        return {"apply": backends.host_unit_absent(plan, "ray", leftovers), "record": {"restarted": False}}
    spec = backends.spec_path(plan, "ray")
    return {"apply": {"absent": leftovers + [spec],
                      "units": [{"name": plan["cluster"]["runtime"]["unit"], "reload_on": [spec],
                                 "retries": backends.CONTAINER_RETRIES}]},
            "record": {"restarted": False}}


def desired(node, settings):
    """settings: env, version, config_dir, auth, barrier_timeout, firewall_enabled, check_peer, engine (the
    engine_container settings: cache_dir, shm_size, extra_args, stop_timeout), secrets_file."""
    plan = node.plan
    cluster = plan["cluster"]
    if cluster["launcher"] != "ray":
        return absent(node, settings)
    host, head = node.host, cluster["head"]
    plan_node = plan["nodes"][host]
    container_mode = backends.mode(plan) == "container"
    image = backends.image_of(node) if container_mode else {}
    found = versions(node, settings)
    if len(set(json.dumps(v, sort_keys=True) for v in found.values())) > 1:
        raise Refused("Ray and Python must match on every node (vLLM's Ray executor runs across them); found: %s"
                      % ", ".join("%s %s" % (h, json.dumps(found[h], sort_keys=True)) for h in members(node)))
    auth, warnings = token_auth(node, settings, found)
    files = paths(settings, plan)
    head_restarted = host != head and bool((node.applied("ray", host=head) or {}).get("restarted"))
    state = {"directories": [{"path": settings["config_dir"]}], "files": [], "secrets": {}}
    if auth:
        state["files"].append({"path": files["token"], "group": cluster["service"]["group"],
                               "mode": "0640" if cluster["service"]["confined"] else "0600"})
        state["secrets"][files["token"]] = cluster_token(node, settings)
    state["files"].append({"path": files["env"], "mode": "0600", "template": "ray_cluster/ray.env.j2", "values": {
        "path": None if container_mode else "%s/bin:%s" % (settings["env"], backends.PATH),
        "token": auth, "token_path": files["token"]}})
    if host == head:
        # Installed before Ray starts, which keeps the CPUs busy; in container mode the head's container sees it
        # through the mounted directory.
        state["files"].append({"path": files["probe"], "mode": "0644", "source": "ray_cluster/cluster_nodes.py"})
    wait = None if host == head else head_wait(plan, settings["barrier_timeout"])
    if container_mode:
        backends.config_problems(plan, host, {"ray_cluster_config_dir": settings["config_dir"],
                                              "node_env_secrets_file": settings["secrets_file"].rsplit("/", 1)[0]})
        spec = backends.process(plan, host, "ray", plan_node["ray_start_argv"], [settings["secrets_file"], files["env"]],
                                image, RESTART_SEC, stop_argv=["ray", "stop"])
        backends.merge(state, backends.host_leftovers(plan))
        backends.merge(state, backends.engine(node, image))
        state["files"].append(spec)
        engine_unit = state["units"][-1]
        engine_unit["reload_on"] = [spec["path"], files["env"]]
        if wait:
            engine_unit["wait_for"] = wait
        # The token is read by path: a new one restarts Ray; so does a head that started again (once its port answers).
        command = backends.restart_in_container(plan, image, "ray", [files["token"]], head_restarted)
        command["wait_for"] = wait
        state["commands"] = [command]
    else:
        unit = backends.unit_path(plan, "ray")
        state["files"].append({"path": unit, "mode": "0644", "template": "ray_cluster/ascend-ray.service.j2",
                               "values": unit_values(plan, plan_node, settings, files)})
        backends.merge(state, backends.container_leftovers(plan))
        state["units"].append({"name": cluster["units"]["ray"], "file": unit, "state": "started",
                               "restart_on": [unit, files["env"], files["token"]], "restart": head_restarted,
                               "wait_for": wait})
        state["account"] = backends.account(plan, service_account.COMMENT)
        if settings["check_peer"] and not node.check_mode:
            state["peers"] = [{"unit": cluster["units"]["serve"], "user": cluster["service"]["user"]}]
    return {"apply": state, "warnings": warnings, "record": {"token_auth": auth, "versions": found[host]},
            "after": lambda result: {"restarted": restarted(node, settings, result)}}


def head_wait(plan, timeout):
    """A worker's wait for its head's Ray port before its Ray starts (node_apply's wait_for)."""
    cluster = plan["cluster"]
    return {"host": plan["nodes"][cluster["head"]]["node_ip"], "port": cluster["ray_port"], "timeout": timeout}


def unit_values(plan, plan_node, settings, files):
    cluster = plan["cluster"]
    ray = settings["env"] + "/bin/ray"
    return {
        "role": plan_node["role"], "firewall": cluster["units"]["firewall"],
        "service_lines": backends.service_lines(plan, plan_node),
        "env_file": settings["node_env_file"], "secrets_file": settings["secrets_file"], "ray_env": files["env"],
        "exec_start": backends.command_line([ray] + plan_node["ray_start_argv"][1:]),
        "exec_stop": backends.command_line([ray, "stop"]),
    }


def restarted(node, settings, result):
    """Whether this node's Ray started again in the apply's RESULT (a worker's follows its head's)."""
    cluster = node.plan["cluster"]
    if cluster["launcher"] != "ray":
        return False
    if backends.mode(node.plan) == "container":
        return stepped(result, cluster["runtime"]["unit"], ("start", "restart", "reload")) or bool(result.get("commands"))
    # A restart, or a start of a stopped head whose unit, environment or token changed: either is a new head.
    changed = set(result.get("changed_paths") or [])
    files = paths(settings, node.plan)
    return stepped(result, cluster["units"]["ray"], ("restart",)) or (
        stepped(result, cluster["units"]["ray"], ("start",))
        and bool(changed & {backends.unit_path(node.plan, "ray"), files["env"], files["token"]}))


def probe_argv(plan, config_dir, python_env, program):
    """The cluster probe on the head, as a client of a token-authenticated cluster where the node holds the
    token (the probe, the token and Ray's environment are where the ray phase put them)."""
    cluster = plan["cluster"]
    config_dir = config_dir.rstrip("/")
    token = paths({"config_dir": config_dir}, plan)["token"]
    script = ('[ -e "$1" ] && export RAY_AUTH_MODE=token RAY_AUTH_TOKEN_PATH="$1"; shift; exec "$@"')
    python = "python3" if cluster["runtime"]["mode"] == "container" else python_env.rstrip("/") + "/bin/python"
    argv = ["sh", "-c", script, "sh", token, python, config_dir + "/" + PROBE, cluster["ray_address"],
            cluster["units"]["ray"]]
    return container.exec_argv(program, argv) if cluster["runtime"]["mode"] == "container" else argv
