# -*- coding: utf-8 -*-
"""The inventory type check covers every role's variables, named once with their hosts."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleUndefinedVariable

from ansible_collections.ascend.inference.plugins.plugin_utils.inventory import (
    role_options, type_problems as inventory_type_problems)

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
