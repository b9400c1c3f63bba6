# -*- coding: utf-8 -*-
"""model_transfer's tracker on a node: the one fixed reply it serves (BEP 23 compact form)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress
import struct

from ansible_collections.ascend.inference.plugins.module_utils.model import files, swarm, torrent
from ansible_collections.ascend.inference.plugins.modules import model_transfer
from ansible_collections.ascend.inference.plugins.module_utils.runtime import unit_names


class Node(object):
    def __init__(self):
        self.served = []

    def serve(self, unit, lifetime, argv, address, port, what):
        self.served.append((unit, argv, address, port))


def compact(addresses, port):
    return b"".join(ipaddress.ip_address(address).packed + struct.pack(">H", port) for address in addresses)


def test_the_nodes_tracker_lists_the_holders_first_and_each_member_once(tmp_path, monkeypatch):
    monkeypatch.setattr(files, "RUNTIME_DIR", str(tmp_path))
    node = Node()
    model_transfer.serve_tracker(node, {
        "peers": ["192.0.2.11", "192.0.2.12", "192.0.2.13"], "seeds": ["192.0.2.13"], "port": 8731,
        "tracker": "192.0.2.11", "tracker_port": 8732, "lifetime": 60})
    reply = torrent.bdecode((tmp_path / swarm.TRACKER_DIR / swarm.ANNOUNCE).read_bytes())
    # aria2 tries the listed peers in order, a few at a time: the holder first, then the receivers.
    assert reply[b"peers"] == compact(["192.0.2.13", "192.0.2.11", "192.0.2.12"], 8731)
    [(unit, argv, address, port)] = node.served
    assert unit == unit_names.MODEL_TRACKER and (address, port) == ("192.0.2.11", 8732)
    assert argv[-4:] == ["--bind", "192.0.2.11", "--directory", str(tmp_path / swarm.TRACKER_DIR)]
