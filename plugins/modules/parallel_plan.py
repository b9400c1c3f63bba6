#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: parallel_plan
short_description: Compute every node's vLLM serve flags, Ray command and environment
version_added: 0.1.0
description:
  - Turns the cluster's parallel settings (TP, PP, DP, EP) and its node list into,
    for every node, the exact C(serve) argv (C(vllm-mindspore serve) or C(vllm serve)),
    the C(ray start) argv, the environment variables and the visible NPU devices.
  - Validates the layout first and fails with every problem found at once, each
    naming the inventory variable, the host and the numbers involved.
  - Pure computation; it changes nothing, so it runs the same in check mode.
  - Runs on the controller, whatever the task's host - an action plugin of the same name computes the plan
    in Ansible's own process.
  - When the model's C(config.json) is readable on the controller, the sizes are
    also checked against the model's attention heads, KV heads, layers and routed experts.
author:
  - ascend.inference contributors (@ascend-inference)
attributes:
  action:
    description: Computed on the controller by an action plugin; nothing is sent to the task's host.
    support: full
  check_mode:
    description: Computes the same plan in check mode; the module never changes anything.
    support: full
  diff_mode:
    description: There is nothing to diff; the module changes nothing.
    support: none
options:
  engine:
    description: The inference engine; selects the program and the environment.
    type: str
    required: true
    choices: [vllm-ascend, vllm-mindspore]
  engine_version:
    description:
      - The engine package's release (vllm-mindspore V(0.5.1), vllm-ascend V(0.23.0)); selects the vLLM
        release it runs on (vllm-mindspore 0.4.x on vLLM 0.9.1, 0.5.x on 0.11.0; vllm-ascend X.Y.Z and X.Y.ZrcN
        on X.Y.Z, for example V(0.30.0) and V(0.32.0rc1)), whose C(serve) options O(serve_options) are checked
        against.
      - Tables ship for vLLM 0.9.1, 0.11.0, 0.23.0, 0.30.0, 0.32.0 and 0.33.0; another release is refused.
      - Default V(0.5.1) for vllm-mindspore, V(0.23.0) for vllm-ascend.
    type: str
  model:
    description: Model path or tag, the positional argument of C(serve).
    type: str
    required: true
  served_model_name:
    description: Name clients use in requests (C(--served-model-name)); defaults to O(model).
    type: str
  launcher:
    description:
      - V(ray) forms a Ray cluster and runs C(serve) on the head only.
      - V(mp) runs C(serve) on every node (headless on workers) and needs no Ray.
    type: str
    default: ray
    choices: [ray, mp]
  tensor_parallel_size:
    description: TP size (C(--tensor-parallel-size)).
    type: int
    default: 1
  pipeline_parallel_size:
    description: PP size (C(--pipeline-parallel-size)).
    type: int
    default: 1
  data_parallel_size:
    description: DP size (C(--data-parallel-size)).
    type: int
    default: 1
  enable_expert_parallel:
    description: Pass C(--enable-expert-parallel).
    type: bool
    default: false
  expert_parallel_size:
    description:
      - EP size for vllm-mindspore, written as C(expert_parallel) into C(--additional-config).
      - Unset means TP x DP. Only valid with O(enable_expert_parallel).
    type: int
  additional_config:
    description: Merged with what the planner computes into one C(--additional-config) JSON argument.
    type: dict
    default: {}
  serve_options:
    description:
      - Further C(serve) options in vLLM's own names (for example C(max_num_seqs), C(trust_remote_code)).
      - V(true) gives a bare flag, V(false) omits it (or gives C(--no-<name>) where vLLM has one),
        a list gives several values, a dict one JSON argument.
      - Names vLLM does not know, and options the planner sets itself, are refused.
    type: dict
    default: {}
  extra_env:
    description:
      - Environment variables added to (and overriding) every node's computed environment.
      - Secret variables (names ending in C(_TOKEN), C(_KEY), C(_SECRET) or C(_PASSWORD), or those words
        alone) are checked and listed in RV(cluster.secret_env_names) but left out of every node's C(env) -
        only their names and what is wrong with their values reach the planner.
      - Omitted, with O(nodes) omitted too - C(ascend_extra_env), read by the action plugin (its secret values are
        then no task argument).
      - C(VLLM_API_KEY) is refused, as C(api_key) in O(serve_options) is; the serve role sets it
        from C(ascend_api_key).
    type: dict
    default: {}
  secret_env:
    description:
      - Secret variables by name, each with the problems found in its value, for a caller that keeps the
        values out of O(extra_env) itself.
      - The node_env role writes the values to a 0600 file that the services load.
    type: dict
    default: {}
  model_backend:
    description: C(VLLM_MS_MODEL_BACKEND) for vllm-mindspore, V(MindFormers), V(Native) or V(MindOne) in any case.
    type: str
    default: MindFormers
  api_port:
    description: Port of the OpenAI API server (C(--port)) on the head.
    type: int
    default: 8000
  ray_port:
    description: Port of the Ray head (GCS).
    type: int
    default: 6379
  ray_dashboard_host:
    description: Address the Ray dashboard binds to on the head.
    type: str
    default: 127.0.0.1
  dp_rpc_port:
    description: C(--data-parallel-rpc-port) under the mp launcher.
    type: int
    default: 29550
  model_transfer_port:
    description:
      - The TCP port of the model role's short-lived rsync daemons or aria2, which listen only while a copy runs (the
        plan role passes C(ascend_model_transfer_port), default 8730, where C(model_source) is set); the pipelined
        copy also takes the two ports after it.
      - Omitted, no port is set aside for copies.
    type: int
  model_config:
    description: The model's parsed C(config.json), for the model-shape checks.
    type: dict
  model_config_path:
    description:
      - Path of the model's C(config.json), or of a directory holding it, on the controller.
      - When neither this nor O(model_config) is given and O(model) is a local directory with
        a C(config.json), that file is read.
    type: path
  service_user:
    description:
      - The account that runs Ray and the engine on every node. A name other than V(root) is a dedicated
        system account that the RV(cluster.service) units run as, confined by systemd sandboxing and
        given the group of the node's NPU device files (O(nodes[].device_group)).
      - V(root) runs them as root, unconfined, as the documents do.
      - Omitted, V(ascend-inference) on hosts; in container mode (O(runtime=container)) the image's root,
        and any other account is refused.
    type: str
  runtime:
    description:
      - Where Ray and the engine run. V(host) runs them as systemd units on the node; V(container) runs
        one engine container per node (RV(cluster.runtime)) from O(container_image), Ray and serve inside.
    type: str
    choices: [host, container]
    default: host
  container_image:
    description: The engine image (for example C(quay.io/ascend/vllm-ascend:v0.23.0)); required with O(runtime=container).
    type: str
  container_engine:
    description: The container engine on the nodes; V(auto) takes podman, else docker, as found on each node.
    type: str
    choices: [auto, podman, docker]
    default: auto
  config_dir:
    description:
      - Where the collection keeps its files on every node (C(ascend_config_dir)) - the node and Ray environments,
        the token, the serve environment, the firewall's rules, the model's record. An absolute path.
    type: str
    default: /etc/ascend-inference
  python_env:
    description:
      - The Python environment on every node that holds Ray and the engine (C(ascend_python_env)), a virtualenv or
        a prefix such as C(/usr). An absolute path.
    type: str
    default: /opt/ascend-inference/venv
  devices_pending:
    description:
      - The nodes' devices will be detected later (the preflight's first, inventory-only plan); where a
        node's devices are only assumed from O(nodes[].npus_per_node), the capacity checks wait for the
        detected ones instead of refusing a layout on the assumed count (an Atlas A3 node has 16).
    type: bool
    default: false
  devices_probed:
    description:
      - Whether the preflight has probed the nodes. Without nodes, the action sets it from the inventory (false
        when no host of C(ascend_cluster) has a probe record, as in C(playbooks/plan.yml)); a node whose devices
        are assumed from O(nodes[].npus_per_node) is then expected, not warned about.
    type: bool
    default: true
  check_nodes:
    description:
      - Also judge every host of the play against the plan from what the preflight's probe recorded on it
        (C(ascend_applied.preflight)) - its address and NIC, NPU chips and device files, CANN, model files, ports,
        engine - and fail with every host's problems at once; the notes (which CANN is used, what is not checked
        yet) are shown. The preflight role sets it.
    type: bool
    default: false
  instances:
    description:
      - Several model instances on the cluster (C(ascend_instances)), by name; each takes the other options as its
        defaults and sets its own with the same names (V(engine), V(model), V(served_model_name), V(launcher), the
        parallel sizes, V(additional_config), V(serve_options), V(extra_env), V(api_port), V(dp_rpc_port),
        V(ray_port), ...), and its placement - V(hosts) (the first is its head), V(npus_per_host) or V(devices)
        (host to NPU logic IDs). See C(docs/instances.md).
      - Omitted - the action plugin reads C(ascend_instances) from the inventory; unset, one model is planned.
      - The result then also holds RV(instances) and RV(allocation); RV(cluster) and RV(nodes) hold what is not an
        instance's (the runtime, the paths, each host's address and the instances on it).
    type: dict
  router_enabled:
    description:
      - Whether a router (HAProxy) fronts the model or the instances on one endpoint (C(ascend_router_enabled)).
    type: bool
    default: true
  router_hosts:
    description:
      - The hosts that run the router (the group C(ascend_router)); omitted - the head of the single model, or of the
        first instance in name order. Read from the inventory when the group exists.
    type: list
    elements: str
  router_port:
    description:
      - The router's client port on its hosts (C(ascend_router_port)), held before any instance's port is chosen.
    type: int
    default: 8080
  router_metrics_port:
    description:
      - The router's Prometheus metrics port, members only (C(ascend_router_metrics_port)).
    type: int
    default: 8404
  pd_proxy_dir:
    description:
      - Where vllm-ascend's C(examples/disaggregated_prefill_v1) is on the nodes (C(ascend_pd_proxy_dir)); its proxy
        joins the prefill and decode pools of an instance that has them. Required for such an instance to deploy.
    type: str
  npu_exporter_enabled:
    description:
      - Run the NPU exporter on every node and scrape it (C(ascend_npu_exporter)).
    type: bool
    default: false
  npu_exporter_port:
    description:
      - The NPU exporter's port on each node's cluster address (C(ascend_npu_exporter_port)).
    type: int
    default: 8082
  monitors:
    description:
      - The hosts that scrape the cluster, each C(name) and C(address); the firewall admits them to the scraped
        ports.
      - Omitted - the hosts of the group C(ascend_monitor) (their C(ascend_node_ip), default C(ansible_host)).
    type: list
    elements: dict
    suboptions:
      name:
        description: The host's inventory name.
        type: str
        required: true
      address:
        description: The address it scrapes from.
        type: str
        required: true
  removed_node:
    description:
      - A host of C(ascend_cluster) left out of the nodes read from the inventory (C(playbooks/remove_node.yml)'s
        C(node)). The head is refused; an instance or layout that needs the host fails the plan with its reason.
      - Ignored with O(nodes).
    type: str
  nodes:
    description:
      - The cluster's nodes, head included, in inventory order.
      - Omitted - every host of C(ascend_cluster) from its variables (C(ascend_node_ip), default C(ansible_host);
        C(ascend_nic); C(ascend_npu_devices); C(ascend_npu_device_map); C(ascend_npus_per_node);
        C(ascend_data_parallel_size_local); C(ascend_data_parallel_start_rank)), with what the preflight detected
        where the inventory leaves them unset. The inventory is checked first - the groups (C(ascend_head), one host,
        and C(ascend_workers) under C(ascend_cluster)), the type of every variable of the collection's roles on every
        host, the API key - and any problem fails the task naming the variables and hosts.
    type: list
    elements: dict
    suboptions:
      name:
        description: Inventory hostname.
        type: str
        required: true
      head:
        description: Whether the node is the head (exactly one must be).
        type: bool
        default: false
      node_ip:
        description: The node's cluster IP address.
        type: str
        required: true
      nic:
        description: The NIC carrying O(nodes[].node_ip); unset leaves the socket variables unresolved.
        type: str
      npu_devices:
        description: Logic IDs of the NPU chips the node may use (C(ASCEND_RT_VISIBLE_DEVICES)).
        type: list
        elements: int
      device_map:
        description:
          - Physical ID (the N of C(/dev/davinciN), what C(hccn_tool -i) takes) by logic ID, as the preflight
            detected it or C(ascend_npu_device_map) gives it; a logic ID not in it is its own physical ID.
        type: dict
      npu_family:
        description: The NPU family the preflight detected (V(910B), V(910_93), V(310P), ...), passed through.
        type: str
      npus_per_node:
        description: Gives devices 0..N-1 when O(nodes[].npu_devices) is unset.
        type: int
        default: 8
      data_parallel_size_local:
        description: DP ranks on this node; unset nodes share the rest evenly, head first.
        type: int
      data_parallel_start_rank:
        description: First DP rank of this node (mp launcher); defaults to the sum of the earlier nodes' ranks.
        type: int
      device_group:
        description: The group of the node's NPU device files, as the preflight found it; the service
          account gets it (C(service_groups) in RV(nodes)).
        type: str
