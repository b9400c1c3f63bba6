# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Waiting for a listener, against real sockets on loopback."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import socket
import threading
import time

from ansible_collections.ascend.inference.plugins.module_utils.apply.listening import wait_listening


def free_port():
    """A loopback port nothing listens on (bound a moment, then closed)."""
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return port


def test_a_listener_answers_at_once():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    try:
        start = time.monotonic()
        assert wait_listening("127.0.0.1", server.getsockname()[1], 5) == (True, None)
        assert time.monotonic() - start < 1
    finally:
        server.close()


def test_a_listener_that_starts_late_is_waited_for():
    port = free_port()
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    late = threading.Timer(0.3, lambda: (server.bind(("127.0.0.1", port)), server.listen(1)))
    late.start()
    try:
        start = time.monotonic()
        assert wait_listening("127.0.0.1", port, 5, poll=0.02)[0]
        assert 0.25 < time.monotonic() - start < 2
    finally:
        late.join()
        server.close()


def test_nothing_listening_gives_up_after_the_timeout_with_the_error():
    start = time.monotonic()
    reached, error = wait_listening("127.0.0.1", free_port(), 0.3, poll=0.05)
    assert not reached and isinstance(error, ConnectionRefusedError)
    assert 0.3 <= time.monotonic() - start < 1.5


def test_a_process_that_ended_is_not_waited_for():
    asked = []
    start = time.monotonic()
    reached, error = wait_listening("127.0.0.1", free_port(), 30, ended=lambda: asked.append(1) or True)
    assert not reached and error is not None and asked == [1]
    assert time.monotonic() - start < 1
