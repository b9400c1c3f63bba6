"""Last: what the role promises when versions, the node environment or the head's unit change."""

import json
import os
import subprocess
import tempfile
import time

from serve_checks import playbook
from test_ray import HEAD, HOSTS, address_of, node, wait_whole

testinfra_hosts = ["podman://" + HEAD]
VENV = "/opt/ascend-inference/venv"


def with_host_vars(host_vars):
    """An inventory file that adds host variables to the scenario's inventory (given after it)."""
    handle = tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False)
    json.dump({"ascend_cluster": {"hosts": host_vars}}, handle)
    handle.close()
    return handle.name


def scenario_extra_env():
    """The scenario's ascend_extra_env (with its Ray timing settings), as the inventory gives it."""
    proc = subprocess.run(["ansible-inventory", "-i", os.environ["MOLECULE_INVENTORY_FILE"], "--host", HEAD],
                          capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)["ascend_extra_env"]


def show(name, prop):
    return node(name).check_output("systemctl show -p %s --value ascend-ray.service" % prop)


def services():
    """Per node: main PID, automatic restarts since the unit was last started, and when it last became
    active (monotonic clock: one kernel, comparable across the nodes)."""
    return {name: (int(show(name, "MainPID")), int(show(name, "NRestarts")), int(show(name, "ActiveEnterTimestampMonotonic")))
            for name in HOSTS}


def test_older_ray_is_warned_about_and_gets_no_token():
    code, out = playbook("ray.yml", "--check", "--diff", "-e", "ray_cluster_version=2.51.0")
    assert code == 0, out[-3000:]
    words = " ".join(out.split())  # the output callback folds long messages
    for name in HOSTS:
        assert "%s: Ray 2.51.0 runs without token authentication (too old for it)" % name in words, out[-3000:]
    assert words.count("The members-only firewall is on.") == len(HOSTS), out[-3000:]
    # Ray's environment would lose the token settings (the head's step, then the workers'), and the token file is
    # not written.
    written = "".join(out.split("TASK [ascend.inference.ray_cluster : Ray on the %s]" % which)[1].split("TASK [")[0]
                      for which in ("head", "workers"))
    assert written.count('-RAY_AUTH_MODE="token"') == len(HOSTS), written
    assert "before: /etc/ascend-inference/ray-auth-token" not in written, written
    for name in HOSTS:
        assert "%s: /etc/ascend-inference/ray.env content (would be written)" % name in written, written
    # Without the firewall nothing keeps non-members off an unauthenticated Ray: refused, unless opted out.
    code, out = playbook("ray.yml", "--check", "-e", json.dumps({"ray_cluster_version": "2.51.0",
                                                                "firewall_enabled": False}))
    assert code != 0
    words = " ".join(out.split())
    assert "has no token authentication (Ray 2.52 or later has it) and firewall_enabled is false" in words, out[-3000:]
    assert "ray_cluster_auth: none" in words


def test_a_node_with_another_ray_is_refused_before_anything_changes():
    before = services()
    inventory = with_host_vars({"ray-worker2": {"ray_cluster_version": "2.51.0"}})
    try:
        code, out = playbook("ray.yml", "--check", "-i", inventory)
    finally:
        os.unlink(inventory)
    assert code != 0
    assert "Ray and Python must match on every node" in out
    assert 'ray-worker2 {"python": "3.11' in out and '"ray": "2.51.0"}' in out, out[-3000:]
    assert services() == before


def test_a_node_environment_change_restarts_ray_everywhere():
    probe = "run-%d" % time.time()  # a value no earlier run wrote
    before = services()
    extra_env = dict(scenario_extra_env(), ASCEND_PROBE=probe)
    code, out = playbook("prepare.yml", "--tags", "node_env", "-e", json.dumps({"ascend_extra_env": extra_env}))
    assert code == 0, out[-3000:]
    after = services()
    for name in HOSTS:
        # A new process, and not one systemd restarted on its own (a started unit counts from 0 again).
        assert after[name][0] != before[name][0] and after[name][1] == 0, (name, before, after)
        environ = node(name).check_output("tr '\\0' '\\n' < /proc/%d/environ" % after[name][0]).splitlines()
        assert "ASCEND_PROBE=" + probe in environ, name
    # The workers' Ray started after the head's, in the role's second step: restarted together, a worker could
    # join the head that was stopping and stay out of the cluster for minutes (one was not back after 240 s).
    second = out.split("TASK [ascend.inference.node_env : Restart Ray on the workers after their head]")[1]
    for name in HOSTS:
        if name != HEAD:
            assert after[name][2] > after[HEAD][2], (name, after)
            assert "%s: ascend-ray.service restarted" % name in second.split("TASK [")[0], second[:3000]
    wait_whole(90)


