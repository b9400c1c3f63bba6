"""The built collection tarball installs and is usable by FQCN."""

import json
import os
import shutil
import subprocess

from conftest import BIN


def run(args, **kwargs):
    proc = subprocess.run(args, capture_output=True, text=True, timeout=300, check=False, **kwargs)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def test_build_install_and_use_by_fqcn(collections_root, tmp_path):
    # Away from the checkout, whose ansible.cfg points at the working tree.
    env = dict(os.environ, ANSIBLE_NOCOLOR="1")
    env.pop("ANSIBLE_CONFIG", None)
    source = collections_root / "ansible_collections" / "ascend" / "inference"
    # A user's inventory where the README puts it: hosts, addresses and vaulted keys stay out of the tarball.
    mine = source / "inventories" / "mine"
    (mine / "group_vars").mkdir(parents=True)
    (mine / "hosts").write_text("[ascend_head]\nnode1 ansible_host=10.0.0.11\n")
    (mine / "group_vars" / "ascend_cluster.yml").write_text("ascend_api_key: secret\n")
    try:
        run([os.path.join(BIN, "ansible-galaxy"), "collection", "build", str(source), "--output-path", str(tmp_path)],
            cwd=str(tmp_path), env=env)
    finally:
        shutil.rmtree(str(mine))
    tarball = tmp_path / "ascend-inference-0.1.0.tar.gz"
    assert tarball.is_file()
    # --offline: Galaxy is unreachable; the dependencies come with the "ansible" package.
    installed = tmp_path / "installed"
    run([os.path.join(BIN, "ansible-galaxy"), "collection", "install", str(tarball), "-p", str(installed),
         "--offline"], cwd=str(tmp_path), env=env)
    files = json.loads(run(["tar", "-xOzf", str(tarball), "FILES.json"]).stdout)["files"]
    names = {f["name"] for f in files}
    assert "plugins/modules/parallel_plan.py" in names and "roles/plan/tasks/main.yml" in names
    assert not [n for n in names if n.startswith(("tests/", "molecule/", ".config/", ".venv", ".cache",
                                                  "inventories/mine"))]
    assert "inventories/examples/09-qwen3-235b-tp8-pp2-ray/hosts" in names

    env["ANSIBLE_COLLECTIONS_PATH"] = str(installed)
    playbook = tmp_path / "use.yml"
    playbook.write_text(
        "- hosts: localhost\n  gather_facts: false\n  tasks:\n"
        "    - ascend.inference.parallel_plan:\n"
        "        engine: vllm-ascend\n        model: Qwen/Qwen3-235B-A22B\n"
        "        tensor_parallel_size: 8\n        pipeline_parallel_size: 2\n"
        "        nodes:\n"
        "          - {name: a, head: true, node_ip: 192.0.2.1, nic: eth0}\n"
        "          - {name: b, node_ip: 192.0.2.2, nic: eth0}\n"
        "      register: plan\n"
        "    - ansible.builtin.debug:\n        msg: \"HEAD={{ plan.nodes.a.serve_command }}\"\n")
    proc = run([os.path.join(BIN, "ansible-playbook"), str(playbook)], cwd=str(tmp_path), env=env)
    assert "HEAD=vllm serve Qwen/Qwen3-235B-A22B --tensor-parallel-size 8 --pipeline-parallel-size 2 " \
           "--distributed-executor-backend ray --port 8000" in proc.stdout

    # The collection's playbook by its FQCN, on one of the shipped example inventories.
    example = installed / "ansible_collections/ascend/inference/inventories/examples/03-qwen2.5-dp4-ray/hosts"
    run([os.path.join(BIN, "ansible-playbook"), "ascend.inference.plan", "-i", str(example),
         "-e", "ascend_plan_dir=%s" % (tmp_path / "plan")], cwd=str(tmp_path), env=env)
    node1 = json.loads((tmp_path / "plan" / "node1.json").read_text())
    assert node1["serve_argv"][:3] == ["vllm-mindspore", "serve", "/path/to/Qwen2.5/model"]
    # The playbooks users run, by FQCN from the installed copy (their imports resolve there too).
    for name in ("deploy", "status", "restart", "teardown"):
        proc = run([os.path.join(BIN, "ansible-playbook"), "ascend.inference." + name, "-i", str(example),
                    "--syntax-check"], cwd=str(tmp_path), env=env)
        assert str(installed / "ansible_collections/ascend/inference/playbooks" / (name + ".yml")) in proc.stdout
    # ...and that it was the installed copy that answered.
    doc = run([os.path.join(BIN, "ansible-doc"), "ascend.inference.parallel_plan"], cwd=str(tmp_path), env=env)
    assert str(installed / "ansible_collections" / "ascend" / "inference") in doc.stdout
