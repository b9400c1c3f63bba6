# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NPU exporter phase's desired state: Huawei's npu-exporter (MindCluster, binary mode) as
ascend-npu-exporter.service, bound to the node's cluster address on the plan's port, run by the collection's
service account (confined as the serve units are) with the driver's groups; the program sent from the controller
where the node's differs (run with -version first: one built for another architecture is refused before it replaces
anything), restarted when its unit or its program changes, then its /metrics waited for. Where the plan turns it off,
its unit and program are removed.

Its flags (component/npu-exporter/cmd/npu-exporter/main.go): -port (1025-40000), -ip (an address: there is no
default), -logFile (an absolute path its account may write). A value it refuses is logged and the program exits 0:
the apply waits for /metrics to answer rather than trust the unit's state."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.ascend.inference.plugins.plugin_utils.phases import backends
from ansible_collections.ascend.inference.plugins.module_utils.runtime import service_account, systemd, unit_names
from ansible_collections.ascend.inference.plugins.plugin_utils.phases.phase import Refused, seen_absent

SETTINGS = {"binary": "str", "program": "str", "extra_args": "list"}
LOG_DIRECTORY = "ascend-npu-exporter"
# npu-exporter reads the NPUs before it listens: bounded at a minute.
METRICS_TIMEOUT = 60


def argv(program, address, port, extra_args):
    return [program, "-port=%d" % port, "-ip=%s" % address,
            "-logFile=/var/log/%s/npu-exporter.log" % LOG_DIRECTORY] + [str(arg) for arg in extra_args or []]


def leftovers(plan):
    """What a node without the exporter may hold of an earlier plan's: the preflight looks for its unit file (the
    apply writes the unit file before the program, so a program without it is left only by a hand or by the role of
    an earlier release whose -version check failed)."""
    return ["%s/%s" % (plan["cluster"]["unit_dir"], unit_names.NPU_EXPORTER)]


def settings_problems(host, binary, extra_args):
    """What is wrong with a node's exporter settings, from the inventory alone (plan.yml refuses it too)."""
    if not binary:
        return ["ascend_npu_exporter is true but npu_exporter_binary is not set for %s: give the path of Huawei's "
                "npu-exporter program on the controller (from Ascend-mindxdl-npu-exporter_VERSION_linux-ARCH.zip)"
                % host]
    problems = []
    if not os.path.isfile(binary):
        problems.append("npu_exporter_binary for %s is %s, which is not a file on the controller" % (host, binary))
    for arg in extra_args or []:
        name = str(arg).lstrip("-").split("=", 1)[0]
        if name in ("port", "ip", "logFile"):
            problems.append("npu_exporter_extra_args on %s sets -%s, which the collection sets from the plan "
                            "(ascend_npu_exporter_port, the node's address)" % (host, name))
    return problems


def desired(node, settings):
    """settings: binary (Huawei's program on the controller), program (where it goes on the node), extra_args (more
    flags)."""
    plan = node.plan
    exporter = plan["monitoring"]["exporter"]
    unit = exporter["unit"]
    unit_path = "%s/%s" % (plan["cluster"]["unit_dir"], unit)
    if not exporter["enabled"] or node.host not in exporter["hosts"]:
        if seen_absent(node, leftovers(plan)):
            return {"apply": None, "record": {"enabled": False}}
        return {"apply": {"units": [{"name": unit, "file": unit_path, "state": "absent"}],
                          "absent": [unit_path, settings["program"]]},
                "record": {"enabled": False}}
    problems = settings_problems(node.host, settings["binary"], settings["extra_args"])
    if problems:
        raise Refused("; ".join(problems))
    address = exporter["addresses"][node.host]
    try:
        exec_start = systemd.command_line(argv(settings["program"], address, exporter["port"],
                                               settings["extra_args"]))
    except ValueError as error:
        raise Refused("npu_exporter_extra_args on %s: %s" % (node.host, error))
    values = {"exec_start": exec_start, "log_directory": LOG_DIRECTORY,
              "firewall": plan["cluster"]["units"]["firewall"],
              "service_lines": backends.service_lines(plan, plan["nodes"][node.host])}
    url = "http://%s:%d/metrics" % (address, exporter["port"])
    apply = {"files": [{"path": unit_path, "mode": "0644", "template": "npu_exporter/ascend-npu-exporter.service.j2",
                        "values": values},
                       {"path": settings["program"], "mode": "0755", "controller_file": settings["binary"],
                        # One built for another architecture fails here (Exec format error), not as a unit that
                        # never serves.
                        "validate": "%s -version",
                        "fix": "npu_exporter_binary (%s) does not run on %s: give the program built for this node's "
                               "architecture" % (settings["binary"], node.host)}],
             "units": [{"name": unit, "file": unit_path, "state": "started",
                        "restart_on": [unit_path, settings["program"]]}],
             # The account the serve units run as: the exporter may be deployed before them.
             "account": backends.account(plan, service_account.COMMENT),
             "answers": [{"label": "the NPU exporter's /metrics", "url": url, "timeout": METRICS_TIMEOUT}]}
    return {"apply": apply, "record": {"enabled": True, "url": url}}
