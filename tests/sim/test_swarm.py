"""The pipelined copy's parts with the real aria2 (Debian's aria2 1.36, installed by setup-host.sh), on loopback:
the torrent and the tracker reply of plugins/module_utils/model/torrent.py, aria2's configuration, the reading of its
JSON-RPC and the controller's tracker of plugins/module_utils/model/swarm.py. A seeder and two receivers on
127.0.0.1-3; one receiver holds a file with a bad piece and a file cut short, as an interrupted or damaged copy
leaves them, the other nothing (aria2 checks nothing there before it asks the tracker)."""

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from test_router import collection

model_files = swarm = torrent = None
SECRET = "s3cret"
PIECE = 1 << 20


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def rpc(port, method, *params):
    body = json.dumps({"jsonrpc": "2.0", "id": "t", "method": "aria2." + method,
                       "params": ["token:" + SECRET] + list(params)}).encode()
    with urllib.request.urlopen(urllib.request.Request("http://127.0.0.1:%d/jsonrpc" % port, body), timeout=3) as answer:
        return json.load(answer)["result"]


def status(port, names):
    download = rpc(port, "tellActive", swarm.STATUS_KEYS)[0]
    return swarm.node_status(download, rpc(port, "getPeers", download["gid"]), names)


@pytest.fixture
def model(tmp_path):
    collection(tmp_path)
    global model_files, swarm, torrent  # pylint: disable=global-statement
    from ansible_collections.ascend.inference.plugins.module_utils.model import files as model_files, swarm, torrent
    source = tmp_path / "src" / "model"
    (source / "tokenizer").mkdir(parents=True)
    random = os.urandom(6 * PIECE + 12345)
    (source / "model-1.safetensors").write_bytes(random[:4 * PIECE + 7])
    (source / "model-2.safetensors").write_bytes(random[4 * PIECE + 7:])
    (source / "tokenizer" / "vocab.json").write_bytes(b'{"a": 1}')
    (source / "empty.txt").write_bytes(b"")
    files = [("model-1.safetensors", 4 * PIECE + 7), ("model-2.safetensors", 2 * PIECE + 12338),
             ("tokenizer/vocab.json", 8), ("empty.txt", 0)]
    return tmp_path, source, files


def digests(root):
    found = {}
    for directory, _dirs, names in os.walk(root):
        for name in names:
            with open(os.path.join(directory, name), "rb") as handle:
                found[os.path.relpath(os.path.join(directory, name), root)] = hashlib.sha256(handle.read()).hexdigest()
    return found


def test_a_swarm_of_three_repairs_a_damaged_copy_and_fills_an_empty_one(model):
    tmp, source, files = model
    assert shutil.which("aria2c"), "aria2c: tests/sim/setup-host.sh installs it"
    peer_port, tracker_port = free_port(), free_port()
    addresses = ["127.0.0.1", "127.0.0.2", "127.0.0.3"]
    names = {"127.0.0.1": "seeder", "127.0.0.2": "damaged", "127.0.0.3": "empty"}
    meta = torrent.build(str(source), files, "model", swarm.announce_url("127.0.0.1", tracker_port), "nonce",
                         length=PIECE)
    (tmp / "m.torrent").write_bytes(meta)
    (tmp / "tracker").mkdir()
    (tmp / "tracker" / swarm.ANNOUNCE).write_bytes(torrent.tracker_reply(addresses, peer_port, 5))
    # The damaged receiver: one bad byte in the first file's second piece, the second file cut after 1.5 pieces.
    damaged = tmp / "damaged" / "model"
    shutil.copytree(str(source), str(damaged))
    with open(str(damaged / "model-1.safetensors"), "r+b") as handle:
        handle.seek(PIECE + 100)
        handle.write(b"\xff" if handle.read(1) != b"\xff" else b"\x00")
    with open(str(damaged / "model-2.safetensors"), "r+b") as handle:
        handle.truncate(PIECE + PIECE // 2)
    (tmp / "empty" / "model").mkdir(parents=True)
    # The tracker as the controller serves it, for as long as the process it watches (ansible-playbook there).
    watched = subprocess.Popen(["sleep", "120"])
    tracker = subprocess.Popen([sys.executable, "-c", swarm.CONTROLLER_TRACKER, "127.0.0.1", str(tracker_port),
                                str(tmp / "tracker"), str(watched.pid)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    processes = [watched, tracker]
    controls = {}
    try:
        # aria2 asks the tracker as it starts where it has nothing to check: the nodes' joins wait for it too.
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", tracker_port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the tracker does not listen"
                time.sleep(0.05)
        for address, directory, holder in (("127.0.0.1", tmp / "src", True), ("127.0.0.2", tmp / "damaged", False),
                                           ("127.0.0.3", tmp / "empty", False)):
            controls[address] = free_port()
            conf = tmp / ("%s.conf" % address)
            # Slow senders (1 MiB/s each, about 6 s for the seeder alone): the pieces pass through both receivers
            # while they receive, and aria2's rates (averaged over seconds) show who sent.
            check = swarm.held_anything(model_files.walk(str(directory / "model")))
            assert check == (address != "127.0.0.3")
            conf.write_text(swarm.aria2_conf(str(directory), address, peer_port, controls[address], SECRET, 120,
                                             3, holder=holder, bwlimit="1M", check=check))
            started = time.time()
            processes.append(subprocess.Popen(["aria2c", "--conf-path=%s" % conf, str(tmp / "m.torrent")],
                                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        deadline = time.monotonic() + 60
        held, seen = {}, {}
        while time.monotonic() < deadline:
            try:
                now = {a: status(controls[a], names) for a in ("127.0.0.2", "127.0.0.3")}
            except (OSError, IndexError):
                time.sleep(0.2)
                continue
            for address, found in now.items():
                if not found["checking"] and address not in held:
                    held[address] = found["completed"]
                seen.setdefault(address, set()).update(found["sending"])
            if all(found["complete"] for found in now.values()):
                ended = time.time()
                break
            time.sleep(0.2)
        else:
            pytest.fail("the swarm did not complete in 60 s: %s" % now)
        assert digests(str(tmp / "damaged" / "model")) == digests(str(source))
        assert digests(str(tmp / "empty" / "model")) == digests(str(source))
        # aria2's writes date the fetch's end (files' mtimes): the empty receiver, started last, fetched
        # everything from slow senders (seconds), and was seen complete at most one look (0.2 s) later.
        fetch = swarm.fetch_seconds(model_files.walk(str(tmp / "empty" / "model")), started)
        assert 2 < fetch <= ended - started + 0.1, (fetch, ended - started)
        # The damaged copy kept its 4 good pieces (0, 2, 3, 4): the bad piece 1, piece 5 cut short and piece 6
        # were fetched; the empty one held nothing.
        assert held == {"127.0.0.2": 4 * PIECE, "127.0.0.3": 0}, held
        # The empty receiver got pieces from the damaged one too: pieces travel on while they arrive.
        assert "damaged" in seen["127.0.0.3"] or "empty" in seen["127.0.0.2"], seen
        # The tracker ends with the process it watches (it looks once a second).
        assert tracker.poll() is None
        watched.kill()
        watched.wait()
        assert tracker.wait(timeout=5) == 0
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=10)
