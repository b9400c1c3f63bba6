# -*- coding: utf-8 -*-
"""The phases of a plan of several instances (module_utils/phase_instances and the phases that read one): one
apply per node holding every instance's units and files on it, nothing of the others, instances no longer planned
removed; the firewall, restart, status and teardown over all of them."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

import pytest

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible_collections.ascend.inference.plugins.module_utils import (
    phase_firewall, phase_instances, phase_restart, phase_status)
from ansible_collections.ascend.inference.plugins.module_utils.phase import Refused
from ansible_collections.ascend.inference.plugins.module_utils.plan_request import ARGUMENT_SPEC, answer
from ansible_collections.ascend.inference.plugins.modules import node_apply

NODES = [{"name": "h", "head": True, "node_ip": "192.0.2.11", "nic": "eth0", "npus_per_node": 4},
         {"name": "w", "node_ip": "192.0.2.12", "nic": "eth0", "npus_per_node": 4}]
INSTANCES = {"chat": {"hosts": ["h", "w"], "npus_per_host": 2, "data_parallel_size": 2,
                      "extra_env": {"CHAT_TOKEN": "s3cret", "CHAT_LOG": "1"}},
             "embed": {"hosts": ["h"], "npus_per_host": 2, "model": "/models/e"}}
SERVE = {"python_env": "/opt/venv", "executable": "/opt/venv/bin/vllm", "config_dir": "/etc/ascend-inference",
         "restart_sec": 10, "node_env_file": "/etc/ascend-inference/node.env",
         "secrets_file": "/etc/ascend-inference/secrets.env", "ray_env_file": "/etc/ascend-inference/ray.env"}
NODE_ENV = {"file": "/etc/ascend-inference/node.env", "secrets_file": "/etc/ascend-inference/secrets.env",
            "profile": "/etc/profile.d/ascend-inference.sh", "cann_set_env": "/set_env.sh", "services": [],
            "pyacl_site_packages": None}


def make_plan(instances=None):
    params = dict((name, spec.get("default")) for name, spec in ARGUMENT_SPEC.items())
    params.update(engine="vllm-ascend", model="/models/m", launcher="mp", nodes=copy.deepcopy(NODES),
                  instances=copy.deepcopy(INSTANCES if instances is None else instances), extra_env={})
    params.pop("check_nodes")
    found = answer(params)
    assert not found.get("failed"), found
    return dict((key, found[key]) for key in ("cluster", "nodes", "instances", "allocation"))


class FakeNode(object):
    """The controller's view of one host, from plain data; the unit and config directories as find lists them."""

    def __init__(self, host, plan, listed=(), applied=None, instances=None):
        self.host, self.plan, self.check_mode = host, plan, False
        self.listed = list(listed)
        self.records = applied or {}
        self.variables = {"ascend_instances": INSTANCES if instances is None else instances,
                          "ascend_extra_env": {"HF_TOKEN": "hf"}}
        self.ran = []

    def var(self, name, default=None, host=None):
        return self.variables.get(name, default)

    def play_hosts(self):
        return ["h", "w"]

    def applied(self, phase, host=None):
        return self.records.get(host or self.host, {}).get(phase)

    def run(self, module, args):
        self.ran.append((module, args))
        if module == "ansible.builtin.find":
            directory = args["paths"][0]
            return {"files": [{"path": "%s/%s" % (directory, name)} for name in self.listed]}
        # `command -v` of the serve program: found where asked.
        return {"rc": 0, "stdout": args["argv"][-1]}


def units(state):
    return dict((u["name"], u) for u in state["units"])


def accepted(state):
    state = copy.deepcopy(state)
    for spec in state.get("files", []):
        for key in ("template", "values", "source"):
            spec.pop(key, None)
        spec.setdefault("content", "rendered")
    state["secrets"] = dict((path, "rendered") for path in state.get("secrets") or {})
    found = ArgumentSpecValidator(node_apply.ARGUMENT_SPEC).validate(dict(state, node="h"))
    assert not found.error_messages, found.error_messages


