# -*- coding: utf-8 -*-
"""Every planning rule and every validation error of module_utils/plan/planner."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible_collections.ascend.inference.plugins.module_utils.plan import input_rules
from ansible_collections.ascend.inference.plugins.module_utils.plan.planner import PlanError, make_plan
from ansible_collections.ascend.inference.plugins.module_utils.engines.releases import supported_vllm_versions

# The planner's default engine (vllm-mindspore 0.5.1) runs on vLLM 0.11.0.
VLLM_VERSION = "0.11.0"
# An engine release on each shipped vLLM: (engine, engine version).
RELEASE_ON = {"0.9.1": ("vllm-mindspore", "0.4.0"), "0.11.0": ("vllm-mindspore", "0.5.1"),
              "0.23.0": ("vllm-ascend", "0.23.0"), "0.30.0": ("vllm-ascend", "0.30.0"),
              "0.32.0": ("vllm-ascend", "0.32.0rc1"), "0.33.0": ("vllm-ascend", "0.33.0")}


def node(name, ip, head=False, **extra):
    extra.update(name=name, node_ip=ip, head=head)
    return extra


def two_nodes(npus=8, **extra):
    return [node("h", "10.0.0.1", head=True, nic="eth0", npus_per_node=npus, **extra),
            node("w", "10.0.0.2", nic="eth1", npus_per_node=npus, **extra)]


def plan(nodes=None, **settings):
    settings.setdefault("engine", "vllm-mindspore")
    settings.setdefault("model", "/models/m")
    return make_plan(settings, two_nodes() if nodes is None else nodes)


def errors(nodes=None, **settings):
    with pytest.raises(PlanError) as caught:
        plan(nodes, **settings)
    return caught.value.errors


def flags(argv):
    """{flag: value or True} of an argv, after the program, 'serve' and the model."""
    parsed, rest = {}, argv[3:]
    index = 0
    while index < len(rest):
        token = rest[index]
        assert token.startswith("--"), "unexpected positional %r in %r" % (token, argv)
        if "=" in token:
            key, value = token.split("=", 1)
            parsed[key] = value
            index += 1
        elif index + 1 < len(rest) and not rest[index + 1].startswith("--"):
            parsed[token] = rest[index + 1]
            index += 2
        else:
            parsed[token] = True
            index += 1
    return parsed


# --- programs and argv shape -------------------------------------------------

@pytest.mark.parametrize("engine,program", [("vllm-mindspore", ["vllm-mindspore", "serve"]),
                                            ("vllm-ascend", ["vllm", "serve"])])
def test_program_per_engine(engine, program):
    result = plan(engine=engine)
    assert result["nodes"]["h"]["serve_argv"][:3] == program + ["/models/m"]


def test_every_vllm_release_has_an_engine_release_here():
    assert sorted(RELEASE_ON) == sorted(supported_vllm_versions())


@pytest.mark.parametrize("vllm", supported_vllm_versions())
def test_every_flag_is_a_known_full_vllm_option(vllm_help, vllm):
    """Checked against the real `vllm serve --help=all` of each release (tests/vllm_help), not the planner's tables."""
    serve = vllm_help.read_capture(vllm)
    engine, version = RELEASE_ON[vllm]
    release = dict(engine=engine, engine_version=version)
    ep = {"expert_parallel_size": 8} if engine == "vllm-mindspore" else {}
    results = [plan(launcher="mp", data_parallel_size=4, tensor_parallel_size=2, enable_expert_parallel=True,
                    serve_options={"trust_remote_code": True, "enable_prefix_caching": False,
                                   "max_num_seqs": 8, "block_size": 128, "api_server_count": 2}, **dict(ep, **release)),
               plan(launcher="ray", tensor_parallel_size=8, pipeline_parallel_size=2, **release),
               plan(launcher="ray", data_parallel_size=2, tensor_parallel_size=8, **release)]
    assert all(r["cluster"]["vllm_version"] == vllm for r in results)
    argvs = [(name, planned["serve_argv"]) for result in results for name, planned in result["nodes"].items()
             if planned["serve_argv"]]
    for name, argv in argvs:
        for flag, value in flags(argv).items():
            option = flag[2:].replace("-", "_")
            negatives = dict((spec["negative"], key) for key, spec in serve.items() if "negative" in spec)
            if flag in negatives:  # vLLM 0.33's --disable-x, the off form of --enable-x
                option = negatives[flag]
                assert value is True, (name, flag)
                continue
            if option not in serve and option.startswith("no_"):
                option = option[3:]
                assert serve.get(option, {}).get("kind") == "bool_optional", (name, flag)
            assert option in serve, (name, flag)
            assert (value is True) == (serve[option]["kind"] in ("flag", "bool_optional")), (name, flag, value)
            assert value is True or value in serve[option].get("choices", [value]), (name, flag, value)


def test_additional_config_is_one_json_argument():
    argv = plan(enable_expert_parallel=True, expert_parallel_size=4, tensor_parallel_size=4, data_parallel_size=2,
                additional_config={"enable_graph_mode": True})["nodes"]["h"]["serve_argv"]
    assert "--addition-config" not in argv
    value = argv[argv.index("--additional-config") + 1]
    assert json.loads(value) == {"expert_parallel": 4, "enable_graph_mode": True}


def test_shell_command_is_display_only_and_quotes_json():
    planned = plan(enable_expert_parallel=True, expert_parallel_size=2, data_parallel_size=2)["nodes"]["h"]
    assert "'{\"expert_parallel\": 2}'" in planned["serve_command"]
    assert '{"expert_parallel": 2}' in planned["serve_argv"]


def test_served_model_name_and_port():
    argv = plan(served_model_name="qwen", api_port=9000)["nodes"]["h"]["serve_argv"]
    assert flags(argv)["--served-model-name"] == "qwen"
    assert flags(argv)["--port"] == "9000"


# --- mp launcher ---------------------------------------------------------------

def test_mp_dp_every_node_serves_with_ranks_address_and_port():
    result = plan(launcher="mp", data_parallel_size=4, tensor_parallel_size=4, dp_rpc_port=29551)
    head, worker = (flags(result["nodes"][n]["serve_argv"]) for n in ("h", "w"))
    assert "--headless" not in head and worker["--headless"] is True
    assert "--data-parallel-start-rank" not in head
    assert worker["--data-parallel-start-rank"] == "2"
    for parsed in (head, worker):
        assert parsed["--data-parallel-address"] == "10.0.0.1"
        assert parsed["--data-parallel-rpc-port"] == "29551"
        assert parsed["--data-parallel-size"] == "4"
        assert parsed["--data-parallel-size-local"] == "2"
        assert "--data-parallel-backend" not in parsed and "--distributed-executor-backend" not in parsed
    assert "--port" in head and "--port" not in worker
    assert result["nodes"]["w"]["ray_start_argv"] is None


