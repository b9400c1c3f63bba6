# -*- coding: utf-8 -*-
"""Each phase's desired state computed from a plan, the role's settings and the earlier phases' records, with no
node: what is written, which units restart on what, in which order; what is refused and what is warned."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import platform

import pytest

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible_collections.ascend.inference.plugins.module_utils.apply import programs, unit_steps
from ansible_collections.ascend.inference.plugins.module_utils.node import hccn
from ansible_collections.ascend.inference.plugins.plugin_utils.phases import (
    firewall as phase_firewall, hostnames, node_env, npu_network, ray as phase_ray, backends, serve as phase_serve,
    npu_exporter as phase_npu_exporter, monitoring as phase_monitoring, pyacl as phase_pyacl)
from ansible_collections.ascend.inference.plugins.plugin_utils.operations import restart, teardown
from ansible_collections.ascend.inference.plugins.module_utils.plan import monitoring
from ansible_collections.ascend.inference.plugins.plugin_utils.phases.phase import Refused
from ansible_collections.ascend.inference.plugins.module_utils.plan.request import ARGUMENT_SPEC, answer
from ansible_collections.ascend.inference.plugins.modules import node_apply
from ansible_collections.ascend.inference.plugins.module_utils.runtime import unit_names

NODES = [{"name": "h", "head": True, "node_ip": "192.0.2.11", "nic": "eth0", "npus_per_node": 2},
         {"name": "w", "node_ip": "192.0.2.12", "nic": "eth0", "npus_per_node": 2}]
IMAGE_ID = "04598bc9955b" + "0" * 52


def make_plan(with_router=False, **settings):
    """parallel_plan's plan of NODES; with_router: with its router and monitoring sections (else the model's
    parts only, as the phases of a plan without a router see them)."""
    params = dict((name, spec.get("default")) for name, spec in ARGUMENT_SPEC.items())
    params.update(engine="vllm-ascend", model="/models/m", tensor_parallel_size=2, pipeline_parallel_size=2,
                  launcher="ray", nodes=copy.deepcopy(NODES))
    params.update(settings)
    params.pop("check_nodes")
    found = answer(params)
    assert not found.get("failed"), found
    if with_router:
        return dict((key, found[key]) for key in ("cluster", "nodes", "router", "monitoring"))
    return {"cluster": found["cluster"], "nodes": found["nodes"]}


class FakeNode(object):
    """The controller's view of one host (plugins/plugin_utils/phases/node.py), from plain data: VARS by host,
    APPLIED by host and phase, RUN answers by module name."""

    def __init__(self, host, plan, variables=None, applied=None, run=None, check_mode=False):
        self.host, self.plan, self.check_mode = host, plan, check_mode
        self.variables, self.records, self.answers = variables or {}, applied or {}, run or {}
        self.ran, self.checked = [], []

    def var(self, name, default=None, host=None):
        return self.variables.get(host or self.host, {}).get(name, default)

    def play_hosts(self):
        return list(self.plan["cluster"]["node_order"])

    def group(self, name):
        return self.play_hosts()

    def applied(self, phase, host=None):
        return self.records.get(host or self.host, {}).get(phase)

    def run(self, module, args, checked=False):
        self.ran.append((module, args))
        self.checked.append(checked)
        return self.answers[module]


RAY = {"env": "/opt/ascend-inference/venv", "create_env": True, "version": "2.52.1", "package": "ray[default]",
       "wheelhouse": "", "auth": "auto", "config_dir": "/etc/ascend-inference", "barrier_timeout": 300,
       "firewall_enabled": True, "node_env_file": "/etc/ascend-inference/node.env",
       "secrets_file": "/etc/ascend-inference/secrets.env", "check_peer": True}
INSTALLED = {"python": "3.11.2", "ray": "2.52.1"}


def ray_records(**more):
    records = {"h": {"ray_install": INSTALLED}, "w": {"ray_install": INSTALLED}}
    for host, phases in more.items():
        records[host].update(phases)
    return records


def token_reads(head_token="", candidate="drawn-token", worker_held=False):
    """What the ray_token phase registered on each node (phase_ray.TOKEN_READ)."""
    return {"h": {phase_ray.TOKEN_READ: {"held": bool(head_token), "token": head_token,
                                         "candidate": "" if head_token else candidate}},
            "w": {phase_ray.TOKEN_READ: {"held": worker_held, "token": "", "candidate": "other"}}}


def unit(state, name):
    return next(u for u in state["units"] if u["name"] == name)


def accepted(state):
    """STATE as node_apply receives it, its files and secrets rendered as the action plugin does (here with
    placeholder text), checked against the module's own argument spec: what the module would work with."""
    state = copy.deepcopy(state)
    for spec in state.get("files", []):
        for key in ("template", "values", "source"):
            spec.pop(key, None)
        if spec.pop("controller_file", None):
            spec["checksum"] = "0" * 40
        else:
            spec.setdefault("content", "rendered")
    state["secrets"] = dict((path, "rendered") for path in state.get("secrets") or {})
    found = ArgumentSpecValidator(node_apply.ARGUMENT_SPEC).validate(dict(state, node="h"))
    assert not found.error_messages, found.error_messages
    return found.validated_parameters


def test_the_head_keeps_its_token_and_a_worker_waits_for_it_and_follows_its_restart():
    plan = make_plan()
    head = phase_ray.desired(FakeNode("h", plan, applied=ray_records(), variables=token_reads("kept-token")), RAY)
    state = head["apply"]
    assert state["secrets"] == {"/etc/ascend-inference/ray-auth-token": "kept-token"}
    ray = unit(state, "ascend-ray.service")
    assert ray["state"] == "started" and ray["wait_for"] is None and not ray["restart"]
    assert set(ray["restart_on"]) == {"/etc/systemd/system/ascend-ray.service", "/etc/ascend-inference/ray.env",
                                      "/etc/ascend-inference/ray-auth-token"}
    # The engine container of an earlier container-mode deployment goes first (absent units stop before starts).
    assert state["units"][0] == {"name": "ascend-engine.service", "file": "/etc/systemd/system/ascend-engine.service",
                                 "state": "absent"}
    assert "/etc/ascend-inference/ray-cluster-nodes.py" in [f["path"] for f in state["files"]]
    assert state["account"]["user"] == "ascend-inference"  # confined by default
    as_root = phase_ray.desired(FakeNode("h", make_plan(service_user="root"), applied=ray_records(), variables=token_reads("t")), RAY)["apply"]
    assert as_root["account"] is None
    records = ray_records(h={"ray": {"restarted": True}})
    worker = phase_ray.desired(FakeNode("w", plan, applied=records, variables=token_reads("kept-token")), RAY)["apply"]
    ray = unit(worker, "ascend-ray.service")
    assert ray["restart"] and ray["wait_for"] == {"host": "192.0.2.11", "port": 6379, "timeout": 300}
    assert worker["secrets"] == {"/etc/ascend-inference/ray-auth-token": "kept-token"}
    assert "/etc/ascend-inference/ray-cluster-nodes.py" not in [f["path"] for f in worker["files"]]


