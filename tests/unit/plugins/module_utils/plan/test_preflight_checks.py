"""One node's preflight verdict (preflight_checks.node_checks) from a node_probe result and the plan."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.ascend.inference.plugins.module_utils.plan import preflight_checks as checks
from ansible_collections.ascend.inference.plugins.module_utils.runtime import unit_names

PLAN = {
    "cluster": {"runtime": {"mode": "host"}, "units": unit_names.SINGLE, "api_port": 8000, "ray_port": 6379,
                "dp_rpc_port": 29550, "engine_program": "vllm", "engine_distribution": "vllm-ascend",
                "engine_version": "0.23.0", "model_manifest": "/etc/ascend-inference/model.manifest.json"},
    "nodes": {
        "head": {"role": "head", "serves_api": True, "visible_devices": [0, 1], "devices_from": "ascend_npu_devices",
                 "ray_start_argv": ["ray", "start", "--head"],
                 "serve_argv": ["vllm", "serve", "/m", "--data-parallel-rpc-port", "29550"]},
        "worker": {"role": "worker", "serves_api": False, "visible_devices": [0, 1],
                   "devices_from": "npu-smi info -m", "ray_start_argv": ["ray", "start"], "serve_argv": None},
    },
}

CONTEXT = {"node_ip": "192.0.2.11", "ip_nics": ["enp1s0"], "nic": "enp1s0", "npu_smi": "npu-smi",
           "ascend_home": "/usr/local/Ascend", "engine_env": "/opt/ascend-inference/venv", "model": "/models/m",
           "cann_pending": None, "model_pending": False}


def probe(**changes):
    """A healthy node as node_probe reports it (two chips, CANN 8.1.RC1, the engine and model in place)."""
    found = {
        "npu_smi": {"rc": 0, "stdout": "", "stderr": ""},
        "npu": {"chips": [{"logic": 0}, {"logic": 1}], "problems": []},
        "cann_version": "8.1.RC1", "cann_problems": [], "cann_notes": [],
        "container_mounts_missing": [],
        "engine": {"program": "/opt/ascend-inference/venv/bin/vllm", "versions": {"vllm-ascend": "0.23.0", "vllm": "0.23.0"},
                   "problems": []},
        "service": {"problems": []},
        "model": {"files": 3, "bytes": 90, "digest": None, "mismatch": None},
        "listeners": [],
    }
    found.update(changes)
    return found


def test_a_healthy_node_has_no_problem_and_says_what_it_runs():
    verdict = checks.node_checks(probe(), PLAN, "head", CONTEXT)
    assert verdict == {"problems": [], "notes": [], "engine_summary": "vllm-ascend 0.23.0 on vLLM 0.23.0",
                       "model_summary": {"files": 3, "bytes": 90, "digest": None, "mismatch": None}}


def test_every_problem_in_order_each_naming_what_to_change():
    found = probe(
        # A failing npu-smi: no sample in hardware-samples holds a failing `npu-smi info -m`, so the text is made
        # up; the check passes whatever the tool printed through.
        npu_smi={"rc": 187, "stdout": "", "stderr": "dcmi module initialize failed. ret is -8005\n"},
        npu={"chips": [], "problems": [{"logic": None, "message": "/dev/davinci2 has no chip"},
                                       {"logic": 1, "message": "chip 1 has no /dev/davinci1"},
                                       {"logic": 5, "message": "chip 5 has no /dev/davinci5"}]},
        cann_version=None, container_mounts_missing=["/usr/local/dcmi"],
        engine={"program": "/v/bin/vllm", "versions": {"vllm-ascend": "0.11.0", "vllm": "0.11.0"},
                "problems": ["vllm-ascend 0.11.0 is installed, the plan is for 0.23.0"]},
        service={"problems": ["ascend-inference cannot read /models/m"]},
        model={"files": 2, "bytes": 10, "digest": "ab" * 32, "mismatch": "1 missing (w.safetensors)"},
        listeners=[{"port": 8000, "process": "python3", "pid": 812, "uid": 0, "unit": None},
                   {"port": 6379, "process": None, "pid": None, "uid": None, "unit": "redis.service"}])
    context = dict(CONTEXT, nic="lo")
    problems = checks.node_checks(found, PLAN, "head", context)["problems"]
    assert problems == [
        "ascend_nic lo does not carry ascend_node_ip 192.0.2.11 (found on: enp1s0)",
        "npu-smi info -m failed (rc 187): dcmi module initialize failed. ret is -8005",
        # The chip the plan does not use (logic 5) may lack its device file.
        "/dev/davinci2 has no chip", "chip 1 has no /dev/davinci1",
        "preflight_ascend_home: no CANN toolkit under /usr/local/Ascend (looked for "
        "ascend-toolkit/latest/*/ascend_toolkit_install.info and cann-<version>/*/ascend_toolkit_install.info)",
        "ascend_runtime container: the engine container mounts /usr/local/dcmi from the host (the NPU driver's files, "
        "as the vllm-ascend document runs its image), which this node lacks; install the NPU driver (and its tools) "
        "on the host",
        "vllm-ascend 0.11.0 is installed, the plan is for 0.23.0",
        "ascend-inference cannot read /models/m",
        "ascend_model /models/m does not match the manifest of the model copied to it "
        "(/etc/ascend-inference/model.manifest.json): 1 missing (w.safetensors)",
        "ascend_api_port 8000 is in use by python3 (pid 812)",
        "ascend_ray_port 6379 is in use by a process of uid ? in redis.service",
    ]


def test_the_node_ip_must_be_an_address_of_the_node():
    problems = checks.node_checks(probe(), PLAN, "head", dict(CONTEXT, ip_nics=[]))["problems"]
    assert problems == ["ascend_node_ip 192.0.2.11 is not an address of the node (it defaults to ansible_host)"]


def test_the_plans_npus_must_be_chips_of_the_node_while_npu_smi_answers():
    found = probe(npu={"chips": [{"logic": 0}], "problems": []})
    assert checks.node_checks(found, PLAN, "worker", CONTEXT)["problems"] == [
        "npu-smi info -m: logic IDs 1 are not NPU chips of the node (npu-smi info -m lists logic IDs 0)"]
    nothing = probe(npu={"chips": [], "problems": []})
    assert checks.node_checks(nothing, PLAN, "worker", CONTEXT)["problems"][0].endswith("(npu-smi info -m lists logic IDs none)")


def test_ports_held_by_the_plans_units_are_ours():
    held = [{"port": 8000, "process": None, "pid": None, "uid": 999, "unit": unit_names.SINGLE["serve"]},
            {"port": 6379, "process": "gcs_server", "pid": 9, "uid": 999, "unit": unit_names.SINGLE["ray"]},
            {"port": 29550, "process": None, "pid": None, "uid": 999, "unit": unit_names.SINGLE["engine"]}]
    assert checks.node_checks(probe(listeners=held), PLAN, "head", CONTEXT)["problems"] == []
    # Another ascend-* unit is not one of ours.
    foreign = [dict(held[0], unit="ascend-other.service")]
    assert checks.node_checks(probe(listeners=foreign), PLAN, "head", CONTEXT)["problems"] == [
        "ascend_api_port 8000 is in use by a process of uid 999 in ascend-other.service"]
    # A worker's services listen on none of them.
    assert checks.node_ports(PLAN, "worker") == []
    assert checks.node_ports(PLAN, "head") == [(8000, "ascend_api_port"), (6379, "ascend_ray_port"),
                                               (29550, "ascend_dp_rpc_port")]


def test_in_check_mode_what_the_cann_and_model_roles_would_do_is_said_not_failed():
    found = probe(cann_version=None, model={"files": 0, "bytes": 0, "digest": None, "mismatch": None})
    verdict = checks.node_checks(found, PLAN, "head", dict(CONTEXT, cann_pending="8.2.RC1", model_pending=True))
    assert verdict["problems"] == [
        "preflight_ascend_home: no CANN toolkit under /usr/local/Ascend (looked for "
        "ascend-toolkit/latest/*/ascend_toolkit_install.info and cann-<version>/*/ascend_toolkit_install.info); "
        "the cann role installs CANN 8.2.RC1 on a run without --check, and the checks that read it cannot run before"]
    assert verdict["notes"] == ["head: ascend_model /models/m is not checked in --check: the model role copies it to "
                                "this node on a run without --check"]
    assert verdict["model_summary"] is None
    # Without --check an empty model directory is a problem.
    assert checks.node_checks(found, PLAN, "head", dict(CONTEXT, cann_pending=None))["problems"][-1] == \
        "ascend_model /models/m does not exist or holds no file"


def test_container_mode_does_not_look_for_cann_on_the_host():
    plan = copy.deepcopy(PLAN)
    plan["cluster"]["runtime"]["mode"] = "container"
    found = probe(cann_version=None, engine=None, model=None)
    assert checks.node_checks(found, plan, "worker", CONTEXT) == {
        "problems": [], "notes": [], "engine_summary": None, "model_summary": None}


def test_notes_name_the_cann_installation_and_a_missing_engine():
    found = probe(cann_notes=["both layouts are installed", "cann is used"],
                  engine={"program": None, "versions": {}, "problems": []})
    verdict = checks.node_checks(found, PLAN, "worker", CONTEXT)
    assert verdict["problems"] == [] and verdict["engine_summary"] is None
    assert verdict["notes"] == [
        "worker: both layouts are installed; cann is used",
        "worker: vllm is neither in /opt/ascend-inference/venv/bin nor on PATH; install vllm-ascend 0.23.0 there "
        "before serve starts (its version is not checked)"]


def test_the_router_ports_are_judged_on_its_hosts_only():
    plan = dict(PLAN, router={"hosts": ["head"], "port": 8080, "metrics_port": 8404, "unit": "ascend-router.service"})
    theirs = [{"port": 8080, "process": "nginx", "pid": 77, "uid": 0, "unit": "nginx.service"},
              {"port": 8404, "process": None, "pid": None, "uid": 0, "unit": "ascend-router.service"}]
    assert checks.node_checks(probe(listeners=theirs), plan, "head", CONTEXT)["problems"] == [
        "ascend_router_port 8080 is in use by nginx (pid 77)"]
    assert checks.node_checks(probe(listeners=theirs), plan, "worker", CONTEXT)["problems"] == []
