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


def block_in_place(text, marker, block):
    """True when TEXT (a file's content) holds BLOCK between MARKER's BEGIN and END lines just as
    ansible.builtin.blockinfile writes it, so that writing it would change nothing. Any doubt answers False
    (blockinfile then runs): no text, no final newline, carriage returns, or not exactly one of each marker."""
    if not text or not text.endswith("\n") or "\r" in text:
        return False
    begin, end = marker.replace("{mark}", "BEGIN"), marker.replace("{mark}", "END")
    lines = text.split("\n")[:-1]
    starts = [index for index, line in enumerate(lines) if line == begin]
    ends = [index for index, line in enumerate(lines) if line == end]
    if len(starts) != 1 or len(ends) != 1:
        return False
    return lines[starts[0]:ends[0] + 1] == [begin] + block.splitlines() + [end]
