"""playbooks/plan.yml: no connection, one JSON file per host, failures named."""

import os
import re
import subprocess

import pytest

from conftest import BIN, REPO, shown

REPO_PLAYBOOKS = os.path.join(REPO, "playbooks")

# Any attempt to reach a host would run this "ssh", fail, and mark the host unreachable.
NO_CONNECTION = ["ansible_connection: ssh", "ansible_ssh_executable: /bin/false"]


def write_inventory(path, cluster_vars, hosts=None):
    hosts = hosts or {"node1": {"ansible_host": "192.0.2.11"}, "node2": {"ansible_host": "192.0.2.12"}}
    head, workers = list(hosts)[0], list(hosts)[1:]
    lines = ["all:", "  vars:"] + ["    " + line for line in NO_CONNECTION] + ["ascend_cluster:", "  vars:"]
    lines += ["    %s: %s" % (k, v) for k, v in cluster_vars.items()]
    lines += ["  children:", "    ascend_head:", "      hosts:", "        %s:" % head]
    lines += ["          %s: %s" % (k, v) for k, v in hosts[head].items()]
    lines += ["    ascend_workers:", "      hosts:"] + (["        {}"] if not workers else [])
    for host in workers:
        lines += ["        %s:" % host] + ["          %s: %s" % (k, v) for k, v in hosts[host].items()]
    path.write_text("\n".join(lines) + "\n")
    return path


BASE = {"ascend_engine": "vllm-mindspore", "ascend_model": "/models/qwen", "ascend_npus_per_node": 4}


def test_plan_touches_no_host_and_writes_one_file_per_host(run_plan, tmp_path):
    inventory = write_inventory(tmp_path / "hosts.yml", dict(BASE, ascend_launcher="mp", ascend_data_parallel_size=2))
    proc, plans = run_plan(inventory)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sorted(plans) == ["node1", "node2"]
    for host, plan in plans.items():
        assert {"role", "serve_argv", "ray_start_argv", "env"} <= set(plan)
    assert plans["node1"]["role"] == "head" and plans["node2"]["role"] == "worker"
    # The summary a person reads: the command line and the environment.
    assert "serve: vllm-mindspore serve /models/qwen" in proc.stdout
    assert "export MS_ENABLE_LCCL=off" in proc.stdout
    assert "<detected on the node" in proc.stdout


def recap(stdout):
    """{host: {"ok": n, "changed": n, ...}} from the PLAY RECAP."""
    hosts = {}
    for line in stdout.split("PLAY RECAP")[1].strip().splitlines():
        if ":" not in line:
            continue
        host, counts = line.split(":", 1)
        hosts[host.strip()] = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", counts)}
    return hosts


def test_unset_host_variables_take_the_defaults(run_plan, tmp_path):
    # Neither ascend_npus_per_node, ascend_nic nor ascend_npu_devices: 8 NPUs assumed, NIC unresolved.
    inventory = write_inventory(tmp_path / "hosts.yml", {"ascend_engine": "vllm-ascend", "ascend_model": "m"})
    proc, plans = run_plan(inventory)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert plans["node1"]["visible_devices"] == list(range(8))
    assert plans["node1"]["cluster"]["ray_npus_expected"] == 16
    assert plans["node2"]["env"]["GLOO_SOCKET_IFNAME"] is None
    # plan.yml never probes a node: the assumption is shown per node, not warned about.
    assert "devices: 0,1,2,3,4,5,6,7 (assumed from ascend_npus_per_node)" in proc.stdout
    assert "not detected" not in proc.stdout + proc.stderr
    # A layout that leaves NPUs idle plans, with a warning that says so (here the default TP 1).
    assert ("[WARNING]: TP 1 x PP 1 x DP 1 uses 1 of the cluster's 16 NPUs (host node1 8, host node2 8): 15 stay "
            "idle.") in " ".join((proc.stdout + proc.stderr).split())


def test_second_run_changes_nothing(run_plan, tmp_path):
    inventory = write_inventory(tmp_path / "hosts.yml", BASE)
    first = run_plan(inventory)[0]
    second = run_plan(inventory)[0]
    assert recap(first.stdout)["node1"]["changed"] > 0
    assert all(c["changed"] == 0 and c["failed"] == 0 for c in recap(second.stdout).values()), second.stdout


