"""Deploy benchmark: the collection against the seed documents done by hand.

For each cluster size N (--nodes, default 2,4,8; 1 to 32 nodes, e.g. 2,4,8,16 for
all the issue's targets) it starts N simulated nodes (podman containers, the image
from bench/build-image.sh, reached over SSH) and measures, REPS times each:
  baseline  a plain shell script doing the seeds' steps over SSH
            (environment, Ray head, workers in parallel, serve, /health);
  deploy    playbooks/deploy.yml on fresh nodes of the same image;
  no-op     deploy.yml again, which must report 0 changed;
  with --mitogen, also deploy_mitogen and noop_mitogen: the same two runs on
            fresh nodes with Mitogen's strategy (mitogen_linear) from
            .cache/bench-mitogen, which bench/run.sh --mitogen installs.
Each run of deploy.yml also records the changed tasks and the tasks per node
(ok + skipped in its PLAY RECAP, the mean over the hosts); every command its wall
and CPU seconds on this machine. Then playbooks/plan.yml on a generated 256-node
inventory (no connection). Writes results.md (the tables and the issue's targets),
results.svg, results.json and every log to --out.

Run it with bench/run.sh, which installs what it needs first:
  bench/run.sh [--nodes 2,4,8] [--reps 3] [--plan-nodes 256] [--out DIR] [--profile] [--mitogen]
"""

import argparse
import concurrent.futures
import datetime
import glob
import json
import os
import resource
import shlex
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NETWORK = "ascend-bench"
SUBNET = "10.89.251.0/24"
NPUS_PER_NODE = 2
NIC = "eth0"  # podman names a container's only interface eth0
MODEL = "/models/bench-model"
MODEL_CONFIG = {"num_attention_heads": 16, "num_key_value_heads": 8, "num_hidden_layers": 32}
CANN_PACKAGE = "/opt/ascend-packages/Ascend-cann-nnrt_8.0.RC1_linux-%s.run" % os.uname().machine

# Seed scenario 9's shape scaled to N nodes: vllm-ascend, Ray, TP = NPUs per
# node, PP = nodes, serve on the head only.
GROUP_VARS = {
    "ascend_engine": "vllm-ascend",
    "ascend_model": MODEL,
    "ascend_served_model_name": "bench",
    "ascend_launcher": "ray",
    "ascend_tensor_parallel_size": NPUS_PER_NODE,
    "ascend_npus_per_node": NPUS_PER_NODE,
    "pyacl_package_remote": CANN_PACKAGE,
    # In containers /etc/hostname is a bind mount that hostnamectl cannot replace.
    "hostnames_strategy": "file",
    "serve_ready_timeout": 600,
    "ansible_user": "root",
    "ansible_python_interpreter": "/usr/bin/python3",
}
# Each node's simulated hardware, with the serve double installed as vllm-ascend 0.23.0 (on vLLM 0.23.0).
SIM_STATE = {"npu_count": NPUS_PER_NODE, "engine": {"name": "vllm-ascend", "version": "0.23.0", "vllm": "0.23.0"}}
# The containers are new on every repetition, with new host keys at the same addresses.
SSH_OPTIONS = ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR"]
# The largest cluster: the addresses node_ip gives in SUBNET (.11 to .254), and one pipeline
# stage per node at most as the model has layers.
MAX_NODES = min(254 - 11 + 1, MODEL_CONFIG["num_hidden_layers"])
# Where bench/run.sh --mitogen installs Mitogen (pip --target); not a requirement of the collection.
MITOGEN_DIR = os.path.join(REPO, ".cache", "bench-mitogen")


def log(message):
    print("[%s] %s" % (datetime.datetime.now().strftime("%H:%M:%S"), message), flush=True)


def run(argv, **kwargs):
    return subprocess.run(argv, check=True, text=True, **kwargs)


def node_names(count):
    return ["bench-head"] + ["bench-worker-%d" % i for i in range(1, count)]


def node_ip(index):
    if not 0 <= index < MAX_NODES:
        raise ValueError("node %d: the benchmark has addresses for %d nodes" % (index, MAX_NODES))
    return "10.89.251.%d" % (11 + index)


def inventory(count, key):
    names = node_names(count)
    group_vars = dict(GROUP_VARS, ascend_pipeline_parallel_size=count, ansible_ssh_private_key_file=key,
                      ansible_ssh_common_args=" ".join(SSH_OPTIONS))
    hosts = {name: {"ascend_node_ip": node_ip(i), "ansible_host": node_ip(i)} for i, name in enumerate(names)}
    return {"ascend_cluster": {
        "vars": group_vars,
        "children": {
            "ascend_head": {"hosts": {names[0]: hosts[names[0]]}},
            "ascend_workers": {"hosts": {name: hosts[name] for name in names[1:]}},
        }}}