def test_mp_start_rank_is_sum_of_earlier_local_sizes():
    nodes = [node("a", "10.0.0.1", head=True, npus_per_node=8, data_parallel_size_local=3),
             node("b", "10.0.0.2", npus_per_node=8, data_parallel_size_local=1),
             node("c", "10.0.0.3", npus_per_node=8, data_parallel_size_local=2)]
    result = plan(nodes, launcher="mp", data_parallel_size=6)
    assert [result["nodes"][n]["data_parallel_start_rank"] for n in "abc"] == [0, 3, 4]
    assert flags(result["nodes"]["c"]["serve_argv"])["--data-parallel-start-rank"] == "4"


def test_default_local_dp_split_evenly_head_first():
    nodes = [node(n, "10.0.0.%d" % i, head=(i == 1), npus_per_node=8) for i, n in enumerate("abc", 1)]
    result = plan(nodes, launcher="mp", data_parallel_size=5)
    assert [result["nodes"][n]["data_parallel_size_local"] for n in "abc"] == [2, 2, 1]


def test_head_first_whatever_the_inventory_order():
    nodes = [node("w", "10.0.0.2", npus_per_node=8), node("h", "10.0.0.1", head=True, npus_per_node=8)]
    result = plan(nodes, launcher="mp", data_parallel_size=2)
    assert result["cluster"]["node_order"] == ["h", "w"]
    assert flags(result["nodes"]["w"]["serve_argv"])["--data-parallel-start-rank"] == "1"


def test_single_node_mp_has_no_multi_node_flags():
    result = plan([node("h", "10.0.0.1", head=True, npus_per_node=4)], launcher="mp", tensor_parallel_size=4)
    parsed = flags(result["nodes"]["h"]["serve_argv"])
    assert parsed["--tensor-parallel-size"] == "4"
    assert not [f for f in parsed if f.startswith("--data-parallel")]
    assert result["nodes"]["h"]["env"].get("GLOO_SOCKET_IFNAME") is None


# --- Ray launcher ----------------------------------------------------------------

def test_ray_dp_serves_on_head_only_with_ray_backend_and_head_share():
    result = plan(data_parallel_size=4, npus=2, nodes=two_nodes(npus=2))
    head = flags(result["nodes"]["h"]["serve_argv"])
    assert head["--data-parallel-backend"] == "ray"
    assert head["--data-parallel-size-local"] == "2"
    assert "--data-parallel-address" not in head and "--data-parallel-start-rank" not in head
    assert result["nodes"]["w"]["serve_argv"] is None
    assert result["cluster"]["ray_nodes_expected"] == 2
    assert result["cluster"]["ray_npus_expected"] == 4


def test_ray_executor_only_when_model_does_not_fit_on_head():
    fits = flags(plan(tensor_parallel_size=8)["nodes"]["h"]["serve_argv"])
    spans = flags(plan(tensor_parallel_size=8, pipeline_parallel_size=2)["nodes"]["h"]["serve_argv"])
    assert "--distributed-executor-backend" not in fits
    assert spans["--distributed-executor-backend"] == "ray"
    assert spans["--pipeline-parallel-size"] == "2"


def test_ray_start_commands():
    result = plan(ray_port=6380, ray_dashboard_host="0.0.0.0")
    head, worker = result["nodes"]["h"]["ray_start_argv"], result["nodes"]["w"]["ray_start_argv"]
    assert head[:3] == ["ray", "start", "--head"]
    assert "--port=6380" in head and "--dashboard-host=0.0.0.0" in head and "--block" in head
    assert "--node-ip-address=10.0.0.1" in head
    assert "--address=10.0.0.1:6380" in worker and "--node-ip-address=10.0.0.2" in worker
    assert "--head" not in worker and "--block" in worker


def test_ray_npu_total_counts_explicit_devices():
    nodes = [node("h", "10.0.0.1", head=True, npu_devices=[0, 1, 2]), node("w", "10.0.0.2", npus_per_node=4)]
    result = plan(nodes)
    assert result["cluster"]["ray_npus_expected"] == 7
    assert result["nodes"]["h"]["env"]["ASCEND_RT_VISIBLE_DEVICES"] == "0,1,2"
    assert result["nodes"]["h"]["devices_from"] == "ascend_npu_devices"
    assert any("w" in w for w in result["warnings"])


# --- expert parallelism ------------------------------------------------------------

def test_logic_ids_go_to_the_runtime_physical_ids_to_the_network_check():
    # A container given /dev/davinci4..7 (logic IDs 0..3): ASCEND_RT_VISIBLE_DEVICES takes logic IDs,
    # hccn_tool and the device files the physical ones.
    nodes = [node("h", "10.0.0.1", head=True, nic="eth0", npu_devices=[0, 1, 2, 3],
                  device_map={"0": 4, "1": 5, "2": 6, "3": 7}, npu_family="910B"),
             node("w", "10.0.0.2", nic="eth0", npu_devices=[0, 1])]
    result = plan(nodes, tensor_parallel_size=2, data_parallel_size=3, launcher="mp")["nodes"]
    assert result["h"]["env"]["ASCEND_RT_VISIBLE_DEVICES"] == "0,1,2,3"
    assert result["h"]["visible_devices"] == [0, 1, 2, 3] and result["h"]["physical_devices"] == [4, 5, 6, 7]
    assert result["h"]["npu_family"] == "910B"
    assert result["w"]["physical_devices"] == [0, 1] and result["w"]["npu_family"] is None


def test_capacity_waits_for_detection_where_devices_are_assumed():
    # Two Atlas A3 nodes (16 dies) before the preflight detects them: 8 per node is only assumed.
    layout = dict(engine="vllm-ascend", tensor_parallel_size=16, pipeline_parallel_size=2)
    assert errors(**layout) == ["TP 16 x PP 2 x DP 1 = 32 NPUs is more than the cluster's 16 NPUs (h 8, w 8)"]
    pending = plan(devices_pending=True, **layout)
    assert pending["warnings"] == [] and pending["cluster"]["npus_required"] == 32
    # Devices the inventory gives are judged at once, pending or not.
    known = [node("h", "10.0.0.1", head=True, nic="eth0", npu_devices=list(range(8))),
             node("w", "10.0.0.2", nic="eth0", npu_devices=list(range(8)))]
    assert errors(known, devices_pending=True, **layout) == [
        "TP 16 x PP 2 x DP 1 = 32 NPUs is more than the cluster's 16 NPUs (h 8, w 8)"]


def test_a_device_map_that_is_not_numbers_is_refused():
    nodes = [node("h", "10.0.0.1", head=True, nic="eth0", npus_per_node=2, device_map={"0": "four"})]
    assert errors(nodes) == ["ascend_npu_device_map on host h must map logic IDs to physical IDs, both integers "
                             "(found '0': 'four')"]
    nodes = [node("h", "10.0.0.1", head=True, nic="eth0", npus_per_node=3, device_map={"0": 5, "1": 5, "2": -1})]
    assert errors(nodes) == ["ascend_npu_device_map on host h maps '2' to -1; IDs are >= 0",
                             "host h uses physical ID 5 (/dev/davinci5) for several logic IDs (0, 1): check "
                             "ascend_npu_device_map"]