def test_invalid_layout_fails_before_writing_anything(run_plan, tmp_path):
    inventory = write_inventory(tmp_path / "hosts.yml", dict(BASE, ascend_tensor_parallel_size=8,
                                                             ascend_launcher="mp",
                                                             ascend_serve_options="{'max_num': 4}"))
    proc, plans = run_plan(inventory)
    assert proc.returncode != 0
    assert plans == {} and not (tmp_path / "plan").exists()
    output = proc.stdout + proc.stderr
    assert ("ascend_tensor_parallel_size 8 x ascend_pipeline_parallel_size 1 = 8 NPUs does not fit on one node "
            "(largest has 4)") in output
    assert "ascend_serve_options.max_num is not an option of `vllm serve`" in output


def test_duplicate_ips_and_missing_head_are_named(run_plan, tmp_path):
    hosts = {"a": {"ansible_host": "192.0.2.11"}, "b": {"ansible_host": "192.0.2.11"}}
    proc = run_plan(write_inventory(tmp_path / "hosts.yml", BASE, hosts))[0]
    assert proc.returncode != 0
    assert "ascend_node_ip 192.0.2.11 is used by several hosts: a, b" in proc.stdout


def test_group_shape_is_checked(run_plan, tmp_path):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text("ascend_cluster:\n  hosts:\n    lonely:\n      ansible_host: 192.0.2.1\n")
    proc = run_plan(inventory, "-e", "ascend_engine=vllm-ascend", "-e", "ascend_model=m")[0]
    assert proc.returncode != 0
    assert "ascend_head (exactly one host)" in proc.stdout and "ascend_head: none" in proc.stdout


def test_role_arguments_are_type_checked(run_plan, tmp_path):
    inventory = write_inventory(tmp_path / "hosts.yml", dict(BASE, ascend_engine="vllm-cuda"))
    proc = run_plan(inventory)[0]
    assert proc.returncode != 0
    assert "ascend_engine" in proc.stdout and "vllm-cuda" in proc.stdout


