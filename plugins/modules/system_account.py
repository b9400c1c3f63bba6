#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: system_account
short_description: The services' system account and its own group, refused where someone else's
version_added: 0.1.0
description:
  - Looks the account and the group up, refuses to take over an account this collection did not create (its
    comment differs) or a group that is not the account's own (another group ID, or members), then creates what is
    missing with C(groupadd --system) and C(useradd --system --no-create-home) and corrects the shell, home and
    group of its own account with C(usermod) - in one round trip per node.
  - A refused node is left as it was.
author:
  - ascend.inference contributors (@ascend-inference)
attributes:
  check_mode:
    description: Says what it would create or change and runs nothing.
    support: full
  diff_mode:
    description: The account's and the group's entries before and after.
    support: full
options:
  user:
    description: The account.
    type: str
    required: true
  group:
    description: Its own group.
    type: str
    required: true
  home:
    description: Its home (not created here; the units create it as their C(StateDirectory=)).
    type: path
    required: true
  shell:
    description: Its shell.
    type: path
    default: /usr/sbin/nologin
  comment:
    description: Its comment (GECOS), which marks the accounts this collection created.
    type: str
    required: true
  node:
    description: The node's inventory name, which a refusal names.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Create the service account
  ascend.inference.system_account:
    user: ascend-inference
    group: ascend-inference
    home: /var/lib/ascend-inference
    comment: ascend.inference services
    node: "{{ inventory_hostname }}"
"""

RETURN = r"""
commands:
  description: The commands run (or, in check mode, that would run), in order.
  returned: always
  type: list
  elements: list
  sample: [[groupadd, --system, ascend-inference], [useradd, --system, --gid, ascend-inference, "..."]]
"""


from ansible.module_utils.basic import AnsibleModule
from ansible_collections.ascend.inference.plugins.module_utils.runtime import service_account


def _lines(user, group, found_user, found_group):
    """The account's and the group's entries as /etc/passwd and /etc/group lines (without the password field)."""
    text = ""
    if found_user:
        text += "%s:%s:%s:%s:%s:%s\n" % (user, found_user["uid"], found_user["gid"], found_user["comment"],
                                         found_user["home"], found_user["shell"])
    if found_group:
        text += "%s:%s:%s\n" % (group, found_group["gid"], ",".join(found_group["members"]))
    return text


def _wanted(params, found_user, found_group):
    """What the commands leave, for a check run's diff ("new" for the IDs groupadd and useradd pick)."""
    gid = found_group["gid"] if found_group else "new"
    account = {"uid": found_user["uid"] if found_user else "new", "gid": gid, "comment": params["comment"],
               "home": params["home"], "shell": params["shell"]}
    return _lines(params["user"], params["group"], account, {"gid": gid, "members": []})


def main():
    module = AnsibleModule(
        argument_spec=dict(
            user=dict(type="str", required=True),
            group=dict(type="str", required=True),
            home=dict(type="path", required=True),
            shell=dict(type="path", default="/usr/sbin/nologin"),
            comment=dict(type="str", required=True),
            node=dict(type="str", required=True),
        ),
        supports_check_mode=True,
    )
    params = module.params
    found_user = service_account.found_user(params["user"])
    found_group = service_account.found_group(params["group"])
    problems = service_account.takeover_problems(params["node"], params["user"], params["group"], params["comment"],
                                                 found_user, found_group)
    if problems:
        module.fail_json(msg=" ".join(problems))
    commands = service_account.account_commands(params["user"], params["group"], params["home"], params["shell"],
                                                params["comment"], found_user, found_group)
    before = _lines(params["user"], params["group"], found_user, found_group)
    if commands and not module.check_mode:
        for argv in commands:
            # From the sbin directories too: a become method such as su may leave them off PATH.
            rc, out, err = module.run_command([module.get_bin_path(argv[0], required=True)] + argv[1:])
            if rc != 0:
                module.fail_json(msg="%s failed (rc %d): %s" % (" ".join(argv), rc, (err or out).strip()),
                                 commands=commands)
    result = {"changed": bool(commands), "commands": commands}
    if module._diff:
        after = (_wanted(params, found_user, found_group) if module.check_mode
                 else _lines(params["user"], params["group"], service_account.found_user(params["user"]),
                             service_account.found_group(params["group"])))
        result["diff"] = {"before": before, "after": after}
    module.exit_json(**result)


if __name__ == "__main__":
    main()
