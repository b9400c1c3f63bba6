#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: node_apply
short_description: Apply a node's desired state of one phase in one round trip
version_added: "0.1.0"
description:
  - The remote half of M(ascend.inference.node_phase), which computes a phase's desired state on the controller
    and calls this module once per node. Not meant to be called from a playbook directly.
  - Reads and compares everything first - files, directories, a managed block, paths to remove, the service
    account, the units' states - and refuses before the first write when anything is wrong (a missing parent
    directory, content its validate command rejects, an account this collection did not create, a unit
    that runs as another account).
  - First of all, installs the distribution packages of O(packages) whose program is missing, then runs each of
    O(requires) and refuses when what it printed does not do.
  - Then, in this order - creates the service account; stops and disables units (the last to start first); removes
    paths; writes directories and files (a temporary file beside each, with its final owner and mode, fsync, rename),
    the managed block and the host name; runs one C(systemctl daemon-reload) where a unit file changed or went;
    enables, starts, restarts, try-restarts and reloads units in the given order (a unit may first wait for a TCP
    port, such as a Ray worker for its head); runs the commands due (a process of the engine container restarted
    by its supervisor); checks that no process of a pattern is left; and waits until each of O(answers) answers.
  - A step that fails ends the apply with what was already done (RV(changed_paths), RV(steps)); the next apply
    of the same state converges.
author:
  - ascend.inference contributors (@ascend-inference)
attributes:
  check_mode:
    description: Reads every path and unit and reports what would change and which steps would run; changes nothing.
    support: full
  diff_mode:
    description: One entry per changed path (the content before and after, a note for secret or hidden content,
      the attributes that change).
    support: full
