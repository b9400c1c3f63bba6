"""The members-only firewall under the mp launcher (on by default): this machine, which is not a
member, reaches the API port but not the data-parallel RPC port or any other port the engine listens
on; the worker, a member, reaches the head's RPC port (the mp handshake, which serving proves)."""

import socket

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


def test_only_the_api_port_answers_this_machine():
    for name in (HEAD, WORKER):
        host = node(name)
        assert "ip saddr @members accept" in host.check_output("nft list table inet ascend_inference")
        ip = address_of(host)
        ports = listening(host) - {API_PORT, 22}
        if name == HEAD:
            assert DP_RPC_PORT in ports, "the head's DP coordinator must listen on the RPC port"
        for port in sorted(ports):
            with pytest.raises(ConnectionRefusedError):
                socket.create_connection((ip, port), timeout=5)
    socket.create_connection((address_of(node(HEAD)), API_PORT), timeout=5).close()


def test_a_member_reaches_the_heads_rpc_port():
    probe = "python3 -c 'import socket; socket.create_connection((\"%s\", %d), timeout=5)'" % (
        address_of(node(HEAD)), DP_RPC_PORT)
    assert node(WORKER).run(probe).rc == 0
