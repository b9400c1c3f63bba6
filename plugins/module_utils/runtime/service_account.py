# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Who runs Ray and the engine: the dedicated service account, what it must be able to open on a node,
and the systemd lines that run and confine it.

The NPU device files belong to the driver's running group: ``HwHiAiUser:HwHiAiUser 0660`` for
``/dev/davinci*``, ``davinci_manager``, ``devmm_svm`` and ``hisi_hdc`` on Ascend 910 nodes
(vllm-project/vllm-ascend#9490), the group the driver's ``/etc/ascend_install.info`` names
(``UserGroup=HwHiAiUser``, hardware-samples/ascend_install.info__A800-9000-A2_driver-23.0.rc1__1.txt).
The account is given that group, read from the files themselves rather than assumed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import grp
import pwd
import re
import stat

ROOT = "root"
# The service account's GECOS field: how the collection knows an account as its own (the service_account role's
# service_account_comment says the same).
COMMENT = "ascend.inference services"
# useradd's portable names (lower case, at most 32 characters).
USER_NAME = re.compile(r"[a-z_][a-z0-9_-]{0,31}")
STATE_DIRECTORY = "ascend-inference"
HOME = "/var/lib/" + STATE_DIRECTORY
MANAGEMENT_DEVICES = ("davinci_manager", "devmm_svm", "hisi_hdc")

# systemd sandboxing that leaves the NPU devices, the model, the caches and the network alone.
# Left out on purpose (docs/security.md, "The service account"): PrivateDevices, DevicePolicy/DeviceAllow and
# ProtectClock (a device allow-list would shut out /dev/davinci*), ProtectHome (models and caches
# often live under /home or /root), MemoryDenyWriteExecute (the engines' JIT compilers),
# ProtectKernelTunables (the NPU runtime's use of /sys is not documented).
SANDBOX = (
    "NoNewPrivileges=yes",
    "PrivateTmp=yes",
    "ProtectSystem=full",
    "ProtectKernelModules=yes",
    "ProtectControlGroups=yes",
    "ProtectHostname=yes",
    "RestrictSUIDSGID=yes",
    "RestrictRealtime=yes",
    "LockPersonality=yes",
    "UMask=0027",
)


def user_problems(name):
    """Sentences saying why ``ascend_service_user`` cannot be used."""
    if not isinstance(name, str) or not USER_NAME.fullmatch(name):
        return ["ascend_service_user must be a user name of lower-case letters, digits, '_' and '-', starting "
                "with a letter or '_', at most 32 characters (found %r)" % (name,)]
    return []


def account(user):
    """The plan's ``cluster.service``: who runs the units, their home and whether they are confined."""
    confined = user != ROOT
    return {
        "user": user,
        "group": user if confined else ROOT,
        "home": HOME if confined else "/root",
        "state_directory": STATE_DIRECTORY if confined else None,
        "confined": confined,
    }


def device_group(files):
    """(group name or None, problems) for the NPU device files ``files``: [{path, group, mode}].

    Every file must belong to one group that may read and write it; that group is the one the
    service account joins.
    """
    if not files:
        return None, []
    groups = sorted(set(f["group"] for f in files))
    if len(groups) > 1:
        return None, ["the NPU device files belong to different groups (%s): a non-root ascend_service_user "
                      "needs one group that opens them all; make them one group's, or set "
                      "ascend_service_user: root"
                      % "; ".join("%s %s" % (f["path"], f["group"]) for f in files)]
    closed = [f for f in files if f["mode"] & 0o060 != 0o060]
    if groups[0] in ("root", "0") or closed:
        shown = (closed or files)[0]
        return None, ["%s is %s %s:%s: a non-root ascend_service_user cannot open it (the Ascend driver "
                      "gives its device files to its running group, HwHiAiUser by default, mode 0660); "
                      "give the device files that group, or set ascend_service_user: root"
                      % (shown["path"], stat.filemode(shown["mode"]), shown.get("owner", "?"), shown["group"])]
    return groups[0], []


def may(entry, uid, gids, bits):
    """Whether a user ``uid`` in groups ``gids`` (not root) has the permission ``bits`` (a mask of
    r=4, w=2, x=1) on an inode ``entry``: {mode, uid, gid}."""
    mode = entry["mode"]
    if uid is not None and entry["uid"] == uid:
        granted = (mode >> 6) & 7
    elif entry["gid"] in gids:
        granted = (mode >> 3) & 7
    else:
        granted = mode & 7
    return granted & bits == bits


def denied(chain, uid, gids):
    """The first entry of ``chain`` (the directories from / down to a file, then the file: each
    {path, mode, uid, gid}) that such a user cannot pass (x on a directory) or read (r on the last;
    r and x if that is a directory), or None."""
    for position, entry in enumerate(chain):
        last = position == len(chain) - 1
        directory = stat.S_ISDIR(entry["mode"])
        bits = (4 | (1 if directory else 0)) if last else 1
        if not may(entry, uid, gids, bits):
            return entry
    return None


def access_problem(what, target, entry):
    """The sentence for a path the service account cannot read."""
    return ("ascend_service_user cannot read %s %s: %s is %s (uid %d, gid %d); make it readable for the "
            "account (for CANN: install it with --install-for-all), or set ascend_service_user: root"
            % (what, target, entry["path"], stat.filemode(entry["mode"]), entry["uid"], entry["gid"]))


def unit_lines(service, groups):
    """The [Service] lines that run a unit as the service account, confined; none for root."""
    if not service["confined"]:
        return []
    lines = ["User=%s" % service["user"], "Group=%s" % service["group"]]
    if groups:
        lines.append("SupplementaryGroups=%s" % " ".join(groups))
    lines += ["StateDirectory=%s" % service["state_directory"], "WorkingDirectory=%s" % service["home"]]
    return lines + list(SANDBOX)


def takeover_problems(node, user, group, comment, found_user, found_group):
    """Why the account or its group may not be taken over; [] when both are absent or this collection's.

    ``found_user``: {uid, gid, comment} of an existing account, or None; ``found_group``: {gid, members}, or
    None. The account must carry ``comment`` (an account named by mistake, the deploy user say, must not be
    changed); the group must be the account's own, without members (it reads the Ray token)."""
    if found_user is not None and found_user["comment"] != comment:
        return ['ascend_service_user %s is an existing account on host %s (uid %s, "%s") that ascend.inference did '
                'not create: name a new account (the service_account role creates it), or set ascend_service_user: '
                'root.' % (user, node, found_user["uid"], found_user["comment"])]
    if found_group is not None and (found_user is None or found_group["gid"] != found_user["gid"]
                                    or found_group["members"]):
        return ['The group %s exists on host %s (gid %s, members "%s") but is not the service account\'s own group: '
                'ascend.inference gives the account a group of its own, which reads the Ray token. Name a new account '
                '(ascend_service_user), remove that group, or set ascend_service_user: root.'
                % (group, node, found_group["gid"], ",".join(found_group["members"]))]
    return []


def account_commands(user, group, home, shell, comment, found_user, found_group):
    """The argv lists that make the account and its group as wanted (system, no home created), in order.
    Only for what takeover_problems lets through: an existing group is then the account's own."""
    commands = []
    if found_group is None:
        commands.append(["groupadd", "--system", group])
    if found_user is None:
        commands.append(["useradd", "--system", "--gid", group, "--shell", shell, "--home-dir", home,
                         "--no-create-home", "--comment", comment, user])
        return commands
    change = []
    if found_group is None:  # our account, its group gone: the new group becomes its own
        change += ["--gid", group]
    if found_user["shell"] != shell:
        change += ["--shell", shell]
    if found_user["home"] != home:
        change += ["--home", home]
    if change:
        commands.append(["usermod"] + change + [user])
    return commands


def found_user(name):
    """The account NAME as this node has it ({uid, gid, comment, home, shell}), or None."""
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        return None
    return {"uid": entry.pw_uid, "gid": entry.pw_gid, "comment": entry.pw_gecos, "home": entry.pw_dir,
            "shell": entry.pw_shell}


def found_group(name):
    """The group NAME as this node has it ({gid, members}), or None."""
    try:
        entry = grp.getgrnam(name)
    except KeyError:
        return None
    return {"gid": entry.gr_gid, "members": list(entry.gr_mem)}
