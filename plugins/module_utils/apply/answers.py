# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""After an apply's units started: the HTTP endpoints that must answer before the phase is done (the router's
/health, an exporter's /metrics, Prometheus' /-/ready), asked from the node itself, bounded in attempts and time."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible.module_utils.urls import open_url


def status_of(url, timeout):
    """The HTTP status URL answers with (certificates not checked: the node asks itself), or the error as text."""
    try:
        response = open_url(url, timeout=timeout, validate_certs=False, follow_redirects="none")
        try:
            return response.getcode()
        finally:
            response.close()
    except Exception as error:  # pylint: disable=broad-except
        # urllib's HTTPError carries the status; any other failure (refused, reset, timeout) is the answer's text.
        code = getattr(error, "code", None)
        return code if isinstance(code, int) else str(getattr(error, "reason", None) or error)


def wait_answer(endpoint, clock=time.monotonic, sleep=time.sleep):
    """Ask ENDPOINT ({label, url, status, timeout, delay}) until it answers its status or its timeout passes:
    {label, url, answered, seconds, attempts, last}."""
    start = clock()
    attempts = 0
    while True:
        attempts += 1
        last = status_of(endpoint["url"], min(10, endpoint["timeout"]))
        seconds = round(clock() - start, 1)
        if last == endpoint["status"]:
            return dict(label=endpoint["label"], url=endpoint["url"], answered=True, seconds=seconds,
                        attempts=attempts, last=last)
        if seconds + endpoint["delay"] > endpoint["timeout"]:
            return dict(label=endpoint["label"], url=endpoint["url"], answered=False, seconds=seconds,
                        attempts=attempts, last=last)
        sleep(endpoint["delay"])