def test_each_instance_runs_its_own_unit_on_its_hosts_only():
    plan = make_plan()
    head = phase_instances.serve(FakeNode("h", plan), SERVE)
    state = head["apply"]
    accepted(state)
    assert {"ascend-serve-chat.service", "ascend-serve-embed.service"} <= set(units(state))
    assert units(state)["ascend-serve-embed.service"]["state"] == "started"
    assert head["record"] == {"serves": True, "instances": {"chat": True, "embed": True}}
    written = [f["path"] for f in state["files"]]
    assert "/etc/systemd/system/ascend-serve-embed.service" in written
    assert set(state["secrets"]) == {"/etc/ascend-inference/serve-chat.env", "/etc/ascend-inference/serve-embed.env"}
    worker = phase_instances.serve(FakeNode("w", plan), SERVE)
    state = worker["apply"]
    accepted(state)
    # embed is not on w: its unit and environment go if an earlier plan left them.
    assert units(state)["ascend-serve-embed.service"]["state"] == "absent"
    assert "/etc/ascend-inference/serve-embed.env" in state["absent"]
    assert units(state)["ascend-serve-chat.service"]["state"] == "started"
    chat = next(f for f in state["files"] if f["path"] == "/etc/systemd/system/ascend-serve-chat.service")
    # The instance's own files, and its DP handshake with its head.
    assert "/etc/ascend-inference/node-chat.env" in chat["values"]["env_files"]
    assert "--headless" in chat["values"]["exec_start"]


def test_an_instance_no_longer_planned_and_the_single_models_unit_are_removed():
    plan = make_plan()
    node = FakeNode("h", plan, listed=["ascend-serve-old.service", "ascend-serve.service", "ascend-serve-chat.service",
                                       "ascend-ray.service"])
    result = phase_instances.serve(node, SERVE)
    state = result["apply"]
    accepted(state)
    found = units(state)
    assert found["ascend-serve-old.service"]["state"] == "absent"
    assert found["ascend-serve.service"]["state"] == "absent"
    assert "ascend-ray.service" not in found
    assert {"/etc/systemd/system/ascend-serve-old.service", "/etc/ascend-inference/serve-old.env",
            "/etc/ascend-inference/serve.env"} <= set(state["absent"])
    assert result["notes"] == ["ascend-serve-old.service, ascend-serve.service is in no instance of the plan: "
                               "stopped and removed"]
    # Without the stale units the same plan removes nothing else.
    clean = phase_instances.serve(FakeNode("h", plan, listed=["ascend-serve-chat.service"]), SERVE)
    assert not [u for u in clean["apply"]["units"] if u["state"] == "absent" and "old" in u["name"]]


def test_one_model_again_removes_the_instances_units():
    # ascend_instances emptied: the single model of the ascend_* variables, whose serve phase removes what the
    # instances left.
    params = dict((name, spec.get("default")) for name, spec in ARGUMENT_SPEC.items())
    params.update(engine="vllm-ascend", model="/models/m", launcher="mp", nodes=copy.deepcopy(NODES), instances={},
                  extra_env={}, data_parallel_size=2)
    params.pop("check_nodes")
    single = answer(params)
    assert not single.get("failed") and "instances" not in single
    node = FakeNode("h", single, listed=["ascend-serve-chat.service", "ascend-serve.service"])
    state = phase_instances.serve(node, SERVE)["apply"]
    assert units(state)["ascend-serve-chat.service"]["state"] == "absent"
    assert units(state)["ascend-serve.service"]["state"] == "started"
    assert "/etc/ascend-inference/serve-chat.env" in state["absent"]


