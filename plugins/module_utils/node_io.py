# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading a node's files and tools as the read-only modules do: a failure is a value, never an exception."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import grp
import os
import pwd
import stat
import tarfile

from ansible_collections.ascend.inference.plugins.module_utils import cann
from ansible_collections.ascend.inference.plugins.module_utils import container
from ansible_collections.ascend.inference.plugins.module_utils import managed_files

from ansible_collections.ascend.inference.plugins.module_utils.node_probe import davinci_index


def read(path, newline=None):
    """A text file's content, or None when it cannot be read. NEWLINE as open() takes it: "" keeps
    carriage returns as they are in the file."""
    try:
        with open(path, newline=newline) as handle:
            return handle.read()
    except (IOError, OSError, UnicodeDecodeError):
        return None


def path_state(path, key):
    """What the managed_files module would find at PATH, for managed_files.settled: {type (file, directory,
    link or other), mode, owner, group, and for a file the digest of its content under KEY}; None when
    nothing is there or it cannot be read. A link is not followed (the module replaces a link in a file's place)."""
    try:
        info = os.lstat(path)
        kinds = ((stat.S_ISREG, "file"), (stat.S_ISDIR, "directory"), (stat.S_ISLNK, "link"))
        state = {"type": next((name for test, name in kinds if test(info.st_mode)), "other"),
                 "mode": managed_files.mode_text(info.st_mode),
                 "owner": managed_files.account_name(pwd.getpwuid, info.st_uid),
                 "group": managed_files.account_name(grp.getgrgid, info.st_gid)}
        if state["type"] == "file":
            with open(path, "rb") as handle:
                state["digest"] = managed_files.digest(key, handle.read())
    except (IOError, OSError):
        return None
    return state


def path_states(paths, directories, key):
    """{path: path_state} for each of PATHS, and for each of DIRECTORIES and every entry directly in it."""
    found = dict((path, path_state(path, key)) for path in paths)
    for directory in directories:
        found[directory] = path_state(directory, key)
        try:
            names = os.listdir(directory)
        except (IOError, OSError):
            continue
        for name in names:
            path = os.path.join(directory, name)
            found[path] = path_state(path, key)
    return found


def davinci_devices():
    """(names of every /dev/davinci* file, sorted; the N of every /dev/davinciN, sorted)."""
    names = sorted(os.path.basename(path) for path in glob.glob("/dev/davinci*"))
    return names, sorted(n for n in (davinci_index(name) for name in names) if n is not None)


def run(module, argv):
    """(rc, stdout, stderr); a program that is not there gives rc 127, as in a shell."""
    program = argv[0] if os.path.isabs(argv[0]) else module.get_bin_path(argv[0])
    if not program or not os.path.exists(program):
        return 127, "", "%s: command not found\n" % argv[0]
    return module.run_command([program] + argv[1:])


def image_archive(path):
    """(image ID, tags) of a `podman save` / `docker save` archive, read from its manifest.json without
    unpacking it; raises ValueError naming what is wrong."""
    try:
        with tarfile.open(path) as archive:
            member = archive.extractfile("manifest.json")
            if member is None:
                raise ValueError("no manifest.json")
            return container.archive_image(member.read().decode("utf-8"))
    except (IOError, OSError, KeyError, tarfile.TarError) as exc:
        raise ValueError(str(exc))


def cann_toolkit(home, wanted="auto"):
    """The CANN toolkit the node uses under ``home`` (cann.choose), with its set_env.sh: (toolkit, notes, problems)."""
    found = {}
    for layout in cann.LAYOUTS:
        for pattern in cann.INSTALL_INFO[layout]:
            for path in sorted(glob.glob(os.path.join(home, pattern))):
                toolkit = cann.toolkit(read(path), path, layout, home, os.path.realpath(path))
                if toolkit and toolkit["real_path"] not in [t["real_path"] for t in found.get(layout, [])]:
                    found.setdefault(layout, []).append(toolkit)
    chosen, notes, problems = cann.choose(found, wanted)
    if chosen:
        candidates = cann.set_env_candidates(chosen, home)
        existing = [path for path in candidates if os.path.isfile(path)]
        chosen["set_env"] = existing[0] if existing else None
        if not existing:
            problems.append("CANN %s (%s layout) has no set_env.sh (looked for %s)"
                            % (chosen["version"], chosen["layout"], ", ".join(candidates)))
    return chosen, notes, problems
