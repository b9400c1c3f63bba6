# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Container mode (plugins/module_utils/container.py): the engine container's run and exec command lines,
the supervisor's process specs, and the image checks across nodes."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.ascend.inference.plugins.module_utils import container


def engine_image_problems(hostvars, hosts, result_name, cluster):
    """Every node's image problems and, across nodes, differing image IDs: one list of sentences."""
    problems, ids = [], {}
    for host in hosts:
        found = hostvars[host].get(result_name) or {}
        if not found.get("id") and found.get("action") in ("loaded", "pulled") and not found.get("error"):
            continue  # a check run: the image would be loaded or pulled here, and is judged then
        ids[host] = found.get("id")
        if found.get("id"):
            problems.extend(container.image_problems(host, cluster["runtime"]["image"], found, cluster))
        elif found.get("error"):
            problems.append("host %s: %s" % (host, found["error"]))
    return container.image_id_problems(ids, cluster["runtime"]["image"]) + problems


def engine_process(name, argv, env, env_files, source, restart_sec, after=None, stop_argv=None):
    try:
        return container.process_spec(name, argv, env, env_files, source, restart_sec, after or [], stop_argv)
    except ValueError as exc:
        raise AnsibleFilterError("engine_process: %s" % exc)


class FilterModule(object):
    def filters(self):
        return {
            "engine_run_argv": container.run_argv,
            "engine_exec_argv": container.exec_argv,
            "engine_supervisor_argv": container.supervisor_argv,
            "engine_process": engine_process,
            "engine_environment_scripts": container.environment_scripts,
            "engine_image_problems": engine_image_problems,
            "engine_image_cann": container.image_cann_versions,
            "engine_process_units": container.process_units,
            "same_image": container.same_image,
            "short_image_id": container.short_id,
        }
