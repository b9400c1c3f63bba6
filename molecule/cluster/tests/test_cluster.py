"""The simulated Ascend cluster: real hosts whose doubles answer like hardware."""

import json
import os
import re

import pytest
import testinfra.utils.ansible_runner

HOSTS = testinfra.utils.ansible_runner.AnsibleRunner(os.environ["MOLECULE_INVENTORY_FILE"]).get_hosts("ascend_cluster")
# podman exec directly: an order of magnitude faster than going through ansible.
testinfra_hosts = ["podman://" + name for name in HOSTS]

# What molecule.yml gives each node.
NPUS = {"sim-head": 4, "sim-worker1": 4, "sim-worker2": 2}
CANN = {"sim-head": "8.0.RC1", "sim-worker1": "8.0.RC1", "sim-worker2": "8.0.RC2"}
PROBE = "/opt/ray-probe"


def name_of(host):
    return host.backend.name


def other(name):
    return testinfra.get_host("podman://" + name)


def address_of(host):
    out = host.check_output("ip -4 -o addr show scope global")
    return re.search(r"inet (\d+\.\d+\.\d+\.\d+)/", out).group(1)


def npu_address(host, device):
    out = host.check_output("hccn_tool -i %d -ip -g" % device)
    return re.search(r"ipaddr:(\S+)", out).group(1)


def test_own_hostname_and_systemd(host):
    assert host.check_output("hostname") == name_of(host)
    assert host.check_output("cat /proc/1/comm") == "systemd"
    assert host.service("ascend-sim").is_running


def test_addresses_are_distinct_and_reachable(host):
    addresses = {h: address_of(other(h)) for h in HOSTS}
    assert len(set(addresses.values())) == len(HOSTS)
    for name, address in addresses.items():
        if name != name_of(host):
            assert host.run("ping -c 1 -W 2 %s" % address).rc == 0, name


def test_devices_match_the_state(host):
    expected = NPUS[name_of(host)]
    devices = host.check_output("ls /dev").split()
    assert sorted(d for d in devices if re.fullmatch(r"davinci\d+", d)) == sorted(
        "davinci%d" % i for i in range(expected))
    assert {"davinci_manager", "devmm_svm", "hisi_hdc"} <= set(devices)


def test_npu_smi(host):
    expected = NPUS[name_of(host)]
    listing = host.check_output("npu-smi info -l")
    assert re.search(r"Total Count\s*:\s*%d$" % expected, listing, re.M)
    assert len(re.findall(r"NPU ID\s*:", listing)) == expected
    table = host.check_output("npu-smi info")
    assert len(re.findall(r"^\| \d+\s+910B1", table, re.M)) == expected


def test_hccn_tool_answers_healthy(host):
    for device in range(NPUS[name_of(host)]):
        assert host.check_output("hccn_tool -i %d -link -g" % device) == "link status: UP"
        assert host.check_output("hccn_tool -i %d -net_health -g" % device) == "net health status: Success"
        assert "Ifname:" in host.check_output("hccn_tool -i %d -lldp -g" % device)
        assert host.check_output("hccn_tool -i %d -netdetect -g" % device).startswith("netdetect addr: 10.")
        assert host.check_output("hccn_tool -i %d -gateway -g" % device).startswith("default gateway:10.")
    assert host.run("hccn_tool -i %d -link -g" % NPUS[name_of(host)]).rc != 0
    assert "address_0=" in host.file("/etc/hccn.conf").content_string


def test_npu_ping_crosses_the_container_network(host):
    for name in HOSTS:
        if name == name_of(host):
            continue
        target = npu_address(other(name), 0)
        out = host.check_output("hccn_tool -i 0 -ping -g address %s" % target)
        assert out.endswith("3 packets transmitted, 3 received, 0.00% packet loss"), (name, out)
    # An address no node owns is lost, and the tool says so.
    lost = host.run("hccn_tool -i 0 -ping -g address 10.100.250.250")
    assert lost.rc != 0 and "100.00% packet loss" in lost.stdout


