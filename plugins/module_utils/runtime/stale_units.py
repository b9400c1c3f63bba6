# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which running units started before a file they read last changed (pure logic, no I/O): the replicas a deploy
rolls. Stateless on purpose: a run that stopped between writing a replica's files and restarting it leaves the
replica stale, and the next run finds it so.

A unit's start is systemd's ActiveEnterTimestampMonotonic (microseconds since boot); a file's change its mtime
(seconds since the epoch). The node's clock gives both: the epoch time of the boot is its time now less
/proc/uptime."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# systemctl show's properties for each unit, and the clock and mtimes read beside them.
PROPERTIES = "--property=Id,ActiveState,ActiveEnterTimestampMonotonic"
CLOCK_SCRIPT = 'cut -d" " -f1 /proc/uptime; date +%s.%N; find "$@" -maxdepth 0 -printf "%T@ %p\\n" 2>/dev/null; true'


def read_argvs(units, paths):
    """The two reads: systemctl show of UNITS, then the uptime, the time now and each existing path's mtime."""
    return (["systemctl", "show", PROPERTIES] + list(units),
            ["sh", "-c", CLOCK_SCRIPT, "sh"] + list(paths))


def stale(watched, shown, clock):
    """The names of WATCHED ({name: (unit, [paths])}) whose unit is active and started before one of its paths last
    changed. SHOWN: {unit: properties} (reports.systemctl_units); CLOCK: the second read's output."""
    lines = clock.splitlines()
    try:
        booted = float(lines[1]) - float(lines[0])
    except (IndexError, ValueError):
        return []
    changed = {}
    for line in lines[2:]:
        stamp, _space, path = line.partition(" ")
        try:
            changed[path] = float(stamp)
        except ValueError:
            continue
    found = []
    for name in sorted(watched):
        unit, paths = watched[name]
        props = shown.get(unit) or {}
        if props.get("ActiveState") != "active":
            continue
        try:
            started = booted + int(props.get("ActiveEnterTimestampMonotonic") or 0) / 1e6
        except ValueError:
            continue
        if any(changed.get(path, 0) > started for path in paths):
            found.append(name)
    return found
