"""check.yml changes nothing and can skip one node's NPU network check (with a warning); pyACL and
the CANN packages from the controller and from a URL with a checksum."""

import hashlib
import json
import re
import subprocess
import tempfile

from serve_checks import playbook, recap
from test_failures import HOSTS, hardware, node

testinfra_hosts = ["podman://prep-head"]
PACKAGES = "/opt/ascend-packages"


def run(name, host_vars, *extra):
    """A playbook of the collection on the scenario, with host variables added by a second inventory."""
    with tempfile.NamedTemporaryFile("w", suffix=".yml") as inventory:
        json.dump({"ascend_cluster": {"hosts": host_vars}}, inventory)
        inventory.flush()
        return playbook(name, "-i", inventory.name, *extra)


def test_a_limited_run_of_hostnames_and_node_env_changes_nothing():
    # --limit: the /etc/hosts block still names every node; --tags node_env: pyACL's PYTHONPATH,
    # which the pyacl role works out, stays in the environment.
    before = node("prep-worker2").check_output("cat /etc/hosts /etc/ascend-inference/node.env")
    code, out = playbook("prepare.yml", "--tags", "hostnames,node_env", "--limit", "prep-worker2", "--diff")
    assert code == 0, out[-3000:]
    assert recap(out) == {"prep-worker2": 0}, out[-3000:]
    assert node("prep-worker2").check_output("cat /etc/hosts /etc/ascend-inference/node.env") == before
    assert "/usr/local/Ascend/pyACL/CANN-8.5.0/python/site-packages" in before
    assert sum(name in before for name in HOSTS) == len(HOSTS)


def test_check_changes_nothing_and_skips_one_nodes_npu_network_with_a_warning():
    # A link down that only the skip can let through.
    restore = hardware("prep-worker1", faults={"1": {"link": "DOWN"}})
    try:
        for name in HOSTS:
            node(name).check_output("touch /tmp/check-mark")
        code, out = run("check.yml", {"prep-worker1": {"ascend_skip_npu_network_check": True}})
        newer = {name: node(name).check_output("find /etc /usr/local /opt /var/cache -xdev -newer /tmp/check-mark -type f")
                 for name in HOSTS}
    finally:
        restore()
    assert code == 0, out[-3000:]
    assert out.count("ascend_skip_npu_network_check is true: the NPU links") == 1, out[-3000:]
    assert "NPU pings of prep-worker1 are NOT verified" in " ".join(out.split())
    # The other nodes were checked.
    queried = out.split("TASK [ascend.inference.npu_network : Query each NPU with hccn_tool]")[1].split("TASK [")[0]
    assert "prep-head: hccn_tool asked about NPU" in queried and "prep-worker2: hccn_tool asked about NPU" in queried
    assert "prep-worker1: hccn_tool" not in queried, queried
    assert recap(out) == {name: 0 for name in HOSTS}, out[-2000:]
    assert newer == {name: "" for name in HOSTS}


def test_pyacl_and_cann_from_the_controller_and_from_a_url_with_a_checksum(tmp_path):
    head = node("prep-head")
    arch = head.check_output("uname -m")
    package, toolkit = "Ascend-cann-nnrt_8.5.0_linux-%s.run" % arch, "Ascend-cann-toolkit_8.5.0_linux-%s.run" % arch
    local, local_toolkit = tmp_path / package, tmp_path / toolkit
    digests = {}
    for name, path in ((package, local), (toolkit, local_toolkit)):
        subprocess.run(["podman", "cp", "prep-head:%s/%s" % (PACKAGES, name), str(path)], check=True)
        digests[name] = hashlib.sha256(path.read_bytes()).hexdigest()
    head_ip = re.search(r"inet (\d+\.\d+\.\d+\.\d+)/", head.check_output("ip -4 -o addr show scope global")).group(1)
    head.check_output("systemd-run --unit=packages python3 -m http.server 8088 -d %s" % PACKAGES)
    # A fresh install path and work directories, so that both sources really install (pyACL) or are fetched
    # (CANN 8.5.0 is installed already: nothing more happens).
    where = {"pyacl_package_remote": "", "pyacl_install_path": "/tmp/pyacl-src", "pyacl_work_dir": "/tmp/pyacl-work",
             "cann_work_dir": "/tmp/cann-work"}
    try:
        code, out = run("prepare.yml", {
            "prep-head": dict(where, pyacl_package=str(local), cann_packages=[{"src": str(local_toolkit)}]),
            "prep-worker1": dict(where, pyacl_package_url="http://%s:8088/%s" % (head_ip, package),
                                 pyacl_package_checksum="sha256:" + digests[package],
                                 cann_packages=[{"url": "http://%s:8088/%s" % (head_ip, toolkit),
                                                 "checksum": "sha256:" + digests[toolkit]}]),
        }, "--tags", "cann,pyacl", "--limit", "prep-head,prep-worker1")
    finally:
        head.run("systemctl stop packages.service")
    assert code == 0, out[-3000:]
    # pyACL's phase says where each node's package came from.
    assert "prep-head: pyACL 8.5.0 installed (%s sent from the controller) under /tmp/pyacl-src" % package in out, \
        out[-3000:]
    assert "prep-worker1: pyACL 8.5.0 installed (%s downloaded) under /tmp/pyacl-src" % package in out, out[-3000:]
    copied = out.split("TASK [ascend.inference.cann : Copy the packages from the controller]")[1].split("TASK [")[0]
    fetched = out.split("TASK [ascend.inference.cann : Download the packages]")[1].split("TASK [")[0]
    assert "changed: [prep-head]" in copied and "changed: [prep-worker1]" in fetched, out[-3000:]
    for name in ("prep-head", "prep-worker1"):
        assert node(name).file("/tmp/pyacl-src/CANN-8.5.0/python/site-packages/acl").exists, name
        assert node(name).file("/tmp/cann-work/" + toolkit).mode == 0o600, name
    installs = out.split("TASK [ascend.inference.cann : Install the packages]")[1].split("TASK [")[0]
    assert "changed:" not in installs, installs