"""

EXAMPLES = r"""
- name: Plan a two-node DP 4 deployment under Ray
  ascend.inference.parallel_plan:
    engine: vllm-mindspore
    model: /models/Qwen2.5-7B
    launcher: ray
    data_parallel_size: 4
    serve_options:
      trust_remote_code: true
    nodes:
      - {name: node1, head: true, node_ip: 192.0.2.11, nic: enp189s0f0, npus_per_node: 2}
      - {name: node2, node_ip: 192.0.2.12, nic: enp189s0f0, npus_per_node: 2}
  register: plan

- name: Show the head's command line
  ansible.builtin.debug:
    msg: "{{ plan.nodes.node1.serve_command }}"
"""

RETURN = r"""
cluster:
  description: Cluster-wide results.
  returned: success
  type: dict
  contains:
    engine:
      description: O(engine).
      type: str
      returned: success
    engine_version:
      description: The engine release planned for (O(engine_version) or the engine's default).
      type: str
      returned: success
    vllm_version:
      description: The vLLM release that engine runs on; O(serve_options) were checked against its options.
      type: str
      returned: success
    engine_distribution:
      description: The engine's Python distribution (V(vllm-ascend) or V(vllm-mindspore)).
      type: str
      returned: success
    engine_program:
      description: The engine's serve program (V(vllm) or V(vllm-mindspore)).
      type: str
      returned: success
    launcher:
      description: O(launcher) (V(ray) or V(mp)).
      type: str
      returned: success
    model:
      description: O(model), the positional argument of C(serve).
      type: str
      returned: success
    head:
      description: The head's inventory name.
      type: str
      returned: success
    node_order:
      description: Nodes in rank order, head first.
      type: list
      elements: str
      returned: success
    tensor_parallel_size:
      description: O(tensor_parallel_size).
      type: int
      returned: success
    pipeline_parallel_size:
      description: O(pipeline_parallel_size).
      type: int
      returned: success
    data_parallel_size:
      description: O(data_parallel_size).
      type: int
      returned: success
    world_size:
      description: TP x PP, the NPUs one model replica uses.
      type: int
      returned: success
    npus_required:
      description: TP x PP x DP.
      type: int
      returned: success
    expert_parallel_size:
      description: EP size, or null when EP is off.
      type: int
      returned: success
    additional_config:
      description: The merged C(--additional-config) object.
      type: dict
      returned: success
    ray_nodes_expected:
      description: Alive Ray nodes to wait for, null under the mp launcher.
      type: int
      returned: success
    ray_npus_expected:
      description: Total NPU count Ray must report, null under the mp launcher.
      type: int
      returned: success
    served_model_name:
      description: The name requests must use.
      type: str
      returned: success
    api_port:
      description: O(api_port), where the API node's server listens.
      type: int
      returned: success
    ray_port:
      description: O(ray_port), the Ray head's port; null under the mp launcher.
      type: int
      returned: success
    ray_address:
      description: The Ray head's C(address:port), where workers and probes connect; null under the mp launcher.
      type: str
      returned: success
    dp_rpc_port:
      description: O(dp_rpc_port), the head's data-parallel RPC port; null unless the mp launcher runs DP across nodes.
      type: int
      returned: success
    model_transfer_port:
      description: O(model_transfer_port), where a node serves the model to others while the model role copies it;
        null when the model role copies nothing.
      type: int
      returned: success
    model_tracker_port:
      description: O(model_transfer_port) + 1, the pipelined copy's tracker on the run's first node; null when the model role
        copies nothing.
      type: int
      returned: success
    model_control_port:
      description: O(model_transfer_port) + 2, aria2's JSON-RPC on loopback in the pipelined copy; null when the
        model role copies nothing.
      type: int
      returned: success
    model_manifest:
      description: Each node's record of the model copied to it, in RV(cluster.config_dir) (the model role writes it;
        the preflight compares the files with it).
      type: str
      returned: success
    config_dir:
      description: O(config_dir) without a trailing slash; the roles' own directories default to it.
      type: str
      returned: success
    node_env_file:
      description: The node environment in RV(cluster.config_dir), C(node.env) (node_env writes it; the Ray and serve
        units load it).
      type: str
      returned: success
    secrets_env_file:
      description: The 0600 file in RV(cluster.config_dir), C(secrets.env), with the secret variables of
        C(ascend_extra_env) (node_env writes it; the Ray and serve units load it).
      type: str
      returned: success
    ray_env_file:
      description: Ray's environment in RV(cluster.config_dir), C(ray.env) (ray_cluster writes it; the serve unit and
        the Ray clients load it to reach Ray with its token).
      type: str
      returned: success
    serve_env_file:
      description: The 0600 serve environment in RV(cluster.config_dir), C(serve.env), with the API key (serve writes
        it in C(serve_config_dir), which defaults to RV(cluster.config_dir); its unit loads it).
      type: str
      returned: success
    python_env:
      description: O(python_env) without a trailing slash; C(ray_cluster_env), C(serve_python_env) and
        C(preflight_engine_env) default to it.
      type: str
      returned: success
    units:
      description: The systemd units the roles install, by job (the engine container's is installed in container
        mode only). The roles and C(status.yml) take the names from here; C(teardown.yml) and C(collect.yml),
        which run without a plan (an inventory that no longer validates can still be torn down), spell them.
      type: dict
      returned: success
      contains:
        ray:
          description: Ray's unit, C(ascend-ray.service).
          type: str
        serve:
          description: The serve unit, C(ascend-serve.service).
          type: str
        engine:
          description: The engine container's unit, C(ascend-engine.service).
          type: str
        firewall:
          description: The members-only firewall's unit, C(ascend-firewall.service).
          type: str
        watchdog:
          description: >-
            The serve watchdog's unit, C(ascend-watchdog.service), where the engine spans nodes (host mode): every
            node of an mp data-parallel group, the head under Ray.
          type: str
    unit_dir:
      description: Where the units are written, C(/etc/systemd/system).
      type: str
      returned: success
    service:
      description: Who runs Ray and the engine (from O(service_user)).
      type: dict
      returned: success
      contains:
        user:
          description: The account (V(root) or the dedicated one).
          type: str
        group:
          description: Its primary group (the account's own; V(root) for root).
          type: str
        home:
          description: Its home and the units' working directory (C(/var/lib/ascend-inference)).
          type: str
        state_directory:
          description: The units' C(StateDirectory=), null for root.
          type: str
        confined:
          description: Whether the units run as this account under systemd sandboxing (false for root).
          type: bool
    runtime:
      description: Where Ray and the engine run (from O(runtime)).
      type: dict
      returned: success
      contains:
        mode:
          description: V(host) or V(container).
          type: str
        image:
          description: The engine image (O(container_image)), null on hosts.
          type: str
        engine:
          description: O(container_engine) (V(auto), V(podman) or V(docker)), null on hosts.
          type: str
        unit:
          description: The systemd unit that runs the engine container (C(ascend-engine.service)), null on hosts.
          type: str
        container:
          description: The engine container's name (C(ascend-engine)), null on hosts.
          type: str
    secret_env_names:
      description: Names of the secret variables of C(ascend_extra_env), which no node's C(env) holds.
      type: list
      elements: str
      returned: success
  sample:
    head: node1
    node_order: [node1, node2]
    world_size: 1
    npus_required: 4
    expert_parallel_size: null
    ray_nodes_expected: 2
    ray_npus_expected: 4
instances:
  description:
    - With O(instances), each instance's plan by name, shaped as one model's (C(cluster) and C(nodes), as RV(cluster)
      and RV(nodes) describe them) on the instance's hosts and NPUs; its C(cluster) also holds C(instance) (its
      name), C(hccl_base_ports) (by host, the first port of its C(HCCL_IF_BASE_PORT) range there) and its own unit and file names
      (C(ascend-serve-NAME.service), C(serve-NAME.env), ...). RV(cluster) then holds what the instances share
      (runtime, paths, service account; the engine where all run the same) with C(instance_names), C(node_order),
      C(ray_instances) (those on the Ray launcher, each its own Ray cluster) and C(mooncake_ports); RV(nodes) each
      host's address, role in the cluster, C(instances) (the names of those on it), C(ray_instance) (the one whose
      Ray cluster it is in, or null) and C(serves_api) false.
  returned: with O(instances)
  type: dict
