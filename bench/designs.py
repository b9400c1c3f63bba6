"""Two pipelined designs for the model copy, raw (no Ansible), on the model copy benchmark's capped nodes.

  chain   the controller streams a tar of the model to node 1; every node writes it and passes the stream on
          (socat | tee | tar, standard stream tools), so all nodes receive at once at one link's rate;
  swarm   aria2 (BitTorrent): the controller seeds a private torrent (4 MiB pieces, each checked by SHA-1 as it
          arrives), every node downloads and uploads at once; the peers come from a tracker reply that is a
          fixed file (the members are known), served by python3's http.server on the head.

Each runs REPS times per size on fresh copies; the wall time is from the start until every node holds the whole
model (tar exits on every node; aria2's download-complete hook ran on every node). Neither checks a file's
sha256 afterwards. Writes designs.md and designs.json to --out. Run it with bench/run.sh --designs.
"""

import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402
import fanout  # noqa: E402

sys.path.insert(0, bench.REPO)
from plugins.module_utils.model import torrent  # noqa: E402  pylint: disable=wrong-import-position

PORT = 6881
CHAIN_PORT = 6882
TRACKER_PORT = 6969
RECEIVED = "/models/received"


def controller_address():
    """The controller's address on the benchmark network (its bridge)."""
    return subprocess.run(["podman", "network", "inspect", bench.NETWORK, "--format", "{{range .Subnets}}{{.Gateway}}{{end}}"],
                          capture_output=True, text=True, check=True).stdout.strip()


def node_sh(name, script, **kwargs):
    return subprocess.Popen(["podman", "exec", name, "sh", "-c", script], **kwargs)


def wipe(names):
    for name in names:
        bench.run(["podman", "exec", name, "sh", "-c", "pkill -9 -x aria2c; pkill -9 -x socat; pkill -9 -f '[h]ttp[.]server'; sleep 0.5; "
                   "rm -rf %s /models/received.aria2 /tmp/swarm; mkdir -p %s /tmp/swarm/tracker; "
                   "printf '#!/bin/sh\\ntouch /tmp/swarm/done\\n' > /tmp/swarm/done.sh; chmod +x /tmp/swarm/done.sh"
                   % (RECEIVED, RECEIVED)])


def chain(names, source):
    addresses = [bench.node_ip(i) for i in range(len(names))]
    receivers = []
    # The last node first: each node's listener is up before its sender connects.
    for index in reversed(range(len(names))):
        listen = "socat -u TCP-LISTEN:%d,bind=%s,reuseaddr STDOUT" % (CHAIN_PORT, addresses[index])
        if index + 1 < len(names):
            forward = "socat -u STDIN TCP:%s:%d" % (addresses[index + 1], CHAIN_PORT)
            script = "%s | tee >(%s) | tar -x -C %s" % (listen, forward, RECEIVED)
        else:
            script = "%s | tar -x -C %s" % (listen, RECEIVED)
        receivers.append(subprocess.Popen(["podman", "exec", names[index], "bash", "-c", script]))
        for _attempt in range(100):
            if subprocess.run(["podman", "exec", names[index], "sh", "-c", "ss -Hltn 'sport = :%d' | grep -q ." % CHAIN_PORT],
                              check=False).returncode == 0:
                break
            time.sleep(0.1)
    start = time.monotonic()
    sender = subprocess.Popen("tar -c -C %s . | socat -u STDIN TCP:%s:%d" % (shlex.quote(source), addresses[0], CHAIN_PORT),
                              shell=True)
    codes = [sender.wait()] + [receiver.wait() for receiver in receivers]
    if any(codes):
        raise RuntimeError("the chain failed: exit statuses %s" % codes)
    return time.monotonic() - start


