# -*- coding: utf-8 -*-
"""managed_files: what differs between a wanted file and the one on disk, and the --diff that says so."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.ascend.inference.plugins.module_utils.apply import file_diff as mf


def attrs(content=b"A=1\n", mode=0o600, uid=0, gid=0, owner="root", group="root"):
    return {"content": content, "mode": mode, "uid": uid, "gid": gid, "owner": owner, "group": group}


def test_modes_are_octal_text():
    assert mf.parse_mode("0640", "/f") == mf.parse_mode(0o640, "/f") == 0o640
    assert mf.mode_text(0o100644) == "0644"
    with pytest.raises(ValueError, match="/f: mode 'u=rw' is not an octal"):
        mf.parse_mode("u=rw", "/f")
    with pytest.raises(ValueError, match="out of range"):
        mf.parse_mode("77777", "/f")


def test_differences_name_each_attribute():
    assert mf.differences(attrs(), None) == ["created"]
    assert mf.differences(attrs(), attrs()) == []
    assert mf.differences(attrs(b"A=2\n", mode=0o644), attrs()) == ["content", "mode"]
    assert mf.differences(attrs(uid=1, gid=2), attrs()) == ["owner", "group"]
    # A directory has no content to compare.
    assert mf.differences(attrs(content=None), attrs(content=None, mode=0o700)) == ["mode"]


def test_an_account_the_node_lacks_is_a_change():
    assert mf.differences(attrs(gid=None, group="ascend"), attrs()) == ["group"]


def test_the_diff_shows_content_and_attributes():
    entry = mf.diff_entry("/f", attrs(b"A=2\n", mode=0o640), attrs(), ["content", "mode"], "content")
    assert entry == {"before_header": "/f", "after_header": "/f (mode 0600 -> 0640)",
                     "before": "A=1\n", "after": "A=2\n"}


def test_a_new_file_shows_its_attributes():
    entry = mf.diff_entry("/f", attrs(), None, ["created"], "content")
    assert entry["before"] == "" and entry["after"] == "A=1\n"
    assert entry["after_header"] == "/f (mode 0600, owner root, group root)"


@pytest.mark.parametrize("shown, note", [("secret", "secret content"), ("hidden", "(content not shown)")])
def test_secret_and_hidden_content_never_shows(shown, note):
    changed = mf.diff_entry("/s", attrs(b"TOKEN=new\n"), attrs(b"TOKEN=old\n"), ["content"], shown)
    created = mf.diff_entry("/s", attrs(b"TOKEN=new\n"), None, ["created"], shown)
    for entry in (changed, created):
        assert "TOKEN" not in repr(entry)
    assert note in changed["before"] and changed["before"] != changed["after"]
    assert created["before"] == "" and note in created["after"]


def test_attribute_only_changes_are_shown_as_attributes():
    entry = mf.diff_entry("/f", attrs(mode=0o640, group="ascend"), attrs(), ["mode", "group"], "secret")
    assert entry["before"] == {"mode": "0600", "group": "root"}
    assert entry["after"] == {"mode": "0640", "group": "ascend"}


def test_a_new_directory():
    entry = mf.diff_entry("/d", attrs(content=None, mode=0o755), None, ["created"], "content")
    assert entry["before"] == {"state": "absent"}
    assert entry["after"] == {"state": "directory", "mode": "0755", "owner": "root", "group": "root"}
