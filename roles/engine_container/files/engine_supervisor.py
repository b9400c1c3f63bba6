"""The engine container's main process: runs Ray and serve from process specs and keeps them running.

    engine_supervisor.py SPEC_DIR          run (the container's main process)
    engine_supervisor.py restart NAME...   ask the running supervisor to restart processes (returns once
                                           the old ones are gone)
    engine_supervisor.py status            print the processes' state as JSON

Run by the image's python3 (standard library only). Each SPEC_DIR/*.json is one process (written by
the ascend.inference roles): "name", "argv", "env", "env_files" (NAME="value" files as the
collection writes them: the secrets, read at every start and never passed on a command line),
"source" (the image's CANN set_env.sh scripts, loaded first), "restart_sec", "after" (processes it
needs: it starts after them and restarts with them), "stop_argv" and "stop_timeout".

- A process that exits is started again after its restart_sec; whatever runs "after" it restarts
  with it (the engine is a Ray driver: a new Ray takes it down).
- SIGHUP (systemctl reload): read the specs again; start new ones, stop removed ones, restart those
  whose spec or env files changed, and those asked for by `restart`.
- SIGTERM (systemctl stop, podman stop): stop the dependents first, each with its stop_argv (e.g.
  `ray stop`) or SIGTERM, then SIGKILL after its stop_timeout; exit 0.
- Every line a process prints reaches the container's output, prefixed with its name: the unit's
  journal. As PID 1 it also reaps the orphans Ray leaves.
"""

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time

STATE_DIR = os.environ.get("ASCEND_ENGINE_STATE", "/run/ascend-engine")
STATUS = os.path.join(STATE_DIR, "status.json")
REQUESTS = os.path.join(STATE_DIR, "restart-requests")
PID_FILE = os.path.join(STATE_DIR, "supervisor.pid")
OUTPUT = threading.Lock()


def say(message):
    with OUTPUT:
        sys.stdout.write("ascend-engine: %s\n" % message)
        sys.stdout.flush()


def read_env_file(path):
    """{NAME: value} of a NAME="value" file (backslash escapes inside double quotes), as the collection
    writes its environment files (plugins/module_utils/runtime/systemd.py); a missing file is empty."""
    found = {}
    try:
        with open(path) as handle:
            lines = handle.read().splitlines()
    except (IOError, OSError):
        return found
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        name, value = line.split("=", 1)
        if len(value) >= 2 and value[0] == value[-1] == '"':
            chars, i, inner = [], 0, value[1:-1]
            while i < len(inner):
                if inner[i] == "\\" and i + 1 < len(inner):
                    i += 1
                chars.append(inner[i])
                i += 1
            value = "".join(chars)
        found[name.strip()] = value
    return found


def sourced(script, env):
    """The environment after sourcing a shell script (CANN's set_env.sh) in ``env``: with bash, as the
    documents source it (the scripts may use bash's syntax), else sh."""
    for shell in ("bash", "sh"):
        try:
            proc = subprocess.run([shell, "-c", '. "$1" >/dev/null 2>&1 || exit 3; env -0', shell, script], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=False)
        except OSError:
            continue  # no such shell in the image
        if proc.returncode != 0:
            say("sourcing %s failed (%s, status %d): its variables are not set" % (script, shell, proc.returncode))
            return env
        pairs = [item.split(b"=", 1) for item in proc.stdout.split(b"\0") if b"=" in item]
        return dict((k.decode("utf-8", "replace"), v.decode("utf-8", "replace")) for k, v in pairs)
    say("no shell to source %s with" % script)
    return env


