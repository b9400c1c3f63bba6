"""Prepared nodes: unique names that resolve, the plan's environment from the CANN 8.5 layout,
pyACL that Ray detects through, logic and physical NPU IDs kept apart."""

import os
import re

import testinfra
import testinfra.utils.ansible_runner

HOSTS = testinfra.utils.ansible_runner.AnsibleRunner(os.environ["MOLECULE_INVENTORY_FILE"]).get_hosts("all")
testinfra_hosts = ["podman://" + name for name in HOSTS]

# Logic IDs (ASCEND_RT_VISIBLE_DEVICES) and the /dev/davinciN files (physical IDs) of each node.
DEVICES = {"prep-head": "0,1,2,3", "prep-worker1": "0,1,2", "prep-worker2": "0,1"}
DEVICE_FILES = {"prep-head": [0, 1, 2, 3], "prep-worker1": [0, 1, 2, 3], "prep-worker2": [6, 7]}
SITE = "/usr/local/Ascend/pyACL/CANN-8.5.0/python/site-packages"
CANN_HOME = "/usr/local/Ascend/cann-8.5.0"
ENV_FILE = "/etc/ascend-inference/node.env"
PROBE = "/opt/ray-probe"


def name_of(host):
    return host.backend.name


def address_of(host):
    return re.search(r"inet (\d+\.\d+\.\d+\.\d+)/", host.check_output("ip -4 -o addr show scope global")).group(1)


def node_env(host):
    """The environment file as the services read it (a shell reads it the same way)."""
    out = host.check_output("env -i bash -c 'set -a; . %s; env -0'" % ENV_FILE)
    return dict(entry.split("=", 1) for entry in out.split("\0") if "=" in entry)


def test_unique_persistent_host_name(host):
    assert host.check_output("hostname") == name_of(host)
    assert host.file("/etc/hostname").content_string.strip() == name_of(host)


def test_every_node_resolves_every_other_through_etc_hosts(host):
    # "-s files": /etc/hosts only; podman's network DNS would answer the container names without the role.
    # (podman writes a line for the container's own name, so only the others prove the block.)
    for name in HOSTS:
        if name != name_of(host):
            expected = address_of(testinfra.get_host("podman://" + name))
            assert host.check_output("getent -s files hosts %s" % name).split() == [expected, name]
    block = re.search(r"# BEGIN ascend.inference cluster nodes\n(.*?)# END ascend.inference cluster nodes",
                      host.file("/etc/hosts").content_string, re.S).group(1)
    assert sorted(line.split() for line in block.splitlines()) == \
        sorted([address_of(testinfra.get_host("podman://" + name)), name] for name in HOSTS)


def test_environment_file_is_the_plan(host):
    env_file = host.file(ENV_FILE)
    assert env_file.user == "root" and env_file.mode == 0o600
    env = node_env(host)
    assert env["ASCEND_RT_VISIBLE_DEVICES"] == DEVICES[name_of(host)]
    assert env["HCCL_IF_IP"] == address_of(host)
    for name in ("GLOO_SOCKET_IFNAME", "TP_SOCKET_IFNAME", "HCCL_SOCKET_IFNAME"):
        assert env[name] == "eth0", name
    assert env["RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES"] == "1"
    assert env["VLLM_LOGGING_LEVEL"] == "INFO"  # ascend_extra_env
    # What the cann layout's set_env.sh (/usr/local/Ascend/cann/set_env.sh) exports, for services
    # that cannot source it: there is no ascend-toolkit tree on these nodes.
    assert not host.file("/usr/local/Ascend/ascend-toolkit").exists
    assert env["ASCEND_TOOLKIT_HOME"] == CANN_HOME and env["ASCEND_HOME_PATH"] == CANN_HOME
    assert CANN_HOME + "/lib64" in env["LD_LIBRARY_PATH"].split(":")
    assert env["PYTHONPATH"].split(":")[0] == SITE
    assert CANN_HOME + "/python/site-packages" in env["PYTHONPATH"].split(":")


def test_device_files_are_physical_ids_and_the_runtime_gets_logic_ids(host):
    files = sorted(int(name[7:]) for name in host.check_output("ls /dev").split()
                   if name.startswith("davinci") and name[7:].isdigit())
    assert files == DEVICE_FILES[name_of(host)]
    assert node_env(host)["ASCEND_RT_VISIBLE_DEVICES"] == DEVICES[name_of(host)]


def test_profile_snippet_gives_shells_the_environment(host):
    out = host.check_output("bash -lc 'echo $ASCEND_RT_VISIBLE_DEVICES'")
    assert out == DEVICES[name_of(host)]


def test_pyacl_imports_with_the_node_environment_only(host):
    code = "import acl; print(acl.rt.get_device_count()[0])"
    out = host.check_output("env -i bash -c 'set -a; . %s; python3 -c \"%s\"'" % (ENV_FILE, code))
    assert out == str(len(DEVICES[name_of(host)].split(",")))
    # pyACL on PYTHONPATH alone is not enough: acl needs libascendcl.so from the CANN environment.
    bare = host.run("env -i PYTHONPATH=%s python3 -c '%s'" % (SITE, code))
    assert bare.rc != 0 and "libascendcl.so: cannot open shared object file" in bare.stderr


def test_ray_sees_the_devices_the_environment_allows(host):
    if not host.file(PROBE + "/bin/python").exists:
        host.check_output("python3 -m venv %s && %s/bin/pip install -q --no-index --find-links /opt/wheelhouse ray"
                          % (PROBE, PROBE))
    detect = ("env -i bash -c 'set -a; . %s; %s/bin/python -c \"from ray._private.accelerators.npu import "
              "NPUAcceleratorManager as m; print(m.get_current_node_num_accelerators(), "
              "m.get_current_node_accelerator_type())\"'" % (ENV_FILE, PROBE))
    count, soc = host.check_output(detect).split()
    assert int(count) == len(DEVICES[name_of(host)].split(","))
    assert soc == "Ascend910B1"  # from acl.get_soc_name(): pyACL is on the path
