"""A node that ran under the Ray launcher keeps nothing of Ray once the plan's launcher is mp.

serve_mp installs no Ray, so the earlier Ray deployment is a stand-in: the unit names and files the
ray_cluster role writes (a Ray unit that only sleeps, an environment file, a token), on the worker.
"""

from serve_checks import main_pid, node, playbook, recap

HEAD, WORKER = "mp-head", "mp-worker"
LEFT = ["/etc/systemd/system/ascend-ray.service", "/etc/ascend-inference/ray.env",
        "/etc/ascend-inference/ray-auth-token"]


def test_ray_left_from_an_earlier_launcher_is_stopped_and_removed():
    worker = node(WORKER)
    worker.check_output("printf '[Service]\\nExecStart=/bin/sleep infinity\\n[Install]\\nWantedBy=multi-user.target\\n'"
                        " > /etc/systemd/system/ascend-ray.service && systemctl daemon-reload"
                        " && systemctl enable --now ascend-ray.service"
                        " && touch /etc/ascend-inference/ray.env && install -m 0600 /dev/null /etc/ascend-inference/ray-auth-token")
    assert worker.service("ascend-ray.service").is_running
    serve_pids = {name: main_pid(node(name), "ascend-serve.service") for name in (HEAD, WORKER)}
    code, out = playbook("deploy.yml", "--tags", "ray")
    assert code == 0, out[-3000:]
    # One changed step on the worker, which stopped and disabled the unit and removed the three files.
    assert recap(out) == {HEAD: 0, WORKER: 1}, out[-3000:]
    for line in ["ascend-ray.service stopped", "ascend-ray.service disabled"] + ["%s removed" % path for path in LEFT]:
        assert "%s: %s" % (WORKER, line) in out, out[-3000:]
    assert not worker.service("ascend-ray.service").is_running
    assert worker.check_output("systemctl show -p LoadState --value ascend-ray.service") == "not-found"
    for path in LEFT:
        assert not worker.file(path).exists, path
    # Serve was not touched.
    assert {name: main_pid(node(name), "ascend-serve.service") for name in (HEAD, WORKER)} == serve_pids
