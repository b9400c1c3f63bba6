# -*- coding: utf-8 -*-
"""Types of the planner's inventory variables, one sentence per variable naming the hosts."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest
import yaml

from ansible_collections.ascend.inference.plugins.module_utils.plan import nodes
from ansible_collections.ascend.inference.plugins.module_utils.plan.inventory_types import HOST_VARIABLES, problems

SPEC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "..", "roles", "plan", "meta",
                    "argument_specs.yml")


@pytest.fixture(scope="module", name="options")
def plan_options():
    with open(SPEC) as handle:
        return yaml.safe_load(handle)["argument_specs"]["main"]["options"]


def test_the_issues_examples_in_one_message_each(options):
    found = problems({
        "node1": {"ascend_tensor_parallel_size": 2.5, "ascend_engine": "vllm_ascend",
                  "ascend_additional_config": "graph mode", "ascend_data_parallel_size_local": 1.5},
        "node2": {"ascend_tensor_parallel_size": 2.5, "ascend_engine": "vllm_ascend",
                  "ascend_additional_config": "graph mode"},
    }, options)
    assert found == [
        "ascend_additional_config must be a mapping (found 'graph mode', text) on hosts node1, node2",
        "ascend_data_parallel_size_local must be a whole number (found 1.5, a decimal number) on host node1",
        "ascend_engine must be one of vllm-mindspore, vllm-ascend (found 'vllm_ascend') on hosts node1, node2",
        "ascend_tensor_parallel_size must be a whole number (found 2.5, a decimal number) on hosts node1, node2",
    ]


@pytest.mark.parametrize("variable,value,message", [
    ("ascend_engine_version", 0.5, "ascend_engine_version must be text (found 0.5, a decimal number): quote it"),
    ("ascend_enable_expert_parallel", "maybe", "ascend_enable_expert_parallel must be true or false"),
    ("ascend_launcher", "slurm", "ascend_launcher must be one of ray, mp (found 'slurm')"),
    ("ascend_npu_devices", [0, "one"], "ascend_npu_devices must be a list of whole numbers (found [0, 'one'])"),
    ("ascend_npu_devices", "0,x", "ascend_npu_devices must be a list of whole numbers (found '0,x')"),
    ("ascend_npu_devices", {"a": 1}, "ascend_npu_devices must be a list (found {'a': 1}, a mapping)"),
    ("ascend_additional_config", {1: "a", "1": "b"}, "ascend_additional_config has the key 1, a number: quote it"),
    ("ascend_serve_options", {"x": {True: 1}}, "ascend_serve_options.x has the key True, a boolean: quote it"),
    ("ascend_npus_per_node", True, "ascend_npus_per_node must be a whole number (found True, a boolean)"),
    ("ascend_node_ip", 10, "ascend_node_ip must be text (found 10, a number): quote it"),
    # -e 'ascend_serve_options={"max_model_len": 8192}' arrives cut at the space (issue 61).
    ("ascend_serve_options", '{"max_model_len":', "ascend_serve_options must be a mapping (found '{\"max_model_len\":', "
     "text): -e NAME=VALUE ends the value at its first space; pass JSON whole, as -e '{\"ascend_serve_options\": "
     "...}', or a file, as -e @vars.yml"),
])
def test_wrong_types_are_named(options, variable, value, message):
    found = problems({"h": {variable: value}}, options)
    assert len(found) == 1 and found[0].startswith(message) and found[0].endswith(" on host h"), found


@pytest.mark.parametrize("variable,value", [
    ("ascend_tensor_parallel_size", 8), ("ascend_tensor_parallel_size", "8"),  # INI gives text
    ("ascend_enable_expert_parallel", "yes"), ("ascend_enable_expert_parallel", False),
    ("ascend_npu_devices", [0, 1, "2"]), ("ascend_serve_options", {"max_num_seqs": 8}),
    # What INI and -e key=value give: text that Ansible's argument spec converts.
    ("ascend_npu_devices", "0,1,2,3"), ("ascend_additional_config", '{"enable_graph_mode": true}'),
    ("ascend_enable_expert_parallel", 1), ("ascend_data_parallel_size", 2.0),
    # Unset (YAML's empty value): the plan's default applies.
    ("ascend_nic", None), ("ascend_served_model_name", None),
    ("ascend_engine", "vllm-ascend"), ("ansible_host", 5), ("something_else", object()),
])
def test_right_types_and_unrelated_variables_pass(options, variable, value):
    assert problems({"h": {variable: value}}, options) == []


def test_every_host_variable_is_one_the_plan_reads():
    assert set(HOST_VARIABLES) <= set(nodes.VARIABLES)
    # Each changes the node the plan is given.
    base = nodes.node("n", False, {}, None)
    values = {"ascend_node_ip": "192.0.2.9", "ascend_nic": "eth1", "ascend_npu_devices": [3],
              "ascend_npu_device_map": {"3": 4}, "ascend_npus_per_node": 16, "ascend_data_parallel_size_local": 2,
              "ascend_data_parallel_start_rank": 4}
    for variable in HOST_VARIABLES:
        assert nodes.node("n", False, {variable: values[variable]}, None) != base, variable


def test_the_inventory_comes_before_what_was_detected():
    detected = {"nic": "eth0", "npu_devices": [0, 1], "device_map": {"0": 8}, "npu_family": "910B",
                "device_group": "HwHiAiUser"}
    assert nodes.node("n", True, {"ansible_host": "192.0.2.1", "ascend_nic": "bond0",
                                  "ascend_npu_device_map": {"1": 9}}, detected) == {
        "name": "n", "head": True, "node_ip": "192.0.2.1", "nic": "bond0", "npu_devices": [0, 1],
        "device_map": {"0": 8, "1": 9}, "npu_family": "910B", "device_group": "HwHiAiUser"}


def test_the_serve_only_container_variables_name_their_replacements(options):
    found = problems({"node1": {"serve_container_runtime": "podman", "serve_container_image": "img"},
                      "node2": {"serve_container_runtime": "podman", "serve_container_extra_args": None}}, options)
    assert found == [
        "serve_container_extra_args is no longer read: use engine_container_extra_args on host node2",
        "serve_container_image is no longer read: use ascend_container_image on host node1",
        "serve_container_runtime is no longer read: use ascend_runtime: container with ascend_container_engine "
        "(podman, docker or auto) on hosts node1, node2",
    ]


def test_an_empty_device_list_is_the_inventorys_not_replaced_by_detection():
    # The planner refuses it (an empty list was taken as unset: every detected NPU used, issue 61).
    assert nodes.node("n", False, {"ascend_npu_devices": []}, {"npu_devices": [0, 1]})["npu_devices"] == []
    assert nodes.node("n", False, {"ascend_npu_devices": None}, {"npu_devices": [0, 1]})["npu_devices"] == [0, 1]
