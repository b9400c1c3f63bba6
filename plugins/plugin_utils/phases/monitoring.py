# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The monitoring phase's desired state: on a monitoring host, Prometheus' configuration (one job per target kind,
each read from a file-based service discovery file), the targets from the plan and the collection's rules;
Prometheus reloaded when its configuration or rules change and not when only the targets do (it reads those
files again by itself). With export_dir (no monitoring host), the same files in that directory for a person's
own Prometheus, and no service."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re

from ansible_collections.ascend.inference.plugins.module_utils.plan import monitoring_rules
from ansible_collections.ascend.inference.plugins.plugin_utils.phases.phase import Refused

SETTINGS = {"package": "str", "config": "str", "directory": "str", "unit": "str", "promtool": "str",
            "scrape_interval": "str", "evaluation_interval": "str", "thresholds": "dict", "export_dir": "str"}
RULES = "rules/ascend-inference.rules.yml"
# Prometheus answers /-/ready once it has loaded its configuration and rules: seconds on a node of this size.
READY_TIMEOUT = 60
CONFIG = "prometheus.yml"
# For the person's Grafana (the collection installs none): the dashboard and a provisioning file that loads it.
GRAFANA = (("grafana/ascend-inference.json", "monitoring/ascend-inference-dashboard.json"),
           ("grafana/ascend-inference-provisioning.yml", "monitoring/grafana-provisioning.yml"))
# promtool checks a configuration's syntax alone (check config --syntax-only) from Prometheus 2.33 (PR #9909): the
# configuration is checked before the files it names are written. Ubuntu 22.04 ships 2.31; Debian 12, 2.42.
OLDEST = "2.33.0"
OLDEST_FIX = ("install Prometheus %s or later (Ubuntu 22.04's package is 2.31: take prometheus.io's release archive) "
              "and set monitoring_prometheus_package and monitoring_promtool to it" % OLDEST)
# Prometheus' durations (model.ParseDuration): units from ms to y, one or several.
DURATION = re.compile(r"^(%s)+$" % monitoring_rules.DURATION_PART)


def controller_owner():
    import grp
    import pwd
    return {"owner": pwd.getpwuid(os.geteuid()).pw_name, "group": grp.getgrgid(os.getegid()).gr_name}


def thresholds_problems(host, thresholds):
    """What is wrong with monitoring_alert_thresholds: unknown keys, a duration or a number that is not one."""
    problems = []
    unknown = sorted(set(thresholds or {}) - set(monitoring_rules.THRESHOLDS))
    if unknown:
        problems.append("monitoring_alert_thresholds on %s: unknown keys %s (known: %s)" % (
            host, ", ".join(unknown), ", ".join(sorted(monitoring_rules.THRESHOLDS))))
    for key, value in sorted((thresholds or {}).items()):
        default = monitoring_rules.THRESHOLDS.get(key)
        if isinstance(default, str) and not (isinstance(value, str) and DURATION.match(value)):
            problems.append("monitoring_alert_thresholds.%s on %s must be a Prometheus duration such as 5m or "
                            "90s (found %r)" % (key, host, value))
        elif default is not None and not isinstance(default, str) and (
                isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0):
            problems.append("monitoring_alert_thresholds.%s on %s must be a number of at least 0 (found %r)"
                            % (key, host, value))
    return problems


def targets_file(directory, kind):
    return "%s/targets/%s.json" % (directory, kind)


def files(plan, settings, directory, config_path):
    """[(path, mode, content or None, template values or None)] of what Prometheus reads."""
    monitoring = plan.get("monitoring")
    if not monitoring:
        raise Refused("ascend_plan has no monitoring section: the plan was made by an older release of the "
                      "collection; run the preflight (or playbooks/plan.yml) again")
    found = []
    jobs = []
    for kind, job in sorted(monitoring["jobs"].items()):
        path = targets_file(directory, kind)
        # Written even when empty: Prometheus keeps a job whose file lists no target, and finds them once listed.
        found.append((path, "0644", json.dumps(monitoring["targets"][kind], indent=1, sort_keys=True) + "\n", None))
        jobs.append({"name": job, "file": path})
    rules = "%s/%s" % (directory, RULES)
    found.append((rules, "0644", monitoring_rules.render(settings["thresholds"], settings["scrape_interval"]), None))
    found.append((config_path, "0644", None, {"jobs": jobs, "rules": rules,
                                              "scrape_interval": settings["scrape_interval"],
                                              "evaluation_interval": settings["evaluation_interval"]}))
    return found


def desired(node, settings):
    """settings: package (Prometheus' distribution package, installed where promtool is missing), config
    (prometheus.yml's path), directory (where the targets and rules go), unit (Prometheus'),
    promtool, scrape_interval, evaluation_interval, thresholds (monitoring_rules.THRESHOLDS' keys), export_dir
    (None on a monitoring host)."""
    problems = thresholds_problems(node.host, settings["thresholds"])
    for key in ("scrape_interval", "evaluation_interval"):
        if not DURATION.match(settings[key] or ""):
            problems.append("monitoring_%s on %s must be a Prometheus duration such as 15s (found %r)"
                            % (key, node.host, settings[key]))
    if problems:
        raise Refused("; ".join(problems))
    export = settings.get("export_dir")
    directory = export or settings["directory"]
    config = "%s/%s" % (export, CONFIG) if export else settings["config"]
    wanted = files(node.plan, settings, directory, config)
    entries, rules_path = [], "%s/%s" % (directory, RULES)
    for path, mode, content, values in wanted:
        entry = {"path": path, "mode": mode}
        if values is not None:
            entry.update(template="monitoring/prometheus.yml.j2", values=values)
        else:
            entry["content"] = content
        if path == rules_path and not export:
            # A rule file Prometheus would refuse never replaces the loaded one.
            entry["validate"] = "%s check rules %%s" % settings["promtool"]
        elif path == config and not export:
            # The syntax only: the files it names are written in the same apply, after every check.
            entry["validate"] = "%s check config --syntax-only %%s" % settings["promtool"]
        entries.append(entry)
    for name, source in GRAFANA:
        entries.append({"path": "%s/%s" % (directory, name), "mode": "0644", "source": source})
    directories = [directory] + ["%s/%s" % (directory, sub) for sub in ("targets", "rules", "grafana")]
    apply = {"directories": [{"path": path, "mode": "0755"} for path in directories], "files": entries}
    if export:
        # On the controller, as the user who runs the playbook (node_apply writes root's by default).
        owner = controller_owner()
        for entry in apply["directories"] + entries:
            entry.update(owner)
    if not export:
        # The server and promtool come in the one package.
        apply["packages"] = [{"name": settings["package"], "program": "prometheus"},
                             {"name": settings["package"], "program": settings["promtool"]}]
        apply["requires"] = [{"argv": [settings["promtool"], "--version"], "minimum": OLDEST,
                              "version_pattern": r"promtool, version ([0-9.]+)", "fix": OLDEST_FIX}]
        apply["units"] = [{"name": settings["unit"], "state": "started", "reload_on": [config, rules_path]}]
        apply["answers"] = [{"label": "Prometheus' /-/ready", "timeout": READY_TIMEOUT,
                             "url": "http://127.0.0.1:%d/-/ready" % node.plan["monitoring"]["prometheus_port"]}]
    targets = node.plan["monitoring"]["targets"]
    return {"apply": apply, "record": {"directory": directory, "config": config,
                                       "targets": sum(len(groups) for groups in targets.values())}}