def test_a_new_cluster_takes_the_token_the_head_drew():
    plan = make_plan()
    for host in ("h", "w"):
        state = phase_ray.desired(FakeNode(host, plan, applied=ray_records(), variables=token_reads()), RAY)["apply"]
        assert state["secrets"] == {"/etc/ascend-inference/ray-auth-token": "drawn-token"}


def test_a_head_that_lost_its_token_is_refused_while_a_worker_keeps_one():
    with pytest.raises(Refused) as refused:
        phase_ray.desired(FakeNode("h", make_plan(), applied=ray_records(), variables=token_reads(worker_held=True)), RAY)
    assert str(refused.value).startswith("The head h has no Ray token (/etc/ascend-inference/ray-auth-token) but w has one")


def test_the_head_must_be_in_the_run():
    node = FakeNode("w", make_plan(), applied=ray_records(), variables=token_reads("t"))
    node.play_hosts = lambda: ["w"]
    with pytest.raises(Refused) as refused:
        phase_ray.desired(node, RAY)
    assert "The Ray head h is not in this run (--limit?)" in str(refused.value)


def test_ray_and_python_must_match_everywhere():
    records = ray_records(w={"ray_install": {"python": "3.10.12", "ray": "2.52.1"}})
    with pytest.raises(Refused) as refused:
        phase_ray.desired(FakeNode("h", make_plan(), applied=records, variables=token_reads("t")), RAY)
    assert str(refused.value) == ('Ray and Python must match on every node (vLLM\'s Ray executor runs across them); '
                                  'found: h {"python": "3.11.2", "ray": "2.52.1"}, w {"python": "3.10.12", "ray": "2.52.1"}')


def test_an_old_ray_without_the_firewall_is_refused_and_with_it_warned():
    old = dict(RAY, version="2.51.0")
    records = ray_records(h={"ray_install": {"python": "3.11.2", "ray": "2.51.0"}},
                          w={"ray_install": {"python": "3.11.2", "ray": "2.51.0"}})
    with pytest.raises(Refused) as refused:
        phase_ray.desired(FakeNode("h", make_plan(), applied=records), dict(old, firewall_enabled=False))
    assert "has no token authentication (Ray 2.52 or later has it) and firewall_enabled is false" in str(refused.value)
    done = phase_ray.desired(FakeNode("h", make_plan(), applied=records, variables=token_reads("t")), old)
    assert done["warnings"] == ["h: Ray 2.51.0 runs without token authentication (too old for it): anyone who reaches "
                                "its ports can run code on the cluster (CVE-2023-48022). The members-only firewall is on."]
    assert "/etc/ascend-inference/ray-auth-token" not in [f["path"] for f in done["apply"]["files"]]


def test_under_the_mp_launcher_nothing_of_ray_stays():
    plan = make_plan(launcher="mp", tensor_parallel_size=1, pipeline_parallel_size=1, data_parallel_size=4)
    state = phase_ray.desired(FakeNode("w", plan), RAY)["apply"]
    assert state["units"] == [{"name": "ascend-ray.service", "file": "/etc/systemd/system/ascend-ray.service",
                               "state": "absent"}]
    assert sorted(state["absent"]) == sorted(["/etc/systemd/system/ascend-ray.service", "/etc/ascend-inference/ray.env",
                                              "/etc/ascend-inference/ray-auth-token",
                                              "/etc/ascend-inference/ray-cluster-nodes.py"])


def test_a_confined_account_is_created_and_serve_must_run_as_it():
    plan = make_plan(service_user="ascend-inference")
    state = phase_ray.desired(FakeNode("h", plan, applied=ray_records(), variables=token_reads("t")), RAY)["apply"]
    assert state["account"] == {"user": "ascend-inference", "group": "ascend-inference",
                                "home": "/var/lib/ascend-inference", "comment": "ascend.inference services"}
    assert state["peers"] == [{"unit": "ascend-serve.service", "user": "ascend-inference"}]
    token = next(f for f in state["files"] if f["path"].endswith("ray-auth-token"))
    assert (token["mode"], token["group"]) == ("0640", "ascend-inference")
    # A check run rewrote nothing: the other unit is not judged then.
    checked = phase_ray.desired(FakeNode("h", plan, applied=ray_records(), variables=token_reads("t"), check_mode=True), RAY)["apply"]
    assert "peers" not in checked


def container_records(**more):
    image = {"program": "/usr/bin/podman", "kind": "podman", "id": IMAGE_ID, "archive_id": None, "action": "none",
             "error": None, "inside": {"python": "3.11.2", "files": {}, "set_env": [],
                                       "versions": {"vllm": "0.23.0", "vllm-ascend": "0.23.0", "ray": "2.52.1"}},
             "run": {"cache_dir": "/root/.cache", "shm_size": "1g", "extra_args": [], "stop_timeout": 90}}
    records = ray_records()
    for host in records:
        records[host]["image"] = copy.deepcopy(image)
    for host, phases in more.items():
        records[host].update(phases)
    return records


