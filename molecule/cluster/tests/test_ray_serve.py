"""The serve doubles' Ray behaviour on the simulated cluster (4 + 4 + 2 NPUs).

A Ray cluster is started by hand here, from the image's wheelhouse; the
collection's own Ray role is tested in its own scenario.
"""

import os
import re
import time

import pytest
import testinfra
import testinfra.utils.ansible_runner

HOSTS = testinfra.utils.ansible_runner.AnsibleRunner(os.environ["MOLECULE_INVENTORY_FILE"]).get_hosts("ascend_cluster")
HEAD = "sim-head"
testinfra_hosts = ["podman://" + HEAD]
PROBE = "/opt/ray-probe"
RAY = PROBE + "/bin/ray"


def node(name):
    return testinfra.get_host("podman://" + name)


def address_of(host):
    return re.search(r"inet (\d+\.\d+\.\d+\.\d+)/", host.check_output("ip -4 -o addr show scope global")).group(1)


def ensure_probe(host):
    if not host.file(PROBE + "/bin/ray").exists:
        host.check_output("python3 -m venv %s && %s/bin/pip install -q --no-index --find-links /opt/wheelhouse ray"
                          % (PROBE, PROBE))


@pytest.fixture(scope="module")
def ray_cluster():
    head_ip = address_of(node(HEAD))
    for name in HOSTS:
        ensure_probe(node(name))
    node(HEAD).check_output("%s start --head --port=6379 --node-ip-address=%s --num-cpus=2 --disable-usage-stats"
                            % (RAY, head_ip))
    for name in HOSTS:
        if name != HEAD:
            node(name).check_output("%s start --address=%s:6379 --node-ip-address=%s --num-cpus=2 "
                                    "--disable-usage-stats" % (RAY, head_ip, address_of(node(name))))
    # Workers register with the head asynchronously: wait for all NPUs to show.
    for _second in range(60):
        if re.search(r"/10\.0 NPU", node(HEAD).run("%s status" % RAY).stdout):
            break
        time.sleep(1)
    yield head_ip
    for name in HOSTS:
        node(name).run("%s stop --force" % RAY)


def serve(host, port, *args):
    """Start the double, wait for /health or its exit, stop it; its log (+ SERVING)."""
    host.check_output("mkdir -p /tmp/model")
    script = """
cd /tmp
PATH=%(probe)s/bin:$PATH ASCEND_SIM_PG_TIMEOUT=8 setsid vllm-mindspore serve /tmp/model --port %(port)d %(args)s \
  > /tmp/serve-%(port)d.log 2>&1 &
pid=$!
for i in $(seq 90); do
  curl -sf http://127.0.0.1:%(port)d/health && { echo SERVING; break; }
  kill -0 $pid 2>/dev/null || break
  sleep 1
done
kill -TERM -$pid 2>/dev/null; sleep 2; kill -KILL -$pid 2>/dev/null
cat /tmp/serve-%(port)d.log
""" % {"probe": PROBE, "port": port, "args": " ".join(args)}
    host.check_output("cat > /tmp/serve.sh <<'EOF'\n%s\nEOF" % script)
    return host.run("bash /tmp/serve.sh").stdout


def test_ray_sees_the_whole_cluster(host, ray_cluster):
    status = host.check_output("%s status" % RAY)
    assert re.search(r"0\.0/10\.0 NPU", status), status


def test_tp_across_nodes_reserves_a_placement_group(host, ray_cluster):
    out = serve(host, 8111, "--distributed-executor-backend", "ray", "--tensor-parallel-size", "10")
    assert "SERVING" in out and "reserved 1 placement group(s) of 10 NPU(s)" in out, out


def test_too_small_cluster_fails_with_vllms_message(host, ray_cluster):
    out = serve(host, 8112, "--distributed-executor-backend", "ray", "--tensor-parallel-size", "11")
    assert "SERVING" not in out
    assert "Cannot provide a placement group of placement_group_specs=" in out, out
    assert "exceeds the total number of available NPUs" in out


def test_ray_data_parallel_places_ranks_per_node(host, ray_cluster):
    out = serve(host, 8113, "--data-parallel-backend", "ray", "--data-parallel-size", "2", "--data-parallel-size-local",
                "1", "--tensor-parallel-size", "4")
    assert "SERVING" in out and "reserved 2 placement group(s) of 4 NPU(s)" in out, out
    out = serve(host, 8114, "--data-parallel-backend", "ray", "--data-parallel-size", "3", "--data-parallel-size-local",
                "1", "--tensor-parallel-size", "4")
    assert "Not enough resources to allocate 3 placement groups, only created 2" in out, out
