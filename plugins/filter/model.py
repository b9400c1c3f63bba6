# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the model role (logic in module_utils/model_files.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.ascend.inference.plugins.module_utils import model_files


def _checked(hostvars, hosts):
    """{host: its model_check result} of the hosts that registered one."""
    return dict((host, hostvars[host]["model_node"]) for host in hosts
                if host in hostvars and isinstance(hostvars[host].get("model_node"), dict)
                and "complete" in hostvars[host]["model_node"])


def model_schedule(hostvars, hosts, source, head, fanout=True):
    checked = _checked(hostvars, hosts)
    complete = set(host for host, result in checked.items() if result["complete"])
    return model_files.schedule(list(hosts), complete, None if source == "controller" else head, fanout)


def model_problems(hostvars, hosts, source):
    return model_files.node_problems(source, _checked(hostvars, hosts))


def model_settings_problems(source, model, src=None, hub_repo=None, head=None, hosts=()):
    return model_files.settings_problems(source, model, src, hub_repo, head, list(hosts))


def model_hub_argv(source, cli, repo, revision, dest):
    program = cli or {"huggingface": "hf", "modelscope": "modelscope"}[source]
    return model_files.hub_download_argv(source, program, repo, revision, dest)


class FilterModule(object):
    def filters(self):
        return {"model_schedule": model_schedule, "model_problems": model_problems,
                "model_settings_problems": model_settings_problems, "model_hub_argv": model_hub_argv}
