# -*- coding: utf-8 -*-
"""`sample(name)`: a captured tool output from hardware_samples/ (see its README and SOURCES.tsv)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

SAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hardware_samples")


def read_sample(name):
    with open(os.path.join(SAMPLES, name)) as handle:
        return handle.read()


@pytest.fixture
def sample():
    return read_sample