def test_container_mode_runs_ray_as_a_process_of_the_engine_container():
    plan = make_plan(runtime="container", container_image="quay.io/ascend/vllm-ascend:v0.23.0")
    node = FakeNode("w", plan, applied=container_records(h={"ray": {"restarted": True}}), variables=token_reads("t"))
    state = phase_ray.desired(node, RAY)["apply"]
    names = [u["name"] for u in state["units"]]
    # The host-mode units go first (serve stops first), then the engine container runs.
    assert names == ["ascend-ray.service", "ascend-serve.service", "ascend-engine.service"]
    engine = unit(state, "ascend-engine.service")
    assert engine["reload_on"] == ["/etc/ascend-inference/engine/ray.json", "/etc/ascend-inference/ray.env"]
    assert engine["wait_for"]["host"] == "192.0.2.11"
    command = state["commands"][0]
    assert command["always"] and command["unless_started"] == "ascend-engine.service"
    assert command["argv"][:2] == ["/usr/bin/podman", "exec"] and command["argv"][-2:] == ["restart", "ray"]
    spec = next(f for f in state["files"] if f["path"].endswith("ray.json"))
    assert spec["mode"] == "0600" and '"stop_argv": [\n    "ray",\n    "stop"\n  ]' in spec["content"]
    unit_file = next(f for f in state["files"] if f["path"] == "/etc/systemd/system/ascend-engine.service")
    assert unit_file["values"]["exec_start"].startswith('"/usr/bin/podman" "run" "--rm"')
    assert IMAGE_ID in unit_file["values"]["exec_start"]


def test_container_mode_refuses_different_images():
    plan = make_plan(runtime="container", container_image="quay.io/ascend/vllm-ascend:v0.23.0")
    records = container_records()
    records["w"]["image"]["id"] = "f" * 64
    with pytest.raises(Refused) as refused:
        phase_ray.desired(FakeNode("h", plan, applied=records, variables=token_reads("t")), RAY)
    assert "is not the same image on every node" in str(refused.value)


SERVE = {"python_env": "/opt/ascend-inference/venv", "executable": "", "config_dir": "/etc/ascend-inference",
         "restart_sec": 10, "node_env_file": "/etc/ascend-inference/node.env",
         "secrets_file": "/etc/ascend-inference/secrets.env", "ray_env_file": "/etc/ascend-inference/ray.env",
         "watchdog_enabled": True, "watchdog_interval": 10, "watchdog_probe_timeout": 60, "watchdog_failures": 2,
         "ready_timeout": 1800}
FOUND = {"preflight": {"engine_program": {"program": "vllm", "python_env": "/opt/ascend-inference/venv",
                                          "found": "/opt/ascend-inference/venv/bin/vllm"}}}


def test_serve_runs_where_the_plan_says_and_goes_elsewhere():
    plan = make_plan()
    head = phase_serve.desired(FakeNode("h", plan, variables={"h": {"ascend_api_key": "sk-1"}}, applied={"h": FOUND}),
                               SERVE)
    state = head["apply"]
    serve = unit(state, "ascend-serve.service")
    assert serve["restart_on"] == ["/etc/systemd/system/ascend-serve.service", "/etc/ascend-inference/serve.env"]
    assert state["secrets"]["/etc/ascend-inference/serve.env"]["values"]["environment"] == (
        'PATH="/opt/ascend-inference/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"\n'
        'VLLM_API_KEY="sk-1"')
    values = next(f for f in state["files"] if f["path"].endswith("ascend-serve.service"))["values"]
    assert values["part_of"] == "ascend-ray.service" and values["exec_start"].startswith(
        '"/opt/ascend-inference/venv/bin/vllm" "serve"')
    assert head["warnings"] == []
    worker = phase_serve.desired(FakeNode("w", plan), SERVE)["apply"]
    assert unit(worker, "ascend-serve.service")["state"] == "absent"
    assert "/etc/ascend-inference/serve.env" in worker["absent"]


def test_an_open_api_is_warned_and_a_missing_program_refused():
    plan = make_plan()
    done = phase_serve.desired(FakeNode("h", plan, applied={"h": FOUND}), SERVE)
    assert done["warnings"] == [phase_serve.NO_KEY % ("192.0.2.11", 8000)]
    node = FakeNode("h", plan, run={"ansible.builtin.command": {"rc": 1, "stdout": ""}})
    with pytest.raises(Refused) as refused:
        phase_serve.desired(node, SERVE)
    assert str(refused.value).startswith("h: cannot find vllm in /opt/ascend-inference/venv/bin (serve_python_env)")
    assert node.ran[0][1]["argv"][:2] == ["sh", "-c"]


def test_the_firewall_opens_only_ssh_and_the_given_ports():
    plan = make_plan()
    settings = {"enabled": True, "open_ports": [22], "config_dir": "/etc/x", "ssh_port": 2222}
    state = phase_firewall.desired(FakeNode("h", plan), settings)["apply"]
    rules = state["files"][0]
    assert rules["values"] == {"members": "192.0.2.11, 192.0.2.12", "open_ports": "22, 2222",
                               "monitors": "", "scraped_ports": ""}
    assert rules["validate"] == "nft --check --file %s"
    # A monitoring host outside the cluster may read the API port and the NPU exporter, nothing else.
    monitored = dict(plan, monitoring=monitoring.section(plan, {
        "npu_exporter_enabled": True, "monitors": [{"name": "mon", "address": "192.0.2.50"}]})[0])
    values = phase_firewall.desired(FakeNode("h", monitored), settings)["apply"]["files"][0]["values"]
    assert (values["monitors"], values["scraped_ports"]) == ("192.0.2.50", "8000, 8082")
    assert [u["name"] for u in state["units"]] == ["ascend-ray-firewall.service", "ascend-firewall.service"]
    off = phase_firewall.desired(FakeNode("h", plan), dict(settings, enabled=False, open_ports=[], ssh_port=None))
    assert off["warnings"][0].startswith("firewall_enabled is false on h")
    assert unit(off["apply"], "ascend-firewall.service")["state"] == "absent"


def test_a_single_model_behind_its_router_is_reached_only_there():
    # The default: the router on the head; the API port members-only on every node (vLLM answers /invocations and
    # others without its key), monitors admitted to the router's metrics port and the NPU exporter only.
    plan = make_plan(with_router=True, npu_exporter_enabled=True, monitors=[{"name": "mon", "address": "192.0.2.50"}])
    settings = {"enabled": True, "open_ports": [22], "config_dir": "/etc/x", "ssh_port": None}
    head = phase_firewall.desired(FakeNode("h", plan), settings)["apply"]["files"][0]["values"]
    worker = phase_firewall.desired(FakeNode("w", plan), settings)["apply"]["files"][0]["values"]
    assert (head["open_ports"], head["monitors"], head["scraped_ports"]) == ("22, 8080", "192.0.2.50", "8082, 8404")
    assert (worker["open_ports"], worker["scraped_ports"]) == ("22", "8082")