options:
  node:
    description: The node's inventory name, which refusals and failures name.
    type: str
    default: this node
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
        description: Octal mode, for example V('0755').
        type: raw
        default: "0755"
      owner:
        description: Owning user.
        type: str
        default: root
      group:
        description: Owning group.
        type: str
        default: root
      keep:
        description: Created only where missing, with its parents; an existing directory (a mount, say) keeps its owner
          and mode.
        type: bool
        default: false
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
        description: The content, written as given. Required unless the path is a key of O(secrets).
        type: str
      mode:
        description: Octal mode, for example V('0600').
        type: raw
        required: true
      owner:
        description: Owning user, by name (or number).
        type: str
        default: root
      group:
        description: Owning group, by name (or number).
        type: str
        default: root
      diff:
        description: Whether C(--diff) shows the content (a note replaces it when false).
        type: bool
        default: true
      mount_point:
        description: The file may be a bind mount that a rename cannot replace; it is then written in place.
        type: bool
        default: false
      validate:
        description: A command, with C(%s) for a temporary file of the new content, that must accept it before
          anything is written. Not run in check mode. The temporary file of an executable one (a mode with an execute
          bit) is made executable, beside the file.
        type: str
      fix:
        description: What to do when O(files[].validate) refuses the content, said in the refusal.
        type: str
      checksum:
        description:
          - For a file the controller sends (a program), instead of O(files[].content) - the SHA-1 of its content. Where
            the file on the node has another, the apply changes nothing and returns RV(stage) unless
            O(files[].staged) is given.
        type: str
      staged:
        description: Where the controller put the file with O(files[].checksum) on the node, for this apply to move.
        type: path
  secrets:
    description: The content of secret files of O(files), by path. Never shown, in the output, C(--diff) or a message.
    type: dict
    default: {}
  blocks:
    description: A block of lines between two marker lines in a file the state does not own (C(/etc/hosts)), as
      M(ansible.builtin.blockinfile) writes it; the file keeps its owner and mode and is written in place.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: The file, which must exist.
        type: path
        required: true
      marker:
        description: The marker line, with C({mark}) for C(BEGIN) and C(END).
        type: str
        required: true
      block:
        description: The lines between the markers; unset, the markers and what is between them are removed.
        type: str
  absent:
    description: Paths to remove (a directory with what it holds), after the units that use them stopped.
    type: list
    elements: path
    default: []
  sweep:
    description:
      - Files of a directory that only an earlier desired state named (an instance no longer planned), removed as
        O(absent) ones are; found here, so the phase needs no read of its own.
    type: list
    elements: dict
    default: []
    suboptions:
      directory:
        description: The directory; a missing one holds nothing to sweep.
        type: path
        required: true
      pattern:
        description: A Python regular expression a file's name matches whole.
        type: str
        required: true
      keep:
        description: The names to keep (those the desired state names).
        type: list
        elements: str
        default: []
      units:
        description: The files are systemd units, stopped and disabled (as O(units) V(absent) ones) before they go.
        type: bool
        default: false
  account:
    description:
      - The service account and its own group, created before anything is written. An existing account whose
        GECOS field is not O(account.comment), or a group that is not its own or has members, is refused.
    type: dict
    suboptions:
      user:
        description: The account.
        type: str
        required: true
      group:
        description: Its own group.
        type: str
        required: true
      home:
        description: Its home directory (not created).
        type: path
        required: true
      shell:
        description: Its shell.
        type: path
        default: /usr/sbin/nologin
      comment:
        description: Its GECOS field, how the collection knows the account as its own.
        type: str
        required: true
  peers:
    description: Units that must run as the given account where they are installed (Ray and serve change
      accounts together); refused before anything is written otherwise.
    type: list
    elements: dict
    default: []
    suboptions:
      unit:
        description: The unit.
        type: str
        required: true
      user:
        description: The account it must run as (an empty C(User=) is root).
        type: str
        required: true
  hostname:
    description: The host name the node runs under.
    type: dict
    suboptions:
      name:
        description: The name.
        type: str
        required: true
      strategy:
        description: V(file) sets the running name with C(hostname) (C(/etc/hostname) is one of O(files));
          V(systemd) uses C(hostnamectl set-hostname) where the running or static name differs.
        type: str
        choices: [file, systemd]
        default: systemd
  units:
    description: The phase's systemd units, in start order.
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: The unit.
        type: str
        required: true
      file:
        description: Its unit file, one of O(files) or O(absent); a change reloads systemd once.
        type: path
      state:
        description: V(started) (and enabled), V(stopped), V(absent) (stopped and disabled), or none for a unit
          that is only restarted where it runs.
        type: str
        choices: [started, stopped, absent]
      enabled:
        description: With V(started), enable it at boot (V(false) leaves its boot setting as it is); with
          V(stopped), leave it enabled (V(false) disables it).
        type: bool
        default: true
      restart:
        description: Restart it whatever changed (a Ray worker whose head restarted).
        type: bool
        default: false
      restart_on:
        description: Paths whose change restarts it (starts it when stopped).
        type: list
        elements: path
        default: []
      try_restart_on:
        description: Paths whose change restarts it only where it runs.
        type: list
        elements: path
        default: []
      reload_on:
        description: Paths whose change reloads it where it runs and is not restarted.
        type: list
        elements: path
        default: []
      retries:
        description: Further attempts of a reload that fails (a container unit whose main process is still starting).
        type: int
        default: 0
      stop_last:
        description: Stopped (and disabled) after the other units started, not before - a unit that protects the node
          until what replaces it runs (the Ray-only firewall of earlier releases).
        type: bool
        default: false
      wait_for:
        description: A TCP port to wait for before the unit starts or restarts (also a restart only where it runs);
          the apply goes on when it does not answer in time and says so in RV(waited).
        type: dict
        suboptions:
          host:
            description: The address.
            type: str
            required: true
          port:
            description: The port.
            type: int
            required: true
          timeout:
            description: Seconds to wait.
            type: int
            default: 300
  commands:
    description: Commands run after the units, in order, where due.
    type: list
    elements: dict
    default: []
    suboptions:
      label:
        description: What it does, as the log says it.
        type: str
        required: true
      argv:
        description: The command.
        type: list
        elements: str
        required: true
      always:
        description: Due whatever changed.
        type: bool
        default: false
      on_changed:
        description: Due when one of these paths changed.
        type: list
        elements: path
        default: []
      unless_started:
        description: Not due when this unit of O(units) was started or restarted by this apply.
        type: str
      wait_for:
        description: A TCP port to wait for first, as for O(units[].wait_for).
        type: dict
        suboptions:
          host:
            description: The address.
            type: str
            required: true
          port:
            description: The port.
            type: int
            required: true
          timeout:
            description: Seconds to wait.
            type: int
            default: 300
      retries:
        description: Further attempts when it fails.
        type: int
        default: 0
      delay:
        description: Seconds between attempts.
        type: int
        default: 2
  packages:
    description: Distribution packages installed (with apt-get, dnf, yum or zypper, whichever is found first) where
      their program is not found on PATH or in the sbin directories - before anything else, in check mode reported
      only.
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: The package.
        type: str
        required: true
      program:
        description: The program it brings, a name or an absolute path.
        type: str
        required: true
  requires:
    description: Programs run after O(packages) and before anything is written; the apply is refused, with
      O(requires[].fix), when one exits non-zero, prints a version below O(requires[].minimum) or lacks a word of
      O(requires[].contains). In check mode, skipped for a program a package would bring.
    type: list
    elements: dict
    default: []
    suboptions:
      argv:
        description: The command; its first word is looked up as O(packages[].program) is.
        type: list
        elements: str
        required: true
      version_pattern:
        description: A Python regular expression whose first group is the version, searched in what it printed.
        type: str
      minimum:
        description: The lowest version accepted, with O(requires[].version_pattern).
        type: str
      contains:
        description: Words it must print.
        type: list
        elements: str
        default: []
      fix:
        description: What the user should do, said in the refusal.
        type: str
        required: true
  answers:
    description: HTTP endpoints that must answer once the units started (and the commands ran), asked from the node
      in order; the apply fails naming the first that did not in time. Not asked in check mode.
    type: list
    elements: dict
    default: []
    suboptions:
      label:
        description: What answers, as the result and a failure name it.
        type: str
        required: true
      url:
        description: The URL (certificates are not checked).
        type: str
        required: true
      status:
        description: The status that counts as an answer.
        type: int
        default: 200
      timeout:
        description: Seconds to keep asking.
        type: int
        default: 60
      delay:
        description: Seconds between attempts.
        type: int
        default: 2
  leftovers:
    description: Processes that must be gone once the units stopped, by C(pgrep --full) pattern; looked for up to
      O(leftovers.attempts) times, then refused naming them.
    type: dict
    suboptions:
      pattern:
        description: The extended regular expression.
        type: str
        required: true
      attempts:
        description: How many looks.
        type: int
        default: 5
      delay:
        description: Seconds between looks.
        type: int
        default: 2
