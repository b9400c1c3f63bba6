"""Helpers shared by the serve scenarios' testinfra tests (test harness only)."""

import json
import math
import os
import re
import subprocess
import sys
import time

import testinfra

INVENTORY = os.environ["MOLECULE_INVENTORY_FILE"]
PROJECT = os.environ.get("MOLECULE_PROJECT_DIRECTORY", os.getcwd())
sys.path.insert(0, os.path.join(PROJECT, "collections"))
# The served models' backends are named by the plan's prefix, not spelled here again.
from ansible_collections.ascend.inference.plugins.module_utils.plan.router import REPLICA_BACKEND_PREFIX  # noqa: E402
PORT = 8000


def node(name):
    return testinfra.get_host("podman://" + name)


def address_of(host):
    return re.search(r"inet (\d+\.\d+\.\d+\.\d+)/", host.check_output("ip -4 -o addr show scope global")).group(1)


def playbook(name, *extra, timeout=900, on_line=None):
    """Run one of the collection's playbooks on the scenario's nodes: (rc, output). on_line, if given, is called
    with each line of output as it is printed (to act when a task starts)."""
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(PROJECT, "collections"),
               ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    argv = ["ansible-playbook", os.path.join(PROJECT, "playbooks", name), "-i", INVENTORY] + list(extra)
    if on_line is None:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False, env=env)
        return proc.returncode, proc.stdout + proc.stderr
    lines, deadline = [], time.time() + timeout
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env) as proc:
        for line in proc.stdout:
            lines.append(line)
            on_line(line)
            if time.time() > deadline:
                proc.kill()
                raise subprocess.TimeoutExpired(argv, timeout, "".join(lines))
        return proc.wait(), "".join(lines)


def recap(out):
    """{node: changed count} from a play recap; the controller's own play (playbooks/cluster_group.yml, an assert on
    localhost that changes nothing) is left out."""
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\S+)\s+: ok=\d+\s+changed=(\d+)", out, re.M)
            if m.group(1) != "localhost"}


def rolled(out):
    """The steps of each replica's rolling restart in a run's output (roles/serve/tasks/rolling.yml's task names), in
    order: drain, maintenance, back."""
    return [m.group(1).split()[-1].lower() for m in re.finditer(
        r"TASK \[ascend\.inference\.serve : (Drain|Put the instance in maintenance|Put the instance back)", out)]


def main_pid(host, unit):
    return int(host.check_output("systemctl show -p MainPID --value %s" % unit))


def restarts(host, unit):
    return int(host.check_output("systemctl show -p NRestarts --value %s" % unit))


def serve_process(host):
    """The running serve process: (argv without the interpreter, environment)."""
    pid = main_pid(host, "ascend-serve.service")
    assert pid > 0, "ascend-serve.service is not running on %s" % host.backend.name
    argv = host.file("/proc/%d/cmdline" % pid).content_string.rstrip("\0").split("\0")
    environ = host.check_output("tr '\\0' '\\n' < /proc/%d/environ" % pid)
    env = dict(line.split("=", 1) for line in environ.splitlines() if "=" in line)
    # The doubles are Python scripts: the kernel puts the interpreter first.
    return argv[1:] if os.path.basename(argv[0]).startswith("python") else argv, env


def flags(argv):
    """{--flag: value or True} of a serve argv (every option used here takes one value or none)."""
    found, i = {}, 0
    while i < len(argv):
        if argv[i].startswith("--"):
            if i + 1 < len(argv) and not argv[i + 1].startswith("--"):
                found[argv[i]] = argv[i + 1]
                i += 2
                continue
            found[argv[i]] = True
        i += 1
    return found


