# -*- coding: utf-8 -*-
"""Host names and the /etc/hosts block (the hostnames role's logic)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.ascend.inference.plugins.module_utils import hostnames

VALID = r'^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?([.][A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$'


def test_names_default_to_the_inventory_name():
    assert hostnames.names({"n1": {}, "n2": {"ascend_hostname": "npu-02"}, "n3": {"ascend_hostname": None}}) == \
        {"n1": "n1", "n2": "npu-02", "n3": "n3"}


def test_duplicates_and_invalid_names_are_each_one_sentence():
    found = hostnames.problems({"a": "x", "b": "x", "c": "bad_name", "d": ""}, VALID)
    assert found == ["ascend_hostname 'x' is given to several hosts: a, b; host names must be unique in the cluster",
                     "ascend_hostname on host c is not a valid host name (found 'bad_name')",
                     "ascend_hostname on host d is not a valid host name (found '')"]
    assert hostnames.problems({"a": "npu-01.example", "b": "npu-02"}, VALID) == []


def test_the_block_has_one_line_per_node_sorted_with_its_cluster_address():
    block = hostnames.etc_hosts_block({
        "n2": {"ascend_node_ip": "192.0.2.12", "ansible_host": "10.0.0.2"},
        "n1": {"ansible_host": "192.0.2.11", "ascend_hostname": "npu-01"},
        "n3": {},
    })
    assert block.splitlines() == ["192.0.2.11      npu-01", "192.0.2.12      n2", "n3              n3"]


def test_a_final_line_break_is_not_part_of_a_valid_name():
    # A regex's $ also matches before a final line break: the whole name must match.
    assert hostnames.problems({"a": "npu-01\n"}, VALID) == [
        "ascend_hostname on host a is not a valid host name (found 'npu-01\\n')"]


MARKER = "# {mark} nodes"
BLOCK = "192.0.2.11      npu-01\n192.0.2.12      npu-02"
# What ansible.builtin.blockinfile leaves: the block between its markers, each line ending in a newline.
WRITTEN = "127.0.0.1 localhost\n# BEGIN nodes\n192.0.2.11      npu-01\n192.0.2.12      npu-02\n# END nodes\n"


def test_a_block_is_in_place_only_as_blockinfile_writes_it():
    assert hostnames.block_in_place(WRITTEN, MARKER, BLOCK)
    assert hostnames.block_in_place(WRITTEN + "10.0.0.9 other\n", MARKER, BLOCK)
    assert not hostnames.block_in_place(WRITTEN, MARKER, BLOCK.replace("npu-02", "npu-03"))
    assert not hostnames.block_in_place(WRITTEN, MARKER, BLOCK + "\n192.0.2.13      npu-03")
    assert not hostnames.block_in_place("127.0.0.1 localhost\n", MARKER, BLOCK)  # no block yet
    # Doubts: blockinfile would add a final newline, or which block it rewrites is not plain.
    assert not hostnames.block_in_place(WRITTEN.rstrip("\n"), MARKER, BLOCK)
    assert not hostnames.block_in_place(WRITTEN + WRITTEN, MARKER, BLOCK)
    assert not hostnames.block_in_place(WRITTEN.replace("\n", "\r\n"), MARKER, BLOCK)
    assert not hostnames.block_in_place(None, MARKER, BLOCK)