router:
  description:
    - With the router enabled, the endpoint - C(hosts), C(addresses) (host to cluster address),
      C(port), C(metrics_port), C(unit), and C(backends) (one per served model name, each with C(name),
      C(served_model_name), C(checks) (each C(address) and C(port), null for the server's own, C(path) and
      C(pool) - all must answer 200 for a replica to be up; a prefill/decode route's ask each pool's head too),
      C(allowed_paths) (the client paths passed on) and C(servers) - each replica's instance C(name) (the single
      model's is V(default)), C(host) (its head), C(address) and C(port)); null when disabled.
  returned: success
  type: dict
pd:
  description:
    - With O(instances), each instance that has prefill and decode pools - C(connector), C(served_model_name),
      C(pools) (C(prefill) and C(decode), each with its C(instance), C(hosts), C(head), C(address), C(api_port),
      C(kv_port), C(kv_ports) and C(kv_transfer_config)) and C(proxy) (C(host), C(address), C(port), C(script),
      C(argv), C(command), C(unit), C(env_file), C(health_path)).
  returned: with O(instances)
  type: dict
monitoring:
  description:
    - What Prometheus scrapes - C(exporter) (C(enabled), C(port), C(unit), C(hosts), C(addresses)), C(monitors)
      (C(host), C(address)), C(admitted) (the monitors' addresses that are no member's), C(prometheus_port)
      (Prometheus' port on them), C(jobs) (job name per target kind) and C(targets) (C(engines), C(router),
      C(npu) - Prometheus file-based service discovery groups, each C(targets) and C(labels); behind a router an
      engine's target is the router's metrics port with the label C(__metrics_path__)) and C(engine_metrics) (what
      the router forwards there - C(path), C(address), C(port); empty without a router).
  returned: success
  type: dict
allocation:
  description:
    - With O(instances), what is allocated on every host - C(ports) (per host, a list of C(port), C(count),
      C(owner) and C(what), sorted) and C(npus) (per host, NPU logic ID to the instance that holds it, null
      when free).
  returned: with O(instances)
  type: dict
  sample:
    ports:
      node1: [{port: 8000, count: 1, owner: chat, what: api_port},
              {port: 60000, count: 32, owner: chat, what: HCCL_IF_BASE_PORT}]
    npus:
      node1: {"0": chat, "1": chat, "2": embed, "3": null}
node_problems:
  description: With O(check_nodes), each play host's problems, by inventory name.
  returned: with O(check_nodes)
  type: dict
  sample: {node2: ["ascend_nic eth9 does not carry ascend_node_ip 192.0.2.12 (found on: eth0)"]}
nodes:
  description: Per-node results, keyed by inventory name.
  returned: success
  type: dict
  sample:
    node1:
      role: head
      serve_argv: [vllm-mindspore, serve, /models/Qwen2.5-7B, --tensor-parallel-size, "1",
                   --data-parallel-size, "4", --data-parallel-size-local, "2",
                   --data-parallel-backend, ray, --port, "8000", --trust-remote-code]
      serve_command: vllm-mindspore serve /models/Qwen2.5-7B --tensor-parallel-size 1 ...
      ray_start_argv: [ray, start, --head, --port=6379, --dashboard-host=127.0.0.1,
                       --node-ip-address=192.0.2.11, --disable-usage-stats, --block]
      env: {ASCEND_RT_VISIBLE_DEVICES: "0,1", MS_ENABLE_LCCL: "off", GLOO_SOCKET_IFNAME: enp189s0f0}
      unresolved_env: []
      visible_devices: [0, 1]
      physical_devices: [0, 1]
      npu_family: 910B
      data_parallel_size_local: 2
      data_parallel_start_rank: null
      service_groups: [HwHiAiUser]
      container: null
  contains:
    role:
      description: V(head) or V(worker).
      type: str
    node_ip:
      description: The node's cluster address (its C(node_ip) input).
      type: str
    nic:
      description: The NIC carrying it, null while only the node can tell (the preflight detects it).
      type: str
    serve_argv:
      description: The node's C(serve) command line, null when the node runs none (Ray workers).
      type: list
      elements: str
    serve_command:
      description: C(serve_argv) as one shell-quoted line, for people; null with it.
      type: str
    serves_api:
      description: Whether this node's server answers the API (the head).
      type: bool
    ray_start_argv:
      description: The node's C(ray start ... --block) command line, null under the mp launcher.
      type: list
      elements: str
    ray_start_command:
      description: The same as one shell-quoted line; null with it.
      type: str
    env:
      description: The node's environment (the seeds' exports, O(extra_env) merged over them; secrets
        excluded); a value only the node can tell (its NIC) is null.
      type: dict
    unresolved_env:
      description: The names in C(env) whose value is null, sorted.
      type: list
      elements: str
    visible_devices:
      description: Logic IDs of the NPUs the node uses (C(ASCEND_RT_VISIBLE_DEVICES)).
      type: list
      elements: int
    physical_devices:
      description: Their physical IDs (C(/dev/davinciN), C(hccn_tool -i)), in the same order.
      type: list
      elements: int
    npu_family:
      description: The NPU family the preflight detected (for example V(910B)), null before it ran.
      type: str
    devices_from:
      description: Where C(visible_devices) came from - V(ascend_npu_devices) (the inventory's or the
        preflight's detected list) or V(ascend_npus_per_node) (assumed 0..N-1).
      type: str
    data_parallel_size_local:
      description: DP ranks on this node.
      type: int
    data_parallel_start_rank:
      description: The node's first DP rank under the mp launcher with DP, else null.
      type: int
    service_groups:
      description: Supplementary groups of the node's units (the NPU device group when the account is confined).
      type: list
      elements: str
    container:
      description:
        - In container mode, what the node's engine container gets - C(devices), the physical IDs of its
          C(/dev/davinciN) (they keep their host numbers inside), and C(env), the node's environment as seen
          inside, where the runtime numbers the devices it was given from 0 (C(ASCEND_RT_VISIBLE_DEVICES=0..n-1),
          unless O(extra_env) sets it). Null on hosts.
      type: dict
plan_warnings:
  description: Warnings about the layout (also shown as Ansible warnings).
  returned: success
  type: list
  elements: str
  sample: ["NPU devices were not detected; assumed 0..N-1 from ascend_npus_per_node on: node1, node2"]
model_checks:
  description: Whether the layout was checked against the model's config.json, and which file; if not, the variable
    that would let it (C(ascend_model_config)).
  returned: success
  type: str
  sample: "checked against /models/Qwen2.5-7B/config.json"
instance_model_checks:
  description: The same for each instance (O(instances)); an instance with its own C(model) or C(model_config) is
    checked against that model's config.json.
  returned: success, with O(instances)
  type: dict
  sample: {"chat": "checked against /models/Qwen2.5-7B/config.json"}
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ascend.inference.plugins.module_utils.plan.request import ARGUMENT_SPEC, answer


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    # The inventory and the preflight's records are the action plugin's to read; a module has only its options.
    if module.params["nodes"] is None:
        module.fail_json(msg="nodes is required where the action plugin does not read them from the inventory")
    module.params.pop("check_nodes")
    result = answer(module.params)
    if result.get("failed"):
        result.pop("failed")
        module.fail_json(**result)
    for warning in result["plan_warnings"]:
        module.warn(warning)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
