# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What node_apply does to a node's units once its files are known (pure logic, no I/O).

A phase's desired state names its systemd units in start order, each with a wanted state and the paths
whose change restarts, reloads or try-restarts it. From the paths that changed in this apply and what
``systemctl show`` said of each unit, ``unit_steps`` gives the steps in the order they run: stops and
disables first (in reverse order, so that what starts last stops first), one daemon-reload where a unit
file changed or went, then enables, starts, restarts and reloads in the given order.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# A unit's wanted state: started (and enabled unless it says otherwise), stopped (and disabled unless
# enabled is true), absent (stopped and disabled; its file goes through the state's absent paths), or
# None: neither started nor stopped, only restarted where its paths say so.
STATES = ("started", "stopped", "absent")
ACTIVE = ("active", "activating", "reloading", "deactivating")
ENABLED = ("enabled", "enabled-runtime", "linked", "linked-runtime", "alias", "static", "indirect", "generated")
# How the result and the log name each step (the action plugin prints one line per step).
DONE = {"stop": "stopped", "disable": "disabled", "enable": "enabled", "start": "started",
        "restart": "restarted", "try-restart": "restarted", "reload": "reloaded", "daemon-reload": "reloaded"}


def validate(units, commands, files, absent):
    """Sentences saying what is wrong with the units and commands of a desired state: unknown states, a unit
    given twice, a unit file that the state neither writes nor removes, a command waiting on an unknown unit."""
    problems, names = [], []
    written = set(files)
    for unit in units:
        name = unit.get("name")
        if not name:
            problems.append("a unit has no name")
            continue
        if name in names:
            problems.append("unit %s is given twice" % name)
        names.append(name)
        if unit.get("state") is not None and unit["state"] not in STATES:
            problems.append("unit %s: state must be one of %s (found %r)" % (name, ", ".join(STATES), unit["state"]))
        path = unit.get("file")
        if path and path not in written and path not in absent:
            problems.append("unit %s: its file %s is neither written nor removed by this state" % (name, path))
        if unit.get("state") == "absent" and path and path in written:
            problems.append("unit %s is absent but its file %s is written" % (name, path))
    for command in commands:
        if command.get("unless_started") and command["unless_started"] not in names:
            problems.append("command %s waits on unit %s, which this state does not name"
                            % (command.get("label") or command.get("argv"), command["unless_started"]))
    return problems


def _active(state):
    return (state or {}).get("ActiveState") in ACTIVE


def _enabled(state):
    return (state or {}).get("UnitFileState") in ENABLED


def unit_steps(units, changed_paths, removed_paths, current):
    """The steps for UNITS (their specs, in start order) as ("stop", name), ("disable", name), ("daemon-reload",
    None), ("enable", name), ("start", name), ("restart", name), ("try-restart", name) or ("reload", name), in the
    order they run (a unit with stop_last stops after the starts). CHANGED_PATHS: the files and directories this apply writes; REMOVED_PATHS: what it removes;
    CURRENT: {unit: its systemctl show properties (LoadState, ActiveState, UnitFileState)} before any step."""
    removed = set(removed_paths)
    # A path that goes is as much a change as one that is written (a removed process spec reloads the container).
    changed = set(changed_paths) | removed
    stops, starts, late = [], [], []
    reload_daemon = False
    for unit in units:
        name, wanted, now = unit["name"], unit.get("state"), current.get(unit["name"])
        path = unit.get("file")
        if path and (path in changed or path in removed):
            reload_daemon = True
        if wanted in ("stopped", "absent"):
            # A unit that keeps protecting the node until what replaces it started (the Ray-only firewall) stops
            # last; it is disabled first all the same, while its file is there to say what to disable.
            if _active(now):
                (late if unit.get("stop_last") else stops).append(("stop", name))
            if _enabled(now) and not (wanted == "stopped" and unit.get("enabled")) and now.get("UnitFileState") != "static":
                stops.append(("disable", name))
            continue
        touched = changed.intersection(unit.get("restart_on") or [])
        if wanted == "started":
            if unit.get("enabled", True) and not _enabled(now):
                starts.append(("enable", name))
            if not _active(now):
                starts.append(("start", name))
            elif unit.get("restart") or touched:
                starts.append(("restart", name))
            elif changed.intersection(unit.get("try_restart_on") or []):
                starts.append(("try-restart", name))
            elif changed.intersection(unit.get("reload_on") or []):
                starts.append(("reload", name))
            continue
        # No wanted state: restarted only where it runs, and only for what its paths say.
        if not _active(now):
            continue
        if unit.get("restart") or touched or changed.intersection(unit.get("try_restart_on") or []):
            starts.append(("try-restart", name))
        elif changed.intersection(unit.get("reload_on") or []):
            starts.append(("reload", name))
    # Stops run in reverse start order: what starts last (serve) stops first.
    stops.sort(key=lambda step: -[u["name"] for u in units].index(step[1]))
    return stops + ([("daemon-reload", None)] if reload_daemon else []) + starts + late


def systemctl_argv(step):
    """The systemctl command of one step (a stop or disable leaves the unit's file where it is)."""
    action, name = step
    if action == "daemon-reload":
        return ["systemctl", "daemon-reload"]
    verb = {"try-restart": "try-reload-or-restart"}.get(action, action)
    return ["systemctl", verb, name]


def commands_due(commands, changed_paths, steps_done):
    """The commands of a desired state that run after the units: those forced (``always``) or whose
    ``on_changed`` paths changed (or went), except those whose ``unless_started`` unit was started or restarted by this
    apply (a container that starts runs every process anew)."""
    changed = set(changed_paths)
    started = set(name for action, name in steps_done if action in ("start", "restart"))
    due = []
    for command in commands:
        if not (command.get("always") or changed.intersection(command.get("on_changed") or [])):
            continue
        if command.get("unless_started") and command["unless_started"] in started:
            continue
        due.append(command)
    return due


def lines(host, result, check_mode):
    """One line per package installed, changed path, removed path, unit step, command and endpoint waited for of an
    apply's RESULT, as the action plugin prints them: what changed, in the order it happened."""
    would = "would be " if check_mode else ""
    out = []
    if result.get("packages"):
        out.append("%s: package %s %sinstalled" % (host, ", ".join(result["packages"]), would))
    if result.get("account"):
        out.append("%s: %s%s" % (host, "; ".join(" ".join(argv) for argv in result["account"]),
                                 " (would be run)" if check_mode else ""))
    for path in result.get("removed_paths") or []:
        out.append("%s: %s %sremoved" % (host, path, would))
    paths = result.get("paths") or {}
    for path in result.get("changed_paths") or []:
        changes = ", ".join(paths.get(path) or ["changed"])
        out.append("%s: %s %s%s" % (host, path, changes, " (would be written)" if check_mode else ""))
    if result.get("hostname"):
        out.append("%s: host name %sset to %s" % (host, would, result["hostname"]))
    for step in result.get("steps") or []:
        if step["action"] == "daemon-reload":
            continue
        out.append("%s: %s %s%s" % (host, step["unit"], would, DONE[step["action"]]))
    for command in result.get("commands") or []:
        out.append("%s: %s%s" % (host, command["label"], " (would be asked)" if check_mode else ""))
    for answer in result.get("answers") or []:
        # Only a wait worth telling: an endpoint that answered at once is what a no-op expects.
        if answer["answered"] and answer["attempts"] > 1:
            out.append("%s: %s answered after %.1f s" % (host, answer["label"], answer["seconds"]))
    return out
