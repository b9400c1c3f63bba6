"""The preflight's report and status.yml's table and problems, from what every host registered."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.ascend.inference.plugins.module_utils.plan import reports
from ansible_collections.ascend.inference.plugins.module_utils.runtime import unit_names

# `systemctl show --property=Id,LoadState,ActiveState,SubState,NRestarts,ActiveEnterTimestamp` as
# systemd 252 prints it in the simulated nodes (molecule/serve_mp, 2026-12-02): one unit running, one
# that is not installed.
SHOW = ("NRestarts=2\nId=ascend-serve.service\nLoadState=loaded\nActiveState=active\nSubState=running\n"
        "ActiveEnterTimestamp=Wed 2026-12-02 06:59:46 UTC\n\n"
        "NRestarts=0\nId=ascend-ray.service\nLoadState=not-found\nActiveState=inactive\nSubState=dead\n"
        "ActiveEnterTimestamp=\n")

PLAN = {
    "cluster": {"engine": "vllm-ascend", "launcher": "ray", "tensor_parallel_size": 4, "pipeline_parallel_size": 2,
                "data_parallel_size": 1, "served_model_name": "qwen3", "node_order": ["node1", "node2"],
                "ray_nodes_expected": 2, "api_port": 8000, "units": unit_names.SINGLE},
    "nodes": {"node1": {"role": "head", "node_ip": "192.0.2.11", "serve_argv": ["vllm", "serve", "/m"]},
              "node2": {"role": "worker", "node_ip": "192.0.2.12", "serve_argv": None}},
}


def test_systemctl_show_blocks_become_units():
    units = reports.systemctl_units(SHOW)
    assert sorted(units) == ["ascend-ray.service", "ascend-serve.service"]
    assert units["ascend-serve.service"]["ActiveEnterTimestamp"] == "Wed 2026-12-02 06:59:46 UTC"
    assert units["ascend-ray.service"]["LoadState"] == "not-found"
    assert reports.systemctl_units("") == {}


def found(ray_stdout='[{"ip": "192.0.2.11", "npus": 4.0}, {"ip": "192.0.2.12", "npus": 4}]', ray_rc=0, health=200):
    units = reports.systemctl_units(SHOW)
    ray_unit = {"Id": "ascend-ray.service", "LoadState": "loaded", "ActiveState": "active", "SubState": "running",
                "NRestarts": "0", "ActiveEnterTimestamp": "Wed 2026-12-02 06:58:01 UTC"}
    return {"node1": {"units": dict(units, **{"ascend-ray.service": ray_unit}),
                      "ray": {"rc": ray_rc, "stdout": ray_stdout, "stderr": "Traceback ...\nConnectionError: no head"},
                      "health": {"status": health, "msg": "Connection refused"}},
            "node2": {"units": units, "ray": {"skipped": True}}}


def test_the_status_table():
    table = reports.status_table(PLAN, ["node1", "node2"], found())
    assert table.splitlines() == [
        "vllm-ascend ray: TP 4 x PP 2 x DP 1, model qwen3",
        reports.STATUS_COLUMNS % ("host", "role", "ray", "serve"),
        reports.STATUS_COLUMNS % ("node1", "head", "active/running, 0 restarts, since 2026-12-02 06:58:01",
                                  "active/running, 2 restarts, since 2026-12-02 06:59:46"),
        # node2 has no serve command: its missing serve unit is "-"; its Ray unit is missing though wanted.
        reports.STATUS_COLUMNS % ("node2", "worker", "not installed", "active/running, 2 restarts, since 2026-12-02 06:59:46"),
        "Ray: 2/2 nodes alive, 8 NPUs (192.0.2.11, 192.0.2.12)",
        "API http://192.0.2.11:8000: /health 200",
    ]
    assert reports.status_problems(PLAN, ["node1", "node2"], found()) == "- node2: ascend-ray.service is not active"


def test_a_head_without_an_answer_and_a_dead_endpoint():
    seen = found(ray_stdout="", ray_rc=1, health=-1)
    table = reports.status_table(PLAN, ["node1", "node2"], seen).splitlines()
    assert table[-2:] == ["Ray: no answer from the head (ConnectionError: no head)",
                          "API http://192.0.2.11:8000: /health no answer (Connection refused)"]
    assert reports.status_problems(PLAN, ["node1", "node2"], seen).splitlines() == [
        "- Ray on node1 does not see the 2 planned nodes",
        "- node1: the endpoint's /health did not answer 200",
        "- node2: ascend-ray.service is not active"]


def test_a_limited_run_shows_only_its_hosts():
    table = reports.status_table(PLAN, ["node1"], found())
    assert "node2 " not in table
    assert reports.status_problems(PLAN, ["node1"], found(ray_stdout=json.dumps([{"ip": "192.0.2.11"}]))) == \
        "- Ray on node1 does not see the 2 planned nodes"


def test_the_preflight_report_lists_every_host_then_what_differs():
    found = {"node1": {"problems": ["no NIC carries 192.0.2.11"], "cann_version": "8.0.RC1",
                       "engine_summary": "vllm-ascend 0.23.0 on vLLM 0.23.0", "model_summary": {"files": 4, "bytes": 100, "digest": None}},
             "node2": {"problems": [], "cann_version": "8.1.RC1",
                       "engine_summary": "vllm-ascend 0.23.0 on vLLM 0.23.0", "model_summary": {"files": 3, "bytes": 90, "digest": "ab" * 32}},
             "node3": {"problems": ["model missing"], "cann_version": ""}}
    report = reports.preflight_report(["node1", "node2", "node3"], found, "host", "/models/m")
    assert report.splitlines() == [
        "preflight found 4 problem(s); nothing was changed:",
        "- host node1: no NIC carries 192.0.2.11",
        "- host node3: model missing",
        "- CANN versions differ; every node must run the same: node1 8.0.RC1, node2 8.1.RC1",
        "- ascend_model /models/m differs between nodes: node1: 4 files, 100 bytes; node2: 3 files, 90 bytes",
    ]
    # In container mode the nodes' CANN does not run the engine: not compared.
    assert "CANN" not in reports.preflight_report(["node1", "node2"], found, "container", "/models/m")


def test_a_clean_preflight_reports_nothing():
    same = {"problems": [], "cann_version": "8.0.RC1", "engine_summary": "e",
            "model_summary": {"files": 2, "bytes": 9, "digest": None}}
    assert reports.preflight_report(["a", "b"], {"a": same, "b": dict(same)}, "host", "/m") == ""


def test_models_are_compared_by_their_manifests_where_every_node_has_one():
    def model(files, size, digest):
        return {"problems": [], "model_summary": {"files": files, "bytes": size, "digest": digest}}
    # Same files, different content: only the manifests tell.
    report = reports.preflight_report(["a", "b"], {"a": model(2, 9, "1" * 64), "b": model(2, 9, "2" * 64)}, "host", "/m")
    assert report.splitlines()[-1] == \
        "- ascend_model /m differs between nodes: a: manifest 111111111111; b: manifest 222222222222"
    # One node without a record: counts and bytes, which agree.
    assert reports.preflight_report(["a", "b"], {"a": model(2, 9, "1" * 64), "b": model(2, 9, None)}, "host", "/m") == ""


def test_hosts_without_an_engine_or_model_are_not_compared():
    # ansible-core 2.18 renders the preflight's null summaries as "", 2.19 keeps null: neither is compared.
    model = {"files": 2, "bytes": 9, "digest": None}
    found = {"a": {"problems": [], "engine_summary": "vllm-ascend 0.23.0 on vLLM 0.23.0", "model_summary": model},
             "b": {"problems": [], "engine_summary": "", "model_summary": ""},
             "c": {"problems": [], "engine_summary": None, "model_summary": None}}
    assert reports.preflight_report(["a", "b", "c"], found, "host", "/m") == ""
