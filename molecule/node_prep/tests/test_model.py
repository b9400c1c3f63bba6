"""The model from the controller on every node. The converge put it there through the swarm (3 nodes receive:
model_pipeline auto); its idempotence step showed that a second run copies nothing. Then: the swarm with a
sender stopped mid-copy, cut off and resumed, a bad piece fetched again; the rounds (model_pipeline: never) cut
off and resumed; a corrupted file found by the full check and fetched again after a hub download."""

import hashlib
import json
import os
import re
import subprocess
import time
import warnings

import pytest
from serve_checks import INVENTORY, PROJECT, playbook, recap
from test_failures import HOSTS, node

testinfra_hosts = ["podman://prep-head"]
MODEL = "/models/tiny"
RECORD = "/etc/ascend-inference/model.manifest.json"
SOURCE = os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "model-src")
PORT = 8730
# The peers', the tracker's and aria2's control ports (ascend_model_transfer_port and the two after it).
PORTS = (8730, 8731, 8732)
UNITS = ("ascend-model-seed.service", "ascend-model-fetch.service", "ascend-model-swarm.service",
         "ascend-model-tracker.service")
STANDIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "hub-standin.py")


def source_bytes():
    return sum(os.path.getsize(os.path.join(d, n)) for d, _s, names in os.walk(SOURCE) for n in names)


def source_sums():
    sums = {}
    for directory, _dirs, names in os.walk(SOURCE):
        for name in names:
            full = os.path.join(directory, name)
            with open(full, "rb") as handle:
                sums[os.path.relpath(full, SOURCE)] = hashlib.sha256(handle.read()).hexdigest()
    return sums


def node_sums(name):
    out = node(name).check_output("cd %s && find . -type f -not -path '*/.ascend-model-partial/*' -print0 "
                                  "| xargs -0 sha256sum" % MODEL)
    return dict((path[2:], digest) for digest, path in (line.split(None, 1) for line in out.splitlines()))


def nothing_left(name):
    """No transfer daemon, tracker or aria2 listens, no copy runs and no password is left on the node, and the
    controller's aria2 and tracker are gone."""
    host = node(name)
    for port in PORTS:
        assert host.check_output("ss -ltnH 'sport = :%d'" % port) == "", (name, port)
    assert not host.file("/run/ascend-inference/model").exists, name
    for unit in UNITS:
        assert host.run("systemctl is-active %s" % unit).stdout.strip() in ("inactive", "unknown"), (name, unit)
    assert subprocess.run(["ss", "-ltnH", "sport = :%d or sport = :%d or sport = :%d" % tuple(PORTS)],
                          capture_output=True, text=True, check=True).stdout == "", \
        "the controller's aria2 or tracker still listens"


def lines_of(out, host):
    """The model copy's progress lines of one host (rounds, or swarm with kind="swarm")."""
    return [line.strip() for line in out.splitlines() if line.strip().startswith("%s: model, round" % host)]


def swarm_lines(out, host):
    return [line.strip() for line in out.splitlines()
            if line.strip().startswith("%s: model, " % host) and "round" not in line]


def fetched(out, host):
    """(MB fetched, MB the node held) from the node's last line of a pipelined copy (model_files.size_text)."""
    flat = " ".join(out.split())
    size = r"([\d.]+) (B|kB|MB|GB)"
    found = re.findall(r"%s: model, received through the swarm in \d+ s: %s fetched(?:, %s already on the node)?"
                       % (host, size, size), flat)
    assert found, "%s received nothing through the swarm: %s" % (host, out[-3000:])
    scale = {"B": 1e-6, "kB": 1e-3, "MB": 1.0, "GB": 1e3, "": 0.0}
    got, got_unit, kept, kept_unit = found[-1]
    return float(got) * scale[got_unit], float(kept or 0) * scale[kept_unit]


def left_by_itself(out, host):
    """Whether the host's copy stopped its own aria2 once no peer needed its pieces: the cleanup after the copy
    skipped it."""
    block = re.search(r"TASK \[ascend\.inference\.model : Stop every transfer daemon and remove the copy's secrets\]"
                      r"[^\n]*\n((?:(?!TASK \[).*\n)*)", out)
    return bool(block) and ("skipping: [%s]" % host) in block.group(1)


def slow_run(*extra):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(PROJECT, "collections"), ANSIBLE_NOCOLOR="1")
    return subprocess.Popen(["ansible-playbook", os.path.join(PROJECT, "playbooks", "model.yml"), "-i", INVENTORY,
                             "-e", "model_progress_every=2"] + list(extra),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)


