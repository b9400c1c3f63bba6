#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: ascend.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: router_server
short_description: Drain a replica at the router, put it back, or read every replica's state
version_added: 0.1.0
description:
  - Talks to the router's runtime API (HAProxy's admin socket, C(/run/ascend-router/admin.sock)) on the router host,
    without socat - C(show stat) to read the replicas' status, C(show servers state BACKEND) their administrative
    state (a drained replica whose checks fail shows V(DOWN) in the first, drained in the second), and
    C(set server BACKEND/SERVER state ...) to change it.
  - A drained replica takes no new request; those in flight finish. The rolling restart of C(playbooks/restart.yml)
    drains each replica, waits until its engine runs no request, restarts it and puts it back (V(ready)).
  - A reload of the router (a changed route) forgets a drain; the collection's restart does not reload it.
author:
  - ascend.inference contributors (@ascend-inference)
options:
  socket:
    description: The router's admin socket (the plan's C(router.socket)).
    type: path
    default: /run/ascend-router/admin.sock
  backend:
    description: The served model's backend (the plan's C(router.backends[].name)); required to change a state.
    type: str
  server:
    description: The replica, named as its instance; required to change a state.
    type: str
  wait:
    description:
      - With V(ready), seconds to wait until the router's health checks find the replica up (V(UP)); past them the
        module fails naming its status. V(0) does not wait. The rolling restart waits, so that the next replica
        is not drained while this one is still down at the router.
    type: int
    default: 0
  state:
    description:
      - V(query) reads every replica's state; V(drain) takes no new request; V(ready) takes requests again (health
        checks decide whether it is up); V(maint) takes none and is not checked.
    type: str
    choices: [query, drain, ready, maint]
    default: query
attributes:
  check_mode:
    description: Reads the states and says whether the replica would change; sends no change and does not wait.
    support: full
  diff_mode:
    description: Not supported.
    support: none
"""

EXAMPLES = r"""
- name: Drain chat-a at the router
  ascend.inference.router_server:
    backend: model-chat-a
    server: chat-a
    state: drain

- name: Every replica's state
  ascend.inference.router_server:
  register: router_replicas
"""

RETURN = r"""
servers:
  description: Every replica of every backend after the change - C(backend), C(server), C(status) (HAProxy's - V(UP),
    V(DOWN), V(DRAIN), V(MAINT), V(UP 1/2) while a check changes its mind, ...), C(sessions) (its connections now).
  returned: always
  type: list
  elements: dict
  sample: [{backend: model-chat-a, server: chat-a, status: DRAIN, sessions: 1}]
before:
  description: The replica's status before the change (with O(server)).
  returned: with O(server)
  type: str
admin_before:
  description: The replica's administrative state before the change - V(READY), V(DRAIN) or V(MAINT) (with O(server)).
  returned: with O(server)
  type: str
"""

import socket
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes, to_text
from ansible_collections.ascend.inference.plugins.module_utils.plan.router import REPLICA_BACKEND_PREFIX

# HAProxy's srv_admin masks (include/haproxy/server-t.h, enum srv_admin): any drain flag, any maintenance flag but the
# configuration's; HAProxy names the state MAINT, else DRAIN, else READY.
ADMIN_DRAIN = 0x18
ADMIN_MAINT = 0x23
ADMIN_WORDS = {"ready": "READY", "drain": "DRAIN", "maint": "MAINT"}


def command(path, line, timeout=10.0):
    """One command of HAProxy's runtime API: HAProxy closes the connection after answering in non-interactive
    mode."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(timeout)
    try:
        conn.connect(path)
        conn.sendall(to_bytes(line + "\n"))
        chunks = []
        while True:
            chunk = conn.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        conn.close()
    return to_text(b"".join(chunks))


