"""The Ray barrier's probe (roles/ray_cluster/files/cluster_nodes.py) prints only its JSON on stdout.

Ray prints its warning about a dead raylet ("(1) raylet crashes unexpectedly (OOM, etc.) ...") on
stdout while the probe asks for the nodes (seen in molecule/ray after a raylet was killed), from
Python and from its C++ core alike; the barrier and status.yml parse stdout as JSON. A stand-in `ray`
module here writes to stdout both ways.
"""

import json
import os
import socket
import subprocess
import sys

from conftest import REPO

PROBE = os.path.join(REPO, "roles", "ray_cluster", "files", "cluster_nodes.py")
FAKE_RAY = '''
import os
def init(address, logging_level):
    print("(1) raylet crashes unexpectedly (OOM, etc.)")
    os.write(1, b"\\t(2) raylet has lagging heartbeats due to slow network or busy workload.\\n")
def nodes():
    return [{"NodeManagerAddress": "192.0.2.1", "Resources": {"NPU": 4.0}, "NodeID": "a", "Alive": True},
            {"NodeManagerAddress": "192.0.2.2", "Resources": {}, "NodeID": "b", "Alive": False}]
'''


def test_only_the_json_reaches_stdout(tmp_path):
    (tmp_path / "ray.py").write_text(FAKE_RAY)
    head = socket.socket()
    head.bind(("127.0.0.1", 0))
    head.listen(1)
    try:
        proc = subprocess.run([sys.executable, PROBE, "127.0.0.1:%d" % head.getsockname()[1]], capture_output=True,
                              text=True, timeout=60, check=False, env=dict(os.environ, PYTHONPATH=str(tmp_path)))
    finally:
        head.close()
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == [{"ip": "192.0.2.1", "npus": 4.0, "node_id": "a"}]
    assert "raylet crashes unexpectedly" in proc.stderr and "lagging heartbeats" in proc.stderr