def test_workers_restart_after_a_changed_head_and_ray_installs_from_an_index():
    """The head's unit drifted: the role rewrites it, restarts the head and then the workers (whose own
    files did not change). ray-worker2, stopped and without Ray, installs it again from a package index
    (a local one made of the image's wheelhouse) instead of the wheelhouse."""
    head = node(HEAD)
    head.check_output("echo '# drift' >> /etc/systemd/system/ascend-ray.service")
    worker2 = node("ray-worker2")
    worker2.check_output(
        "python3 -c 'import os, re; [os.makedirs(\"/tmp/index/simple/\" + re.sub(r\"[-_.]+\", \"-\", w.split(\"-\")[0]).lower(),"
        " exist_ok=True) for w in os.listdir(\"/opt/wheelhouse\")]' && for w in /opt/wheelhouse/*.whl; do "
        "d=$(basename $w | cut -d- -f1 | tr A-Z_. a-z--); ln -sf $w /tmp/index/simple/$d/; done && "
        "systemd-run --unit=index -p StandardError=file:/tmp/index.log python3 -m http.server 8099 -b 127.0.0.1 -d /tmp/index && "
        "printf '[global]\\nindex-url = http://127.0.0.1:8099/simple\\n' > /etc/pip.conf && "
        "systemctl stop ascend-ray.service && %s/bin/pip uninstall -q -y ray" % VENV)
    worker1_unit = node("ray-worker1").file("/etc/systemd/system/ascend-ray.service").content_string
    before = services()
    inventory = with_host_vars({"ray-worker2": {"ray_cluster_wheelhouse": ""}})
    try:
        code, out = playbook("ray.yml", "-i", inventory)
    finally:
        os.unlink(inventory)
        worker2.run("systemctl stop index.service; rm -f /etc/pip.conf")
    assert code == 0, out[-3000:]
    after = services()
    assert node("ray-worker1").file("/etc/systemd/system/ascend-ray.service").content_string == worker1_unit
    head_task = out.split("TASK [ascend.inference.ray_cluster : Ray on the head]")[1].split("TASK [")[0]
    assert "%s: ascend-ray.service restarted" % HEAD in head_task, head_task
    workers_task = out.split("TASK [ascend.inference.ray_cluster : Ray on the workers]")[1].split("TASK [")[0]
    # Restarted by the role, after the head (a worker whose head restarted); ray-worker2, stopped above, started.
    # systemd may also have restarted a worker that lost the head a moment earlier - Restart=always - so NRestarts
    # proves nothing here; the apply's own lines do.
    assert "ray-worker1: ascend-ray.service restarted" in workers_task, workers_task
    assert "ray-worker2: ascend-ray.service started" in workers_task, workers_task
    for name in ("ray-worker1", "ray-worker2"):
        assert after[name][0] != before[name][0], (name, before, after)
        assert after[name][2] > after[HEAD][2], (name, after)
    assert "GET /simple/ray/" in worker2.file("/tmp/index.log").content_string
    assert worker2.check_output("%s/bin/python -c 'import ray; print(ray.__version__)'" % VENV) == "2.52.1"
    assert wait_whole(60)[address_of(worker2)] == 2


def test_a_head_that_lost_its_token_is_refused_not_rekeyed():
    token = "/etc/ascend-inference/ray-auth-token"
    before = services()
    node(HEAD).check_output("mv %s %s.saved" % (token, token))
    try:
        code, out = playbook("ray.yml")
    finally:
        node(HEAD).check_output("mv %s.saved %s" % (token, token))
    assert code != 0
    workers = ", ".join(name for name in HOSTS if name != HEAD)
    assert "The head %s has no Ray token (%s) but %s have one" % (HEAD, token, workers) in out, out[-3000:]
    assert services() == before
    for name in HOSTS:
        assert node(name).file(token).content_string == node(HEAD).file(token).content_string
