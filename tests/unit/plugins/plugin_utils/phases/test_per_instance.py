# -*- coding: utf-8 -*-
"""The phases of a plan of several instances (plugin_utils/phases/per_instance and the phases that read one): one
apply per node holding every instance's units and files on it, nothing of the others, instances no longer planned
removed; the firewall, restart, status and teardown over all of them."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import re

import pytest

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible_collections.ascend.inference.plugins.module_utils.engines import releases
from ansible_collections.ascend.inference.plugins.plugin_utils.phases import (
    firewall, per_instance, ray as phase_ray, router as phase_router)
from ansible_collections.ascend.inference.plugins.plugin_utils.operations import restart as phase_restart, status
from ansible_collections.ascend.inference.plugins.plugin_utils.phases.phase import Refused
from ansible_collections.ascend.inference.plugins.module_utils.plan.request import ARGUMENT_SPEC, answer
from ansible_collections.ascend.inference.plugins.modules import node_apply
from ansible_collections.ascend.inference.plugins.module_utils.runtime import unit_names

NODES = [{"name": "h", "head": True, "node_ip": "192.0.2.11", "nic": "eth0", "npus_per_node": 4},
         {"name": "w", "node_ip": "192.0.2.12", "nic": "eth0", "npus_per_node": 4}]
INSTANCES = {"chat": {"hosts": ["h", "w"], "npus_per_host": 2, "data_parallel_size": 2,
                      "extra_env": {"CHAT_TOKEN": "s3cret", "CHAT_LOG": "1"}},
             "embed": {"hosts": ["h"], "npus_per_host": 2, "model": "/models/e"}}
SERVE = {"python_env": "/opt/venv", "executable": "/opt/venv/bin/vllm", "config_dir": "/etc/ascend-inference",
         "restart_sec": 10, "node_env_file": "/etc/ascend-inference/node.env",
         "secrets_file": "/etc/ascend-inference/secrets.env", "ray_env_file": "/etc/ascend-inference/ray.env",
         "watchdog_enabled": True, "watchdog_interval": 10, "watchdog_probe_timeout": 60, "watchdog_failures": 2,
         "ready_timeout": 1800}
NODE_ENV = {"file": "/etc/ascend-inference/node.env", "secrets_file": "/etc/ascend-inference/secrets.env",
            "profile": "/etc/profile.d/ascend-inference.sh", "cann_set_env": "/set_env.sh", "services": [],
            "pyacl_site_packages": None}


def make_plan(instances=None, **router):
    params = dict((name, spec.get("default")) for name, spec in ARGUMENT_SPEC.items())
    params.update(router)
    params.update(engine="vllm-ascend", model="/models/m", launcher="mp", nodes=copy.deepcopy(NODES),
                  instances=copy.deepcopy(INSTANCES if instances is None else instances), extra_env={})
    params.pop("check_nodes")
    found = answer(params)
    assert not found.get("failed"), found
    return dict((key, found[key]) for key in ("cluster", "nodes", "instances", "allocation", "router", "pd"))


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
    head = per_instance.serve(FakeNode("h", plan), SERVE)
    state = head["apply"]
    accepted(state)
    assert {"ascend-serve-chat.service", "ascend-serve-embed.service"} <= set(units(state))
    assert units(state)["ascend-serve-embed.service"]["state"] == "started"
    assert {k: head["record"][k] for k in ("serves", "instances", "proxies")} == {
        "serves": True, "instances": {"chat": True, "embed": True}, "proxies": []}
    # Behind the router a replica is not restarted by its files here: restart.changed rolls it (its files listed).
    assert "restart_on" not in units(state)["ascend-serve-embed.service"]
    assert head["record"]["rolled"]["embed"] == {"unit": "ascend-serve-embed.service", "paths": [
        "/etc/ascend-inference/serve-embed.env", "/etc/systemd/system/ascend-serve-embed.service",
        "/etc/ascend-inference/node-embed.env", "/etc/ascend-inference/secrets-embed.env"]}
    unrouted = per_instance.serve(FakeNode("h", make_plan(router_enabled=False)), SERVE)
    assert units(unrouted["apply"])["ascend-serve-embed.service"]["restart_on"] == [
        "/etc/systemd/system/ascend-serve-embed.service", "/etc/ascend-inference/serve-embed.env"]
    assert unrouted["record"]["rolled"] == {}
    written = [f["path"] for f in state["files"]]
    assert "/etc/systemd/system/ascend-serve-embed.service" in written
    assert set(state["secrets"]) == {"/etc/ascend-inference/serve-chat.env", "/etc/ascend-inference/serve-embed.env"}
    worker = per_instance.serve(FakeNode("w", plan), SERVE)
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


def sweeps(state, proxies=False):
    """The serve phase's sweeps by directory: the serve units' and files', or the PD proxies'."""
    return dict((sweep["directory"], sweep) for sweep in state["sweep"]
                if ("pd-" in sweep["pattern"]) == proxies)


def test_what_no_instance_on_the_node_names_is_swept():
    plan = make_plan()
    state = per_instance.serve(FakeNode("h", plan), SERVE)["apply"]
    accepted(state)
    found = sweeps(state)
    # Every serve unit but the instances' on this node (the single model's included), stopped first.
    swept_units = found["/etc/systemd/system"]
    assert swept_units["keep"] == ["ascend-serve-chat.service", "ascend-serve-embed.service"] and swept_units["units"]
    assert re.fullmatch(swept_units["pattern"], "ascend-serve.service")
    assert re.fullmatch(swept_units["pattern"], "ascend-serve-old.service")
    assert not re.fullmatch(swept_units["pattern"], "ascend-ray.service")
    env = found["/etc/ascend-inference"]
    assert env["keep"] == sorted(["serve-chat.env", "node-chat.env", "secrets-chat.env", "serve-embed.env",
                                  "node-embed.env", "secrets-embed.env"])
    for name in ("serve.env", "serve-old.env", "node-old.env", "secrets-old.env"):
        assert re.fullmatch(env["pattern"], name), name
    # node.env and secrets.env are node_env's to sweep.
    assert not re.fullmatch(env["pattern"], "node.env") and not re.fullmatch(env["pattern"], "secrets.env")
    # On w, embed (not there) keeps nothing.
    worker = sweeps(per_instance.serve(FakeNode("w", plan), SERVE)["apply"])
    assert worker["/etc/systemd/system"]["keep"] == ["ascend-serve-chat.service"]


def test_one_model_again_removes_the_instances_units():
    # ascend_instances emptied: the single model of the ascend_* variables, whose phases sweep what the
    # instances left.
    params = dict((name, spec.get("default")) for name, spec in ARGUMENT_SPEC.items())
    params.update(engine="vllm-ascend", model="/models/m", launcher="mp", nodes=copy.deepcopy(NODES), instances={},
                  extra_env={}, data_parallel_size=2)
    params.pop("check_nodes")
    single = answer(params)
    assert not single.get("failed") and "instances" not in single
    state = per_instance.serve(FakeNode("h", single), SERVE)["apply"]
    assert units(state)["ascend-serve.service"]["state"] == "started"
    found = sweeps(state)
    assert found["/etc/systemd/system"]["keep"] == ["ascend-serve.service"]
    assert found["/etc/ascend-inference"]["keep"] == ["serve.env"]
    cann = {"cann_env": {"set_env": "/set_env.sh", "rc": 0, "variables": {}}}
    node = FakeNode("h", single, applied={"h": {"preflight": cann}})
    env = per_instance.node_env(node, NODE_ENV)["apply"]
    assert sweeps(env)["/etc/ascend-inference"]["keep"] == ["node.env", "secrets.env"]
    assert re.fullmatch(sweeps(env)["/etc/ascend-inference"]["pattern"], "secrets-chat.env")
    with pytest.raises(Refused) as refused:
        phase_restart.serve(FakeNode("h", single), {"instances": "chat"})
    assert str(refused.value).startswith("serve_restart_instances names chat, but ascend_instances is not set")


def test_each_instance_has_its_environment_and_secrets_and_no_profile():
    plan = make_plan()
    node = FakeNode("h", plan,
                    applied={"h": {"preflight": {"cann_env": {"set_env": "/set_env.sh", "rc": 0, "variables": {}}}}})
    result = per_instance.node_env(node, NODE_ENV)
    state = result["apply"]
    accepted(state)
    written = [f["path"] for f in state["files"]]
    assert "/etc/ascend-inference/node-chat.env" in written and "/etc/ascend-inference/node-embed.env" in written
    assert "/etc/profile.d/ascend-inference.sh" not in written
    assert state["absent"] == ["/etc/profile.d/ascend-inference.sh"]
    swept = sweeps(state)["/etc/ascend-inference"]
    assert swept["keep"] == ["node-chat.env", "secrets-chat.env", "node-embed.env", "secrets-embed.env"]
    for name in ("node.env", "secrets.env", "node-gone.env", "secrets-gone.env"):
        assert re.fullmatch(swept["pattern"], name), name
    assert not re.fullmatch(swept["pattern"], "serve-chat.env")
    chat = next(f for f in state["files"] if f["path"] == "/etc/ascend-inference/node-chat.env")
    embed = next(f for f in state["files"] if f["path"] == "/etc/ascend-inference/node-embed.env")
    assert 'ASCEND_RT_VISIBLE_DEVICES="0,1"' in chat["values"]["environment"]
    assert 'ASCEND_RT_VISIBLE_DEVICES="2,3"' in embed["values"]["environment"]
    assert 'HCCL_IF_BASE_PORT="60000"' in chat["values"]["environment"]
    assert 'HCCL_IF_BASE_PORT="60064"' in embed["values"]["environment"]
    assert 'CHAT_LOG="1"' in chat["values"]["environment"] and "CHAT_LOG" not in embed["values"]["environment"]
    # Secrets: the cluster's in every instance's file, an instance's own only in its own; never in node-*.env.
    secrets = state["secrets"]
    assert "CHAT_TOKEN" in secrets["/etc/ascend-inference/secrets-chat.env"]["values"]["environment"]
    assert "CHAT_TOKEN" not in secrets["/etc/ascend-inference/secrets-embed.env"]["values"]["environment"]
    assert "HF_TOKEN" in secrets["/etc/ascend-inference/secrets-embed.env"]["values"]["environment"]
    assert "s3cret" not in chat["values"]["environment"]
    # Behind the router no replica restarts here (the serve phase rolls it); without one, it does.
    assert "ascend-serve-chat.service" not in units(state)
    unrouted = per_instance.node_env(FakeNode("h", make_plan(router_enabled=False), applied=node.records), NODE_ENV)
    assert units(unrouted["apply"])["ascend-serve-chat.service"]["try_restart_on"] == [
        "/etc/ascend-inference/node-chat.env", "/etc/ascend-inference/secrets-chat.env"]
    # node_env's second step restarts the one model's Ray on a worker; with instances there is none to restart,
    # even where the head's record and the worker's would ask for it.
    plan["cluster"]["launcher"] = "ray"
    records = {"h": {"node_env": {"steps": [{"unit": "ascend-ray.service", "action": "try-restart", "at": 1.0}]}},
               "w": {"node_env": {"ray_due": True}}}
    settings = dict(NODE_ENV, services=["ascend-ray.service", "ascend-serve.service"])
    assert per_instance.node_env_ray(FakeNode("w", plan, applied=records), settings)["apply"] is None


def test_without_a_router_no_instance_api_port_is_open():
    # vLLM answers /invocations and others without its key: members only, router or not (docs/security.md).
    plan = make_plan(router_enabled=False)
    settings = {"enabled": True, "open_ports": [], "config_dir": "/etc/ascend-inference", "ssh_port": None}
    state = firewall.desired(FakeNode("h", plan), settings)["apply"]
    rules = state["files"][0]["values"]
    assert rules["open_ports"] == ""
    assert rules["members"] == "192.0.2.11, 192.0.2.12"
    assert state["files"][1]["values"]["before"] == ("ascend-ray-chat.service ascend-ray-embed.service "
                                                     "ascend-serve-chat.service ascend-serve-embed.service")


def test_with_a_router_only_its_port_is_open_and_only_on_its_hosts():
    plan = make_plan()
    settings = {"enabled": True, "open_ports": [], "config_dir": "/etc/ascend-inference", "ssh_port": None}
    # The router's default host: the head of the first instance in name order (chat, on h).
    assert plan["router"]["hosts"] == ["h"]
    head = firewall.desired(FakeNode("h", plan), settings)["apply"]
    assert head["files"][0]["values"]["open_ports"] == "8080"
    assert "ascend-router.service" in head["files"][1]["values"]["before"]
    worker = firewall.desired(FakeNode("w", plan), dict(settings, open_ports=[22]))["apply"]
    assert worker["files"][0]["values"]["open_ports"] == "22"
    assert firewall.desired(FakeNode("w", plan), settings)["apply"]["files"][0]["values"]["open_ports"] == ""


ROUTER = {"package": "haproxy", "program": "/usr/sbin/haproxy", "maxconn": 100, "buffer_bytes": 65536, "timeout_seconds": 600,
          "check_interval_ms": 2000, "check_fall": 3, "check_rise": 2, "check_timeout_ms": 5000,
          "tls_certificate": ""}


def test_the_router_routes_each_served_name_and_keeps_the_keys_in_0600_files():
    plan = make_plan(INSTANCES_REPLICAS)
    node = FakeNode("h", plan, instances=INSTANCES_REPLICAS)
    node.variables.update(ascend_api_key="engine-key", router_client_keys=["client-1", "client-2"])
    state = phase_router.desired(node, ROUTER)["apply"]
    accepted(state)
    files = dict((spec["path"], spec) for spec in state["files"])
    directory = "/etc/ascend-inference/router"
    # Its parent first: in container mode no other phase makes the configuration directory on the host.
    assert [d["path"] for d in state["directories"]] == ["/etc/ascend-inference", directory]
    assert files[directory + "/models.map"]["content"] == "qwen model-chat\n/models/e model-embed\n"
    assert '"id": "qwen"' in files[directory + "/models.json"]["content"]
    for secret in ("/clients.keys", "/router.env"):
        assert files[directory + secret]["mode"] == "0600" and "content" not in files[directory + secret]
    assert state["secrets"][directory + "/clients.keys"] == "Bearer client-1\nBearer client-2\n"
    assert state["secrets"][directory + "/router.env"] == 'ASCEND_ROUTER_ENGINE_KEY="engine-key"\n'
    values = files[directory + "/haproxy.cfg"]["values"]
    backends = dict((b["served_model_name"], b) for b in values["backends"])
    # Two replicas of qwen (chat on h, chat2 on w), each on its instance's head and API port.
    assert [(s["name"], s["address"], s["port"]) for s in backends["qwen"]["servers"]] == [
        ("chat", "192.0.2.11", plan["instances"]["chat"]["cluster"]["api_port"]),
        ("chat2", "192.0.2.12", plan["instances"]["chat2"]["cluster"]["api_port"])]
    assert values["health_down"] == "{ path /health } down_model-chat || { path /health } down_model-embed"
    assert (values["bind"], values["metrics_bind"]) == (":8080", "192.0.2.11:8404")
    unit = units(state)["ascend-router.service"]
    # A route changes with a reload (requests in flight finish); the engines' key is the process's environment.
    assert unit["reload_on"] == [directory + "/haproxy.cfg", directory + "/models.map", directory + "/models.json",
                                 directory + "/clients.keys"]
    assert unit["restart_on"] == ["/etc/systemd/system/ascend-router.service", directory + "/router.env"]
    # The package where the program is missing, the program judged before any route is written, /health waited for.
    assert state["packages"] == [{"name": "haproxy", "program": "/usr/sbin/haproxy"}]
    (build,) = state["requires"]
    assert build["argv"] == ["/usr/sbin/haproxy", "-vv"] and build["minimum"] == "2.6"
    assert build["contains"] == ["prometheus-exporter"] and "router_program" in build["fix"]
    assert [answer["url"] for answer in state["answers"]] == ["http://127.0.0.1:8080/health"]
    tls = phase_router.desired(node, dict(ROUTER, tls_certificate="/etc/ssl/router.pem"))["apply"]
    assert [answer["url"] for answer in tls["answers"]] == ["https://127.0.0.1:8080/health"]


INSTANCES_REPLICAS = {"chat": {"hosts": ["h"], "npus_per_host": 2, "served_model_name": "qwen"},
                      "chat2": {"hosts": ["w"], "npus_per_host": 2, "served_model_name": "qwen"},
                      "embed": {"hosts": ["h"], "npus_per_host": 2, "model": "/models/e"}}


def test_the_router_is_removed_where_it_does_not_run():
    plan = make_plan(INSTANCES_REPLICAS)
    state = phase_router.desired(FakeNode("w", plan, instances=INSTANCES_REPLICAS), ROUTER)["apply"]
    assert units(state)["ascend-router.service"]["state"] == "absent"
    assert state["absent"] == ["/etc/systemd/system/ascend-router.service", "/etc/ascend-inference/router"]
    disabled = make_plan(INSTANCES_REPLICAS, router_enabled=False)
    state = phase_router.desired(FakeNode("h", disabled, instances=INSTANCES_REPLICAS), ROUTER)["apply"]
    assert units(state)["ascend-router.service"]["state"] == "absent"


def test_a_node_without_the_router_skips_its_round_trip_only_where_the_probe_saw_nothing_of_it():
    plan = make_plan(INSTANCES_REPLICAS)
    unit, directory = "/etc/systemd/system/ascend-router.service", "/etc/ascend-inference/router"
    assert phase_router.leftovers(plan) == [unit, directory]
    clean = FakeNode("w", plan, instances=INSTANCES_REPLICAS)
    clean.records = {"w": {"preflight": {"present": {unit: False, directory: False}}}}
    assert phase_router.desired(clean, ROUTER) == {"apply": None, "record": {"routes": False}}
    left = FakeNode("w", plan, instances=INSTANCES_REPLICAS)
    left.records = {"w": {"preflight": {"present": {unit: False, directory: True}}}}
    assert phase_router.desired(left, ROUTER)["apply"]["absent"] == [unit, directory]
    # No probe of this run (or one that did not look): removed as before.
    unprobed = FakeNode("w", plan, instances=INSTANCES_REPLICAS)
    assert phase_router.desired(unprobed, ROUTER)["apply"]["absent"] == [unit, directory]


def test_clients_keys_default_to_the_engines_and_none_is_warned():
    plan = make_plan()
    node = FakeNode("h", plan)
    node.variables.update(ascend_api_key="engine-key")
    assert phase_router.desired(node, ROUTER)["apply"]["secrets"][
        "/etc/ascend-inference/router/clients.keys"] == "Bearer engine-key\n"
    node.variables.pop("ascend_api_key")
    found = phase_router.desired(node, ROUTER)
    assert found["warnings"] == ["the router on h checks no client key: neither router_client_keys nor ascend_api_key "
                                 "is set, so anyone who reaches port 8080 can use every model"]
    assert found["apply"]["secrets"]["/etc/ascend-inference/router/router.env"] == ""
    node.variables["router_client_keys"] = ["two words ", "ok"]
    with pytest.raises(Refused) as refused:
        phase_router.desired(node, ROUTER)
    assert "router_client_keys on host h must be a list of keys" in str(refused.value)


def test_restart_takes_every_instance_or_those_named():
    plan = make_plan()
    every = phase_restart.serve(FakeNode("h", plan), {"instances": None})
    assert [u["name"] for u in every["apply"]["units"]] == ["ascend-serve-chat.service", "ascend-serve-embed.service"]
    one = phase_restart.serve(FakeNode("w", plan), {"instances": ["embed"]})
    assert one["apply"] is None and one["record"] == {"restarted": False, "instances": []}
    with pytest.raises(Refused) as refused:
        phase_restart.serve(FakeNode("h", plan), {"instances": ["chta"]})
    assert str(refused.value) == "no instance chta in ascend_instances (it has chat, embed)"
    # As -e gives them: text, spaces allowed.
    both = phase_restart.serve(FakeNode("h", plan), {"instances": "chat, embed"})
    assert both["record"]["instances"] == ["chat", "embed"]


def test_status_reports_each_instance():
    plan = make_plan()
    shown = "Id=%s\nLoadState=loaded\nActiveState=active\nSubState=running\nNRestarts=0\n" \
            "ActiveEnterTimestamp=Fri 2026-12-04 10:00:00 UTC\n\n"

    # The router's runtime API as router_server reads it (HAProxy's show stat): embed's replica drained.
    replicas = [{"backend": "model-chat", "server": "chat", "status": "UP", "sessions": 0},
                {"backend": "model-embed", "server": "embed", "status": "DRAIN", "sessions": 0}]

    class Status(FakeNode):
        def run(self, module, args):
            if module == "ansible.builtin.uri":
                return {"status": 200}
            if module == "ascend.inference.router_server":
                return {"servers": replicas}
            names = [a for a in args["argv"] if a.endswith(".service")]
            return {"rc": 0, "stdout": "".join(shown % n for n in names if "serve" in n or "router" in n)}

    records = {}
    for host in ("h", "w"):
        records[host] = {"status": status.status(Status(host, plan), {"config_dir": "/c", "python_env": "/p"})[
            "record"]}
    assert sorted(records["h"]["status"]["instances"]) == ["chat", "embed"]
    assert sorted(records["w"]["status"]["instances"]) == ["chat"]
    assert "router" in records["h"]["status"] and "router" not in records["w"]["status"]
    with pytest.raises(Refused) as refused:
        status.report(Status("h", plan, applied=records), {})
    assert "router on h (port 8080): active/running\n  /models/m: chat UP\n  /models/e: embed DRAIN" in str(refused.value)
    assert str(refused.value).endswith("- the router on h: replica embed of /models/e is DRAIN")
    replicas[1]["status"] = "UP"
    table = status.report(Status("h", plan, applied=records), {})["show"]
    assert "instance chat: vllm-ascend mp: TP 1 x PP 1 x DP 2" in table
    assert "API http://192.0.2.11:8001: /health 200" in table
    # A stopped instance is named with it.
    records["w"]["status"]["instances"]["chat"]["units"]["ascend-serve-chat.service"]["ActiveState"] = "failed"
    with pytest.raises(Refused) as refused:
        status.report(Status("h", plan, applied=records), {})
    assert "- instance chat: w: ascend-serve-chat.service is not active" in str(refused.value)


def test_each_instances_model_is_checked_where_it_runs():
    from ansible_collections.ascend.inference.plugins.plugin_utils.phases import preflight
    from ansible_collections.ascend.inference.plugins.module_utils.plan import preflight_checks
    plan = make_plan()

    class Probe(FakeNode):
        def run(self, module, args):
            self.ran.append((module, args))
            return {"failed": False, "ipv4": {}, "npu_smi": {"rc": 0}, "npu": {"chips": [], "device_map": {},
                                                                               "family": None},
                    "service": {"device_group": None}, "engine": None}

    probe = Probe("w", plan)
    preflight.desired(probe, {"check_models": True, "context": {}, "model": None})
    # w runs chat only (embed is on h): chat's model is ascend_model's.
    assert probe.ran[0][1]["models"] == ["/models/m"]
    found = {"models": {"/models/m": {"files": 0, "bytes": 0}, "/models/e": {"files": 2, "bytes": 9}}}
    assert preflight_checks._instance_model_problems(found, plan, "w", {}) == [
        "the model of instance chat, /models/m, does not exist or holds no file (ascend_instances.chat.model, else "
        "ascend_model)"]
    assert preflight_checks._instance_model_problems(found, plan, "h", {"model_pending": True}) == []


RAY = {"env": "/opt/venv", "create_env": True, "version": "2.52.0", "package": "ray", "wheelhouse": "", "auth": "auto",
       "config_dir": "/etc/ascend-inference", "barrier_timeout": 300, "firewall_enabled": True,
       "node_env_file": "/etc/ascend-inference/node.env", "secrets_file": "/etc/ascend-inference/secrets.env",
       "check_peer": False}
# big on the Ray launcher over both hosts (TP 2 x PP 2), chat beside it on h under mp.
RAY_INSTANCES = {"big": {"hosts": ["h", "w"], "npus_per_host": 2, "launcher": "ray", "tensor_parallel_size": 2,
                         "pipeline_parallel_size": 2},
                 "chat": {"hosts": ["h"], "npus_per_host": 2}}


def ray_node(host, plan, instances=None):
    ran = {"python": "3.11.2", "ray": "2.52.0"}
    node = FakeNode(host, plan, applied={"h": {"ray_install": ran}, "w": {"ray_install": ran}},
                    instances=RAY_INSTANCES if instances is None else instances)
    node.variables["ray_cluster_token_read"] = {"held": True, "token": "t0k3n"}
    return node


def test_an_instance_on_the_ray_launcher_gets_its_own_ray_cluster():
    plan = make_plan(RAY_INSTANCES)
    assert plan["cluster"]["ray_instances"] == ["big"] and plan["nodes"]["w"]["ray_instance"] == "big"
    for host in ("h", "w"):
        result = per_instance.ray(ray_node(host, plan), RAY)
        state = result["apply"]
        accepted(state)
        ray = units(state)["ascend-ray-big.service"]
        assert ray["state"] == "started" and ray["file"] == "/etc/systemd/system/ascend-ray-big.service"
        files = dict((f["path"], f) for f in state["files"])
        # Its own token and environment; Ray reads the instance's node environment (its NPUs only).
        assert state["secrets"] == {"/etc/ascend-inference/ray-auth-token-big": "t0k3n"}
        assert "/etc/ascend-inference/ray-big.env" in files
        values = files["/etc/systemd/system/ascend-ray-big.service"]["values"]
        assert values["env_file"] == "/etc/ascend-inference/node-big.env"
        assert values["secrets_file"] == "/etc/ascend-inference/secrets-big.env"
        assert values["ray_env"] == "/etc/ascend-inference/ray-big.env"
        found = sweeps(state)
        # What another plan left goes: the single model's Ray unit and files, another instance's.
        assert found["/etc/systemd/system"]["keep"] == ["ascend-ray-big.service"]
        for name in ("ascend-ray.service", "ascend-ray-old.service"):
            assert re.fullmatch(found["/etc/systemd/system"]["pattern"], name)
        assert not re.fullmatch(found["/etc/systemd/system"]["pattern"], "ascend-serve-big.service")
        assert found["/etc/ascend-inference"]["keep"] == ["ray-auth-token-big", "ray-big.env"]
        for name in ("ray.env", "ray-auth-token", "ray-old.env", "ray-auth-token-old"):
            assert re.fullmatch(found["/etc/ascend-inference"]["pattern"], name), name
        assert not re.fullmatch(found["/etc/ascend-inference"]["pattern"], "serve-big.env")
    # The worker waits for its head's Ray port, the instance's.
    worker = units(per_instance.ray(ray_node("w", plan), RAY)["apply"])["ascend-ray-big.service"]
    assert worker["wait_for"]["host"] == "192.0.2.11" and worker["wait_for"]["port"] == 6379


def test_a_node_in_no_ray_cluster_keeps_nothing_of_ray():
    instances = {"big": {"hosts": ["w"], "launcher": "ray", "tensor_parallel_size": 4}, "chat": {"hosts": ["h"]}}
    plan = make_plan(instances)
    node = ray_node("h", plan, instances)
    result = per_instance.ray(node, RAY)
    assert result["record"] == {"restarted": False}
    assert result["apply"]["absent"] == ["/etc/ascend-inference/ray-cluster-nodes.py"]
    assert [s["keep"] for s in result["apply"]["sweep"]] == [[], []]
    # Nothing to read or restart there.
    assert per_instance.ray_token(node, RAY)["result"] == {"held": False, "token": "", "candidate": ""}
    assert not node.ran
    assert phase_restart.ray(node, RAY) == {"apply": None, "record": {"restarted": False}}


def test_the_ray_instances_token_restart_serve_and_probe_are_its_own():
    plan = make_plan(RAY_INSTANCES)
    node = ray_node("w", plan)
    node.run = lambda module, args: node.ran.append(args) or {"rc": 0, "stdout": "held\nt0k3n"}
    assert per_instance.ray_token(node, RAY)["result"]["token"] == "t0k3n"
    assert node.ran[0]["argv"][-1] == "/etc/ascend-inference/ray-auth-token-big"
    restart = phase_restart.ray(ray_node("w", plan), RAY)["apply"]["units"][0]
    assert restart["name"] == "ascend-ray-big.service" and restart["wait_for"]["port"] == 6379
    head = per_instance.serve(FakeNode("h", plan, instances=RAY_INSTANCES), SERVE)["apply"]
    unit = next(f for f in head["files"] if f["path"] == "/etc/systemd/system/ascend-serve-big.service")
    assert unit["values"]["part_of"] == "ascend-ray-big.service"
    assert "/etc/ascend-inference/ray-big.env" in unit["values"]["env_files"]
    probe = phase_ray.probe_argv(plan["instances"]["big"], "/etc/ascend-inference", "/opt/venv", None)
    assert probe[4] == "/etc/ascend-inference/ray-auth-token-big" and "ascend-ray-big.service" in probe


PD = {"chat": {"served_model_name": "qwen", "prefill": {"hosts": ["h"], "npus_per_host": 2, "tensor_parallel_size": 2},
               "decode": {"hosts": ["w"], "npus_per_host": 2, "data_parallel_size": 2}}}


def test_the_proxy_of_a_pd_instance_runs_on_its_host_with_the_key_in_a_0600_file():
    plan = make_plan(PD, pd_proxy_dir="/opt/vllm-ascend/examples/disaggregated_prefill_v1")
    proxy_host = FakeNode("w", plan, instances=PD)
    proxy_host.variables["ascend_api_key"] = "k3y"
    result = per_instance.serve(proxy_host, SERVE)
    state = result["apply"]
    accepted(state)
    unit = units(state)["ascend-pd-chat.service"]
    assert unit["state"] == "started" and unit["restart_on"] == [
        "/etc/systemd/system/ascend-pd-chat.service", "/etc/ascend-inference/pd-chat.env"]
    files = dict((spec["path"], spec) for spec in state["files"])
    assert files["/etc/ascend-inference/pd-chat.env"]["mode"] == "0600"
    assert state["secrets"]["/etc/ascend-inference/pd-chat.env"]["values"]["environment"] == 'OPENAI_API_KEY="k3y"'
    exec_start = files["/etc/systemd/system/ascend-pd-chat.service"]["values"]["exec_start"]
    assert exec_start.startswith('"/opt/ascend-inference/venv/bin/python" "/opt/vllm-ascend/examples/'
                                 'disaggregated_prefill_v1/load_balance_proxy_server_example.py" "--host" "192.0.2.12"')
    assert result["record"]["proxies"] == ["ascend-pd-chat.service"]
    kept = sweeps(state, proxies=True)
    assert kept["/etc/systemd/system"]["keep"] == ["ascend-pd-chat.service"]
    assert kept["/etc/ascend-inference"]["keep"] == ["pd-chat.env"]
    # The pools' own units: chat-prefill on h, chat-decode on w.
    assert "ascend-serve-chat-decode.service" in units(state)
    head = per_instance.serve(FakeNode("h", plan, instances=PD), SERVE)["apply"]
    assert "ascend-serve-chat-prefill.service" in units(head) and "ascend-pd-chat.service" not in units(head)
    assert sweeps(head, proxies=True)["/etc/systemd/system"]["keep"] == []
    assert re.fullmatch(sweeps(head, proxies=True)["/etc/systemd/system"]["pattern"], "ascend-pd-old.service")


def test_status_shows_the_pools_and_the_proxy_and_names_a_dead_decode():
    plan = make_plan(PD, pd_proxy_dir="/opt/pd")
    shown = "Id=%s\nLoadState=loaded\nActiveState=%s\nSubState=running\nNRestarts=0\n" \
            "ActiveEnterTimestamp=Fri 2026-12-04 10:00:00 UTC\n\n"
    dead = set()

    class Status(FakeNode):
        def run(self, module, args):
            if module == "ansible.builtin.uri":
                return {"status": 200}
            if module == "ascend.inference.router_server":
                return {"servers": [{"backend": "model-chat", "server": "chat", "status": "UP", "sessions": 0}]}
            names = [a for a in args["argv"] if a.endswith(".service")]
            return {"rc": 0, "stdout": "".join(shown % (n, "failed" if n in dead else "active") for n in names
                                               if "serve" in n or "router" in n or "pd" in n)}

    def records():
        return dict((host, {"status": status.status(Status(host, plan, instances=PD),
                                                    {"config_dir": "/c", "python_env": "/p"})["record"]})
                    for host in ("h", "w"))

    found = records()
    assert sorted(found["w"]["status"]["proxies"]) == ["chat"] and "proxies" not in found["h"]["status"]
    table = status.report(Status("h", plan, applied=found, instances=PD), {})["show"]
    assert ("prefill/decode chat: proxy on w (port 8001) active/running, /healthcheck 200; prefill chat-prefill on "
            "h, decode chat-decode on w") in table
    assert "instance chat-decode: vllm-ascend mp: TP 1 x PP 1 x DP 2" in table
    dead.add("ascend-serve-chat-decode.service")
    with pytest.raises(Refused) as refused:
        status.report(Status("h", plan, applied=records(), instances=PD), {})
    assert "- instance chat-decode: w: ascend-serve-chat-decode.service is not active" in str(refused.value)
    dead.add("ascend-pd-chat.service")
    with pytest.raises(Refused) as refused:
        status.report(Status("h", plan, applied=records(), instances=PD), {})
    assert "- the proxy of chat on w is failed/running (journalctl -u ascend-pd-chat.service)" in str(refused.value)


def test_preflight_names_a_missing_proxy_its_packages_and_a_held_kv_port():
    from ansible_collections.ascend.inference.plugins.module_utils.plan import preflight_checks
    plan = make_plan(PD, pd_proxy_dir="/opt/pd")
    script = "/opt/pd/load_balance_proxy_server_example.py"
    python = {"path": "/opt/venv/bin/python", "version": "3.11.2",
              "distributions": {"ray": "2.52.1", "fastapi": "0.115.0", "httpx": None, "uvicorn": "0.30.0",
                                "mooncake-transfer-engine-npu": "0.3.13.post1"}}
    assert preflight_checks._pd_problems({"python": python, "pd_proxy": {script: False}}, plan, "w") == [
        "instance chat: vllm-ascend's proxy /opt/pd/load_balance_proxy_server_example.py does not exist "
        "(ascend_pd_proxy_dir: the directory examples/disaggregated_prefill_v1 of vllm-ascend's source, which its "
        "sdist on PyPI holds)",
        "instance chat: the proxy runs on /opt/venv/bin/python, which lacks httpx (vLLM installs them with the engine)"]
    # The prefill's host runs no proxy; a pool's host needs the transfer engine.
    assert preflight_checks._pd_problems({"python": python, "pd_proxy": {}}, plan, "h") == []
    bare = dict(python, distributions=dict(python["distributions"], **{"mooncake-transfer-engine-npu": None}))
    assert preflight_checks._pd_problems({"python": bare, "pd_proxy": {}}, plan, "h") == [
        "instance chat: /opt/venv/bin/python, the engine's Python, has no Mooncake transfer engine "
        "(mooncake-transfer-engine-npu or mooncake-transfer-engine), which vllm-ascend's connector imports "
        "(mooncake.engine): pip install mooncake-transfer-engine-npu there"]
    kv_port = plan["pd"]["chat"]["pools"]["prefill"]["kv_port"]
    listener = {"port": kv_port + 1, "process": "python3", "pid": 42, "uid": 0, "unit": None}
    assert preflight_checks._port_problems({"listeners": [listener]}, plan, "h") == [
        "ascend_instances.chat.kv_transfer (the prefill pool's KV port %d of %d-%d) %d is in use by python3 (pid 42)"
        % (kv_port + 1, kv_port, kv_port + 1, kv_port + 1)]
    # The proxy's own unit may hold its port.
    proxy = {"port": plan["pd"]["chat"]["proxy"]["port"], "process": "python", "pid": 7, "uid": 0,
             "unit": "ascend-pd-chat.service"}
    assert preflight_checks._port_problems({"listeners": [proxy]}, plan, "w") == []


def test_a_rolling_restart_rolls_router_servers_and_restarts_pd_pools_together():
    instances = dict(PD, solo={"hosts": ["h"], "npus_per_host": 2, "model": "/models/e"})
    plan = make_plan(instances, pd_proxy_dir="/opt/pd")
    node = FakeNode("h", plan, instances=instances)
    assert phase_restart.rolling(node, {"instances": None})["result"] == {
        "rolling": ["solo"], "together": ["chat-decode", "chat-prefill"]}
    assert phase_restart.rolling(node, {"instances": "chat-prefill"})["result"] == {
        "rolling": [], "together": ["chat-prefill"]}


def test_pd_pools_ping_each_other_from_every_pool_npu():
    from ansible_collections.ascend.inference.plugins.plugin_utils.phases import npu_network
    plan = make_plan(PD, pd_proxy_dir="/opt/pd")
    # npu_query's records: the IPs hccn_tool gave for each physical ID (prefill h: NPUs 0,1; decode w: NPUs 0,1).
    records = {"h": {"checked": True, "npus": {"0": {"ip": "10.1.0.10"}, "1": {"ip": "10.1.0.11"}}},
               "w": {"checked": True, "npus": {"0": {"ip": "10.1.0.20"}, "1": {"ip": "10.1.0.21"}}}}
    assert npu_network.pd_ping_targets(plan, records, "h") == [
        {"device": 0, "address": "10.1.0.20", "node": "w", "kind": "ping"},
        {"device": 1, "address": "10.1.0.20", "node": "w", "kind": "ping"}]
    assert npu_network.pd_ping_targets(plan, records, "w") == [
        {"device": 0, "address": "10.1.0.10", "node": "h", "kind": "ping"},
        {"device": 1, "address": "10.1.0.10", "node": "h", "kind": "ping"}]
    # A host whose NPUs were not checked is not pinged.
    assert npu_network.pd_ping_targets(plan, dict(records, w={"checked": False}), "h") == []


def test_llmdatadist_pools_get_the_rank_table_from_the_npu_ips_read_in_the_play():
    plan = make_plan(PD, pd_proxy_dir="/opt/pd", engine_version="0.11.0")
    queried = {"h": {"npu_query": {"checked": True, "npus": {"0": {"ip": "10.1.0.10"}, "1": {"ip": "10.1.0.11"}}}},
               "w": {"npu_query": {"checked": True, "npus": {"0": {"ip": "10.1.0.20"}, "1": {"ip": "10.1.0.21"}}}}}
    state = per_instance.serve(FakeNode("h", plan, applied=queried, instances=PD), SERVE)["apply"]
    accepted(state)
    files = dict((spec["path"], spec) for spec in state["files"])
    table = json.loads(files["/etc/ascend-inference/ranktable-chat.json"]["content"])
    assert [d["device_ip"] for d in table["prefill_device_list"] + table["decode_device_list"]] == [
        "10.1.0.10", "10.1.0.11", "10.1.0.20", "10.1.0.21"]
    # The prefill pool restarts when its table changes; a table no instance names any more is swept.
    assert "/etc/ascend-inference/ranktable-chat.json" in units(state)["ascend-serve-chat-prefill.service"]["restart_on"]
    kept = sweeps(state, proxies=True)["/etc/ascend-inference"]
    assert kept["keep"] == ["ranktable-chat.json"] and re.fullmatch(kept["pattern"], "ranktable-old.json")
    # Without the NPU network check's answers in this play (a --tags serve run), nothing is written.
    with pytest.raises(Refused) as refused:
        per_instance.serve(FakeNode("h", plan, instances=PD), SERVE)
    assert "instance chat: cannot write LLMDataDist's rank table /etc/ascend-inference/ranktable-chat.json" in str(
        refused.value)


def watchdog_config(state):
    written = next(f for f in state["files"] if f["path"].endswith("/watchdog-chat.json"))
    return json.loads(written["content"])


def test_a_dp_group_across_nodes_gets_a_watchdog_on_each_of_its_nodes():
    """chat is mp DP 2 over h and w (vLLM's handshake is at start-up only): the head probes every rank, the headless
    node watches the head; embed, on h alone, gets none."""
    plan = make_plan()
    head = per_instance.serve(FakeNode("h", plan), SERVE)["apply"]
    accepted(head)
    assert units(head)["ascend-watchdog-chat.service"]["state"] == "started"
    assert "ascend-watchdog-embed.service" not in units(head)
    config = watchdog_config(head)
    cluster = plan["instances"]["chat"]["cluster"]
    assert config["role"] == "head" and config["serve_unit"] == "ascend-serve-chat.service"
    assert config["head_url"] == "http://%s:%s" % (plan["instances"]["chat"]["nodes"]["h"]["node_ip"], cluster["api_port"])
    assert config["ranks"] == [0, 1] and config["rank_nodes"] == {"0": "h", "1": "w"}
    assert config["state_file"] == "/run/ascend-watchdog-chat.json"
    # The serve release decides whether a probe can name its rank (vLLM 0.23's X-data-parallel-rank).
    assert config["rank_header"] == (releases.version_key(cluster["vllm_version"]) >= (0, 23))
    # The program and the configuration are kept by the sweep; the unit restarts when either changes.
    watch = sweeps_of(head, unit_names.WATCHDOG_FILES.pattern)
    assert watch["keep"] == ["serve-watchdog.py", "watchdog-chat.json"]
    assert units(head)["ascend-watchdog-chat.service"]["restart_on"][1:] == [
        "/etc/ascend-inference/watchdog-chat.json", "/etc/ascend-inference/serve-watchdog.py"]
    worker = per_instance.serve(FakeNode("w", plan), SERVE)["apply"]
    assert watchdog_config(worker)["role"] == "worker"
    # Turned off, or a group on one node: no watchdog, and the sweep removes one an earlier run left.
    off = per_instance.serve(FakeNode("w", plan), dict(SERVE, watchdog_enabled=False))["apply"]
    assert "ascend-watchdog-chat.service" not in units(off)
    assert sweeps_of(off, unit_names.WATCHDOG_UNITS.pattern)["keep"] == []


def test_a_watchdog_setting_below_1_is_refused_naming_it():
    with pytest.raises(Refused) as refused:
        per_instance.serve(FakeNode("h", make_plan()), dict(SERVE, watchdog_failures=0))
    assert "h: serve_watchdog_failures must be at least 1, not 0" in str(refused.value)


def sweeps_of(state, pattern):
    return next(sweep for sweep in state["sweep"] if sweep["pattern"] == pattern)


def test_status_names_unanswered_ranks_and_engines_started_after_the_head():
    """chat's watchdog state as the watchdogs write it (roles/serve/files/serve-watchdog.py)."""
    plan = make_plan()["instances"]["chat"]
    found = {"h": {"watchdog": {"role": "head", "checked": 1000.0, "healthy_since": 900.0, "unanswered": [],
                                "restarts": 0}},
             "w": {"watchdog": {"role": "worker", "serve_started": 850.0}}}
    lines, problems = status.watchdog_report(plan, found)
    assert problems == [] and "every DP rank answered, 0 restart(s) of ascend-serve-chat.service" in lines[0]
    # w restarted after the head's start-up: the head does not hold its engines, and rank 1 stops answering.
    found["w"]["watchdog"]["serve_started"] = 950.0
    found["h"]["watchdog"]["unanswered"] = [1]
    lines, problems = status.watchdog_report(plan, found)
    assert "DP ranks [1] unanswered" in lines[0]
    assert problems[0].startswith("- DP rank(s) 1 (on w) gave no answer to the watchdog's 1-token completion")
    assert problems[0].endswith("the head's watchdog restarts ascend-serve-chat.service on h if they keep failing")
    assert problems[1].startswith("- the engines on w started at ") and "after the head's front-end on h" in problems[1]
    found["h"]["watchdog"]["gave_up"] = True
    assert "it gave up restarting ascend-serve-chat.service on h" in status.watchdog_report(plan, found)[1][0]
    # No watchdog state (off, or not run yet): nothing said.
    assert status.watchdog_report(plan, {"h": {}, "w": {}}) == ([], [])


def serve_steps(*units_started):
    return {"serve": {"steps": [{"unit": unit, "action": "restart"} for unit in units_started]}}


def test_a_dp_group_restarted_in_part_restarts_whole():
    """chat (mp DP across h and w): w's serve restarted alone (its secrets changed), so h's restarts too; embed, on
    h alone, does not."""
    plan = make_plan()
    applied = {"h": serve_steps(), "w": serve_steps("ascend-serve-chat.service")}
    result = phase_restart.serve_group(FakeNode("h", plan, applied=applied), {})
    assert result["record"] == {"restarted": ["chat"]}
    assert [(u["name"], u["restart"]) for u in result["apply"]["units"]] == [("ascend-serve-chat.service", True)]
    # w restarted already; and where every node (or none) restarted, nothing more.
    assert phase_restart.serve_group(FakeNode("w", plan, applied=applied), {})["apply"] is None
    both = {"h": serve_steps("ascend-serve-chat.service"), "w": serve_steps("ascend-serve-chat.service")}
    assert phase_restart.serve_group(FakeNode("h", plan, applied=both), {})["apply"] is None
    assert phase_restart.serve_group(FakeNode("h", plan, applied={}), {})["apply"] is None


def test_a_ray_instance_across_nodes_is_watched_from_its_head_only():
    """Under Ray, serve runs on the head only; vLLM 0.11 never notices a lost Ray worker, so the head probes."""
    instances = {"big": {"hosts": ["h", "w"], "npus_per_host": 2, "tensor_parallel_size": 4, "launcher": "ray"}}
    plan = make_plan(instances)
    head = per_instance.serve(FakeNode("h", plan, instances=instances), SERVE)["apply"]
    config = json.loads(next(f for f in head["files"] if f["path"].endswith("/watchdog-big.json"))["content"])
    assert config["role"] == "head" and config["ranks"] == [0] and config["rank_nodes"] == {"0": "placed by Ray"}
    worker = per_instance.serve(FakeNode("w", plan, instances=instances), SERVE)["apply"]
    assert "ascend-watchdog-big.service" not in units(worker)


def test_a_changed_replica_behind_the_router_rolls_and_one_alone_is_named():
    plan = make_plan(INSTANCES_TWICE)
    rolled = dict((name, {"unit": "ascend-serve-%s.service" % name,
                          "paths": ["/etc/ascend-inference/serve-%s.env" % name]}) for name in INSTANCES_TWICE)

    def records(changed=(), started=(), stale=(), node_env=()):
        serve = {"changed_paths": ["/etc/ascend-inference/serve-%s.env" % n for n in changed],
                 "steps": [{"unit": "ascend-serve-%s.service" % n, "action": "start"} for n in started],
                 "rolled": rolled, "stale": list(stale)}
        return {"h": {"serve": serve, "node_env": {"changed_paths": list(node_env)}}, "w": {}}

    def chosen(check_mode=False, **given):
        node = FakeNode("h", plan, applied=records(**given))
        node.check_mode = check_mode
        return phase_restart.changed(node, {})

    assert chosen()["result"] == {"rolling": []}
    # Changed files of a running replica, or older files than it has (a run that stopped before its restart).
    found = chosen(changed=["chat-b", "embed"], stale=["chat-a"])
    assert found["result"] == {"rolling": ["chat-a", "chat-b", "embed"]}
    assert found["warnings"] == [phase_restart.SINGLE_REPLICA % ("embed", "/models/e")]
    # A replica started in this run runs its files already; node_env's changes count too.
    assert chosen(changed=["chat-a"], started=["chat-a"])["result"] == {"rolling": []}
    assert chosen(node_env=["/etc/ascend-inference/serve-chat-b.env"])["result"] == {"rolling": ["chat-b"]}
    # --check names them and restarts nothing.
    found = chosen(check_mode=True, changed=["chat-a"])
    assert found["result"] == {"rolling": []} and "would restart chat-a one at a time" in found["warnings"][0]
    # Without a router, nothing rolls.
    assert phase_restart.changed(FakeNode("h", make_plan(INSTANCES_TWICE, router_enabled=False)), {})["result"] == {
        "rolling": []}


INSTANCES_TWICE = {"chat-a": {"hosts": ["h"], "npus_per_host": 1, "served_model_name": "chat"},
                   "chat-b": {"hosts": ["w"], "npus_per_host": 1, "served_model_name": "chat"},
                   "embed": {"hosts": ["h"], "npus_per_host": 2, "model": "/models/e"}}


def test_the_single_model_restarted_in_place_is_named():
    plan = {"cluster": {"units": dict(unit_names.SINGLE)}}
    restarted = {"h": {"node_env": {"steps": [{"unit": "ascend-serve.service", "action": "try-restart"}]}},
                 "w": {"serve": {"steps": [{"unit": "ascend-serve.service", "action": "restart"}]}}}
    found = phase_restart.changed(FakeNode("h", plan, applied=restarted), {})
    assert found["result"] == {"rolling": []}
    assert found["warnings"] == [phase_restart.SINGLE_MODEL % ("restarted", "h, w")]
    started = {"h": {"serve": {"steps": [{"unit": "ascend-serve.service", "action": "start"}]}}}
    assert phase_restart.changed(FakeNode("h", plan, applied=started), {})["warnings"] == []


def test_serve_group_names_the_changed_replicas_and_warns_once():
    plan = make_plan(INSTANCES_TWICE)
    records = {"h": {"serve": {"changed_paths": ["/etc/ascend-inference/serve-embed.env"], "steps": [],
                               "rolled": {"embed": {"unit": "ascend-serve-embed.service",
                                                    "paths": ["/etc/ascend-inference/serve-embed.env"]}}}}}
    first = phase_restart.serve_group(FakeNode("h", plan, applied=records), {})
    second = phase_restart.serve_group(FakeNode("w", plan, applied=records), {})
    assert first["result"] == second["result"] == {"rolling": ["embed"]}
    assert first["warnings"] == [phase_restart.SINGLE_REPLICA % ("embed", "/models/e")] and second["warnings"] == []
