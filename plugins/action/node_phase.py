# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One phase of one node in one task: its desired state computed here, on the controller, from the plan and the
earlier phases' results (plugin_utils/phases/registry.py names what computes each phase), then applied by node_apply
in one round trip; one line per changed path and per unit step; the phase's result kept as ascend_applied.<phase>
(see plugins/modules/node_phase.py for the options and the result)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import os

from ansible.errors import AnsibleActionFail, AnsibleError
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display
from ansible.utils.hashing import checksum
from ansible_collections.ascend.inference.plugins.module_utils.apply import unit_steps
from ansible_collections.ascend.inference.plugins.plugin_utils.phases import phase
from ansible_collections.ascend.inference.plugins.plugin_utils.phases.node import APPLIED, Node, rendered
from ansible_collections.ascend.inference.plugins.plugin_utils.phases.registry import PHASES

display = Display()

ARGUMENTS = dict(phase=dict(type="str", required=True, choices=sorted(PHASES)),
                 settings=dict(type="dict", default={}))


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(ARGUMENTS)

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        args = self.validate_argument_spec(argument_spec=ARGUMENTS)[1]
        name = args["phase"]
        node = Node(self, task_vars)
        try:
            compute, spec = PHASES[name]
            try:
                wanted = compute(node, phase.settings_of(spec, copy.deepcopy(args["settings"])))
            except phase.Refused as refusal:
                result.update(failed=True, changed=False, msg=str(refusal))
                return result
            for line in wanted.get("notes") or []:
                display.display("%s: %s" % (node.host, line))
            if wanted.get("show"):
                # A report of the whole play (status.yml's table), as it is.
                display.display(wanted["show"])
            record = wanted.get("record")
            if wanted.get("apply") is not None:
                state = dict(rendered(node, wanted["apply"]), node=node.host)
                sources = self._controller_files(state)
                applied = self._execute_module(module_name="ascend.inference.node_apply", module_args=state,
                                               task_vars=task_vars)
                if applied.get("stage") and not applied.get("failed"):
                    # The node lacks a program the controller holds: send it, then apply again (a no-op sends none).
                    for spec in state["files"]:
                        if os.path.normpath(spec["path"]) in applied["stage"]:
                            spec["staged"] = self._send(sources[spec["path"]])
                    applied = self._execute_module(module_name="ascend.inference.node_apply", module_args=state,
                                                   task_vars=task_vars)
                    if applied.get("stage"):
                        applied = dict(applied, failed=True, msg="%s: %s still differ from the controller's after "
                                       "they were sent" % (node.host, ", ".join(applied["stage"])))
                result.update(applied)
                for line in unit_steps.lines(node.host, applied, node.check_mode):
                    display.display(line)
                if applied.get("failed"):
                    return result
                if record is not None:
                    record = dict(record, **phase.summary(applied))
                    if wanted.get("after"):
                        try:
                            after = wanted["after"](applied)
                        except phase.Refused as refusal:
                            result.update(failed=True, msg=str(refusal))
                            return result
                        # A step the phase ran itself after the apply changed the node too.
                        result["changed"] = bool(result.get("changed") or after.pop("changed", False))
                        record.update(after)
            else:
                result["changed"] = bool(wanted.get("changed"))
            result["warnings"] = result.get("warnings", []) + list(wanted.get("warnings") or [])
            # What a phase decides for the role to register (a schedule, where each package goes).
            result.update(wanted.get("result") or {})
            if record is None:
                # A phase run once for the play records nothing: its facts would reach every host.
                return result
            # The run's results so far, with this phase's: a later phase reads them (ascend_applied.<phase>). The
            # probe starts the run's record.
            so_far = {} if wanted.get("fresh") else dict(
                self._templar.template((task_vars.get("ansible_facts") or {}).get(APPLIED)) or {})
            so_far[name] = record
            result["ansible_facts"] = {APPLIED: so_far}
            return result
        finally:
            self._remove_tmp_path(self._connection._shell.tmpdir)

    def _controller_files(self, state):
        """{path on the node: path here} of the files given as {controller_file}, each given its SHA-1 instead."""
        sources = {}
        for spec in state.get("files", []):
            local = spec.pop("controller_file", None)
            if local is None:
                continue
            local = self._controller_file(local)
            spec["checksum"] = checksum(local)
            spec["diff"] = False
            sources[spec["path"]] = local
        return sources

    def _controller_file(self, given):
        """GIVEN as the copy module finds it (a relative path in the role's or the playbook's files/), decrypted
        where it is vaulted; refused, naming it, where it is no readable file."""
        try:
            found = self._loader.get_real_file(self._find_needle("files", given), decrypt=True)
        except AnsibleError as error:
            raise AnsibleActionFail("%s is not a readable file on the controller: %s" % (given, error))
        if checksum(found) is None:
            raise AnsibleActionFail("%s is not a readable file on the controller" % given)
        return found

    def _send(self, given):
        """GIVEN, a file on the controller, copied into this task's temporary directory on the node; the path there."""
        local = self._controller_file(given)
        shell = self._connection._shell
        if shell.tmpdir is None:
            self._make_tmp_path()
        remote = shell.join_path(shell.tmpdir, "sent-" + checksum(local))
        self._transfer_file(local, remote)
        self._fixup_perms2((shell.tmpdir, remote))
        return remote
