# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The per-node plan documents that playbooks/plan.yml writes (pure logic)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.ascend.inference.plugins.module_utils.plan.layout_picture import render_svg


def node_documents(plan):
    """{"<host>.json": text} for every node of a plan (parallel_plan's result):
    the node's entry with the cluster-wide part under "cluster"; and "layout.svg", the picture of
    the layout (no clash: a host's file always ends in .json)."""
    documents = {"layout.svg": render_svg(plan)}
    if "instances" in plan:
        return dict(documents, **fleet_documents(plan))
    for name, node in plan["nodes"].items():
        document = dict(node, cluster=plan["cluster"])
        documents[name + ".json"] = json.dumps(document, indent=4, sort_keys=True, separators=(",", ": ")) + "\n"
    return documents


def fleet_documents(plan):
    """For a plan of several instances: each host's entry in every instance it takes part in (with that instance's
    cluster-wide part), and what is allocated on it."""
    documents = {}
    allocation = plan["allocation"]
    for host in plan["cluster"]["node_order"]:
        document = {"instances": {}, "ports": allocation["ports"][host], "npus": allocation["npus"][host]}
        for name, instance in sorted(plan["instances"].items()):
            if host in instance["nodes"]:
                document["instances"][name] = dict(instance["nodes"][host], cluster=instance["cluster"])
        documents[host + ".json"] = json.dumps(document, indent=4, sort_keys=True, separators=(",", ": ")) + "\n"
    return documents
