"""The engine container's supervisor (roles/engine_container/files/engine_supervisor.py), run for real.

Two stand-in processes ("ray" and "serve", which runs after it) are small Python programs that write
their pid and environment to files and sleep; the tests kill, reconfigure and stop them as the units
and the roles do, and read what the supervisor did from those files, its status file and its output.
"""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import REPO

SUPERVISOR = os.path.join(REPO, "roles", "engine_container", "files", "engine_supervisor.py")
CHILD = r'''
import json, os, sys, time
name, out = sys.argv[1], sys.argv[2]
with open(os.path.join(out, name + ".%d" % os.getpid()), "w") as handle:
    json.dump({k: v for k, v in os.environ.items() if k.startswith(("SIM_", "CANN_", "SECRET"))}, handle)
print("%s says hello" % name, flush=True)
while True:
    time.sleep(1)
'''


def wait_for(predicate, seconds=20):
    deadline = time.time() + seconds
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("condition not met within %d s" % seconds)


class Engine(object):
    def __init__(self, tmp_path):
        self.tmp = tmp_path
        self.specs = tmp_path / "specs"
        self.out = tmp_path / "out"
        self.state = tmp_path / "state"
        for directory in (self.specs, self.out):
            directory.mkdir()
        (tmp_path / "child.py").write_text(CHILD)
        (tmp_path / "set_env.sh").write_text('export CANN_HOME=/usr/local/Ascend/cann\nexport SIM_ORDER="from-cann"\n')
        (tmp_path / "secrets.env").write_text('SECRET_TOKEN="a \\"quoted\\" \\$value"\n')
        self.log = open(str(tmp_path / "output.log"), "w")
        self.proc = None

    def write(self, name, after=(), env=None, stop_argv=None, restart_sec=1):
        spec = {"name": name, "argv": [sys.executable, str(self.tmp / "child.py"), name, str(self.out)],
                "env": dict({"SIM_NAME": name, "SIM_ORDER": "from-spec"}, **(env or {})),
                "env_files": [str(self.tmp / "secrets.env")], "source": [str(self.tmp / "set_env.sh")],
                "restart_sec": restart_sec, "after": list(after), "stop_argv": stop_argv, "stop_timeout": 5}
        (self.specs / (name + ".json")).write_text(json.dumps(spec))

    def start(self):
        self.proc = subprocess.Popen([sys.executable, SUPERVISOR, str(self.specs)], stdout=self.log,
                                     stderr=subprocess.STDOUT, env=dict(os.environ, ASCEND_ENGINE_STATE=str(self.state)))

    def pids(self, name):
        return sorted(int(p.name.split(".")[1]) for p in self.out.iterdir() if p.name.startswith(name + "."))

    def alive(self, name):
        return [pid for pid in self.pids(name) if os.path.exists("/proc/%d" % pid)
                and "zombie" not in open("/proc/%d/status" % pid).read()]

    def env_of(self, name, pid):
        return json.loads((self.out / ("%s.%d" % (name, pid))).read_text())

    def status(self):
        return json.loads((self.state / "status.json").read_text())

    def output(self):
        return (self.tmp / "output.log").read_text()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=30)
        self.log.close()


@pytest.fixture
def engine(tmp_path):
    running = Engine(tmp_path)
    yield running
    running.stop()
    for name in ("ray", "serve"):
        for pid in running.alive(name):
            os.kill(pid, signal.SIGKILL)


def test_starts_in_order_with_the_environment_and_prefixed_output(engine):
    engine.write("serve", after=["ray"])
    engine.write("ray")
    engine.start()
    wait_for(lambda: engine.alive("ray") and engine.alive("serve"))
    ray, serve = engine.alive("ray")[0], engine.alive("serve")[0]
    assert ray < serve or engine.pids("ray")[0] < engine.pids("serve")[0]  # ray first
    env = engine.env_of("serve", serve)
    # The image's CANN script first, then the spec's variables, then the secrets file (its escapes read back).
    assert env == {"SIM_NAME": "serve", "SIM_ORDER": "from-spec", "CANN_HOME": "/usr/local/Ascend/cann",
                   "SECRET_TOKEN": 'a "quoted" $value'}
    wait_for(lambda: "[serve] serve says hello" in engine.output() and "[ray] ray says hello" in engine.output())
    assert "a \"quoted\"" not in engine.output()  # secrets are never printed
    assert engine.status()["serve"]["state"] == "running" and engine.status()["serve"]["pid"] == serve


