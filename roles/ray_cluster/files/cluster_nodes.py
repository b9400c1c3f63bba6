"""Print the Ray cluster's alive nodes as JSON: [{"ip": ..., "npus": ...}]."""
import json

import ray

ray.init(address="auto", logging_level="ERROR")
print(json.dumps([{"ip": node["NodeManagerAddress"], "npus": node["Resources"].get("NPU", 0)}
                  for node in ray.nodes() if node["Alive"]]))
