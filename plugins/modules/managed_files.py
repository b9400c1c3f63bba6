#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: managed_files
short_description: Write a node's managed files and directories in one step
version_added: "0.1.0"
description:
  - Ensures directories, then files, with the given content, mode, owner and group - the work of one
    M(ansible.builtin.file) or M(ansible.builtin.template) task each, in one round trip.
  - A file whose content changes is written to a temporary file beside it with its final mode and owner
    and renamed over the old one, so no reader sees half a file and a secret is never readable by more
    than its final mode allows. A symbolic link in a file's place (a masked unit) is replaced.
  - Reports which paths changed (RV(changed_paths)), so that a role restarts only what a change needs.
  - Content given in O(secrets) never reaches the output; O(files[].diff=false) keeps a
    file's content out of C(--diff) while its changes are still reported.
author:
  - ascend.inference contributors (@ascend-inference)
attributes:
  action:
    description: An action plugin decides on the controller, from O(probed), whether the node need be
      contacted; otherwise the module runs there.
    support: full
  check_mode:
    description: Reads every path and reports what would change, writes nothing. An owner or group the node
      does not have yet (an account this run creates) counts as a change.
    support: full
  diff_mode:
    description: One entry per changed path - the content before and after (a note instead for secret or
      hidden content), the mode, owner and group that change.
    support: full
