# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Command lines that systemd reads back exactly as the argv they were made from."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def quote_word(word):
    """One argv element for ExecStart=: double-quoted, with what systemd would otherwise decode escaped.

    systemd splits on whitespace outside quotes, decodes C escapes (a backslash)
    inside quotes too, expands %-specifiers and $VARIABLES, and reads a lone ;
    as the end of a command (systemd.service(5), "Command lines"). Line breaks
    cannot be written at all: the planner refuses control characters.
    """
    word = str(word)
    if "\n" in word or "\r" in word:
        raise ValueError("a command line argument cannot hold a line break: %r" % word)
    if word == ";":
        return "\\;"
    escaped = word.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%").replace("$", "$$")
    return '"%s"' % escaped


def command_line(argv):
    """The ExecStart= value for ``argv``; the program (an absolute path) is quoted too, which systemd
    accepts, prefixes such as ``-`` included (``-"/usr/bin/podman" ...``)."""
    argv = [str(a) for a in argv]
    if not argv or not argv[0].startswith("/"):
        raise ValueError("the program must be an absolute path (found %r)" % (argv[:1],))
    return " ".join([quote_word(argv[0])] + [quote_word(a) for a in argv[1:]])


def environment_value(value):
    """One value for a line of an EnvironmentFile= that a POSIX shell also sources: double-quoted,
    with backslash, double quote, $ and backquote escaped (both read these escapes back)."""
    value = str(value)
    if "\n" in value or "\r" in value:
        raise ValueError("an environment value cannot hold a line break")
    for char in ("\\", '"', "$", "`"):
        value = value.replace(char, "\\" + char)
    return '"%s"' % value


def environment_file(variables):
    """NAME="value" lines, sorted by name, for a mapping of environment variables."""
    return "".join("%s=%s\n" % (name, environment_value(variables[name])) for name in sorted(variables))