def test_ep_default_size_is_tp_times_dp_without_config():
    result = plan(enable_expert_parallel=True, tensor_parallel_size=4, data_parallel_size=2)
    argv = result["nodes"]["h"]["serve_argv"]
    assert "--enable-expert-parallel" in argv and "--additional-config" not in argv
    assert result["cluster"]["expert_parallel_size"] == 8


def test_ep_explicit_size_goes_to_additional_config():
    result = plan(enable_expert_parallel=True, expert_parallel_size=4, tensor_parallel_size=4, data_parallel_size=2)
    assert result["cluster"]["additional_config"] == {"expert_parallel": 4}
    assert result["cluster"]["expert_parallel_size"] == 4


def test_ep_off_means_no_flag_and_no_size():
    result = plan()
    assert "--enable-expert-parallel" not in result["nodes"]["h"]["serve_argv"]
    assert result["cluster"]["expert_parallel_size"] is None


# --- environment -------------------------------------------------------------------

def test_mindspore_ray_environment():
    env = plan()["nodes"]["w"]["env"]
    assert env == {
        "ASCEND_RT_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7",
        "MS_ENABLE_LCCL": "off",
        "HCCL_OP_EXPANSION_MODE": "AIV",
        "MS_ALLOC_CONF": "enable_vmm:true",
        "VLLM_MS_MODEL_BACKEND": "MindFormers",
        "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION": "python",
        "GLOO_SOCKET_IFNAME": "eth1",
        "HCCL_SOCKET_IFNAME": "eth1",
        "TP_SOCKET_IFNAME": "eth1",
    }


def test_vllm_ascend_ray_environment():
    env = plan(engine="vllm-ascend")["nodes"]["w"]["env"]
    assert env == {
        "ASCEND_RT_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7",
        "HCCL_IF_IP": "10.0.0.2",
        "RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES": "1",
        "GLOO_SOCKET_IFNAME": "eth1",
        "HCCL_SOCKET_IFNAME": "eth1",
        "TP_SOCKET_IFNAME": "eth1",
    }


def test_vllm_ascend_mp_multi_node_environment():
    env = plan(engine="vllm-ascend", launcher="mp", data_parallel_size=2)["nodes"]["h"]["env"]
    assert env["HCCL_IF_IP"] == "10.0.0.1" and env["HCCL_BUFFSIZE"] == "1024" and env["OMP_PROC_BIND"] == "false"
    assert "RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES" not in env
    assert "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION" not in env


def test_mindspore_mp_single_node_environment_has_no_socket_names():
    env = plan([node("h", "10.0.0.1", head=True, nic="eth0")], launcher="mp")["nodes"]["h"]["env"]
    assert set(env) == {"ASCEND_RT_VISIBLE_DEVICES", "MS_ENABLE_LCCL", "HCCL_OP_EXPANSION_MODE",
                        "MS_ALLOC_CONF", "VLLM_MS_MODEL_BACKEND"}


def test_undetected_nic_is_reported_not_invented():
    nodes = [node("h", "10.0.0.1", head=True), node("w", "10.0.0.2", nic="eth1")]
    result = plan(nodes)
    assert result["nodes"]["h"]["env"]["GLOO_SOCKET_IFNAME"] is None
    assert result["nodes"]["h"]["unresolved_env"] == ["GLOO_SOCKET_IFNAME", "HCCL_SOCKET_IFNAME", "TP_SOCKET_IFNAME"]
    assert result["nodes"]["w"]["unresolved_env"] == []


def test_extra_env_overrides_and_adds():
    env = plan(extra_env={"MS_ENABLE_LCCL": "on", "HCCL_EXEC_TIMEOUT": 7200}, model_backend="Native")["nodes"]["h"]["env"]
    assert env["MS_ENABLE_LCCL"] == "on" and env["HCCL_EXEC_TIMEOUT"] == "7200"
    assert env["VLLM_MS_MODEL_BACKEND"] == "Native"


# --- serve options -------------------------------------------------------------------

def test_serve_option_rendering():
    argv = plan(serve_options={
        "trust_remote_code": True, "enable_prefix_caching": False, "max_num_seqs": 256,
        "gpu_memory_utilization": 0.9, "max-model-len": 4096, "seed": -1, "api_server_count": None,
        "hf_overrides": {"rope_theta": 1000},
    })["nodes"]["h"]["serve_argv"]
    parsed = flags(argv)
    assert parsed["--trust-remote-code"] is True
    assert parsed["--no-enable-prefix-caching"] is True
    assert parsed["--max-num-seqs"] == "256" and parsed["--gpu-memory-utilization"] == "0.9"
    assert parsed["--max-model-len"] == "4096"
    assert parsed["--seed"] == "-1" and "--seed=-1" in argv
    assert "--api-server-count" not in parsed
    assert json.loads(parsed["--hf-overrides"]) == {"rope_theta": 1000}


def test_multi_value_option_gives_one_element_per_value(vllm_help):
    assert vllm_help.read_capture(VLLM_VERSION)["ignore_patterns"]["kind"] == "multi"
    argv = plan(serve_options={"ignore_patterns": ["*.pt", "original/*"]})["nodes"]["h"]["serve_argv"]
    assert argv[-3:] == ["--ignore-patterns", "*.pt", "original/*"]
    assert errors(serve_options={"max_num_seqs": [1, 2]}) == ["ascend_serve_options.max_num_seqs takes one value (found [1, 2])"]


# --- validation errors -------------------------------------------------------------

@pytest.mark.parametrize("variable,key", [("ascend_tensor_parallel_size", "tensor_parallel_size"),
                                          ("ascend_pipeline_parallel_size", "pipeline_parallel_size"),
                                          ("ascend_data_parallel_size", "data_parallel_size")])
@pytest.mark.parametrize("value", [0, -2])
def test_non_positive_sizes(variable, key, value):
    assert errors(**{key: value}) == ["%s must be a positive integer (found %d)" % (variable, value)]


def test_unknown_engine_and_launcher_and_missing_model():
    found = errors(engine="vllm-cuda", launcher="slurm", model="")
    assert "ascend_engine must be one of vllm-ascend, vllm-mindspore (found 'vllm-cuda')" in found
    assert "ascend_launcher must be one of ray, mp (found 'slurm')" in found
    assert any(e.startswith("ascend_model is required") for e in found)


def test_too_many_npus_for_the_cluster():
    assert errors(tensor_parallel_size=4, pipeline_parallel_size=2, data_parallel_size=4) == [
        "TP 4 x PP 2 x DP 4 = 32 NPUs is more than the cluster's 16 NPUs (h 8, w 8)"]


