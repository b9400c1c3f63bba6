"""systemd reads back every argument the collection writes into a unit's ExecStart= unchanged, and
systemd and a POSIX shell both read back every value it writes into an environment file.

The unit templates render argv with the systemd_command_line filter, the environment files with the
environment_file filter (both plugins/module_utils/runtime/systemd.py); here those functions write a unit and an
environment file on a node with a real systemd, whose processes report what they got.
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


DUMP_ENV = ("import json, os; open('/tmp/env.json', 'w').write(json.dumps("
            "[os.environ.get('V%d' % i) for i in range(int(os.environ['COUNT']))]))")


def quoting():
    spec = importlib.util.spec_from_file_location(
        "systemd_quoting", os.path.join(HERE, "..", "..", "..", "plugins", "module_utils", "runtime", "systemd.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def command_line(argv):
    return quoting().command_line(argv)


def write(host, path, text):
    # Through a quoted here-document: no shell sees the text on its way.
    host.check_output("cat > %s <<'PROBE_EOF'\n%sPROBE_EOF" % (path, text))


def test_systemd_and_the_shell_read_every_hostile_environment_value_unchanged(host):
    variables = dict(("V%d" % i, value) for i, value in enumerate(HOSTILE))
    variables["COUNT"] = len(HOSTILE)
    write(host, "/tmp/probe.env", quoting().environment_file(variables))
    unit = "[Service]\nType=oneshot\nEnvironmentFile=/tmp/probe.env\nExecStart=%s\n" % command_line(
        ["/usr/bin/python3", "-c", DUMP_ENV])
    write(host, "/etc/systemd/system/ascend-env-probe.service", unit)
    host.check_output("rm -f /tmp/env.json /tmp/pwned")
    try:
        host.check_output("systemctl daemon-reload && systemctl start ascend-env-probe.service")
        assert json.loads(host.file("/tmp/env.json").content_string) == HOSTILE
        # The profile snippet's way: set -a and source it.
        host.check_output("rm /tmp/env.json && sh -c 'set -a; . /tmp/probe.env; exec python3 -c \"$0\"' %s"
                          % quote_for_sh(DUMP_ENV))
        assert json.loads(host.file("/tmp/env.json").content_string) == HOSTILE
        assert not host.file("/tmp/pwned").exists
    finally:
        host.run("rm -f /etc/systemd/system/ascend-env-probe.service /tmp/probe.env && systemctl daemon-reload")


def quote_for_sh(text):
    return "'%s'" % text.replace("'", "'\\''")


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
    """Every unit's command lines are quoted by it (plugin_utils/phases/backends.command_line) and the templates only render them
    (so the test above covers them)."""
    root = os.path.join(HERE, "..", "..", "..")
    for template in ("roles/serve/templates/ascend-serve.service.j2",
                     "roles/ray_cluster/templates/ascend-ray.service.j2",
                     "roles/engine_container/templates/ascend-engine.service.j2"):
        with open(os.path.join(root, template)) as handle:
            text = handle.read()
        assert "ExecStart={{ exec_start }}" in text and "|" not in text.split("ExecStart=")[1].split("\n")[0], template
    phases = os.path.join(root, "plugins", "plugin_utils", "phases")
    with open(os.path.join(phases, "backends.py")) as handle:
        assert "systemd.command_line(argv)" in handle.read()
    for phase in ("ray.py", "serve.py", "backends.py"):
        with open(os.path.join(phases, phase)) as handle:
            text = handle.read()
        assert '"exec_start": backends.command_line(' in text or '"exec_start": command_line(' in text, phase
