"""The model from the controller on every node: fanned out node to node, cut off and resumed, a corrupted
file found by the full check and fetched again (after the head downloaded the model from a hub stand-in).
The converge put it there; its idempotence step showed that a second run copies nothing."""

import hashlib
import json
import os
import re
import subprocess
import time

from serve_checks import INVENTORY, PROJECT, playbook, recap
from test_failures import HOSTS, node

testinfra_hosts = ["podman://prep-head"]
MODEL = "/models/tiny"
RECORD = "/etc/ascend-inference/model.manifest.json"
SOURCE = os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "model-src")
PORT = 8730
STANDIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "hub-standin.py")


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
    """No transfer daemon listens, no copy runs and no password is left on the node."""
    host = node(name)
    assert host.check_output("ss -ltnH 'sport = :%d'" % PORT) == "", name
    assert not host.file("/run/ascend-inference/model").exists, name
    for unit in ("ascend-model-seed.service", "ascend-model-fetch.service"):
        assert host.run("systemctl is-active %s" % unit).stdout.strip() in ("inactive", "unknown"), (name, unit)


def lines_of(out, host):
    """The model copy's progress lines of one host."""
    return [line.strip() for line in out.splitlines() if line.strip().startswith("%s: model, round" % host)]


def test_every_node_holds_the_model_and_its_record():
    want = source_sums()
    assert len(want) == 5 and sum(os.path.getsize(os.path.join(SOURCE, p)) for p in want) > 240 * 10 ** 6
    for name in HOSTS:
        assert node_sums(name) == want, name
        record = json.loads(node(name).file(RECORD).content_string)
        assert record["path"] == MODEL and sorted(f["path"] for f in record["files"]) == sorted(want)
        assert node(name).file(MODEL + "/model-00001-of-00003.safetensors").mode == 0o644
        nothing_left(name)


def test_fan_out_check_mode_an_interrupted_copy_and_its_resume():
    for name in HOSTS:
        node(name).check_output("rm -rf %s %s" % (MODEL, RECORD))
    # --check: who would copy from whom; nothing copied.
    code, out = playbook("model.yml", "--check")
    assert code == 0, out[-3000:]
    assert lines_of(out, "prep-head") == ["prep-head: model, round 1, would copy from the controller"], out[-3000:]
    assert lines_of(out, "prep-worker2") == ["prep-worker2: model, round 3, would copy from prep-head"], out[-3000:]
    for name in HOSTS:
        assert not node(name).file(MODEL).exists, name
    # A slow copy (60 MB/s), cut off on prep-worker1 while it fetches from prep-head.
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(PROJECT, "collections"), ANSIBLE_NOCOLOR="1")
    run = subprocess.Popen(["ansible-playbook", os.path.join(PROJECT, "playbooks", "model.yml"), "-i", INVENTORY,
                            "-e", "model_bwlimit=60M", "-e", "model_progress_every=2"],
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
    code, out = playbook("model.yml")
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
