# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A node's managed files: what differs between each wanted file (content, mode, owner, group) and the one on
disk, and the --diff entries that say so without showing a secret. Pure; node_apply reads the disk and writes
(module_utils/apply/files.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


SECRET_NOTE = "(secret content, not shown)\n"
HIDDEN_NOTE = "(content not shown)\n"


def mode_text(mode):
    """0o600 -> '0600'."""
    return "%04o" % (mode & 0o7777)


def parse_mode(text, where):
    """'0600' -> 0o600 (a number is taken as it is: YAML reads an unquoted 0600 as 384); a symbolic or
    out-of-range mode is refused, naming WHERE."""
    if isinstance(text, int) and not isinstance(text, bool):
        mode = text
    else:
        try:
            mode = int(str(text), 8)
        except ValueError:
            raise ValueError("%s: mode %r is not an octal number such as '0644'" % (where, text))
    if not 0 <= mode <= 0o7777:
        raise ValueError("%s: mode %r is out of range" % (where, text))
    return mode


def differences(want, have):
    """The attributes that differ, in a fixed order: 'created' alone for a missing file, else some of
    'content', 'mode', 'owner', 'group'. WANT: content (bytes, None for a directory), mode, uid, gid (None:
    an account the node does not have yet, which always differs). HAVE: the same read from disk, or None."""
    if have is None:
        return ["created"]
    changes = []
    if want.get("content") is not None and want["content"] != have.get("content"):
        changes.append("content")
    for key, name in (("mode", "mode"), ("uid", "owner"), ("gid", "group")):
        if want[key] is None or want[key] != have[key]:
            changes.append(name)
    return changes


def diff_entry(path, want, have, changes, shown):
    """One --diff entry for a file or directory whose CHANGES (from differences()) are not empty. A file
    whose content changes (or that is created) shows the content before and after when SHOWN is 'content',
    a note in its place when it is 'secret' or 'hidden', and the attributes that change in its header;
    otherwise the attributes alone (mode, owner, group, as the node names them) before and after."""
    entry = {"before_header": path, "after_header": path}
    created = "created" in changes
    names = [name for name in ("mode", "owner", "group") if created or name in changes]
    if want.get("content") is not None and (created or "content" in changes):
        if shown == "content":
            entry["before"] = "" if created else _text(have["content"])
            entry["after"] = _text(want["content"])
        else:
            note = SECRET_NOTE if shown == "secret" else HIDDEN_NOTE
            entry["before"] = "" if created else note
            entry["after"] = note.replace("(", "(new ", 1) if not created else note
        if names:
            entry["after_header"] = "%s (%s)" % (path, ", ".join(
                "%s %s" % (name, _display(want, name)) if created
                else "%s %s -> %s" % (name, _display(have, name), _display(want, name)) for name in names))
        return entry
    entry["before"] = {"state": "absent"} if created else dict((name, _display(have, name)) for name in names)
    entry["after"] = dict((name, _display(want, name)) for name in names)
    if created:
        entry["after"]["state"] = "directory" if want.get("content") is None else "file"
    return entry


def _display(attrs, name):
    return mode_text(attrs["mode"]) if name == "mode" else str(attrs[name])


def _text(data):
    if data is None:
        return ""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return "(binary content, %d bytes)\n" % len(data)


def account_name(lookup, number):
    """The name pwd.getpwuid or grp.getgrgid (LOOKUP) gives NUMBER, or the number as text when it has none."""
    try:
        return lookup(number)[0]
    except KeyError:
        return str(number)