def test_faults_are_injected_through_the_state_file(host):
    state = json.loads(host.file("/etc/ascend-sim/node.json").content_string)
    faulty = dict(state, faults={"1": {"link": "DOWN", "net_health": "Init", "ping_loss": True}},
                  fail={"npu-smi": "dcmi module initialize failed. ret is -8005"})
    write = "cat > /etc/ascend-sim/node.json <<'EOF'\n%s\nEOF"
    host.check_output(write % json.dumps(faulty))
    try:
        assert host.check_output("hccn_tool -i 1 -link -g") == "link status: DOWN"
        assert host.check_output("hccn_tool -i 1 -net_health -g") == "net health status: Init"
        assert host.check_output("hccn_tool -i 0 -link -g") == "link status: UP"
        broken = host.run("npu-smi info -l")
        assert broken.rc == 1 and "ret is -8005" in broken.stderr
        own = npu_address(host, 0)
        assert host.run("hccn_tool -i 1 -ping -g address %s" % own).rc != 0
    finally:
        host.check_output(write % json.dumps(state))
    assert host.run("npu-smi info -l").rc == 0


def test_cann_version_is_per_node(host):
    info = host.check_output("cat /usr/local/Ascend/ascend-toolkit/latest/*-linux/ascend_toolkit_install.info")
    assert "version=%s" % CANN[name_of(host)] in info.splitlines()
    env = host.check_output("bash -c '. /usr/local/Ascend/ascend-toolkit/set_env.sh && echo $ASCEND_TOOLKIT_HOME'")
    assert env == "/usr/local/Ascend/ascend-toolkit/latest"


def test_nnrt_package_extracts_and_installs_pyacl(host):
    run = host.check_output("ls /opt/ascend-packages/Ascend-cann-nnrt_8.0.RC1_linux-*.run")
    host.check_output("rm -rf /tmp/nnrt /tmp/pyacl && %s --noexec --extract=/tmp/nnrt --quiet" % run)
    installer = host.check_output("ls /tmp/nnrt/run_package/Ascend-pyACL_*_linux-*.run")
    host.check_output("%s --full --install-path=/tmp/pyacl --quiet" % installer)
    site = host.check_output("ls -d /tmp/pyacl/CANN-*/python/site-packages")
    cann = ". /usr/local/Ascend/ascend-toolkit/set_env.sh; "
    out = host.check_output("bash -c '%s PYTHONPATH=%s python3 -c \"import acl; print(acl.rt.get_device_count()[0], "
                            "acl.get_soc_name())\"'" % (cann, site))
    assert out == "%d Ascend910B1" % NPUS[name_of(host)]
    narrowed = host.check_output("bash -c '%s ASCEND_RT_VISIBLE_DEVICES=0,1 PYTHONPATH=%s python3 -c "
                                 "\"import acl; print(acl.rt.get_device_count()[0])\"'" % (cann, site))
    assert narrowed == "2"
    assert host.run("python3 -c 'import acl'").rc != 0, "pyACL must not be importable before it is installed"
    # Installed but without the CANN environment: libascendcl.so is not found, as on a real node.
    assert "libascendcl.so" in host.run("PYTHONPATH=%s python3 -c 'import acl'" % site).stderr


@pytest.fixture
def ray_probe(host):
    """Ray from the image's wheelhouse, offline, in a throwaway venv (on sim-head the serve double's engine
    environment, which `ascend-sim apply` created without Ray)."""
    if not host.file(PROBE + "/bin/ray").exists:
        host.check_output("python3 -m venv %s && %s/bin/pip install -q --no-index --find-links /opt/wheelhouse ray"
                          % (PROBE, PROBE))
    return PROBE + "/bin/python"


def test_ray_detects_the_simulated_npus(host, ray_probe):
    detect = ("%s -c 'from ray._private.accelerators.npu import NPUAcceleratorManager as m; "
              "print(m.get_current_node_num_accelerators())'" % ray_probe)
    assert host.check_output(detect) == str(NPUS[name_of(host)])