def test_the_firewall_installs_nftables_only_where_nft_is_missing_and_only_when_on():
    plan = make_plan()
    settings = {"enabled": True, "open_ports": [], "config_dir": "/etc/x", "ssh_port": None}
    on = accepted(phase_firewall.desired(FakeNode("h", plan), settings)["apply"])
    assert on["packages"] == [{"name": "nftables", "program": "nft"}]
    off = phase_firewall.desired(FakeNode("h", plan), dict(settings, enabled=False))["apply"]
    assert "packages" not in off


EXPORTER = {"binary": None, "program": "/usr/local/bin/ascend-npu-exporter", "extra_args": []}


def test_the_npu_exporter_is_sent_checked_by_running_it_and_waited_for(tmp_path):
    plan = make_plan(npu_exporter_enabled=True)
    plan["monitoring"] = monitoring.section(plan, {"npu_exporter_enabled": True, "monitors": []})[0]
    with pytest.raises(Refused) as refused:
        phase_npu_exporter.desired(FakeNode("h", plan), EXPORTER)
    assert str(refused.value).startswith("ascend_npu_exporter is true but npu_exporter_binary is not set for h")
    with pytest.raises(Refused) as refused:
        phase_npu_exporter.desired(FakeNode("h", plan), dict(EXPORTER, binary=str(tmp_path / "none")))
    assert "which is not a file on the controller" in str(refused.value)
    binary = tmp_path / "npu-exporter"
    binary.write_text("#!/bin/sh\n")
    found = phase_npu_exporter.desired(FakeNode("h", plan), dict(EXPORTER, binary=str(binary)))
    state = accepted(found["apply"])
    program = state["files"][1]
    assert (program["path"], program["mode"], program["checksum"]) == (EXPORTER["program"], "0755", "0" * 40)
    # A program for another architecture is refused before it replaces the running one.
    assert program["validate"] == "%s -version"
    assert found["apply"]["files"][1]["controller_file"] == str(binary)
    assert program["fix"] == "npu_exporter_binary (%s) does not run on h: give the program built for this node's " \
        "architecture" % binary
    exporter_unit = unit(state, "ascend-npu-exporter.service")
    assert EXPORTER["program"] in exporter_unit["restart_on"]
    assert [answer["url"] for answer in state["answers"]] == [found["record"]["url"]]
    disabled = make_plan()
    disabled["monitoring"] = monitoring.section(disabled, {"npu_exporter_enabled": False, "monitors": []})[0]
    off = phase_npu_exporter.desired(FakeNode("h", disabled), EXPORTER)["apply"]
    assert EXPORTER["program"] in off["absent"] and "answers" not in off
    # Where the preflight's probe found no unit file, nothing to remove and no round trip.
    (unit_path,) = phase_npu_exporter.leftovers(disabled)
    assert unit_path == "/etc/systemd/system/ascend-npu-exporter.service"
    probed = FakeNode("h", disabled, applied={"h": {"preflight": {"present": {unit_path: False}}}})
    assert phase_npu_exporter.desired(probed, EXPORTER) == {"apply": None, "record": {"enabled": False}}
    probed.records["h"]["preflight"]["present"][unit_path] = True
    assert unit_path in phase_npu_exporter.desired(probed, EXPORTER)["apply"]["absent"]


def test_prometheus_is_installed_where_promtool_is_missing_and_its_readiness_waited_for():
    plan = make_plan()
    plan["monitoring"] = monitoring.section(plan, {"npu_exporter_enabled": False, "monitors": []})[0]
    settings = {"package": "prometheus", "config": "/etc/prometheus/prometheus.yml", "directory": "/etc/prometheus/a",
                "unit": "prometheus.service", "promtool": "/usr/bin/promtool", "scrape_interval": "15s",
                "evaluation_interval": "15s", "thresholds": {}, "export_dir": None}
    state = phase_monitoring.desired(FakeNode("mon", plan), settings)["apply"]
    accepted(state)
    assert state["packages"] == [{"name": "prometheus", "program": "prometheus"},
                                 {"name": "prometheus", "program": "/usr/bin/promtool"}]
    assert [answer["url"] for answer in state["answers"]] == [
        "http://127.0.0.1:%d/-/ready" % plan["monitoring"]["prometheus_port"]]
    exported = phase_monitoring.desired(FakeNode("mon", plan), dict(settings, export_dir="/tmp/x"))["apply"]
    assert "packages" not in exported and "answers" not in exported and "requires" not in exported
    # Prometheus below 2.33 (no check config --syntax-only) is refused before anything is written, naming its version.
    # Debian 12's promtool --version, captured from its prometheus 2.42.0+ds-5+deb12u1 (tests/run.sh unpacks it);
    # Ubuntu 22.04's written in the same format with its package's version (2.31.2+ds1-1ubuntu1.22.04.2), no capture.
    [requirement] = state["requires"]
    assert requirement["argv"] == ["/usr/bin/promtool", "--version"]
    debian = ("promtool, version 2.42.0+ds (branch: debian/sid, revision: 2.42.0+ds-5+deb12u1)\n"
              "  build user:       team+pkg-go@tracker.debian.org\n")
    ubuntu = "promtool, version 2.31.2+ds1 (branch: debian/sid, revision: 2.31.2+ds1-1ubuntu1.22.04.2)\n"
    assert programs.judged(requirement, 0, debian, "") is None
    assert programs.judged(requirement, 0, ubuntu, "") == "version 2.31.2, below 2.33.0"
    assert "Ubuntu 22.04" in requirement["fix"] and "monitoring_promtool" in requirement["fix"]


# The package of this machine's architecture, as a node would have it.
PYACL = {"package": "", "package_remote": "/srv/Ascend-cann-nnrt_8.5.0_linux-%s.run" % platform.machine(), "package_url": "",
         "package_checksum": "", "install_path": "/usr/local/Ascend/pyACL", "work_dir": "/var/cache/p",
         "python": "/usr/bin/python3", "set_env": "/usr/local/Ascend/ascend-toolkit/set_env.sh"}
