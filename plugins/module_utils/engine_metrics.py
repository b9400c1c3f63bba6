# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What an engine's /metrics says about its load (pure logic): the requests it runs and those waiting, summed over
its engines (vLLM v1 labels each gauge with model_name and engine, vllm/v1/metrics/loggers.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# One sample of Prometheus' text format: a name, labels or none, a value (a timestamp may follow).
SAMPLE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{[^}]*\})?\s+(?P<value>\S+)(?:\s+\S+)?$")
GAUGES = ("vllm:num_requests_running", "vllm:num_requests_waiting")


def in_flight(text):
    """{gauge: the sum of its samples} for GAUGES in TEXT; a gauge with no sample is missing (not a vLLM /metrics,
    or one that changed its names)."""
    found = {}
    for line in (text or "").splitlines():
        match = SAMPLE.match(line.strip())
        if match and match.group("name") in GAUGES:
            try:
                value = float(match.group("value"))
            except ValueError:
                continue
            found[match.group("name")] = found.get(match.group("name"), 0.0) + value
    return found