def plan_inventory(count):
    """A large inventory for plan.yml: vllm-mindspore, mp data parallel over every NPU."""
    names = ["node-%03d" % i for i in range(count)]
    hosts = {name: {"ascend_node_ip": "10.1.%d.%d" % (i // 250, i % 250 + 1)}
             for i, name in enumerate(names)}
    return {"ascend_cluster": {
        "vars": {"ascend_engine": "vllm-mindspore", "ascend_model": "/models/DeepSeek-R1",
                 "ascend_launcher": "mp", "ascend_data_parallel_size": 8 * count,
                 "ascend_enable_expert_parallel": True, "ascend_nic": "enp1s0"},
        "children": {
            "ascend_head": {"hosts": {names[0]: hosts[names[0]]}},
            "ascend_workers": {"hosts": {name: hosts[name] for name in names[1:]}},
        }}}


def wait_for_ssh(address, timeout=120):
    """Until the node's sshd accepts connections (systemd has booted that far)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection((address, 22), timeout=2).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


class Nodes:
    """N fresh containers on the benchmark network, booted, with hardware and a model."""

    def __init__(self, image, count, public_key):
        self.image, self.names, self.public_key = image, node_names(count), public_key

    def __enter__(self):
        self.remove()
        with concurrent.futures.ThreadPoolExecutor(len(self.names)) as pool:
            list(pool.map(self._start, enumerate(self.names)))
        return self

    def __exit__(self, *exc):
        self.remove()

    def _start(self, item):
        index, name = item
        run(["podman", "create", "--name", name, "--hostname", name, "--network", NETWORK,
             "--ip", node_ip(index), "--systemd=always", "--cap-add", "SYS_ADMIN",
             "--cap-add", "NET_ADMIN", self.image, "/sbin/init"],
            stdout=subprocess.DEVNULL)
        run(["podman", "start", name], stdout=subprocess.DEVNULL)
        # Every node boots at once on the same CPUs: the more nodes, the longer it takes.
        wait_for_ssh(node_ip(index), timeout=max(120, 15 * len(self.names)))
        setup = ("printf '%%s\\n' %s > /etc/ascend-sim/node.json && ascend-sim apply"
                 " && mkdir -p %s && printf '%%s\\n' %s > %s/config.json"
                 " && install -d -m 700 /root/.ssh && printf '%%s\\n' %s > /root/.ssh/authorized_keys"
                 % (shlex.quote(json.dumps(SIM_STATE)), MODEL, shlex.quote(json.dumps(MODEL_CONFIG)), MODEL,
                    shlex.quote(self.public_key)))
        run(["podman", "exec", name, "sh", "-c", setup])

    def remove(self):
        subprocess.run(["podman", "rm", "--force", "--time", "0"] + self.names,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)


# The CPU time of every podman container on this machine, by cgroup: v1's cpuacct (nanoseconds), v2's cpu.stat.
NODE_CPU = (("/sys/fs/cgroup/cpuacct/libpod_parent/cpuacct.usage", 1e-9, None),
            ("/sys/fs/cgroup/libpod_parent/cpu.stat", 1e-6, "usage_usec"))


def nodes_cpu():
    """CPU seconds the nodes (every podman container here) used so far, or None where the cgroup cannot tell."""
    for path, unit, key in NODE_CPU:
        try:
            with open(path) as handle:
                text = handle.read()
        except OSError:
            continue
        if key is None:
            return int(text.strip()) * unit
        fields = dict(line.split() for line in text.splitlines() if line.strip())
        return int(fields[key]) * unit
    return None


class Run:
    """A finished command: wall seconds, CPU seconds of its process tree on this machine and of the nodes, output."""

    def __init__(self, seconds, cpu, output, node_cpu=None):
        self.seconds, self.cpu, self.output, self.node_cpu = seconds, cpu, output, node_cpu


def timed(argv, logfile, env=None, cwd=REPO):
    """Run argv with its output in logfile; fail with the log's end if it fails."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    nodes_before = nodes_cpu()
    start = time.monotonic()
    with open(logfile, "w") as out:
        result = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd, check=False)
    seconds = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    nodes_after = nodes_cpu()
    node_cpu = nodes_after - nodes_before if None not in (nodes_before, nodes_after) else None
    with open(logfile) as out:
        output = out.read()
    if result.returncode:
        raise RuntimeError("%s failed (exit %d), see %s:\n%s"
                           % (" ".join(argv[:2]), result.returncode, logfile, output[-3000:]))
    return Run(seconds, cpu, output, node_cpu)


def plan_for(count, workdir, key):
    """Every node's commands and environment, from plan.yml (as a person would prepare them)."""
    inv = os.path.join(workdir, "inventory-%d.json" % count)
    plan_dir = os.path.join(workdir, "plan-%d" % count)
    with open(inv, "w") as handle:
        json.dump(inventory(count, key), handle)
    timed([ansible("ansible-playbook"), "playbooks/plan.yml", "-i", inv, "-e", "ascend_plan_dir=" + plan_dir],
          os.path.join(workdir, "plan-%d.log" % count))
    plans = {}
    for name in node_names(count):
        with open(os.path.join(plan_dir, name + ".json")) as handle:
            plans[name] = json.load(handle)
    return plans


def ansible(program):
    return os.path.join(REPO, ".venv", "bin", program)


def ssh_key(workdir):
    key = os.path.join(workdir, "id_bench")
    if not os.path.exists(key):
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "ascend-bench", "-f", key])
    with open(key + ".pub") as handle:
        return key, handle.read().strip()