def test_mp_node_local_dp_exceeds_its_devices():
    nodes = [node("h", "10.0.0.1", head=True, npus_per_node=8, data_parallel_size_local=3),
             node("w", "10.0.0.2", npus_per_node=8, data_parallel_size_local=1)]
    assert errors(nodes, launcher="mp", tensor_parallel_size=4, data_parallel_size=4) == [
        "host h: ascend_data_parallel_size_local 3 x TP 4 x PP 1 = 12 NPUs but the node has 8 (ascend_npu_devices)"]


def test_mp_model_parallelism_across_nodes_needs_ray():
    assert errors(launcher="mp", tensor_parallel_size=16) == [
        "ascend_tensor_parallel_size 16 x ascend_pipeline_parallel_size 1 = 16 NPUs does not fit on one node "
        "(largest has 8) under ascend_launcher mp; cross-node model parallelism needs ascend_launcher: ray"]


def test_mp_node_without_dp_rank():
    assert any("host w has ascend_data_parallel_size_local 0 under the mp launcher" in e
               for e in errors(launcher="mp", data_parallel_size=1))


def test_local_dp_must_sum_to_dp():
    nodes = two_nodes(data_parallel_size_local=3)
    assert errors(nodes, launcher="mp", data_parallel_size=4) == [
        "ascend_data_parallel_size_local must sum to ascend_data_parallel_size 4 over the cluster "
        "(found h 3 + w 3 = 6)"]


def test_start_rank_overlap():
    nodes = [node("h", "10.0.0.1", head=True, npus_per_node=8),
             node("w", "10.0.0.2", npus_per_node=8, data_parallel_start_rank=1)]
    found = errors(nodes, launcher="mp", data_parallel_size=4)
    assert "start-rank overlap: host w (ranks 1-2) and host h both claim DP rank 1" in found


def test_start_rank_gap_and_out_of_range():
    nodes = [node("h", "10.0.0.1", head=True, npus_per_node=8),
             node("w", "10.0.0.2", npus_per_node=8, data_parallel_start_rank=3)]
    found = errors(nodes, launcher="mp", data_parallel_size=4)
    assert "host w claims DP rank 4 (ranks 3-4) but ascend_data_parallel_size is 4" in found
    assert "DP ranks owned by no node: 2; check ascend_data_parallel_start_rank" in found


def test_start_rank_on_ray_has_no_effect():
    nodes = [node("h", "10.0.0.1", head=True), node("w", "10.0.0.2", data_parallel_start_rank=1)]
    assert any("ascend_data_parallel_start_rank on host w has no effect under the ray launcher" in e
               for e in errors(nodes, data_parallel_size=2))


def test_expert_size_without_ep():
    assert errors(expert_parallel_size=4) == [
        "ascend_expert_parallel_size 4 has no effect while ascend_enable_expert_parallel is false; "
        "enable expert parallelism or remove the size"]


def test_expert_size_larger_than_tp_times_dp():
    assert errors(enable_expert_parallel=True, expert_parallel_size=16, tensor_parallel_size=4,
                  data_parallel_size=2) == ["ascend_expert_parallel_size 16 is larger than TP x DP = 4 x 2 = 8"]


def test_expert_size_with_vllm_ascend():
    assert errors(engine="vllm-ascend", enable_expert_parallel=True, expert_parallel_size=4,
                  tensor_parallel_size=4)[0].startswith("ascend_expert_parallel_size is read by vllm-mindspore only")


def test_expert_parallel_inside_additional_config_is_refused():
    assert errors(enable_expert_parallel=True, additional_config={"expert_parallel": 2}) == [
        "ascend_additional_config.expert_parallel is set by the planner; use ascend_expert_parallel_size instead"]


def test_seed_parallel_keys_warn():
    result = plan(additional_config={"data_parallel": 4, "model_parallel": 1})
    assert any("data_parallel is not read by vllm-mindspore" in w and "says 4 while the planner uses 1" in w
               for w in result["warnings"])


def test_duplicate_node_ips_and_bad_ip():
    nodes = [node("h", "10.0.0.1", head=True), node("w", "10.0.0.1"), node("x", "node-x")]
    found = errors(nodes)
    assert "ascend_node_ip 10.0.0.1 is used by several hosts: h, w" in found
    assert any(e.startswith("ascend_node_ip on host x must be an IP address (found 'node-x'") for e in found)


@pytest.mark.parametrize("heads", [0, 2])
def test_zero_or_several_heads(heads):
    nodes = [node("a", "10.0.0.1", head=heads >= 1), node("b", "10.0.0.2", head=heads >= 2)]
    found = errors(nodes)
    assert found[0].startswith("group ascend_head must hold exactly one host (found %d" % heads)


def test_no_nodes():
    assert errors([]) == ["group ascend_cluster has no hosts"]


def test_unknown_option_no_prefix_matching():
    assert errors(serve_options={"max_num": 4}) == [
        "ascend_serve_options.max_num is not an option of `vllm serve` in vLLM 0.11.0 (vllm-mindspore 0.5.1); "
        "abbreviations are not accepted"]
    assert errors(serve_options={"addition_config": "{}"})[0].startswith("ascend_serve_options.addition_config is not")


@pytest.mark.parametrize("option,variable", [("tensor_parallel_size", "ascend_tensor_parallel_size"),
                                             ("data_parallel_size_local", "ascend_data_parallel_size_local (per host)"),
                                             ("headless", "the ascend_head / ascend_workers groups"),
                                             ("port", "ascend_api_port")])
def test_options_the_planner_owns(option, variable):
    assert errors(serve_options={option: 2})[0] == (
        "ascend_serve_options.%s is set by the planner; use %s instead" % (option, variable))


def test_serve_option_values_are_checked():
    found = errors(serve_options={"block_size": 7, "max_num_seqs": "many", "trust_remote_code": "yes"})
    assert "ascend_serve_options.block_size must be one of 1, 128, 16, 32, 64, 8 (found 7)" in found
    assert "ascend_serve_options.max_num_seqs must be an int (found 'many')" in found
    assert "ascend_serve_options.trust_remote_code is a switch: set true or false (found 'yes')" in found


def test_devices_and_ports_are_checked():
    nodes = [node("h", "10.0.0.1", head=True, npu_devices=[0, 0]), node("w", "10.0.0.2", npus_per_node=0)]
    found = errors(nodes, api_port=6379)
    assert "ascend_npu_devices on host h lists a device twice (found [0, 0])" in found
    assert "ascend_npus_per_node on host w must be a positive integer (found 0)" in found
    assert "ascend_api_port and ascend_ray_port are both 6379: each service needs its own port" in found


def test_ray_dp_rank_must_fit_one_node():
    nodes = [node("n%d" % i, "10.0.0.%d" % i, head=(i == 0), npus_per_node=8) for i in range(4)]
    assert errors(nodes, data_parallel_size=2, tensor_parallel_size=16)[0].startswith(
        "with ascend_data_parallel_size 2 under Ray each DP rank's TP 16 x PP 1 = 16 NPUs must fit on one node")


def test_all_errors_are_reported_together():
    found = errors(engine="x", tensor_parallel_size=0, data_parallel_size=0)
    assert len(found) == 3


