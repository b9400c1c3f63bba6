"""systemd reads back every argument the collection writes into a unit's ExecStart= unchanged.

The unit templates render argv with the systemd_command_line filter (plugins/module_utils/systemd.py);
here that function writes a unit on a node with a real systemd, whose process reports the argv it got.
"""

import importlib.util
import json
import os


HERE = os.path.dirname(os.path.abspath(__file__))
testinfra_hosts = ["podman://sim-head"]
# Values an inventory may hold (control characters are refused by the planner, tests/unit).
HOSTILE = [
    "quote \" and ' both", "back\\slash", "\\\"", "\\", "x\\", "'", "\"", "", " leading and trailing ",
    "%H %% %n %", "$HOME ${HOME} $$ $", "$(touch /tmp/pwned)", "`touch /tmp/pwned`", ";", "a;b", "\\;",
    "{% for m in messages %}{{ m['content'] }}\\n{% endfor %}", "{\"json\": [1, \"x\"]}", "ünïcödé ✓ 模型",
    "--flag=value with spaces", "-",
]
REPORT = "import json, sys; open('/tmp/argv.json', 'w').write(json.dumps(sys.argv[1:]))"


def command_line(argv):
    spec = importlib.util.spec_from_file_location(
        "systemd_quoting", os.path.join(HERE, "..", "..", "..", "plugins", "module_utils", "systemd.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.command_line(argv)


def test_systemd_passes_every_hostile_argument_unchanged(host):
    # A failing ExecStartPre with systemd's "-" prefix before a quoted path, as the serve unit writes it.
    unit = "[Service]\nType=oneshot\nExecStartPre=-%s\nExecStart=%s\n" % (
        command_line(["/bin/false", "ignored"]), command_line(["/usr/bin/python3", "-c", REPORT] + HOSTILE))
    host.check_output("rm -f /tmp/argv.json /tmp/pwned")
    # The unit text through a file: no shell sees it on its way.
    host.check_output("cat > /etc/systemd/system/ascend-argv-probe.service <<'UNIT_EOF'\n%sUNIT_EOF" % unit)
    try:
        host.check_output("systemctl daemon-reload && systemctl start ascend-argv-probe.service")
        assert json.loads(host.file("/tmp/argv.json").content_string) == HOSTILE
        assert not host.file("/tmp/pwned").exists
        assert host.run("systemd-analyze verify /etc/systemd/system/ascend-argv-probe.service").rc == 0
    finally:
        host.run("rm -f /etc/systemd/system/ascend-argv-probe.service && systemctl daemon-reload")


def test_the_collections_units_use_it():
    """Both unit templates render ExecStart through the filter (so the test above covers them)."""
    for template in ("roles/serve/templates/ascend-serve.service.j2",
                     "roles/ray_cluster/templates/ascend-ray.service.j2"):
        with open(os.path.join(HERE, "..", "..", "..", template)) as handle:
            text = handle.read()
        assert "ascend.inference.systemd_command_line" in text and "map('quote')" not in text, template
