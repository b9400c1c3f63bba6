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


GROWING_RAY = '''
import os
LOOKS = [0]
def init(address, logging_level):
    pass
def nodes():
    # One node more on every look: the cluster is forming.
    LOOKS[0] += 1
    return [{"NodeManagerAddress": "192.0.2.%d" % n, "Resources": {"NPU": 2.0}, "NodeID": str(n), "Alive": True}
            for n in range(1, min(LOOKS[0], 3) + 1)]
'''


def test_until_waits_in_one_run_for_the_nodes_and_npus(tmp_path):
    (tmp_path / "ray.py").write_text(GROWING_RAY)
    head = socket.socket()
    head.bind(("127.0.0.1", 0))
    head.listen(1)
    address = "127.0.0.1:%d" % head.getsockname()[1]
    try:
        def probe(*until):
            return subprocess.run([sys.executable, PROBE, address, "ascend-ray.service", "--until"] + list(until),
                                  capture_output=True, text=True, timeout=60, check=False,
                                  env=dict(os.environ, PYTHONPATH=str(tmp_path)))
        whole = probe("3", "6", "30")
        short = probe("4", "8", "2")
    finally:
        head.close()
    assert whole.returncode == 0, whole.stderr
    # Three looks, a second apart, in one run: it returns as soon as 3 nodes with 6 NPUs are alive.
    assert [node["ip"] for node in json.loads(whole.stdout)] == ["192.0.2.1", "192.0.2.2", "192.0.2.3"]
    # Never 4 nodes: after its 2 seconds, what it saw last.
    assert len(json.loads(short.stdout)) == 3


def _stand_ins(tmp_path, with_systemd_run):
    """A bin/ whose systemctl says Ray runs confined (private /tmp), and a systemd-run that records its argv."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tools = {"systemctl": "print('PrivateTmp=yes')\nprint('ActiveState=active')\n"}
    if with_systemd_run:
        tools["systemd-run"] = "import json, sys\nopen(%r, 'w').write(json.dumps(sys.argv))\n" % str(tmp_path / "argv")
    for name, body in tools.items():
        (bin_dir / name).write_text("#!%s\n%s" % (sys.executable, body))
        (bin_dir / name).chmod(0o755)
    return str(bin_dir)


def _probe(tmp_path, path, unit=None, **env):
    return subprocess.run([sys.executable, PROBE, "127.0.0.1:1"] + ([unit] if unit else []), capture_output=True,
                          text=True, timeout=60, check=False, env=dict(PATH=path, **env))


def test_the_token_itself_never_reaches_the_transient_unit(tmp_path):
    proc = _probe(tmp_path, _stand_ins(tmp_path, True), RAY_AUTH_MODE="token", RAY_AUTH_TOKEN="s3cr3t-token",
                  RAY_AUTH_TOKEN_PATH="/etc/ascend-inference/ray-auth-token")
    assert proc.returncode == 0, proc.stderr
    argv = json.loads((tmp_path / "argv").read_text())
    assert "--setenv=RAY_AUTH_TOKEN_PATH=/etc/ascend-inference/ray-auth-token" in argv
    assert "--setenv=RAY_AUTH_MODE=token" in argv and "--property=JoinsNamespaceOf=ascend-ray.service" in argv
    assert not [word for word in argv if "s3cr3t-token" in word or word.startswith("--setenv=RAY_AUTH_TOKEN=")]


def test_a_token_without_its_path_is_refused_with_the_reason(tmp_path):
    proc = _probe(tmp_path, _stand_ins(tmp_path, True), RAY_AUTH_TOKEN="s3cr3t-token")
    assert proc.returncode != 0 and not (tmp_path / "argv").exists()
    assert "RAY_AUTH_TOKEN_PATH" in proc.stderr and "s3cr3t-token" not in proc.stderr


def test_no_systemd_run_is_a_sentence_not_a_traceback(tmp_path):
    proc = _probe(tmp_path, _stand_ins(tmp_path, False))
    assert proc.returncode != 0
    assert "only systemd-run can join" in proc.stderr and "Traceback" not in proc.stderr


def test_the_transient_unit_joins_the_ray_unit_it_is_given(tmp_path):
    # The roles pass the plan's unit (cluster.units.ray); by hand the probe defaults to the same name.
    proc = _probe(tmp_path, _stand_ins(tmp_path, True), unit="ray-other.service", RAY_AUTH_MODE="token",
                  RAY_AUTH_TOKEN_PATH="/etc/ascend-inference/ray-auth-token")
    assert proc.returncode == 0, proc.stderr
    assert "--property=JoinsNamespaceOf=ray-other.service" in json.loads((tmp_path / "argv").read_text())
