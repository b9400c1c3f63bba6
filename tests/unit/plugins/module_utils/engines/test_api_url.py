# -*- coding: utf-8 -*-
"""The API base of the URL serve_ready polls: vLLM's /health, vllm-ascend's proxy's /healthcheck."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.ascend.inference.plugins.module_utils.engines.api_url import api_base, health_path


def test_the_health_path_is_cut_and_named():
    assert api_base("http://10.0.0.1:8000/health") == "http://10.0.0.1:8000"
    assert api_base("http://10.0.0.3:8002/healthcheck/") == "http://10.0.0.3:8002"
    assert api_base("http://10.0.0.1:8000/v1") == "http://10.0.0.1:8000/v1"
    assert health_path("http://10.0.0.3:8002/healthcheck") == "/healthcheck"
    assert health_path("http://10.0.0.1:8000/health") == "/health"