options:
  directories:
    description: Directories to create or correct, before any file.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: The directory. Its parent must exist.
        type: path
        required: true
      mode:
        description: Octal mode, for example V('0755') (quote it; an unquoted YAML V(0755) is read as the number it means).
        type: raw
        default: "0755"
      owner:
        description: Owning user of the directory itself; what it holds is left alone.
        type: str
        default: root
      group:
        description: Owning group of the directory itself.
        type: str
        default: root
  files:
    description: Files to write or correct, in order.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: The file. Its directory must exist or be in O(directories).
        type: path
        required: true
      content:
        description:
          - The file's content, written as given (a trailing newline is kept, none is added).
          - Required unless the file's content is secret, that is its path is a key of O(secrets).
        type: str
      mode:
        description: Octal mode, for example V('0600') (quote it; an unquoted YAML V(0600) is read as the number it means).
        type: raw
        required: true
      owner:
        description: Owning user, by name. A number is taken too, but never counts as settled by O(probed).
        type: str
        default: root
      group:
        description: Owning group, by name, or a number as for O(files[].owner).
        type: str
        default: root
      diff:
        description: Whether C(--diff) shows the content (a note replaces it when false).
        type: bool
        default: true
      mount_point:
        description:
          - The file may be a mount point (a container's bind-mounted C(/etc/hostname) or C(/etc/hosts)), which a
            rename cannot replace - where the rename fails so, the content is written into the file itself, as
            M(ansible.builtin.copy) does with C(unsafe_writes), and a reader may see it half written.
        type: bool
        default: false
      validate:
        description:
          - A command that must accept the new content before anything is written, with C(%s) for a
            temporary file holding it, for example V(nft --check --file %s). Run without a shell.
          - Not run in check mode (the program may be installed by the same run).
        type: str
  secrets:
    description:
      - The content of secret files, keyed by path, for the files of O(files) that have no O(files[].content).
        It never reaches the output, C(--diff), a failed O(files[].validate)'s message or the node's journal.
      - A separate option because Ansible masks a secret inside a list of files only where it appears exactly
        as given, and a multi-line secret would be logged with its newlines escaped.
    type: dict
    default: {}
  probed:
    description:
      - What M(ascend.inference.node_probe) read of these paths earlier in the run (its
        RV(ascend.inference.node_probe#module:files), by path), under O(digest_key).
      - Where it shows every directory and file as this task would leave them - type, mode, owner, group, and
        content by its HMAC digest - the task is skipped on the controller and the node is not contacted. Any
        doubt runs the module - a path not read, a link in a file's place, an account given by number, a mode
        that is not octal, no O(digest_key).
      - Only true to the node where nothing between the probe and this task changed these paths.
    type: dict
    default: {}
  digest_key:
    description: The O(ascend.inference.node_probe#module:digest_key) the probe read O(probed) under.
    type: str
notes:
  - Compare M(ansible.builtin.template) with a lookup - C(content) is usually
    C(lookup('ansible.builtin.template', 'name.j2')), rendered on the controller.
"""

EXAMPLES = r"""
- name: Write the node environment, its secrets and the profile snippet
  ascend.inference.managed_files:
    directories:
      - path: /etc/ascend-inference
    files:
      - path: /etc/ascend-inference/node.env
        content: "{{ lookup('ansible.builtin.template', 'node.env.j2') }}"
        mode: "0600"
      - path: /etc/ascend-inference/secrets.env
        mode: "0600"
    secrets:
      /etc/ascend-inference/secrets.env: "{{ lookup('ansible.builtin.template', 'secrets.env.j2') }}"
  register: node_files

- name: Restart Ray when its unit changed
  ansible.builtin.systemd_service:
    name: ascend-ray.service
    state: restarted
    daemon_reload: true
  when: "'/etc/systemd/system/ascend-ray.service' in node_files.changed_paths"
"""

RETURN = r"""
changed_paths:
  description: The directories and files that were (in check mode, would be) created or changed, in order.
  returned: always
  type: list
  elements: str
  sample: [/etc/ascend-inference/node.env]
paths:
  description: Every path given, with what changed - C(created), or some of C(content), C(mode), C(owner),
    C(group); empty when it was right.
  returned: always
  type: dict
  sample: {/etc/ascend-inference: [], /etc/ascend-inference/node.env: [content]}
"""

import errno
import grp
import os
import pwd
import shlex
import stat
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes
from ansible_collections.ascend.inference.plugins.module_utils import managed_files


def account_id(module, kind, name, path):
    """The uid or gid of NAME; None in check mode for one the node does not have yet."""
    try:
        return (pwd.getpwnam(name).pw_uid if kind == "owner" else grp.getgrnam(name).gr_gid)
    except KeyError:
        if name.isdigit():
            return int(name)
        if module.check_mode:
            return None
        module.fail_json(msg="%s: %s %s does not exist on this node" % (path, kind, name))


def wanted(module, spec, content):
    path = spec["path"]
    try:
        mode = managed_files.parse_mode(spec["mode"], path)
    except ValueError as error:
        module.fail_json(msg=str(error))
    return {
        "content": content, "mode": mode, "owner": spec["owner"], "group": spec["group"],
        "mount_point": spec.get("mount_point", False),
        "uid": account_id(module, "owner", spec["owner"], path),
        "gid": account_id(module, "group", spec["group"], path),
    }


def on_disk(module, path, directory):
    """What PATH holds now, or None when it is missing or, for a file, is a link (which it replaces; a
    directory's link is followed, as the file module does)."""
    try:
        info = os.stat(path) if directory else os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(info.st_mode):
        return None
    if directory != stat.S_ISDIR(info.st_mode) or not (directory or stat.S_ISREG(info.st_mode)):
        module.fail_json(msg="%s is not a %s" % (path, "directory" if directory else "regular file"))
    have = {"mode": stat.S_IMODE(info.st_mode), "uid": info.st_uid, "gid": info.st_gid,
            "owner": managed_files.account_name(pwd.getpwuid, info.st_uid),
            "group": managed_files.account_name(grp.getgrgid, info.st_gid)}
    if not directory:
        with open(path, "rb") as handle:
            have["content"] = handle.read()
    return have


def validate(module, spec, content, secret):
    """Run the file's validate command on its new content, in a private temporary file; refuse on failure."""
    handle, temporary = tempfile.mkstemp(prefix="ascend-validate-")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(content)
        argv = [word.replace("%s", temporary) for word in shlex.split(spec["validate"])]
        rc, out, err = module.run_command(argv)
    finally:
        os.unlink(temporary)
    if rc != 0:
        # A validator may quote the line it rejects: never a secret's.
        said = "(output not shown: secret content)" if secret else (err or out).strip()
        module.fail_json(msg="%s: the new content fails %r (exit %d): %s" % (spec["path"], spec["validate"], rc, said))


def set_attributes(path, want, have):
    """Owner, group and mode of an existing path. Narrowed to what both the old and the new mode allow
    before the owner changes (the new group never reads with the old mode); the mode again after the
    owner (chown may clear set-id bits)."""
    if have is not None and (have["uid"], have["gid"]) != (want["uid"], want["gid"]):
        os.chmod(path, have["mode"] & want["mode"])
    os.chown(path, want["uid"], want["gid"])
    os.chmod(path, want["mode"])


def make_directory(path, want, have, changes):
    if "created" in changes:
        os.mkdir(path, 0o700)  # opened up by set_attributes once it has its owner
    set_attributes(path, want, have)


def write_in_place(path, want, have):
    """The content written into the file itself (a mount point keeps its inode), then its attributes."""
    with open(path, "r+b") as stream:
        stream.truncate(0)
        stream.write(want["content"])
        stream.flush()
        os.fsync(stream.fileno())
    set_attributes(path, want, have)


def write_file(module, path, want, have, changes):
    if "created" in changes or "content" in changes:
        directory = os.path.dirname(path)
        context = None
        if module.selinux_enabled():
            context = module.selinux_context(path) if os.path.exists(path) else module.selinux_default_context(path)
        handle, temporary = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path) + ".")
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
                write_in_place(path, want, have)
        finally:
            if os.path.exists(temporary):
                os.unlink(temporary)
        return
    set_attributes(path, want, have)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            directories=dict(type="list", elements="dict", default=[], options=dict(
                path=dict(type="path", required=True),
                mode=dict(type="raw", default="0755"),
                owner=dict(type="str", default="root"), group=dict(type="str", default="root"),
            )),
            files=dict(type="list", elements="dict", default=[], options=dict(
                path=dict(type="path", required=True),
                content=dict(type="str"),
                mode=dict(type="raw", required=True),
                owner=dict(type="str", default="root"), group=dict(type="str", default="root"),
                diff=dict(type="bool", default=True),
                mount_point=dict(type="bool", default=False),
                validate=dict(type="str"),
            )),
            secrets=dict(type="dict", default={}, no_log=True),
            # Read by the action plugin, which does not pass them on.
            probed=dict(type="dict", default={}),
            digest_key=dict(type="str", no_log=True),
        ),
        supports_check_mode=True,
    )
    secrets = dict((os.path.normpath(path), text) for path, text in module.params["secrets"].items())
    entries = [(spec, None, "content") for spec in module.params["directories"]]
    for spec in module.params["files"]:
        path = os.path.normpath(spec["path"])
        secret = path in secrets
        if secret == (spec["content"] is not None):
            module.fail_json(msg="%s: give its content either as content or in secrets, not %s"
                             % (path, "both" if secret else "neither"))
        text = secrets.pop(path) if secret else spec["content"]
        entries.append((spec, to_bytes(text, errors="surrogate_or_strict"),
                        "secret" if secret else ("content" if spec["diff"] else "hidden")))
    if secrets:
        module.fail_json(msg="secrets for paths not in files: %s" % ", ".join(sorted(secrets)))
    # Everything is read and checked before anything is written: a refusal leaves the node as it was.
    paths, todo = {}, []
    for spec, content, shown in entries:
        spec["path"] = path = os.path.normpath(spec["path"])
        directory = content is None
        if not directory and spec.get("validate") and "%s" not in spec["validate"]:
            module.fail_json(msg="%s: validate must name the file to check with %%s: %r" % (path, spec["validate"]))
        if path in paths:
            module.fail_json(msg="%s is given twice" % path)
        want = wanted(module, spec, content)
        have = on_disk(module, path, directory)
        parent = os.path.dirname(path)
        if not (os.path.isdir(parent) or parent in paths):
            module.fail_json(msg="%s: directory %s does not exist" % (path, parent))
        paths[path] = managed_files.differences(want, have)
        if paths[path]:
            todo.append((path, directory, want, have, shown))
            if not (directory or module.check_mode) and spec.get("validate") and set(paths[path]) & {"created", "content"}:
                validate(module, spec, content, shown == "secret")
    changed_paths, diffs = [], []
    for path, directory, want, have, shown in todo:
        changes = paths[path]
        if module._diff:
            diffs.append(managed_files.diff_entry(path, want, have, changes, shown))
        if not module.check_mode:
            try:
                if directory:
                    make_directory(path, want, have, changes)
                else:
                    write_file(module, path, want, have, changes)
            except OSError as error:
                module.fail_json(msg="%s: %s" % (path, error), changed_paths=changed_paths, paths=paths)
        changed_paths.append(path)
    result = dict(changed=bool(changed_paths), changed_paths=changed_paths, paths=paths)
    if diffs:
        result["diff"] = diffs
    module.exit_json(**result)


if __name__ == "__main__":
    main()