"""

EXAMPLES = r"""
# Called by the node_phase action plugin with the state it computed, for example:
- name: Ray on a worker
  ascend.inference.node_apply:
    directories: [{path: /etc/ascend-inference}]
    files:
      - {path: /etc/ascend-inference/ray.env, content: "RAY_AUTH_MODE=\"token\"\n", mode: "0600"}
      - {path: /etc/systemd/system/ascend-ray.service, content: "[Unit]\n...", mode: "0644"}
    units:
      - name: ascend-ray.service
        file: /etc/systemd/system/ascend-ray.service
        state: started
        restart_on: [/etc/ascend-inference/ray.env, /etc/systemd/system/ascend-ray.service]
        wait_for: {host: 192.0.2.11, port: 6379, timeout: 300}
"""

RETURN = r"""
changed_paths:
  description: The directories and files created or changed, in order (in check mode, that would be).
  returned: always
  type: list
  elements: str
paths:
  description: Every path written, with what changed - C(created), or some of C(content), C(mode), C(owner), C(group).
  returned: always
  type: dict
removed_paths:
  description: The paths removed (or that would be).
  returned: always
  type: list
  elements: str
steps:
  description: The unit steps run (or that would run), in order, each with its unit, action and the time it ended
    (seconds since the epoch on the node).
  returned: always
  type: list
  elements: dict
  sample: [{unit: ascend-ray.service, action: restart, at: 1764842400.12}]
commands:
  description: The commands run, each with its label and the time it ended.
  returned: always
  type: list
  elements: dict
waited:
  description: The TCP ports waited for, by unit - C(host), C(port), C(reached), C(seconds) and C(msg) when not reached.
  returned: always
  type: dict
account:
  description: The commands that created or changed the service account.
  returned: always
  type: list
  elements: list
hostname:
  description: The host name set by this apply, or null.
  returned: always
  type: str
units:
  description: What systemctl said of each unit before the apply (LoadState, ActiveState, UnitFileState, User).
  returned: always
  type: dict
packages:
  description: The packages installed (in check mode, that would be).
  returned: always
  type: list
  elements: str
programs:
  description: The first line each of O(requires) printed, by its command's first word.
  returned: always
  type: dict
answers:
  description: Each of O(answers) - C(label), C(url), C(answered), C(seconds), C(attempts) and C(last) (the status,
    or the error).
  returned: always
  type: list
  elements: dict
stage:
  description: The files of O(files) with a checksum whose content must first be sent; nothing was applied.
  returned: when a file must be sent
  type: list
  elements: str
