# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where Ray and serve run, as two backends of the same desired state (pure logic, no I/O).

The ray and serve phases say what process they want - its argv, environment files, what restarts it - and the
plan's runtime mode picks how it runs: on the host, a systemd unit of its own (ascend-ray.service,
ascend-serve.service); in container mode, a process spec that the engine container's supervisor runs
(ascend-engine.service, the same unit for both phases). Each backend also removes what the other left.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import posixpath

from ansible_collections.ascend.inference.plugins.module_utils.runtime import container, service_account, systemd, unit_names
from ansible_collections.ascend.inference.plugins.plugin_utils.phases.phase import Refused

# Where a container-mode deployment kept its files, for removing them after a switch to host mode (the plan then
# names no runtime paths).
SUPERVISOR_FILE = "engine_supervisor.py"
# A container whose main process is still starting may not take a reload or a request yet.
CONTAINER_RETRIES = 15
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def merge(state, part):
    """STATE with PART's lists appended (a directory or file STATE already names is kept as STATE gives it) and its
    mappings added."""
    for key, value in part.items():
        if isinstance(value, list):
            have = state.get(key, [])
            named = set(item["path"] for item in have if isinstance(item, dict) and "path" in item)
            state[key] = have + [item for item in value if item not in have
                                 and not (isinstance(item, dict) and item.get("path") in named)]
        elif isinstance(value, dict) and key != "account":
            state[key] = dict(state.get(key, {}), **value)
        else:
            state[key] = value
    return state


def mode(plan):
    return plan["cluster"]["runtime"]["mode"]


def unit_path(plan, name):
    return "%s/%s" % (plan["cluster"]["unit_dir"], plan["cluster"]["units"][name])


def command_line(argv):
    try:
        return systemd.command_line(argv)
    except ValueError as error:
        raise Refused(str(error))


def service_lines(plan, plan_node):
    """The [Service] lines that run a unit as the plan's service account, confined (none for root)."""
    return service_account.unit_lines(plan["cluster"]["service"], plan_node["service_groups"])


def account(plan, comment):
    """The service account node_apply creates before writing (None for root)."""
    service = plan["cluster"]["service"]
    if not service["confined"]:
        return None
    return {"user": service["user"], "group": service["group"], "home": service["home"], "comment": comment}


# Host backend

def container_leftovers(plan):
    """A node switched to host mode keeps no engine container, process specs or supervisor (the image stays)."""
    unit = "%s/%s" % (plan["cluster"]["unit_dir"], unit_names.ENGINE)
    return {"units": [{"name": unit_names.ENGINE, "file": unit, "state": "absent"}],
            "absent": [unit, container.SPEC_DIR, container.SUPERVISOR]}


def host_unit_absent(plan, name, more=()):
    """A host unit of this phase stopped, disabled and removed, with the files only it reads."""
    path = unit_path(plan, name)
    return {"units": [{"name": plan["cluster"]["units"][name], "file": path, "state": "absent"}],
            "absent": [path] + list(more)}


# Container backend

def host_leftovers(plan):
    """A node switched to container mode keeps no host-mode Ray or serve unit (serve stops first)."""
    return merge(host_unit_absent(plan, "ray"), host_unit_absent(plan, "serve"))


def config_problems(plan, host, dirs):
    """The container mounts the plan's config directory only: DIRS ({variable: directory}) must be it."""
    inside = plan["cluster"]["runtime"]["config_dir"]
    outside = sorted(name for name, path in dirs.items() if path.rstrip("/") != inside)
    if outside:
        raise Refused("%s on host %s must stay in %s in container mode (ascend_runtime: container): the engine "
                      "container mounts that directory only." % (", ".join(outside), host, inside))


