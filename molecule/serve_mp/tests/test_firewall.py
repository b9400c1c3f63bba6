"""The members-only firewall under the mp launcher (on by default): this machine, which is not a
member, reaches the model's router on the head but not the API port, the data-parallel RPC port or any other port
the engine listens on; the worker, a member, reaches the head's RPC port (the mp handshake, which serving proves).

vLLM's head listens on the RPC port during its start-up only (its handshake; tests/sim/doubles/vllm_sim.py cites
the lines): a stand-in listens there while these tests run."""

import json
import socket
import time
import urllib.error
import urllib.request

import pytest

from serve_checks import address_of, node, request

HEAD, WORKER = "mp-head", "mp-worker"
API_PORT, DP_RPC_PORT, ROUTER_PORT = 8000, 29550, 8080


def listening(host):
    """TCP ports open on a non-loopback address."""
    ports = set()
    for line in host.check_output("ss -ltnH").splitlines():
        address, port = line.split()[3].rsplit(":", 1)
        if not address.startswith(("127.", "[::1]")):
            ports.add(int(port))
    return ports


@pytest.fixture(scope="module", autouse=True)
def rpc_port_listens():
    """A listener on the head's RPC port, as during the head's start-up; stopped afterwards. SO_REUSEADDR: the
    double keeps its accepted handshake connections (on that port) open while the nodes run."""
    head = node(HEAD)
    head.check_output("systemd-run --unit=rpc-standin --collect timeout 300 python3 -c 'import socket, time; "
                      "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); "
                      "s.bind((\"0.0.0.0\", %d)); s.listen(8); "
                      "[s.accept() for _ in range(100)]'" % DP_RPC_PORT)
    for _attempt in range(50):
        if DP_RPC_PORT in listening(head):
            break
        time.sleep(0.2)
    yield
    head.run("systemctl stop rpc-standin")


def test_only_the_routers_port_answers_this_machine():
    for name in (HEAD, WORKER):
        host = node(name)
        assert "ip saddr @members accept" in host.check_output("nft list table inet ascend_inference")
        ip = address_of(host)
        ports = listening(host) - {ROUTER_PORT, 22}
        if name == HEAD:
            assert {DP_RPC_PORT, API_PORT} <= ports, "the stand-in must listen on the RPC port, the engine on its own"
        for port in sorted(ports):
            with pytest.raises(ConnectionRefusedError):
                socket.create_connection((ip, port), timeout=5)
    socket.create_connection((address_of(node(HEAD)), ROUTER_PORT), timeout=5).close()


def test_a_member_reaches_the_heads_rpc_port():
    probe = "python3 -c 'import socket; socket.create_connection((\"%s\", %d), timeout=5)'" % (
        address_of(node(HEAD)), DP_RPC_PORT)
    assert node(WORKER).run(probe).rc == 0


def test_this_machine_reaches_the_model_through_its_router_with_the_key_only():
    # The single model's router on the head (by default): the engine's key checked, a client's paths only.
    url = "http://%s:%d" % (address_of(node(HEAD)), ROUTER_PORT)
    body = json.dumps({"model": "deepseek-r1-w8a8", "prompt": "hi", "max_tokens": 4}).encode()

    def post(path, key=None, host=None):
        headers = {"Content-Type": "application/json"}
        if host:
            headers["Host"] = host
        if key:
            headers["Authorization"] = "Bearer " + key
        try:
            with urllib.request.urlopen(urllib.request.Request(url + path, body, headers), timeout=30) as answer:
                return answer.status, json.loads(answer.read())
        except urllib.error.HTTPError as error:
            return error.code, None

    assert post("/v1/completions")[0] == 401
    status, answer = post("/v1/completions", key="sim-secret-7f3a9c")
    assert status == 200 and answer["choices"][0]["text"], answer
    assert post("/invocations", key="sim-secret-7f3a9c")[0] == 404
    # vLLM 0.11 (vllm-mindspore 0.5.1's) skips its key for a forged Host (GHSA-94f4-hr76-p5j6; the double follows
    # it, tests/sim/test_serve_double.py): a member that reaches the API port gets an answer without the key, which is
    # why that port admits members only. The router checks the key itself: the same request through it is refused.
    forged = "x/health?"
    status, _answer = request(node(WORKER), "http://%s:%d/v1/completions" % (address_of(node(HEAD)), API_PORT),
                              {"model": "deepseek-r1-w8a8", "prompt": "hi", "max_tokens": 4}, host_header=forged)
    assert status == 200, "the double no longer follows vLLM 0.11's Host bypass"
    assert post("/v1/completions", host=forged)[0] == 401
