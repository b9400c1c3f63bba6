"""Faults: a killed raylet, a restarted head, a node that cannot reach the head."""

import json
import os
import re
import subprocess
import time

from test_ray import HEAD, address_of, cluster, node, wait_whole

testinfra_hosts = ["podman://" + HEAD]
INVENTORY = os.environ["MOLECULE_INVENTORY_FILE"]
PROJECT = os.environ.get("MOLECULE_PROJECT_DIRECTORY", os.getcwd())


def restarts(host):
    return int(host.check_output("systemctl show -p NRestarts --value ascend-ray.service"))


def test_killed_raylet_is_restarted_and_rejoins():
    worker = node("ray-worker1")
    before = restarts(worker)
    killed = [n["node_id"] for n in cluster() if n["ip"] == address_of(worker)]
    assert len(killed) == 1, killed
    worker.check_output("pkill -9 -x raylet")
    # `ray start --block` exits when a child dies; Restart=always brings it back.
    deadline = time.time() + 120
    while restarts(worker) == before:
        assert time.time() < deadline, "systemd did not restart ascend-ray.service after its raylet died"
        time.sleep(2)
    # Whole again only once a new raylet registered from the worker and the killed one is gone.
    wait_whole(240, replaced=killed)


def test_restarted_head_gets_its_workers_back():
    before = [n["node_id"] for n in cluster()]
    node(HEAD).check_output("systemctl restart ascend-ray.service")
    # A new head has new node IDs for every member that registered with it.
    wait_whole(240, replaced=before)


def test_barrier_names_the_node_that_cannot_reach_the_head():
    worker = node("ray-worker2")
    head_ip = address_of(node(HEAD))
    worker.check_output("ip route add blackhole %s/32 && systemctl restart ascend-ray.service" % head_ip)
    try:
        # The old raylet's goodbye cannot reach the head either: wait until the head's health checks
        # declared it dead (tens of seconds), or the barrier could still count it.
        deadline = time.time() + 120
        while address_of(worker) in [n["ip"] for n in cluster()]:
            assert time.time() < deadline, "the head still lists the cut-off worker after 120 s"
            time.sleep(3)
        env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(PROJECT, "collections"),
                   ANSIBLE_NOCOLOR="1")
        proc = subprocess.run(["ansible-playbook", os.path.join(PROJECT, "playbooks", "ray.yml"), "-i", INVENTORY,
                               "-e", json.dumps({"ray_cluster_barrier_timeout": 20})],
                              capture_output=True, text=True, timeout=600, check=False, env=env)
    finally:
        worker.check_output("ip route del blackhole %s/32" % head_ip)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "The Ray cluster is not whole after 20 s" in out
    assert "ray-worker2 (%s): NOT JOINED (cannot reach the head" % address_of(worker) in out, out
    # While it waited, the barrier said who had joined and who was missing (one task, no retry lines).
    assert re.search(r"%s: Ray cluster, \d+ s of 20 s: (\d+)/(\d+) nodes, \d+/\d+ NPUs joined; missing: ray-worker2\n"
                     % HEAD, out), out
    assert "RETRYING" not in out
    wait_whole(240)