def control_dir():
    """A new directory for SSH master connections: old ones point at removed containers."""
    return tempfile.mkdtemp(prefix="bench-cp-", dir="/tmp")


def mitogen_version():
    """The version of Mitogen in MITOGEN_DIR (from pip's dist-info), or None when it is not there."""
    if not os.path.isdir(os.path.join(MITOGEN_DIR, "ansible_mitogen", "plugins", "strategy")):
        return None
    found = sorted(glob.glob(os.path.join(MITOGEN_DIR, "mitogen-*.dist-info")))
    return os.path.basename(found[-1])[len("mitogen-"):-len(".dist-info")] if found else "unknown"


def mitogen_env(env):
    """env with Mitogen's linear strategy for ansible-playbook (Mitogen from MITOGEN_DIR)."""
    return dict(env, PYTHONPATH=os.pathsep.join([MITOGEN_DIR] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])),
                ANSIBLE_STRATEGY_PLUGINS=os.path.join(MITOGEN_DIR, "ansible_mitogen", "plugins", "strategy"),
                ANSIBLE_STRATEGY="mitogen_linear",
                # Mitogen's own SSH client reads host_key_checking, not the inventory's ssh arguments
                # (UserKnownHostsFile=/dev/null); the nodes are new containers with new host keys.
                ANSIBLE_HOST_KEY_CHECKING="False")


def deploy_twice(count, rep, inv, image, public_key, env, workdir, results, suffix=""):
    """deploy.yml on fresh nodes, then again, which must change nothing: the kinds deploy and
    noop (with suffix: deploy_mitogen and noop_mitogen), logs KIND-N-REP.log."""
    titles = dict(report.DEPLOY_KINDS)
    with Nodes(image, count, public_key):
        env = dict(env, ANSIBLE_SSH_CONTROL_PATH_DIR=control_dir())
        for kind in ("deploy" + suffix, "noop" + suffix):
            logfile = os.path.join(workdir, "%s-%d-%d.log" % (kind, count, rep))
            log("N=%d rep %d: %s" % (count, rep, titles[kind]))
            done = timed([ansible("ansible-playbook"), "playbooks/deploy.yml", "-i", inv], logfile, env=env)
            changed = report.changed_tasks(done.output)
            results.add(count, kind, done.seconds, cpu=done.cpu, changed=changed,
                        tasks=report.tasks_per_node(done.output), node_cpu=done.node_cpu)
            if kind.startswith("noop") and changed:
                raise RuntimeError("the second deploy changed %s (see %s)" % (changed, os.path.basename(logfile)))


