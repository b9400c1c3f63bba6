"""Unit tests of the hardware test doubles: a wrong double makes every scenario lie.

Each double runs as a program, as on a node, against a scratch root
($ASCEND_SIM_ROOT) whose state file the test writes.
"""

import json
import os
import re
import subprocess
import sys

import pytest

DOUBLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "doubles")
NNRT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "nnrt", "build-nnrt.sh")


@pytest.fixture
def node(tmp_path):
    """A scratch node: write(state) then run(tool, *args)."""

    class Node:
        root = tmp_path / "root"
        env = dict(os.environ, ASCEND_SIM_ROOT=str(tmp_path / "root"), ASCEND_SIM_LIB=DOUBLES)

        def write(self, **state):
            state.setdefault("node_ip", "127.0.0.1")
            target = self.root / "etc/ascend-sim/node.json"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(json.dumps(state))
            self.run("ascend-sim", "apply", check=True)

        def run(self, tool, *args, check=False):
            proc = subprocess.run([sys.executable, os.path.join(DOUBLES, tool)] + list(args), env=self.env,
                                  capture_output=True, text=True, timeout=60, check=False)
            if check:
                assert proc.returncode == 0, proc.stderr
            return proc

    return Node()


def test_apply_creates_devices_versions_and_hccn_conf(node):
    node.write(npu_count=3, cann_version="8.0.RC2")
    assert sorted(p.name for p in (node.root / "dev").glob("davinci[0-9]*")) == ["davinci0", "davinci1", "davinci2"]
    info = list((node.root / "usr/local/Ascend/ascend-toolkit/latest").glob("*-linux/ascend_toolkit_install.info"))
    assert "version=8.0.RC2" in info[0].read_text().splitlines()
    conf = (node.root / "etc/hccn.conf").read_text()
    assert "address_2=10.102.0.1" in conf and "address_3" not in conf
    node.write(npu_count=1, hccn_conf=False)
    assert [p.name for p in (node.root / "dev").glob("davinci[0-9]*")] == ["davinci0"]
    assert not (node.root / "etc/hccn.conf").exists()


def test_npu_smi_listing_and_table(node):
    node.write(npu_count=4)
    listing = node.run("npu-smi", "info", "-l", check=True).stdout
    assert re.search(r"Total Count\s+: 4$", listing, re.M)
    assert re.findall(r"NPU ID\s+: (\d+)", listing) == ["0", "1", "2", "3"]
    table = node.run("npu-smi", "info", check=True).stdout
    assert re.findall(r"^\| (\d+)\s+910B1\s+\| OK", table, re.M) == ["0", "1", "2", "3"]
    assert node.run("npu-smi", "list").returncode == 1


def test_npu_smi_can_be_told_to_fail(node):
    node.write(npu_count=2, fail={"npu-smi": "dcmi module initialize failed. ret is -8005"})
    proc = node.run("npu-smi", "info", "-l")
    assert proc.returncode == 1 and proc.stdout == "" and "ret is -8005" in proc.stderr


def test_hccn_tool_healthy_formats(node):
    node.write(npu_count=2, node_ip="172.16.5.7")

    def query(name):
        return node.run("hccn_tool", "-i", "1", "-" + name, "-g", check=True).stdout

    assert query("ip") == "ipaddr:10.101.5.7\nnetmask:255.255.0.0\n"
    assert query("link") == "link status: UP\n"
    assert query("net_health") == "net health status: Success\n"
    assert query("netdetect") == "netdetect address: 10.101.0.1\n"
    assert query("gateway") == "default gateway:10.101.0.1, Iface:eth1\n"
    assert "Ifname: 400GE1/1/2:1" in query("lldp")


def test_hccn_tool_per_device_faults(node):
    node.write(npu_count=3, faults={"1": {"link": "DOWN", "net_health": "Init", "lldp": False,
                                          "netdetect": False, "gateway": False}})

    def run(device, name):
        return node.run("hccn_tool", "-i", str(device), "-" + name, "-g", check=True).stdout

    assert run(1, "link") == "link status: DOWN\n" and run(0, "link") == "link status: UP\n"
    assert run(1, "net_health") == "net health status: Init\n"
    assert "Ifname" not in run(1, "lldp") and "Ifname" in run(2, "lldp")
    assert run(1, "netdetect") == "netdetect address: \n"
    assert run(1, "gateway") == "default gateway:, Iface:\n"


def test_hccn_tool_rejects_bad_devices_and_commands(node):
    node.write(npu_count=2)
    assert node.run("hccn_tool", "-i", "2", "-link", "-g").returncode == 1
    assert node.run("hccn_tool", "-i", "0", "-link").returncode == 1
    assert node.run("hccn_tool", "-i", "0", "-speed", "-g").returncode == 1
    assert node.run("hccn_tool", "-i", "0", "-ping", "-g").returncode == 1
    node.write(npu_count=2, fail={"hccn_tool": "hccn_tool: driver not loaded"})
    assert "driver not loaded" in node.run("hccn_tool", "-i", "0", "-link", "-g").stderr


def test_hccn_ping_reaches_the_node_that_owns_the_address(node):
    # 10.100.0.1 belongs to device 0 of the node 127.0.0.1 (this machine's loopback).
    node.write(npu_count=2, node_ip="127.0.0.1")
    ok = node.run("hccn_tool", "-i", "0", "-ping", "-g", "address", "10.100.0.1")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert ok.stdout.splitlines()[-1] == "3 packets transmitted, 3 received, 0.00% packet loss"
    nobody = node.run("hccn_tool", "-i", "0", "-ping", "-g", "address", "192.0.2.1")
    assert nobody.returncode == 1 and "100.00% packet loss" in nobody.stdout
    node.write(npu_count=2, node_ip="127.0.0.1", faults={"0": {"ping_loss": True}})
    lossy = node.run("hccn_tool", "-i", "0", "-ping", "-g", "address", "10.100.0.1")
    assert lossy.returncode == 1 and "3 received" not in lossy.stdout


@pytest.fixture
def pyacl(node, tmp_path):
    """Build the nnrt package, extract it, install pyACL: its site-packages dir."""
    out = subprocess.run([NNRT, "8.0.RC1", "x86_64", str(tmp_path / "pkg")], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert os.path.basename(out) == "Ascend-cann-nnrt_8.0.RC1_linux-x86_64.run"
    subprocess.run([out, "--noexec", "--extract=%s" % (tmp_path / "nnrt"), "--quiet"], check=True)
    installer = tmp_path / "nnrt/run_package/Ascend-pyACL_8.0.RC1_linux-x86_64.run"
    assert os.access(installer, os.X_OK)
    subprocess.run([str(installer), "--full", "--install-path=%s" % (tmp_path / "acl"), "--quiet"], check=True,
                   capture_output=True)
    return tmp_path / "acl/CANN-8.0.RC1/python/site-packages"


def test_nnrt_refuses_a_plain_install(tmp_path):
    out = subprocess.run([NNRT, "8.0.RC1", "x86_64", str(tmp_path)], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert subprocess.run([out, "--quiet"], capture_output=True, check=False).returncode != 0


def test_pyacl_answers_from_the_simulated_devices(node, pyacl):
    node.write(npu_count=4, soc_name="Ascend910B3")
    code = "import acl; print(acl.rt.get_device_count(), acl.get_soc_name())"
    env = dict(node.env, PYTHONPATH=str(pyacl))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "(4, 0) Ascend910B3"
    env["ASCEND_RT_VISIBLE_DEVICES"] = "1,3,7"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.startswith("(2, 0)")
