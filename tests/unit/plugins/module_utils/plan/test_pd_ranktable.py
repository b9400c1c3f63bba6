# -*- coding: utf-8 -*-
"""LLMDataDist's rank table (module_utils/plan/pd_ranktable) for two Atlas A2 nodes, from real `hccn_tool -ip -g`
captures (hardware_samples: hccn_tool-ip-g__910B3_800I-A2__1.txt, the eight NPUs of an 800I A2, for the prefill
node; hccn_tool-ip-g__910_modelarts-8dev__1.txt, device 0 of a ModelArts worker, for the decode node), checked
field by field against what vllm-ascend 0.11.0's examples/disaggregated_prefill_v1/gen_ranktable.py writes: version
"1.2", server_count (torchrun's world size: one process per node), prefill_device_list then decode_device_list,
each device {server_id, device_id, device_ip, cluster_id} as strings, cluster_id 1.. over both lists in that
order, status "completed"."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.ascend.inference.plugins.module_utils.node import hccn
from ansible_collections.ascend.inference.plugins.module_utils.plan import pd_ranktable
from ansible_collections.ascend.inference.plugins.module_utils.plan import fleet

NODES = [{"name": "p", "node_ip": "10.0.0.1", "nic": "eth0", "npus_per_node": 8, "head": True},
         {"name": "d", "node_ip": "10.0.0.2", "nic": "eth0", "npus_per_node": 8}]
INSTANCE = {"r1": {"served_model_name": "r1", "prefill": {"hosts": ["p"], "tensor_parallel_size": 8},
                   "decode": {"hosts": ["d"], "devices": {"d": [0]}}}}


def records(sample):
    """npu_query's records, as the NPU network check keeps hccn_tool's answers (by physical ID)."""
    eight = sample("hccn_tool-ip-g__910B3_800I-A2__1.txt").splitlines()
    chunks = ["\n".join(eight[index:index + 2]) for index in range(0, len(eight), 2)]
    one = sample("hccn_tool-ip-g__910_modelarts-8dev__1.txt")
    return {"p": {"checked": True, "npus": dict((str(i), {"ip": hccn.parse("ip", c)}) for i, c in enumerate(chunks))},
            "d": {"checked": True, "npus": {"0": {"ip": hccn.parse("ip", one)}}}}


def fleet_plan(version="0.11.0"):
    settings = {"engine": "vllm-ascend", "engine_version": version, "model": "/models/m", "launcher": "mp"}
    return fleet.make_fleet_plan(settings, NODES, INSTANCE, pd_proxy_dir="/opt/pd")


def test_the_rank_table_is_the_upstream_generators_format(sample):
    plan = fleet_plan()
    table, problems = pd_ranktable.rank_table(plan["pd"]["r1"], plan["instances"], records(sample))
    assert problems == []
    assert list(table) == ["version", "server_count", "prefill_device_list", "decode_device_list", "status"]
    assert (table["version"], table["server_count"], table["status"]) == ("1.2", "2", "completed")
    assert table["prefill_device_list"] == [
        {"server_id": "10.0.0.1", "device_id": str(i), "device_ip": "11.12.165.8%d" % i, "cluster_id": str(i + 1)}
        for i in range(8)]
    assert table["decode_device_list"] == [
        {"server_id": "10.0.0.2", "device_id": "0", "device_ip": "192.1.45.172", "cluster_id": "9"}]
    for device in table["prefill_device_list"] + table["decode_device_list"]:
        assert list(device) == ["server_id", "device_id", "device_ip", "cluster_id"]
        assert all(isinstance(value, str) for value in device.values())
    assert json.loads(pd_ranktable.render(table)) == table


def test_device_ip_follows_the_physical_id_behind_a_logic_id(sample):
    """hccn_tool takes physical IDs, the connector matches device_id with ASCEND_RT_VISIBLE_DEVICES (logic IDs)."""
    plan = fleet_plan()
    plan["instances"]["r1-decode"]["nodes"]["d"]["physical_devices"] = [3]
    found = records(sample)
    found["d"]["npus"] = {"3": {"ip": "10.9.0.3"}}
    table, problems = pd_ranktable.rank_table(plan["pd"]["r1"], plan["instances"], found)
    assert problems == [] and table["decode_device_list"][0]["device_ip"] == "10.9.0.3"
    assert table["decode_device_list"][0]["device_id"] == "0"


def test_missing_ips_an_unchecked_node_and_a3_are_named(sample):
    plan = fleet_plan()
    found = records(sample)
    del found["p"]["npus"]["5"]
    found["d"] = {"checked": False}
    _table, problems = pd_ranktable.rank_table(plan["pd"]["r1"], plan["instances"], found)
    assert problems == ["p: NPU 5 (physical 5) has no NPU IP (hccn_tool -i 5 -ip -g)",
                        "d: the rank table needs the NPU IPs the NPU network check reads (npu_network), which did "
                        "not run there in this play"]
    plan["instances"]["r1-decode"]["nodes"]["d"]["npu_family"] = "910_93"
    _table, problems = pd_ranktable.rank_table(plan["pd"]["r1"], plan["instances"], records(sample))
    assert problems[0].startswith("d: an Atlas A3 rank table needs each die's super pod ID")
