# -*- coding: utf-8 -*-
"""The environment filter and what the plan and node_env phases do with ascend_extra_env: split into what the plan may see and what only the node may."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.ascend.inference.plugins.filter.systemd import environment_file
from ansible_collections.ascend.inference.plugins.module_utils.plan.input_rules import secret_env_summary, split_env


def public_env(env):
    return split_env(env)[0]


def secret_env(env):
    return split_env(env)[1]


ENV = {"HF_TOKEN": "hf_value", "Db_Password": "pw_value", "LOG_LEVEL": "debug"}


def test_public_and_secret_parts_split_the_mapping():
    assert public_env(ENV) == {"LOG_LEVEL": "debug"}
    assert secret_env(ENV) == {"HF_TOKEN": "hf_value", "Db_Password": "pw_value"}


def test_the_summary_holds_names_and_problems_never_values():
    summary = secret_env_summary(dict(ENV, API_KEY={"nested": "nested_value"}))
    assert sorted(summary) == ["API_KEY", "Db_Password", "HF_TOKEN"]
    assert summary["HF_TOKEN"] == [] and len(summary["API_KEY"]) == 1
    assert not any(v in repr(summary) for v in ("hf_value", "pw_value", "nested_value"))


class Vaulted(object):
    """What ansible-core 2.18 hands a filter for an inline-vaulted value: not a str, decrypted by str()."""
    _ciphertext = b"$ANSIBLE_VAULT;1.1;AES256..."

    def __str__(self):
        return "hf_vaulted_value"


def test_a_vaulted_secret_is_checked_and_written_as_its_text():
    assert secret_env_summary({"HF_TOKEN": Vaulted()}) == {"HF_TOKEN": []}
    assert environment_file(secret_env({"HF_TOKEN": Vaulted()})) == 'HF_TOKEN="hf_vaulted_value"\n'


def test_a_value_that_is_not_a_mapping_is_left_for_the_planner_to_refuse():
    assert public_env("A=B") == "A=B" and secret_env("A=B") == {} and secret_env_summary("A=B") == {}


def test_environment_file_names_the_filter_on_a_line_break():
    with pytest.raises(AnsibleFilterError, match="environment_file: an environment value cannot hold a line break"):
        environment_file({"A_TOKEN": "x\ny"})