SITE = "/usr/local/Ascend/pyACL/CANN-8.5.0/python/site-packages"


class Reads(FakeNode):
    """A node whose command answers come from a list, in order (the verify read before and after an install)."""

    def __init__(self, rcs, check_mode=False):
        super(Reads, self).__init__("h", make_plan(), check_mode=check_mode)
        self.rcs = list(rcs)

    def run(self, module, args):
        self.ran.append((module, args))
        if module == "ansible.builtin.command" and args["argv"][:3] == ["bash", "-c", phase_pyacl.VERIFY]:
            return {"rc": self.rcs.pop(0), "stdout": "", "stderr": "ImportError: libascendcl.so"}
        if module in getattr(self, "failing", ()):
            return {"failed": True, "msg": "HTTP Error 404"}
        return {"rc": 0, "changed": True}


def test_pyacl_that_imports_is_one_read_and_its_site_packages_recorded():
    node = Reads([0])
    found = phase_pyacl.desired(node, PYACL)
    assert found["apply"] is None and not found.get("changed")
    assert found["record"] == {"version": "8.5.0", "site_packages": SITE}
    (read,) = node.ran
    assert read[1]["argv"][4:] == [PYACL["set_env"], SITE, "/usr/bin/python3", phase_pyacl.IMPORT, PYACL["install_path"]]


def test_pyacl_is_installed_where_missing_and_read_again_never_in_check_mode():
    node = Reads([4], check_mode=True)
    found = phase_pyacl.desired(node, PYACL)
    assert found["changed"] and found["notes"] == ["pyACL 8.5.0 would be installed under /usr/local/Ascend/pyACL"]
    assert len(node.ran) == 1
    node = Reads([4, 0])
    found = phase_pyacl.desired(node, PYACL)
    assert found["notes"] == ["pyACL 8.5.0 installed (%s on the node) under /usr/local/Ascend/pyACL"
                              % PYACL["package_remote"][len("/srv/"):]]
    steps = [(module, args.get("argv", [None, None])[1] if module.endswith("command") else args["path"])
             for module, args in node.ran[1:]]
    # The node's own package: no copy; extracted, installed, its modes corrected, then read again.
    assert steps == [("ansible.builtin.file", "/var/cache/p"), ("ansible.builtin.command", PYACL["package_remote"]),
                     ("ansible.builtin.command",
                      "/var/cache/p/nnrt-8.5.0/run_package/Ascend-pyACL_8.5.0_linux-%s.run" % platform.machine()),
                     ("ansible.builtin.file", "/usr/local/Ascend/pyACL"), ("ansible.builtin.command", "-c")]
    assert node.ran[4][1]["mode"] == "u=rwX,go=rX" and node.ran[4][1]["follow"] is False


def test_pyacl_with_wrong_modes_only_gets_them_corrected():
    node = Reads([5, 0])
    found = phase_pyacl.desired(node, PYACL)
    assert found["notes"] == ["pyACL 8.5.0 given the modes every account reads it with under /usr/local/Ascend/pyACL"]
    ran = [module for module, args in node.ran]
    assert ran == ["ansible.builtin.command", "ansible.builtin.file", "ansible.builtin.command"]


def test_pyacl_refuses_a_bad_source_and_an_import_that_fails():
    with pytest.raises(Refused) as refused:
        phase_pyacl.desired(Reads([]), dict(PYACL, package_url="https://x/" + PYACL["package_remote"][5:]))
    assert "Set exactly one of pyacl_package" in str(refused.value) and "host h" in str(refused.value)
    with pytest.raises(Refused) as refused:
        phase_pyacl.desired(Reads([]), dict(PYACL, package_remote="/srv/nnrt.run"))
    assert "naming an Ascend-cann-nnrt_<version>_linux-<arch>.run file" in str(refused.value)
    with pytest.raises(Refused) as refused:
        phase_pyacl.desired(Reads([1]), PYACL)
    assert str(refused.value) == (
        "pyACL 8.5.0 does not import with /usr/bin/python3 on host h (PYTHONPATH=%s, CANN environment from "
        "/usr/local/Ascend/ascend-toolkit/set_env.sh): ImportError: libascendcl.so" % SITE)
    with pytest.raises(Refused) as refused:
        phase_pyacl.desired(Reads([4, 4]), PYACL)
    assert str(refused.value).endswith("no %s/acl after the install" % SITE)
    with pytest.raises(Refused) as refused:
        phase_pyacl.desired(Reads([5, 5]), PYACL)
    assert str(refused.value).startswith("pyACL 8.5.0 on host h imports, but /usr/local/Ascend/pyACL still has a path "
                                         "without the modes every account reads it with")
    node = Reads([4])
    node.failing = {"ansible.builtin.get_url"}
    with pytest.raises(Refused) as refused:
        phase_pyacl.desired(node, dict(PYACL, package_remote="", package_checksum="sha256:ab",
                                       package_url="https://user:secret@h/Ascend-cann-nnrt_8.5.0_linux-x.run"))
    # The file's name, not the URL and what it may carry.
    assert str(refused.value) == "h: downloading Ascend-cann-nnrt_8.5.0_linux-x.run failed: HTTP Error 404"


def test_host_names_are_checked_across_the_cluster():
    plan = make_plan()
    same = {"h": {"ascend_hostname": "node"}, "w": {"ascend_hostname": "node"}}
    with pytest.raises(Refused) as refused:
        hostnames.desired(FakeNode("h", plan, variables=same), {"strategy": "file", "manage_etc_hosts": True})
    assert "ascend_hostname 'node' is given to several hosts: h, w" in str(refused.value)
    variables = {"h": {"ascend_node_ip": "192.0.2.11"}, "w": {"ascend_node_ip": "192.0.2.12"}}
    state = hostnames.desired(FakeNode("w", plan, variables=variables),
                              {"strategy": "file", "manage_etc_hosts": True})["apply"]
    assert state["hostname"] == {"name": "w", "strategy": "file"}
    assert state["files"] == [{"path": "/etc/hostname", "content": "w\n", "mode": "0644", "mount_point": True}]
    assert state["blocks"][0]["block"] == "192.0.2.11      h\n192.0.2.12      w"


