"""Print the Ray cluster's alive nodes as JSON: [{"ip": ..., "npus": ..., "node_id": ...}].

Usage: cluster_nodes.py HEAD_IP:PORT. Fails within seconds when nothing
listens there (ray.init would keep retrying a stopped cluster's address).
"""
import json
import socket
import sys

address = sys.argv[1]
host, port = address.rsplit(":", 1)
try:
    socket.create_connection((host, int(port)), timeout=5).close()
except OSError as exc:
    sys.exit("no Ray head answers at %s: %s" % (address, exc))

import ray  # noqa: E402  (slow to import; only once the head answers)

ray.init(address=address, logging_level="ERROR")
# node_id tells a raylet that registered again from the one it replaced (same IP).
print(json.dumps([{"ip": node["NodeManagerAddress"], "npus": node["Resources"].get("NPU", 0), "node_id": node["NodeID"]}
                  for node in ray.nodes() if node["Alive"]]))
