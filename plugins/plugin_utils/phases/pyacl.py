# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pyacl phase (host mode): pyACL from the CANN nnrt package, a command rather than a state. One read says
whether this version imports (`import acl` in the Python that runs Ray, with the CANN environment loaded) and whether
every path has the mode the install gives; only where it does not, the package is fetched, extracted and installed,
the modes corrected and the import read again, never in --check. The site-packages directory is recorded for the
node environment's PYTHONPATH (ascend_applied.pyacl.site_packages)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import posixpath
import re

from ansible_collections.ascend.inference.plugins.plugin_utils.phases.phase import Refused

SETTINGS = {"package": "str", "package_remote": "str", "package_url": "str", "package_checksum": "str",
            "install_path": "str", "work_dir": "str", "python": "str", "set_env": "str"}
PACKAGE_NAME = re.compile(r"^Ascend-cann-nnrt_([^_]+)_linux-([^.]+)[.]run$")
# The verify script's exits: 4, this version is not installed; 5, it imports but some path under the install
# directory lacks the mode the install gives (u=rwX,go=rX: 0755 for directories and executables, 0644 for the rest;
# links are left alone), or the directory is missing, is a link, or find says anything on stderr; 3, set_env.sh
# cannot be sourced; anything else, the import's own exit.
NOT_INSTALLED, MODES = 4, 5
# The real acl loads libascendcl.so, found only through the CANN environment: source set_env.sh first, then put
# pyACL first on PYTHONPATH, as node.env does.
VERIFY = ('[ -e "$2/acl" ] || exit 4; '
          '. "$1" >/dev/null 2>&1 || { echo "cannot source $1" >&2; exit 3; }; '
          'PYTHONPATH="$2${PYTHONPATH:+:$PYTHONPATH}" "$3" -c "$4" || exit; '
          '[ -d "$5" ] && [ ! -L "$5" ] && [ -z "$(find "$5" ! -type l '
          '\\( \\( \\( -type d -o -perm /111 \\) ! -perm 755 \\) -o \\( ! -type d ! -perm /111 ! -perm 644 \\) \\) '
          '-print -quit 2>&1)" ] || exit 5')
IMPORT = "import acl; count, ret = acl.rt.get_device_count(); print(count, ret, acl.get_soc_name())"
# Ray and the engine import acl as the service account, but a makeself archive (the .run format) runs its installer
# under umask 077 unless built with --keep-umask, leaving the tree to root alone (so does the nnrt double; what
# Huawei's pyACL leaves is not captured). Links inside the tree keep their targets' modes.
READABLE = "u=rwX,go=rX"


def source(node, settings):
    """(where the package comes from: package, package_remote or package_url, its location, version, architecture),
    refused unless exactly one is set and it names an nnrt package."""
    given = [(kind, settings[kind]) for kind in ("package", "package_remote", "package_url") if settings[kind]]
    name = posixpath.basename(given[0][1]) if given else ""
    match = PACKAGE_NAME.match(name)
    if len(given) != 1 or not match or (settings["package_url"] and not settings["package_checksum"]):
        raise Refused(
            "Set exactly one of pyacl_package (controller path), pyacl_package_remote (node path) or pyacl_package_url "
            "(with pyacl_package_checksum), naming an Ascend-cann-nnrt_<version>_linux-<arch>.run file. Found on host "
            "%s: pyacl_package='%s', pyacl_package_remote='%s', pyacl_package_url='%s', pyacl_package_checksum set: %s."
            % (node.host, settings["package"], settings["package_remote"], settings["package_url"],
               bool(settings["package_checksum"])))
    return given[0][0], given[0][1], match.group(1), match.group(2)


def verify(node, settings, site_packages):
    argv = ["bash", "-c", VERIFY, "verify", settings["set_env"], site_packages, settings["python"], IMPORT,
            settings["install_path"]]
    return node.run("ansible.builtin.command", {"argv": argv})


def step(node, what, module, args):
    """Run MODULE on the node for WHAT; refuse naming the step when it fails."""
    done = node.run(module, args)
    if done.get("failed") or done.get("rc", 0) != 0:
        said = (done.get("stderr") or "") + (done.get("stdout") or "") or done.get("msg") or ""
        code = " (rc %s)" % done["rc"] if "rc" in done else ""
        raise Refused("%s: %s failed%s: %s" % (node.host, what, code, str(said).strip()[-1500:]))
    return done


