# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The apply, on the node: node_apply's files (what differs, written atomically, --diff without secrets), its units
in order (stop, enable, start, restart) and its waits for a port. Every phase's desired state is applied by this
code, in one module run per node.

No code in this file: a docstring only (tests/integration/test_code_map.py)."""
