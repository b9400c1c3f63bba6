# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rank table of vllm-ascend's LLMDataDistCMgrConnector (vllm-ascend 0.9.1 and 0.11, read from the file
DISAGGREGATED_PREFILL_RANK_TABLE_PATH names), built from the plan and the NPU IPs the NPU network check read
(hccn_tool -i PHYSICAL_ID -ip -g), instead of upstream's gen_ranktable.sh, which runs torchrun across the nodes.

The format is upstream's examples/disaggregated_prefill_v1/gen_ranktable.py (0.11.0; 0.9.1's
examples/disaggregate_prefill_v1): version "1.2", server_count, prefill_device_list then decode_device_list, each
device {server_id, device_id, device_ip, cluster_id}, every value a string, cluster_id counting from 1 over the
prefill devices and then the decode devices; status "completed". The connector takes a worker's entry as the
TP-rank-th of those whose server_id is its get_ip() (VLLM_HOST_IP) and whose device_id is in
ASCEND_RT_VISIBLE_DEVICES (llmdatadist_c_mgr_connector.py, read_agent_metadata): device_id is the logic ID, and
device_ip that of the physical device behind it (upstream assumes the two are the same number).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

POOLS = ("prefill", "decode")
A3 = "910_93"


def rank_table(entry, plans, records):
    """(the rank table as a dict, problems). ENTRY: the plan's pd entry of one instance; PLANS: the plan's
    instances; RECORDS: {host: its npu_query record} ({checked, npus: {physical ID: {ip, ...}}})."""
    lists, problems, hosts = {}, [], []
    for pool in POOLS:
        instance = plans[entry["pools"][pool]["instance"]]
        lists[pool] = []
        for host in instance["cluster"]["node_order"]:
            node = instance["nodes"][host]
            hosts.append(host)
            if node.get("npu_family") == A3:
                # gen_ranktable.py reads super_pod_id and super_device_id from `npu-smi info -t spod-info` there.
                problems.append("%s: an Atlas A3 rank table needs each die's super pod ID (npu-smi info -t spod-info), "
                                "which no capture here shows: LLMDataDist on A3 is not built" % host)
                continue
            record = records.get(host) or {}
            if not record.get("checked"):
                problems.append("%s: the rank table needs the NPU IPs the NPU network check reads (npu_network), "
                                "which did not run there in this play" % host)
                continue
            for logic, physical in zip(node["visible_devices"], node["physical_devices"]):
                address = ((record.get("npus") or {}).get(str(physical)) or {}).get("ip")
                if not address:
                    problems.append("%s: NPU %s (physical %s) has no NPU IP (hccn_tool -i %s -ip -g)"
                                    % (host, logic, physical, physical))
                    continue
                lists[pool].append({"server_id": node["node_ip"], "device_id": str(logic), "device_ip": address})
    for index, device in enumerate(lists["prefill"] + lists["decode"]):
        device["cluster_id"] = str(index + 1)
    table = {"version": "1.2", "server_count": str(len(set(hosts))), "prefill_device_list": lists["prefill"],
             "decode_device_list": lists["decode"], "status": "completed"}
    return table, problems


def render(table):
    """The file's text: gen_ranktable.py's json.dump(indent=4), its key order kept."""
    return json.dumps(table, indent=4) + "\n"