def test_model_backend_checked_case_insensitively():
    assert plan(model_backend="mindformers")["nodes"]["h"]["env"]["VLLM_MS_MODEL_BACKEND"] == "mindformers"
    assert errors(model_backend="Torch")[0].startswith("ascend_model_backend must be one of")


# --- model config.json checks ---------------------------------------------------

QWEN = {"num_attention_heads": 28, "num_key_value_heads": 4, "num_hidden_layers": 28}
MOE = {"num_attention_heads": 64, "num_key_value_heads": 4, "num_hidden_layers": 94, "num_experts": 128}


def test_tp_must_divide_attention_heads():
    assert errors(model_config=QWEN, tensor_parallel_size=8) == [
        "ascend_tensor_parallel_size 8 does not divide the model's 28 attention heads "
        "(num_attention_heads in config.json)"]


def test_tp_and_kv_heads_must_divide_one_another():
    config = dict(QWEN, num_attention_heads=24, num_key_value_heads=8)
    assert errors(model_config=config, tensor_parallel_size=12, nodes=two_nodes(npus=16))[-1] == (
        "ascend_tensor_parallel_size 12 and the model's 8 KV heads (num_key_value_heads) must divide one another")
    plan(model_config=dict(QWEN, num_key_value_heads=2), tensor_parallel_size=4)


def test_pp_larger_than_layers():
    assert errors(model_config=dict(QWEN, num_hidden_layers=1), pipeline_parallel_size=2) == [
        "ascend_pipeline_parallel_size 2 is larger than the model's 1 layers (num_hidden_layers in config.json)"]


def test_ep_against_routed_experts():
    assert errors(model_config=dict(MOE, num_experts=4), enable_expert_parallel=True, tensor_parallel_size=8) == [
        "the expert-parallel size 8 is larger than the model's 4 routed experts"]
    assert errors(model_config=QWEN, enable_expert_parallel=True, tensor_parallel_size=4)[0].startswith(
        "ascend_enable_expert_parallel is true but config.json names no routed experts")
    warned = plan(model_config=dict(MOE, num_experts=10), enable_expert_parallel=True, tensor_parallel_size=4)
    assert any("10 routed experts do not split evenly over EP 4" in w for w in warned["warnings"])


def test_text_config_of_multimodal_models_is_read():
    config = {"architectures": ["X"], "text_config": QWEN}
    assert errors(model_config=config, tensor_parallel_size=8)[0].startswith("ascend_tensor_parallel_size 8 does not")


def test_max_model_len_above_the_models_context_is_refused_under_any_spelling():
    config = dict(QWEN, max_position_embeddings=32768)
    for key in ("max_model_len", "max-model-len", "--max-model-len"):
        assert errors(model_config=config, serve_options={key: 40960}) == [
            "ascend_serve_options.max_model_len 40960 is more than the model's 32768 (max_position_embeddings in "
            "config.json): vLLM refuses to start; lower it, or set VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 in "
            "ascend_extra_env if the model is known to hold it"]
    plan(model_config=config, serve_options={"max_model_len": 40960},
         extra_env={"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"})


def test_plan_is_deterministic():
    first = plan(launcher="mp", data_parallel_size=4, serve_options={"trust_remote_code": True, "block_size": 128,
                                                                     "seed": 1})
    second = plan(launcher="mp", data_parallel_size=4, serve_options={"seed": 1, "block_size": 128,
                                                                      "trust_remote_code": True})
    assert first == second


# --- engine releases and their vLLM option tables ------------------------------

def _table(vllm):
    from ansible_collections.ascend.inference.plugins.module_utils.engines.option_tables import OPTION_TABLES
    return OPTION_TABLES[vllm].SERVE_OPTIONS


def _sample_value(name, spec):
    """A value of the right kind for one option, as a user would write it in YAML."""
    if spec["kind"] in ("flag", "bool_optional"):
        return True
    if "choices" in spec:
        return spec["choices"][0]
    if spec.get("type") in ("int", "float"):
        return 1
    if name in ("additional_config", "compilation_config", "kv_transfer_config", "kv_events_config",
                "speculative_config", "hf_overrides", "override_generation_config", "structured_outputs_config",
                "ec_transfer_config", "weight_transfer_config", "attention_config", "kernel_config",
                "profiler_config", "model_loader_extra_config", "limit_mm_per_prompt", "mm_processor_kwargs"):
        return {}
    return "x"


@pytest.mark.parametrize("vllm", supported_vllm_versions())
def test_every_option_of_the_release_is_accepted_but_the_planners_own(vllm_help, vllm):
    """Every option the real help of that vLLM lists (not the table) passes, except the one refused list."""
    from ansible_collections.ascend.inference.plugins.module_utils.plan.planner import REFUSED_OPTIONS
    engine, version = RELEASE_ON[vllm]
    captured = vllm_help.read_capture(vllm)
    options = dict((name, _sample_value(name, _table(vllm)[name])) for name in captured if name not in REFUSED_OPTIONS)
    result = plan(engine=engine, engine_version=version, serve_options=options)
    head = result["nodes"]["h"]["serve_argv"]
    for name in options:
        assert "--" + name.replace("_", "-") in " ".join(head), name
    refused = errors(engine=engine, engine_version=version,
                     serve_options=dict((name, 1) for name in REFUSED_OPTIONS if name in captured))
    assert len(refused) == len([n for n in REFUSED_OPTIONS if n in captured])
    assert all("is set by the planner; use" in e or " is refused: " in e for e in refused), refused


# Releases whose --help=all keeps every option of the table before (vLLM 0.33.0 only adds to 0.32.0's).
REMOVED_NONE = ("0.33.0",)


@pytest.mark.parametrize("vllm", supported_vllm_versions()[1:])
def test_options_removed_since_the_previous_table_are_refused_naming_the_release(vllm_help, vllm):
    from ansible_collections.ascend.inference.plugins.module_utils.engines.releases import previous_vllm_version
    previous = previous_vllm_version(vllm)
    removed = sorted(set(vllm_help.read_capture(previous)) - set(vllm_help.read_capture(vllm)))
    if vllm in REMOVED_NONE:
        assert not removed and set(vllm_help.read_capture(vllm)) > set(vllm_help.read_capture(previous)), removed
        return
    assert removed, "vLLM %s removed no option of %s?" % (vllm, previous)
    engine, version = RELEASE_ON[vllm]
    found = errors(engine=engine, engine_version=version, serve_options=dict((name, 1) for name in removed))
    assert found == ["ascend_serve_options.%s is not an option of `vllm serve` in vLLM %s (%s %s); "
                     "abbreviations are not accepted" % (name, vllm, engine, version) for name in removed]
    # ... and the release before accepts them.
    old_engine, old_version = RELEASE_ON[previous]
    options = dict((name, _sample_value(name, _table(previous)[name])) for name in removed)
    assert plan(engine=old_engine, engine_version=old_version, serve_options=options)


