"""Print the Ray cluster's alive nodes as JSON: [{"ip": ..., "npus": ..., "node_id": ...}].

Usage: cluster_nodes.py HEAD_IP:PORT [RAY_UNIT] [--until NODES NPUS SECONDS], as root on a node of the
cluster (the roles pass the plan's Ray unit, cluster.units.ray; by hand it defaults to ascend-ray.service).
With --until it asks Ray every second until NODES nodes with NPUS NPUs are alive or SECONDS have passed,
then prints what it saw: the barrier waits with one Python and one `import ray` every few seconds instead
of one per look, which on a busy node slows Ray's own start. Fails within seconds when nothing listens
there (ray.init would keep retrying a stopped cluster's address). The JSON is the only thing on stdout:
Ray's own messages (for example its warning about a dead raylet, which it prints to stdout) go to stderr.

A driver attaches to its node's raylet through the sockets in /tmp/ray, which
a confined Ray unit keeps in its private /tmp: the probe then runs
again in a transient unit that joins that /tmp (JoinsNamespaceOf=; nsenter
would need CAP_SYS_PTRACE, which container nodes lack).
"""
import json
import os
import socket
import subprocess
import sys
import time

UNTIL = sys.argv.index("--until") if "--until" in sys.argv else None
POSITIONAL = sys.argv[1:UNTIL] if UNTIL else sys.argv[1:]
UNIT = POSITIONAL[1] if len(POSITIONAL) > 1 else "ascend-ray.service"
INSIDE = "ASCEND_PROBE_IN_RAY_NAMESPACE"
SECRET = "RAY_AUTH_TOKEN"


def enter_rays_namespace():
    """Re-run this probe in a transient unit that joins the local Ray unit's private /tmp, when it has one."""
    if os.environ.get(INSIDE):
        return
    try:
        shown = subprocess.run(["systemctl", "show", "-p", "PrivateTmp", "-p", "ActiveState", UNIT],
                               capture_output=True, text=True, check=False).stdout.split()
    except OSError:
        return  # no systemd here
    if "PrivateTmp=yes" not in shown or "ActiveState=active" not in shown:
        return  # /tmp/ray, if any, is in our /tmp
    # A token itself would be on systemd-run's command line and in the transient unit's Environment=
    # (systemctl show): only its path goes in.
    if os.environ.get(SECRET) and not os.environ.get("RAY_AUTH_TOKEN_PATH"):
        sys.exit("%s runs its Ray in a private /tmp: give the probe the token as RAY_AUTH_TOKEN_PATH, "
                 "not %s" % (UNIT, SECRET))
    settings = ["--setenv=%s=%s" % (name, value) for name, value in sorted(os.environ.items())
                if name.startswith("RAY_") and name != SECRET] + ["--setenv=%s=1" % INSIDE]
    try:
        os.execvp("systemd-run", ["systemd-run", "--wait", "--pipe", "--quiet", "--collect",
                                  "--property=PrivateTmp=yes", "--property=JoinsNamespaceOf=" + UNIT]
                  + settings + [sys.executable] + sys.argv)
    except OSError as exc:
        sys.exit("%s keeps Ray's sockets in a private /tmp, which only systemd-run can join: %s" % (UNIT, exc))


# Before the descriptors change: the probe may start again in Ray's namespace.
enter_rays_namespace()

# fd 1 becomes stderr for Ray (its C++ core writes to the descriptor, not to sys.stdout).
result = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)
sys.stdout = sys.stderr

address = POSITIONAL[0]
host, port = address.rsplit(":", 1)
try:
    socket.create_connection((host, int(port)), timeout=5).close()
except OSError as exc:
    sys.exit("no Ray head answers at %s: %s" % (address, exc))

import ray  # noqa: E402  (slow to import; only once the head answers)

ray.init(address=address, logging_level="ERROR")


def alive():
    # node_id tells a raylet that registered again from the one it replaced (same IP).
    return [{"ip": node["NodeManagerAddress"], "npus": node["Resources"].get("NPU", 0), "node_id": node["NodeID"]}
            for node in ray.nodes() if node["Alive"]]


found = alive()
if UNTIL:
    nodes, npus, seconds = int(sys.argv[UNTIL + 1]), float(sys.argv[UNTIL + 2]), float(sys.argv[UNTIL + 3])
    deadline = time.monotonic() + seconds
    while (len(found) < nodes or sum(node["npus"] for node in found) < npus) and time.monotonic() < deadline:
        time.sleep(1)
        found = alive()
result.write(json.dumps(found) + "\n")
result.flush()