@pytest.mark.parametrize("strategy, by_phase", [("", True), ("systemd", True), ("file", True), ("debian", False)])
def test_a_strategy_node_apply_does_not_take_is_set_by_the_hostname_module_after_it(strategy, by_phase):
    node = FakeNode("w", make_plan(), run={"ansible.builtin.hostname": {"changed": True}}, check_mode=True)
    found = hostnames.desired(node, {"strategy": strategy, "manage_etc_hosts": False})
    assert found["record"] == {"name": "w"}
    assert ("hostname" in found["apply"]) == by_phase
    assert ("after" in found) != by_phase
    if not by_phase:
        # Run after the apply, in the task's mode: --check asks the module what it would do.
        assert found["after"]({}) == {"changed": True}
        assert node.ran == [("ansible.builtin.hostname", {"name": "w", "use": "debian"})] and node.checked == [True]
        node.answers["ansible.builtin.hostname"] = {"failed": True, "msg": "unknown strategy"}
        with pytest.raises(Refused) as refused:
            found["after"]({})
        assert str(refused.value) == "w: setting the host name w with the debian strategy failed: unknown strategy"


def test_the_node_environment_reads_cann_once_and_restarts_what_loads_it():
    plan = make_plan()
    settings = {"file": "/etc/a/node.env", "secrets_file": "/etc/a/secrets.env", "profile": "/etc/profile.d/a.sh",
                "cann_set_env": "", "services": ["ascend-ray.service", "ascend-serve.service"],
                "pyacl_site_packages": "/pyacl"}
    probed = {"h": {"preflight": {"cann": {"set_env": "/c/set_env.sh"},
                                  "cann_env": {"set_env": "/c/set_env.sh", "rc": 0, "variables": {"PYTHONPATH": "/c"}}}}}
    node = FakeNode("h", plan, variables={"h": {"ascend_extra_env": {"HF_TOKEN": "hf_x"}}}, applied=probed)
    state = node_env.desired(node, settings)["apply"]
    assert node.ran == []
    environment = state["files"][0]["values"]["environment"]
    assert 'PYTHONPATH="/pyacl:/c"' in environment and "hf_x" not in environment
    assert state["secrets"]["/etc/a/secrets.env"]["values"]["environment"] == 'HF_TOKEN="hf_x"'
    assert state["units"][0] == {"name": "ascend-ray.service", "try_restart_on": ["/etc/a/node.env", "/etc/a/secrets.env"]}
    other = FakeNode("h", plan, applied=probed,
                     run={"ansible.builtin.command": {"rc": 0, "stdout": "ASCEND_X=1\x00PWD=/\x00"}})
    node_env.desired(other, dict(settings, cann_set_env="/other/set_env.sh"))
    assert other.ran[0][1]["argv"][-1] == "/other/set_env.sh"


def test_a_workers_ray_restarts_after_its_heads_not_with_it():
    # Restarted together, a worker's Ray could join the head that was stopping and stay out of the cluster
    # (molecule/ray's environment test caught one not back after 240 s): the worker's waits for the second step.
    plan = make_plan()
    settings = {"file": "/etc/a/node.env", "secrets_file": "/etc/a/secrets.env", "profile": None, "cann_set_env": "",
                "services": ["ascend-ray.service", "ascend-serve.service"], "pyacl_site_packages": None}
    found = {"preflight": {"cann_env": {"set_env": "/c/set_env.sh", "rc": 0, "variables": {}},
                           "cann": {"set_env": "/c/set_env.sh"}}}
    head = node_env.desired(FakeNode("h", plan, applied={"h": found}), settings)
    worker = node_env.desired(FakeNode("w", plan, applied={"w": found}), settings)
    assert [u["name"] for u in head["apply"]["units"]] == ["ascend-ray.service", "ascend-serve.service"]
    assert [u["name"] for u in worker["apply"]["units"]] == ["ascend-serve.service"]
    assert "after" not in head
    assert worker["after"]({"changed_paths": ["/etc/a/secrets.env"]}) == {"ray_due": True}
    assert worker["after"]({"changed_paths": ["/etc/profile.d/a.sh"]}) == {"ray_due": False}

    def second(head_steps, due):
        records = {"h": {"node_env": {"steps": head_steps}}, "w": {"node_env": {"ray_due": due}}}
        return node_env.ray_workers(FakeNode("w", plan, applied=records), settings)["apply"]

    restarted = [{"unit": "ascend-ray.service", "action": "try-restart", "at": 1.0}]
    # The head's Ray restarted: the worker's follows once the head's port answers, changed or not.
    assert second(restarted, False)["units"] == [{"name": "ascend-ray.service", "restart": True, "wait_for": {
        "host": "192.0.2.11", "port": plan["cluster"]["ray_port"], "timeout": node_env.HEAD_WAIT}}]
    # Only the worker's environment changed: it restarts, with no head to wait for.
    assert second([], True)["units"] == [{"name": "ascend-ray.service", "restart": True, "wait_for": None}]
    assert second([{"unit": "ascend-serve.service", "action": "try-restart", "at": 1.0}], False) is None
    assert node_env.ray_workers(FakeNode("h", plan, applied={}), settings)["apply"] is None
    accepted(second(restarted, True))
    # Under the mp launcher, or where the services leave Ray out, the first step restarts what it names.
    mp = make_plan(launcher="mp", tensor_parallel_size=1, pipeline_parallel_size=1, data_parallel_size=4)
    assert node_env.ray_worker_unit(FakeNode("w", mp), settings["services"]) is None
    assert node_env.ray_worker_unit(FakeNode("w", plan), ["ascend-serve.service"]) is None


def test_a_node_whose_nic_is_unknown_is_refused():
    plan = make_plan()
    plan["nodes"]["h"]["unresolved_env"] = ["HCCL_SOCKET_IFNAME"]
    with pytest.raises(Refused) as refused:
        node_env.desired(FakeNode("h", plan), {})
    assert "HCCL_SOCKET_IFNAME on host h need the NIC that carries 192.0.2.11" in str(refused.value)


