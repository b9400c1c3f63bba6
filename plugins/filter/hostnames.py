# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""hostname_problems / etc_hosts_block / block_in_place: host names checked, and /etc/hosts written, for a
list of hosts.

Both take hostvars and the hosts to cover: the whole cluster, not only the play's
hosts, so that a run with --limit keeps the other nodes' lines."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.ascend.inference.plugins.module_utils import hostnames

WANTED = ("ascend_hostname", "ascend_node_ip", "ansible_host")


def _nodes(hostvars, hosts):
    # hostvars is lazy: read only the variables needed, each templated on access.
    return dict((host, dict((name, hostvars[host][name]) for name in WANTED if name in hostvars[host]))
                for host in hosts)


def hostname_problems(hostvars, hosts, valid_name):
    return hostnames.problems(hostnames.names(_nodes(hostvars, hosts)), valid_name)


def etc_hosts_block(hostvars, hosts):
    return hostnames.etc_hosts_block(_nodes(hostvars, hosts))


def block_in_place(text, marker, block):
    return hostnames.block_in_place(text, marker, block)


class FilterModule(object):
    def filters(self):
        return {"hostname_problems": hostname_problems, "etc_hosts_block": etc_hosts_block,
                "block_in_place": block_in_place}
