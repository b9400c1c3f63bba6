# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every node's host name and the /etc/hosts block that names them all (pure logic)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re


def _first(variables, names, default):
    for name in names:
        if variables.get(name) is not None:
            return str(variables[name])
    return default


def names(nodes):
    """{inventory host: host name} from {host: its variables} (ascend_hostname, default the inventory name)."""
    return dict((host, _first(variables, ("ascend_hostname",), host)) for host, variables in nodes.items())


def problems(hostname_of, valid_name):
    """Sentences for host names given to several hosts, and for names that are not valid host names."""
    found = []
    hosts_of = {}
    for host in sorted(hostname_of):
        hosts_of.setdefault(hostname_of[host], []).append(host)
    for name in sorted(hosts_of):
        if len(hosts_of[name]) > 1:
            found.append("ascend_hostname '%s' is given to several hosts: %s; host names must be unique in the "
                         "cluster" % (name, ", ".join(hosts_of[name])))
    pattern = re.compile(valid_name)
    for host in sorted(hostname_of):
        if not pattern.fullmatch(hostname_of[host]):
            found.append("ascend_hostname on host %s is not a valid host name (found %r)" % (host, hostname_of[host]))
    return found


def address(host, variables):
    """The address other nodes reach the host at: ascend_node_ip, else ansible_host, else its name."""
    return _first(variables, ("ascend_node_ip", "ansible_host"), host)


def etc_hosts_block(nodes):
    """The managed /etc/hosts lines, one per node sorted by inventory name (the order of an inventory's
    groups can change from run to run): address, then host name."""
    hostname_of = names(nodes)
    return "\n".join("%-15s %s" % (address(host, nodes[host]), hostname_of[host]) for host in sorted(nodes))


def with_block(text, marker, block):
    """TEXT (a file's content) with BLOCK between MARKER's BEGIN and END lines, as ansible.builtin.blockinfile
    leaves it: where both markers are there, the lines from the last BEGIN to the last END (either order) replaced;
    otherwise the block added at the end (after a line break where the text lacks its last). BLOCK None removes
    the markers and what is between them (nothing changes where they are not both there). Everything else is
    kept byte for byte, carriage returns included."""
    begin, end = marker.replace("{mark}", "BEGIN"), marker.replace("{mark}", "END")
    lines = (text or "").splitlines(True)
    bare = [line.rstrip("\r\n") for line in lines]
    if block is None:
        wanted = []
        if not (begin in bare and end in bare):
            return text
    else:
        wanted = [begin + "\n"] + [line + "\n" for line in block.splitlines()] + [end + "\n"]
    starts = [index for index, line in enumerate(bare) if line == begin]
    ends = [index for index, line in enumerate(bare) if line == end]
    if starts and ends:
        first, last = sorted((starts[-1], ends[-1]))
        return "".join(lines[:first] + wanted + lines[last + 1:])
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    return "".join(lines + wanted)