def test_vllm_ascend_0_23_takes_its_new_options_and_refuses_the_removed_ones():
    """The examples of the issue: refused by the 0.11 table, accepted by 0.23's, and the other way round."""
    new = {"optimization_level": 2, "max_cudagraph_capture_size": 256, "reasoning_parser": "deepseek_v3"}
    assert plan(engine="vllm-ascend", engine_version="0.23.0", serve_options=new)
    assert len(errors(engine="vllm-ascend", engine_version="0.11.0", serve_options=new)) == 3
    gone = {"swap_space": 4, "task": "generate", "disable_log_requests": True}
    assert plan(engine="vllm-ascend", engine_version="0.11.0", serve_options=gone)
    assert len(errors(engine="vllm-ascend", engine_version="0.23.0", serve_options=gone)) == 3


@pytest.mark.parametrize("engine,version,vllm", [
    ("vllm-mindspore", None, "0.11.0"), ("vllm-mindspore", "0.5.0", "0.11.0"), ("vllm-mindspore", "0.4.2", "0.9.1"),
    ("vllm-ascend", None, "0.23.0"), ("vllm-ascend", "0.9.1", "0.9.1"), ("vllm-ascend", "0.11.0", "0.11.0"),
    ("vllm-ascend", "0.23.0.post1", "0.23.0"), ("vllm-ascend", "0.30.0", "0.30.0"),
    ("vllm-ascend", "0.32.0rc1", "0.32.0"), ("vllm-ascend", "0.33.0", "0.33.0")])
def test_engine_release_selects_its_vllm(engine, version, vllm):
    cluster = plan(engine=engine, engine_version=version)["cluster"]
    assert cluster["vllm_version"] == vllm
    assert cluster["engine_version"] == (version or {"vllm-mindspore": "0.5.1", "vllm-ascend": "0.23.0"}[engine])
    assert cluster["engine_distribution"] == engine
    assert cluster["engine_program"] == {"vllm-mindspore": "vllm-mindspore", "vllm-ascend": "vllm"}[engine]


@pytest.mark.parametrize("engine,version,message", [
    ("vllm-ascend", "0.18.0", "ascend_engine_version: vllm-ascend 0.18.0 runs on vLLM 0.18.0, for which the "
                              "collection ships no option table (tables: vLLM 0.9.1, 0.11.0, 0.23.0, 0.30.0, "
                              "0.32.0, 0.33.0)"),
    ("vllm-ascend", "0.14.0rc1", "ascend_engine_version: vllm-ascend 0.14.0rc1 runs on vLLM 0.14.1, for which"),
    ("vllm-mindspore", "0.6.0", "ascend_engine_version: vllm-mindspore 0.6.0: no known vLLM pairing "
                                "(known: 0.4.x on vLLM 0.9.1, 0.5.x on vLLM 0.11.0)"),
    ("vllm-mindspore", "latest", "ascend_engine_version: 'latest' is not a release number such as 0.5.1"),
])
def test_unknown_engine_release_is_refused(engine, version, message):
    assert errors(engine=engine, engine_version=version)[0].startswith(message)


def test_api_server_options_go_to_the_api_node_only():
    result = plan(engine="vllm-ascend", launcher="mp", data_parallel_size=4, tensor_parallel_size=4,
                  serve_options={"api_server_count": 2, "max_num_seqs": 8})
    head, worker = result["nodes"]["h"]["serve_argv"], result["nodes"]["w"]["serve_argv"]
    assert flags(head)["--api-server-count"] == "2" and flags(head)["--max-num-seqs"] == "8"
    assert "--headless" in worker and "--api-server-count" not in worker and flags(worker)["--max-num-seqs"] == "8"


def test_a_switch_is_turned_off_the_way_the_release_shows():
    """vLLM 0.33 pairs --enable-x with --disable-x; before, the off form is --no-x."""
    off = {"enable_prefix_caching": False, "trust_remote_code": False}
    old = flags(plan(engine="vllm-ascend", engine_version="0.23.0", serve_options=off)["nodes"]["h"]["serve_argv"])
    new = flags(plan(engine="vllm-ascend", engine_version="0.33.0", serve_options=off)["nodes"]["h"]["serve_argv"])
    assert old["--no-enable-prefix-caching"] is True and old["--no-trust-remote-code"] is True
    assert new["--disable-prefix-caching"] is True and new["--no-trust-remote-code"] is True
    assert "--no-enable-prefix-caching" not in new


# --- hostile or careless values (the input rules) ---------------------------------------

HOSTILE_TEXT = ["a\nb", "a\rb", "tab\there", "nul\x00", "esc\x1b[31m", "del\x7f"]


@pytest.mark.parametrize("text", HOSTILE_TEXT)
@pytest.mark.parametrize("variable,settings", [
    ("ascend_model", lambda t: {"model": "/models/" + t}),
    ("ascend_served_model_name", lambda t: {"served_model_name": t}),
    ("ascend_ray_dashboard_host", lambda t: {"ray_dashboard_host": t}),
    ("ascend_serve_options.chat_template", lambda t: {"serve_options": {"chat_template": t}}),
    ("ascend_serve_options.ignore_patterns", lambda t: {"serve_options": {"ignore_patterns": ["*.pt", t]}}),
    ("ascend_additional_config", lambda t: {"additional_config": {"k": t}}),
    ("ascend_extra_env.VLLM_LOGGING_LEVEL", lambda t: {"extra_env": {"VLLM_LOGGING_LEVEL": t}}),
])
def test_control_characters_are_refused_naming_the_variable(text, variable, settings):
    found = errors(**settings(text))
    assert len(found) == 1 and found[0].startswith(variable + " holds a control character (%r" % text[
        [c < " " or c == "\x7f" for c in text].index(True)]), found


def test_a_control_character_in_a_nic_names_the_host():
    nodes = two_nodes()
    nodes[1]["nic"] = "eth0\nExecStartPre=/bin/sh"
    assert errors(nodes) == ["ascend_nic on host w holds a control character ('\\n' in "
                             "'eth0\\nExecStartPre=/bin/sh'): control characters are refused in everything "
                             "written to a unit, an environment file or a command line (a line break splits it)"]


@pytest.mark.parametrize("text", ["quote \" and ' both", "back\\slash \\\" %H %% $HOME ${X} $(touch /tmp/x) `id`",
                                  "{% for m in messages %}{{ m['content'] }}{% endfor %}", "ünïcödé ✓ 模型"])
def test_printable_hostile_text_passes_unchanged(text):
    """Quotes, backslashes, % and $ are values like any other: the units escape them (test_systemd_filter)."""
    argv = plan(serve_options={"chat_template": text}, served_model_name=text)["nodes"]["h"]["serve_argv"]
    assert argv[argv.index("--chat-template") + 1] == text
    assert argv[argv.index("--served-model-name") + 1] == text


