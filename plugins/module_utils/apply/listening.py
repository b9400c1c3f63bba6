# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Waiting until a daemon that was just started accepts connections (the copy's listeners, a unit's port)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import socket
import time


def wait_listening(host, port, timeout, poll=0.05, ended=None):
    """Until HOST:PORT accepts a TCP connection: (True, None); (False, the last connection error) once TIMEOUT
    seconds passed, or at once when ``ended()`` says the process that was to listen is gone."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection((host, port), timeout=2).close()
            return True, None
        except (IOError, OSError) as exc:
            if (ended is not None and ended()) or time.monotonic() >= deadline:
                return False, exc
        time.sleep(poll)
