# -*- coding: utf-8 -*-
"""Prefill/decode disaggregation in the planner (module_utils/plan/pd, through fleet.make_fleet_plan).

The layout is the vllm-ascend 0.23.0 tutorial's (docs/source/tutorials/features/
pd_disaggregation_mooncake_multi_node.md: prefill TP8 on two Atlas 800T A3 nodes, decode DP32/TP1 on two), each
node's --kv-transfer-config checked against the fields of vLLM's own KVTransferConfig
(fixtures/kv_transfer_config, written by tools/extract_kv_transfer_config.py from the wheels)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import os

import pytest

from ansible_collections.ascend.inference.plugins.module_utils.plan import fleet
from ansible_collections.ascend.inference.plugins.module_utils.plan.planner import PlanError

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "engines", "fixtures", "kv_transfer_config")
DEEPSEEK = {"model_type": "deepseek_v3", "num_attention_heads": 128, "num_key_value_heads": 128,
            "num_hidden_layers": 61, "kv_lora_rank": 512, "n_routed_experts": 256}
QWEN = {"model_type": "qwen2", "num_attention_heads": 12, "num_key_value_heads": 12, "num_hidden_layers": 24}


def kv_class(version):
    with open(os.path.join(FIXTURES, "vllm-%s.json" % version)) as handle:
        return json.load(handle)


def a3_nodes():
    names = ["p1", "p2", "d1", "d2"]
    return [dict(name=name, node_ip="10.0.0.%d" % (index + 1), nic="eth0", npus_per_node=16, head=index == 0,
                 npu_family="A3") for index, name in enumerate(names)]


TUTORIAL = {
    "ds": {
        "model": "/models/DeepSeek-R1-W8A8", "served_model_name": "deepseek", "enable_expert_parallel": True,
        "prefill": {"hosts": ["p1", "p2"], "tensor_parallel_size": 8, "data_parallel_size": 4},
        "decode": {"hosts": ["d1", "d2"], "tensor_parallel_size": 1, "data_parallel_size": 32,
                   "extra_env": {"HCCL_BUFFSIZE": "700"}},
    },
}


def plan(instances=None, version="0.23.0", engine="vllm-ascend", configs=None, proxy_dir="/opt/pd", node_list=None):
    settings = {"engine": engine, "engine_version": version, "model": "/models/default", "launcher": "mp"}
    return fleet.make_fleet_plan(settings, a3_nodes() if node_list is None else node_list,
                                 copy.deepcopy(TUTORIAL if instances is None else instances),
                                 {"ds": DEEPSEEK} if configs is None else configs, pd_proxy_dir=proxy_dir)


def refused(instances, **kwargs):
    with pytest.raises(PlanError) as caught:
        plan(instances, **kwargs)
    return caught.value.errors


def with_pools(prefill=None, decode=None, **shared):
    instance = copy.deepcopy(TUTORIAL["ds"])
    instance["prefill"].update(prefill or {})
    instance["decode"].update(decode or {})
    instance.update(shared)
    return {"ds": instance}


def test_every_serve_node_gets_a_kv_transfer_config_vllm_accepts():
    found = plan()
    accepted = kv_class("0.23.0")
    seen = {}
    for pool, role in (("prefill", "kv_producer"), ("decode", "kv_consumer")):
        pool_plan = found["instances"]["ds-" + pool]
        for host, node in sorted(pool_plan["nodes"].items()):
            argv = node["serve_argv"]
            assert argv.count("--kv-transfer-config") == 1, host
            config = json.loads(argv[argv.index("--kv-transfer-config") + 1])
            # vLLM 0.23's @config forbids unknown keys: every key must be a field of the class.
            assert accepted["forbids_extra"] and set(config) <= set(accepted["fields"]), sorted(config)
            assert config["kv_role"] == role and role in accepted["kv_role"]
            assert config["kv_connector"] == "MooncakeConnectorV1"
            assert config["engine_id"] == "ds-" + pool
            # check_kv_extra_config: each side's entry equals its own TP and global DP.
            # The decode also reads prefill.pp_size (mooncake_connector.py) and asserts decode.pp_size is 1.
            assert config["kv_connector_extra_config"] == {"prefill": {"tp_size": 8, "dp_size": 4, "pp_size": 1},
                                                           "decode": {"tp_size": 1, "dp_size": 32, "pp_size": 1}}
            assert node["env"]["VLLM_HOST_IP"] == node["node_ip"]
            seen.setdefault(pool, set()).add(config["kv_port"])
    # 36000, the first port above the transport's range, went to the pools' DP RPC port (29550 lies in the range).
    assert seen == {"prefill": {36001}, "decode": {36033}}
    # The tutorial's per-role HCCL_BUFFSIZE under the user's own.
    assert found["instances"]["ds-prefill"]["nodes"]["p2"]["env"]["HCCL_BUFFSIZE"] == "256"
    assert found["instances"]["ds-decode"]["nodes"]["d2"]["env"]["HCCL_BUFFSIZE"] == "700"


def test_kv_ports_lie_above_the_transport_range_and_are_held():
    found = plan()
    # 16 NPUs per node: the Ascend transport takes [20000, 36000); the DP RPC port takes 36000, and the prefill
    # pool's 32 NPUs bind 36001-36032.
    assert found["cluster"]["mooncake_ports"] == {"start": 20000, "count": 16000}
    held = [(span["port"], span["count"], span["owner"], span["what"]) for span in found["allocation"]["ports"]["p1"]
            if span["port"] >= 20000 and span["port"] < 60000]
    assert held == [(36000, 1, "ds-prefill", "dp_rpc_port"),
                    (36001, 32, "ds-prefill", "KV transfer ports (kv_port + NPUs)")]
    assert found["pd"]["ds"]["pools"]["decode"]["kv_port"] == 36033


def test_the_proxy_joins_the_pools_heads_and_the_router_routes_to_it():
    found = plan()
    proxy = found["pd"]["ds"]["proxy"]
    assert proxy["host"] == "d1" and proxy["unit"] == "ascend-pd-ds.service"
    assert proxy["argv"] == [
        "/opt/ascend-inference/venv/bin/python", "/opt/pd/load_balance_proxy_server_example.py",
        "--host", "10.0.0.3", "--port", str(proxy["port"]),
        "--prefiller-hosts", "10.0.0.1", "--prefiller-ports", "8000",
        "--decoder-hosts", "10.0.0.3", "--decoder-ports", "8000"]
    assert proxy["port"] == 8001
    backends = found["router"]["backends"]
    assert [(b["served_model_name"], [(s["address"], s["port"]) for s in b["servers"]]) for b in backends] == [
        ("deepseek", [("10.0.0.3", 8001)])]
    # Up while each pool's head answers /health and the proxy its /healthcheck (which ignores the pools).
    assert [(c["pool"], c["address"], c["port"], c["path"]) for c in backends[0]["checks"]] == [
        ("ds-prefill", "10.0.0.1", 8000, "/health"), ("ds-decode", "10.0.0.3", 8000, "/health"),
        (None, None, None, "/healthcheck")]


def test_without_the_proxy_directory_the_deploy_is_refused_and_the_plan_shown():
    found = plan(proxy_dir=None)
    assert found["pd"]["ds"]["proxy"]["argv"] is None
    assert fleet.deploy_problems(found)[-1].startswith(
        "instance ds has prefill and decode pools: set ascend_pd_proxy_dir")


def test_prefill_tp_below_decode_tp_is_refused_before_anything_starts():
    found = refused(with_pools(prefill={"tensor_parallel_size": 1, "data_parallel_size": 32},
                               decode={"tensor_parallel_size": 8, "data_parallel_size": 4}))
    assert found == ["instance ds: ascend_instances.ds.prefill.tensor_parallel_size 1 is below "
                     "ascend_instances.ds.decode.tensor_parallel_size 8; vllm-ascend's Mooncake connector needs "
                     "prefill TP >= decode TP (mooncake_connector.py)"]


def test_non_divisible_tp_is_refused_for_a_model_without_mla_only():
    layout = {"ds": dict(TUTORIAL["ds"], enable_expert_parallel=False, model="/models/qwen",
                         prefill={"hosts": ["p1"], "tensor_parallel_size": 4},
                         decode={"hosts": ["d1"], "tensor_parallel_size": 3})}
    assert refused(layout, configs={"ds": QWEN}) == [
        "instance ds: prefill TP 4 is not a multiple of decode TP 3; vllm-ascend needs that for a model without "
        "DeepSeek's MLA (ascend_config.py)"]
    # vLLM's is_deepseek_mla: a DeepSeek-family model_type with a kv_lora_rank; the rank alone is not enough.
    assert refused(layout, configs={"ds": dict(QWEN, kv_lora_rank=512)})
    mla = dict(QWEN, model_type="deepseek_v3", kv_lora_rank=512)
    assert plan(layout, configs={"ds": mla})["pd"]["ds"]["pools"]["decode"]["head"] == "d1"


def test_decode_pipeline_stages_are_refused():
    found = refused(with_pools(decode={"pipeline_parallel_size": 2, "data_parallel_size": 16}))
    assert found == ["instance ds: ascend_instances.ds.decode.pipeline_parallel_size must be 1 (vllm-ascend's "
                     "Mooncake connector asserts the decode's pp_size is 1: mooncake_connector.py)"]


def test_a_kv_port_inside_the_transport_range_is_refused():
    found = refused(with_pools(kv_transfer={"kv_port": 30000}))
    assert found == ["ascend_instances.ds.kv_transfer.kv_port 30000 is Mooncake's Ascend transport range "
                     "20000-35999 (reserved on every node): choose another port"]


def test_pools_overlapping_another_instances_npus_are_named():
    instances = copy.deepcopy(TUTORIAL)
    instances["chat"] = {"model": "/models/qwen", "hosts": ["d1"], "devices": {"d1": [0, 1]}}
    found = refused(instances, configs={"ds": DEEPSEEK, "chat": QWEN})
    assert "instances chat and ds-decode both use NPUs 0,1 on host d1" in found


def unread(version, vllm):
    return ("instance ds: vllm-ascend %s (vLLM %s) is refused for prefill/decode pools: its KV connector source "
            "(vllm_ascend/distributed/) could not be read, so this collection does not know which connectors that "
            "release registers; it builds those of vllm-ascend on vLLM 0.9.1, 0.11.0, 0.23.0" % (version, vllm))


def test_engines_and_versions_without_a_built_connector_are_refused():
    assert refused(None, version="0.33.0") == [unread("0.33.0", "0.33.0")]
    assert refused(with_pools(kv_transfer={"connector": "MooncakeConnectorV1"}), version="0.11.0") == [
        "instance ds: ascend_instances.ds.kv_transfer.connector MooncakeConnectorV1 on vllm-ascend 0.11.0: this "
        "release builds LLMDataDistCMgrConnector there"]
    assert refused(None, engine="vllm-mindspore", version="0.5.1") == [
        "instance ds: prefill/decode disaggregation runs on vllm-ascend's KV connectors; vllm-mindspore 0.5.1 has "
        "none this collection builds"]


@pytest.mark.parametrize("version,vllm", [("0.30.0", "0.30.0"), ("0.32.0rc1", "0.32.0")])
def test_releases_whose_connector_source_was_not_read_are_refused(version, vllm):
    """vllm-ascend v0.30.0 and v0.32.0rc1 serve (their vLLM's option tables ship) but their vllm_ascend/distributed/
    was not read: no connector is assumed for them, whichever is asked for."""
    assert plan({"chat": {"model": "/models/qwen", "hosts": ["p1"]}}, version=version,
                configs={"chat": QWEN})["instances"]["chat"]["cluster"]["vllm_version"] == vllm
    assert refused(None, version=version) == [unread(version, vllm)]
    assert refused(with_pools(kv_transfer={"connector": "MooncakeConnectorV1"}), version=version) == [
        unread(version, vllm)]


def test_bad_pd_keys_are_named():
    layout = with_pools(prefill={"model": "/x", "serve_options": {"kv-transfer-config": "{}"}},
                        hosts=["p1"], kv_transfer={"connector": "MooncakeLayerwiseConnector", "port": 1,
                                                   "extra_config": {"prefill": {}}})
    del layout["ds"]["decode"]["hosts"]
    found = refused(layout)
    assert found == [
        "ascend_instances.ds.hosts: a prefill/decode instance is placed per pool: set ascend_instances.ds.prefill.hosts"
        " and ascend_instances.ds.decode.hosts",
        "ascend_instances.ds.prefill.model is not a pool setting (shared by both pools: set ascend_instances.ds.model);"
        " a pool takes " + ", ".join(fleet.pd_plan.POOL_SETTINGS),
        "ascend_instances.ds.prefill.serve_options.kv_transfer_config is written by the planner for the pools: set "
        "ascend_instances.ds.kv_transfer instead",
        "ascend_instances.ds.decode.hosts is required: the hosts of the decode pool, its head first",
        "ascend_instances.ds.kv_transfer.port is not a KV transfer setting; kv_transfer takes connector, kv_port, "
        "extra_config",
        "ascend_instances.ds.kv_transfer.connector MooncakeLayerwiseConnector is not built by this release: its proxy "
        "sends each request to the decode first and is called back at /v1/metaserver; this release builds the "
        "prefill-first flow of MooncakeConnectorV1",
        "ascend_instances.ds.kv_transfer.extra_config: prefill and decode are written by the planner from the pools' "
        "layouts"]


def test_a_pool_layout_problem_names_the_pool():
    found = refused(with_pools(prefill={"data_parallel_size": 5}))
    assert found == ["instance ds (prefill pool): TP 8 x PP 1 x DP 5 = 40 NPUs is more than the cluster's 32 NPUs "
                     "(p1 16, p2 16)"]


@pytest.mark.parametrize("version", ["0.9.1", "0.11.0", "0.23.0"])
def test_the_fixture_is_vllms_class(version):
    """The fixture holds the fields every connector config needs, with vLLM's defaults and checks."""
    found = kv_class(version)
    assert found["vllm_version"] == version
    for field in ("kv_connector", "kv_role", "kv_port", "engine_id", "kv_connector_extra_config"):
        assert field in found["fields"]
    assert found["fields"]["kv_port"]["value"] == 14579
    assert set(found["kv_role"]) == {"kv_producer", "kv_consumer", "kv_both"}
    # 0.9.1 and 0.11 word it "kv_disagg_role", 0.23 "kv_role"; the check is the same.
    assert any("when kv_connector is set" in check for check in found["post_init_raises"])
    assert found["forbids_extra"] == (version == "0.23.0")


@pytest.mark.parametrize("version,rpc_variable", [("0.11.0", "VLLM_ASCEND_LLMDD_RPC_PORT"),
                                                  ("0.9.1", "VLLM_LLMDD_RPC_PORT")])
def test_llmdatadist_pools_get_the_readme_config_a_rank_table_and_rpc_ports(version, rpc_variable):
    """vllm-ascend 0.9.1 and 0.11 (examples/disaggregated_prefill_v1/README.md; 0.9.1: disaggregate_prefill_v1)."""
    found = plan(version=version)
    accepted = kv_class(version)
    entry = found["pd"]["ds"]
    assert entry["connector"] == "LLMDataDistCMgrConnector"
    assert entry["rank_table"] == "/etc/ascend-inference/ranktable-ds.json"
    for pool, role in (("prefill", "kv_producer"), ("decode", "kv_consumer")):
        for host, node in sorted(found["instances"]["ds-" + pool]["nodes"].items()):
            argv = node["serve_argv"]
            config = json.loads(argv[argv.index("--kv-transfer-config") + 1])
            assert set(config) <= set(accepted["fields"]) and config["kv_role"] in accepted["kv_role"]
            assert config == {"kv_connector": "LLMDataDistCMgrConnector", "kv_buffer_device": "npu", "kv_role": role,
                              "kv_parallel_size": 1, "engine_id": "ds-" + pool,
                              "kv_connector_module_path": "vllm_ascend.distributed.llmdatadist_c_mgr_connector"}
            assert node["env"]["DISAGGREGATED_PREFILL_RANK_TABLE_PATH"] == entry["rank_table"]
            assert node["env"][rpc_variable] == str(entry["pools"][pool]["kv_port"])
            # Mooncake's tuning is not LLMDataDist's: the planner's mp multi-node value, or the user's.
            assert node["env"]["HCCL_BUFFSIZE"] == ("1024" if pool == "prefill" else "700")
    # Each pool's RPC ports from vllm-ascend's default 5557 up, DP x TP wide: prefill 4 x 8, decode 32 x 1.
    assert (entry["pools"]["prefill"]["kv_port"], entry["pools"]["prefill"]["kv_ports"]) == (5557, 32)
    assert (entry["pools"]["decode"]["kv_port"], entry["pools"]["decode"]["kv_ports"]) == (5589, 32)
    assert refused(with_pools(kv_transfer={"kv_port": 40000}), version=version) == [
        "instance ds: ascend_instances.ds.kv_transfer.kv_port is Mooncake's; LLMDataDistCMgrConnector reads neither "
        "(its ports are %s and up, allocated)" % rpc_variable]


def test_names_served_names_ports_and_options_that_would_mislead_are_refused():
    clash = copy.deepcopy(TUTORIAL)
    clash["ds-prefill"] = {"hosts": ["p1"], "npus_per_host": 1}
    assert refused(clash) == ["ascend_instances: ds-prefill is the name of instance ds's prefill pool: rename one of "
                              "them"]
    shared = copy.deepcopy(TUTORIAL)
    shared["solo"] = {"served_model_name": "deepseek", "hosts": ["p1"], "model": "/models/DeepSeek-R1-W8A8"}
    shared["ds"]["prefill"]["npus_per_host"] = 8
    shared["ds"]["prefill"]["data_parallel_size"] = 2
    shared["solo"]["devices"] = {"p1": [8]}
    assert refused(shared, configs={"ds": DEEPSEEK, "solo": DEEPSEEK}) == [
        "instance ds (prefill/decode) and solo serve the same name 'deepseek': the router sends it to the PD "
        "instance's proxy only; give each its own served_model_name"]
    assert refused(with_pools(kv_transfer={"kv_port": "abc"})) == [
        "ascend_instances.ds.kv_transfer.kv_port must be a TCP port with room for the pool's 32 NPUs above it "
        "(found 'abc')"]
    assert refused(with_pools(prefill={"serve_options": {"prefill-context-parallel-size": 2}})) == [
        "ascend_instances.ds.prefill.serve_options.prefill_context_parallel_size is not planned with prefill and "
        "decode pools (it widens the KV port ranges ascend_instances.ds.kv_transfer allocates)"]
    assert refused(with_pools(kv_transfer={"extra_config": {1: "a"}}))[0].startswith(
        "ascend_instances.ds.kv_transfer.extra_config must be a mapping with string keys")
    # A pool's extra_env that is no mapping is named as any instance's is, not a crash.
    assert any("extra_env" in problem for problem in refused(with_pools(decode={"extra_env": ["a"]})))


def test_a_shared_key_is_named_where_it_was_set():
    # engine_version is the instance's (both pools share it): its problem names it there, not as a pool key the user
    # could not have set.
    problems = refused(with_pools(engine_version="0.7.0"))
    assert problems and all("ascend_instances.ds.engine_version" in p for p in problems), problems
    assert not any(".prefill.engine_version" in p or ".decode.engine_version" in p for p in problems)


def test_prefill_pipeline_stages_reach_the_decode_through_the_extra_config():
    found = plan(with_pools(prefill={"pipeline_parallel_size": 2, "data_parallel_size": 2}))
    argv = found["instances"]["ds-decode"]["nodes"]["d1"]["serve_argv"]
    extra = json.loads(argv[argv.index("--kv-transfer-config") + 1])["kv_connector_extra_config"]
    assert extra["prefill"] == {"tp_size": 8, "dp_size": 2, "pp_size": 2}


def test_without_the_router_a_pd_instance_is_not_deployed():
    settings = {"engine": "vllm-ascend", "engine_version": "0.23.0", "model": "/models/default", "launcher": "mp"}
    found = fleet.make_fleet_plan(settings, a3_nodes(), copy.deepcopy(TUTORIAL), {"ds": DEEPSEEK},
                                  router={"enabled": False}, pd_proxy_dir="/opt/pd")
    assert found["router"] is None
    assert fleet.deploy_problems(found) == [
        "instance ds has prefill and decode pools: vllm-ascend's proxy checks no client key and serves "
        "/instances/add and /instances/remove, which hand out the engines' key; keep the router "
        "(ascend_router_enabled: true): it checks clients' keys and passes completions only"]
