"""Unit tests of the hardware test doubles: a wrong double makes every scenario lie.

Each double runs as a program, as on a node, against a scratch root
($ASCEND_SIM_ROOT) whose state file the test writes. Where a capture exists
(tests/unit/plugins/module_utils/node/hardware_samples/, sources in its SOURCES.tsv)
the double's output is compared with it.
"""

import grp
import json
import os
import re
import shutil
import stat
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
DOUBLES = os.path.join(HERE, "doubles")
NNRT = os.path.join(HERE, "nnrt", "build-nnrt.sh")
SAMPLES = os.path.join(HERE, "..", "unit", "plugins", "module_utils", "node", "hardware_samples")


def sample(name):
    with open(os.path.join(SAMPLES, name)) as handle:
        return handle.read()


def untab(text):
    """The captures transcribed npu-smi's leading TAB as 8 spaces."""
    return "\n".join(("        " + line[1:]) if line.startswith("\t") else line for line in text.split("\n"))


@pytest.fixture(scope="session")
def lib(tmp_path_factory):
    """The doubles' library directory, with the libascendcl.so stand-in built as the image build does."""
    path = tmp_path_factory.mktemp("lib")
    for name in os.listdir(DOUBLES):
        source = os.path.join(DOUBLES, name)
        (shutil.copytree if os.path.isdir(source) else shutil.copy)(source, str(path / name))
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(path / "libascendcl.so"), str(path / "libascendcl.c")],
                   check=True)
    return path


@pytest.fixture
def node(tmp_path, lib):
    """A scratch node: write(state) then run(tool, *args)."""

    class Node:
        root = tmp_path / "root"
        env = dict(os.environ, ASCEND_SIM_ROOT=str(tmp_path / "root"), ASCEND_SIM_LIB=str(lib))

        def write(self, **state):
            state.setdefault("node_ip", "127.0.0.1")
            target = self.root / "etc/ascend-sim/node.json"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(json.dumps(state))
            self.run("ascend-sim", "apply", check=True)

        def run(self, tool, *args, check=False):
            proc = subprocess.run([sys.executable, str(lib / tool)] + list(args), env=self.env,
                                  capture_output=True, text=True, timeout=60, check=False)
            if check:
                assert proc.returncode == 0, proc.stderr
            return proc

        def devices(self):
            return sorted(int(p.name[7:]) for p in (self.root / "dev").glob("davinci[0-9]*"))

    return Node()


def shape(text):
    """A tool answer with its numbers blanked out, to compare a double's form with a capture's."""
    return re.sub(r"\d+", "N", text.strip())


def pipes(text):
    """Where each line of an npu-smi table has its column separators, up to the process table."""
    lines = text.split("\n")
    end = next(i for i, line in enumerate(lines) if "Process id" in line)
    return [[i for i, char in enumerate(line) if char in "|+"] for line in lines[:end]]


def first_cells(text):
    return [line.split("|")[1].split() for line in text.split("\n")
            if line.startswith("| ") and "Process" not in line and "npu-smi" not in line][:6]


# --- files and devices -----------------------------------------------------------------

def test_apply_creates_devices_versions_and_hccn_conf(node):
    node.write(npu_count=3, cann_version="8.0.RC2")
    assert node.devices() == [0, 1, 2]
    toolkit = node.root / "usr/local/Ascend/ascend-toolkit"
    info = list((toolkit / "latest").glob("*-linux/ascend_toolkit_install.info"))
    assert "version=8.0.RC2" in info[0].read_text().splitlines()
    assert (toolkit / "latest" / "lib64" / "libascendcl.so").exists()
    # The ascend-toolkit layout's set_env.sh is the capture's.
    script = (toolkit / "set_env.sh").read_text()
    assert sample("set_env.sh__ascend-toolkit-layout_cann-8.0.0__1.txt") in script
    conf = (node.root / "etc/hccn.conf").read_text()
    assert "address_2=10.102.0.1" in conf and "address_3" not in conf and "tls_enable_2=0" in conf
    node.write(npu_count=1, hccn_conf=False)
    assert node.devices() == [0]
    assert not (node.root / "etc/hccn.conf").exists()