def test_teardown_stops_serve_first_and_wants_no_process_left():
    # The node's unit directory as find lists it: an instance's serve and Ray units (ascend_instances) are stopped
    # too, the serve unit before its Ray (node_apply stops in reverse).
    listed = {"ansible.builtin.find": {"files": [{"path": "/etc/systemd/system/ascend-serve.service"},
                                                 {"path": "/etc/systemd/system/ascend-serve-chat.service"},
                                                 {"path": "/etc/systemd/system/ascend-ray-big.service"},
                                                 {"path": "/etc/systemd/system/ascend-pd-ds.service"},
                                                 {"path": "/etc/systemd/system/ascend-watchdog-chat.service"},
                                                 {"path": "/etc/systemd/system/ascend-ray.service"}]}}
    state = teardown.desired(FakeNode("h", make_plan(), run=listed), {})["apply"]
    # A prefill/decode proxy stops before the pools it joins, the router before everything.
    # The NPU exporter stops after the engines, before the firewall. A serve watchdog stops before its serve.
    assert [u["name"] for u in state["units"]] == [unit_names.SINGLE["firewall"], "ascend-npu-exporter.service"] + [
        unit_names.SINGLE[n] for n in ("ray", "engine", "serve", "watchdog")] + [
        "ascend-ray-big.service", "ascend-serve-chat.service", "ascend-watchdog-chat.service", "ascend-pd-ds.service",
        "ascend-router.service"]
    assert all(u["state"] == "stopped" and not u["enabled"] for u in state["units"])
    assert state["leftovers"]["pattern"] == ("raylet|gcs_server|ray start|vllm(-mindspore)? serve|"
                                             "load_balance_proxy_[a-z_]*server_example")


def test_a_node_taken_out_loses_every_unit_and_the_collections_files():
    listed = {"ansible.builtin.find": {"files": [{"path": "/etc/systemd/system/ascend-serve-chat.service"}]}}
    state = teardown.removed(FakeNode("h", make_plan(), run=listed),
                             {"config_dir": "/etc/x", "exporter_program": "/usr/local/bin/e"})["apply"]
    names = [u["name"] for u in state["units"]]
    assert "ascend-serve-chat.service" in names and "ascend-npu-exporter.service" in names
    assert all(u["state"] == "absent" and u["file"] == "/etc/systemd/system/" + u["name"] for u in state["units"])
    # Each unit's file, then the configuration and the exporter's program; no Ray or serve process may stay.
    assert state["absent"] == [u["file"] for u in state["units"]] + ["/etc/x", "/usr/local/bin/e"]
    assert state["leftovers"]["pattern"].startswith("raylet|")
    # And the hostnames phase's block of the cluster's names in its /etc/hosts.
    assert state["blocks"] == [{"path": "/etc/hosts", "marker": hostnames.MARKER, "block": None}]


def test_merge_appends_and_keeps_one_of_each():
    state = backends.merge({"absent": ["/a"], "units": [{"name": "x"}]},
                           {"absent": ["/a", "/b"], "units": [{"name": "y"}], "commands": []})
    assert state == {"absent": ["/a", "/b"], "units": [{"name": "x"}, {"name": "y"}], "commands": []}
    # A directory given by both: once, as the state gave it.
    part = {"directories": [{"path": "/etc/a", "mode": "0755"}, {"path": "/etc/b"}]}
    state = backends.merge({"directories": [{"path": "/etc/a"}]}, part)
    assert state["directories"] == [{"path": "/etc/a"}, {"path": "/etc/b"}]


# The npu_network phases' choices, from the records of every host (npu_query, npu_ping).
QUERIED = {
    "a": {"checked": True, "npus": {"0": {"ip": "10.100.0.1", "tls": "0", "vnic": "192.1.2.199"},
                                    "1": {"ip": "10.101.0.1", "tls": "0"}}, "failures": []},
    "b": {"checked": True, "npus": {"6": {"ip": None, "tls": "0"},
                                    "7": {"ip": "10.107.0.2", "tls": "1", "vnic": "192.2.3.199"}}, "failures": []},
    "duo": {"checked": False},
    "down": None,
}


def test_one_address_of_every_other_node_from_my_first_device():
    assert hccn.ping_targets(QUERIED, "a", 0) == [
        {"device": 0, "address": "10.107.0.2", "node": "b", "kind": "ping"}]
    assert hccn.ping_targets(QUERIED, "b", "6") == [
        {"device": 6, "address": "10.100.0.1", "node": "a", "kind": "ping"}]
    assert hccn.ping_targets(QUERIED, "a", 0, "hccs_ping") == [
        {"device": 0, "address": "192.2.3.199", "node": "b", "kind": "hccs_ping"}]


def test_the_report_has_every_host_failure_and_the_tls_judgement():
    pinged = {"failures": [{"device": 0, "check": "ping 10.107.0.2 (b)", "expected": "no packet loss",
                            "found": "3 packets transmitted, 0 received, 100.00% packet loss"}]}
    records = dict((host, (QUERIED[host], pinged if host == "a" else None)) for host in QUERIED)
    lines = npu_network.report_table(records).splitlines()
    assert lines[0] == "NPU network check failed (2 failure(s)); fix them before starting Ray or serve:"
    assert lines[2].split()[:3] == ["a", "0", "ping"]
    assert lines[3].split()[:3] == ["b", "7", "tls"] and lines[3].endswith("tls switch[1]")
    healthy = {"a": ({"checked": True, "npus": {"0": {"tls": "0"}}}, None),
               "b": ({"checked": True, "npus": {"0": {"tls": "0"}}}, None)}
    assert npu_network.report_table(healthy) == ""


def test_the_token_read_tells_a_held_token_from_a_drawn_one():
    node = FakeNode("h", make_plan(), run={"ansible.builtin.command": {"rc": 0, "stdout": "held\nsecret-token\n"}})
    read = phase_ray.token_read(node, RAY)
    # Registered by the role, never a fact (every later phase's result shows the facts again).
    assert read["record"] is None and read["result"] == {"held": True, "token": "secret-token", "candidate": ""}
    node = FakeNode("h", make_plan(), run={"ansible.builtin.command": {"rc": 0, "stdout": "new\nabc123"}})
    assert phase_ray.token_read(node, RAY)["result"] == {"held": False, "token": "", "candidate": "abc123"}


