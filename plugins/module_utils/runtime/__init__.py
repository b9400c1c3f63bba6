# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How the collection's processes run on a node: the name of every systemd unit it owns and the patterns that find
them again (unit_names.py, the one place they are spelled), command lines systemd reads back exactly, the engine
container of container mode, and the confined service account.

No code in this file: a docstring only (tests/integration/test_code_map.py)."""
