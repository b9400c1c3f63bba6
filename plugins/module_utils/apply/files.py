# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The file half of node_apply on the node: read what a path holds, write a file atomically (a temporary file
beside it with its final owner and mode, fsync, rename), correct attributes, remove what a state no longer
wants. What differs and how --diff shows it is pure logic in apply/file_diff.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import grp
import os
import pwd
import shlex
import shutil
import stat
import tempfile

from ansible_collections.ascend.inference.plugins.module_utils.apply import file_diff


class Refused(Exception):
    """A desired state that cannot be applied as given; raised before anything is written."""


def account_id(kind, name, path, pending):
    """The uid or gid of NAME; None for one the node does not have yet but gets before the writes (PENDING: the
    names of the account this apply creates, or every name in check mode)."""
    try:
        return pwd.getpwnam(name).pw_uid if kind == "owner" else grp.getgrnam(name).gr_gid
    except KeyError:
        if name.isdigit():
            return int(name)
        if pending is True or name in pending:
            return None
        raise Refused("%s: %s %s does not exist on this node" % (path, kind, name))


def resolved(want, path):
    """WANT with the uid and gid of an account created since it was read."""
    if want["uid"] is None or want["gid"] is None:
        want = dict(want, uid=account_id("owner", want["owner"], path, ()),
                    gid=account_id("group", want["group"], path, ()))
    return want


def wanted(spec, content, pending):
    """What SPEC (a directory or file of the state) asks for: content (bytes, None for a directory), mode,
    owner, group and their numbers."""
    path = spec["path"]
    try:
        mode = file_diff.parse_mode(spec["mode"], path)
    except ValueError as error:
        raise Refused(str(error))
    return {
        "content": content, "mode": mode, "owner": spec["owner"], "group": spec["group"],
        "mount_point": spec.get("mount_point", False),
        "uid": account_id("owner", spec["owner"], path, pending),
        "gid": account_id("group", spec["group"], path, pending),
    }


def on_disk(path, directory):
    """What PATH holds now, or None when it is missing or, for a file, is a link (which the apply replaces; a
    directory's link is followed, as the file module does)."""
    try:
        info = os.stat(path) if directory else os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(info.st_mode):
        return None
    if directory != stat.S_ISDIR(info.st_mode) or not (directory or stat.S_ISREG(info.st_mode)):
        raise Refused("%s is not a %s" % (path, "directory" if directory else "regular file"))
    have = {"mode": stat.S_IMODE(info.st_mode), "uid": info.st_uid, "gid": info.st_gid,
            "owner": file_diff.account_name(pwd.getpwuid, info.st_uid),
            "group": file_diff.account_name(grp.getgrgid, info.st_gid)}
    if not directory:
        with open(path, "rb") as handle:
            have["content"] = handle.read()
    return have


def validate(run_command, spec, content, secret):
    """Run the file's validate command on its new content, in a private temporary file; refuse on failure. A program
    (a mode with an execute bit) is checked by running it: its temporary file is executable and beside the file, not
    in a temporary directory that may be mounted noexec."""
    program = bool(file_diff.parse_mode(spec["mode"], spec["path"]) & 0o111)
    directory = os.path.dirname(spec["path"]) if program and os.path.isdir(os.path.dirname(spec["path"])) else None
    handle, temporary = tempfile.mkstemp(prefix=".ascend-validate-", dir=directory)
    try:
        with os.fdopen(handle, "wb") as stream:
            if program:
                os.fchmod(stream.fileno(), 0o700)
            stream.write(content)
        argv = [word.replace("%s", temporary) for word in shlex.split(spec["validate"])]
        try:
            rc, out, err = run_command(argv, handle_exceptions=False)
        except OSError as error:
            # A program built for another architecture: "Exec format error".
            rc, out, err = 126, "", error.strerror or str(error)
    finally:
        os.unlink(temporary)
    if rc != 0:
        # A validator may quote the line it rejects: never a secret's.
        said = "(output not shown: secret content)" if secret else (err or out).strip()
        raise Refused("%s: the new content fails %r (exit %d): %s%s" % (
            spec["path"], spec["validate"], rc, said, (": " + spec["fix"]) if spec.get("fix") else ""))


def set_attributes(path, want, have):
    """Owner, group and mode of an existing path. Narrowed to what both the old and the new mode allow
    before the owner changes (the new group never reads with the old mode); the mode again after the
    owner (chown may clear set-id bits)."""
    if have is not None and (have["uid"], have["gid"]) != (want["uid"], want["gid"]):
        os.chmod(path, have["mode"] & want["mode"])
    os.chown(path, want["uid"], want["gid"])
    os.chmod(path, want["mode"])


def make_directory(path, want, have, changes, with_parents=False):
    if "created" in changes:
        if with_parents and not os.path.isdir(os.path.dirname(path)):
            os.makedirs(os.path.dirname(path), 0o755)
        os.mkdir(path, 0o700)  # opened up by set_attributes once it has its owner
    set_attributes(path, want, have)


def _write_in_place(path, want, have):
    """The content written into the file itself (a mount point keeps its inode), then its attributes."""
    with open(path, "r+b") as stream:
        stream.truncate(0)
        stream.write(want["content"])
        stream.flush()
        os.fsync(stream.fileno())
    set_attributes(path, want, have)


def write_file(module, path, want, have, changes):
    """The file's new content by rename over the old one (in place for a mount point the rename cannot
    replace), or only its attributes."""
    if "created" not in changes and "content" not in changes:
        set_attributes(path, want, have)
        return
    context = None
    if module.selinux_enabled():
        context = module.selinux_context(path) if os.path.exists(path) else module.selinux_default_context(path)
    handle, temporary = tempfile.mkstemp(dir=os.path.dirname(path), prefix="." + os.path.basename(path) + ".")
    try:
        with os.fdopen(handle, "wb") as stream:
            # Owner and mode before the content: a secret is never readable by more than its final mode allows.
            os.fchown(stream.fileno(), want["uid"], want["gid"])
            os.fchmod(stream.fileno(), want["mode"])
            stream.write(want["content"])
            stream.flush()
            os.fsync(stream.fileno())
        if context:
            module.set_context_if_different(temporary, context, False)
        try:
            os.replace(temporary, path)
        except OSError as error:
            # EBUSY: the path is a mount point; EXDEV: a file bind-mounted from another file system.
            if not (want["mount_point"] and error.errno in (errno.EBUSY, errno.EXDEV)):
                raise
            _write_in_place(path, want, have)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


def present(path):
    """Whether anything is at PATH (a dangling link included)."""
    return os.path.lexists(path)


def remove(path):
    """PATH removed, a directory with what it holds; a link itself, never its target."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    else:
        os.unlink(path)
