# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Each shipped vLLM release's ``serve`` option table, by release (the planner checks ascend_serve_options against
it). Apart from releases.py so that the modules that run on a node do not carry the tables."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.ascend.inference.plugins.module_utils.engines import (
    vllm_options_0_9_1,
    vllm_options_0_11_0,
    vllm_options_0_23_0,
    vllm_options_0_30_0,
    vllm_options_0_32_0,
    vllm_options_0_33_0,
)

# vLLM release -> its serve option table (tools/regenerate_vllm_tables.sh writes them); the same releases as
# releases.VLLM_RELEASES (tests/unit/plugins/module_utils/engines/test_releases.py).
OPTION_TABLES = dict(
    (table.VLLM_VERSION, table) for table in (
        vllm_options_0_9_1, vllm_options_0_11_0, vllm_options_0_23_0, vllm_options_0_30_0, vllm_options_0_32_0,
        vllm_options_0_33_0))
