# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""teardown.yml's phase: an empty desired state - every service of the collection stopped and disabled (the router,
serve's watchdog and serve first, then the engine container, Ray, the NPU exporter, the members-only firewall), and
no Ray or serve process left. Unit files, configuration and software stay: deploy.yml starts everything again.
Needs no plan (an inventory that no longer validates is still torn down)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.ascend.inference.plugins.module_utils.runtime import unit_names
from ansible_collections.ascend.inference.plugins.plugin_utils.phases import hostnames, per_instance

# Start order: node_apply stops them in reverse.
ORDER = ("firewall", "ray", "engine", "serve", "watchdog")
LEFTOVERS = "raylet|gcs_server|ray start|vllm(-mindspore)? serve|load_balance_proxy_[a-z_]*server_example"


def desired(node, settings):
    units = [{"name": unit_names.SINGLE[name], "state": "stopped", "enabled": False} for name in ORDER]
    # The NPU exporter reads the NPUs the engines used: it goes with them (after the firewall in start order).
    units.insert(1, {"name": unit_names.NPU_EXPORTER, "state": "stopped", "enabled": False})
    # Several instances: each one's units as the node has them, Ray's after the single model's, serve's last (stopped
    # first).
    # The prefill/decode proxies (ascend-pd-NAME) stop before the pools.
    for pattern, single in ((unit_names.RAY_UNITS, "ray"), (unit_names.SERVE_UNITS, "serve"),
                            (unit_names.WATCHDOG_UNITS, "watchdog"), (unit_names.PD_PROXY_UNITS, None)):
        found = [name for name in per_instance.listed(node, unit_names.UNIT_DIR, pattern)
                 if single is None or name != unit_names.SINGLE[single]]
        units += [{"name": name, "state": "stopped", "enabled": False} for name in found]
    # The router in front of them stops first: no request reaches an engine that is going.
    units.append({"name": unit_names.ROUTER, "state": "stopped", "enabled": False})
    return {"apply": {"units": units, "leftovers": {"pattern": LEFTOVERS}}, "record": {}}


REMOVE_SETTINGS = {"config_dir": "str", "exporter_program": "str"}


def removed(node, settings):
    """remove_node.yml's phase on the node it takes out: every unit of the collection stopped, disabled and its
    file removed (the router and serve first, as a teardown), then the collection's configuration directory, the
    NPU exporter's program and the cluster's block in /etc/hosts; no Ray or serve process left. Installed software (CANN, the engine, Ray) stays.
    settings: config_dir (ascend_config_dir), exporter_program (npu_exporter_program)."""
    stopped = desired(node, {})["apply"]
    units, absent = [], []
    for unit in stopped["units"]:
        path = "%s/%s" % (unit_names.UNIT_DIR, unit["name"])
        units.append({"name": unit["name"], "file": path, "state": "absent"})
        absent.append(path)
    absent += [settings["config_dir"], settings["exporter_program"]]
    # The cluster's names in its own /etc/hosts go too (the hostnames phase's block).
    blocks = [{"path": "/etc/hosts", "marker": hostnames.MARKER, "block": None}]
    return {"apply": {"units": units, "absent": absent, "blocks": blocks, "leftovers": stopped["leftovers"]},
            "record": {"removed": True}}
