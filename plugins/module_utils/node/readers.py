# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading a node's files and tools as the read-only modules do: a failure is a value, never an exception."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import os
import tarfile

from ansible_collections.ascend.inference.plugins.module_utils.node import cann
from ansible_collections.ascend.inference.plugins.module_utils.runtime import container

from ansible_collections.ascend.inference.plugins.module_utils.node.probe import davinci_index


def read(path, newline=None):
    """A text file's content, or None when it cannot be read. NEWLINE as open() takes it: "" keeps
    carriage returns as they are in the file."""
    try:
        with open(path, newline=newline) as handle:
            return handle.read()
    except (IOError, OSError, UnicodeDecodeError):
        return None


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