@pytest.mark.parametrize("name,message", [
    ("X$(touch /tmp/pwned)", "ascend_extra_env: 'X$(touch /tmp/pwned)' is not an environment variable name"),
    ("A=B", "ascend_extra_env: 'A=B' is not an environment variable name"),
    ("my-var", "ascend_extra_env: 'my-var' is not an environment variable name"),
    ("", "ascend_extra_env: '' is not an environment variable name"),
    ("1ST", "ascend_extra_env: '1ST' is not an environment variable name"),
    ("A\nB", "ascend_extra_env: 'A\\nB' is not an environment variable name"),
    # A regex's $ also matches before a final line break: the whole name must match.
    ("AB\n", "ascend_extra_env: 'AB\\n' is not an environment variable name"),
    ("ÄNDERN", "ascend_extra_env: 'ÄNDERN' is not an environment variable name"),
])
def test_extra_env_names_must_be_shell_names(name, message):
    assert errors(extra_env={name: "1"})[0].startswith(message)


@pytest.mark.parametrize("value,message", [
    (True, "ascend_extra_env.X is True, a YAML boolean: quote the text the program expects ('1', 'true', 'on')"),
    (None, "ascend_extra_env.X is empty (null): give a value, or leave the variable out"),
    ({"a": 1}, "ascend_extra_env.X must be one string or number (found {'a': 1})"),
    ([1, 2], "ascend_extra_env.X must be one string or number (found [1, 2])"),
])
def test_extra_env_values_must_be_one_scalar(value, message):
    assert errors(extra_env={"X": value}) == [message]


def test_extra_env_numbers_and_text_pass():
    env = plan(extra_env={"HCCL_CONNECT_TIMEOUT": 7200, "RATIO": 0.5, "MODE": "on"})["nodes"]["h"]["env"]
    assert (env["HCCL_CONNECT_TIMEOUT"], env["RATIO"], env["MODE"]) == ("7200", "0.5", "on")


@pytest.mark.parametrize("name", ["../../x/evil", "a/b", ".", "..", "-rf", "with space", "a\nb", "ab\n", "ünï", ""])
def test_host_names_that_are_not_safe_file_names_are_refused(name):
    nodes = two_nodes()
    nodes[1]["name"] = name
    assert ("inventory host %r: its name becomes a file name" % name) in errors(nodes)[0]


@pytest.mark.parametrize("name", ["node1", "node-1.example.com", "10.0.0.2", "_x", "A_B-c.d"])
def test_ordinary_host_names_pass(name):
    nodes = two_nodes()
    nodes[1]["name"] = name
    assert name in plan(nodes)["nodes"]


def test_ipv6_node_addresses_are_refused():
    nodes = two_nodes()
    nodes[1]["node_ip"] = "2001:db8::12"
    assert errors(nodes) == ["ascend_node_ip on host w is the IPv6 address 2001:db8::12: the collection needs the "
                             "node's IPv4 address (Ray's address, the firewall and the probe are IPv4 only)"]


@pytest.mark.parametrize("option", ["host", "uds", "config", "data_parallel_rank", "data_parallel_hybrid_lb",
                                    "data_parallel_external_lb", "nnodes", "node_rank", "master_addr", "master_port"])
def test_options_that_break_the_layout_are_refused_with_the_reason(option):
    found = errors(engine="vllm-ascend", serve_options={option: "1"})
    assert len(found) == 1 and found[0].startswith("ascend_serve_options.%s is refused: " % option), found


@pytest.mark.parametrize("settings,message", [
    ({"api_port": 8265}, "ascend_api_port 8265 is Ray's dashboard under the Ray launcher: choose another port"),
    ({"api_port": 10001}, "ascend_api_port 10001 is Ray's client server under the Ray launcher"),
    ({"api_port": 52365}, "ascend_api_port 52365 is Ray's dashboard agent under the Ray launcher"),
    ({"api_port": 12000}, "ascend_api_port 12000 is in the range Ray's workers take ports from (10002-19999)"),
    ({"ray_port": 8265}, "ascend_ray_port 8265 is Ray's dashboard: choose another port"),
    ({"ray_port": 15000}, "ascend_ray_port 15000 is in the range Ray's workers take ports from (10002-19999)"),
    ({"model_transfer_port": 10001 - 2},
     "ascend_model_transfer_port + 2 (the model copy's control) 10001 is Ray's client server under the Ray launcher"),
])
def test_ports_that_collide_with_rays_own_are_refused_under_ray(settings, message):
    found = errors(launcher="ray", **settings)
    assert len(found) == 1 and found[0].startswith(message), found


def test_the_model_copy_has_its_own_port_where_the_model_role_copies():
    assert plan(model_transfer_port=8730)["cluster"]["model_transfer_port"] == 8730
    assert plan()["cluster"]["model_manifest"] == "/etc/ascend-inference/model.manifest.json"
    assert errors(api_port=8730, model_transfer_port=8730) == [
        "ascend_api_port and ascend_model_transfer_port are both 8730: each service needs its own port"]
    assert errors(model_transfer_port=0) == ["ascend_model_transfer_port must be a TCP port 1-65535 (found 0)"]
    # The pipelined copy's tracker and aria2's control take the two ports after it.
    cluster = plan(model_transfer_port=8730)["cluster"]
    assert (cluster["model_tracker_port"], cluster["model_control_port"]) == (8731, 8732)
    assert errors(api_port=8732, model_transfer_port=8730) == [
        "ascend_api_port and ascend_model_transfer_port + 2 (the model copy's control) are both 8732: each service "
        "needs its own port"]
    assert errors(model_transfer_port=65534) == [
        "ascend_model_transfer_port must leave the two ports after it for the copy's tracker and aria2's local "
        "control (found 65534)"]
    # Without copies no port is set aside.
    assert plan(api_port=8730)["cluster"]["model_transfer_port"] is None


def test_rays_ports_are_free_for_the_mp_launcher():
    assert plan(launcher="mp", data_parallel_size=2, api_port=8265, dp_rpc_port=12000)


def test_ep_size_must_divide_tp_x_dp():
    assert errors(enable_expert_parallel=True, expert_parallel_size=3, tensor_parallel_size=4,
                  data_parallel_size=2) == [
        "ascend_expert_parallel_size 3 does not divide TP x DP = 4 x 2 = 8: the experts are spread over groups "
        "of equal size"]


@pytest.mark.parametrize("config,message", [
    ({1: "a", "1": "b"}, "ascend_additional_config has the key 1, a number: quote it"),
    ({True: "a"}, "ascend_additional_config has the key True, a boolean: quote it"),
    ({"outer": {2.5: "x"}}, "ascend_additional_config.outer has the key 2.5, a decimal number: quote it"),
    ({"ratio": float("nan")}, "ascend_additional_config holds nan: give a finite number"),
    ({"sizes": [1, float("inf")]}, "ascend_additional_config holds inf: give a finite number"),
])
def test_additional_config_must_be_a_json_object(config, message):
    found = errors(additional_config=config)
    assert len(found) == 1 and found[0].startswith(message), found