def measure(args, image, count, workdir, results):
    key, public_key = ssh_key(workdir)
    inv = os.path.join(workdir, "inventory-%d.json" % count)
    baseline = os.path.join(workdir, "baseline-%d.sh" % count)
    with open(baseline, "w") as handle:
        handle.write(report.baseline_script(plan_for(count, workdir, key), NIC, SSH_OPTIONS + ["-i", key]))
    env = dict(os.environ)
    if args.profile:
        env["ANSIBLE_CALLBACKS_ENABLED"] = "ansible.posix.profile_tasks"
    for rep in range(1, args.reps + 1):
        with Nodes(image, count, public_key):
            log("N=%d rep %d: baseline" % (count, rep))
            done = timed(["bash", baseline, control_dir()], os.path.join(workdir, "baseline-%d-%d.log" % (count, rep)))
            results.add(count, "baseline", done.seconds, cpu=done.cpu, node_cpu=done.node_cpu)
        deploy_twice(count, rep, inv, image, public_key, env, workdir, results)
        if args.mitogen:
            deploy_twice(count, rep, inv, image, public_key, mitogen_env(env), workdir, results, "_mitogen")
        results.save()


def measure_plan(args, workdir, results):
    inv = os.path.join(workdir, "inventory-plan-%d.json" % args.plan_nodes)
    with open(inv, "w") as handle:
        json.dump(plan_inventory(args.plan_nodes), handle)
    for rep in range(1, args.reps + 1):
        log("plan.yml on %d nodes, rep %d" % (args.plan_nodes, rep))
        plan_dir = tempfile.mkdtemp(dir=workdir, prefix="plan-large-")
        done = timed([ansible("ansible-playbook"), "playbooks/plan.yml", "-i", inv,
                      "-e", "ascend_plan_dir=" + plan_dir],
                     os.path.join(workdir, "plan-large-%d.log" % rep))
        # One JSON plan per node; plan.yml writes the layout picture (layout.svg) beside them.
        written = len([name for name in os.listdir(plan_dir) if name.endswith(".json")])
        if written != args.plan_nodes:
            raise RuntimeError("plan.yml wrote %d node plans, expected %d" % (written, args.plan_nodes))
        results.add(args.plan_nodes, "plan", done.seconds, cpu=done.cpu)
    results.save()


def commit():
    """The commit measured, with "-dirty" when the work tree differs from it (a figure from uncommitted code)."""
    return subprocess.run(["git", "-C", REPO, "describe", "--always", "--dirty", "--abbrev=7"],
                          capture_output=True, text=True, check=False).stdout.strip()


def arguments(doc):
    """The options every benchmark takes: the node image, the cluster sizes, the repetitions."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--image", required=True, help="node image (bench/build-image.sh prints it)")
    parser.add_argument("--nodes", default="2,4,8", help="cluster sizes, comma-separated (default 2,4,8)")
    parser.add_argument("--reps", type=int, default=3, help="repetitions of each measurement (default 3)")
    return parser


def main():
    parser = arguments(__doc__)
    parser.add_argument("--plan-nodes", type=int, default=256, help="size of the plan.yml inventory (0: skip)")
    parser.add_argument("--out", required=True, help="directory for results.md, results.json and the logs")
    parser.add_argument("--profile", action="store_true", help="add profile_tasks to the deploy logs")
    parser.add_argument("--mitogen", action="store_true",
                        help="also deploy and no-op deploy with Mitogen's strategy, from %s "
                             "(bench/run.sh --mitogen installs it there)" % os.path.relpath(MITOGEN_DIR, REPO))
    args = parser.parse_args()
    sizes = [int(size) for size in args.nodes.split(",") if size]
    if not sizes or not all(1 <= size <= MAX_NODES for size in sizes):
        parser.error("--nodes: sizes from 1 to %d nodes" % MAX_NODES)
    mitogen = mitogen_version() if args.mitogen else None
    if args.mitogen and not mitogen:
        parser.error("--mitogen: no Mitogen in %s; bench/run.sh --mitogen installs it" % MITOGEN_DIR)
    os.makedirs(args.out, exist_ok=True)
    results = report.Results(args.out, {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit(),
        "image": args.image, "reps": args.reps, "npus_per_node": NPUS_PER_NODE,
        "cpus": os.cpu_count(), "profile": args.profile, "mitogen": mitogen})
    if subprocess.run(["podman", "network", "exists", NETWORK], check=False).returncode:
        run(["podman", "network", "create", "--subnet", SUBNET, NETWORK], stdout=subprocess.DEVNULL)
    try:
        for count in sizes:
            measure(args, args.image, count, args.out, results)
        if args.plan_nodes:
            measure_plan(args, args.out, results)
    finally:
        subprocess.run(["podman", "network", "rm", "--force", NETWORK],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        results.save()
    log("results: %s" % os.path.join(args.out, "results.md"))
    print(open(os.path.join(args.out, "results.md")).read())


if __name__ == "__main__":
    main()