"""

import hashlib
import os
import re
import socket
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes, to_native
from ansible_collections.ascend.inference.plugins.module_utils.apply import files as apply_files
from ansible_collections.ascend.inference.plugins.module_utils.apply import unit_steps
from ansible_collections.ascend.inference.plugins.module_utils.node import etc_hosts
from ansible_collections.ascend.inference.plugins.module_utils.apply.listening import wait_listening
from ansible_collections.ascend.inference.plugins.module_utils.apply import file_diff
from ansible_collections.ascend.inference.plugins.module_utils.apply import answers as apply_answers
from ansible_collections.ascend.inference.plugins.module_utils.apply import programs
from ansible_collections.ascend.inference.plugins.module_utils.runtime import service_account

UNIT_OPTIONS = dict(
    name=dict(type="str", required=True),
    file=dict(type="path"),
    state=dict(type="str", choices=list(unit_steps.STATES)),
    enabled=dict(type="bool", default=True),
    restart=dict(type="bool", default=False),
    restart_on=dict(type="list", elements="path", default=[]),
    try_restart_on=dict(type="list", elements="path", default=[]),
    reload_on=dict(type="list", elements="path", default=[]),
    retries=dict(type="int", default=0),
    stop_last=dict(type="bool", default=False),
    wait_for=dict(type="dict", options=dict(
        host=dict(type="str", required=True), port=dict(type="int", required=True),
        timeout=dict(type="int", default=300))),
)

ARGUMENT_SPEC = dict(
    node=dict(type="str", default="this node"),
    directories=dict(type="list", elements="dict", default=[], options=dict(
        path=dict(type="path", required=True), mode=dict(type="raw", default="0755"),
        owner=dict(type="str", default="root"), group=dict(type="str", default="root"),
        keep=dict(type="bool", default=False))),
    files=dict(type="list", elements="dict", default=[], options=dict(
        path=dict(type="path", required=True), content=dict(type="str"), mode=dict(type="raw", required=True),
        owner=dict(type="str", default="root"), group=dict(type="str", default="root"),
        diff=dict(type="bool", default=True), mount_point=dict(type="bool", default=False),
        validate=dict(type="str"), fix=dict(type="str"), checksum=dict(type="str"), staged=dict(type="path"))),
    secrets=dict(type="dict", default={}, no_log=True),
    blocks=dict(type="list", elements="dict", default=[], options=dict(
        path=dict(type="path", required=True), marker=dict(type="str", required=True),
        block=dict(type="str"))),
    absent=dict(type="list", elements="path", default=[]),
    sweep=dict(type="list", elements="dict", default=[], options=dict(
        directory=dict(type="path", required=True), pattern=dict(type="str", required=True),
        keep=dict(type="list", elements="str", default=[]), units=dict(type="bool", default=False))),
    account=dict(type="dict", options=dict(
        user=dict(type="str", required=True), group=dict(type="str", required=True),
        home=dict(type="path", required=True), shell=dict(type="path", default="/usr/sbin/nologin"),
        comment=dict(type="str", required=True))),
    peers=dict(type="list", elements="dict", default=[], options=dict(
        unit=dict(type="str", required=True), user=dict(type="str", required=True))),
    hostname=dict(type="dict", options=dict(
        name=dict(type="str", required=True),
        strategy=dict(type="str", choices=["file", "systemd"], default="systemd"))),
    units=dict(type="list", elements="dict", default=[], options=UNIT_OPTIONS),
    commands=dict(type="list", elements="dict", default=[], options=dict(
        label=dict(type="str", required=True), argv=dict(type="list", elements="str", required=True),
        always=dict(type="bool", default=False), on_changed=dict(type="list", elements="path", default=[]),
        unless_started=dict(type="str"), retries=dict(type="int", default=0), delay=dict(type="int", default=2),
        wait_for=UNIT_OPTIONS["wait_for"])),
    leftovers=dict(type="dict", options=dict(
        pattern=dict(type="str", required=True), attempts=dict(type="int", default=5),
        delay=dict(type="int", default=2))),
    packages=dict(type="list", elements="dict", default=[], options=dict(
        name=dict(type="str", required=True), program=dict(type="str", required=True))),
    requires=dict(type="list", elements="dict", default=[], options=dict(
        argv=dict(type="list", elements="str", required=True), version_pattern=dict(type="str"),
        minimum=dict(type="str"), contains=dict(type="list", elements="str", default=[]),
        fix=dict(type="str", required=True))),
    answers=dict(type="list", elements="dict", default=[], options=dict(
        label=dict(type="str", required=True), url=dict(type="str", required=True),
        status=dict(type="int", default=200), timeout=dict(type="int", default=60),
        delay=dict(type="int", default=2))),
)

SHOWN = ("Id", "LoadState", "ActiveState", "UnitFileState", "User")


class Apply(object):
    """One apply: everything read and checked first (read()), then done in order (run())."""

    def __init__(self, module):
        self.module = module
        self.params = module.params
        self.check = module.check_mode
        self.result = dict(changed=False, changed_paths=[], paths={}, removed_paths=[], steps=[], commands=[],
                           waited={}, account=[], hostname=None, units={}, packages=[], programs={}, answers=[])
        self.todo = []
        self.stage = []
        self.account_commands = []
        self.hostname_due = False

    def fail(self, msg):
        self.result["changed"] = changed(self.result)
        self.module.fail_json(msg=msg, **self.result)

    # Reading and checking

    def read(self):
        params = self.params
        self.read_sent()
        self.read_programs()
        self.read_sweeps()
        files = [os.path.normpath(spec["path"]) for spec in params["files"]]
        absent = [os.path.normpath(path) for path in params["absent"]]
        for unit in params["units"]:
            unit["file"] = os.path.normpath(unit["file"]) if unit["file"] else None
            for key in ("restart_on", "try_restart_on", "reload_on"):
                unit[key] = [os.path.normpath(path) for path in unit[key]]
        problems = unit_steps.validate(params["units"], params["commands"], files + [os.path.normpath(
            spec["path"]) for spec in params["directories"]], absent)
        if problems:
            self.fail("; ".join(problems))
        self.absent = [path for path in absent if apply_files.present(path)]
        self.read_units()
        self.read_account()
        account = params["account"]
        # The account and its group exist once the account step ran (in --check, would): files may name them before.
        self.pending = {account["user"], account["group"]} if account and self.account_commands else ()
        self.read_paths()
        self.read_hostname()

    def read_programs(self):
        """The packages whose program is missing, installed first (the checks of files may run their programs); then
        each required program's answer judged."""
        params = self.params
        node = params["node"]
        names = programs.missing(self.module, params["packages"])
        try:
            if names and not self.check:
                programs.install(self.module, names, node)
                still = [package for package in params["packages"]
                         if not programs.found(self.module, package["program"])]
                if still:
                    raise programs.Refused("%s: installing %s did not bring %s: set the role's program variable to "
                                           "where the package puts it" % (node, " ".join(names), ", ".join(
                                               package["program"] for package in still)))
            self.result["packages"] = names
            pending = set(package["program"] for package in params["packages"] if package["name"] in names)
            for requirement in params["requires"]:
                if self.check and requirement["argv"][0] in pending:
                    continue
                if requirement["version_pattern"] and not requirement["minimum"]:
                    raise programs.Refused("%s: requires %s gives version_pattern without minimum"
                                           % (node, requirement["argv"][0]))
                self.result["programs"][requirement["argv"][0]] = programs.check(self.module, requirement, node)
        except programs.Refused as error:
            self.fail(to_native(error))

    def read_sent(self):
        """The content of each file the controller sends; where one must first be sent, nothing is read further or
        done (RV(stage)): the controller sends them, then asks again."""
        self.sent_contents = {}
        for spec in self.params["files"]:
            if not spec["checksum"]:
                continue
            path = os.path.normpath(spec["path"])
            if spec["content"] is not None or path in [os.path.normpath(p) for p in self.params["secrets"]]:
                self.fail("%s: give its content as content, in secrets or by checksum, only one" % path)
            try:
                self.sent_contents[path] = self.sent(spec, path)
            except (apply_files.Refused, OSError) as error:
                self.fail(to_native(error))
        if self.stage:
            self.module.exit_json(changed=False, stage=self.stage)

    def sent(self, spec, path):
        """The content of a file the controller sends (SHA-1 SPEC["checksum"]): the node's own where it matches, the
        staged copy, a stand-in in check mode; None where it must first be sent (RV(stage))."""
        have = apply_files.on_disk(path, False)
        if have is not None and hashlib.sha1(have["content"]).hexdigest() == spec["checksum"]:
            return have["content"]
        if spec["staged"]:
            with open(spec["staged"], "rb") as handle:
                content = handle.read()
            if hashlib.sha1(content).hexdigest() != spec["checksum"]:
                raise apply_files.Refused("%s: the copy sent to %s is not the controller's (SHA-1 differs)"
                                          % (path, spec["staged"]))
            return content
        if self.check:
            return b"(sent by the controller, SHA-1 %s)" % to_bytes(spec["checksum"])
        self.stage.append(path)
        return None

    def read_sweeps(self):
        """Each sweep's files added to the absent paths (and its units, stopped and disabled, to the units)."""
        params = self.params
        named = set(unit["name"] for unit in params["units"])
        for sweep in params["sweep"]:
            directory = sweep["directory"]
            names = sorted(os.listdir(directory)) if os.path.isdir(directory) else []
            for name in names:
                path = os.path.join(directory, name)
                if name in sweep["keep"] or not re.fullmatch(sweep["pattern"], name) or not os.path.isfile(path):
                    continue
                if path not in params["absent"]:
                    params["absent"].append(path)
                if sweep["units"] and name not in named:
                    named.add(name)
                    unit = dict((key, spec.get("default")) for key, spec in UNIT_OPTIONS.items())
                    unit.update(name=name, file=path, state="absent")
                    for key in ("restart_on", "try_restart_on", "reload_on"):
                        unit[key] = []
                    params["units"].append(unit)

    def read_units(self):
        names = [unit["name"] for unit in self.params["units"]]
        names += [peer["unit"] for peer in self.params["peers"] if peer["unit"] not in names]
        if not names:
            return
        rc, out, err = self.module.run_command(["systemctl", "show", "--property=" + ",".join(SHOWN)] + names)
        if rc != 0:
            self.fail("systemctl show %s failed (rc %d): %s" % (" ".join(names), rc, (err or out).strip()))
        self.result["units"] = shown = parse_show(out, names)
        for peer in self.params["peers"]:
            state = shown.get(peer["unit"], {})
            user = state.get("User") or "root"
            if state.get("LoadState") == "loaded" and user != peer["user"]:
                self.fail("%s on host %s runs as %s, but the plan's service account (ascend_service_user) is %s: Ray "
                          "and serve must change accounts in one run (deploy.yml, or --tags ray,serve)."
                          % (peer["unit"], self.params["node"], user, peer["user"]))

    def read_account(self):
        account = self.params["account"]
        if not account:
            return
        found_user = service_account.found_user(account["user"])
        found_group = service_account.found_group(account["group"])
        problems = service_account.takeover_problems(self.params["node"], account["user"], account["group"],
                                                     account["comment"], found_user, found_group)
        if problems:
            self.fail(" ".join(problems))
        self.account_commands = service_account.account_commands(
            account["user"], account["group"], account["home"], account["shell"], account["comment"],
            found_user, found_group)

    def read_paths(self):
        params = self.params
        secrets = dict((os.path.normpath(path), text) for path, text in params["secrets"].items())
        entries = [(spec, None, "content") for spec in params["directories"]]
        for spec in params["files"]:
            path = os.path.normpath(spec["path"])
            if spec["checksum"]:
                entries.append((spec, self.sent_contents[path], "hidden"))
                continue
            secret = path in secrets
            if secret == (spec["content"] is not None):
                self.fail("%s: give its content either as content or in secrets, not %s"
                          % (path, "both" if secret else "neither"))
            text = secrets.pop(path) if secret else spec["content"]
            entries.append((spec, to_bytes(text, errors="surrogate_or_strict"),
                            "secret" if secret else ("content" if spec["diff"] else "hidden")))
        if secrets:
            self.fail("secrets for paths not in files: %s" % ", ".join(sorted(secrets)))
        paths = self.result["paths"]
        try:
            for spec, content, shown in entries:
                spec["path"] = path = os.path.normpath(spec["path"])
                directory = content is None
                if not directory and spec.get("validate") and "%s" not in spec["validate"]:
                    raise apply_files.Refused("%s: validate must name the file to check with %%s: %r"
                                              % (path, spec["validate"]))
                if path in paths:
                    raise apply_files.Refused("%s is given twice" % path)
                want = apply_files.wanted(spec, content, self.pending)
                have = apply_files.on_disk(path, directory)
                if directory and have is not None and spec.get("keep"):
                    want = dict(want, mode=have["mode"], uid=have["uid"], gid=have["gid"])
                parent = os.path.dirname(path)
                # A kept directory (a cache the user names) is made with its parents, as the file module does.
                if not (os.path.isdir(parent) or parent in paths or (directory and spec.get("keep"))):
                    raise apply_files.Refused("%s: directory %s does not exist" % (path, parent))
                paths[path] = file_diff.differences(want, have)
                if paths[path]:
                    self.todo.append((path, directory, want, have, shown))
                    if not (directory or self.check) and spec.get("validate") \
                            and set(paths[path]) & {"created", "content"}:
                        apply_files.validate(self.module.run_command, spec, content, shown == "secret")
            for spec in params["blocks"]:
                self.read_block(spec)
        except (apply_files.Refused, OSError) as error:
            self.fail(to_native(error))

    def read_block(self, spec):
        # As blockinfile does: a link's target is the file edited.
        path = os.path.realpath(spec["path"])
        have = apply_files.on_disk(path, False)
        if have is None and spec["block"] is None:
            return  # nothing to remove
        if have is None:
            raise apply_files.Refused("%s does not exist (a managed block is written only into an existing file)" % path)
        text = have["content"].decode("utf-8", errors="surrogateescape")
        content = to_bytes(etc_hosts.with_block(text, spec["marker"], spec["block"]), errors="surrogateescape")
        want = dict(have, content=content, mount_point=True)
        self.result["paths"][path] = file_diff.differences(want, have)
        if self.result["paths"][path]:
            self.todo.append((path, False, want, have, "content"))

    def read_hostname(self):
        wanted = self.params["hostname"]
        if not wanted:
            return
        running = socket.gethostname()
        static = running
        if wanted["strategy"] == "systemd":
            rc, out, err = self.module.run_command(["hostnamectl", "--static"])
            static = out.strip() if rc == 0 else None
        self.hostname_due = running != wanted["name"] or static != wanted["name"]

    # Doing

    def run(self):
        changed_paths = [entry[0] for entry in self.todo]
        steps = unit_steps.unit_steps(self.params["units"], changed_paths, self.absent, self.result["units"])
        # Before the writes: the stops and disables up to the first start (those of stop_last units come after).
        first = next((index for index, step in enumerate(steps) if step[0] not in ("stop", "disable")), len(steps))
        stops, starts = steps[:first], steps[first:]
        if self.check:
            self.result.update(changed_paths=changed_paths, removed_paths=list(self.absent), account=self.account_commands,
                               hostname=self.params["hostname"]["name"] if self.hostname_due else None,
                               steps=[dict(unit=name, action=action) for action, name in steps])
            self.result["commands"] = [dict(label=c["label"]) for c in unit_steps.commands_due(
                self.params["commands"], changed_paths + self.absent, steps)]
            self.diffs()
            return
        self.run_account()
        self.run_steps(stops)
        for path in self.absent:
            try:
                apply_files.remove(path)
            except OSError as error:
                self.fail("%s: %s" % (path, error))
            self.result["removed_paths"].append(path)
        self.diffs()
        for path, directory, want, have, shown in self.todo:
            try:
                want = apply_files.resolved(want, path)
                if directory:
                    apply_files.make_directory(path, want, have, self.result["paths"][path], with_parents=True)
                else:
                    apply_files.write_file(self.module, path, want, have, self.result["paths"][path])
            except apply_files.Refused as error:
                self.fail(to_native(error))
            except OSError as error:
                self.fail("%s: %s" % (path, error))
            self.result["changed_paths"].append(path)
        self.run_hostname()
        self.run_steps(starts)
        done = [(step["action"], step["unit"]) for step in self.result["steps"]]
        for command in unit_steps.commands_due(self.params["commands"], changed_paths + self.absent, done):
            self.run_command(command)
        if self.params["leftovers"]:
            self.check_leftovers(self.params["leftovers"])
        for endpoint in self.params["answers"]:
            answer = apply_answers.wait_answer(endpoint)
            self.result["answers"].append(answer)
            if not answer["answered"]:
                self.fail("%s: %s (%s) did not answer %d within %d s (%d attempts; last: %s)" % (
                    self.params["node"], endpoint["label"], endpoint["url"], endpoint["status"], endpoint["timeout"],
                    answer["attempts"], answer["last"]))

    def diffs(self):
        if self.module._diff:
            self.result["diff"] = [file_diff.diff_entry(path, want, have, self.result["paths"][path], shown)
                                   for path, directory, want, have, shown in self.todo]

    def run_account(self):
        for argv in self.account_commands:
            # From the sbin directories too: a become method such as su may leave them off PATH.
            rc, out, err = self.module.run_command([self.module.get_bin_path(argv[0], required=True)] + argv[1:])
            if rc != 0:
                self.fail("%s failed (rc %d): %s" % (" ".join(argv), rc, (err or out).strip()))
            self.result["account"].append(argv)

    def run_hostname(self):
        wanted = self.params["hostname"]
        if not self.hostname_due:
            return
        argv = ["hostname", wanted["name"]] if wanted["strategy"] == "file" \
            else ["hostnamectl", "set-hostname", wanted["name"]]
        rc, out, err = self.module.run_command([self.module.get_bin_path(argv[0], required=True)] + argv[1:])
        if rc != 0:
            self.fail("%s failed (rc %d): %s" % (" ".join(argv), rc, (err or out).strip()))
        self.result["hostname"] = wanted["name"]

    def run_steps(self, steps):
        units = dict((unit["name"], unit) for unit in self.params["units"])
        index = 0
        while index < len(steps):
            action, name = steps[index]
            # Consecutive try-restarts in one transaction: a unit that is PartOf= another restarts once.
            group = [name]
            while action == "try-restart" and index + 1 < len(steps) and steps[index + 1][0] == action:
                index += 1
                group.append(steps[index][1])
            index += 1
            unit = units.get(name) or {}
            if action in ("start", "restart", "try-restart") and unit.get("wait_for"):
                self.result["waited"][name] = wait_for(unit["wait_for"])
            attempts = 1 + (unit.get("retries", 0) if action == "reload" else 0)
            argv = unit_steps.systemctl_argv((action, name))[:2] + (group if name else [])
            for attempt in range(attempts):
                rc, out, err = self.module.run_command(argv)
                if rc == 0:
                    break
                if attempt + 1 < attempts:
                    time.sleep(2)
            if rc != 0:
                self.fail("%s failed (rc %d): %s" % (" ".join(argv), rc, (err or out).strip()))
            for unit_name in group:
                self.result["steps"].append(dict(unit=unit_name, action=action, at=round(time.time(), 3)))

    def run_command(self, command):
        if command.get("wait_for"):
            self.result["waited"][command["label"]] = wait_for(command["wait_for"])
        for attempt in range(1 + command["retries"]):
            rc, out, err = self.module.run_command(command["argv"])
            if rc == 0:
                break
            if attempt < command["retries"]:
                time.sleep(command["delay"])
        if rc != 0:
            self.fail("%s: %s failed (rc %d): %s" % (command["label"], " ".join(command["argv"]), rc,
                                                     (err or out).strip()))
        self.result["commands"].append(dict(label=command["label"], at=round(time.time(), 3)))

    def check_leftovers(self, leftovers):
        for attempt in range(leftovers["attempts"]):
            rc, out, err = self.module.run_command(["pgrep", "--list-full", "--full", leftovers["pattern"]])
            if rc not in (0, 1):
                self.fail("pgrep failed (rc %d): %s" % (rc, (err or out).strip()))
            if rc == 1:
                return
            # A stopped container's processes are killed when its main process ends: give the kernel a moment.
            if attempt + 1 < leftovers["attempts"]:
                time.sleep(leftovers["delay"])
        self.fail("%s: still running after the services stopped: %s"
                  % (self.params["node"], "; ".join(out.strip().splitlines())))


