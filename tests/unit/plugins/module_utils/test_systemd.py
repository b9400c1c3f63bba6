# -*- coding: utf-8 -*-
"""ExecStart= quoting; that systemd reads it back unchanged is tested on a node (molecule/cluster)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.ascend.inference.plugins.module_utils.systemd import command_line, quote_word


@pytest.mark.parametrize("word,quoted", [
    ("plain", '"plain"'),
    ("two words", '"two words"'),
    ('a"b', '"a\\"b"'),
    ("a\\b", '"a\\\\b"'),
    ("100%", '"100%%"'),
    ("$HOME", '"$$HOME"'),
    ("'", '"\'"'),
    (";", "\\;"),
    ("", '""'),
])
def test_quote_word(word, quoted):
    assert quote_word(word) == quoted


def test_command_line_needs_an_absolute_program_and_no_line_break():
    assert command_line(["/bin/echo", "a b", 1]) == '"/bin/echo" "a b" "1"'
    with pytest.raises(ValueError, match="absolute path"):
        command_line(["echo"])
    with pytest.raises(ValueError, match="line break"):
        command_line(["/bin/echo", "a\nb"])
