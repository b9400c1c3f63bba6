# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Environment variables: secrets apart from the rest (environment_file, which writes them, is in systemd.py).

public_env / secret_env: ascend_extra_env without, or with only, its secret variables
(names ending in _TOKEN, _KEY, _SECRET or _PASSWORD). secret_env_summary: the secret
variables by name with the problems found in their values, which is all the planner sees.
sourced_env / node_environment: what set_env.sh exports (from `env -0`), and node.env's variables.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.ascend.inference.plugins.module_utils import input_rules, node_env


def public_env(env):
    return input_rules.split_env(env)[0]


def secret_env(env):
    return input_rules.split_env(env)[1]


def secret_env_summary(env):
    return input_rules.secret_env_summary(env)


class FilterModule(object):
    def filters(self):
        return {"public_env": public_env, "secret_env": secret_env, "secret_env_summary": secret_env_summary,
                "sourced_env": node_env.sourced_env, "node_environment": node_env.node_environment}
