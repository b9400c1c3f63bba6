# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a node is, read on the node: the parsers of what npu-smi, hccn_tool, CANN's and the driver's files print
(checked against real captures in tests/unit/plugins/module_utils/node/hardware_samples), the node's environment
file, its /etc/hosts block, and the support bundle. Pure but for readers.py, which reads a node's files and tools.

No code in this file: a docstring only (tests/integration/test_code_map.py)."""
