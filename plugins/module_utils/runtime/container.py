# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Container mode: one long-lived engine container per node (pure logic, no I/O).

The vllm-ascend document's way for a multi-node Ray cluster: a container of the engine image on
every node with the host's network, the NPU device files and the driver's files mounted, Ray
started inside each container and ``vllm serve`` inside the head's. Here a systemd unit runs the
container; its main process is the collection's supervisor (roles/engine_container/files), which
starts Ray and serve from process specs and restarts them on failure.

Device numbering (docs/npu-families.md): a container given some
``/dev/davinciN`` sees them under their host numbers, and the runtime numbers the logic IDs it
exposes from 0 over the devices the container was given (CANN ``aclrtGetLogicDevIdByPhyDevId``:
logic ID 1 in a container maps to physical ID 6 in its example). So the container gets the plan's
physical IDs as devices and ``ASCEND_RT_VISIBLE_DEVICES=0..n-1``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import posixpath

from ansible_collections.ascend.inference.plugins.module_utils.engines import releases
from ansible_collections.ascend.inference.plugins.module_utils.node import cann
from ansible_collections.ascend.inference.plugins.module_utils.node import probe
from ansible_collections.ascend.inference.plugins.module_utils.runtime import unit_names

RUNTIMES = ("host", "container")
CONTAINER_ENGINES = ("auto", "podman", "docker")
NAME = "ascend-engine"
# The processes the supervisor runs, as host mode runs them in units of their own.
PROCESSES = ("ray", "serve")
MANAGEMENT_DEVICES = ("davinci_manager", "devmm_svm", "hisi_hdc")
# The vllm-ascend document's mounts: the driver's tools and libraries the runtime needs inside.
DRIVER_MOUNTS = ("/usr/local/dcmi", "/usr/local/Ascend/driver/tools/hccn_tool", "/usr/local/bin/npu-smi",
                 "/usr/local/Ascend/driver/lib64", "/usr/local/Ascend/driver/version.info",
                 "/etc/ascend_install.info")
CACHE = "/root/.cache"
# Seconds the supervisor gives each process to stop (its stop command, then SIGTERM, then SIGKILL): Ray
# and serve together stay within the unit's engine_container_stop_timeout (90 s by default).
PROCESS_STOP_TIMEOUT = 40
# The node's configuration (process specs, secrets files, Ray token), mounted read-only at the same path.
CONFIG_DIR = "/etc/ascend-inference"
SPEC_DIR = CONFIG_DIR + "/engine"
# The supervisor, mounted read-only.
LIB_DIR = "/usr/local/lib/ascend-inference"
SUPERVISOR = LIB_DIR + "/engine_supervisor.py"
# Variables of the earlier serve-only container mode, refused with their replacements.
RENAMED = {
    "serve_container_runtime": "ascend_runtime: container with ascend_container_engine (podman, docker or auto)",
    "serve_container_image": "ascend_container_image",
    "serve_container_cache_dir": "engine_container_cache_dir",
    "serve_container_shm_size": "engine_container_shm_size",
    "serve_container_extra_args": "engine_container_extra_args",
}


def settings_problems(runtime, image, engine, service_user):
    """Sentences saying what is wrong with the container settings of the inventory."""
    problems = []
    if runtime not in RUNTIMES:
        return ["ascend_runtime must be one of %s (found %r)" % (", ".join(RUNTIMES), runtime)]
    if engine not in CONTAINER_ENGINES:
        problems.append("ascend_container_engine must be one of %s (found %r)" % (", ".join(CONTAINER_ENGINES), engine))
    if runtime == "container":
        if not isinstance(image, str) or not image.strip():
            problems.append("ascend_container_image is required with ascend_runtime: container (the engine "
                            "image, for example quay.io/ascend/vllm-ascend:v0.23.0)")
        elif any(c.isspace() for c in image):
            problems.append("ascend_container_image must be one image reference without spaces (found %r)" % image)
        if service_user not in (None, "root"):
            problems.append("ascend_service_user is %s but ascend_runtime is container: the engine container runs "
                            "as the image's root (rootful podman or docker); unset ascend_service_user or set "
                            "ascend_runtime: host" % service_user)
    return problems