def swarm(names, source, workdir, piece=None):
    controller = controller_address()
    addresses = [bench.node_ip(i) for i in range(len(names))]
    files = [(name, os.path.getsize(os.path.join(source, name))) for name in sorted(os.listdir(source))]
    meta = torrent.build(source, files, "received", "http://%s:%d/announce" % (addresses[0], TRACKER_PORT),
                         os.urandom(16).hex(), length=piece)
    path = os.path.join(workdir, "model.torrent")
    with open(path, "wb") as handle:
        handle.write(meta)
    reply = torrent.tracker_reply([controller] + addresses, PORT, interval=5)
    common = ["--enable-dht=false", "--enable-dht6=false", "--bt-enable-lpd=false", "--seed-ratio=0.0",
              "--listen-port=%d" % PORT, "--console-log-level=warn", "--summary-interval=0",
              "--bt-max-peers=%d" % (len(names) + 1), "--file-allocation=none"]
    with open(os.path.join(workdir, "announce"), "wb") as handle:
        handle.write(reply)
    for name in names:
        bench.run(["podman", "cp", path, "%s:/tmp/model.torrent" % name])
    bench.run(["podman", "cp", os.path.join(workdir, "announce"), "%s:/tmp/swarm/tracker/announce" % names[0]])
    tracker = node_sh(names[0], "exec python3 -m http.server %d --bind %s -d /tmp/swarm/tracker" % (
        TRACKER_PORT, addresses[0]), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # The controller seeds from a directory named as the torrent's top directory.
    seed_dir = tempfile.mkdtemp(dir=workdir)
    os.symlink(source, os.path.join(seed_dir, "received"))
    seeder = subprocess.Popen(["aria2c", "--dir=" + seed_dir, "--bt-seed-unverified=true", "--check-integrity=false",
                               "--interface=" + controller, path] + common, stdout=subprocess.DEVNULL)
    time.sleep(1)
    start = time.monotonic()
    peers = [node_sh(name, "exec aria2c --dir=/models --interface=%s --on-bt-download-complete=/tmp/swarm/done.sh %s "
                     "--bt-stop-timeout=0 --stop-with-process=1 /tmp/model.torrent; " % (addresses[i], " ".join(common)),
                     stdout=subprocess.DEVNULL) for i, name in enumerate(names)]
    done = set()
    try:
        while len(done) < len(names):
            for name in names:
                if name not in done and subprocess.run(["podman", "exec", name, "test", "-e", "/tmp/swarm/done"],
                                                       check=False).returncode == 0:
                    done.add(name)
            time.sleep(0.5)
        return time.monotonic() - start
    finally:
        for process in peers + [seeder, tracker]:
            process.terminate()
        subprocess.run(["pkill", "-f", "aria2c --dir=" + seed_dir], check=False)
        for name in names:
            subprocess.run(["podman", "exec", name, "pkill", "-x", "aria2c"], check=False)
        shutil.rmtree(seed_dir, ignore_errors=True)


def main():
    parser = bench.arguments(__doc__)
    parser.add_argument("--size", type=int, default=400)
    parser.add_argument("--rate", default="200mbit")
    parser.add_argument("--out", required=True)
    parser.add_argument("--designs", default="chain,swarm", help="which designs to time (default chain,swarm)")
    parser.add_argument("--piece-kib", type=int, help="the swarm's piece length (default: the product's choice)")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    source = fanout.model_source(os.path.join(bench.REPO, ".cache", "bench", "fanout-model-%d" % args.size), args.size)
    if subprocess.run(["podman", "network", "exists", bench.NETWORK], check=False).returncode:
        bench.run(["podman", "network", "create", "--subnet", bench.SUBNET, bench.NETWORK], stdout=subprocess.DEVNULL)
    results = {}
    key, public_key = bench.ssh_key(args.out)
    for count in [int(size) for size in args.nodes.split(",") if size]:
        with bench.Nodes(args.image, count, public_key) as nodes:
            bridge = fanout.cap(nodes.names, args.rate)
            try:
                for rep in range(args.reps):
                    for design in args.designs.split(","):
                        wipe(nodes.names)
                        seconds = chain(nodes.names, source) if design == "chain" else swarm(
                            nodes.names, source, args.out, args.piece_kib and args.piece_kib * 1024)
                        bench.log("N=%d rep %d %s: %.1f s" % (count, rep + 1, design, seconds))
                        results.setdefault(str(count), {}).setdefault(design, []).append(round(seconds, 1))
            finally:
                fanout.uncap(bridge)
    link = args.size * 2 ** 20 * 8 / (int(args.rate.rstrip("mbit")) * 1e6)
    lines = ["| nodes | chain (s, min / median / max) | swarm (s) | chain, link-times | swarm, link-times |",
             "|---|---|---|---|---|"]
    for count, row in sorted(results.items(), key=lambda item: int(item[0])):
        cells = ["%.1f / %.1f / %.1f" % (min(row[d]), statistics.median(row[d]), max(row[d])) if d in row else "-"
                 for d in ("chain", "swarm")]
        ratios = [statistics.median(row[d]) / link if d in row else float("nan") for d in ("chain", "swarm")]
        lines.append("| %s | %s | %s | %.2f | %.2f |" % (count, cells[0], cells[1], ratios[0], ratios[1]))
    with open(os.path.join(args.out, "designs.json"), "w") as handle:
        json.dump({"rate": args.rate, "size_mb": args.size, "link_seconds": link, "results": results}, handle)
    with open(os.path.join(args.out, "designs.md"), "w") as handle:
        handle.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
