"""The serve role's unit as rendered for the container runtime (vllm-ascend's recommended way).

No engine image can run here (no registry, no /dev/davinci*), so this renders the
role's own template with its defaults for seed scenario 9 and checks the command
line podman would receive. The container runtime is found by the role's own
lookup (tasks/program.yml), here a stand-in podman first on PATH; systemd's
parser checks the unit (tests/run.sh installs systemd, which holds systemd-analyze).
"""

import json
import os
import shlex
import shutil
import subprocess

import pytest

from conftest import BIN, REPO

EXAMPLE = os.path.join(REPO, "inventories", "examples", "09-qwen3-235b-tp8-pp2-ray", "hosts.yml")
PLAYBOOK = """
- hosts: ascend_cluster
  gather_facts: false
  vars_files: [{defaults}]
  vars:
    serve_node: "{{{{ ascend_plan.nodes[inventory_hostname] }}}}"
  tasks:
    - ansible.builtin.include_role:
        name: ascend.inference.plan
    # serve_program as the role finds it on a node, looked up on this machine.
    - ansible.builtin.include_role:
        name: ascend.inference.serve
        tasks_from: program
        apply:
          delegate_to: localhost
      when: serve_node.serve_argv is not none
    - ansible.builtin.copy:
        content: "{{{{ lookup('ansible.builtin.template', '{template}') }}}}"
        dest: "{out}/{{{{ inventory_hostname }}}}.service"
        mode: "0644"
      delegate_to: localhost
      when: serve_node.serve_argv is not none
"""


@pytest.fixture(scope="module")
def podman(tmp_path_factory):
    """podman as a node has it, an executable on PATH (this machine need not have podman)."""
    path = tmp_path_factory.mktemp("bin") / "podman"
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return str(path)


@pytest.fixture(scope="module")
def units(tmp_path_factory, collections_root, podman):
    out = tmp_path_factory.mktemp("units")
    role = os.path.join(REPO, "roles", "serve")
    playbook = out / "render.yml"
    playbook.write_text(PLAYBOOK.format(defaults=os.path.join(role, "defaults", "main.yml"),
                                        template=os.path.join(role, "templates", "ascend-serve.service.j2"),
                                        out=out))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(collections_root), ANSIBLE_NOCOLOR="1",
               PATH="%s:%s" % (os.path.dirname(podman), os.environ["PATH"]))
    env.pop("ANSIBLE_CONFIG", None)
    # Extra vars: they outrank the role defaults loaded as vars_files.
    settings = {"serve_container_runtime": "podman", "serve_container_image": "quay.io/ascend/vllm-ascend:v0.11.0",
                "ascend_api_key": "not-in-the-unit",
                "ascend_extra_env": {"HF_TOKEN": "hf-not-in-the-unit", "VLLM_LOGGING_LEVEL": "DEBUG"}}
    proc = subprocess.run([os.path.join(BIN, "ansible-playbook"), str(playbook), "-i", EXAMPLE,
                           "-e", json.dumps(settings)],
                          cwd=str(out), env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return {path.stem: path.read_text() for path in out.glob("*.service")}


def directive(unit, name):
    return [line.split("=", 1)[1] for line in unit.splitlines() if line.startswith(name + "=")]


def test_only_the_head_serves_under_ray(units):
    assert sorted(units) == ["node1"]


def test_podman_runs_the_planned_command_in_the_image(units, podman):
    argv = shlex.split(directive(units["node1"], "ExecStart")[0])
    image = argv.index("quay.io/ascend/vllm-ascend:v0.11.0")
    options, command = argv[:image], argv[image + 1:]
    assert options[:4] == [podman, "run", "--rm", "--name=ascend-serve"]
    assert "--net=host" in options and "--shm-size=1g" in options
    # The seed's devices and mounts (SEEDS.md section 6), for the node's 8 NPUs.
    assert [o for o in options if o.startswith("--device=/dev/davinci") and o[-1].isdigit()] == \
        ["--device=/dev/davinci%d" % i for i in range(8)]
    for device in ("davinci_manager", "devmm_svm", "hisi_hdc"):
        assert "--device=/dev/" + device in options
    for path in ("/usr/local/dcmi", "/usr/local/Ascend/driver/tools/hccn_tool", "/usr/local/bin/npu-smi",
                 "/usr/local/Ascend/driver/lib64/", "/usr/local/Ascend/driver/version.info",
                 "/etc/ascend_install.info"):
        assert "--volume=%s:%s:ro" % (path, path) in options
    assert "--volume=/root/.cache:/root/.cache" in options
    # Variables by name only: podman takes the values from the unit's EnvironmentFile=s; but the runtime in
    # the container numbers the devices it was given from 0, so ASCEND_RT_VISIBLE_DEVICES is set for it.
    passed = {o.split("=", 1)[1] for o in options if o.startswith("--env=")}
    assert {"HCCL_IF_IP", "GLOO_SOCKET_IFNAME", "TP_SOCKET_IFNAME", "VLLM_API_KEY", "HF_TOKEN",
            "VLLM_LOGGING_LEVEL"} <= passed
    assert "ASCEND_RT_VISIBLE_DEVICES=0,1,2,3,4,5,6,7" in passed
    assert all("=" not in name for name in passed if not name.startswith("ASCEND_RT_VISIBLE_DEVICES="))
    assert command[:10] == ["vllm", "serve", "Qwen/Qwen3-235B-A22B", "--tensor-parallel-size", "8",
                            "--pipeline-parallel-size", "2", "--distributed-executor-backend", "ray", "--port"]


def test_the_unit_keeps_secrets_out_and_follows_ray(units, podman):
    unit = units["node1"]
    assert "not-in-the-unit" not in unit
    assert directive(unit, "EnvironmentFile") == ["/etc/ascend-inference/node.env", "-/etc/ascend-inference/secrets.env",
                                                  "/etc/ascend-inference/ray.env", "/etc/ascend-inference/serve.env"]
    assert directive(unit, "PartOf") == ["ascend-ray.service"]
    assert directive(unit, "ExecStartPre") == ['-"%s" "rm" "--force" "ascend-serve"' % podman]
    assert shlex.split(directive(unit, "ExecStop")[0]) == [podman, "stop", "--time=30", "ascend-serve"]
    assert directive(unit, "Restart") == ["on-failure"]


def test_systemd_accepts_the_unit(units, tmp_path):
    # No skip: a unit systemd rejects is a broken deployment (Debian: apt-get install systemd).
    assert shutil.which("systemd-analyze"), "systemd-analyze is not installed: cannot check the serve unit"
    path = tmp_path / "ascend-serve.service"
    # verify resolves the executables (the stand-in podman exists) and EnvironmentFile=s: make those optional.
    path.write_text(units["node1"].replace("EnvironmentFile=/", "EnvironmentFile=-/"))
    proc = subprocess.run(["systemd-analyze", "verify", str(path)], capture_output=True, text=True, check=False)
    # Only the Ray unit this machine lacks may be reported.
    problems = [line for line in proc.stderr.splitlines() if "ascend-ray.service" not in line]
    assert not problems, proc.stderr