def install(node, settings, kind, location, version, arch, site_packages):
    """Fetch, extract and install this version (the package, the extracted tree and the install each skipped where
    already there)."""
    work = settings["work_dir"]
    step(node, "creating %s" % work, "ansible.builtin.file",
         {"path": work, "state": "directory", "owner": "root", "group": "root", "mode": "0700"})
    package = location
    if kind != "package_remote":
        package = posixpath.join(work, posixpath.basename(location))
    if kind == "package":
        step(node, "copying %s" % location, "ansible.builtin.copy",
             {"src": node.send(location), "dest": package, "remote_src": True, "mode": "0700"})
    elif kind == "package_url":
        # The file's name only: a URL may carry a token.
        step(node, "downloading %s" % posixpath.basename(location.split("?", 1)[0]), "ansible.builtin.get_url",
             {"url": location, "dest": package, "checksum": settings["package_checksum"], "mode": "0700"})
    extracted = "%s/nnrt-%s" % (work, version)
    # The .run files are shell archives; bash runs them whatever their mode.
    step(node, "extracting %s" % package, "ansible.builtin.command",
         {"argv": ["bash", package, "--noexec", "--extract=" + extracted, "--quiet"],
          "creates": extracted + "/run_package"})
    step(node, "the pyACL installer", "ansible.builtin.command",
         {"argv": ["bash", "%s/run_package/Ascend-pyACL_%s_linux-%s.run" % (extracted, version, arch), "--full",
                   "--install-path=" + settings["install_path"], "--quiet"],
          "creates": site_packages + "/acl"})


def correct_modes(node, settings):
    step(node, "letting every account read %s" % settings["install_path"], "ansible.builtin.file",
         {"path": settings["install_path"], "state": "directory", "recurse": True, "follow": False, "mode": READABLE})


def desired(node, settings):
    """settings: package, package_remote, package_url, package_checksum (one source), install_path, work_dir,
    python (the one that runs Ray and the engine), set_env (CANN's set_env.sh)."""
    kind, location, version, arch = source(node, settings)
    site_packages = "%s/CANN-%s/python/site-packages" % (settings["install_path"], version)
    record = {"version": version, "site_packages": site_packages}
    found = verify(node, settings, site_packages)
    if found["rc"] == 0:
        return {"apply": None, "record": record}
    if found["rc"] not in (NOT_INSTALLED, MODES):
        raise refused(node, settings, version, site_packages, found)
    missing = found["rc"] == NOT_INSTALLED
    if node.check_mode:
        doing = "would be installed" if missing else "would get the modes every account reads it with"
        return {"apply": None, "changed": True, "record": record,
                "notes": ["pyACL %s %s under %s" % (version, doing, settings["install_path"])]}
    if missing:
        install(node, settings, kind, location, version, arch, site_packages)
    correct_modes(node, settings)
    found = verify(node, settings, site_packages)
    if found["rc"] != 0:
        raise refused(node, settings, version, site_packages, found)
    # Where the package came from, by its file's name only (a URL may carry a token).
    name = posixpath.basename(location.split("?", 1)[0])
    done = ("installed (%s)" % {"package": "%s sent from the controller", "package_url": "%s downloaded",
                                "package_remote": "%s on the node"}[kind] % name
            if missing else "given the modes every account reads it with")
    return {"apply": None, "changed": True, "record": record,
            "notes": ["pyACL %s %s under %s" % (version, done, settings["install_path"])]}


def refused(node, settings, version, site_packages, found):
    if found["rc"] == MODES:
        return Refused("pyACL %s on host %s imports, but %s still has a path without the modes every account reads it "
                       "with (u=rwX,go=rX) after they were set, or is missing or a link: %s" % (
                           version, node.host, settings["install_path"],
                           (found.get("stderr") or "").strip() or "find printed nothing"))
    said = ("no %s/acl after the install" % site_packages if found["rc"] == NOT_INSTALLED
            else (found.get("stderr") or found.get("stdout") or "exit %s" % found["rc"]).strip())
    return Refused("pyACL %s does not import with %s on host %s (PYTHONPATH=%s, CANN environment from %s): %s"
                   % (version, settings["python"], node.host, site_packages, settings["set_env"], said))
