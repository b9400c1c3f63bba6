# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a phase's desired state is computed from, on the controller, for the action plugins that apply
one: the plan, the task's and other hosts' variables, the earlier phases' results (ascend_applied), a
module run on the node, and the role's templates rendered with plain Jinja (computed values only)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import jinja2

from ansible.errors import AnsibleError

# The fact every phase's result is kept under, per host: ascend_applied.<phase>.
APPLIED = "ascend_applied"
# The collection's roles, whose templates and files the phases name as "<role>/<name>".
ROLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))),
                     "roles")
MISSING = object()


class Node(object):
    """One host's view for a phase: ACTION is the running action plugin, TASK_VARS its task variables."""

    def __init__(self, action, task_vars):
        self._action = action
        self._task_vars = task_vars
        self.host = task_vars["inventory_hostname"]
        self.check_mode = bool(action._task.check_mode)

        self._plan = None

    @property
    def plan(self):
        if self._plan is None:
            self._plan = self.var("ascend_plan")
        return self._plan

    def var(self, name, default=MISSING, host=None):
        """A variable of this task (HOST None) or of another host, templated; DEFAULT where it is not set."""
        if host is None or host == self.host:
            value = self._task_vars.get(name, MISSING)
        else:
            hostvars = self._task_vars["hostvars"]
            value = hostvars[host].get(name, MISSING) if host in hostvars else MISSING
        if value is MISSING:
            if default is MISSING:
                raise AnsibleError("%s is not set for host %s" % (name, host or self.host))
            return default
        return self._action._templar.template(value)

    def play_hosts(self):
        return list(self.var("ansible_play_hosts", []))

    def group(self, name):
        return list(self._task_vars.get("groups", {}).get(name, []))

    def applied(self, phase, host=None):
        """What PHASE's apply recorded for HOST (this one by default) in this run, or None."""
        if host is None or host == self.host:
            facts = self._task_vars.get("ansible_facts") or {}
        else:
            hostvars = self._task_vars["hostvars"]
            facts = (hostvars[host].get("ansible_facts") or {}) if host in hostvars else {}
        return (self._action._templar.template(facts.get(APPLIED)) or {}).get(phase)

    def run(self, module, args, checked=False):
        """Run a module on this node: a read the phase needs before it can say what it wants, run in --check too
        (as a task with check_mode: false). A phase that changes the node through it checks check_mode itself, or
        passes CHECKED: the module then runs in the task's own mode (it reports in --check what it would do)."""
        task = self._action._task
        check_mode = task.check_mode
        task.check_mode = check_mode if checked else False
        try:
            return self._action._execute_module(module_name=module, module_args=args, task_vars=self._task_vars)
        finally:
            task.check_mode = check_mode

    def send(self, local):
        """LOCAL, a file on the controller, copied into the task's temporary directory on this node: its path there
        (for a module that moves it, as ansible.builtin.copy with remote_src)."""
        return self._action._send(local)

    def render(self, template, values):
        return render(template, values)


def render(template, values):
    """TEMPLATE ("<role>/<name>" of the role's templates) rendered with VALUES only (plain Jinja: the values are
    computed in Python)."""
    source = _read(template, "templates")
    environment = jinja2.Environment(trim_blocks=True, keep_trailing_newline=True, undefined=jinja2.StrictUndefined,
                                     autoescape=False)
    try:
        return environment.from_string(source).render(dict(values, ansible_managed="Ansible managed"))
    except jinja2.TemplateError as error:
        raise AnsibleError("%s: %s" % (template, error))


def _read(name, kind):
    role, base = name.split("/", 1)
    with open(os.path.join(ROLES, role, kind, base)) as handle:
        return handle.read()


def rendered(node, state):
    """STATE with every file given as {template, values} rendered, or as {source} read from the role's files,
    into its content."""
    for spec in state.get("files", []):
        template = spec.pop("template", None)
        source = spec.pop("source", None)
        if template is not None:
            spec["content"] = node.render(template, spec.pop("values", {}))
        elif source is not None:
            spec["content"] = _read(source, "files")
    for path, value in list(state.get("secrets", {}).items()):
        if not isinstance(value, str):
            state["secrets"][path] = node.render(value["template"], value.get("values", {}))
    return state
