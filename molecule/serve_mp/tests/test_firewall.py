"""The members-only firewall under the mp launcher (on by default): this machine, which is not a
member, reaches the API port but not the data-parallel RPC port or any other port the engine listens
on; the worker, a member, reaches the head's RPC port (the mp handshake, which serving proves).

vLLM's head listens on the RPC port during its start-up only (its handshake; tests/sim/doubles/vllm_sim.py cites
the lines): a stand-in listens there while these tests run."""

import socket
import time

import pytest

from serve_checks import address_of, node

HEAD, WORKER = "mp-head", "mp-worker"
API_PORT, DP_RPC_PORT = 8000, 29550


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


def test_only_the_api_port_answers_this_machine():
    for name in (HEAD, WORKER):
        host = node(name)
        assert "ip saddr @members accept" in host.check_output("nft list table inet ascend_inference")
        ip = address_of(host)
        ports = listening(host) - {API_PORT, 22}
        if name == HEAD:
            assert DP_RPC_PORT in ports, "the stand-in must listen on the RPC port"
        for port in sorted(ports):
            with pytest.raises(ConnectionRefusedError):
                socket.create_connection((ip, port), timeout=5)
    socket.create_connection((address_of(node(HEAD)), API_PORT), timeout=5).close()


def test_a_member_reaches_the_heads_rpc_port():
    probe = "python3 -c 'import socket; socket.create_connection((\"%s\", %d), timeout=5)'" % (
        address_of(node(HEAD)), DP_RPC_PORT)
    assert node(WORKER).run(probe).rc == 0
