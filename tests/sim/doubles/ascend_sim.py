"""Shared state of the simulated Ascend node (test double, never shipped).

The node's hardware is described by one JSON file the tests may change,
/etc/ascend-sim/node.json (every key optional):

    {
      "profile": "A2",                # A2 (Atlas 800I A2, 910B), A3 (8 cards x 2 dies), 300I-Duo (310P, 2 chips per card)
      "npu_count": 8,                 # chips (dies); the profile's default
      "cards": [1, 2, 4, 5],          # NPU IDs of the cards; the profile's default
      "physical_offset": 0,           # physical ID of logic ID 0: 4 is a container given /dev/davinci4..
      "missing_devices": [3],         # physical IDs whose /dev/davinciN is absent although npu-smi lists the chip
      "phyid_remap": true,            # npu-smi answers `info -t phyid-remap -p N`
      "driver_form": "new",           # hccn_tool prints `netdetect addr:` (new) or `netdetect address:` (old)
      "driver_version": "24.1.rc2.2",  # driver/version.info is the capture of that version where one exists
      "cann_version": "8.0.RC1",
      "cann_layout": "ascend-toolkit",  # or "cann": /usr/local/Ascend/cann-<version> (CANN 8.5 and later);
                                        # "none": none of the double's (the trees it wrote are removed,
                                        # what the CANN packages installed stays)
      "soc_name": "Ascend910B1",      # what pyACL reports; npu-smi's names follow from it
      "tls": {"3": 1},                # TLS switch per physical ID (default 0)
      "hccn_conf": false,             # no /etc/hccn.conf (default: written from the NPU IPs)
      "faults": {"3": {"link": "DOWN", "net_health": "Init", "ping_loss": true, "vnic": false,
                       "lldp": false, "netdetect": false, "gateway": false, "ip": false,
                       "health": "Critical"}},  # npu-smi's Health (OK, Warning, Alarm, Critical)
      "fail": {"npu-smi": "dcmi module initialize failed. ret is -8005",
               "hccn_tool": "..."},   # a tool that must fail outright
      "engine": {"name": "vllm-ascend", "version": "0.23.0", "vllm": "0.23.0",
                 "env": "/opt/ascend-inference/venv",  # the serve double "pip-installed" (default: none)
                 "requires": ["httpx"],  # what the engine brings beside it, pip-installed from /opt/wheelhouse
                 "provides": ["mooncake-transfer-engine-npu==0.3.13.post1"]},  # metadata only
      "device_nodes": true            # /dev/davinci* as character devices (1:3), for an engine container
    }

`ascend-sim apply` turns it into the files the real tools would find. The
engine is installed as pip would install it: a console script (`vllm` or
`vllm-mindspore`, running the serve double) in the environment's bin, and
package metadata for the engine's distribution and for the vLLM it names, so
that the double and the collection's preflight read the versions as on a real
node. The pairing is the test's to choose (a wrong one is how tests make it). When
/etc/ascend-sim/bundle.json (a support bundle written by playbooks/collect.yml)
is present, the node replays that bundle instead: its files and device files
are written as recorded, and npu-smi and hccn_tool answer every recorded
command exactly as it answered on the node it came from (the pings to the
bundle's peers included). Format 2 also carries the device files' owner, group
and mode, the symbolic links (CANN's latest), and the engine's versions, which
the replayed node gets.

Every path is taken under $ASCEND_SIM_ROOT (default "/") so that the unit tests can
run the doubles in a scratch directory.
"""

import glob
import grp
import json
import os
import platform
import pwd
import re
import shutil
import stat
import subprocess
import sys