def test_a_process_that_dies_comes_back_and_takes_its_dependents_with_it(engine):
    engine.write("ray")
    engine.write("serve", after=["ray"])
    engine.start()
    wait_for(lambda: engine.alive("ray") and engine.alive("serve"))
    first_ray, first_serve = engine.alive("ray")[0], engine.alive("serve")[0]
    os.kill(first_ray, signal.SIGKILL)
    wait_for(lambda: [p for p in engine.alive("ray") if p != first_ray] and
             [p for p in engine.alive("serve") if p != first_serve])
    assert first_serve not in engine.alive("serve")  # the driver restarted with Ray
    assert "ray exited with status -9; starting it again in 1 s" in engine.output()
    wait_for(lambda: engine.status()["ray"]["restarts"] == 1 and engine.status()["ray"]["state"] == "running")
    # A dependent dying alone restarts alone.
    ray_now, serve_now = engine.alive("ray")[0], engine.alive("serve")[0]
    os.kill(serve_now, signal.SIGTERM)
    wait_for(lambda: [p for p in engine.alive("serve") if p != serve_now])
    assert engine.alive("ray") == [ray_now]


def test_reload_restarts_only_what_changed_and_what_was_asked_for(engine):
    engine.write("ray")
    engine.write("serve", after=["ray"])
    engine.start()
    wait_for(lambda: engine.alive("ray") and engine.alive("serve"))
    ray, serve = engine.alive("ray")[0], engine.alive("serve")[0]
    # Nothing changed: a reload restarts nothing.
    engine.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: engine.output().count("reloading") == 1)
    time.sleep(1)
    assert engine.alive("ray") == [ray] and engine.alive("serve") == [serve]
    # serve's spec changes: serve alone restarts, with its new environment.
    engine.write("serve", after=["ray"], env={"SIM_NEW": "1"})
    engine.proc.send_signal(signal.SIGHUP)
    new_serve = wait_for(lambda: [p for p in engine.alive("serve") if p != serve])[0]
    assert engine.env_of("serve", new_serve)["SIM_NEW"] == "1" and engine.alive("ray") == [ray]
    # The secrets file changes: both use it, both restart (Ray first).
    (engine.tmp / "secrets.env").write_text('SECRET_TOKEN="rotated"\n')
    engine.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: [p for p in engine.alive("ray") if p != ray] and
             [p for p in engine.alive("serve") if p != new_serve])
    newest = engine.alive("serve")[0]
    assert engine.env_of("serve", newest)["SECRET_TOKEN"] == "rotated"
    # `restart serve`, as restart.yml runs it through podman exec: serve alone.
    ray = engine.alive("ray")[0]
    subprocess.run([sys.executable, SUPERVISOR, "restart", "serve"], check=True,
                   env=dict(os.environ, ASCEND_ENGINE_STATE=str(engine.state)))
    wait_for(lambda: [p for p in engine.alive("serve") if p != newest])
    assert engine.alive("ray") == [ray]
    # A removed spec stops its process.
    (engine.specs / "serve.json").unlink()
    engine.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: not engine.alive("serve"))
    assert "serve is no longer configured" in engine.output() and engine.alive("ray") == [ray]


def test_sigterm_stops_dependents_first_with_the_stop_command_and_exits_zero(engine, tmp_path):
    marker = tmp_path / "stopped-by"
    engine.write("ray", stop_argv=[sys.executable, "-c", "open(%r, 'a').write('ray stop\\n')" % str(marker)])
    engine.write("serve", after=["ray"])
    engine.start()
    wait_for(lambda: engine.alive("ray") and engine.alive("serve"))
    engine.proc.send_signal(signal.SIGTERM)
    assert engine.proc.wait(timeout=30) == 0
    assert not engine.alive("ray") and not engine.alive("serve")
    assert marker.read_text() == "ray stop\n"
    output = engine.output()
    assert output.index("stopping serve") < output.index("stopping ray")


def test_usage_errors_name_the_commands(tmp_path):
    proc = subprocess.run([sys.executable, SUPERVISOR], capture_output=True, text=True, check=False)
    assert proc.returncode == 2 and "restart NAME" in proc.stderr


def test_bad_specs_are_reported_and_the_supervisor_lives_on(engine):
    engine.write("ray")
    (engine.specs / "broken.json").write_text("[1, 2]")
    (engine.specs / "serve.json").write_text(json.dumps({"name": "serve", "argv": ["true"], "env": {"X": None}}))
    (engine.tmp / "set_env.sh").write_text("exit 7\n")  # a CANN script that fails
    engine.start()
    wait_for(lambda: engine.alive("ray"))
    wait_for(lambda: "serve cannot start" in engine.output())
    output = engine.output()
    assert "ignoring %s: not a process spec" % (engine.specs / "broken.json") in output
    assert "sourcing %s failed (bash, status 7)" % (engine.tmp / "set_env.sh") in output
    assert engine.proc.poll() is None
