# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What parallel_plan accepts and what it answers, shared by the module and the action plugin of the same
name (which computes the plan in the controller's own process: no module shipped to localhost and run)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

from ansible_collections.ascend.inference.plugins.module_utils.plan.fleet import (
    OWN_MODEL_CONFIG, deploy_problems, make_fleet_plan)
from ansible_collections.ascend.inference.plugins.module_utils.plan import (
    input_rules, monitoring as monitoring_plan, router as router_plan)
from ansible_collections.ascend.inference.plugins.module_utils.plan.planner import (
    DEFAULTS, LAUNCHERS, NODE_DEFAULTS, PlanError, make_plan)
from ansible_collections.ascend.inference.plugins.module_utils.engines.releases import ENGINES
from ansible_collections.ascend.inference.plugins.module_utils.runtime.container import CONTAINER_ENGINES
from ansible_collections.ascend.inference.plugins.module_utils.runtime.container import RUNTIMES

NODE_SPEC = dict(
    name=dict(type="str", required=True),
    head=dict(type="bool", default=NODE_DEFAULTS["head"]),
    node_ip=dict(type="str", required=True),
    nic=dict(type="str"),
    npu_devices=dict(type="list", elements="int"),
    device_map=dict(type="dict"),
    npu_family=dict(type="str"),
    npus_per_node=dict(type="int", default=NODE_DEFAULTS["npus_per_node"]),
    data_parallel_size_local=dict(type="int"),
    data_parallel_start_rank=dict(type="int"),
    device_group=dict(type="str"),
)

# Defaults come from the planner so that the module and the logic cannot drift.
ARGUMENT_SPEC = dict(
    engine=dict(type="str", required=True, choices=sorted(ENGINES)),
    engine_version=dict(type="str"),
    model=dict(type="str", required=True),
    served_model_name=dict(type="str"),
    launcher=dict(type="str", default=DEFAULTS["launcher"], choices=list(LAUNCHERS)),
    tensor_parallel_size=dict(type="int", default=DEFAULTS["tensor_parallel_size"]),
    pipeline_parallel_size=dict(type="int", default=DEFAULTS["pipeline_parallel_size"]),
    data_parallel_size=dict(type="int", default=DEFAULTS["data_parallel_size"]),
    enable_expert_parallel=dict(type="bool", default=DEFAULTS["enable_expert_parallel"]),
    expert_parallel_size=dict(type="int"),
    additional_config=dict(type="dict", default={}),
    serve_options=dict(type="dict", default={}),
    extra_env=dict(type="dict", default={}),
    model_backend=dict(type="str", default=DEFAULTS["model_backend"]),
    # Names and problems only, never values (the plan role's secret_env_summary filter).
    secret_env=dict(type="dict", default={}, no_log=False),
    api_port=dict(type="int", default=DEFAULTS["api_port"]),
    ray_port=dict(type="int", default=DEFAULTS["ray_port"]),
    ray_dashboard_host=dict(type="str", default=DEFAULTS["ray_dashboard_host"]),
    dp_rpc_port=dict(type="int", default=DEFAULTS["dp_rpc_port"]),
    model_transfer_port=dict(type="int"),
    model_config=dict(type="dict"),
    model_config_path=dict(type="path"),
    devices_pending=dict(type="bool", default=False),
    devices_probed=dict(type="bool", default=True),
    service_user=dict(type="str"),
    runtime=dict(type="str", default=DEFAULTS["runtime"], choices=list(RUNTIMES)),
    container_image=dict(type="str"),
    container_engine=dict(type="str", default=DEFAULTS["container_engine"], choices=list(CONTAINER_ENGINES)),
    config_dir=dict(type="str", default=DEFAULTS["config_dir"]),
    python_env=dict(type="str", default=DEFAULTS["python_env"]),
    check_nodes=dict(type="bool", default=False),
    nodes=dict(type="list", elements="dict", options=NODE_SPEC),
    # ascend_instances (the action reads it from the inventory: its extra_env may hold secrets).
    instances=dict(type="dict"),
    # The endpoint in front of the instances (plan/router.py): hosts from group ascend_router (None: the default).
    router_enabled=dict(type="bool", default=True),
    router_hosts=dict(type="list", elements="str"),
    router_port=dict(type="int", default=router_plan.DEFAULTS["port"]),
    router_metrics_port=dict(type="int", default=router_plan.DEFAULTS["metrics_port"]),
    # Where vllm-ascend's examples/disaggregated_prefill_v1 is on the nodes (instances with prefill/decode pools).
    pd_proxy_dir=dict(type="str"),
    # What Prometheus scrapes (plan/monitoring.py): the NPU exporter on every node, and the hosts of group
    # ascend_monitor (the action reads them from the inventory), which the firewall admits to the scraped ports.
    npu_exporter_enabled=dict(type="bool", default=monitoring_plan.DEFAULTS["npu_exporter_enabled"]),
    npu_exporter_port=dict(type="int", default=monitoring_plan.DEFAULTS["npu_exporter_port"]),
    monitors=dict(type="list", elements="dict", options=dict(name=dict(type="str", required=True),
                                                             address=dict(type="str", required=True))),
    removed_node=dict(type="str"),
)
MONITORING_OPTIONS = ("npu_exporter_enabled", "npu_exporter_port", "monitors")
# The action's alone: the host remove_node.yml takes out, left out of the nodes it reads from the inventory.
ACTION_OPTIONS = ("removed_node",)
ROUTER_OPTIONS = ("router_enabled", "router_hosts", "router_port", "router_metrics_port")
FLEET_OPTIONS = ROUTER_OPTIONS + ("pd_proxy_dir",)


def load_model_config(params):
    """(config dict or None, a sentence saying what was checked)."""
    if params["model_config"] is not None:
        return params["model_config"], "checked the given model_config"
    return _read_config(params["model_config_path"], params["model"], "ascend_model_config")


def _read_config(path, model, variable_name):
    """(the config.json at PATH (a file or a directory) or else in MODEL's directory here, or None; the note)."""
    explicit = path is not None
    if not explicit:
        path = model
        if not isinstance(path, str) or not os.path.isdir(path):
            return None, ("not checked against its config.json: %s is not a directory on the controller; set %s "
                          "to a copy of it" % (path, variable_name))
    if os.path.isdir(path):
        path = os.path.join(path, "config.json")
    if not os.path.isfile(path):
        if explicit:
            raise IOError("%s %s: no such file on the controller" % (variable_name, path))
        return None, "not checked against its config.json: %s does not exist; set %s" % (path, variable_name)
    with open(path) as handle:
        return json.load(handle), "checked against %s" % path


def answer(params):
    """The task's result for validated params: the plan, or failed=True with msg (and errors)."""
    # An empty ascend_instances is none: the single model of the ascend_* variables.
    instances = params.get("instances") or None
    try:
        model_config, model_checks = load_model_config(params)
        instance_configs, instance_checks = instance_model_configs(instances, model_checks)
    except (IOError, OSError, ValueError) as exc:
        return dict(failed=True, msg="cannot read the model's config.json: %s" % exc)
    settings = {k: v for k, v in params.items()
                if k not in ("nodes", "model_config_path", "instances") + FLEET_OPTIONS
                + MONITORING_OPTIONS + ACTION_OPTIONS}
    monitoring_settings = dict((key, params.get(key)) for key in MONITORING_OPTIONS)
    router = router_plan.settings_of(params)
    settings["model_config"] = model_config
    try:
        if instances is not None:
            fleet = make_fleet_plan(settings, params["nodes"], instances, instance_configs, router,
                                    params.get("pd_proxy_dir"))
            # plan.yml gives the deploy's verdict: what the deploy refuses, it refuses.
            problems = deploy_problems(fleet)
            if problems:
                return dict(failed=True, errors=problems, msg="ascend_instances: this release cannot deploy what "
                            "is asked:\n- " + "\n- ".join(problems))
            monitoring, problems = monitoring_plan.section(fleet, monitoring_settings)
            if problems:
                raise PlanError(problems)
            # A prefill/decode instance is planned as two pools, each checked against the instance's model.
            for group, entry in (fleet["pd"] or {}).items():
                note = instance_checks.pop(group, model_checks)
                for pool in entry["pools"].values():
                    instance_checks[pool["instance"]] = note
            return dict(changed=False, instances=fleet["instances"], allocation=fleet["allocation"],
                        cluster=fleet["cluster"], nodes=fleet["nodes"], router=fleet["router"], pd=fleet["pd"],
                        monitoring=monitoring, plan_warnings=fleet["warnings"],
                        model_checks=model_checks, instance_model_checks=instance_checks)
        plan = make_plan(settings, params["nodes"])
        ray_port = plan["cluster"]["ray_port"]
        plan["router"], problems = router_plan.single_model(
            router, plan, monitoring_plan.SINGLE,
            (lambda ports: input_rules.ray_ports(ports, ray_port)) if ray_port else None)
        if problems:
            raise PlanError(problems)
        monitoring, problems = monitoring_plan.section(plan, monitoring_settings)
        if problems:
            raise PlanError(problems)
    except PlanError as exc:
        return dict(failed=True, msg="invalid layout:\n- " + "\n- ".join(exc.errors), errors=exc.errors)
    return dict(changed=False, cluster=plan["cluster"], nodes=plan["nodes"], router=plan["router"], monitoring=monitoring,
                plan_warnings=plan["warnings"], model_checks=model_checks)


def instance_model_configs(instances, model_checks):
    """({instance: config.json}, {instance: its note}) of the instances that name their own model or model_config;
    the others take the cluster's config and MODEL_CHECKS, its note."""
    found, notes = {}, {}
    for name, settings in sorted((instances or {}).items(), key=lambda item: str(item[0])):
        notes[name] = model_checks
        if not isinstance(settings, dict) or not (OWN_MODEL_CONFIG in settings or "model" in settings):
            continue
        path, model = settings.get(OWN_MODEL_CONFIG), settings.get("model")
        if path is not None and not isinstance(path, str):
            raise ValueError("ascend_instances.%s.%s must be a path on the controller (found %r)"
                             % (name, OWN_MODEL_CONFIG, path))
        config, notes[name] = _read_config(path, model, "ascend_instances.%s.%s" % (name, OWN_MODEL_CONFIG))
        if config is not None:
            found[name] = config
    return found, notes