PROFILES = {
    # Atlas 800I A2: one 910B chip per card, cards 0..N-1 (npu-smi-info*__910B4_800I-A2_25.0.rc1.1__1.txt).
    "A2": {"chips_per_card": 1, "npu_count": 8, "cards": None, "soc_name": "Ascend910B1"},
    # Atlas A3: two dies per card named "Ascend910", Phy-ID in the table (npu-smi-info__A3_910C-...__1.txt).
    "A3": {"chips_per_card": 2, "npu_count": 16, "cards": None, "soc_name": "Ascend910_9391", "card_name": "Ascend910"},
    # Atlas 300I Duo: two 310P3 chips per card, sparse NPU IDs (npu-smi-info-m__310P_atlas300I-duo__1.txt).
    "300I-Duo": {"chips_per_card": 2, "npu_count": 8, "cards": [1, 2, 4, 5], "soc_name": "Ascend310P3",
                 "npu_network": False},
}
DEFAULTS = {
    "profile": "A2",
    "physical_offset": 0,
    "missing_devices": [],
    "phyid_remap": True,
    "driver_form": "new",
    "cann_version": "8.0.RC1",
    "cann_layout": "ascend-toolkit",
    "driver_version": "24.1.rc2.2",
    "tls": {},
    "faults": {},
    "fail": {},
}
ARCH = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}.get(
    platform.machine().lower(), platform.machine())
HERE = os.path.dirname(os.path.abspath(__file__))
# The driver's running user and group (its installer's default; /etc/ascend_install.info says so).
DRIVER_USER = "HwHiAiUser"


def path(*parts):
    return os.path.join(os.environ.get("ASCEND_SIM_ROOT", "/"), *[p.lstrip("/") for p in parts])


STATE = "/etc/ascend-sim/node.json"
IN_CONTAINER = "ASCEND_SIM_IN_CONTAINER"
BUNDLE = "/etc/ascend-sim/bundle.json"
ASCEND = "/usr/local/Ascend"
# Marks a CANN tree this double wrote, which "cann_layout": "none" removes (a tree the CANN packages
# installed has none and stays).
SIM_TREE = ".ascend-sim-tree"


def load_state():
    state = dict(DEFAULTS)
    try:
        with open(path(STATE)) as handle:
            state.update(json.load(handle))
    except FileNotFoundError:
        pass
    profile = PROFILES[state["profile"]]
    for key in ("npu_count", "soc_name"):
        if state.get(key) is None:
            state[key] = profile[key]
    return state


def load_bundle():
    """The support bundle this node replays, or None."""
    try:
        with open(path(BUNDLE)) as handle:
            return json.load(handle)
    except FileNotFoundError:
        return None


def replay(tool, argv):
    """Answer like the node the bundle came from did; exit when the command is not recorded."""
    bundle = load_bundle()
    for command in bundle["commands"]:
        if os.path.basename(command["argv"][0]) == tool and command["argv"][1:] == argv:
            sys.stdout.write(command["stdout"])
            sys.stderr.write(command["stderr"])
            sys.exit(command["rc"])
    sys.stderr.write("(replay) %s %s was not recorded in the bundle of %s\n"
                     % (tool, " ".join(argv), bundle.get("host")))
    sys.exit(127)


def fail_if_told(tool, state):
    """Exit like a broken tool when the state says so."""
    message = state.get("fail", {}).get(tool)
    if message:
        sys.stderr.write(message + "\n")
        sys.exit(1)


def card_name(state):
    """The Name npu-smi's table gives a card: 910B1, Ascend910, 310P3."""
    return PROFILES[state["profile"]].get("card_name") or state["soc_name"].replace("Ascend", "")


def chip_name(state):
    """The Chip Name of `npu-smi info -m`: "Ascend 910B1" as in the captures (A3: no capture, its card name)."""
    return PROFILES[state["profile"]].get("card_name") or "Ascend " + card_name(state)


