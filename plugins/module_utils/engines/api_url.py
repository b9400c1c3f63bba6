# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""An OpenAI API's base URL from the health URL the readiness check polls (pure logic)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# vLLM's /health, and /healthcheck of vllm-ascend's prefill/decode proxy.
HEALTH_PATH = re.compile(r"/(health|healthcheck)$")


def api_base(url):
    """URL without its health path: where /v1/models and /v1/completions are."""
    return HEALTH_PATH.sub("", url.rstrip("/"))


def health_path(url):
    """The health path URL ends in ('/health' when it names none)."""
    found = HEALTH_PATH.search(url.rstrip("/"))
    return found.group(0) if found else "/health"
