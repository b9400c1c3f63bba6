"""CANN 8.5 installed from the packages on nodes that had none; the driver check and the version pin
stop every node before any node installs; --check installs nothing.

The packages are the doubles of tests/sim/cann/build-cann.sh; the 9.0.1 toolkit lists only V100R001C18
(constructed; the 24.1.rc2.2 driver capture's release) so that the 23.0.7 capture's driver (V100R001C15)
is refused."""

import json
import os

import testinfra.utils.ansible_runner

from serve_checks import node, playbook, recap

HOSTS = testinfra.utils.ansible_runner.AnsibleRunner(os.environ["MOLECULE_INVENTORY_FILE"]).get_hosts("all")
testinfra_hosts = ["podman://" + name for name in HOSTS]
ROOT = "/usr/local/Ascend"
STATE = "/etc/ascend-sim/node.json"
ARCH = os.uname().machine


def toolkit_901():
    return json.dumps({"cann_packages": [{"remote": "/opt/ascend-packages/Ascend-cann-toolkit_9.0.1_linux-%s.run" % ARCH}]})


def in_use(name):
    return node(name).check_output("readlink %s/cann" % ROOT)


def test_cann_85_from_the_packages_in_its_layout(host):
    assert host.check_output("readlink %s/cann" % ROOT) == "cann-8.5.0"
    info = host.file("%s/cann-8.5.0/%s-linux/ascend_toolkit_install.info" % (ROOT, ARCH)).content_string
    assert "version=8.5.0\n" in info and "path=%s/cann-8.5.0/%s-linux\n" % (ROOT, ARCH) in info
    assert host.file(ROOT + "/cann-8.5.0/opp_kernel").is_directory  # the kernels package
    assert "Ascend-cann-atb : 8.5.0" in host.file(ROOT + "/nnal/atb/latest/version.info").content_string
    assert not host.file(ROOT + "/ascend-toolkit").exists
    # --install-for-all: the service account may load the runtime.
    assert host.file("%s/cann-8.5.0/%s-linux/lib64/libascendcl.so" % (ROOT, ARCH)).mode & 0o004


def test_a_driver_the_toolkit_does_not_list_stops_every_node_before_any_installs():
    worker = node("prep-worker2")
    saved = worker.file(STATE).content_string
    older = dict(json.loads(saved), driver_version="23.0.7")
    worker.check_output("cat > %s <<'EOF'\n%s\nEOF\nascend-sim apply" % (STATE, json.dumps(older)))
    try:
        code, out = playbook("cann.yml", "-e", toolkit_901(), "-e", "cann_allow_version_change=true")
    finally:
        worker.check_output("cat > %s <<'EOF'\n%s\nEOF\nascend-sim apply" % (STATE, saved))
    assert code != 0
    assert ("prep-worker2: CANN 9.0.1 is not installed: the NPU driver 23.0.7 (release V100R001C15) is not among "
            "the releases CANN 9.0.1 supports: [V100R001C18] (ascend_toolkit_install.info in "
            "Ascend-cann-toolkit_9.0.1_linux-%s.run)" % ARCH) in out, out[-3000:]
    # The other nodes passed the check, and still nothing was installed anywhere.
    for name in HOSTS:
        assert not node(name).file(ROOT + "/cann-9.0.1").exists, name
        assert in_use(name) == "cann-8.5.0"
    assert "prep-head: CANN" not in out


def test_another_version_needs_a_request_and_check_mode_installs_nothing():
    code, out = playbook("cann.yml", "-e", toolkit_901())
    assert code != 0
    assert ("prep-head: CANN 9.0.1 is not installed: CANN 8.5.0 is installed and in use, the packages are 9.0.1; "
            "set cann_allow_version_change: true to change the version") in out, out[-3000:]
    code, out = playbook("cann.yml", "--check", "-e", toolkit_901(), "-e", "cann_allow_version_change=true")
    assert code == 0, out[-3000:]
    # The install would run on each node (one changed task), and did not.
    assert recap(out) == {name: 1 for name in HOSTS}, out[-3000:]
    for name in HOSTS:
        assert not node(name).file(ROOT + "/cann-9.0.1").exists and in_use(name) == "cann-8.5.0"
