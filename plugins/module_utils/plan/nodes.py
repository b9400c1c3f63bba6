# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cluster's nodes as the planner takes them, from each host's inventory variables and, after the preflight,
what its probe detected (pure logic): the inventory's ascend_nic and ascend_npu_devices come first, detection
fills in the rest; unset values are left out (the planner applies its defaults)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.ascend.inference.plugins.module_utils.node import etc_hosts

# The host variables a node is read from (the inventory's, or -e).
VARIABLES = ("ascend_node_ip", "ansible_host", "ascend_nic", "ascend_npu_devices", "ascend_npu_device_map",
             "ascend_npus_per_node", "ascend_data_parallel_size_local", "ascend_data_parallel_start_rank")


def node(name, head, variables, detected):
    """One node for parallel_plan's nodes option. VARIABLES: the host's variables (only those set);
    DETECTED: the preflight's record of what the node is (ascend_applied.preflight.detected), or None."""
    detected = detected or {}
    device_map = dict(variables.get("ascend_npu_device_map") or {})
    device_map.update(detected.get("device_map") or {})
    found = {
        "name": name,
        "head": head,
        "node_ip": etc_hosts.address(name, variables),
        "nic": variables.get("ascend_nic") or detected.get("nic"),
        # Set, even to an empty list, it is the inventory's (the planner refuses an empty one); unset, detected.
        "npu_devices": (variables["ascend_npu_devices"] if variables.get("ascend_npu_devices") is not None
                        else detected.get("npu_devices")),
        "device_map": device_map or None,
        "npu_family": detected.get("npu_family"),
        "npus_per_node": variables.get("ascend_npus_per_node"),
        "data_parallel_size_local": variables.get("ascend_data_parallel_size_local"),
        "data_parallel_start_rank": variables.get("ascend_data_parallel_start_rank"),
        "device_group": detected.get("device_group"),
    }
    return dict((key, value) for key, value in found.items() if value is not None)