def test_the_model_roles_decisions_refuse_and_schedule():
    from ansible_collections.ascend.inference.plugins.plugin_utils.phases import cann, model
    plan = make_plan()
    with pytest.raises(Refused) as refused:
        model.settings(FakeNode("h", plan), {"source": "controller", "src": "", "hub_repo": ""})
    assert "model_source controller needs model_src" in str(refused.value)
    assert model.settings(FakeNode("h", plan), {"source": "controller", "src": "/m", "hub_repo": ""}) == {
        "apply": None, "record": None}
    # Each node's check as the role registered it: the head holds the model, the worker does not.
    checks = {"h": {"model_node": {"complete": True, "extra": []}}, "w": {"model_node": {"complete": False, "extra": []}}}
    done = model.schedule(FakeNode("h", plan, variables=checks), {"source": "head", "fanout": True})
    assert done["record"] is None and [t["host"] for t in done["result"]["transfers"]] == ["w"]
    assert done["result"]["transfers"][0]["seeder"] == "h"
    # The swarm's tracker is on the run's first host, in Ansible's first batch of forks whatever the node count
    # (every other node's join waits for it), even where the head comes later.
    assert done["result"]["tracker"] == "h"
    later = FakeNode("h", plan, variables=checks)
    later.play_hosts = lambda: ["w", "h"]
    assert model.schedule(later, {"source": "head", "fanout": True})["result"]["tracker"] == "w"
    # From the controller, the controller's aria2's task serves it: no node's join does.
    checks["h"]["model_node"]["complete"] = False
    assert model.schedule(FakeNode("h", plan, variables=checks), {"source": "controller", "fanout": True})[
        "result"]["tracker"] is None
    checks["h"]["model_node"]["complete"] = True
    checks["w"]["model_node"]["extra"] = ["stray.bin"]
    with pytest.raises(Refused) as refused:
        model.schedule(FakeNode("h", plan, variables=checks), {"source": "head", "fanout": True})
    assert str(refused.value).startswith("the model cannot be put on every node:\n- w: 1 file(s)")
    # The hub's command runs on the node, with its environment file; not in --check.
    node = FakeNode("h", plan, run={"ansible.builtin.command": {"rc": 0, "stdout": ""}})
    model.hub(node, {"source": "huggingface", "cli": "", "repo": "org/m", "revision": "", "env_file": "/run/e"})
    assert node.ran[0][1]["argv"][4:] == ["/run/e", "hf", "download", "org/m", "--local-dir", "/models/m"]
    idle = FakeNode("h", plan, check_mode=True)
    model.hub(idle, {"source": "modelscope", "cli": "", "repo": "org/m", "revision": "v1", "env_file": "/run/e"})
    assert idle.ran == []
    with pytest.raises(Refused) as refused:
        cann.stage(FakeNode("h", plan), {"packages": [], "work_dir": "/w"})
    assert str(refused.value) == "h: cann_packages is empty"
    staged = cann.stage(FakeNode("h", plan), {"packages": [{"remote": "/p/Ascend-cann-toolkit_8.5.0_linux-x.run"}],
                                              "work_dir": "/w"})
    assert staged["result"]["packages"][0]["source"] == "remote"


STOPPED_DISABLED = {"LoadState": "loaded", "ActiveState": "inactive", "UnitFileState": "disabled"}
RUNNING_ENABLED = {"LoadState": "loaded", "ActiveState": "active", "UnitFileState": "enabled"}


def test_a_restart_restarts_or_starts_but_never_enables():
    plan = make_plan()
    for host in ("h", "w"):
        state = accepted(restart.ray(FakeNode(host, plan), {"barrier_timeout": 300})["apply"])
        # A unit teardown.yml stopped and disabled starts again and stays disabled; a running one restarts.
        assert unit_steps.unit_steps(state["units"], [], [], {"ascend-ray.service": STOPPED_DISABLED}) == [
            ("start", "ascend-ray.service")]
        assert unit_steps.unit_steps(state["units"], [], [], {"ascend-ray.service": RUNNING_ENABLED}) == [
            ("restart", "ascend-ray.service")]
    worker = restart.ray(FakeNode("w", plan), {"barrier_timeout": 300})["apply"]
    assert unit(worker, "ascend-ray.service")["wait_for"] == {"host": "192.0.2.11", "port": 6379, "timeout": 300}
    serve = accepted(restart.serve(FakeNode("h", plan), {})["apply"])
    assert [u["name"] for u in serve["units"]] == ["ascend-serve.service"]
    assert restart.serve(FakeNode("w", plan), {}) == {"apply": None, "record": {"restarted": False}}
    container = make_plan(runtime="container", container_image="quay.io/ascend/vllm-ascend:v0.23.0")
    state = accepted(restart.ray(FakeNode("w", container, applied=container_records()),
                                 {"barrier_timeout": 300})["apply"])
    assert state["units"][0]["enabled"] is False and state["commands"][0]["argv"][-2:] == ["restart", "ray"]


def test_node_apply_accepts_every_state_the_phases_build():
    plan = make_plan()
    container = make_plan(runtime="container", container_image="quay.io/ascend/vllm-ascend:v0.23.0")
    firewall = {"enabled": True, "open_ports": [22], "config_dir": "/etc/x", "ssh_port": 2222}
    states = [
        phase_ray.desired(FakeNode("h", plan, applied=ray_records(), variables=token_reads("t")), RAY),
        phase_ray.desired(FakeNode("w", container, applied=container_records(), variables=token_reads("t")), RAY),
        phase_serve.desired(FakeNode("h", plan, applied={"h": FOUND}), SERVE),
        phase_serve.desired(FakeNode("w", plan), SERVE),
        phase_firewall.desired(FakeNode("h", plan), firewall),
        phase_firewall.desired(FakeNode("h", plan), dict(firewall, enabled=False)),
        hostnames.desired(FakeNode("w", plan), {"strategy": "file", "manage_etc_hosts": True}),
        teardown.desired(FakeNode("h", plan, run={"ansible.builtin.find": {"files": []}}), {}),
    ]
    for built in states:
        accepted(built["apply"])
    # The check can fail: enabled given as null, which the restart phases once passed and node_apply refused.
    with pytest.raises(AssertionError):
        accepted({"units": [{"name": "x.service", "state": "started", "enabled": None}]})