def test_the_cann_layout_replaces_the_toolkit_layout(node):
    node.write(cann_layout="cann", cann_version="8.5.0")
    ascend = node.root / "usr/local/Ascend"
    assert not (ascend / "ascend-toolkit").exists() and os.readlink(str(ascend / "cann")) == "cann-8.5.0"
    info = list((ascend / "cann").glob("*-linux/ascend_toolkit_install.info"))[0].read_text()
    assert "version=8.5.0" in info and "path=/usr/local/Ascend/cann-8.5.0/" in info
    script = (ascend / "cann" / "set_env.sh").read_text()
    assert "export ASCEND_TOOLKIT_HOME=/usr/local/Ascend/cann-8.5.0\n" in script
    assert (ascend / "cann-8.5.0" / "lib64" / "libascendcl.so").exists()
    out = subprocess.run(["bash", "-c", '. "$1"; echo "$ASCEND_HOME_PATH"', "x", str(ascend / "cann/set_env.sh")],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "/usr/local/Ascend/cann-8.5.0"
    node.write(cann_layout="ascend-toolkit", cann_version="8.3.RC2")
    assert not (ascend / "cann").exists() and not (ascend / "cann-8.5.0").exists()


def test_no_cann_removes_the_doubles_trees_and_keeps_what_packages_installed(node):
    ascend = node.root / "usr/local/Ascend"
    node.write(cann_layout="ascend-toolkit", cann_version="8.0.RC1")
    node.write(cann_layout="none")
    assert not (ascend / "ascend-toolkit").exists()
    # A tree as the CANN packages install it (no marker): a later apply leaves it and its link.
    (ascend / "cann-8.5.0").mkdir()
    os.symlink("cann-8.5.0", str(ascend / "cann"))
    node.write(cann_layout="none", driver_version="23.0.7")
    assert os.readlink(str(ascend / "cann")) == "cann-8.5.0" and (ascend / "cann-8.5.0").is_dir()


def test_profiles_devices_missing_files_and_containers(node):
    node.write(profile="A3")
    assert node.devices() == list(range(16))
    node.write(profile="300I-Duo")
    assert node.devices() == list(range(8)) and not (node.root / "etc/hccn.conf").exists()
    # npu-smi and /dev disagree: chip 3 is listed but has no device file (preflight must name it).
    node.write(npu_count=4, missing_devices=[3])
    assert node.devices() == [0, 1, 2]
    listed = node.run("npu-smi", "info", "-m", check=True).stdout.split("\n")[1:]
    assert [line.split()[:3] for line in listed if "Ascend" in line][3] == ["3", "0", "3"]
    node.write(npu_count=4, physical_offset=4)
    assert node.devices() == [4, 5, 6, 7]


# --- npu-smi -----------------------------------------------------------------------

def test_npu_smi_chip_map_is_the_910b4_capture(node):
    node.write(soc_name="Ascend910B4")
    out = node.run("npu-smi", "info", "-m", check=True).stdout
    assert untab(out) == sample("npu-smi-info-m__910B4_800I-A2_25.0.rc1.1__1.txt")


def test_npu_smi_chip_map_of_a_300i_duo(node):
    node.write(profile="300I-Duo")
    out = node.run("npu-smi", "info", "-m", check=True).stdout
    # The capture's publisher trimmed each line and wrote the chip name as a placeholder.
    ours = [line.strip().replace("Ascend 310P3", "Ascend xxx") for line in out.strip().split("\n")]
    assert ours == [line.strip() for line in sample("npu-smi-info-m__310P_atlas300I-duo__1.txt").strip().split("\n")]


def test_npu_smi_chip_map_of_an_a3_node_has_phy_ids(node):
    node.write(profile="A3")
    rows = [line.split() for line in node.run("npu-smi", "info", "-m", check=True).stdout.split("\n")]
    assert rows[0] == ["NPU", "ID", "Chip", "ID", "Chip", "Logic", "ID", "Chip", "Phy-ID", "Chip", "Name"]
    assert rows[1:4] == [["0", "0", "0", "0", "Ascend910"], ["0", "1", "1", "1", "Ascend910"],
                         ["0", "2", "-", "-", "Mcu"]]


def test_npu_smi_listing_is_the_910b4_capture(node):
    node.write()
    assert untab(node.run("npu-smi", "info", "-l", check=True).stdout) == \
        sample("npu-smi-info-l__910B4_800I-A2_25.0.rc1.1__1.txt")


@pytest.mark.parametrize("state,capture", [
    ({"soc_name": "Ascend910B4"}, "npu-smi-info__910B4_800I-A2_25.0.rc1.1__1.txt"),
    ({"profile": "A3"}, "npu-smi-info__A3_910C-Ascend910_16die_25.2.0__1.txt"),
    ({"profile": "300I-Duo", "cards": [1536, 1792, 2048, 2304]}, "npu-smi-info__310P3_300I-Duo-x4_24.1.0.1__1.txt"),
])
def test_npu_smi_table_has_the_capture_layout(node, state, capture):
    node.write(**state)
    ours, theirs = node.run("npu-smi", "info", check=True).stdout, sample(capture)
    assert pipes(ours) == pipes(theirs)
    assert first_cells(ours) == first_cells(theirs)


def test_npu_smi_phyid_remap_in_the_source_format(node):
    node.write(profile="A3")
    assert node.run("npu-smi", "info", "-t", "phyid-remap", "-p", "3", check=True).stdout == (
        "\tChip Physical ID              :3\n\tChip Logic ID                 :3\n"
        "\tNPU ID                        :1\n\tChip ID                       :1\n")
    node.write(npu_count=4, physical_offset=4)
    assert "Chip Logic ID                 :0" in node.run("npu-smi", "info", "-t", "phyid-remap", "-p", "4").stdout
    unknown = node.run("npu-smi", "info", "-t", "phyid-remap", "-p", "0")
    assert unknown.returncode == 209 and unknown.stdout == 'Failed to query "phyid-remap" result.\n'
    node.write(phyid_remap=False)
    unsupported = node.run("npu-smi", "info", "-t", "phyid-remap", "-p", "0")
    assert unsupported.returncode == 0 and unsupported.stdout == "This device does not support querying phyid-remap.\n"


def test_npu_smi_can_be_told_to_fail(node):
    node.write(npu_count=2, fail={"npu-smi": "dcmi module initialize failed. ret is -8005"})
    proc = node.run("npu-smi", "info", "-m")
    assert proc.returncode == 1 and proc.stdout == "" and "ret is -8005" in proc.stderr
    assert node.run("npu-smi", "list").returncode == 1


# --- hccn_tool ---------------------------------------------------------------------

def test_hccn_tool_healthy_formats(node, tmp_path):
    node.write(npu_count=2, node_ip="172.16.5.7")

    def query(name, device=1):
        return node.run("hccn_tool", "-i", str(device), "-" + name, "-g", check=True).stdout

    assert query("link") == sample("hccn_tool-link-g__910B3_800I-A2__1.txt")
    assert query("net_health") == sample("hccn_tool-net_health-g__910B3_800I-A2__1.txt")
    assert query("ip") == "ipaddr:10.101.5.7\nnetmask:255.255.0.0\n"
    assert shape(query("ip")) == shape(sample("hccn_tool-ip-g__910B1_23.0.rc2__1.txt"))
    assert query("netdetect") == "netdetect addr: 10.101.0.1\n"
    assert shape(query("netdetect")) == shape(sample("hccn_tool-netdetect-g__reconstructed_A2-A3_new-addr-form__1.txt"))
    assert query("gateway", 0) == "default gateway:10.100.0.1, Iface:eth0\n"
    assert shape(query("gateway", 0)) == shape(sample("hccn_tool-gateway-g__910B3_800I-A2__1.txt").split("\n")[0] + "\n")
    assert "\tIfname: 400GE1/1/2:1\n" in query("lldp")
    assert query("tls", 0).split("\n")[0] == sample("hccn_tool-tls-g__910B3_800I-A2_grep-switch__1.txt").split("\n")[0]
    node.write(npu_count=2, node_ip="172.16.5.7", driver_form="old")
    assert query("netdetect") == "netdetect address: 10.101.0.1\n"
    assert shape(query("netdetect")) == shape(sample("hccn_tool-netdetect-g__910B3_800I-A2_old-address-form__1.txt"))


def test_hccn_tool_per_device_faults(node):
    faults = {"1": {"link": "DOWN", "net_health": "Init", "lldp": False, "netdetect": False, "gateway": False,
                    "ip": False}}
    node.write(npu_count=3, tls={"2": 1}, faults=faults)

    def run(device, name):
        return node.run("hccn_tool", "-i", str(device), "-" + name, "-g")

    assert run(1, "link").stdout == "link status: DOWN\n" and run(0, "link").stdout == "link status: UP\n"
    assert run(1, "net_health").stdout == sample("hccn_tool-net_health-g__doc-example_init__1.txt")
    assert "Ifname" not in run(1, "lldp").stdout and "Ifname" in run(2, "lldp").stdout
    assert run(1, "netdetect").stdout == "netdetect addr: 0.0.0.0\n"
    gateway, ip = run(1, "gateway"), run(1, "ip")
    assert (gateway.returncode, gateway.stdout) == (1, "")
    assert gateway.stderr == sample("hccn_tool-gateway-g__reconstructed_A2-A3_no-gateway-preset__1.txt")
    assert ip.returncode == 1 and ip.stderr == sample("hccn_tool-ip-g__reconstructed_A2-A3_no-ip-preset__1.txt")
    assert "tls switch[1]" in run(2, "tls").stdout and "tls switch[0]" in run(0, "tls").stdout


def test_hccn_tool_a3_vnic_and_hccs_ping(node):
    node.write(profile="A3", node_ip="127.0.0.1")
    vnic = node.run("hccn_tool", "-i", "3", "-vnic", "-g", check=True).stdout
    assert vnic == "vnic link status: UP\nvnic ipaddr: 192.1.3.198\nvnic netmask: 255.255.255.0\n"
    assert re.sub(r"ipaddr: \S+", "", vnic) == re.sub(r"ipaddr: \S+", "", sample("hccn_tool-vnic-g__reconstructed_A3__1.txt"))
    # 192.1.x.y is a die of the node 127.0.0.1 (this machine's loopback): a real round trip.
    ping = node.run("hccn_tool", "-i", "0", "-hccs_ping", "-g", "address", "192.1.3.198", check=True).stdout
    assert ping == sample("hccn_tool-hccs_ping-g__reconstructed_A3_success__1.txt").replace("192.0.3.198", "192.1.3.198")
    # No die of this node has that vNIC address (die 7 of card 1): nothing answers.
    absent = node.run("hccn_tool", "-i", "0", "-hccs_ping", "-g", "address", "192.1.9.198")
    assert "3 packets transmitted, 0 received, 100.00% packets loss" in absent.stdout
    node.write(profile="A3", node_ip="127.0.0.1", faults={"0": {"ping_loss": True}})
    lost = node.run("hccn_tool", "-i", "0", "-hccs_ping", "-g", "address", "192.1.3.198")
    assert lost.returncode == 0 and "3 packets transmitted, 0 received, 100.00% packets loss" in lost.stdout
    node.write(profile="A2")
    assert node.run("hccn_tool", "-i", "0", "-vnic", "-g").returncode == 1


def test_hccn_tool_takes_physical_ids_and_refuses_bad_commands(node):
    # A device the node does not have: no capture exists; the driver source's answer (see the double).
    invalid = (4, "", "Get invalid device id.\n")

    def answer(*args):
        proc = node.run("hccn_tool", *args)
        return proc.returncode, proc.stdout, proc.stderr

    node.write(npu_count=2, physical_offset=4)
    assert answer("-i", "0", "-link", "-g") == invalid
    assert answer("-i", "4", "-link", "-g") == (0, "link status: UP\n", "")
    # npu-smi lists chip 3 but its /dev/davinci3 is absent: the tool cannot reach it.
    node.write(npu_count=4, missing_devices=[3])
    assert answer("-i", "3", "-link", "-g") == invalid
    assert answer("-i", "3", "-ping", "-g", "address", "10.100.0.1") == invalid
    assert node.run("hccn_tool", "-i", "0", "-link").returncode == 1
    assert node.run("hccn_tool", "-i", "0", "-speed", "-g").returncode == 1
    assert node.run("hccn_tool", "-i", "0", "-ping", "-g").returncode == 1
    node.write(npu_count=2, fail={"hccn_tool": "hccn_tool: driver not loaded"})
    assert "driver not loaded" in node.run("hccn_tool", "-i", "0", "-link", "-g").stderr
    node.write(profile="300I-Duo")
    assert node.run("hccn_tool", "-i", "0", "-link", "-g").returncode == 1


def machine_ipv4():
    """This machine's first non-loopback IPv4 address, as a node's cluster IP."""
    out = subprocess.run(["ip", "-4", "-o", "addr", "show", "scope", "global"], capture_output=True, text=True,
                         check=True).stdout
    found = re.findall(r"\binet (\d+\.\d+\.\d+\.\d+)/", out)
    assert found, "this machine has no non-loopback IPv4 address to ping:\n" + out
    return found[0]


def test_hccn_ping_answers_only_at_npu_ips_of_the_cluster(node):
    ip = machine_ipv4()
    c, d = ip.split(".")[2:]
    node.write(npu_count=2, node_ip=ip, faults={"1": {"ip": False}})

    def ping(address, device=0):
        return node.run("hccn_tool", "-i", str(device), "-ping", "-g", "address", address)

    # Device 0 of node a.b.c.d answers at 10.100.c.d: a real round trip to this machine's non-loopback address.
    ok = ping("10.100.%s.%s" % (c, d))
    assert ok.returncode == 0 and ok.stdout.endswith("3 packets transmitted, 3 received, 0.00% packet loss\n"), \
        ok.stdout + ok.stderr
    # The form of hccn_tool-ping-g__910B3_800I-A2__1.txt, line by line.
    captured = sample("hccn_tool-ping-g__910B3_800I-A2__1.txt").split("\n")[:5]
    shape = [re.sub(r"[0-9.]+", "N", line) for line in captured]
    assert [re.sub(r"[0-9.]+", "N", line) for line in ok.stdout.split("\n")[:5]] == shape
    # No NPU answers there: a device this node lacks, its device without an IP, an address of no NPU form.
    for address in ("10.105.%s.%s" % (c, d), "10.101.%s.%s" % (c, d), "192.0.2.1"):
        lost = ping(address)
        assert (lost.returncode, lost.stdout.split("\n")[-2]) == (1, "3 packets transmitted, 0 received, 100.00% packet loss"), \
            address
    node.write(npu_count=2, node_ip=ip, faults={"0": {"ping_loss": True}})
    lossy = ping("10.100.%s.%s" % (c, d))
    assert lossy.returncode == 1 and "3 received" not in lossy.stdout
    # A node that does not answer (TEST-NET-2, documentation only, is routed nowhere): its NPU IP is lost too.
    node.write(npu_count=2, node_ip="198.51.100.7")
    assert ping("10.100.100.8").returncode == 1


# --- replaying a support bundle -------------------------------------------------------

def test_a_bundle_replays_its_node(node):
    node.write(npu_count=8)
    bundle = {"format": 1, "host": "n1", "devices": ["davinci4", "davinci5", "davinci_manager"],
              "files": {"/etc/hccn.conf": "address_4=1.2.3.4\n", "/usr/local/Ascend/driver/version.info": None},
              "commands": [
                  {"argv": ["npu-smi", "info", "-m"], "rc": 0, "stdout": "recorded -m\n", "stderr": ""},
                  {"argv": ["/usr/local/Ascend/driver/tools/hccn_tool", "-i", "4", "-link", "-g"], "rc": 3,
                   "stdout": "", "stderr": "recorded failure\n"}]}
    path = node.root / "etc/ascend-sim/bundle.json"
    path.write_text(json.dumps(bundle))
    node.run("ascend-sim", "apply", check=True)
    assert node.devices() == [4, 5]
    assert (node.root / "etc/hccn.conf").read_text() == "address_4=1.2.3.4\n"
    assert node.run("npu-smi", "info", "-m").stdout == "recorded -m\n"
    link = node.run("hccn_tool", "-i", "4", "-link", "-g")
    assert (link.returncode, link.stderr) == (3, "recorded failure\n")
    missing = node.run("npu-smi", "info")
    assert missing.returncode == 127 and "was not recorded in the bundle of n1" in missing.stderr


def test_a_format_2_bundle_replays_links_device_files_engine_and_pings(node):
    """What format 2 adds (plugins/module_utils/node/bundle.py): CANN's latest link with the files under it, the device
    files' mode and group, the engine's versions, and the pings to the bundle's peers as recorded."""
    node.write(npu_count=8)
    group = grp.getgrgid(os.getgid()).gr_name
    latest = "/usr/local/Ascend/ascend-toolkit/latest"
    ping = ["/usr/local/Ascend/driver/tools/hccn_tool", "-i", "4", "-ping", "-g", "address", "10.0.0.2"]
    bundle = {"format": 2, "host": "n1", "devices": ["davinci4", "davinci5", "davinci_manager"],
              "files": {latest + "/version.cfg": "version=8.0.RC1\n"},
              "links": {latest: "8.0.RC1"},
              "device_files": {"/dev/davinci4": {"type": "file", "mode": "0660", "owner": str(os.getuid()),
                                                 "group": group, "rdev": None},
                               "/dev/davinci5": {"type": "file", "mode": "0640", "owner": str(os.getuid()),
                                                 "group": str(os.getgid()), "rdev": None}},
              "engine": {"program": "/opt/engine/bin/vllm", "interpreter": "/opt/engine/bin/python3",
                         "versions": {"vllm": "0.11.0", "vllm-ascend": "0.11.0rc1", "vllm-mindspore": None}},
              "pings": [{"device": 4, "address": "10.0.0.2", "node": "n2", "kind": "ping"}],
              "commands": [{"argv": ping, "rc": 1, "stdout": "3 packets transmitted, 0 received\n", "stderr": ""}]}
    (node.root / "etc/ascend-sim/bundle.json").write_text(json.dumps(bundle))
    node.run("ascend-sim", "apply", check=True)
    toolkit = node.root / "usr/local/Ascend/ascend-toolkit"
    assert os.readlink(toolkit / "latest") == "8.0.RC1"
    assert (toolkit / "8.0.RC1" / "version.cfg").read_text() == "version=8.0.RC1\n"
    assert stat.S_IMODE((node.root / "dev/davinci5").stat().st_mode) == 0o640
    assert stat.S_IMODE((node.root / "dev/davinci4").stat().st_mode) == 0o660
    metadata = list((node.root / "opt/engine/lib").glob("python3*/site-packages/vllm_ascend-0.11.0rc1.dist-info"))
    assert metadata, "the engine's recorded version is installed"
    answer = node.run("hccn_tool", *ping[1:])
    assert (answer.returncode, answer.stdout) == (1, "3 packets transmitted, 0 received\n")


# --- pyACL -------------------------------------------------------------------------

@pytest.fixture
def pyacl(node, tmp_path):
    """Build the nnrt package, extract it, install pyACL: its site-packages dir."""
    arch = os.uname().machine
    out = subprocess.run([NNRT, "8.0.RC1", arch, str(tmp_path / "pkg")], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert os.path.basename(out) == "Ascend-cann-nnrt_8.0.RC1_linux-%s.run" % arch
    subprocess.run([out, "--noexec", "--extract=%s" % (tmp_path / "nnrt"), "--quiet"], check=True)
    installer = tmp_path / ("nnrt/run_package/Ascend-pyACL_8.0.RC1_linux-%s.run" % arch)
    assert os.access(installer, os.X_OK)
    subprocess.run([str(installer), "--full", "--install-path=%s" % (tmp_path / "acl"), "--quiet"], check=True,
                   capture_output=True)
    return tmp_path / "acl/CANN-8.0.RC1/python/site-packages"


def test_nnrt_refuses_a_plain_install(tmp_path):
    out = subprocess.run([NNRT, "8.0.RC1", os.uname().machine, str(tmp_path)], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert subprocess.run([out, "--quiet"], capture_output=True, check=False).returncode != 0


def acl(node, pyacl, **env):
    code = "import acl; print(acl.rt.get_device_count(), acl.get_soc_name())"
    return subprocess.run([sys.executable, "-c", code], env=dict(node.env, PYTHONPATH=str(pyacl), **env),
                          capture_output=True, text=True, check=False)


def test_pyacl_needs_the_cann_library_path(node, pyacl):
    node.write(npu_count=4, soc_name="Ascend910B3")
    bare = acl(node, pyacl)
    assert bare.returncode != 0
    # The message of hardware_samples/python-import-error__aclruntime-libascendcl_no-set_env__1.txt.
    assert bare.stderr.strip().splitlines()[-1] == \
        sample("python-import-error__aclruntime-libascendcl_no-set_env__1.txt").strip().splitlines()[-1]
    libs = str(node.root / "usr/local/Ascend/ascend-toolkit/latest/lib64")
    assert acl(node, pyacl, LD_LIBRARY_PATH=libs).stdout.strip() == "(4, 0) Ascend910B3"


def test_pyacl_counts_logic_ids(node, pyacl):
    libs = {"LD_LIBRARY_PATH": str(node.root / "usr/local/Ascend/ascend-toolkit/latest/lib64")}
    node.write(profile="A3")
    assert acl(node, pyacl, **libs).stdout.strip() == "(16, 0) Ascend910_9391"
    assert acl(node, pyacl, ASCEND_RT_VISIBLE_DEVICES="1,3", **libs).stdout.startswith("(2, 0)")
    # A container given /dev/davinci4..7: its logic IDs are 0..3; physical IDs are no device to the runtime.
    node.write(npu_count=4, physical_offset=4)
    assert acl(node, pyacl, ASCEND_RT_VISIBLE_DEVICES="0,1,2,3", **libs).stdout.startswith("(4, 0)")
    assert acl(node, pyacl, ASCEND_RT_VISIBLE_DEVICES="4,5", **libs).stdout.startswith("(0, 1)")
