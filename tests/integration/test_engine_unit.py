"""The engine container's unit (roles/engine_container) as rendered for podman and for docker.

Container mode runs for real in molecule/serve_container, with podman. Docker cannot run on the
build machines, so its unit is rendered from the same template for seed scenario 9 (8 NPUs per node)
and compared with podman's, word for word, apart from the program; systemd's parser checks both
(tests/run.sh installs systemd, which holds systemd-analyze).
"""

import json
import os
import shlex
import shutil
import subprocess
import sys

import pytest

from conftest import BIN, REPO

EXAMPLE = os.path.join(REPO, "inventories", "examples", "09-qwen3-235b-tp8-pp2-ray", "hosts")
IMAGE = "quay.io/ascend/vllm-ascend:v0.23.0"
# The image's ID on the node (what the engine_image module read): the unit runs the image by it.
IMAGE_ID = "04598bc9955b" + "1" * 52


class Node(object):
    """One host of the plan as the ray and serve phases see it (plugins/plugin_utils/phases/node.py)."""

    def __init__(self, host, plan):
        self.host, self.plan = host, plan


def render(tmp_path_factory, collections_root, program):
    """Every node's unit as the engine container's phases render it, from the example's plan (plan.yml)."""
    sys.path.insert(0, str(collections_root))
    from ansible_collections.ascend.inference.plugins.plugin_utils.phases import backends
    from ansible_collections.ascend.inference.plugins.plugin_utils.phases.node import render as render_template
    out = tmp_path_factory.mktemp("plan")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(collections_root), ANSIBLE_NOCOLOR="1")
    env.pop("ANSIBLE_CONFIG", None)
    settings = {"ascend_runtime": "container", "ascend_container_image": IMAGE, "ascend_plan_dir": str(out),
                "ascend_api_key": "not-in-the-unit", "ascend_extra_env": {"HF_TOKEN": "hf-not-in-the-unit"}}
    proc = subprocess.run([os.path.join(BIN, "ansible-playbook"), os.path.join(REPO, "playbooks", "plan.yml"),
                           "-i", EXAMPLE, "-e", json.dumps(settings)],
                          cwd=str(out), env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    documents = dict((path.stem, json.loads(path.read_text())) for path in out.glob("*.json"))
    cluster = next(iter(documents.values()))["cluster"]
    plan = {"cluster": cluster, "nodes": dict((host, dict((key, value) for key, value in document.items()
                                                          if key != "cluster")) for host, document in documents.items())}
    # What the engine_container role found on a node (ascend_applied.image), with its defaults.
    run = {"cache_dir": "/root/.cache", "shm_size": "1g", "extra_args": [], "stop_timeout": 90}
    image = {"program": program, "id": IMAGE_ID, "run": run}
    units = {}
    for host in plan["nodes"]:
        part = backends.engine(Node(host, plan), image)
        unit = next(spec for spec in part["files"] if spec["path"].endswith("ascend-engine.service"))
        units[host] = render_template(unit["template"], unit["values"])
    return units


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    """podman and docker as a node has them (this machine runs no docker)."""
    found = {}
    for name in ("podman", "docker"):
        path = tmp_path_factory.mktemp("bin") / name
        path.write_text("#!/bin/sh\nexit 0\n")
        path.chmod(0o755)
        found[name] = str(path)
    return found


@pytest.fixture(scope="module")
def units(tmp_path_factory, collections_root, programs):
    return {name: render(tmp_path_factory, collections_root, path) for name, path in programs.items()}


def directive(unit, name):
    return [line.split("=", 1)[1] for line in unit.splitlines() if line.startswith(name + "=")]


def run_argv(unit):
    return shlex.split(directive(unit, "ExecStart")[0])


def test_every_node_runs_an_engine_container(units):
    assert sorted(units["podman"]) == ["node1", "node2"]


def test_podman_runs_the_supervisor_in_the_image_with_the_documents_devices_and_mounts(units, programs):
    argv = run_argv(units["podman"]["node1"])
    image = argv.index(IMAGE_ID)
    options, command = argv[:image], argv[image + 1:]
    assert options[:4] == [programs["podman"], "run", "--rm", "--name=ascend-engine"]
    assert "--net=host" in options and "--shm-size=1g" in options and "--log-driver=none" in options
    # The seed's devices and mounts (SEEDS.md section 6), for the node's 8 NPUs.
    assert [o for o in options if o.startswith("--device=/dev/davinci") and o[-1].isdigit()] == \
        ["--device=/dev/davinci%d" % i for i in range(8)]
    for device in ("davinci_manager", "devmm_svm", "hisi_hdc"):
        assert "--device=/dev/" + device in options
    for path in ("/usr/local/dcmi", "/usr/local/Ascend/driver/tools/hccn_tool", "/usr/local/bin/npu-smi",
                 "/usr/local/Ascend/driver/lib64", "/usr/local/Ascend/driver/version.info", "/etc/ascend_install.info"):
        assert "--volume=%s:%s:ro" % (path, path) in options
    assert "--volume=/root/.cache:/root/.cache" in options
    assert "--volume=/etc/ascend-inference:/etc/ascend-inference:ro" in options
    assert options[-1] == "--entrypoint=python3"
    assert command == ["/usr/local/lib/ascend-inference/engine_supervisor.py", "/etc/ascend-inference/engine"]
    # No environment and no secret on the command line: the supervisor reads them from the 0600 files.
    assert not [o for o in options if o.startswith(("--env", "-e"))]
    assert "# %s, by its ID on this node:" % IMAGE in units["podman"]["node1"]


def test_the_unit_keeps_secrets_out_and_stops_in_order(units, programs):
    unit = units["podman"]["node1"]
    assert "not-in-the-unit" not in unit and "EnvironmentFile" not in unit
    assert directive(unit, "ExecStartPre") == ['-"%s" "rm" "--force" "ascend-engine"' % programs["podman"]]
    assert shlex.split(directive(unit, "ExecReload")[0]) == [programs["podman"], "kill", "--signal=HUP", "ascend-engine"]
    assert shlex.split(directive(unit, "ExecStop")[0]) == [programs["podman"], "stop", "--time=90", "ascend-engine"]
    assert directive(unit, "ExecStopPost") == ['-"%s" "rm" "--force" "ascend-engine"' % programs["podman"]]
    assert directive(unit, "Restart") == ["always"] and directive(unit, "TimeoutStopSec") == ["120"]


def test_docker_gets_the_same_unit_with_its_own_program(units, programs):
    for host in ("node1", "node2"):
        assert units["docker"][host].replace(programs["docker"], "PROGRAM") == \
            units["podman"][host].replace(programs["podman"], "PROGRAM")


@pytest.mark.parametrize("engine", ["podman", "docker"])
def test_systemd_accepts_the_unit(units, tmp_path, engine):
    # No skip: a unit systemd rejects is a broken deployment (Debian: apt-get install systemd).
    assert shutil.which("systemd-analyze"), "systemd-analyze is not installed: cannot check the engine unit"
    path = tmp_path / "ascend-engine.service"
    path.write_text(units[engine]["node1"])
    proc = subprocess.run(["systemd-analyze", "verify", str(path)], capture_output=True, text=True, check=False)
    # Only the firewall unit this machine lacks may be reported.
    problems = [line for line in proc.stderr.splitlines() if "ascend-firewall.service" not in line]
    assert not problems, proc.stderr
