"""Shared state of the simulated Ascend node (test double, never shipped).

The node's hardware is described by one JSON file the tests may change,
/etc/ascend-sim/node.json:

    {
      "npu_count": 8,                 # /dev/davinci0..N-1
      "cann_version": "8.0.RC1",      # CANN toolkit version files
      "soc_name": "Ascend910B1",      # what pyACL and npu-smi report
      "faults": {"3": {"link": "DOWN", "net_health": "Init", "ping_loss": true,
                       "lldp": false, "netdetect": false, "gateway": false}},
      "fail": {"npu-smi": "dcmi module initialize failed. ret is -8005",
               "hccn_tool": "..."}    # a tool that must fail outright
    }

`ascend-sim apply` turns it into the files the real tools would find. Every
path is taken under $ASCEND_SIM_ROOT (default "/") so that the unit tests can
run the doubles in a scratch directory.
"""

import glob
import json
import os
import platform
import subprocess
import sys

DEFAULTS = {
    "npu_count": 8,
    "cann_version": "8.0.RC1",
    "soc_name": "Ascend910B1",
    "driver_version": "23.0.6",
    "faults": {},
    "fail": {},
}
ARCH = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}.get(
    platform.machine().lower(), platform.machine())


def path(*parts):
    return os.path.join(os.environ.get("ASCEND_SIM_ROOT", "/"), *[p.lstrip("/") for p in parts])


STATE = "/etc/ascend-sim/node.json"
TOOLKIT = "/usr/local/Ascend/ascend-toolkit"


def load_state():
    state = dict(DEFAULTS)
    try:
        with open(path(STATE)) as handle:
            state.update(json.load(handle))
    except FileNotFoundError:
        pass
    return state


def fail_if_told(tool, state):
    """Exit like a broken tool when the state says so."""
    message = state.get("fail", {}).get(tool)
    if message:
        sys.stderr.write(message + "\n")
        sys.exit(1)


def device_ids():
    """Ids of the /dev/davinciN files present (what the driver exposes)."""
    ids = []
    for name in glob.glob(path("/dev/davinci[0-9]*")):
        suffix = os.path.basename(name)[len("davinci"):]
        if suffix.isdigit():
            ids.append(int(suffix))
    return sorted(ids)


def node_ip(state):
    """The node's first non-loopback IPv4 address."""
    if state.get("node_ip"):
        return state["node_ip"]
    output = subprocess.run(["ip", "-4", "-o", "addr", "show", "scope", "global"], capture_output=True,
                            text=True, check=False).stdout
    for line in output.splitlines():
        fields = line.split()
        if "inet" in fields:
            return fields[fields.index("inet") + 1].split("/")[0]
    return "127.0.0.1"


def npu_ip(device, ip):
    """NPU i of the node a.b.c.d answers at 10.(100+i).c.d."""
    octets = ip.split(".")
    return "10.%d.%s.%s" % (100 + device, octets[2], octets[3])


def node_of_npu_ip(address, own_ip):
    """(node ip, device) that owns an NPU address, or None if none can."""
    octets = address.split(".")
    if len(octets) != 4 or octets[0] != "10" or not all(o.isdigit() for o in octets):
        return None
    device = int(octets[1]) - 100
    if not 0 <= device < 16:
        return None
    prefix = own_ip.split(".")[:2]
    return ".".join(prefix + octets[2:]), device


def fault(state, device, key, default=None):
    return state.get("faults", {}).get(str(device), {}).get(key, default)


def write(name, text, mode=0o644):
    target = path(name)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with open(target, "w") as handle:
        handle.write(text)
    os.chmod(target, mode)


def apply(state):
    """Make the node's files match the state: devices, versions, hccn.conf."""
    count = int(state["npu_count"])
    os.makedirs(path("/dev"), exist_ok=True)
    for device in device_ids():
        if device >= count:
            os.remove(path("/dev/davinci%d" % device))
    for device in range(count):
        write("/dev/davinci%d" % device, "")
    for name in ("davinci_manager", "devmm_svm", "hisi_hdc"):
        write("/dev/" + name, "")
    version = state["cann_version"]
    info = "package_name=Ascend-cann-toolkit\nversion=%s\ninnerversion=V100R001C%s\narch=%s\n" % (
        version, version.replace(".", ""), ARCH)
    write("%s/latest/%s-linux/ascend_toolkit_install.info" % (TOOLKIT, ARCH), info)
    write("%s/latest/version.cfg" % TOOLKIT, "runtime_running_version=[%s]\n" % version)
    write("/usr/local/Ascend/driver/version.info", "Version=%s\n" % state["driver_version"])
    write("/etc/ascend_install.info", "Driver_Install_Path_Param=/usr/local/Ascend\n")
    ip = node_ip(state)
    lines = []
    for device in range(count):
        gateway = "10.%d.0.1" % (100 + device)
        lines += ["address_%d=%s" % (device, npu_ip(device, ip)), "netmask_%d=255.255.0.0" % device,
                  "netdetect_%d=%s" % (device, gateway), "gateway_%d=%s" % (device, gateway)]
    if state.get("hccn_conf", True):
        write("/etc/hccn.conf", "\n".join(lines) + "\n")
    elif os.path.exists(path("/etc/hccn.conf")):
        os.remove(path("/etc/hccn.conf"))
