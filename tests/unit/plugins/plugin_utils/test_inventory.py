# -*- coding: utf-8 -*-
"""The inventory type check covers every role's variables, named once with their hosts; an ascend_ variable the
collection does not know is refused with the closest known name; a required one missing is named."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleUndefinedVariable

from ansible_collections.ascend.inference.plugins.plugin_utils.inventory import (
    group_problem, known_variables, required_problems, role_options, type_problems as inventory_type_problems, unknown_problems)

TYPES = ("str", "path", "int", "bool", "dict", "list", "raw")


class HostVars(dict):
    """A host's variables as hostvars gives them: reading an unresolvable template raises."""

    def __getitem__(self, name):
        value = dict.__getitem__(self, name)
        if value == "{{ undefined }}":
            raise AnsibleUndefinedVariable("'undefined' is undefined")
        return value


def test_every_role_variable_is_known_with_one_type():
    options = role_options()
    for role_variable in ("serve_ready_timeout", "ray_cluster_auth", "firewall_open_ports", "pyacl_package_url",
                          "ascend_tensor_parallel_size", "ascend_service_user"):
        assert role_variable in options
    assert all(option.get("type", "str") in TYPES for option in options.values())


def test_role_variables_of_the_wrong_type_are_named_with_their_hosts():
    hostvars = {
        "n1": HostVars(serve_ready_timeout="soon", ray_cluster_auth="tokens", firewall_open_ports=["ssh"],
                       ray_cluster_version=2.5, serve_smoke_test="yes", ascend_tensor_parallel_size=2),
        "n2": HostVars(serve_ready_timeout="soon", serve_container_extra_args="{{ undefined }}",
                       # ansible-core 2.18 hands an unresolvable template back as its text instead of raising.
                       serve_smoke_max_tokens="{{ later_var }}", firewall_open_ports="{% if x %}[1]{% endif %}"),
    }
    assert inventory_type_problems(hostvars, ["n1", "n2"]) == [
        "firewall_open_ports must be a list of whole numbers (found ['ssh']) on host n1",
        "ray_cluster_auth must be one of auto, token, none (found 'tokens') on host n1",
        "ray_cluster_version must be text (found 2.5, a decimal number): quote it on host n1",
        "serve_ready_timeout must be a whole number (found 'soon', text) on hosts n1, n2",
    ]


def test_values_ansible_converts_pass():
    # INI inventories and -e give text: the argument spec converts it, and so does the check.
    hostvars = {"n1": HostVars(serve_ready_timeout="300", serve_smoke_test="no", firewall_open_ports="22,8080")}
    assert inventory_type_problems(hostvars, ["n1"]) == []


def test_a_misspelt_variable_is_refused_with_the_closest_known_name():
    hostvars = {"n1": HostVars(ascend_tensor_paralel_size=8, ascend_model="/m", serve_ready_timeout=30),
                "n2": HostVars(ascend_tensor_paralel_size=8, ascend_modle="/m", ascend_zzz="{{ undefined }}")}
    assert unknown_problems(hostvars, ["n1", "n2"], {}) == [
        "ascend_modle on host n2 is not a variable of this collection: did you mean ascend_model? (a variable of your "
        "own: list it in ascend_own_variables)",
        "ascend_tensor_paralel_size on hosts n1, n2 is not a variable of this collection: did you mean "
        "ascend_tensor_parallel_size? (a variable of your own: list it in ascend_own_variables)",
        # Names only: an unresolvable value is not read.
        "ascend_zzz on host n2 is not a variable of this collection (a variable of your own: list it in "
        "ascend_own_variables)",
    ]


def test_extra_variables_are_named_as_given_and_an_unprefixed_known_name_is_refused():
    extra = {"tensor_parallel_size": "4", "ascend_pipline_parallel_size": "2", "serve_restart_instances": "a",
             "node": "n2"}
    # -e variables are every host's variables too: named once, as -e.
    hostvars = {"n1": HostVars(extra), "n2": HostVars(extra)}
    assert unknown_problems(hostvars, ["n1", "n2"], extra) == [
        "-e tensor_parallel_size is not a variable of this collection: did you mean ascend_tensor_parallel_size?",
        "-e ascend_pipline_parallel_size is not a variable of this collection: did you mean "
        "ascend_pipeline_parallel_size? (a variable of your own: list it in ascend_own_variables)",
    ]


def test_own_variables_results_and_playbook_variables_pass():
    hostvars = {"n1": HostVars(ascend_own_variables=["ascend_site", "ascend_rack"], ascend_site="x", ascend_rack=3,
                               ascend_plan={}, ascend_applied={}, ascend_plan_dir="/tmp/p", ascend_api_key="k",
                               ascend_node_ip="10.0.0.1", ascend_instances={}),
                "n2": HostVars(ascend_own_variables="ascend_site", ascend_site="x")}
    assert unknown_problems(hostvars, ["n1", "n2"], {}) == [
        "ascend_own_variables on host n2 must be a list of variable names (found 'ascend_site')",
        "ascend_site on host n2 is not a variable of this collection (a variable of your own: list it in "
        "ascend_own_variables)"]
    assert {"ascend_plan", "ascend_applied", "ascend_bundle_dir", "ascend_own_variables"} <= known_variables()


def test_a_missing_required_variable_is_named_with_where_to_set_it():
    hostvars = {"n1": HostVars(ascend_engine="vllm-ascend"), "n2": HostVars(ascend_engine="vllm-ascend")}
    assert required_problems(hostvars, ["n1", "n2"]) == [
        "ascend_model is not set for hosts n1, n2: set it for the whole cluster in group_vars/ascend_cluster.yml "
        "(next to the inventory file) or in the inventory's ascend_cluster vars"]
    assert required_problems({"n1": HostVars(ascend_engine="vllm-ascend", ascend_model="/m")}, ["n1"]) == []


def test_a_host_in_two_roles_or_in_neither_is_named():
    assert group_problem({"ascend_cluster": ["a", "b"], "ascend_head": ["a"], "ascend_workers": ["b"]}) is None
    assert group_problem({"ascend_cluster": ["a"], "ascend_head": ["a"]}) is None
    assert group_problem({"ascend_cluster": ["a", "b"], "ascend_head": ["a"], "ascend_workers": ["a", "b"]}) == (
        "host a is in both ascend_head and ascend_workers: the cluster's head is not also one of its workers; take "
        "it out of ascend_workers")
    # A worker under a misspelt group (ascend_worker) is still a member of ascend_cluster.
    assert group_problem({"ascend_cluster": ["a", "b", "c"], "ascend_head": ["a"], "ascend_worker": ["b", "c"]}) == (
        "hosts b, c are in ascend_cluster but in neither ascend_head nor ascend_workers (a misspelt group name?): put "
        "each node in one of the two")
    assert "exactly one host" in group_problem({"ascend_cluster": ["a"], "ascend_head": []})