def service_user(runtime, user, host_default):
    """Who runs Ray and the engine: the image's root in container mode, else the inventory's choice."""
    if runtime == "container":
        return "root"
    return host_default if user is None else user


def runtime(mode, image, engine):
    """The plan's ``cluster.runtime``."""
    container = mode == "container"
    return {
        "mode": mode,
        "image": image if container else None,
        "engine": engine if container else None,
        "unit": unit_names.ENGINE if container else None,
        "container": NAME if container else None,
        "config_dir": CONFIG_DIR if container else None,
        "spec_dir": SPEC_DIR if container else None,
        "supervisor": SUPERVISOR if container else None,
    }


def node_container(mode, env, physical_devices, user_env):
    """A node's ``container``: the device files it gets and the environment inside; None on hosts."""
    if mode != "container":
        return None
    inside = dict(env)
    if "ASCEND_RT_VISIBLE_DEVICES" in inside and "ASCEND_RT_VISIBLE_DEVICES" not in user_env:
        inside["ASCEND_RT_VISIBLE_DEVICES"] = ",".join(str(i) for i in range(len(physical_devices)))
    return {"devices": list(physical_devices), "env": inside}


def run_argv(program, image, node_devices, model, settings):
    """The ``run`` command of the engine container (podman or docker: the same words).

    ``settings``: ``cache_dir`` (mounted at /root/.cache), ``shm_size`` and ``extra_args``. The node's
    configuration directory (the process specs, the secrets files and the Ray token) and the
    supervisor's directory are mounted read-only at their own paths.
    """
    argv = [program, "run", "--rm", "--name=" + NAME, "--net=host", "--shm-size=" + settings["shm_size"],
            # Output reaches the unit's journal through the attached client: no second copy in a log driver.
            "--log-driver=none",
            # vLLM and Ray start thousands of threads on a big node: podman's default limit is 2048.
            "--pids-limit=-1"]
    argv += ["--device=/dev/davinci%d" % device for device in node_devices]
    argv += ["--device=/dev/" + device for device in MANAGEMENT_DEVICES]
    argv += ["--volume=%s:%s:ro" % (path, path) for path in DRIVER_MOUNTS]
    argv.append("--volume=%s:%s" % (settings["cache_dir"], CACHE))
    if isinstance(model, str) and model.startswith("/") and not model.startswith(CACHE + "/"):
        argv.append("--volume=%s:%s:ro" % (model, model))
    argv += ["--volume=%s:%s:ro" % (path, path) for path in (CONFIG_DIR, LIB_DIR)]
    argv += list(settings["extra_args"])
    return argv + ["--entrypoint=python3", image, SUPERVISOR, SPEC_DIR]


def exec_argv(program, argv, env=None):
    """``podman exec`` / ``docker exec`` of a command inside the running engine container."""
    words = [program, "exec"]
    for name in sorted(env or {}):
        words.append("--env=%s=%s" % (name, env[name]))
    return words + [NAME] + list(argv)


def process_spec(name, argv, env, env_files, source, restart_sec, after=(), stop_argv=None,
                 stop_timeout=PROCESS_STOP_TIMEOUT):
    """One process the supervisor runs (the JSON it reads, sorted keys, so that a rewrite of the same
    spec changes nothing). A variable without a value (a NIC the node could not tell) is refused."""
    unset = sorted(k for k, v in env.items() if v is None)
    if unset:
        raise ValueError("%s has no value for %s: set ascend_nic for the node (the NIC that carries its "
                         "ascend_node_ip)" % (name, ", ".join(unset)))
    return json.dumps({
        "name": name,
        "argv": list(argv),
        "env": dict(env),
        "env_files": list(env_files),
        "source": list(source),
        "restart_sec": restart_sec,
        "after": list(after),
        "stop_argv": list(stop_argv) if stop_argv else None,
        "stop_timeout": stop_timeout,
    }, indent=2, sort_keys=True) + "\n"