def changed(result):
    """Whether the apply changed the node (in check mode, would): a package, a path, the account, the host name, a
    unit, a command."""
    return bool(result["changed_paths"] or result["removed_paths"] or result["account"] or result["hostname"]
                or result["commands"] or result["packages"]
                or any(step["action"] != "daemon-reload" for step in result["steps"]))


def parse_show(text, names):
    """{unit: {property: value}} from `systemctl show` of NAMES (one block per unit, in the order asked)."""
    blocks = text.strip().split("\n\n") if text.strip() else []
    shown = {}
    for name, block in zip(names, blocks):
        properties = dict(line.split("=", 1) for line in block.splitlines() if "=" in line)
        shown[name] = properties
    return shown


def wait_for(target):
    """Until TARGET's port accepts a connection or its timeout passes."""
    start = time.monotonic()
    reached, error = wait_listening(target["host"], target["port"], target["timeout"], poll=1)
    if reached:
        return dict(host=target["host"], port=target["port"], reached=True, seconds=round(time.monotonic() - start, 1))
    return dict(host=target["host"], port=target["port"], reached=False, seconds=target["timeout"],
                msg="Timeout when waiting for %s:%d (%s)" % (target["host"], target["port"], error))


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    apply = Apply(module)
    apply.read()
    apply.run()
    apply.result["changed"] = changed(apply.result)
    module.exit_json(**apply.result)


if __name__ == "__main__":
    main()
