"""Model copy benchmark: the model role's pipelined copy and fan-out against a plain copy from the controller.

For each cluster size N it starts N simulated nodes (the deploy benchmark's image, reached over SSH) and caps
every node's link and the controller's to the same rate with tc (a token bucket on each container's eth0 and on
the podman network's bridge, on which the controller sends), so that the rounds, not this machine's shared disk
and CPUs, decide the result. Then, REPS times each, on nodes without the model:
  plain      playbooks/model.yml, model_pipeline=never model_fanout=false: the controller sends to every node;
  fanout     model_pipeline=never: the controller sends once, then every node that holds the model sends it on;
  pipelined  model_pipeline=always: one swarm (aria2), every node receives and sends on at once;
  noop       model.yml again on nodes that hold the model (after the pipelined copy): the fixed cost.
All include the manifest check of every node and the cleanup; the fan-out and the plain copy the full check after
each copy. Writes fanout.md (min / median / max, and link-times: (median - no-op median) / the time of one copy
over one link) and fanout.json to --out.

Run it with bench/run.sh --fanout, which installs what it needs first.
"""

import datetime
import hashlib
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402

MODEL = "/models/fanout-model"


def model_source(directory, megabytes):
    """A model of random files on the controller (two shards and a config), made once per size."""
    os.makedirs(directory, exist_ok=True)
    shards = {"model-00001-of-00002.safetensors": megabytes // 2, "model-00002-of-00002.safetensors": megabytes - megabytes // 2}
    for name, size in shards.items():
        path = os.path.join(directory, name)
        if not os.path.exists(path) or os.path.getsize(path) != size * 2 ** 20:
            bench.run(["dd", "if=/dev/urandom", "of=" + path, "bs=1M", "count=%d" % size, "status=none"])
    with open(os.path.join(directory, "config.json"), "w") as handle:
        json.dump(bench.MODEL_CONFIG, handle)
    return directory


def cap(names, rate):
    """Every node's and the controller's egress to the same rate (tc token bucket filters)."""
    qdisc = ["tbf", "rate", rate, "burst", "256kb", "latency", "100ms"]
    for name in names:
        bench.run(["podman", "exec", name, "tc", "qdisc", "replace", "dev", "eth0", "root"] + qdisc)
    bridge = subprocess.run(["podman", "network", "inspect", bench.NETWORK, "--format", "{{.NetworkInterface}}"],
                            capture_output=True, text=True, check=True).stdout.strip()
    bench.run(["tc", "qdisc", "replace", "dev", bridge, "root"] + qdisc)
    return bridge


def uncap(bridge):
    subprocess.run(["tc", "qdisc", "del", "dev", bridge, "root"], stderr=subprocess.DEVNULL, check=False)


def wipe(names):
    for name in names:
        bench.run(["podman", "exec", name, "rm", "-rf", MODEL, "/etc/ascend-inference/model.manifest.json"])


def inventory(count, key, source, workdir):
    inv = bench.inventory(count, key)
    inv["ascend_cluster"]["vars"].update(ascend_model=MODEL, model_source="controller", model_src=source,
                                         model_manifest_cache=os.path.join(workdir, "manifests"))
    path = os.path.join(workdir, "inventory-fanout-%d.json" % count)
    with open(path, "w") as handle:
        json.dump(inv, handle)
    return path


def measure(args, count, source, workdir, results):
    key, public_key = bench.ssh_key(workdir)
    inv = inventory(count, key, source, workdir)
    env = dict(os.environ)
    with bench.Nodes(args.image, count, public_key) as nodes:
        bridge = cap(nodes.names, args.rate)
        try:
            env["ANSIBLE_SSH_CONTROL_PATH_DIR"] = bench.control_dir()
            # Warm up: the controller's manifest is made once, as in use (--check would not save it), and
            # SSH reaches every node.
            bench.timed([bench.ansible("ansible"), "localhost", "-m", "ascend.inference.model_manifest", "-a",
                         json.dumps({"path": source, "save": True, "cache": os.path.join(
                             workdir, "manifests", "%s.json" % hashlib.sha256(source.encode()).hexdigest())})],
                        os.path.join(workdir, "fanout-manifest-%d.log" % count), env=env)
            bench.timed([bench.ansible("ansible-playbook"), "playbooks/model.yml", "-i", inv, "--check"],
                        os.path.join(workdir, "fanout-check-%d.log" % count), env=env)
            modes = {"plain": ["-e", "model_pipeline=never", "-e", "model_fanout=false"],
                     "fanout": ["-e", "model_pipeline=never"], "pipelined": ["-e", "model_pipeline=always"],
                     "noop": []}
            for rep in range(1, args.reps + 1):
                for mode in [m for m in ("plain", "fanout", "pipelined", "noop") if m in args.modes.split(",")]:
                    extra = modes[mode]
                    if mode != "noop":
                        wipe(nodes.names)
                    bench.log("N=%d rep %d: %s" % (count, rep, mode))
                    extra = extra + [item for pair in args.extra_vars for item in ("-e", pair)]
                    done = bench.timed([bench.ansible("ansible-playbook"), "playbooks/model.yml", "-i", inv] + extra,
                                       os.path.join(workdir, "fanout-%s-%d-%d.log" % (mode, count, rep)), env=env)
                    results.setdefault(str(count), {}).setdefault(mode, []).append(
                        {"seconds": round(done.seconds, 1), "cpu": round(done.cpu, 1)})
                    save(args, results)
        finally:
            uncap(bridge)


def save(args, results):
    link = link_seconds(args)
    with open(os.path.join(args.out, "fanout.json"), "w") as handle:
        json.dump({"rate": args.rate, "size_mb": args.size, "reps": args.reps, "link_seconds": link,
                   "commit": bench.commit(), "extra_vars": args.extra_vars,
                   "results": results}, handle, indent=1)
    with open(os.path.join(args.out, "fanout.md"), "w") as handle:
        handle.write(report(args.rate, args.size, args.reps, link, results, bench.commit(), args.extra_vars))


def report(rate, size, reps, link, results, revision, extra_vars=()):
    """fanout.md: the table, with link-times = (median - the no-op median) / one copy's time over one link."""
    lines = ["# Model copy: pipelined, fan-out and a plain copy from the controller",
             "",
             "%s, commit %s; %d MB model (random data), every node's and the controller's egress capped to %s "
             "(tc tbf), so one copy over one link takes %.1f s; %d repetition(s); wall seconds of "
             "`playbooks/model.yml` (min / median / max), the manifest checks, the full check after each copy in "
             "rounds and the cleanup included. Link-times: (median - the no-op median) / %.1f s."
             % (datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), revision, size,
                rate, link, reps, link),
             ""]
    if extra_vars:
        lines += ["Every run with `%s`." % " ".join("-e " + pair for pair in extra_vars), ""]
    lines += ["| nodes | plain copy | fan-out | pipelined | no-op | link-times: plain / fan-out / pipelined |",
              "|---|---|---|---|---|---|"]
    for count in sorted(results, key=int):
        row = results[count]
        cells = dict((mode, _cell(row, mode)) for mode in ("plain", "fanout", "pipelined", "noop"))
        noop = statistics.median(cells["noop"][1]) if cells["noop"][1] else None
        times = ["%.2f" % ((statistics.median(cells[m][1]) - noop) / link) if cells[m][1] and noop is not None else "-"
                 for m in ("plain", "fanout", "pipelined")]
        lines.append("| %s | %s | %s | %s | %s | %s |" % (
            count, cells["plain"][0], cells["fanout"][0], cells["pipelined"][0], cells["noop"][0], " / ".join(times)))
    return "\n".join(lines) + "\n"


