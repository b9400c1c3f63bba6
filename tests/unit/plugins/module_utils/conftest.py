# -*- coding: utf-8 -*-
"""`sample(name)`: a captured tool output from node/hardware_samples/ (see its README and SOURCES.tsv).
`vllm_help`: tests/vllm_help/reader.py, which reads vLLM's stored `serve --help=all` captures."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib.util
import os

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLES = os.path.join(HERE, "node", "hardware_samples")
HELP_READER = os.path.join(HERE, "..", "..", "..", "vllm_help", "reader.py")


def read_sample(name):
    with open(os.path.join(SAMPLES, name)) as handle:
        return handle.read()


@pytest.fixture
def sample():
    return read_sample


@pytest.fixture(scope="session")
def vllm_help():
    # Loaded from its file: it sits outside the collection's importable plugins.
    spec = importlib.util.spec_from_file_location("vllm_help_reader", HELP_READER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