def test_serve_option_numbers_must_be_finite():
    assert errors(serve_options={"gpu_memory_utilization": float("nan")}) == [
        "ascend_serve_options.gpu_memory_utilization holds nan: give a finite number"]


@pytest.mark.parametrize("version,vllm", [("0.9.1rc1", "0.9.1"), ("0.9.1rc3", "0.9.1"), ("0.23.0rc1", "0.23.0")])
def test_vllm_ascend_release_candidates_run_on_the_final_vllm(version, vllm):
    assert plan(engine="vllm-ascend", engine_version=version)["cluster"]["vllm_version"] == vllm


# Secrets (docs/security.md: "Secrets"): the plan role passes secret variables by name and problems only.
def test_secret_variables_stay_out_of_every_nodes_env_and_are_listed_by_name():
    summary = input_rules.secret_env_summary({"HF_TOKEN": "hf_abc", "db_password": "pw", "LOG": "1"})
    assert summary == {"HF_TOKEN": [], "db_password": []}
    result = plan(extra_env={"LOG": "1"}, secret_env=summary)
    assert result["cluster"]["secret_env_names"] == ["HF_TOKEN", "db_password"]
    for node in result["nodes"].values():
        assert "HF_TOKEN" not in node["env"] and node["env"]["LOG"] == "1"


def test_a_secret_given_to_the_planner_directly_is_listed_but_its_value_never_returned():
    result = plan(extra_env={"MY_SECRET": "s3cr3t-value", "API_KEY": "k3y-value"})
    assert result["cluster"]["secret_env_names"] == ["API_KEY", "MY_SECRET"]
    assert "s3cr3t-value" not in repr(result) and "k3y-value" not in repr(result)


@pytest.mark.parametrize("name,secret", [
    ("HF_TOKEN", True), ("hf_token", True), ("TOKEN", True), ("AWS_SECRET", True), ("DB_PASSWORD", True),
    ("OPENAI_API_KEY", True), ("KEY", True), ("TOKENIZERS_PARALLELISM", False), ("KEYBOARD", False),
    ("MONKEY", False), ("HCCL_IF_IP", False), ("PASSWORDLESS", False),
])
def test_which_names_are_secret(name, secret):
    assert input_rules.secret_env_name(name) is secret


@pytest.mark.parametrize("value,message", [
    ("hf_\nline", "ascend_extra_env.HF_TOKEN holds a control character ('\\n'): control characters are refused"),
    ({"hf_nested": 1}, "ascend_extra_env.HF_TOKEN must be one string or number (found a mapping)"),
    (["hf_listed"], "ascend_extra_env.HF_TOKEN must be one string or number (found a list)"),
])
def test_a_bad_secret_is_refused_without_showing_its_value(value, message):
    summary = input_rules.secret_env_summary({"HF_TOKEN": value})
    found = errors(secret_env=summary)
    assert len(found) == 1 and found[0].startswith(message)
    assert "hf_" not in found[0]


def test_vllm_api_key_in_extra_env_points_to_ascend_api_key():
    assert errors(secret_env=input_rules.secret_env_summary({"VLLM_API_KEY": "x"})) == [
        "ascend_extra_env.VLLM_API_KEY: set ascend_api_key instead (the collection sets VLLM_API_KEY from it)"]


def test_hf_token_as_a_serve_option_points_to_the_environment():
    assert "HF_TOKEN in ascend_extra_env" in errors(serve_options={"hf_token": "hf_x"})[0]


def test_the_plan_names_the_config_directory_its_shared_files_and_the_python_environment():
    cluster = plan()["cluster"]
    assert (cluster["config_dir"], cluster["python_env"]) == ("/etc/ascend-inference", "/opt/ascend-inference/venv")
    assert (cluster["node_env_file"], cluster["ray_env_file"]) == (
        "/etc/ascend-inference/node.env", "/etc/ascend-inference/ray.env")
    moved = plan(config_dir="/srv/ascend/etc/", python_env="/srv/ascend/venv/")["cluster"]
    assert (moved["config_dir"], moved["ray_env_file"], moved["model_manifest"], moved["python_env"]) == (
        "/srv/ascend/etc", "/srv/ascend/etc/ray.env", "/srv/ascend/etc/model.manifest.json", "/srv/ascend/venv")


@pytest.mark.parametrize("key, value, message", [
    ("config_dir", "etc/ascend", "ascend_config_dir must be an absolute path other than / (found 'etc/ascend')"),
    ("python_env", "/", "ascend_python_env must be an absolute path other than / (found '/')"),
    ("python_env", 3, "ascend_python_env must be an absolute path other than / (found 3)"),
])
def test_paths_that_are_not_absolute_directories_are_refused(key, value, message):
    assert errors(**{key: value}) == [message]


# --- NPUs a layout leaves idle ----------------------------------------------------

# devices_probed=False: no "not detected" warning beside (the nodes' counts are ascend_npus_per_node's here).
SIZES = "Check ascend_tensor_parallel_size, ascend_pipeline_parallel_size, ascend_data_parallel_size"


def test_a_layout_that_leaves_npus_idle_is_warned_about_naming_them():
    # The new user's typo: ascend_tensor_paralel_size was refused; a plain TP 1 x PP 2 over Ray would have been this.
    assert plan(devices_probed=False, launcher="ray", pipeline_parallel_size=2)["warnings"] == [
        "TP 1 x PP 2 x DP 1 uses 2 of the cluster's 16 NPUs (host h 8, host w 8): 14 stay idle. " + SIZES]
    # Under mp each node's DP ranks take its lowest NPUs: the rest are named.
    assert plan(devices_probed=False, launcher="mp", tensor_parallel_size=2, data_parallel_size=2)["warnings"] == [
        "TP 2 x PP 1 x DP 2 leaves NPUs idle: host h NPUs 2,3,4,5,6,7; host w NPUs 2,3,4,5,6,7. " + SIZES
        + ", or give those hosts ascend_npu_devices"]
    idle_on_w = [node("h", "10.0.0.1", head=True, npus_per_node=4), node("w", "10.0.0.2", npus_per_node=8)]
    found = plan(idle_on_w, devices_probed=False, launcher="mp", tensor_parallel_size=4, data_parallel_size=2)
    assert found["warnings"] == [
        "TP 4 x PP 1 x DP 2 leaves NPUs idle: host w NPUs 4,5,6,7. " + SIZES + ", or give those hosts "
        "ascend_npu_devices"]


def test_a_layout_that_uses_every_npu_is_not_warned_about():
    full = plan(devices_probed=False, launcher="ray", tensor_parallel_size=8, pipeline_parallel_size=2)
    assert full["warnings"] == []
    assert plan(devices_probed=False, launcher="mp", tensor_parallel_size=4, data_parallel_size=4)["warnings"] == []
    # Before the preflight detects the devices an assumed count says nothing.
    assert plan(devices_probed=False, launcher="ray", devices_pending=True)["warnings"] == []