def held_bytes(name):
    """Bytes the node's aria2 holds (its JSON-RPC on loopback, read on the node), or None."""
    script = ("import json,sys,urllib.request;c=open('/run/ascend-inference/model/aria2.conf').read();"
              "s=[l.split('=',1)[1] for l in c.splitlines() if l.startswith('rpc-secret=')][0];"
              "b=json.dumps({'jsonrpc':'2.0','id':1,'method':'aria2.tellActive','params':['token:'+s,['completedLength']]});"
              "r=json.load(urllib.request.urlopen(urllib.request.Request('http://127.0.0.1:%d/jsonrpc',b.encode()),timeout=3));"
              "print(r['result'][0]['completedLength'] if r['result'] else -1)" % PORTS[2])
    answer = node(name).run("python3 -c %s" % json.dumps(script))
    return int(answer.stdout) if answer.rc == 0 and answer.stdout.strip().lstrip("-").isdigit() else None


def wait_until_held(run, name, fraction, seconds=180):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and run.poll() is None:
        held = held_bytes(name)
        if held is not None and held > fraction * source_bytes():
            return held
        time.sleep(0.5)
    return None


def test_every_node_holds_the_model_and_its_record():
    want = source_sums()
    assert len(want) == 5 and sum(os.path.getsize(os.path.join(SOURCE, p)) for p in want) > 240 * 10 ** 6
    for name in HOSTS:
        assert node_sums(name) == want, name
        record = json.loads(node(name).file(RECORD).content_string)
        assert record["path"] == MODEL and sorted(f["path"] for f in record["files"]) == sorted(want)
        assert node(name).file(MODEL + "/model-00001-of-00003.safetensors").mode == 0o644
        nothing_left(name)


def test_the_swarm_check_mode_a_stopped_sender_an_interrupted_copy_and_a_bad_piece():
    start = time.monotonic()
    for name in HOSTS:
        node(name).check_output("rm -rf %s %s" % (MODEL, RECORD))
    code, out = playbook("model.yml", "--check")
    assert code == 0, out[-3000:]
    flat = " ".join(out.split())
    assert ("swarm: the controller send to prep-head, prep-worker1, prep-worker2 at once, each passing on the "
            "pieces it has checked") in flat, out[-3000:]
    for name in HOSTS:
        assert not node(name).file(MODEL).exists, name
        nothing_left(name)
    # Every sender slow (10 MB/s each): prep-head's aria2 is stopped (SIGSTOP) once it holds a third, while it
    # sends to the others. They name it after 8 s and take its pieces from the others; its own task starts it
    # again after twice that.
    run = slow_run("-e", "model_bwlimit=10M", "-e", "model_stall_timeout=8")
    try:
        assert wait_until_held(run, "prep-head", 0.3), "prep-head never held a third"
        node("prep-head").check_output("systemctl kill --signal=SIGSTOP ascend-model-swarm.service")
        stopped = time.monotonic()
        out = run.communicate(timeout=600)[0]
    finally:
        if run.poll() is None:
            run.kill()
    flat = " ".join(out.split())
    assert run.returncode == 0, out[-4000:]
    named = [name for name in ("prep-worker1", "prep-worker2")
             if "%s: model, prep-head stopped sending (nothing for 8 s)" % name in flat]
    assert named, out[-4000:]
    assert "prep-head: model, aria2 on this node has not answered for 16 s (stalled); starting it again" in flat
    # A node that named a stalled holder sends on until the cleanup: the holder's aria2, started again, finds it.
    assert not any(left_by_itself(out, name) for name in named), out[-4000:]
    warnings.warn("stopped sender: the copy ended %.0f s after prep-head's aria2 was stopped"
                  % (time.monotonic() - stopped))
    assert any(re.search(r"[\d.]+ MB of [\d.]+ MB \(\d+%\), [\d.]+ MB/s", line)
               for line in swarm_lines(out, "prep-worker1")), out[-4000:]
    for name in HOSTS:
        assert node_sums(name) == source_sums(), name
        nothing_left(name)
    # Cut off: every node's aria2 stopped once prep-worker2 holds half; the next run fetches only the rest.
    for name in HOSTS:
        node(name).check_output("rm -rf %s %s" % (MODEL, RECORD))
    run = slow_run("-e", "model_bwlimit=16M")
    try:
        held = wait_until_held(run, "prep-worker2", 0.5)
        assert held, "prep-worker2 never held half"
        for name in HOSTS:
            node(name).check_output("systemctl stop ascend-model-swarm.service")
        out = run.communicate(timeout=300)[0]
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode != 0 and "aria2 ended before the node held the model" in " ".join(out.split()), out[-3000:]
    for name in HOSTS:
        nothing_left(name)
    code, out = playbook("model.yml")
    assert code == 0, out[-3000:]
    # Each stopped its own aria2 once no peer lacked pieces: the tracker is the controller's, no node stays for it.
    assert all(left_by_itself(out, name) for name in HOSTS), out[-3000:]
    got, kept = fetched(out, "prep-worker2")
    # What it held was checked piece by piece and kept (pieces in aria2's 16 MiB write cache may be lost).
    total = source_bytes() / 1e6
    assert kept * 10 ** 6 >= held - 16 * 2 ** 20 and got + kept == pytest.approx(total, abs=0.2), (got, kept, held)
    for name in HOSTS:
        assert node_sums(name) == source_sums(), name
    # One bad byte on prep-worker2 (same size and time), found by the full check: one piece is fetched again.
    victim = MODEL + "/model-00002-of-00003.safetensors"
    node("prep-worker2").check_output("touch -r {0} /tmp/stamp && printf 'x' | dd of={0} bs=1 seek=5000000 "
                                      "conv=notrunc status=none && touch -r /tmp/stamp {0}".format(victim))
    code, out = playbook("model.yml", "--tags", "model_verify", "-e", "model_pipeline=always")
    assert code == 0, out[-3000:]
    got, kept = fetched(out, "prep-worker2")
    assert got <= 0.3 and got + kept == pytest.approx(total, abs=0.2), (got, kept)  # 256 KiB pieces
    assert node_sums("prep-worker2") == source_sums()
    for name in HOSTS:
        nothing_left(name)
    warnings.warn("the swarm's tests took %.0f s" % (time.monotonic() - start))


