# -*- coding: utf-8 -*-
"""Host names and the /etc/hosts block (the hostnames role's logic)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.ascend.inference.plugins.module_utils.node import etc_hosts

VALID = r'^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?([.][A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$'


def test_names_default_to_the_inventory_name():
    assert etc_hosts.names({"n1": {}, "n2": {"ascend_hostname": "npu-02"}, "n3": {"ascend_hostname": None}}) == \
        {"n1": "n1", "n2": "npu-02", "n3": "n3"}


def test_duplicates_and_invalid_names_are_each_one_sentence():
    found = etc_hosts.problems({"a": "x", "b": "x", "c": "bad_name", "d": ""}, VALID)
    assert found == ["ascend_hostname 'x' is given to several hosts: a, b; host names must be unique in the cluster",
                     "ascend_hostname on host c is not a valid host name (found 'bad_name')",
                     "ascend_hostname on host d is not a valid host name (found '')"]
    assert etc_hosts.problems({"a": "npu-01.example", "b": "npu-02"}, VALID) == []


def test_the_block_has_one_line_per_node_sorted_with_its_cluster_address():
    block = etc_hosts.etc_hosts_block({
        "n2": {"ascend_node_ip": "192.0.2.12", "ansible_host": "10.0.0.2"},
        "n1": {"ansible_host": "192.0.2.11", "ascend_hostname": "npu-01"},
        "n3": {},
    })
    assert block.splitlines() == ["192.0.2.11      npu-01", "192.0.2.12      n2", "n3              n3"]


def test_a_final_line_break_is_not_part_of_a_valid_name():
    # A regex's $ also matches before a final line break: the whole name must match.
    assert etc_hosts.problems({"a": "npu-01\n"}, VALID) == [
        "ascend_hostname on host a is not a valid host name (found 'npu-01\\n')"]


MARKER = "# {mark} nodes"
BLOCK = "192.0.2.11      npu-01\n192.0.2.12      npu-02"
# What ansible.builtin.blockinfile leaves: the block between its markers, each line ending in a newline.
WRITTEN = "127.0.0.1 localhost\n# BEGIN nodes\n192.0.2.11      npu-01\n192.0.2.12      npu-02\n# END nodes\n"


def test_the_block_is_written_as_blockinfile_writes_it():
    assert etc_hosts.with_block("127.0.0.1 localhost\n", MARKER, BLOCK) == WRITTEN
    # In place: what is around it stays, byte for byte.
    assert etc_hosts.with_block(WRITTEN + "10.0.0.9 other\n", MARKER, BLOCK) == WRITTEN + "10.0.0.9 other\n"
    changed = etc_hosts.with_block(WRITTEN, MARKER, BLOCK.replace("npu-02", "npu-03"))
    assert changed == WRITTEN.replace("npu-02", "npu-03")
    # Written again, the same: nothing to change on the next run.
    assert etc_hosts.with_block(WRITTEN, MARKER, BLOCK) == WRITTEN


def test_a_file_without_its_last_line_break_or_with_carriage_returns_keeps_them():
    assert etc_hosts.with_block("127.0.0.1 localhost", MARKER, BLOCK) == WRITTEN
    crlf = "127.0.0.1 localhost\r\n# BEGIN nodes\r\nold\r\n# END nodes\r\n::1 x\r\n"
    assert etc_hosts.with_block(crlf, MARKER, BLOCK) == (
        "127.0.0.1 localhost\r\n# BEGIN nodes\n192.0.2.11      npu-01\n192.0.2.12      npu-02\n# END nodes\n::1 x\r\n")
    assert etc_hosts.with_block(None, MARKER, BLOCK) == WRITTEN[len("127.0.0.1 localhost\n"):]


def test_the_last_markers_count_as_blockinfile_reads_them():
    # A stray BEGIN before the block: the block between the last markers is replaced, the stray line stays.
    stray = "# BEGIN nodes\nmine\n" + WRITTEN
    assert etc_hosts.with_block(stray, MARKER, BLOCK) == stray
    assert etc_hosts.with_block("a\n# END nodes\nold\n# BEGIN nodes\nb\n", MARKER, BLOCK) == (
        "a\n# BEGIN nodes\n192.0.2.11      npu-01\n192.0.2.12      npu-02\n# END nodes\nb\n")
    # One marker alone: a block of its own at the end, as blockinfile writes it.
    assert etc_hosts.with_block("a\n# BEGIN nodes\n", MARKER, BLOCK) == "a\n# BEGIN nodes\n" + WRITTEN[len(
        "127.0.0.1 localhost\n"):]


def test_a_block_removed_leaves_the_rest_byte_for_byte():
    assert etc_hosts.with_block(WRITTEN + "10.0.0.9 other\n", MARKER, None) == "127.0.0.1 localhost\n10.0.0.9 other\n"
    # Without both markers there is no block: nothing changes.
    assert etc_hosts.with_block("127.0.0.1 localhost\n# BEGIN nodes\nx\n", MARKER, None) == (
        "127.0.0.1 localhost\n# BEGIN nodes\nx\n")
    assert etc_hosts.with_block("", MARKER, None) == ""