def request(host, url, body=None, key=None, host_header=None):
    """HTTP from a node with curl: (status, parsed JSON body or text)."""
    args = ["curl", "-s", "-o", "/tmp/answer", "-w", "%{http_code}", "--max-time", "60"]
    if host_header:
        args += ["-H", "Host: %s" % host_header]
    if key:
        args += ["-H", "Authorization: Bearer %s" % key]
    if body is not None:
        args += ["-H", "Content-Type: application/json", "-d", json.dumps(body)]
    status = host.run(" ".join("'%s'" % a.replace("'", "'\\''") for a in args + [url])).stdout.strip()
    text = host.file("/tmp/answer").content_string if host.file("/tmp/answer").exists else ""
    try:
        return int(status or 0), json.loads(text)
    except ValueError:
        return int(status or 0), text


def completion(host, api_ip, model, key=None):
    status, answer = request(host, "http://%s:%d/v1/completions" % (api_ip, PORT),
                             {"model": model, "prompt": "I am", "max_tokens": 120, "temperature": 0}, key)
    assert status == 200, answer
    assert answer["model"] == model and answer["choices"][0]["text"].strip(), answer
    return answer["choices"][0]["text"]


def wait_healthy(host, api_ip, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if request(host, "http://%s:%d/health" % (api_ip, PORT))[0] == 200:
            return
        time.sleep(2)
    raise AssertionError("http://%s:%d/health not 200 after %d s" % (api_ip, PORT, seconds))


def reboot(name):
    """podman restart: the node's processes end and systemd boots again (the enabled units start)."""
    subprocess.run(["podman", "restart", "--time", "5", name], check=True, capture_output=True, timeout=120)


def recovered(host, api_ip, model, seconds, key=None):
    """The seconds until a 4-token completion from HOST through API_IP answers 200, at most SECONDS."""
    began = time.time()
    while True:
        status, answer = request(host, "http://%s:%d/v1/completions" % (api_ip, PORT),
                                 {"model": model, "prompt": "I am", "max_tokens": 4}, key)
        if status == 200:
            return time.time() - began
        assert time.time() - began < seconds, "no completion %d s after the restart: %s" % (seconds, answer)
        time.sleep(3)


def watchdog_answered(head, seconds, state_file="/run/ascend-watchdog.json"):
    """Wait, at most SECONDS, for a round of the head's serve watchdog in which every DP rank answered (what
    status.yml then reports)."""
    deadline = time.time() + seconds
    while True:
        found = head.run("cat %s" % state_file)
        state = json.loads(found.stdout) if found.rc == 0 and found.stdout.strip() else {}
        if state.get("healthy_since") and not state.get("unanswered"):
            return state
        assert time.time() < deadline, "no round of the watchdog answered in %d s: %s" % (seconds, state)
        time.sleep(1)


DASHBOARD = os.path.join(PROJECT, "roles", "monitoring", "files", "ascend-inference-dashboard.json")


def router_rows(host):
    """The replicas' rows of HAProxy's show stat on HOST (read in the node through the router's runtime API): each
    a dict of its columns (svname, status, check_status, check_duration, ...)."""
    text = host.check_output(
        "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('/run/ascend-router/admin.sock'); "
        "s.sendall(b'show stat\\n'); print(s.makefile().read())\"")
    lines = [line for line in text.splitlines() if line.strip()]
    header = lines[0][2:].split(",")
    rows = [dict(zip(header, line.split(","))) for line in lines[1:]]
    # The served models' backends, not the engines' metrics.
    return [row for row in rows
            if row["svname"] not in ("FRONTEND", "BACKEND") and row["pxname"].startswith(REPLICA_BACKEND_PREFIX)]


def router_status(host):
    """{server: status} as the router on HOST gives it."""
    return dict((row["svname"], row["status"]) for row in router_rows(host))


def empty_dashboard_panels(query):
    """(panel title, expression) of every dashboard query (variables set to all) that QUERY, Prometheus' instant
    query, answers with no number."""
    with open(DASHBOARD) as handle:
        board = json.load(handle)
    missing = []
    for panel in board["panels"]:
        for target in panel["targets"]:
            expr = target["expr"].replace("$instance", ".*").replace("$node", ".*")
            values = [float(series["value"][1]) for series in query(expr)]
            if not [value for value in values if not math.isnan(value)]:
                missing.append((panel["title"], expr))
    return missing