def test_each_instance_has_its_environment_and_secrets_and_no_profile():
    plan = make_plan()
    node = FakeNode("h", plan, listed=["node.env", "secrets.env", "node-gone.env", "node-chat.env", "serve-chat.env"],
                    applied={"h": {"preflight": {"cann_env": {"set_env": "/set_env.sh", "rc": 0, "variables": {}}}}})
    result = phase_instances.node_env(node, NODE_ENV)
    state = result["apply"]
    accepted(state)
    written = [f["path"] for f in state["files"]]
    assert "/etc/ascend-inference/node-chat.env" in written and "/etc/ascend-inference/node-embed.env" in written
    assert "/etc/profile.d/ascend-inference.sh" not in written
    assert set(state["absent"]) == {"/etc/ascend-inference/node.env", "/etc/ascend-inference/secrets.env",
                                    "/etc/ascend-inference/node-gone.env", "/etc/profile.d/ascend-inference.sh"}
    chat = next(f for f in state["files"] if f["path"] == "/etc/ascend-inference/node-chat.env")
    embed = next(f for f in state["files"] if f["path"] == "/etc/ascend-inference/node-embed.env")
    assert 'ASCEND_RT_VISIBLE_DEVICES="0,1"' in chat["values"]["environment"]
    assert 'ASCEND_RT_VISIBLE_DEVICES="2,3"' in embed["values"]["environment"]
    assert 'HCCL_IF_BASE_PORT="60000"' in chat["values"]["environment"]
    assert 'HCCL_IF_BASE_PORT="60032"' in embed["values"]["environment"]
    assert 'CHAT_LOG="1"' in chat["values"]["environment"] and "CHAT_LOG" not in embed["values"]["environment"]
    # Secrets: the cluster's in every instance's file, an instance's own only in its own; never in node-*.env.
    secrets = state["secrets"]
    assert "CHAT_TOKEN" in secrets["/etc/ascend-inference/secrets-chat.env"]["values"]["environment"]
    assert "CHAT_TOKEN" not in secrets["/etc/ascend-inference/secrets-embed.env"]["values"]["environment"]
    assert "HF_TOKEN" in secrets["/etc/ascend-inference/secrets-embed.env"]["values"]["environment"]
    assert "s3cret" not in chat["values"]["environment"]
    assert units(state)["ascend-serve-chat.service"]["try_restart_on"] == [
        "/etc/ascend-inference/node-chat.env", "/etc/ascend-inference/secrets-chat.env"]


def test_the_firewall_opens_every_instances_api_port():
    plan = make_plan()
    settings = {"enabled": True, "open_ports": [], "config_dir": "/etc/ascend-inference", "ssh_port": None}
    state = phase_firewall.desired(FakeNode("h", plan), settings)["apply"]
    rules = state["files"][0]["values"]
    assert rules["open_ports"] == "8000, 8001"
    assert rules["members"] == "192.0.2.11, 192.0.2.12"
    assert state["files"][1]["values"]["before"] == ("ascend-ray-chat.service ascend-ray-embed.service "
                                                     "ascend-serve-chat.service ascend-serve-embed.service")


def test_restart_takes_every_instance_or_those_named():
    plan = make_plan()
    every = phase_restart.serve(FakeNode("h", plan), {"instances": None})
    assert [u["name"] for u in every["apply"]["units"]] == ["ascend-serve-chat.service", "ascend-serve-embed.service"]
    one = phase_restart.serve(FakeNode("w", plan), {"instances": ["embed"]})
    assert one["apply"] is None and one["record"] == {"restarted": False, "instances": []}
    with pytest.raises(Refused) as refused:
        phase_restart.serve(FakeNode("h", plan), {"instances": ["chta"]})
    assert str(refused.value) == "no instance chta in ascend_instances (it has chat, embed)"


def test_status_reports_each_instance():
    plan = make_plan()
    shown = "Id=%s\nLoadState=loaded\nActiveState=active\nSubState=running\nNRestarts=0\n" \
            "ActiveEnterTimestamp=Fri 2026-12-04 10:00:00 UTC\n\n"

    class Status(FakeNode):
        def run(self, module, args):
            if module == "ansible.builtin.uri":
                return {"status": 200}
            names = [a for a in args["argv"] if a.endswith(".service")]
            return {"rc": 0, "stdout": "".join(shown % n for n in names if "serve" in n)}

    records = {}
    for host in ("h", "w"):
        records[host] = {"status": phase_status.status(Status(host, plan), {"config_dir": "/c", "python_env": "/p"})[
            "record"]}
    assert sorted(records["h"]["status"]["instances"]) == ["chat", "embed"]
    assert sorted(records["w"]["status"]["instances"]) == ["chat"]
    table = phase_status.report(Status("h", plan, applied=records), {})["show"]
    assert "instance chat: vllm-ascend mp: TP 1 x PP 1 x DP 2" in table
    assert "API http://192.0.2.11:8001: /health 200" in table
    # A stopped instance is named with it.
    records["w"]["status"]["instances"]["chat"]["units"]["ascend-serve-chat.service"]["ActiveState"] = "failed"
    with pytest.raises(Refused) as refused:
        phase_status.report(Status("h", plan, applied=records), {})
    assert "- instance chat: w: ascend-serve-chat.service is not active" in str(refused.value)