def test_fan_out_check_mode_an_interrupted_copy_and_its_resume():
    for name in HOSTS:
        node(name).check_output("rm -rf %s %s" % (MODEL, RECORD))
    # --check: who would copy from whom; nothing copied.
    code, out = playbook("model.yml", "--check", "-e", "model_pipeline=never")
    assert code == 0, out[-3000:]
    assert lines_of(out, "prep-head") == ["prep-head: model, round 1, would copy from the controller"], out[-3000:]
    assert lines_of(out, "prep-worker2") == ["prep-worker2: model, round 3, would copy from prep-head"], out[-3000:]
    for name in HOSTS:
        assert not node(name).file(MODEL).exists, name
    # A slow copy (60 MB/s), cut off on prep-worker1 while it fetches from prep-head.
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(PROJECT, "collections"), ANSIBLE_NOCOLOR="1")
    run = subprocess.Popen(["ansible-playbook", os.path.join(PROJECT, "playbooks", "model.yml"), "-i", INVENTORY,
                            "-e", "model_bwlimit=60M", "-e", "model_progress_every=2", "-e", "model_pipeline=never"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    worker = node("prep-worker1")
    deadline = time.monotonic() + 240
    cut = False
    while time.monotonic() < deadline and run.poll() is None:
        # In the middle of a file: rsync's temporary file of a shard holds more than 20 MB.
        arriving = worker.run("find %s -maxdepth 1 -name '.model-*' -size +20M" % MODEL).stdout.strip()
        if arriving and worker.run("systemctl is-active ascend-model-fetch.service").stdout.strip() == "active":
            worker.check_output("systemctl stop ascend-model-fetch.service")
            cut = True
            break
        time.sleep(0.5)
    out = run.communicate(timeout=600)[0]
    assert cut, out[-3000:]
    assert run.returncode != 0
    # Who fed whom: the controller the first node, then the nodes that hold it the next ones.
    assert "round 1: the controller -> prep-head" in out and "round 2: prep-head -> prep-worker1" in out, out[-4000:]
    assert lines_of(out, "prep-head")[0].startswith("prep-head: model, round 1, from the controller: "), out[-4000:]
    assert any(re.search(r"from prep-head: [\d.]+ MB of [\d.]+ MB \(\d+%\), [\d.]+ MB/s", line)
               for line in lines_of(out, "prep-worker1")), out[-4000:]
    flat = " ".join(out.split())  # the output callback folds long messages
    assert "prep-worker1: the model was not copied from prep-head: rsync exited with 20" in flat, out[-4000:]
    # prep-worker2's turn came after prep-worker1's, which failed: it got the model all the same.
    assert lines_of(out, "prep-worker2")[-1].startswith("prep-worker2: model, round 3, copied from prep-head"), out[-4000:]
    partial = worker.check_output("find %s -path '*/.ascend-model-partial/*' -type f -printf '%%s\\n'" % MODEL)
    assert partial and int(partial.split()[0]) > 0, "no partial file kept on prep-worker1"
    for name in HOSTS:
        nothing_left(name)
    # The next run resumes prep-worker1's file from a node that holds the model.
    code, out = playbook("model.yml", "-e", "model_pipeline=never")
    assert code == 0, out[-3000:]
    done = lines_of(out, "prep-worker1")[-1]
    reused = re.search(r"round 1, copied from prep-\S+ in \d+ s: ([\d.]+) MB sent, ([\d.]+) MB already on the node", done)
    # The file cut off is resumed (its first part is not sent again), the files that had arrived are not sent.
    assert reused and float(reused.group(2)) >= 10 and float(reused.group(1)) < 254 - 10, out[-3000:]
    assert node_sums("prep-worker1") == source_sums()
    # The others were hashed by the copy's full check before they recorded the manifest.
    digests = set(json.loads(node(name).file(RECORD).content_string)["digest"] for name in HOSTS)
    assert len(digests) == 1, digests
    for name in HOSTS:
        nothing_left(name)


def test_a_corrupted_file_is_found_by_the_full_check_and_fetched_again_after_a_hub_download():
    worker, head = node("prep-worker2"), node("prep-head")
    victim = MODEL + "/model-00002-of-00003.safetensors"
    # The same size and time, other bytes: what a disk's silent corruption leaves.
    worker.check_output("touch -r {0} /tmp/stamp && printf 'corrupt' | dd of={0} bs=1 seek=4096 conv=notrunc "
                        "status=none && touch -r /tmp/stamp {0}".format(victim))
    code, out = playbook("model.yml")
    assert code == 0 and recap(out) == {name: 0 for name in HOSTS}, out[-3000:]  # the quick check cannot see it
    # The head downloads the model from a hub: a stand-in of Hugging Face's `hf` (hub-standin.py) whose
    # repository holds what the controller held; the token from ascend_extra_env reaches it, not its argv.
    subprocess.run(["podman", "cp", STANDIN, "prep-head:/usr/local/bin/hf-standin"], check=True)
    head.check_output("chmod 755 /usr/local/bin/hf-standin && rm -rf /opt/hub-standin && mkdir -p /opt/hub-standin/test "
                      "&& cp -a %s /opt/hub-standin/test/tiny" % MODEL)
    hub = {"model_source": "huggingface", "model_hub_repo": "test/tiny", "model_hub_cli": "/usr/local/bin/hf-standin",
           "ascend_extra_env": {"VLLM_LOGGING_LEVEL": "INFO", "HF_TOKEN": "hf_standin_token"}}
    code, out = playbook("model.yml", "--tags", "model_verify", "-e", json.dumps(hub), "-vvv")
    assert code == 0, out[-3000:]
    assert head.file("/opt/hub-standin/calls.log").content_string == \
        "download test/tiny --local-dir %s HF_TOKEN=set\n" % MODEL
    assert "hf_standin_token" not in out and not head.file("/run/ascend-inference-model-hub.env").exists
    # Its steps leave nothing changed on the head (its files were the hub's already).
    for task in ("Write the hub's environment to a file only root reads", "Download the model with the hub's command",
                 "Remove the hub's environment file"):
        assert "ok: [prep-head" in out.split("TASK [ascend.inference.model : %s]" % task)[1].split("TASK [")[0], task
    assert ("prep-worker2: 1 file(s) whose sha256 differs from the manifest: model-00002-of-00003.safetensors; "
            "copied again") in " ".join(out.split()), out[-3000:]
    assert lines_of(out, "prep-worker2")[-1].startswith("prep-worker2: model, round 1, copied from prep-head"), out[-3000:]
    assert node_sums("prep-worker2") == source_sums()
    # The download's own metadata (.cache/ at the top) is not part of the model: not recorded, not copied.
    assert head.file(MODEL + "/.cache/huggingface/download/config.json.metadata").exists
    record = json.loads(head.file(RECORD).content_string)
    assert not [f for f in record["files"] if f["path"].startswith(".")] and not worker.file(MODEL + "/.cache").exists
    nothing_left("prep-worker2")
    # The swarm from the head: the head and prep-worker1 hold the model, the tracker is on the run's first node
    # (prep-head) and prep-worker2 fetches only the piece found bad.
    worker.check_output("touch -r {0} /tmp/stamp && printf 'corrupt' | dd of={0} bs=1 seek=4096 conv=notrunc "
                        "status=none && touch -r /tmp/stamp {0}".format(victim))
    code, out = playbook("model.yml", "--tags", "model_verify", "-e", json.dumps(hub), "-e", "model_pipeline=always")
    assert code == 0, out[-3000:]
    got, kept = fetched(out, "prep-worker2")
    assert got <= 0.3 and got + kept == pytest.approx(source_bytes() / 1e6, abs=0.2), (got, kept)
    assert node_sums("prep-worker2") == source_sums()
    for name in HOSTS:
        nothing_left(name)