def _cell(row, mode):
    times = [r["seconds"] for r in row.get(mode, [])]
    return ("%.1f / %.1f / %.1f" % (min(times), statistics.median(times), max(times))) if times else "-", times


def link_seconds(args):
    """One copy of the model over one capped link: its bytes over the rate (tc's mbit: 10^6 bit/s)."""
    rate = args.rate.lower()
    scale = {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9}
    for unit, factor in scale.items():
        if rate.endswith(unit):
            return args.size * 2 ** 20 * 8 / (float(rate[:-len(unit)]) * factor)
    raise ValueError("--rate %s: give kbit, mbit or gbit" % args.rate)


def main():
    parser = bench.arguments(__doc__)
    parser.add_argument("--size", type=int, default=400, help="the model's size in MB (default 400)")
    parser.add_argument("--rate", default="200mbit", help="every link's rate, as tc writes it (default 200mbit)")
    parser.add_argument("--out", required=True, help="directory for fanout.md, fanout.json and the logs")
    parser.add_argument("--modes", default="plain,fanout,pipelined,noop",
                        help="which copies to time, comma-separated (default plain,fanout,pipelined,noop)")
    parser.add_argument("-e", "--extra-vars", action="append", default=[], metavar="NAME=VALUE",
                        help="passed to every model.yml run (for example model_progress_every=10), repeatable")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    source = model_source(os.path.join(bench.REPO, ".cache", "bench", "fanout-model-%d" % args.size), args.size)
    if subprocess.run(["podman", "network", "exists", bench.NETWORK], check=False).returncode:
        bench.run(["podman", "network", "create", "--subnet", bench.SUBNET, bench.NETWORK], stdout=subprocess.DEVNULL)
    results = {}
    try:
        for count in [int(size) for size in args.nodes.split(",") if size]:
            measure(args, count, source, args.out, results)
    finally:
        subprocess.run(["podman", "network", "rm", "--force", bench.NETWORK], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=False)
    bench.log("results: %s" % os.path.join(args.out, "fanout.md"))
    print(open(os.path.join(args.out, "fanout.md")).read())


if __name__ == "__main__":
    main()
