"""Last: teardown leaves nothing running, and status says so (runs after test_serve_ray_dp.py)."""

import testinfra.utils.ansible_runner

from serve_checks import INVENTORY, node, playbook

HOSTS = testinfra.utils.ansible_runner.AnsibleRunner(INVENTORY).get_hosts("all")
testinfra_hosts = ["podman://dp-head"]


def test_teardown_stops_everything_and_keeps_the_units():
    units = {name: [unit for unit in ("ascend-ray.service", "ascend-serve.service")
                    if node(name).file("/etc/systemd/system/" + unit).exists] for name in HOSTS}
    assert units == {"dp-head": ["ascend-ray.service", "ascend-serve.service"], "dp-worker": ["ascend-ray.service"]}
    code, out = playbook("teardown.yml")
    assert code == 0, out[-3000:]
    for name in HOSTS:
        host = node(name)
        for unit in units[name]:
            assert host.run("systemctl is-active %s" % unit).stdout.strip() == "inactive", (name, unit)
            # Units stay (docs/operations.md): disabled, not deleted (a deleted unit answers with no state at all).
            assert host.run("systemctl is-enabled %s" % unit).stdout.strip() == "disabled", (name, unit)
            assert host.file("/etc/systemd/system/" + unit).exists
        # [x]: the pattern must not match the shell that runs pgrep.
        assert host.run("pgrep -f '[r]aylet|[g]cs_server|[v]llm-mindspore'").rc == 1
        assert not [line for line in host.check_output("ss -ltnH").splitlines()
                    if line.split()[3].endswith((":6379", ":8000"))]


def test_status_then_reports_what_is_down():
    code, out = playbook("status.yml")
    assert code != 0
    assert "dp-head: ascend-ray.service is not active" in out
    assert "dp-head: ascend-serve.service is not active" in out
    assert "dp-worker: ascend-ray.service is not active" in out
