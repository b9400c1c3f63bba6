# -*- coding: utf-8 -*-
"""Several instances on one cluster (module_utils/plan/fleet): NPU shares, port allocation, names and every
refusal, each naming the instance, the variable and the host."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime

import pytest

from ansible_collections.ascend.inference.plugins.module_utils.plan import fleet
from ansible_collections.ascend.inference.plugins.module_utils.plan import request
from ansible_collections.ascend.inference.plugins.module_utils.plan.planner import PlanError, make_plan


def nodes(count=3, npus=8, **extra):
    found = [dict(name="n%d" % (index + 1), node_ip="10.0.0.%d" % (index + 1), nic="eth0", npus_per_node=npus,
                  head=index == 0) for index in range(count)]
    for node in found:
        node.update(extra)
    return found


def settings(**extra):
    base = {"engine": "vllm-ascend", "engine_version": "0.23.0", "model": "/models/default", "launcher": "mp"}
    base.update(extra)
    return base


# The shape of the issue's fleet: model A twice (two replicas, half of n1 and of n2 each), model B on what is left
# of n1 and n2 (the other halves), model C on n3 across two hosts' worth of DP under the mp launcher.
FLEET = {
    "a1": {"model": "/models/qwen-7b", "served_model_name": "qwen", "hosts": ["n1"], "npus_per_host": 4,
           "tensor_parallel_size": 4},
    "a2": {"model": "/models/qwen-7b", "served_model_name": "qwen", "hosts": ["n2"], "npus_per_host": 4,
           "tensor_parallel_size": 4},
    "b": {"model": "/models/embed", "hosts": ["n1", "n2"], "npus_per_host": 4, "data_parallel_size": 2,
          "tensor_parallel_size": 4},
    "c": {"model": "/models/big", "hosts": ["n3"], "tensor_parallel_size": 8},
}


def fleet_plan(instances=None, node_list=None, **extra):
    return fleet.make_fleet_plan(settings(**extra), nodes() if node_list is None else node_list,
                                 FLEET if instances is None else instances)


def problems(instances, node_list=None, **extra):
    with pytest.raises(PlanError) as caught:
        fleet_plan(instances, node_list, **extra)
    return caught.value.errors


def test_npu_shares_are_disjoint_and_follow_name_order():
    plan = fleet_plan()
    npus = plan["allocation"]["npus"]
    assert npus["n1"] == {"0": "a1", "1": "a1", "2": "a1", "3": "a1", "4": "b", "5": "b", "6": "b", "7": "b"}
    assert npus["n2"] == {"0": "a2", "1": "a2", "2": "a2", "3": "a2", "4": "b", "5": "b", "6": "b", "7": "b"}
    assert set(npus["n3"].values()) == {"c"}
    b = plan["instances"]["b"]
    assert b["nodes"]["n1"]["env"]["ASCEND_RT_VISIBLE_DEVICES"] == "4,5,6,7"
    assert b["nodes"]["n2"]["visible_devices"] == [4, 5, 6, 7]
    assert b["cluster"]["head"] == "n1" and b["nodes"]["n2"]["role"] == "worker"


def test_every_port_on_a_host_has_one_owner():
    plan = fleet_plan()
    for host, spans in plan["allocation"]["ports"].items():
        taken = []
        for span in spans:
            taken.extend(range(span["port"], span["port"] + span["count"]))
        assert len(taken) == len(set(taken)), (host, spans)
    instances = plan["instances"]
    # a1 and b share n1, a2 and b share n2: their API ports differ there; c alone on n3 keeps the default.
    assert instances["a1"]["cluster"]["api_port"] != instances["b"]["cluster"]["api_port"]
    assert instances["a2"]["cluster"]["api_port"] != instances["b"]["cluster"]["api_port"]
    assert instances["c"]["cluster"]["api_port"] == 8000
    # b's DP over two hosts under mp needs the DP RPC port; the single-host instances open none.
    assert instances["b"]["cluster"]["dp_rpc_port"] == 29550
    assert instances["a1"]["cluster"]["dp_rpc_port"] is None


def test_each_instance_has_its_own_hccl_range_and_names():
    plan = fleet_plan()
    a1, b = plan["instances"]["a1"], plan["instances"]["b"]
    # 60000 + 32 x the lowest physical ID the instance uses on the host: b holds NPUs 4-7 on n1 and n2.
    assert a1["cluster"]["hccl_base_ports"] == {"n1": 60000} and b["cluster"]["hccl_base_ports"] == {
        "n1": 60128, "n2": 60128}
    assert b["nodes"]["n2"]["env"]["HCCL_IF_BASE_PORT"] == "60128"
    assert b["cluster"]["units"]["serve"] == "ascend-serve-b.service"
    assert b["cluster"]["units"]["firewall"] == "ascend-firewall.service"
    assert b["cluster"]["serve_env_file"] == "/etc/ascend-inference/serve-b.env"
    assert b["cluster"]["model_manifest"] == "/etc/ascend-inference/model-b.manifest.json"
    assert b["cluster"]["instance"] == "b"


def test_replicas_share_a_served_name_and_other_instances_get_their_own():
    plan = fleet_plan(served_model_name="cluster-wide")
    names = dict((n, p["cluster"]["served_model_name"]) for n, p in plan["instances"].items())
    assert names == {"a1": "qwen", "a2": "qwen", "b": "/models/embed", "c": "/models/big"}


def test_hccl_span_covers_the_group_leader_port():
    # base + physical ID, the leader at base + ID + 16: IDs 0-15 need 32 ports, ID 16 needs 48.
    assert fleet.hccl_span([0, 1, 7]) == 32
    assert fleet.hccl_span([15]) == 32
    assert fleet.hccl_span([16]) == 48


def test_physical_ids_set_the_hccl_span():
    node_list = nodes(1, device_map={"0": 20})
    plan = fleet_plan({"x": {"npus_per_host": 1}, "y": {"npus_per_host": 1}}, node_list)
    assert plan["instances"]["x"]["nodes"]["n1"]["physical_devices"] == [20]
    # x's NPU 0 is /dev/davinci20: its base is 60000 + 32 x 20 and it binds up to 20 + 16 past it.
    assert plan["instances"]["x"]["cluster"]["hccl_base_ports"] == {"n1": 60640}
    assert plan["instances"]["y"]["cluster"]["hccl_base_ports"] == {"n1": 60032}
    spans = dict((s["owner"], s) for s in plan["allocation"]["ports"]["n1"] if s["what"] == "HCCL_IF_BASE_PORT")
    assert spans["x"]["count"] == 48 and spans["y"]["count"] == 32


def test_allocation_stays_out_of_mooncake_ray_and_model_transfer_ports():
    # 16 NPUs per node: Mooncake's range is 20000-35999, so the DP RPC port moves above it.
    instances = {"a": {"hosts": ["n1", "n2"], "npus_per_host": 8, "data_parallel_size": 2,
                       "tensor_parallel_size": 8}}
    plan = fleet_plan(instances, nodes(2, npus=16), dp_rpc_port=29550, api_port=8730, model_transfer_port=8730)
    cluster = plan["instances"]["a"]["cluster"]
    assert cluster["dp_rpc_port"] == 36000
    # 8730-8732 are the model copy's (peers, tracker, control): the API port steps past them.
    assert cluster["api_port"] == 8733
    assert plan["cluster"]["mooncake_ports"] == {"start": 20000, "count": 16000}
    # From Ray's worker range (10002-19999) on, the first free port is past it and past Mooncake's.
    plan = fleet_plan(instances, nodes(2, npus=8), api_port=10500)
    assert plan["instances"]["a"]["cluster"]["api_port"] == 28000


def test_explicit_ports_that_collide_are_named():
    instances = {"a": {"hosts": ["n1"], "npus_per_host": 4, "api_port": 9000},
                 "b": {"hosts": ["n1"], "npus_per_host": 4, "api_port": 9000},
                 "c": {"hosts": ["n2"], "api_port": 21000},
                 "d": {"hosts": ["n3"], "api_port": 10001}}
    found = problems(instances)
    assert "ascend_instances.b.api_port 9000 on host n1 is a's api_port: choose another port" in found
    assert ("ascend_instances.c.api_port 21000 is Mooncake's Ascend transport range 20000-27999 (reserved on every "
            "node): choose another port") in found
    assert ("ascend_instances.d.api_port 10001 is Ray's client server (reserved on every node): choose another "
            "port") in found


def test_overlapping_devices_name_both_instances_the_host_and_the_npus():
    instances = {"a": {"hosts": ["n1"], "devices": {"n1": [0, 1, 2]}},
                 "b": {"hosts": ["n1"], "devices": {"n1": [2, 3]}}}
    assert problems(instances) == ["instances a and b both use NPU 2 on host n1"]


def test_instances_without_placement_take_whole_nodes_and_collide():
    assert problems({"a": {}, "b": {}})[:1] == ["instances a and b both use NPUs 0,1,2,3,4,5,6,7 on host n1"]


def test_more_npus_than_are_free():
    instances = {"a": {"hosts": ["n1"], "npus_per_host": 6}, "b": {"hosts": ["n1"], "npus_per_host": 4}}
    assert problems(instances) == [
        "ascend_instances.b.npus_per_host 4 on host n1: only 2 of its 8 NPUs are free (held by a)"]


def test_devices_the_host_does_not_have():
    found = problems({"a": {"hosts": ["n1"], "devices": {"n1": [7, 8, 9], "n2": [0]}}})
    assert found == ["ascend_instances.a.devices on host n1 names NPUs 8,9, which the host does not have (it has "
                     "0,1,2,3,4,5,6,7)",
                     "ascend_instances.a.devices names host n2, which is not among the instance's hosts"]


def test_layout_that_does_not_fit_the_share_names_the_instance_and_its_key():
    found = problems({"a": {"hosts": ["n1"], "npus_per_host": 4, "tensor_parallel_size": 8}})
    assert found == ["instance a: TP 8 x PP 1 x DP 1 = 8 NPUs is more than the cluster's 4 NPUs (n1 4)"]
    found = problems({"a": {"hosts": ["n1"], "npus_per_host": 4, "tensor_parallel_size": 3}},
                     model_config={"num_attention_heads": 32})
    assert found == ["instance a: ascend_instances.a.tensor_parallel_size 3 does not divide the model's 32 "
                     "attention heads (num_attention_heads in config.json)"]


def test_unknown_keys_names_and_cluster_wide_keys_are_refused():
    found = problems({"Chat_1": {}, "b": {"tensor_paralel_size": 2, "runtime": "container"}})
    assert found[0].startswith("ascend_instances: the instance name 'Chat_1' becomes part of unit and file names")
    assert found[1] == "ascend_instances.b.runtime: runtime is one for the whole cluster; set ascend_runtime instead"
    assert found[2].startswith("ascend_instances.b.tensor_paralel_size is not an instance setting (did you mean "
                               "tensor_parallel_size?)")


def test_hosts_outside_the_cluster_and_twice():
    found = problems({"a": {"hosts": ["n1", "n9", "n1"]}})
    assert found == ["ascend_instances.a.hosts names host n1 twice",
                     "ascend_instances.a.hosts names n9, not in group ascend_cluster (n1, n2, n3)"]


def test_one_served_name_for_two_models_is_refused():
    found = problems({"a": {"hosts": ["n1"], "model": "/m/x", "served_model_name": "chat"},
                      "b": {"hosts": ["n2"], "model": "/m/y", "served_model_name": "chat"}})
    assert found == ["instances a, b share the served model name 'chat' but serve different models (a: /m/x; "
                     "b: /m/y): replicas serve one model; give each model its own served_model_name"]


def test_two_ray_instances_on_one_host_are_refused():
    found = problems({"a": {"hosts": ["n1"], "npus_per_host": 4, "launcher": "ray"},
                      "b": {"hosts": ["n1"], "npus_per_host": 4, "launcher": "ray"}})
    assert len(found) == 1 and found[0].startswith("instances a, b all run on the Ray launcher on host n1")


def test_one_ray_instance_beside_mp_instances_gets_its_ports_out_of_the_way():
    plan = fleet_plan({"a": {"hosts": ["n1", "n2"], "npus_per_host": 4, "launcher": "ray",
                             "tensor_parallel_size": 8},
                       "b": {"hosts": ["n1"], "npus_per_host": 4}})
    a = plan["instances"]["a"]["cluster"]
    assert a["ray_port"] == 6379 and a["ray_address"] == "10.0.0.1:6379"
    assert a["units"]["ray"] == "ascend-ray-a.service"


def test_planner_owned_and_layout_variables_are_refused():
    found = problems({"a": {"extra_env": {"HCCL_IF_BASE_PORT": "61000"}}}, nodes(1, data_parallel_size_local=1),
                     runtime="container", container_image="img")
    assert found == [
        "ascend_data_parallel_size_local on host n1 describes one model's layout; with ascend_instances the planner "
        "splits each instance's DP ranks evenly over its hosts: remove it",
        "ascend_runtime: container runs one engine container per node; with ascend_instances the instances run on "
        "the host (ascend_runtime: host)",
        "instance a: HCCL_IF_BASE_PORT in ascend_extra_env or ascend_instances.a.extra_env is allocated by the "
        "planner with ascend_instances (each instance its own range): remove it"]


def test_secret_variables_of_an_instance_stay_out_of_the_plan():
    plan = fleet_plan({"a": {"extra_env": {"HF_TOKEN": "hf_secret", "LOG": "1"}}}, nodes(1))
    node = plan["instances"]["a"]["nodes"]["n1"]
    assert node["env"]["LOG"] == "1" and "HF_TOKEN" not in node["env"]
    assert plan["instances"]["a"]["cluster"]["secret_env_names"] == ["HF_TOKEN"]
    assert "hf_secret" not in repr(plan)


def test_a_date_in_a_mapping_variable_is_named():
    # YAML reads {when: 2024-01-01} as a date; json.dumps would stop the plan naming no variable.
    with pytest.raises(PlanError) as caught:
        make_plan(settings(additional_config={"when": datetime.date(2024, 1, 1)}), nodes(1))
    assert caught.value.errors == ["ascend_additional_config holds 2024-01-01, which YAML read as a date: quote it "
                                   "to pass the text"]
    found = problems({"a": {"additional_config": {"b": b"\x00"}}}, nodes(1))
    assert found == ["instance a: ascend_instances.a.additional_config holds binary data (a !!binary value): give "
                     "text"]


def test_without_instances_the_plan_is_the_single_model_plan():
    # plan_request.answer takes make_plan's path: an inventory without ascend_instances keeps its units.
    from ansible_collections.ascend.inference.plugins.module_utils.plan import request
    params = dict(settings(), nodes=nodes(1), model_config=None, model_config_path=None, instances=None)
    params.update((k, v) for k, v in fleet.planner.DEFAULTS.items() if k not in params)
    result = request.answer(params)
    assert result["cluster"]["units"]["serve"] == "ascend-serve.service" and "instances" not in result
    deployed = request.answer(dict(params, instances={"a": {}}))
    assert deployed["instances"]["a"]["cluster"]["units"]["serve"] == "ascend-serve-a.service"
    # What this release cannot deploy is refused, by plan.yml as by the deploy.
    mixed = {"a": {"engine": "vllm-mindspore", "engine_version": "0.5.1", "npus_per_host": 4}, "b": {"npus_per_host": 4}}
    refused = request.answer(dict(params, instances=mixed))
    assert refused["failed"] and refused["errors"][0].startswith(
        "the instances set different engine (a: vllm-mindspore, b: vllm-ascend)"), refused


def test_an_instance_is_checked_against_its_own_models_config(tmp_path):
    from ansible_collections.ascend.inference.plugins.module_utils.plan import request
    params = dict(settings(), nodes=nodes(1), model_config=None, model_config_path=None)
    params.update((k, v) for k, v in fleet.planner.DEFAULTS.items() if k not in params)
    (tmp_path / "config.json").write_text('{"num_attention_heads": 6, "max_position_embeddings": 4096}')
    given = {"a": {"model": "/models/a", "model_config": str(tmp_path), "npus_per_host": 4,
                   "tensor_parallel_size": 4},
             "b": {"npus_per_host": 4}}
    refused = request.answer(dict(params, instances=given))
    assert refused["errors"] == ["instance a: ascend_instances.a.tensor_parallel_size 4 does not divide the model's 6 "
                                 "attention heads (num_attention_heads in config.json)"]
    given["a"]["tensor_parallel_size"] = 2
    given["a"]["serve_options"] = {"max_model_len": 8192}
    assert request.answer(dict(params, instances=given))["errors"][0].startswith(
        "instance a: ascend_instances.a.serve_options.max_model_len 8192 is more than the model's 4096")
    del given["a"]["serve_options"]
    planned = request.answer(dict(params, instances=given))
    # Each instance says what it was checked against, or which variable would let it be.
    assert planned["instance_model_checks"] == {
        "a": "checked against %s" % (tmp_path / "config.json"),
        "b": "not checked against its config.json: /models/default is not a directory on the controller; set "
             "ascend_model_config to a copy of it"}
    given["b"]["model"] = "/models/b"
    assert request.answer(dict(params, instances=given))["instance_model_checks"]["b"] == (
        "not checked against its config.json: /models/b is not a directory on the controller; set "
        "ascend_instances.b.model_config to a copy of it")
    given["b"]["model_config"] = str(tmp_path / "nope.json")
    assert request.answer(dict(params, instances=given))["msg"] == (
        "cannot read the model's config.json: ascend_instances.b.model_config %s: no such file on the controller"
        % (tmp_path / "nope.json"))


def test_deploy_refuses_different_engines_and_a_copy_of_several_models():
    plan = fleet_plan({"a": {"hosts": ["n1"], "engine": "vllm-mindspore", "engine_version": "0.5.1"},
                       "b": {"hosts": ["n2"], "model": "/models/other"}}, model_transfer_port=8730)
    assert plan["cluster"]["model"] is None
    assert fleet.deploy_problems(plan) == [
        "the instances set different engine (a: vllm-mindspore, b: vllm-ascend): a node's Python environment "
        "(ascend_python_env) holds one engine, so every instance runs the same one",
        "the instances set different engine_version (a: 0.5.1, b: 0.23.0): a node's Python environment "
        "(ascend_python_env) holds one engine, so every instance runs the same one",
        "model_source copies one model to every node, and the instances serve several (a: /models/default; "
        "b: /models/other): put each instance's model on its hosts (model_source: none; the preflight checks the "
        "files)"]


def test_instances_of_one_model_have_it_copied_as_a_single_model():
    plan = fleet_plan({"a": {"hosts": ["n1"]}, "b": {"hosts": ["n2", "n3"], "data_parallel_size": 2}},
                      model_transfer_port=8730)
    cluster = plan["cluster"]
    assert fleet.deploy_problems(plan) == []
    # What the model role reads of the cluster: the path and the copy's three ports.
    assert (cluster["model"], cluster["model_transfer_port"], cluster["model_tracker_port"],
            cluster["model_control_port"]) == ("/models/default", 8730, 8731, 8732)


def test_the_plan_keeps_what_the_roles_read_of_the_cluster():
    plan = fleet_plan()
    cluster, nodes_found = plan["cluster"], plan["nodes"]
    assert cluster["head"] == "n1" and cluster["node_order"] == ["n1", "n2", "n3"]
    assert cluster["engine"] == "vllm-ascend" and cluster["launcher"] == "mp"
    assert cluster["node_env_file"] == "/etc/ascend-inference/node.env"
    assert nodes_found["n1"]["instances"] == ["a1", "b"] and nodes_found["n3"]["instances"] == ["c"]
    assert nodes_found["n2"]["visible_devices"] == list(range(8)) and not nodes_found["n1"]["serves_api"]
    assert nodes_found["n3"]["node_ip"] == "10.0.0.3"


def test_an_instances_bad_secret_is_named_without_its_value():
    found = problems({"a": {"extra_env": {"A_TOKEN": "top\nsecret"}}}, nodes(1))
    assert len(found) == 1 and found[0].startswith(
        "instance a: ascend_instances.a.extra_env.A_TOKEN holds a control character ('\\n')")
    assert "secret" not in found[0].replace("A_TOKEN", "")


def test_what_the_planner_chose_on_a_shared_host_is_named_and_pinning_keeps_it():
    plan = fleet_plan({"a": {"hosts": ["n1"], "npus_per_host": 4}, "b": {"hosts": ["n1"], "npus_per_host": 4},
                       "c": {"hosts": ["n2"]}})
    assert plan["warnings"] == [
        "instance a shares hosts with b: its api_port 8000 and its NPUs are allocated in name order, so adding or "
        "removing an instance before it moves them and restarts it; set api_port and devices to keep them",
        "instance b shares hosts with a: its api_port 8001 and its NPUs are allocated in name order, so adding or "
        "removing an instance before it moves them and restarts it; set api_port and devices to keep them"]
    pinned = {"b": {"hosts": ["n1"], "devices": {"n1": [4, 5, 6, 7]}, "api_port": 8001},
              "c": {"hosts": ["n2"]}}
    # One thing chosen: said in the singular.
    assert fleet_plan(dict(pinned, a={"hosts": ["n1"], "devices": {"n1": [0, 1, 2, 3]}}))["warnings"] == [
        "instance a shares hosts with b: its api_port 8000 is allocated in name order, so adding or removing an "
        "instance before it moves it and restarts it; set api_port to keep it"]
    alone = fleet_plan(pinned)
    together = fleet_plan(dict(pinned, a={"hosts": ["n1"], "devices": {"n1": [0, 1, 2, 3]}, "api_port": 8000}))
    assert alone["warnings"] == [] and together["warnings"] == []
    # b keeps its node entry (command, environment, HCCL range) whether a is there or not: nothing restarts it.
    assert alone["instances"]["b"]["nodes"] == together["instances"]["b"]["nodes"]


# --- The router in front of the instances (module_utils/plan/router) ---------------------------------------


def router_fleet(router=None, instances=None, node_list=None):
    return fleet.make_fleet_plan(settings(), node_list or nodes(), instances or FLEET, router=router)


def refused(router=None, instances=None):
    with pytest.raises(PlanError) as caught:
        router_fleet(router, instances)
    return caught.value.errors


def test_replicas_of_one_served_name_are_one_backend_on_the_first_instances_head():
    router = router_fleet()["router"]
    # The default host: the head of the first instance in name order (a1 on n1).
    assert router["hosts"] == ["n1"] and router["addresses"] == {"n1": "10.0.0.1"}
    assert (router["port"], router["metrics_port"], router["unit"]) == (8080, 8404, "ascend-router.service")
    backends = dict((b["served_model_name"], b) for b in router["backends"])
    assert sorted(backends) == ["/models/big", "/models/embed", "qwen"]
    assert backends["qwen"]["name"] == "model-a1"
    # The rolling restart drains an instance in its model's backend, through the router's admin socket.
    assert router["backend_of"] == {"a1": "model-a1", "a2": "model-a1", "b": "model-b", "c": "model-c"}
    assert router["socket"] == "/run/ascend-router/admin.sock"
    assert [(s["name"], s["host"], s["address"]) for s in backends["qwen"]["servers"]] == [
        ("a1", "n1", "10.0.0.1"), ("a2", "n2", "10.0.0.2")]
    # Each server is the instance's API node on the instance's own API port.
    found = router_fleet()
    for backend in router["backends"]:
        for server in backend["servers"]:
            assert server["port"] == found["instances"][server["name"]]["cluster"]["api_port"]


def test_the_router_ports_are_held_before_any_instance_port():
    found = router_fleet({"port": 8000, "metrics_port": 8001})
    held = dict(((s["port"], s["owner"]) for s in found["allocation"]["ports"]["n1"]))
    assert held[8000] == "the router" and held[8001] == "the router"
    # a1 and b on n1 step around them; c alone on n3 keeps 8000 (the router is not there).
    assert found["instances"]["a1"]["cluster"]["api_port"] == 8002
    assert found["instances"]["b"]["cluster"]["api_port"] == 8003
    assert found["instances"]["c"]["cluster"]["api_port"] == 8000


def test_several_router_hosts_each_hold_the_ports():
    found = router_fleet({"hosts": ["n2", "n3"]})
    assert found["router"]["hosts"] == ["n2", "n3"]
    for host in ("n2", "n3"):
        assert 8080 in [s["port"] for s in found["allocation"]["ports"][host] if s["owner"] == "the router"]
    assert not [s for s in found["allocation"]["ports"]["n1"] if s["owner"] == "the router"]


def test_disabled_there_is_no_router_and_no_port_held():
    found = router_fleet({"enabled": False, "hosts": []})
    assert found["router"] is None
    assert not [s for spans in found["allocation"]["ports"].values() for s in spans if s["owner"] == "the router"]


@pytest.mark.parametrize("router,message", [
    ({"hosts": []}, "group ascend_router has no host: name the hosts that run the router, or remove the group "
                    "(the default is the head of the first instance, n1)"),
    ({"hosts": ["gw1"]}, "group ascend_router names gw1, not in group ascend_cluster"),
    ({"port": 0}, "ascend_router_port must be a TCP port 1-65535 (found 0)"),
    ({"metrics_port": 10001}, "ascend_router_metrics_port 10001 is Ray's client server (reserved on every node)"),
    ({"port": 20100}, "ascend_router_port 20100 is Mooncake's Ascend transport range 20000-27999"),
])
def test_router_settings_refused(router, message):
    errors = refused(router)
    assert any(message in error for error in errors), errors


def test_an_instance_port_on_the_router_port_is_refused_naming_both():
    instances = dict(FLEET, a1=dict(FLEET["a1"], api_port=8080))
    errors = refused(instances=instances)
    assert any("ascend_instances.a1.api_port 8080 on host n1 is the router's ascend_router_port" in e
               for e in errors), errors


def test_a_served_name_the_router_cannot_map_is_refused():
    instances = dict(FLEET, c=dict(FLEET["c"], served_model_name="big model"))
    errors = refused(instances=instances)
    assert any("instance c: the served model name 'big model' has whitespace" in e for e in errors), errors


def single_answer(**extra):
    """parallel_plan's answer for the single model of the ascend_* variables (DP 2 over n1 and n2), its defaults
    filled in."""
    given = dict(settings(data_parallel_size=2, tensor_parallel_size=8), nodes=nodes(2), model_config=None,
                 model_config_path=None, instances=None, **extra)
    defaults = dict((k, v["default"]) for k, v in request.ARGUMENT_SPEC.items() if k not in given and "default" in v)
    return request.answer(dict(defaults, **given))


def test_a_single_model_is_behind_a_router_on_its_head_by_default():
    # Its API port is members-only like an instance's: the router is the only way in (docs/security.md).
    answer = single_answer()
    router = answer["router"]
    assert router["hosts"] == ["n1"] and router["addresses"] == {"n1": "10.0.0.1"}
    assert [(b["name"], b["served_model_name"], b["servers"]) for b in router["backends"]] == [
        ("model-default", "/models/default", [{"name": "default", "host": "n1", "address": "10.0.0.1",
                                               "port": 8000}])]
    assert router["backend_of"] == {"default": "model-default"}
    # Prometheus reads the engine through the router's metrics port.
    assert answer["monitoring"]["targets"]["engines"][0]["targets"] == ["10.0.0.1:8404"]
    assert answer["monitoring"]["engine_metrics"] == [
        {"path": "/engines/default/n1/metrics", "address": "10.0.0.1", "port": 8000}]


def test_a_single_model_router_goes_where_the_group_says_or_nowhere():
    assert single_answer(router_hosts=["n2"])["router"]["hosts"] == ["n2"]
    answer = single_answer(router_enabled=False)
    assert answer["router"] is None and answer["monitoring"]["targets"]["engines"][0]["targets"] == ["10.0.0.1:8000"]
    answer = single_answer(router_hosts=["n9"])
    assert answer["failed"] and "group ascend_router names n9, not in group ascend_cluster" in answer["msg"], answer


def test_a_single_model_router_port_on_one_of_the_models_is_refused_naming_both():
    answer = single_answer(router_port=8000)
    assert answer["failed"] and "ascend_api_port and ascend_router_port are both 8000" in answer["msg"], answer
    answer = single_answer(router_metrics_port=29560, model_transfer_port=29559)
    assert "ascend_model_transfer_port + 1 (the model copy's tracker) and ascend_router_metrics_port are both " \
        "29560" in answer["msg"], answer
    answer = single_answer(launcher="ray", router_port=8265)
    assert answer["failed"] and "ascend_router_port 8265 is Ray's dashboard under the Ray launcher" in \
        answer["msg"], answer