def servers(stat):
    """The replicas in `show stat` (CSV, its header a comment line): the servers of the served models' backends,
    without the FRONTEND and BACKEND rows."""
    lines = [line for line in stat.splitlines() if line.strip()]
    if not lines or not lines[0].startswith("# "):
        raise ValueError("not the CSV of show stat: %r" % stat[:200])
    header = lines[0][2:].split(",")
    found = []
    for line in lines[1:]:
        row = dict(zip(header, line.split(",")))
        if row.get("svname") in ("FRONTEND", "BACKEND") or not row["pxname"].startswith(REPLICA_BACKEND_PREFIX):
            continue
        found.append({"backend": row["pxname"], "server": row["svname"], "status": row["status"],
                      "sessions": int(row.get("scur") or 0)})
    return found


def status_of(found, backend, server):
    for entry in found:
        if entry["backend"] == backend and entry["server"] == server:
            return entry["status"]
    return None


def admin_states(text):
    """{server: srv_admin_state} from `show servers state BACKEND`: a format version line, a "# " header, a row per
    server (space-separated)."""
    lines = [line for line in text.splitlines() if line.strip()]
    headers = [index for index, line in enumerate(lines) if line.startswith("# ")]
    if not headers:
        raise ValueError("not the answer of show servers state: %r" % text[:200])
    header = lines[headers[0]][2:].split()
    found = {}
    for line in lines[headers[0] + 1:]:
        row = dict(zip(header, line.split()))
        found[row["srv_name"]] = int(row["srv_admin_state"])
    return found


def admin_word(admin):
    return "MAINT" if admin & ADMIN_MAINT else "DRAIN" if admin & ADMIN_DRAIN else "READY"


def is_state(admin, state):
    """Whether the administrative state ADMIN (srv_admin_state) already is what STATE asks."""
    return admin_word(admin) == ADMIN_WORDS[state]


def main():
    module = AnsibleModule(
        argument_spec=dict(socket=dict(type="path", default="/run/ascend-router/admin.sock"),
                           backend=dict(type="str"), server=dict(type="str"),
                           state=dict(type="str", choices=["query", "drain", "ready", "maint"], default="query"),
                           wait=dict(type="int", default=0)),
        required_if=[("state", "drain", ("backend", "server")), ("state", "ready", ("backend", "server")),
                     ("state", "maint", ("backend", "server"))],
        supports_check_mode=True)
    params = module.params
    try:
        found = servers(command(params["socket"], "show stat"))
    except (OSError, ValueError) as error:
        module.fail_json(msg="the router's admin socket %s: %s" % (params["socket"], error))
    result = {"changed": False, "servers": found}
    if params["state"] == "query":
        module.exit_json(**result)
    backend, server = params["backend"], params["server"]
    before = status_of(found, backend, server)
    if before is None:
        module.fail_json(msg="the router has no replica %s in backend %s (it has: %s)" % (
            server, backend, ", ".join("%s/%s" % (e["backend"], e["server"]) for e in found) or "none"), **result)
    try:
        admin = admin_states(command(params["socket"], "show servers state %s" % backend)).get(server, 0)
    except (OSError, ValueError) as error:
        module.fail_json(msg="the router's admin socket %s: %s" % (params["socket"], error), **result)
    result.update(before=before, admin_before=admin_word(admin))
    if module.check_mode:
        result["changed"] = not is_state(admin, params["state"])
        module.exit_json(**result)
    try:
        if not is_state(admin, params["state"]):
            result["changed"] = True
            answer = command(params["socket"], "set server %s/%s state %s" % (backend, server, params["state"]))
            if answer.strip():
                module.fail_json(msg="the router refused to set %s/%s %s: %s" % (
                    backend, server, params["state"], answer.strip()), **result)
            result["servers"] = servers(command(params["socket"], "show stat"))
        if params["state"] == "ready" and params["wait"] > 0:
            deadline = time.time() + params["wait"]
            while not status_of(result["servers"], backend, server).startswith("UP"):
                if time.time() >= deadline:
                    module.fail_json(msg="replica %s of %s is %s at the router after %d s: its health checks fail "
                                     "(GET /health)" % (server, backend, status_of(result["servers"], backend, server),
                                                        params["wait"]), **result)
                time.sleep(0.5)
                result["servers"] = servers(command(params["socket"], "show stat"))
    except (OSError, ValueError) as error:
        module.fail_json(msg="the router's admin socket %s: %s" % (params["socket"], error), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