def image_of(node):
    """This node's engine image as the engine_container role found it (ascend_applied.image), checked against
    the plan and every other node's: the same image everywhere, with the plan's releases inside."""
    cluster = node.plan["cluster"]
    found = dict((host, node.applied("image", host=host) or {}) for host in node.play_hosts())
    problems = container.cluster_image_problems(found, cluster)
    if problems:
        raise Refused("\n- ".join(["the engine image is not ready on every node:"] + problems))
    return found.get(node.host) or {}


def engine(node, image):
    """The engine container of the node: its directories, the supervisor, the unit that runs it (restarted when
    either changes). IMAGE: what the engine_container role found, with how to run it (its ``run``: cache_dir,
    shm_size, extra_args, stop_timeout)."""
    plan = node.plan
    run = image.get("run") or {}
    # As ansible-core 2.18 may render them: a number as text.
    settings = {"cache_dir": run["cache_dir"], "shm_size": str(run["shm_size"]), "extra_args": list(run["extra_args"]),
                "stop_timeout": int(run["stop_timeout"])}
    runtime = plan["cluster"]["runtime"]
    program = image.get("program")
    if not program:
        raise Refused("host %s has no container engine (%s) for ascend_runtime: container"
                      % (node.host, runtime["engine"]))
    run_image = image.get("id") or image.get("archive_id") or runtime["image"]
    name = runtime["container"]
    run = container.run_argv(program, run_image, plan["nodes"][node.host]["container"]["devices"],
                             plan["cluster"]["model"], settings)
    unit = unit_path(plan, "engine")
    values = {
        "image": runtime["image"], "firewall": plan["cluster"]["units"]["firewall"], "name": name,
        "exec_start_pre": command_line([program, "rm", "--force", name]),
        "exec_start": command_line(run),
        "exec_reload": command_line([program, "kill", "--signal=HUP", name]),
        "exec_stop": command_line([program, "stop", "--time=%d" % settings["stop_timeout"], name]),
        "stop_timeout": settings["stop_timeout"] + 30,
    }
    return {
        "directories": [
            # The shared cache may be a mount whose owner and mode are not ours to change: created only when missing.
            {"path": settings["cache_dir"], "keep": True},
            {"path": runtime["config_dir"], "mode": "0755"},
            {"path": runtime["spec_dir"], "mode": "0700"},
            {"path": posixpath.dirname(runtime["supervisor"]), "mode": "0755"},
        ],
        "files": [
            {"path": runtime["supervisor"], "mode": "0644", "source": "engine_container/" + SUPERVISOR_FILE},
            {"path": unit, "mode": "0644", "template": "engine_container/ascend-engine.service.j2", "values": values},
        ],
        # The processes restart inside the container on a reload; the container itself only when its command
        # (image, devices, mounts) or the supervisor changed.
        "units": [{"name": runtime["unit"], "file": unit, "state": "started",
                   "restart_on": [unit, runtime["supervisor"]], "retries": CONTAINER_RETRIES}],
    }


def process(plan, host, name, argv, env_files, image, restart_sec, after=(), stop_argv=None):
    """The supervisor's spec of process NAME (a file of the spec directory, 0600)."""
    plan_node = plan["nodes"][host]
    try:
        spec = container.process_spec(name, argv, plan_node["container"]["env"], env_files,
                                      container.environment_scripts((image or {}).get("inside")), restart_sec,
                                      after, stop_argv)
    except ValueError as error:
        raise Refused(str(error))
    return {"path": spec_path(plan, name), "mode": "0600", "content": spec}


def spec_path(plan, name):
    return "%s/%s.json" % (plan["cluster"]["runtime"]["spec_dir"] or container.SPEC_DIR, name)


def restart_in_container(plan, image, name, on_changed=(), always=False):
    """The supervisor asked to restart NAME (and what runs after it), unless the container itself (re)started."""
    return {"label": "restarted %s in %s" % (name, plan["cluster"]["runtime"]["container"]),
            "argv": container.supervisor_argv(image["program"], "restart", name), "on_changed": list(on_changed),
            "always": always, "unless_started": plan["cluster"]["runtime"]["unit"], "retries": CONTAINER_RETRIES}
