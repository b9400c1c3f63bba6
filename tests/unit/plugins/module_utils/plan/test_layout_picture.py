# -*- coding: utf-8 -*-
"""The layout picture: which NPU holds which DP rank, PP stage, TP rank and EP group; text and SVG."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import xml.etree.ElementTree as ET

from ansible_collections.ascend.inference.plugins.module_utils.plan import layout_picture


def plan(tp=1, pp=1, dp=1, ep=None, nodes=(("h", 4, None),), model="m", start_ranks=None):
    cluster = {"tensor_parallel_size": tp, "pipeline_parallel_size": pp, "data_parallel_size": dp,
               "expert_parallel_size": ep, "model": model, "engine": "vllm-ascend", "launcher": "mp",
               "node_order": [name for name, _count, _local in nodes]}
    return {"cluster": cluster, "nodes": {
        name: {"role": "head" if index == 0 else "worker", "node_ip": "192.0.2.%d" % (index + 1),
               "visible_devices": list(range(count)), "physical_devices": [d + 4 for d in range(count)],
               "data_parallel_size_local": local,
               "data_parallel_start_rank": (start_ranks or {}).get(name)}
        for index, (name, count, local) in enumerate(nodes)}}


def ranks(result, key):
    return {node["name"]: [npu[key] for npu in node["npus"]] for node in result}


def test_mp_data_parallel_leaves_a_nodes_extra_npus_idle():
    result = layout_picture.npu_labels(plan(tp=2, dp=4, nodes=(("h", 8, 2), ("w", 8, 2))))
    assert ranks(result, "dp") == {"h": [0, 0, 1, 1, None, None, None, None], "w": [2, 2, 3, 3, None, None, None, None]}
    assert ranks(result, "tp") == {"h": [0, 1, 0, 1, None, None, None, None], "w": [0, 1, 0, 1, None, None, None, None]}
    assert ranks(result, "ep") == {"h": [None] * 8, "w": [None] * 8}


def test_mp_start_ranks_out_of_node_order_are_followed():
    # The planner accepts start ranks that tile 0..DP-1 in any order: b owns rank 3, c ranks 1 and 2.
    result = layout_picture.npu_labels(plan(tp=2, dp=4, nodes=(("a", 2, 1), ("b", 2, 1), ("c", 4, 2)),
                                            start_ranks={"a": 0, "b": 3, "c": 1}))
    assert ranks(result, "dp") == {"a": [0, 0], "b": [3, 3], "c": [1, 1, 2, 2]}
    assert ranks(result, "tp") == {"a": [0, 1], "b": [0, 1], "c": [0, 1, 0, 1]}


def test_a_replica_across_nodes_takes_them_whole_in_node_order():
    result = layout_picture.npu_labels(plan(tp=4, pp=2, ep=4, nodes=(("h", 4, 1), ("w", 4, 0))))
    assert ranks(result, "pp") == {"h": [0] * 4, "w": [1] * 4}
    assert ranks(result, "tp") == {"h": [0, 1, 2, 3], "w": [0, 1, 2, 3]}
    assert ranks(result, "ep") == {"h": [0] * 4, "w": [1] * 4}


def test_expert_groups_smaller_than_tp_times_dp():
    result = layout_picture.npu_labels(plan(tp=2, dp=4, ep=4, nodes=(("h", 8, 4),)))
    assert ranks(result, "ep") == {"h": [0, 0, 0, 0, 1, 1, 1, 1]}


def test_the_physical_device_is_kept_beside_the_logic_one():
    npu = layout_picture.npu_labels(plan())[0]["npus"][1]
    assert (npu["device"], npu["physical"]) == (1, 5)


def test_the_text_is_a_table_per_node():
    text = layout_picture.render_text(plan(tp=2, dp=2, nodes=(("h", 2, 1), ("w", 2, 1))))
    assert text.splitlines()[0] == "m on vllm-ascend (mp launcher): TP 2 x PP 1 x DP 2"
    assert "worker w (192.0.2.2)\n  NPU       0  1\n  DP rank   1  1\n  PP stage  0  0\n  TP rank   0  1" in text


def test_the_svg_is_well_formed_and_escapes_what_it_shows():
    svg = layout_picture.render_svg(plan(model='<script>alert("x")</script>&'))
    root = ET.fromstring(svg)
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert texts[0].startswith('<script>alert("x")</script>& on vllm-ascend')
    assert "NPU 2 (davinci6)" in texts and "DP 0  PP 0" in texts
    assert "<script>" not in svg
