"""plan.yml draws the layout it computed (layout.svg beside the node files, a table in the terminal):
for seed scenarios 7 and 9 every NPU's labels are checked against the plan and the seeds' layouts."""

import os
import xml.etree.ElementTree as ET

import pytest

from conftest import REPO

EXAMPLES = os.path.join(REPO, "inventories", "examples")
SVG = "{http://www.w3.org/2000/svg}"


def drawn(svg_text):
    """{node: {device: [label, ...]}} from the SVG."""
    root = ET.fromstring(svg_text)
    nodes = {}
    for group in root.iter(SVG + "g"):
        if group.get("class") == "node":
            name = group.get("id")[len("node-"):]
            nodes[name] = {int(npu.get("data-device")): [t.text for t in npu.iter(SVG + "text")]
                           for npu in group.iter(SVG + "g") if npu.get("class") == "npu"}
    return nodes


def seed7(plan, node_index, device):
    # DeepSeek-R1 hybrid: TP 4 x DP 4, EP 4, two DP replicas of 4 NPUs on each of the two nodes.
    tp = plan["tensor_parallel_size"]
    dp = node_index * 2 + device // tp
    # EP 4 = TP 4: each DP replica's four NPUs are one expert group.
    return ["DP %d  PP 0" % dp, "TP %d" % (device % tp), "EP group %d" % dp]


def seed9(plan, node_index, device):
    # vllm-ascend's layout: TP = the NPUs of a node, PP = the number of nodes (stage = node); EP = TP x DP = 8,
    # so each stage is one expert group.
    return ["DP 0  PP %d" % node_index, "TP %d" % device, "EP group %d" % node_index]


@pytest.mark.parametrize("scenario, expected", [("07-deepseek-r1-hybrid-ray", seed7),
                                                ("09-qwen3-235b-tp8-pp2-ray", seed9)])
def test_every_npu_is_labelled_as_the_plan_places_it(run_plan, tmp_path, scenario, expected):
    proc, plans = run_plan(os.path.join(EXAMPLES, scenario, "hosts"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cluster = plans["node1"]["cluster"]
    picture = drawn((tmp_path / "plan" / "layout.svg").read_text())
    assert sorted(picture) == sorted(cluster["node_order"])
    labelled = 0
    for index, name in enumerate(cluster["node_order"]):
        node = plans[name]
        assert sorted(picture[name]) == node["visible_devices"]
        for device, physical in zip(node["visible_devices"], node["physical_devices"]):
            labels = picture[name][device]
            assert labels[0] == "NPU %d (davinci%d)" % (device, physical)
            assert labels[1:] == expected(cluster, index, device), (name, device, labels)
            labelled += 1
    assert labelled == cluster["npus_required"] == 16
    # The same layout as a table in the terminal.
    assert "DP rank" in proc.stdout and "TP rank" in proc.stdout and "EP group" in proc.stdout
