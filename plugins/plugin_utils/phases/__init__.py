# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The phases, on the controller: each computes one node's desired state (files, units, the account, commands) from
the plan, the role's settings and what earlier phases recorded, for one node_apply run. registry.py names every
phase; node.py is the view of a host a phase reads; per_instance.py spreads the per-node phases over the instances
of ascend_instances; backends.py runs Ray and serve on the host or in the engine container.

No code in this file: a docstring only (tests/integration/test_code_map.py)."""