def cards(state):
    """NPU IDs of the cards: the state's, the profile's (extended past its list), or 0..N-1."""
    per_card = PROFILES[state["profile"]]["chips_per_card"]
    count = -(-int(state["npu_count"]) // per_card)
    listed = list(state.get("cards") or PROFILES[state["profile"]]["cards"] or [])
    while len(listed) < count:
        listed.append(listed[-1] + 1 if listed else 0)
    return listed[:count]


def chips(state):
    """Every chip: card (NPU ID), chip (Chip ID), logic (Chip Logic ID), physical (/dev/davinciN)."""
    per_card = PROFILES[state["profile"]]["chips_per_card"]
    found = []
    for card in cards(state):
        for chip in range(per_card):
            if len(found) == int(state["npu_count"]):
                break
            logic = len(found)
            found.append({"card": card, "chip": chip, "logic": logic,
                          "physical": logic + int(state["physical_offset"])})
    return found


def chip_by_physical(state, physical):
    for chip in chips(state):
        if chip["physical"] == physical:
            return chip
    return None


def device_ids():
    """Ids of the /dev/davinciN files present (what the driver exposes)."""
    ids = []
    for name in glob.glob(path("/dev/davinci[0-9]*")):
        suffix = os.path.basename(name)[len("davinci"):]
        if suffix.isdigit():
            ids.append(int(suffix))
    return sorted(ids)


def in_container():
    """Whether this runs in an engine container: the engine image sets ASCEND_SIM_IN_CONTAINER, as the
    real runtime knows it is in a container that was given some of the host's /dev/davinciN."""
    return bool(os.environ.get(IN_CONTAINER))


def logic_to_physical():
    """{logic ID: physical ID} as the runtime numbers the chips: on a host from npu-smi's chips; in a
    container from 0 over the device files it was given, in the order of their physical IDs (CANN's
    aclrtGetLogicDevIdByPhyDevId: "in a non-container scenario the physical device ID equals the
    logical device ID"; in a container logic IDs are renumbered)."""
    if in_container():
        return dict(enumerate(device_ids()))
    present = set(device_ids())
    return dict((c["logic"], c["physical"]) for c in chips(load_state()) if c["physical"] in present)


def visible_logic_ids():
    """Logic IDs the runtime can open: chips whose device file exists, narrowed by ASCEND_RT_VISIBLE_DEVICES.

    Like the real runtime, a listed ID that is not a chip of this node is an error.
    """
    usable = sorted(logic_to_physical())
    visible = os.environ.get("ASCEND_RT_VISIBLE_DEVICES")
    if visible is None:
        return usable
    wanted = [int(v) for v in visible.split(",") if v.strip()]
    unknown = [v for v in wanted if v not in usable]
    if unknown:
        raise RuntimeError("ASCEND_RT_VISIBLE_DEVICES=%s names device(s) %s that this node does not have "
                           "(logic IDs %s)" % (visible, unknown, usable))
    return wanted


def open_devices(logic_ids):
    """Open the management device and the chips' device files for reading and writing, as the runtime
    does when it sets a device: a process without the files' group (HwHiAiUser, mode 0660) stops here."""
    physical = logic_to_physical()
    for name in ["/dev/davinci_manager"] + ["/dev/davinci%d" % physical[n] for n in logic_ids]:
        try:
            os.close(os.open(path(name), os.O_RDWR))
        except OSError as exc:
            raise RuntimeError("open %s failed: %s (uid %d, groups %s)"
                               % (name, exc.strerror, os.getuid(), sorted(os.getgroups())))


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
    """NPU (physical ID) i of the node a.b.c.d answers at 10.(100+i).c.d."""
    octets = ip.split(".")
    return "10.%d.%s.%s" % (100 + device, octets[2], octets[3])


def node_of_npu_ip(address, own_ip):
    """(node ip, device) that owns an NPU address, or None if none can."""
    octets = address.split(".")
    if len(octets) != 4 or octets[0] != "10" or not all(o.isdigit() for o in octets):
        return None
    device = int(octets[1]) - 100
    if not 0 <= device < 32:
        return None
    prefix = own_ip.split(".")[:2]
    return ".".join(prefix + octets[2:]), device


def vnic_ip(state, physical, ip):
    """A3 die vNIC: 192.<server>.<2 + die>.<199 - card> (hccn_tool-vnic-g__reconstructed_A3__1.txt)."""
    chip = chip_by_physical(state, physical)
    return "192.%s.%d.%d" % (ip.split(".")[3], 2 + chip["chip"], 199 - chip["card"])


def node_of_vnic_ip(address, own_ip):
    """The node IP that owns an A3 vNIC address (same /16 as this node), or None."""
    octets = address.split(".")
    if len(octets) != 4 or octets[0] != "192":
        return None
    return ".".join(own_ip.split(".")[:3] + [octets[1]])


def fault(state, device, key, default=None):
    return state.get("faults", {}).get(str(device), {}).get(key, default)


def write(name, text, mode=0o644):
    target = path(name)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    if os.path.islink(target):
        os.remove(target)
    with open(target, "w") as handle:
        handle.write(text)
    os.chmod(target, mode)


def link(name, target):
    full = path(name)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    if os.path.islink(full) or os.path.isfile(full):
        os.remove(full)
    elif os.path.isdir(full):
        shutil.rmtree(full)
    os.symlink(target, full)


def set_devices(physical_ids, device_nodes=False):
    """Exactly these /dev/davinciN files, plus the management devices: regular files, or character
    devices (1:3, what /dev/null is) where the node hands them to an engine container (podman's
    --device takes device nodes only)."""
    os.makedirs(path("/dev"), exist_ok=True)
    for device in device_ids():
        if device not in physical_ids:
            os.remove(path("/dev/davinci%d" % device))
    names = ["davinci%d" % device for device in physical_ids] + ["davinci_manager", "devmm_svm", "hisi_hdc"]
    owner = driver_user()
    for name in names:
        # HwHiAiUser:HwHiAiUser 0660, as the driver leaves them (vllm-project/vllm-ascend#9490).
        mode = 0o660 if owner else 0o644
        if device_nodes:
            target = path("/dev/" + name)
            if os.path.lexists(target) and not stat.S_ISCHR(os.lstat(target).st_mode):
                os.remove(target)
            if not os.path.exists(target):
                os.mknod(target, stat.S_IFCHR | mode, os.makedev(1, 3))
            os.chmod(target, mode)
        else:
            if os.path.exists(path("/dev/" + name)) and stat.S_ISCHR(os.lstat(path("/dev/" + name)).st_mode):
                os.remove(path("/dev/" + name))
            write("/dev/" + name, "", mode=mode)
        if owner:
            os.chown(path("/dev/" + name), *owner)


def driver_user():
    """(uid, gid) of the driver's running user where it exists and this runs as root, else None."""
    try:
        entry = pwd.getpwnam(DRIVER_USER)
    except KeyError:
        return None
    return (entry.pw_uid, entry.pw_gid) if os.geteuid() == 0 else None


def _install_info(version, home):
    # ascend_toolkit_install.info__cann-8.0.RC3__1.txt and ...__cann-8.5.0_new-cann-layout_aarch64__1.txt
    return ("package_name=Ascend-cann-toolkit\nversion=%s\ninnerversion=V100R001C%sB001\n"
            "compatible_version=[V100R001C15],[V100R001C18],[V100R001C19]\narch=%s\nos=linux\npath=%s/%s-linux\n"
            % (version, version.replace(".", "")[:4], ARCH, home, ARCH))


def driver_version_info(version):
    """driver/version.info: the capture of that driver version (hardware-samples/driver-version.info__*),
    else the 24.1.rc2.2 capture's lines with the version replaced."""
    capture = os.path.join(HERE, "drivers", "driver-version.info__%s__1.txt" % version)
    if os.path.exists(capture):
        with open(capture) as handle:
            return handle.read()
    return ("Version=%s\nascendhal_version=7.35.23\naicpu_version=1.0\ntdt_version=1.0\nlog_version=1.0\n"
            "prof_version=2.0\ndvppkernels_version=1.1\ntsfw_version=1.0\nInnerversion=V100R001C18SPC001B233\n"
            "compatible_version=[V100R001C30],[V100R001C13],[V100R001C15],[V100R001C17],[V100R001C18]\n"
            "compatible_version_fw=[7.0.0,7.2.99]\npackage_version=%s\n" % (version, version))


def set_env_script(layout, version):
    """The layout's set_env.sh: ascend-toolkit from its capture; cann reconstructed (no capture)."""
    with open(os.path.join(HERE, "set_env.%s.sh" % layout)) as handle:
        return handle.read().replace("@VERSION@", version)


def apply_cann(state):
    """Install the toolkit files of one layout and remove the other's ("none": touch nothing)."""
    version, layout = state["cann_version"], state["cann_layout"]
    for stale in glob.glob(path(ASCEND, "cann-*")) + [path(ASCEND, "ascend-toolkit"), path(ASCEND, "cann")]:
        if os.path.islink(stale):
            # "none" keeps a link into a tree the CANN packages installed.
            if layout != "none" or not os.path.exists(stale):
                os.remove(stale)
        elif os.path.isdir(stale) and (layout != "none" or os.path.exists(os.path.join(stale, SIM_TREE))):
            shutil.rmtree(stale)
    if layout == "none":
        return
    if layout == "cann":
        # /usr/local/Ascend/cann -> cann-<version>, with set_env.sh in the versioned tree.
        home = script_dir = "%s/cann-%s" % (ASCEND, version)
        link("%s/cann" % ASCEND, "cann-%s" % version)
    else:
        script_dir = "%s/ascend-toolkit" % ASCEND
        home = "%s/%s" % (script_dir, version)
        link("%s/latest" % script_dir, version)
    write("%s/%s" % (home if layout == "cann" else script_dir, SIM_TREE), "")
    write("%s/%s-linux/ascend_toolkit_install.info" % (home, ARCH), _install_info(version, home))
    write("%s/version.cfg" % home, "runtime_running_version=[%s]\n" % version)
    link("%s/lib64" % home, "%s-linux/lib64" % ARCH)
    library = os.path.join(HERE, "libascendcl.so")
    os.makedirs(path(home, ARCH + "-linux", "lib64"), exist_ok=True)
    if os.path.exists(library):
        shutil.copy(library, path(home, ARCH + "-linux", "lib64", "libascendcl.so"))
    write("%s/set_env.sh" % script_dir, set_env_script(layout, version))


ENGINE_PROGRAMS = {"vllm-ascend": "vllm", "vllm-mindspore": "vllm-mindspore"}
ENGINE_DISTRIBUTIONS = ("vllm", "vllm_ascend", "vllm_mindspore")


def install_requirements(python, requirements):
    """What the real engine brings with it that the collection runs beside it (vLLM's fastapi[standard]: vllm-ascend's
    prefill/decode proxy imports fastapi, httpx and uvicorn), from the image's wheelhouse, once."""
    names = [re.split(r"[<>=!\[ ]", requirement, 1)[0] for requirement in requirements]
    missing = subprocess.run([python, "-c", "import importlib.metadata as m, sys\n"
                              "sys.exit(any(not m.distribution(n) for n in sys.argv[1:]))"] + names,
                             capture_output=True, check=False).returncode
    if names and missing:
        subprocess.run([python, "-m", "pip", "install", "-q", "--no-index", "--find-links", path("/opt/wheelhouse")]
                       + list(requirements), check=True)


def apply_engine(engine):
    """Install the serve double into a Python environment with the engine's and vLLM's metadata."""
    env = path(engine.get("env", "/opt/ascend-inference/venv"))
    python = os.path.join(env, "bin", "python3")
    if not os.path.exists(python):
        subprocess.run(["python3", "-m", "venv", env], check=True)
    purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    for name in ENGINE_DISTRIBUTIONS:
        for stale in glob.glob(os.path.join(purelib, "%s-*.dist-info" % name)):
            shutil.rmtree(stale)
    # What else the engine's environment holds, by its metadata only (Mooncake's transfer engine: native code for
    # the NPUs that the serve double does not load).
    provided = [tuple(spec.split("==", 1)) for spec in engine.get("provides") or []]
    for name, version in [("vllm", engine["vllm"]), (engine["name"], engine["version"])] + provided:
        for stale in glob.glob(os.path.join(purelib, "%s-*.dist-info" % name.replace("-", "_"))):
            shutil.rmtree(stale)
        info = os.path.join(purelib, "%s-%s.dist-info" % (name.replace("-", "_"), version))
        os.makedirs(info)
        with open(os.path.join(info, "METADATA"), "w") as handle:
            handle.write("Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: ascend.inference test double\n"
                         % (name, version))
        with open(os.path.join(info, "INSTALLER"), "w") as handle:
            handle.write("ascend-sim\n")
    # vLLM's own requirement the double's /metrics uses (requirements/common.txt: prometheus_client), where the
    # wheelhouse carries it (the images' do).
    metrics = ["prometheus_client"] if glob.glob(path("/opt/wheelhouse/prometheus_client-*")) else []
    install_requirements(python, metrics + list(engine.get("requires") or []))
    for engine_name, program in ENGINE_PROGRAMS.items():
        script = os.path.join(env, "bin", program)
        if engine_name != engine["name"]:
            if os.path.lexists(script):
                os.remove(script)
            continue
        with open(script + ".tmp", "w") as handle:
            # A console script as pip writes it: the environment's Python in the first line.
            handle.write("#!%s\nimport os\nimport sys\n\nsys.path.insert(0, os.environ.get('ASCEND_SIM_LIB', %r))\n"
                         "import vllm_sim  # noqa: E402\n\nif __name__ == '__main__':\n"
                         "    sys.exit(vllm_sim.main(%r))\n" % (python, HERE, engine_name))
        os.chmod(script + ".tmp", 0o755)
        os.replace(script + ".tmp", script)


def apply_bundle(bundle):
    """Write the bundle's files, links and device files as they were on its node, and (format 2) install its engine
    with the versions its Python reported."""
    links = bundle.get("links") or {}
    files = bundle.get("files", {})
    for name, target in sorted(links.items()):
        resolved = os.path.normpath(os.path.join(os.path.dirname(name), target))
        if any(f.startswith(name + "/") for f in files):
            os.makedirs(path(resolved), exist_ok=True)  # a directory: the files under the link land in its target
        elif files.get(name) is not None:
            write(resolved, files[name])  # a file's link: its content is the target's
        link(name, target)
    for name, content in files.items():
        if content is not None and name not in links:
            write(name, content)
    recorded = bundle.get("device_files") or {}
    set_devices([int(n[len("davinci"):]) for n in bundle.get("devices", [])
                 if n.startswith("davinci") and n[len("davinci"):].isdigit()],
                any(entry["type"] == "char" for entry in recorded.values()))
    for name, entry in recorded.items():
        if os.path.exists(path(name)):
            os.chmod(path(name), int(entry["mode"], 8))
            os.chown(path(name), account_id(pwd.getpwnam, entry["owner"], "useradd"),
                     account_id(grp.getgrnam, entry["group"], "groupadd"))
    engine = bundle.get("engine") or {}
    versions = engine.get("versions") or {}
    name = next((n for n in ("vllm-ascend", "vllm-mindspore") if versions.get(n)), None)
    if name and versions.get("vllm"):
        apply_engine({"name": name, "version": versions[name], "vllm": versions["vllm"],
                      "env": os.path.dirname(os.path.dirname(engine["program"]))})


def account_id(lookup, name, create):
    """The id of the user or group NAME (a number as recorded when the node had no name for it), created when this
    node lacks it (useradd, groupadd)."""
    if name.isdigit():
        return int(name)
    try:
        return lookup(name)[2]
    except KeyError:
        subprocess.run([create, "--system", name], check=True)
        return lookup(name)[2]


def apply(state):
    """Make the node's files match the state: devices, versions, hccn.conf."""
    bundle = load_bundle()
    if bundle is not None:
        apply_bundle(bundle)
        return
    if state.get("engine"):
        apply_engine(state["engine"])
    missing = set(int(d) for d in state["missing_devices"])
    set_devices([c["physical"] for c in chips(state) if c["physical"] not in missing], state.get("device_nodes", False))
    apply_cann(state)
    # What the driver installs and the engine container mounts (the vllm-ascend document): only the
    # directories, no content is simulated.
    for directory in ("/usr/local/dcmi", "%s/driver/lib64" % ASCEND):
        os.makedirs(path(directory), exist_ok=True)
    write("%s/driver/version.info" % ASCEND, driver_version_info(state["driver_version"]))
    write("/etc/ascend_install.info", "UserName=HwHiAiUser\nUserGroup=HwHiAiUser\nDriver_Install_Type=full\n"
          "Driver_Install_Path_Param=/usr/local/Ascend\nDriver_Install_For_All=yes\n")
    ip = node_ip(state)
    lines = []
    if PROFILES[state["profile"]].get("npu_network", True):
        # hccn.conf__8npu_sanitized__1.txt: per device address, netmask, netdetect, gateway, ...
        for chip in chips(state):
            device = chip["physical"]
            gateway = "10.%d.0.1" % (100 + device)
            lines += ["address_%d=%s" % (device, npu_ip(device, ip)), "netmask_%d=255.255.0.0" % device,
                      "netdetect_%d=%s" % (device, gateway), "gateway_%d=%s" % (device, gateway),
                      "send_arp_status_%d=1" % device, "tls_enable_%d=%s" % (device, tls_switch(state, device))]
    if state.get("hccn_conf", True) and lines:
        write("/etc/hccn.conf", "\n".join(lines) + "\n")
    elif os.path.exists(path("/etc/hccn.conf")):
        os.remove(path("/etc/hccn.conf"))


def tls_switch(state, physical):
    return int(state.get("tls", {}).get(str(physical), 0))
