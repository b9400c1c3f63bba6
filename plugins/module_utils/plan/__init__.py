# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The plan: from the inventory's variables and what the preflight detected, every node's commands, environment,
devices and ports, or every problem at once, each naming the variable and the host. Pure but for request.py
reading the model's config.json; run in the controller's process by parallel_plan's action plugin. request.py is
its entry point, planner.py plans one model, fleet.py several instances (ascend_instances), pd.py a prefill/decode
pair, router.py and monitoring.py the router and Prometheus sections; the rest check inputs and write reports
from a plan.

No code in this file: a docstring only (tests/integration/test_code_map.py)."""