class Process(object):
    def __init__(self, spec, fingerprint):
        self.spec, self.fingerprint = spec, fingerprint
        self.popen = None
        self.restarts = 0
        self.start_at = 0.0  # when it may start (again)
        self.started_at = None
        self.last_exit = None
        self.stopping = False

    @property
    def name(self):
        return self.spec["name"]

    def running(self):
        return self.popen is not None

    def environment(self):
        env = dict(os.environ)
        for script in self.spec.get("source") or []:
            if os.path.isfile(script):
                env = sourced(script, env)
        env.update(self.spec.get("env") or {})
        for path in self.spec.get("env_files") or []:
            env.update(read_env_file(path))
        return env

    def start(self):
        try:
            self.popen = subprocess.Popen(self.spec["argv"], env=self.environment(), stdin=subprocess.DEVNULL,
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        except Exception as exc:  # pylint: disable=broad-except  # a bad spec must not end PID 1
            self.popen = None
            say("%s cannot start: %s; again in %s s" % (self.name, exc, self.spec.get("restart_sec", 10)))
            self.last_exit = "cannot start: %s" % exc
            self.start_at = time.time() + float(self.spec.get("restart_sec", 10))
            return
        self.started_at = time.time()
        say("%s started (pid %d): %s" % (self.name, self.popen.pid, " ".join(self.spec["argv"])))
        threading.Thread(target=self._copy_output, args=(self.popen.stdout,), daemon=True).start()

    def _copy_output(self, stream):
        for raw in iter(stream.readline, b""):
            with OUTPUT:
                sys.stdout.write("[%s] %s\n" % (self.name, raw.decode("utf-8", "replace").rstrip("\n")))
                sys.stdout.flush()
        stream.close()

    def exited(self, status):
        code = os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else status >> 8
        self.last_exit = code
        self.popen = None
        return code

    def stop(self, supervisor):
        """Stop and wait: stop_argv (or SIGTERM), then SIGKILL to the process group after stop_timeout."""
        if not self.running():
            return
        self.stopping = True
        pid = self.popen.pid
        say("stopping %s (pid %d)" % (self.name, pid))
        # One budget for the stop command and the wait after SIGTERM: the unit's stop time is the sum of
        # its processes' stop_timeout.
        deadline = time.time() + float(self.spec.get("stop_timeout", 30))
        if self.spec.get("stop_argv"):
            try:
                subprocess.run(self.spec["stop_argv"], env=self.environment(), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, timeout=max(1.0, deadline - time.time()), check=False)
            except (OSError, subprocess.TimeoutExpired):
                pass
        _signal_group(pid, signal.SIGTERM)
        while self.running() and time.time() < deadline:
            supervisor.reap()
            time.sleep(0.2)
        if self.running():
            say("%s did not stop within %s s: killing it" % (self.name, self.spec.get("stop_timeout", 30)))
            _signal_group(pid, signal.SIGKILL)
            while self.running():
                supervisor.reap()
                time.sleep(0.1)
        self.stopping = False


def _signal_group(pid, number):
    try:
        os.killpg(pid, number)
    except OSError:
        pass


def load_specs(spec_dir):
    """{name: (spec, fingerprint)}; the fingerprint covers the spec and its env files' contents."""
    found = {}
    for entry in sorted(os.listdir(spec_dir)) if os.path.isdir(spec_dir) else []:
        if not entry.endswith(".json"):
            continue
        path = os.path.join(spec_dir, entry)
        try:
            with open(path) as handle:
                text = handle.read()
            spec = json.loads(text)
            if not isinstance(spec, dict) or not spec.get("name") or not isinstance(spec.get("argv"), list):
                raise ValueError("not a process spec (name and argv)")
        except (IOError, OSError, ValueError) as exc:
            say("ignoring %s: %s" % (path, exc))
            continue
        digest = hashlib.sha256(text.encode("utf-8"))
        for env_file in spec.get("env_files") or []:
            try:
                with open(env_file, "rb") as handle:
                    digest.update(handle.read())
            except (IOError, OSError):
                digest.update(b"(missing)")
        found[spec["name"]] = (spec, digest.hexdigest())
    return found


class Supervisor(object):
    def __init__(self, spec_dir):
        self.spec_dir = spec_dir
        self.processes = {}
        self.reload_wanted = False
        self.stop_wanted = False

    def order(self, names):
        """``names``, each after the processes it needs."""
        done, result = set(), []

        def visit(name, path):
            if name in done or name in path or name not in self.processes:
                return
            for need in self.processes[name].spec.get("after") or []:
                visit(need, path + [name])
            done.add(name)
            result.append(name)
        for name in sorted(names):
            visit(name, [])
        return [name for name in result if name in names]

    def dependents(self, name):
        """Every process that runs after ``name``, directly or not."""
        found = set()
        for other in self.processes.values():
            if name in (other.spec.get("after") or []):
                found |= set([other.name]) | self.dependents(other.name)
        return found

    def reap(self):
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            for process in self.processes.values():
                if process.running() and process.popen.pid == pid:
                    process.popen.returncode = status  # so that Popen never waits for it again
                    code = process.exited(status)
                    if not process.stopping and not self.stop_wanted:
                        delay = float(process.spec.get("restart_sec", 10))
                        say("%s exited with status %s; starting it again in %g s" % (process.name, code, delay))
                        process.restarts += 1
                        process.start_at = time.time() + delay
                        self.restart(self.dependents(process.name), "%s exited" % process.name)
                    self.write_status()

    def restart(self, names, why):
        for name in reversed(self.order(names)):
            process = self.processes[name]
            if process.running():
                say("restarting %s: %s" % (name, why))
                process.stop(self)
                process.restarts += 1
            process.start_at = max(process.start_at, time.time())

    def reload(self):
        wanted = load_specs(self.spec_dir)
        for name in [n for n in self.order(self.processes) if n not in wanted][::-1]:
            say("%s is no longer configured" % name)
            self.processes[name].stop(self)
            del self.processes[name]
        changed = set()
        for name, (spec, fingerprint) in wanted.items():
            if name not in self.processes:
                self.processes[name] = Process(spec, fingerprint)
            elif self.processes[name].fingerprint != fingerprint:
                self.processes[name].spec, self.processes[name].fingerprint = spec, fingerprint
                changed.add(name)
        asked = set(n for n in _take_requests() if n in self.processes)
        for name in changed | asked:
            changed |= self.dependents(name)
        if changed | asked:
            self.restart(changed | asked, "its configuration changed or a restart was asked for")
        self.write_status()

    def start_due(self):
        now = time.time()
        for name in self.order(self.processes):
            process = self.processes[name]
            needs = [self.processes.get(n) for n in process.spec.get("after") or []]
            if not process.running() and process.start_at <= now and all(n and n.running() for n in needs):
                process.start()
                self.write_status()

    def stop_all(self):
        for name in reversed(self.order(self.processes)):
            self.processes[name].stop(self)
        self.write_status()

    def write_status(self):
        state = {}
        for name, process in self.processes.items():
            state[name] = {"state": "running" if process.running() else "waiting",
                           "pid": process.popen.pid if process.running() else None,
                           "restarts": process.restarts, "started_at": process.started_at,
                           "last_exit": process.last_exit}
        try:
            os.makedirs(STATE_DIR, exist_ok=True)
            with open(STATUS + ".tmp", "w") as handle:
                json.dump(state, handle, sort_keys=True)
            os.replace(STATUS + ".tmp", STATUS)
        except OSError:
            pass

    def run(self):
        signal.signal(signal.SIGHUP, lambda *_: setattr(self, "reload_wanted", True))
        for number in (signal.SIGTERM, signal.SIGINT):
            signal.signal(number, lambda *_: setattr(self, "stop_wanted", True))
        say("supervising the processes of %s (pid %d)" % (self.spec_dir, os.getpid()))
        os.makedirs(STATE_DIR, exist_ok=True)
        with open(PID_FILE, "w") as handle:
            handle.write("%d\n" % os.getpid())
        self.reload()
        while not self.stop_wanted:
            if self.reload_wanted:
                self.reload_wanted = False
                say("reloading %s" % self.spec_dir)
                self.reload()
            self.reap()
            if not self.stop_wanted:
                self.start_due()
            time.sleep(0.2)
        say("stopping")
        self.stop_all()
        return 0


def _take_requests():
    names = []
    try:
        entries = os.listdir(REQUESTS)
    except OSError:
        return names
    for entry in entries:
        names.append(entry)
        try:
            os.remove(os.path.join(REQUESTS, entry))
        except OSError:
            pass
    return names


def _status():
    try:
        with open(STATUS) as handle:
            return json.load(handle)
    except (IOError, OSError, ValueError):
        return {}


def ask_restart(names, timeout=300):
    """Ask for a restart and wait until each named process was stopped (a new pid, or none yet), as
    `systemctl restart` returns once the old process is gone."""
    before = dict((name, (_status().get(name) or {}).get("pid")) for name in names)
    os.makedirs(REQUESTS, exist_ok=True)
    for name in names:
        open(os.path.join(REQUESTS, os.path.basename(name)), "w").close()
    with open(PID_FILE) as handle:
        os.kill(int(handle.read()), signal.SIGHUP)
    deadline = time.time() + timeout
    while time.time() < deadline:
        now = _status()
        if all(before[name] is None or (now.get(name) or {}).get("pid") != before[name] for name in names):
            return 0
        time.sleep(0.2)
    sys.stderr.write("%s not restarted within %d s\n" % (", ".join(names), timeout))
    return 1


def main(argv):
    if argv[:1] == ["restart"] and len(argv) > 1:
        return ask_restart(argv[1:])
    if argv == ["status"]:
        sys.stdout.write(json.dumps(_status(), sort_keys=True) + "\n")
        return 0
    if len(argv) != 1 or argv[0] in ("restart", "status"):
        sys.stderr.write(__doc__)
        return 2
    return Supervisor(argv[0]).run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
