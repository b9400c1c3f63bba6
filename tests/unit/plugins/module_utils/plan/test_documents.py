# -*- coding: utf-8 -*-
"""node_documents: one JSON document per node, the cluster under "cluster"."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.ascend.inference.plugins.module_utils.plan.documents import node_documents

CLUSTER = {"head": "h", "world_size": 2, "node_order": ["h", "w"], "tensor_parallel_size": 2,
           "pipeline_parallel_size": 1, "data_parallel_size": 1, "expert_parallel_size": None,
           "model": "m", "engine": "vllm-ascend", "launcher": "ray"}
PLAN = {"cluster": CLUSTER,
        "nodes": {"h": {"role": "head", "env": {"B": "2", "A": None}, "node_ip": "192.0.2.1", "visible_devices": [0]},
                  "w": {"role": "worker", "env": {}, "node_ip": "192.0.2.2", "visible_devices": [0]}}}


def test_one_document_per_node_with_the_cluster():
    documents = node_documents(PLAN)
    assert sorted(documents) == ["h.json", "layout.svg", "w.json"]
    head = json.loads(documents["h.json"])
    assert head == dict(PLAN["nodes"]["h"], cluster=CLUSTER)
    assert documents["layout.svg"].startswith("<svg ")


def test_documents_are_stable_text_sorted_and_indented():
    text = node_documents(PLAN)["h.json"]
    assert text.endswith("}\n")
    assert text.index('"cluster"') < text.index('"env"') < text.index('"role"')
    assert '\n    "role": "head"' in text
    assert node_documents(PLAN) == node_documents(json.loads(json.dumps(PLAN)))


def test_the_plan_is_not_modified():
    plan = json.loads(json.dumps(PLAN))
    node_documents(plan)
    assert "cluster" not in plan["nodes"]["h"]
