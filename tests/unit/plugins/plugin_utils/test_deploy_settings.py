# -*- coding: utf-8 -*-
"""The roles' settings a deploy refuses from the inventory alone, judged at plan time on the hosts the plan gives
each role, with the phase's own sentences."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.ascend.inference.plugins.plugin_utils import deploy_settings

PLAN = {"cluster": {"node_order": ["h", "w"]}, "router": {"hosts": ["h"]},
        "monitoring": {"exporter": {"enabled": True, "hosts": ["h", "w"]}}}


def test_settings_as_the_role_defaults_leave_them_pass(tmp_path):
    binary = tmp_path / "npu-exporter"
    binary.write_text("")
    hostvars = {"h": {"npu_exporter_binary": str(binary)}, "w": {"npu_exporter_binary": str(binary)}}
    assert deploy_settings.problems(hostvars, PLAN) == []
    # Without the exporter or the router, their settings are not read.
    assert deploy_settings.problems({"h": {}, "w": {}}, dict(PLAN, router=None, monitoring={})) == []


def test_each_rule_names_the_host_and_the_variable(tmp_path):
    hostvars = {"h": {"npu_exporter_binary": str(tmp_path / "nope"), "npu_exporter_extra_args": ["-port=9101"],
                      "router_client_keys": [" padded "], "serve_watchdog_failures": 0},
                "w": {}}
    assert deploy_settings.problems(hostvars, PLAN) == [
        "npu_exporter_binary for h is %s, which is not a file on the controller" % (tmp_path / "nope"),
        "npu_exporter_extra_args on h sets -port, which the collection sets from the plan (ascend_npu_exporter_port, "
        "the node's address)",
        "ascend_npu_exporter is true but npu_exporter_binary is not set for w: give the path of Huawei's npu-exporter "
        "program on the controller (from Ascend-mindxdl-npu-exporter_VERSION_linux-ARCH.zip)",
        "router_client_keys on host h must be a list of keys, each text without surrounding spaces or line breaks",
        "h: serve_watchdog_failures must be at least 1, not 0"]


def test_the_router_takes_the_engines_key_when_no_client_key_is_set():
    plan = dict(PLAN, monitoring={})
    assert deploy_settings.problems({"h": {"ascend_api_key": "k\nk"}, "w": {}}, plan) == [
        "router_client_keys on host h must be a list of keys, each text without surrounding spaces or line breaks"]
    assert deploy_settings.problems({"h": {"ascend_api_key": "key"}, "w": {}}, plan) == []
