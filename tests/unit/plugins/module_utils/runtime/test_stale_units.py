# -*- coding: utf-8 -*-
"""Which running replicas run on files older than the node's (runtime/stale_units.py), from what systemctl show and
the clock read print. The systemctl text has the shape `systemctl show --property=...` prints on Debian 12
(systemd 252): one block per unit, NAME=VALUE lines, blocks split by an empty line; ActiveEnterTimestampMonotonic in
microseconds since boot (systemd.exec(5), org.freedesktop.systemd1(5))."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.ascend.inference.plugins.module_utils.plan import reports
from ansible_collections.ascend.inference.plugins.module_utils.runtime import stale_units

SHOWN = reports.systemctl_units(
    "Id=ascend-serve-a.service\nActiveState=active\nActiveEnterTimestampMonotonic=500000000\n\n"
    "Id=ascend-serve-b.service\nActiveState=active\nActiveEnterTimestampMonotonic=900000000\n\n"
    "Id=ascend-serve-c.service\nActiveState=inactive\nActiveEnterTimestampMonotonic=0\n")
WATCHED = {"a": ("ascend-serve-a.service", ["/etc/a.env", "/etc/node-a.env"]),
           "b": ("ascend-serve-b.service", ["/etc/b.env"]),
           "c": ("ascend-serve-c.service", ["/etc/c.env"])}


def clock(mtimes, uptime="1000.00", now="1765000000.000000000"):
    """The second read's output: uptime, the time now, then `find -printf "%T@ %p"` lines."""
    return "%s\n%s\n" % (uptime, now) + "".join("%s %s\n" % (stamp, path) for path, stamp in mtimes.items())


def test_a_running_unit_started_before_a_file_changed_is_stale():
    # Booted at 1764999000: a started at 1764999500, b at 1764999900.
    mtimes = {"/etc/a.env": "1764999400.5", "/etc/node-a.env": "1764999600.25", "/etc/b.env": "1764999899.9",
              "/etc/c.env": "1764999999.0"}
    assert stale_units.stale(WATCHED, SHOWN, clock(mtimes)) == ["a"]
    # c is not running: it starts on its files, nothing to roll.
    assert stale_units.stale(WATCHED, SHOWN, clock(dict(mtimes, **{"/etc/node-a.env": "1764999499"}))) == []


def test_a_missing_file_or_an_unreadable_clock_makes_nothing_stale():
    assert stale_units.stale(WATCHED, SHOWN, clock({})) == []
    assert stale_units.stale(WATCHED, SHOWN, "") == []
    assert stale_units.stale(WATCHED, {}, clock({"/etc/b.env": "1764999999"})) == []


def test_the_reads_name_every_unit_and_path():
    show, read = stale_units.read_argvs(["u.service"], ["/etc/x", "/etc/y"])
    assert show == ["systemctl", "show", "--property=Id,ActiveState,ActiveEnterTimestampMonotonic", "u.service"]
    assert read[:2] == ["sh", "-c"] and read[3:] == ["sh", "/etc/x", "/etc/y"]
