# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The model role's decisions, on the controller (logic in module_utils/model/files.py): its variables checked once for the play
(model_settings), then, from every node's check against the manifest, what a copy cannot mend and who copies from
whom in which round (model_schedule, once for the play, its answer registered for every node), and a hub's download
command on the head (model_hub)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.ascend.inference.plugins.module_utils.model import files as model_files
from ansible_collections.ascend.inference.plugins.plugin_utils.phases.phase import Refused

HUB_PROGRAMS = {"huggingface": "hf", "modelscope": "modelscope"}
SETTINGS = {"source": "str", "src": "str", "hub_repo": "str", "fanout": "bool", "pipeline": "str", "cli": "str",
            "repo": "str", "revision": "str", "env_file": "str"}


def settings(node, settings):
    """settings: source, src, hub_repo."""
    cluster = node.plan["cluster"]
    problems = model_files.settings_problems(settings["source"], cluster["model"], settings["src"],
                                             settings["hub_repo"], cluster["head"], node.play_hosts())
    if problems:
        raise Refused("; ".join(problems))
    return {"apply": None, "record": None}


# Each node's model_check result, as the role registers it.
CHECK = "model_node"


def schedule(node, settings):
    """settings: source, fanout, pipeline."""
    checked = {}
    for host in node.play_hosts():
        found = node.var(CHECK, None, host=host)
        if isinstance(found, dict) and "complete" in found:
            checked[host] = found
    problems = model_files.node_problems(settings["source"], checked)
    if problems:
        raise Refused("\n- ".join(["the model cannot be put on every node:"] + problems))
    complete = set(host for host, found in checked.items() if found["complete"])
    source = None if settings["source"] == "controller" else node.plan["cluster"]["head"]
    hosts = node.play_hosts()
    found = model_files.schedule(hosts, complete, source, settings["fanout"], settings.get("pipeline") or "never")
    # The pipelined copy's tracker: on the controller when it sends (its aria2's task starts it); otherwise on the
    # run's first node, which its join serves it from. Every other node's join waits for it, and the first node is
    # in Ansible's first batch of forks however many nodes the run has.
    found["tracker"] = None if settings["source"] == "controller" else hosts[0]
    return {"apply": None, "record": None, "result": found}


def hub(node, settings):
    """settings: source, cli, repo, revision, env_file (the hub's environment, which the command loads). Runs the
    hub's own command on the node (the head) - not in check mode."""
    program = settings["cli"] or HUB_PROGRAMS[settings["source"]]
    argv = ["bash", "-c", 'set -a && . "$1" && set +a && shift && exec "$@"', "hub", settings["env_file"]] + \
        model_files.hub_download_argv(settings["source"], program, settings["repo"], settings["revision"],
                                      node.plan["cluster"]["model"])
    if node.check_mode:
        return {"apply": None, "record": None, "notes": ["would run %s" % " ".join(argv[5:])]}
    done = node.run("ansible.builtin.command", {"argv": argv})
    if done.get("rc") != 0:
        raise Refused("%s: %s failed (rc %s): %s" % (node.host, " ".join(argv[5:]), done.get("rc"), (
            (done.get("stderr") or "") + (done.get("stdout") or "")).strip()[-1500:]))
    # What changed shows in the manifest made next (and the head's check): the command cannot tell.
    return {"apply": None, "record": None}