def test_model_config_on_the_controller_is_checked(run_plan, tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text('{"num_attention_heads": 6, "num_hidden_layers": 2}')
    inventory = write_inventory(tmp_path / "hosts.yml", dict(BASE, ascend_model=str(model),
                                                             ascend_tensor_parallel_size=4))
    proc = run_plan(inventory)[0]
    assert proc.returncode != 0
    assert "ascend_tensor_parallel_size 4 does not divide the model's 6 attention heads" in proc.stdout
    # A context longer than the model's is refused here, not by vLLM after the deploy.
    (model / "config.json").write_text('{"num_attention_heads": 8, "max_position_embeddings": 4096}')
    proc = run_plan(write_inventory(tmp_path / "hosts.yml", dict(
        BASE, ascend_model=str(model), ascend_tensor_parallel_size=4, ascend_serve_options="{max_model_len: 8192}")))[0]
    assert proc.returncode != 0
    assert "ascend_serve_options.max_model_len 8192 is more than the model's 4096" in proc.stdout
    proc = run_plan(write_inventory(tmp_path / "hosts.yml", dict(BASE, ascend_model=str(model),
                                                                 ascend_tensor_parallel_size=4)))[0]
    assert proc.returncode == 0 and "model: checked against %s" % (model / "config.json") in " ".join(
        shown(proc.stdout).split())
    # A model that is not on the controller: the plan says it did not check, and which variable would let it.
    proc = run_plan(write_inventory(tmp_path / "hosts.yml", BASE))[0]
    assert ("model: not checked against its config.json: /models/qwen is not a directory on the controller; set "
            "ascend_model_config to a copy of it") in " ".join(shown(proc.stdout).split())


def test_ansible_doc_renders_the_module(ansible_env):
    proc = subprocess.run([os.path.join(BIN, "ansible-doc"), "ascend.inference.parallel_plan"],
                          env=ansible_env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    assert "Validates the layout first and fails with every problem found at once" in text
    assert "data_parallel_size_local" in text and "RETURN VALUES" in text


def test_check_mode_plans_the_same(run_plan, tmp_path):
    inventory = write_inventory(tmp_path / "hosts.yml", BASE)
    proc, plans = run_plan(inventory, "--check")
    assert proc.returncode == 0, proc.stdout
    # In check mode nothing is written, but the plan is still computed and shown.
    assert plans == {}
    assert "serve: vllm-mindspore serve /models/qwen" in proc.stdout


def test_an_api_key_that_is_not_text_is_refused_before_any_node_is_reached(ansible_env, tmp_path):
    inventory = write_inventory(tmp_path / "hosts.yml", dict(BASE, ascend_api_key=12345))
    proc = subprocess.run([os.path.join(BIN, "ansible-playbook"), os.path.join(REPO_PLAYBOOKS, "preflight.yml"),
                           "-i", str(inventory)], cwd=str(tmp_path), env=ansible_env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert proc.returncode != 0
    assert "ascend_api_key on host node1 is not text but int: quote it" in proc.stdout, proc.stdout[-3000:]
    assert "12345" not in proc.stdout and "UNREACHABLE" not in proc.stdout


def test_a_host_name_that_is_not_a_safe_file_name_writes_nothing(run_plan, tmp_path):
    inventory = write_inventory(tmp_path / "hosts.yml", BASE, hosts={
        "node1": {"ansible_host": "192.0.2.11"}, "../../evil": {"ansible_host": "192.0.2.12"}})
    proc, plans = run_plan(inventory)
    assert proc.returncode != 0 and plans == {}
    assert "inventory host '../../evil': its name becomes a file name" in proc.stdout, proc.stdout[-3000:]
    assert not (tmp_path / "evil.json").exists() and not (tmp_path.parent / "evil.json").exists()


def test_wrong_types_fail_once_naming_variables_and_hosts(run_plan, tmp_path):
    inventory = write_inventory(tmp_path / "hosts.yml", dict(BASE, ascend_tensor_parallel_size=2.5),
                                hosts={"node1": {"ansible_host": "192.0.2.11", "ascend_data_parallel_size_local": 1.5},
                                       "node2": {"ansible_host": "192.0.2.12"}})
    proc, plans = run_plan(inventory)
    assert proc.returncode != 0 and plans == {}
    assert ("ascend_data_parallel_size_local must be a whole number (found 1.5, a decimal number) on host node1"
            in proc.stdout), proc.stdout[-3000:]
    assert ("ascend_tensor_parallel_size must be a whole number (found 2.5, a decimal number) on hosts node1, node2"
            in proc.stdout)
    # One failure, before the role's argument spec (no spec dump) and no follow-on "undefined" on other hosts.
    assert proc.stdout.count("FAILED!") == 1 and "argument_spec_data" not in proc.stdout
    assert "is undefined" not in proc.stdout + proc.stderr


def test_a_misspelt_variable_is_refused_not_ignored(run_plan, tmp_path):
    # A new user's typo planned TP 1 and left 14 of 16 NPUs idle (issue 61); -e without the prefix was ignored too.
    inventory = write_inventory(tmp_path / "hosts.yml", dict(BASE, ascend_tensor_paralel_size=4))
    proc, plans = run_plan(inventory, "-e", "pipeline_parallel_size=2")
    assert proc.returncode != 0 and plans == {}
    assert ("ascend_tensor_paralel_size on hosts node1, node2 is not a variable of this collection: did you mean "
            "ascend_tensor_parallel_size?" in proc.stdout), proc.stdout[-3000:]
    assert ("-e pipeline_parallel_size is not a variable of this collection: did you mean "
            "ascend_pipeline_parallel_size?" in proc.stdout), proc.stdout[-3000:]
    # Claimed as the user's own: planned.
    inventory = write_inventory(tmp_path / "hosts.yml", dict(
        BASE, ascend_tensor_paralel_size=4, ascend_own_variables="[ascend_tensor_paralel_size]"))
    proc, plans = run_plan(inventory)
    assert proc.returncode == 0 and set(plans) == {"node1", "node2"}, proc.stdout[-3000:]


def test_a_misspelt_required_variable_is_named_without_a_template_error(run_plan, tmp_path):
    cluster = dict(BASE, ascend_modle=BASE["ascend_model"])
    del cluster["ascend_model"]
    proc, plans = run_plan(write_inventory(tmp_path / "hosts.yml", cluster))
    assert proc.returncode != 0 and plans == {}
    assert "ascend_modle on hosts node1, node2 is not a variable of this collection: did you mean ascend_model?" \
        in proc.stdout, proc.stdout[-3000:]
    assert "ascend_model is not set for hosts node1, node2: set it for the whole cluster in " \
        "group_vars/ascend_cluster.yml" in proc.stdout
    assert "is undefined" not in proc.stdout + proc.stderr and proc.stdout.count("FAILED!") == 1


def test_an_inventory_no_plugin_reads_fails_under_the_repositorys_ansible_cfg(ansible_env, tmp_path):
    # "key = value" is not INI inventory syntax: without any_unparsed_is_failed every play matched no host, rc 0.
    inventory = tmp_path / "hosts"
    inventory.write_text("[ascend_head]\nnode1 ansible_host = 10.0.0.11\n[ascend_cluster:children]\nascend_head\n")
    proc = subprocess.run([os.path.join(BIN, "ansible-playbook"), os.path.join(REPO_PLAYBOOKS, "plan.yml"),
                           "-i", str(inventory)], cwd=str(tmp_path), capture_output=True, text=True, timeout=300,
                          check=False, env=dict(ansible_env, ANSIBLE_CONFIG=os.path.join(REPO, "ansible.cfg")))
    assert proc.returncode != 0, proc.stdout[-3000:]
    assert "Completely failed to parse inventory source" in proc.stdout + proc.stderr, proc.stderr[-3000:]


@pytest.mark.parametrize("playbook", ["playbooks/plan.yml", "deploy.yml"])
def test_an_inventory_without_a_cluster_fails_instead_of_doing_nothing(ansible_env, tmp_path, playbook):
    # A misspelt group: every play on ascend_cluster matched no host, and the run "succeeded" (rc 0).
    inventory = tmp_path / "hosts"
    inventory.write_text("[ascend_clusters:children]\nascend_head\n[ascend_head]\nnode1 ansible_host=192.0.2.11\n")
    proc = subprocess.run([os.path.join(BIN, "ansible-playbook"), os.path.join(REPO, playbook), "-i", str(inventory)],
                          cwd=str(tmp_path), env=ansible_env, capture_output=True, text=True, timeout=300,
                          check=False)
    assert proc.returncode != 0, proc.stdout[-3000:]
    assert ("No host is in group ascend_cluster in the inventory (%s): nothing would be planned or deployed. It needs "
            "ascend_cluster with the children ascend_head (one host) and ascend_workers; the groups found are: "
            "ascend_clusters, ascend_head (no group ascend_cluster: a misspelt name?)." % inventory) in " ".join(
                proc.stdout.replace("\\n", " ").split()), proc.stdout[-3000:]


def test_a_head_that_is_also_a_worker_is_refused(run_plan, tmp_path):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text("ascend_cluster:\n  children:\n    ascend_head:\n      hosts:\n        node1:\n"
                         "    ascend_workers:\n      hosts:\n        node1:\n        node2:\n")
    proc = run_plan(inventory, "-e", "ascend_engine=vllm-ascend", "-e", "ascend_model=m")[0]
    assert proc.returncode != 0
    assert "host node1 is in both ascend_head and ascend_workers" in proc.stdout, proc.stdout[-3000:]


def test_an_empty_device_list_is_refused(run_plan, tmp_path):
    inventory = write_inventory(tmp_path / "hosts.yml", BASE, hosts={
        "node1": {"ansible_host": "192.0.2.11"}, "node2": {"ansible_host": "192.0.2.12", "ascend_npu_devices": "[]"}})
    proc, plans = run_plan(inventory)
    assert proc.returncode != 0 and plans == {}
    assert "ascend_npu_devices on host node2 must be a non-empty list of NPU ids" in proc.stdout, proc.stdout[-3000:]


def test_json_cut_by_key_value_extra_vars_says_how_to_pass_it(run_plan, tmp_path):
    proc = run_plan(write_inventory(tmp_path / "hosts.yml", BASE), "-e", 'ascend_serve_options={"max_model_len": 8192}')[0]
    assert proc.returncode != 0
    assert ("ascend_serve_options must be a mapping (found '{\"max_model_len\":', text): -e NAME=VALUE ends the value "
            "at its first space" in proc.stdout), proc.stdout[-3000:]


# One inventory mistake per rule of plugins/plugin_utils/deploy_settings.py (RULES): what a later phase of the deploy
# would refuse, refused by plan.yml (and so by the deploy's first plan) before any node is touched.
SETTING_REFUSALS = {
    "npu_exporter": ({"ascend_npu_exporter": "true"},
                     "ascend_npu_exporter is true but npu_exporter_binary is not set for node1"),
    "router": ({"router_client_keys": "[' padded ']"},
               "router_client_keys on host node1 must be a list of keys, each text without surrounding spaces"),
    "serve": ({"serve_watchdog_interval": 0}, "node1: serve_watchdog_interval must be at least 1, not 0"),
}


def test_every_rule_of_the_roles_settings_has_a_case():
    with open(os.path.join(REPO, "plugins", "plugin_utils", "deploy_settings.py")) as handle:
        rules = re.search(r"^RULES = \{(.*)\}$", handle.read(), re.M).group(1)
    assert sorted(re.findall(r'"(\w+)":', rules)) == sorted(SETTING_REFUSALS)


@pytest.mark.parametrize("rule", sorted(SETTING_REFUSALS))
def test_what_a_later_phase_would_refuse_is_refused_by_the_plan(run_plan, tmp_path, rule):
    variables, sentence = SETTING_REFUSALS[rule]
    proc, plans = run_plan(write_inventory(tmp_path / "hosts.yml", dict(BASE, **variables)))
    assert proc.returncode != 0 and plans == {}
    assert "the roles' settings:" in proc.stdout and sentence in proc.stdout, proc.stdout[-3000:]
