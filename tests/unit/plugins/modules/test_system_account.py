# -*- coding: utf-8 -*-
"""The system_account module with the account database and the commands replaced (no useradd here)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import grp
import pwd

import pytest

from ansible.module_utils import basic
from ansible_collections.ascend.inference.plugins.module_utils.runtime import service_account
from ansible_collections.ascend.inference.plugins.modules import system_account

COMMENT = "ascend.inference services"
ARGS = {"user": "svc", "group": "svc", "home": "/var/lib/ascend-inference", "comment": COMMENT, "node": "node1"}


@pytest.fixture
def accounts(monkeypatch):
    """A passwd and group database that groupadd/useradd/usermod (run_command) change."""
    db = {"users": {}, "groups": {}, "ran": []}

    def getpwnam(name):
        if name not in db["users"]:
            raise KeyError(name)
        u = db["users"][name]
        return pwd.struct_passwd((name, "x", u["uid"], u["gid"], u["comment"], u["home"], u["shell"]))

    def getgrnam(name):
        if name not in db["groups"]:
            raise KeyError(name)
        g = db["groups"][name]
        return grp.struct_group((name, "x", g["gid"], g["members"]))

    def run_command(self, argv, **kwargs):
        db["ran"].append(argv)
        argv = [argv[0].rsplit("/", 1)[-1]] + argv[1:]
        if argv[0] == "groupadd":
            db["groups"][argv[-1]] = {"gid": 990, "members": []}
        elif argv[0] == "useradd":
            valued = [i for i, arg in enumerate(argv) if arg in ("--gid", "--comment", "--home-dir", "--shell")]
            opts = dict((argv[i], argv[i + 1]) for i in valued)
            db["users"][argv[-1]] = {"uid": 990, "gid": db["groups"][opts["--gid"]]["gid"], "comment": opts["--comment"],
                                     "home": opts["--home-dir"], "shell": opts["--shell"]}
        return 0, "", ""

    monkeypatch.setattr(service_account.pwd, "getpwnam", getpwnam)
    monkeypatch.setattr(service_account.grp, "getgrnam", getgrnam)
    monkeypatch.setattr(basic.AnsibleModule, "run_command", run_command)
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", lambda self, name, required=False, opt_dirs=None: "/usr/sbin/" + name)
    return db


def test_creates_the_group_then_the_account_once(run_module, accounts):
    done = run_module(system_account.main, dict(ARGS, _ansible_diff=True))
    assert not done.failed and done.result["changed"]
    assert [argv[0] for argv in accounts["ran"]] == ["/usr/sbin/groupadd", "/usr/sbin/useradd"]
    assert done.result["diff"] == {"before": "", "after": "svc:990:990:%s:/var/lib/ascend-inference:/usr/sbin/nologin\n"
                                                          "svc:990:\n" % COMMENT}
    again = run_module(system_account.main, ARGS)
    assert not again.result["changed"] and again.result["commands"] == [] and len(accounts["ran"]) == 2


def test_check_mode_runs_nothing_and_shows_what_would_be(run_module, accounts):
    done = run_module(system_account.main, dict(ARGS, _ansible_check_mode=True, _ansible_diff=True))
    assert done.result["changed"] and accounts["ran"] == []
    assert done.result["diff"]["after"] == "svc:new:new:%s:/var/lib/ascend-inference:/usr/sbin/nologin\nsvc:new:\n" % COMMENT


def test_someone_elses_account_is_refused_and_left_alone(run_module, accounts):
    accounts["users"]["svc"] = {"uid": 1000, "gid": 1000, "comment": "Deploy user", "home": "/home/svc",
                                "shell": "/bin/sh"}
    done = run_module(system_account.main, ARGS)
    assert done.failed and "ascend_service_user svc is an existing account on host node1" in done.result["msg"]
    assert accounts["ran"] == []
