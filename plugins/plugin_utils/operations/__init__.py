# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The operations on a running cluster, on the controller: restart.yml's ordered and rolling restarts, status.yml's
reads and table, teardown.yml and remove_node.yml. Phases like the roles' (registered in phases/registry.py), but
they change no configuration.

No code in this file: a docstring only (tests/integration/test_code_map.py)."""
