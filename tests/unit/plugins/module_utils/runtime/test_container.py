# -*- coding: utf-8 -*-
"""Container mode: the plan's runtime and per-node container, the engine container's command lines,
the supervisor's specs, image archives and the checks across nodes."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible_collections.ascend.inference.plugins.module_utils.runtime import container
from ansible_collections.ascend.inference.plugins.module_utils.plan.planner import PlanError, make_plan
from ansible_collections.ascend.inference.plugins.module_utils.runtime import unit_names

IMAGE = "quay.io/ascend/vllm-ascend:v0.23.0"
HEX = "04598bc9955b" + "0" * 52


def nodes(head_devices=None):
    head = {"name": "h", "node_ip": "10.0.0.1", "head": True, "nic": "eth0", "npus_per_node": 8}
    if head_devices:
        head.update(npu_devices=head_devices)
    return [head, {"name": "w", "node_ip": "10.0.0.2", "nic": "eth0", "npus_per_node": 4}]


def plan(**settings):
    settings.setdefault("engine", "vllm-ascend")
    settings.setdefault("model", "/models/m")
    settings.setdefault("tensor_parallel_size", 4)
    settings.setdefault("pipeline_parallel_size", 2)
    return make_plan(settings, nodes(settings.pop("head_devices", [4, 5, 6, 7])))


def errors(**settings):
    with pytest.raises(PlanError) as caught:
        plan(**settings)
    return caught.value.errors


def test_container_mode_plans_the_runtime_and_each_nodes_devices_and_environment():
    planned = plan(runtime="container", container_image=IMAGE)
    runtime = planned["cluster"]["runtime"]
    assert runtime == {"mode": "container", "image": IMAGE, "engine": "auto", "unit": "ascend-engine.service",
                       "container": "ascend-engine", "config_dir": "/etc/ascend-inference",
                       "spec_dir": "/etc/ascend-inference/engine",
                       "supervisor": "/usr/local/lib/ascend-inference/engine_supervisor.py"}
    head = planned["nodes"]["h"]
    # The host numbers for the node (its node.env, hccn_tool); inside, the runtime numbers from 0.
    assert head["env"]["ASCEND_RT_VISIBLE_DEVICES"] == "4,5,6,7"
    assert head["container"]["devices"] == [4, 5, 6, 7]
    assert head["container"]["env"]["ASCEND_RT_VISIBLE_DEVICES"] == "0,1,2,3"
    assert dict(head["container"]["env"], ASCEND_RT_VISIBLE_DEVICES="4,5,6,7") == head["env"]
    # Ray and serve run as the image's root, unconfined.
    assert planned["cluster"]["service"]["user"] == "root" and not planned["cluster"]["service"]["confined"]


def test_host_mode_is_the_default_and_has_no_container():
    planned = plan()
    assert planned["cluster"]["runtime"]["mode"] == "host" and planned["cluster"]["runtime"]["unit"] is None
    assert planned["nodes"]["h"]["container"] is None
    assert planned["cluster"]["service"]["user"] == "ascend-inference"


def test_a_users_own_visible_devices_are_kept_inside():
    planned = plan(runtime="container", container_image=IMAGE, extra_env={"ASCEND_RT_VISIBLE_DEVICES": "0,1"})
    assert planned["nodes"]["h"]["container"]["env"]["ASCEND_RT_VISIBLE_DEVICES"] == "0,1"


def test_container_settings_are_refused_with_the_variable_to_change():
    assert "ascend_container_image is required with ascend_runtime: container" in " ".join(errors(runtime="container"))
    assert any("ascend_container_image must be one image reference without spaces" in e
               for e in errors(runtime="container", container_image="a b"))
    assert any(e.startswith("ascend_container_image holds a control character")
               for e in errors(runtime="container", container_image="img\nx"))
    assert errors(runtime="vm") == ["ascend_runtime must be one of host, container (found 'vm')"]
    assert any("ascend_container_engine must be one of auto, podman, docker" in e
               for e in errors(runtime="container", container_image=IMAGE, container_engine="lxc"))
    refused = errors(runtime="container", container_image=IMAGE, service_user="ascend-inference")
    assert any("ascend_service_user is ascend-inference but ascend_runtime is container" in e for e in refused)
    assert plan(runtime="container", container_image=IMAGE, service_user="root")["cluster"]["service"]["user"] == "root"


SETTINGS = {"cache_dir": "/srv/cache", "shm_size": "2g", "extra_args": ["--volume=/data:/data:ro"]}


def test_run_argv_gives_the_devices_mounts_and_the_supervisor():
    argv = container.run_argv("/usr/bin/podman", IMAGE, [4, 5], "/models/m", SETTINGS)
    assert argv[:8] == ["/usr/bin/podman", "run", "--rm", "--name=ascend-engine", "--net=host", "--shm-size=2g",
                        "--log-driver=none", "--pids-limit=-1"]
    assert [a for a in argv if a.startswith("--device=")] == [
        "--device=/dev/davinci4", "--device=/dev/davinci5", "--device=/dev/davinci_manager",
        "--device=/dev/devmm_svm", "--device=/dev/hisi_hdc"]
    assert "--volume=/srv/cache:/root/.cache" in argv and "--volume=/models/m:/models/m:ro" in argv
    assert argv[-7:] == ["--volume=/etc/ascend-inference:/etc/ascend-inference:ro",
                         "--volume=/usr/local/lib/ascend-inference:/usr/local/lib/ascend-inference:ro",
                         "--volume=/data:/data:ro", "--entrypoint=python3", IMAGE,
                         "/usr/local/lib/ascend-inference/engine_supervisor.py", "/etc/ascend-inference/engine"]


def test_a_hub_model_or_one_in_the_cache_is_not_mounted_again():
    for model in ("Qwen/Qwen3-235B-A22B", "/root/.cache/modelscope/qwen"):
        argv = container.run_argv("/usr/bin/docker", IMAGE, [0], model, SETTINGS)
        assert not [a for a in argv if model in a], argv


def test_exec_and_supervisor_commands():
    assert container.exec_argv("/usr/bin/podman", ["python3", "x.py"], {"B": "2", "A": "1"}) == [
        "/usr/bin/podman", "exec", "--env=A=1", "--env=B=2", "ascend-engine", "python3", "x.py"]
    assert container.supervisor_argv("/usr/bin/docker", "restart", "serve") == [
        "/usr/bin/docker", "exec", "ascend-engine", "python3", "/usr/local/lib/ascend-inference/engine_supervisor.py",
        "restart", "serve"]


def test_process_spec_is_stable_json():
    spec = container.process_spec("serve", ["vllm", "serve", "m"], {"B": "2", "A": "1"}, ["/etc/x.env"],
                                  ["/usr/local/Ascend/cann/set_env.sh"], 10, ["ray"])
    assert json.loads(spec) == {"name": "serve", "argv": ["vllm", "serve", "m"], "env": {"A": "1", "B": "2"},
                                "env_files": ["/etc/x.env"], "source": ["/usr/local/Ascend/cann/set_env.sh"],
                                "restart_sec": 10, "after": ["ray"], "stop_argv": None, "stop_timeout": 40}
    assert spec == container.process_spec("serve", ["vllm", "serve", "m"], {"A": "1", "B": "2"}, ["/etc/x.env"],
                                          ["/usr/local/Ascend/cann/set_env.sh"], 10, ["ray"])


def test_a_variable_without_value_is_refused_naming_the_inventory_variable():
    with pytest.raises(ValueError, match="ray has no value for GLOO_SOCKET_IFNAME, TP_SOCKET_IFNAME: set ascend_nic"):
        container.process_spec("ray", ["ray"], {"TP_SOCKET_IFNAME": None, "GLOO_SOCKET_IFNAME": None, "A": "1"},
                               [], [], 5)


def test_the_image_cann_script_newer_layout_first_then_nnal():
    found = {"set_env": ["/usr/local/Ascend/cann/set_env.sh", "/usr/local/Ascend/ascend-toolkit/set_env.sh",
                         "/usr/local/Ascend/nnal/atb/set_env.sh"]}
    assert container.environment_scripts(found) == ["/usr/local/Ascend/cann/set_env.sh",
                                                    "/usr/local/Ascend/nnal/atb/set_env.sh"]
    assert container.environment_scripts({"set_env": ["/usr/local/Ascend/ascend-toolkit/set_env.sh"]}) == [
        "/usr/local/Ascend/ascend-toolkit/set_env.sh"]
    assert container.environment_scripts(None) == []


def test_inspection_asks_for_both_cann_layouts():
    ask = json.loads(container.inspect_argv()[2])
    assert "/usr/local/Ascend/ascend-toolkit/latest/*/ascend_toolkit_install.info" in ask["install_files"]
    assert "/usr/local/Ascend/cann-*/*/ascend_toolkit_install.info" in ask["install_files"]
    assert ask["set_env"][0] == "/usr/local/Ascend/cann/set_env.sh"
    assert set(ask["distributions"]) == {"vllm", "vllm-ascend", "vllm-mindspore", "ray"}


def test_cann_versions_from_the_images_install_files():
    # hardware-samples/ascend_toolkit_install.info__cann-8.5.0_new-cann-layout_aarch64__1.txt (first lines)
    text = "package_name=Ascend-cann-toolkit\nversion=8.5.0\ninnerversion=V100R001C25SPC001B212\n"
    assert container.image_cann_versions({"files": {"/a": text, "/b": text}}) == ["8.5.0"]
    assert container.image_cann_versions(None) == []


def test_archive_manifest_gives_the_image_id():
    # manifest.json of `podman save --format docker-archive` (podman 4.3) and of newer docker (OCI layout names).
    podman = json.dumps([{"Config": HEX + ".json", "RepoTags": ["localhost/vllm-ascend-sim:v0.23.0"],
                          "Layers": ["a/layer.tar"]}])
    assert container.archive_image(podman) == ("sha256:" + HEX, ["localhost/vllm-ascend-sim:v0.23.0"])
    docker = json.dumps([{"Config": "blobs/sha256/" + HEX, "RepoTags": None, "Layers": []}])
    assert container.archive_image(docker) == ("sha256:" + HEX, [])
    with pytest.raises(ValueError, match="exactly one image"):
        container.archive_image(json.dumps([{"Config": HEX + ".json"}] * 2))
    with pytest.raises(ValueError, match="unexpected config name"):
        container.archive_image(json.dumps([{"Config": "config.json"}]))


def test_same_image_across_podman_and_docker_forms():
    assert container.same_image(HEX, "sha256:" + HEX)
    assert not container.same_image(None, "sha256:" + HEX)
    assert not container.same_image("f" * 64, "sha256:" + HEX)


def test_image_id_problems_name_the_nodes_and_ids():
    other = "c0ffee" + "0" * 58
    assert container.image_id_problems({"h": HEX, "w": HEX}, IMAGE) == []
    assert container.image_id_problems({"h": HEX, "w": "sha256:" + HEX}, IMAGE) == []
    assert container.image_id_problems({"h": HEX, "w": other, "x": None}, IMAGE) == [
        "ascend_container_image %s is not on host x" % IMAGE,
        "ascend_container_image %s is not the same image on every node (the engine, CANN and Ray inside must "
        "match): 04598bc9955b on h; c0ffee000000 on w; load or pull the same image everywhere" % IMAGE]


CLUSTER = {"engine_distribution": "vllm-ascend", "engine_version": "0.23.0", "vllm_version": "0.23.0",
           "launcher": "ray", "runtime": {"image": IMAGE}}


def test_image_problems_name_both_releases_and_a_missing_ray():
    found = {"id": HEX, "inside": {"versions": {"vllm-ascend": "0.18.0", "vllm": "0.18.0", "ray": None}}}
    assert container.image_problems("h", IMAGE, found, CLUSTER) == [
        "host h: ascend_engine_version is 0.23.0 but the installed vllm-ascend is 0.18.0: image %s "
        "(Python python3 in the image)" % IMAGE,
        "host h: vllm-ascend 0.23.0 runs on vLLM 0.23.0 but the installed vLLM is 0.18.0: image %s "
        "(Python python3 in the image)" % IMAGE,
        "host h: image %s has no ray distribution (ascend_launcher: ray starts Ray inside it)" % IMAGE]
    good = {"id": HEX, "inside": {"versions": {"vllm-ascend": "0.23.0", "vllm": "0.23.0+empty", "ray": "2.48.0"}}}
    assert container.image_problems("h", IMAGE, good, CLUSTER) == []
    assert container.image_problems("h", IMAGE, {"id": HEX, "error": "python3 failed"}, CLUSTER) == [
        "host h: python3 failed"]


def test_supervisor_processes_look_like_the_host_units_for_status():
    status = json.dumps({"ray": {"state": "running", "pid": 6, "restarts": 2},
                         "serve": {"state": "waiting", "pid": None, "restarts": 0}})
    units = container.process_units(status, {"ActiveState": "active", "ActiveEnterTimestamp": "Tue 2026-12-01 20:42:03 UTC"},
                                    unit_names.SINGLE)
    assert units["ascend-ray.service"] == {"LoadState": "loaded", "ActiveState": "active",
                                           "SubState": "running in ascend-engine", "NRestarts": "2",
                                           "ActiveEnterTimestamp": "Tue 2026-12-01 20:42:03 UTC"}
    assert units["ascend-serve.service"]["ActiveState"] == "activating"
    # A stopped engine unit runs nothing, whatever a stale status said; garbage reads as nothing.
    assert container.process_units(status, {"ActiveState": "inactive"}, unit_names.SINGLE)["ascend-ray.service"] == {
        "LoadState": "not-found"}
    assert container.process_units("Error: no container", {"ActiveState": "active"}, unit_names.SINGLE)["ascend-serve.service"] == {
        "LoadState": "not-found"}


def test_the_config_directory_stays_where_the_engine_container_mounts_it():
    assert errors(runtime="container", container_image=IMAGE, config_dir="/srv/ascend") == [
        "ascend_config_dir must stay /etc/ascend-inference in container mode (ascend_runtime: container): the engine "
        "container mounts that directory (found '/srv/ascend')"]
    assert plan(runtime="container", container_image=IMAGE, config_dir="/etc/ascend-inference/")