# Run by the image's python3 (the engine's) with one JSON argument: what the collection needs to know
# about the image (the releases of the distributions, the CANN install files, the environment scripts).
INSPECT = (
    "import glob, importlib.metadata as m, json, os, sys\n"
    "ask = json.loads(sys.argv[1])\n"
    "found = {'python': sys.version.split()[0], 'versions': {}, 'files': {}, 'set_env': []}\n"
    "for name in ask['distributions']:\n"
    "    try:\n"
    "        found['versions'][name] = m.version(name)\n"
    "    except m.PackageNotFoundError:\n"
    "        found['versions'][name] = None\n"
    "for pattern in ask['install_files']:\n"
    "    for path in sorted(glob.glob(pattern)):\n"
    "        with open(path, errors='replace') as handle:\n"
    "            found['files'][path] = handle.read()\n"
    "found['set_env'] = [path for path in ask['set_env'] if os.path.isfile(path)]\n"
    "print(json.dumps(found))\n"
)
ASCEND_HOME = "/usr/local/Ascend"
# nnal's ATB library, which vllm-ascend loads, has its own environment script.
NNAL_SET_ENV = ASCEND_HOME + "/nnal/atb/set_env.sh"


def inspect_argv():
    """The python3 arguments that read an image: the CANN layouts as the host probe knows them."""
    ask = {
        "distributions": list(releases.DISTRIBUTIONS) + ["ray"],
        "install_files": [posixpath.join(ASCEND_HOME, pattern) for layout in cann.LAYOUTS
                          for pattern in cann.INSTALL_INFO[layout]],
        # The newer layout first, as on hosts.
        "set_env": [posixpath.join(ASCEND_HOME, cann.SET_ENV[layout]) for layout in reversed(cann.LAYOUTS)]
        + [NNAL_SET_ENV],
    }
    return ["-c", INSPECT, json.dumps(ask, sort_keys=True)]


def image_cann_versions(inside):
    """The CANN releases the image's install files name, sorted."""
    versions = set()
    for text in (inside or {}).get("files", {}).values():
        version = cann.parse_key_values(text).get("version")
        if version:
            versions.add(version)
    return sorted(versions)


def environment_scripts(found):
    """The image's CANN environment scripts the supervisor sources: one toolkit script (the newer
    layout first, as the preflight prefers it on hosts) and nnal's ATB script where present."""
    scripts = (found or {}).get("set_env") or []
    return [s for s in scripts if s != NNAL_SET_ENV][:1] + [s for s in scripts if s == NNAL_SET_ENV]


def image_id_problems(ids_by_host, image):
    """Sentences naming the nodes whose image differs (``ids_by_host``: {host: image ID or None})."""
    missing = sorted(h for h, i in ids_by_host.items() if not i)
    problems = []
    if missing:
        problems.append("ascend_container_image %s is not on host%s %s" % (
            image, "s" if len(missing) > 1 else "", ", ".join(missing)))
    by_id = {}
    for host in sorted(ids_by_host):
        if ids_by_host[host]:
            by_id.setdefault(_hex(ids_by_host[host]), []).append(host)
    if len(by_id) > 1:
        problems.append("ascend_container_image %s is not the same image on every node (the engine, CANN and "
                        "Ray inside must match): %s; load or pull the same image everywhere" % (
                            image, "; ".join("%s on %s" % (short_id(i), ", ".join(h)) for i, h in
                                             sorted(by_id.items(), key=lambda item: item[1]))))
    return problems


def short_id(image_id):
    """The 12-character form podman and docker print."""
    return _hex(image_id or "")[:12]


