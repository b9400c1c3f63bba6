# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every phase's desired state shares.

A phase computes on the controller: what it wants done is the node_apply options it returns. Where it must first
read the node (a directory listing, the Ray token, a unit's state, /health), it asks through ``node.run``, which
runs a module there in --check too; everything else comes from the plan, its settings and the earlier phases'
records. Three phases are a command rather than a state (model_hub's download, ray_install's pip, pyacl's
installer): they run it through ``node.run`` as well, never in --check.

A phase's ``desired(node, settings)`` returns {"apply": the node_apply options, or None for a phase that only
reads; "record": what it keeps in ascend_applied.<phase> for later phases (None: nothing, for a phase run once
for the play); "warnings", "notes": lines for the log; "show": a report shown as it is; "changed": whether a
phase that applies nothing changed the node; "fresh": the run's record starts again here; "after": a function of
node_apply's result whose answer joins the record (its "changed", a step it ran itself, marks the task changed)}.
Files may be given as {"template": name, "values": {...}}, rendered by the action plugin with plain Jinja, and a
program the controller holds as {"controller_file": path}, sent only where the node's copy differs.
``node`` is the controller's view of one host (plugins/plugin_utils/phases/node.py): host, plan, check_mode,
var(), group(), play_hosts(), applied(), run(), send(), render().
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.module_utils.common.validation import check_type_bool, check_type_int


class Refused(Exception):
    """A desired state that must not be applied, said in one message that names the variable and the host."""


def stepped(result, unit, actions):
    """Whether node_apply's RESULT ran one of ACTIONS (start, restart, reload, ...) on UNIT."""
    return any(step["unit"] == unit and step["action"] in actions for step in result.get("steps") or [])


def seen_absent(node, paths):
    """Whether the preflight's probe of this run looked for every one of PATHS on the node and found none: a phase
    that would only remove them then has nothing to apply (no round trip). Not looked for: False."""
    present = (node.applied("preflight") or {}).get("present") or {}
    return all(path in present and not present[path] for path in paths)


def summary(result):
    """What every phase records of its apply: the paths written and removed, and the unit steps."""
    return {"changed_paths": list(result.get("changed_paths") or []),
            "removed_paths": list(result.get("removed_paths") or []),
            "steps": [dict(step) for step in result.get("steps") or []],
            "commands": [command["label"] for command in result.get("commands") or []],
            # A port waited for before a start (a worker's for its head), which the barrier names where it timed out.
            "waited": dict(result.get("waited") or {})}


def settings_of(spec, given):
    """GIVEN (the role's settings) as SPEC ({name: type}) types them, whatever the templating made of them:
    ansible-core 2.18 renders a null in a dict as "" and may leave a number or a boolean as text. A setting the role
    does not give is None; one SPEC does not name is refused."""
    unknown = sorted(set(given) - set(spec))
    if unknown:
        raise Refused("settings not known to this phase: %s" % ", ".join(unknown))
    typed = {}
    for name, kind in spec.items():
        value = given.get(name)
        if value == "" and kind != "str":
            value = None
        if value is not None:
            try:
                if kind == "bool":
                    value = check_type_bool(value)
                elif kind == "int":
                    value = check_type_int(value)
                elif kind == "str":
                    value = str(value)
                elif kind in ("list", "dict") and not isinstance(value, list if kind == "list" else dict):
                    raise TypeError("%r is not a %s" % (value, kind))
            except (TypeError, ValueError) as error:
                raise Refused("setting %s: %s" % (name, error))
        typed[name] = value
    return typed
