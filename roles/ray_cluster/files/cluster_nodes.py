"""Print the Ray cluster's alive nodes as JSON: [{"ip": ..., "npus": ..., "node_id": ...}].

Usage: cluster_nodes.py HEAD_IP:PORT. Fails within seconds when nothing
listens there (ray.init would keep retrying a stopped cluster's address).
The JSON is the only thing on stdout: Ray's own messages (for example its
warning about a dead raylet, which it prints to stdout) go to stderr.
"""
import json
import os
import socket
import sys

# fd 1 becomes stderr for Ray (its C++ core writes to the descriptor, not to sys.stdout).
result = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)
sys.stdout = sys.stderr

address = sys.argv[1]
host, port = address.rsplit(":", 1)
try:
    socket.create_connection((host, int(port)), timeout=5).close()
except OSError as exc:
    sys.exit("no Ray head answers at %s: %s" % (address, exc))

import ray  # noqa: E402  (slow to import; only once the head answers)

ray.init(address=address, logging_level="ERROR")
# node_id tells a raylet that registered again from the one it replaced (same IP).
result.write(json.dumps([{"ip": node["NodeManagerAddress"], "npus": node["Resources"].get("NPU", 0),
                          "node_id": node["NodeID"]} for node in ray.nodes() if node["Alive"]]) + "\n")
result.flush()
