# -*- coding: utf-8 -*-
"""ExecStart= quoting; that systemd reads it back unchanged is tested on a node (molecule/cluster)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import subprocess
import sys

import pytest

from ansible_collections.ascend.inference.plugins.module_utils.runtime.systemd import (
    command_line, environment_file, quote_word)


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


HOSTILE_VALUES = ["plain", "two words", 'q"uote', "back\\slash", "$HOME ${X}", "`id`", "$(id)", "100%", "'", "",
                  " padded ", "ünï ✓"]


def test_environment_file_is_read_back_by_a_posix_shell(tmp_path):
    """What the profile snippet does (set -a; . file); systemd's reading is tested on a node (molecule/cluster)."""
    variables = dict(("V%d" % i, v) for i, v in enumerate(HOSTILE_VALUES))
    path = tmp_path / "probe.env"
    path.write_text(environment_file(variables), encoding="utf-8")
    dump = "import json, os; print(json.dumps([os.environ.get('V' + str(i)) for i in range(%d)]))" % len(HOSTILE_VALUES)
    out = subprocess.run(["sh", "-c", 'set -a; . "$1"; exec "$2" -c "$3"', "sh", str(path), sys.executable, dump],
                         capture_output=True, check=True, env={"PATH": "/usr/bin:/bin"}).stdout
    assert json.loads(out) == HOSTILE_VALUES


def test_environment_file_sorts_names_and_refuses_line_breaks():
    assert environment_file({"B": 2, "A": "x"}) == 'A="x"\nB="2"\n'
    assert environment_file({}) == ""
    with pytest.raises(ValueError, match="line break"):
        environment_file({"A": "x\ny"})