def archive_image(manifest_text):
    """(image ID, tags) of a ``podman save`` / ``docker save`` archive from its manifest.json.

    The image ID is the digest of the image's config: the config blob's file name, ``<hex>.json``
    (docker-archive) or ``blobs/sha256/<hex>`` (the layout of newer docker).
    """
    manifest = json.loads(manifest_text)
    if not isinstance(manifest, list) or len(manifest) != 1:
        raise ValueError("the archive must hold exactly one image (found %d)" % (
            len(manifest) if isinstance(manifest, list) else 0))
    config = posixpath.basename(manifest[0]["Config"])
    digest = config[:-len(".json")] if config.endswith(".json") else config
    if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise ValueError("unexpected config name %r in the archive's manifest" % manifest[0]["Config"])
    return "sha256:" + digest, list(manifest[0].get("RepoTags") or [])


def same_image(node_id, wanted_id):
    """Whether two image IDs name the same image (podman prints the bare hex, docker sha256:<hex>)."""
    return bool(node_id) and _hex(node_id) == _hex(wanted_id)


def _hex(image_id):
    return str(image_id).rsplit(":", maxsplit=1)[-1]


def image_problems(host, image, found, cluster):
    """Sentences naming what the image on ``host`` lacks for the plan (``found``: the engine_image result)."""
    if found.get("error") and not found.get("inside"):
        return ["host %s: %s" % (host, found["error"])]
    inside = found.get("inside") or {}
    versions = inside.get("versions") or {}
    where = {"program": "image %s" % image, "interpreter": "python3 in the image", "error": None,
             "versions": versions}
    problems = ["host %s: %s" % (host, p) for p in probe.engine_problems(
        where, cluster["engine_distribution"], cluster["engine_version"], cluster["vllm_version"])]
    if cluster["launcher"] == "ray" and not versions.get("ray"):
        problems.append("host %s: image %s has no ray distribution (ascend_launcher: ray starts Ray inside it)"
                        % (host, image))
    return problems


def cluster_image_problems(found_by_host, cluster):
    """Every node's image problems and, across nodes, differing image IDs: one list of sentences.
    ``found_by_host``: {host: what engine_image found there}; ``cluster``: the plan's."""
    problems, ids = [], {}
    for host in sorted(found_by_host):
        found = found_by_host[host] or {}
        if not found.get("id") and found.get("action") in ("loaded", "pulled") and not found.get("error"):
            continue  # a check run: the image would be loaded or pulled here, and is judged then
        ids[host] = found.get("id")
        if found.get("id"):
            problems.extend(image_problems(host, cluster["runtime"]["image"], found, cluster))
        elif found.get("error"):
            problems.append("host %s: %s" % (host, found["error"]))
    return image_id_problems(ids, cluster["runtime"]["image"]) + problems


def process_units(status_text, engine_unit, units):
    """The supervisor's processes (ray, serve) in the shape of `systemctl show` of the host-mode units, so
    that status.yml shows and judges both modes alike: {units["ray"]: {...}, units["serve"]: {...}}.

    ``status_text``: what ``engine_supervisor.py status`` printed (JSON, or anything on failure);
    ``engine_unit``: the engine unit's properties (ActiveState, ...); ``units``: the plan's cluster.units.
    """
    try:
        processes = json.loads(status_text or "{}")
    except ValueError:
        processes = {}
    running = (engine_unit or {}).get("ActiveState") == "active"
    found = {}
    for name in PROCESSES:
        process = processes.get(name) if running and isinstance(processes, dict) else None
        if not process:
            found[units[name]] = {"LoadState": "not-found"}
            continue
        active = process.get("state") == "running"
        found[units[name]] = {
            "LoadState": "loaded",
            "ActiveState": "active" if active else "activating",
            "SubState": "running in %s" % NAME if active else "waiting in %s" % NAME,
            "NRestarts": str(process.get("restarts", 0)),
            "ActiveEnterTimestamp": (engine_unit or {}).get("ActiveEnterTimestamp", ""),
        }
    return found


def supervisor_argv(program, *words):
    """The supervisor's own commands (``restart NAME``, ``status``) run inside the engine container."""
    return exec_argv(program, ["python3", SUPERVISOR] + list(words))
