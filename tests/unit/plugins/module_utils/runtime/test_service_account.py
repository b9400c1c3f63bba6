# -*- coding: utf-8 -*-
"""The service account: its name, the NPU device files' group, what it may read, its unit lines.

Device files as a real Ascend 910 node shows them: `/dev/davinci*`, `davinci_manager`, `devmm_svm`,
`hisi_hdc` all `HwHiAiUser:HwHiAiUser 0660` (vllm-project/vllm-ascend#9490; no capture of `ls -l /dev`
is in hardware-samples). Other ownerships below are the cases the judge must refuse, not captures.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import stat

import pytest

from ansible_collections.ascend.inference.plugins.module_utils.runtime import service_account as sa
from ansible_collections.ascend.inference.plugins.module_utils.plan.planner import PlanError, make_plan

CHAR = stat.S_IFCHR
DIR = stat.S_IFDIR
FILE = stat.S_IFREG


def device(name, group="HwHiAiUser", mode=0o660, owner="HwHiAiUser"):
    return {"path": "/dev/" + name, "owner": owner, "group": group, "mode": CHAR | mode}


NODE_910 = [device("davinci0"), device("davinci1"), device("davinci_manager"), device("devmm_svm"),
            device("hisi_hdc")]


@pytest.mark.parametrize("name", ["ascend-inference", "root", "_svc", "a", "a" * 32, "svc_1-x"])
def test_user_names_accepted(name):
    assert sa.user_problems(name) == []


@pytest.mark.parametrize("name", ["", "Ascend", "1svc", "a" * 33, "svc\n", "svc$(id)", "../x", "svc user",
                                  u"svc\u00e9", None, 7, "-svc"])
def test_user_names_refused(name):
    problems = sa.user_problems(name)
    assert len(problems) == 1 and problems[0].startswith("ascend_service_user must be a user name")


def test_device_group_of_a_910_node():
    assert sa.device_group(NODE_910) == ("HwHiAiUser", [])


def test_no_device_files_no_group():
    # The preflight names missing device files itself.
    assert sa.device_group([]) == (None, [])


def test_root_owned_devices_refused():
    group, problems = sa.device_group([device("davinci0", "root", 0o600, "root"), device("davinci_manager", "root")])
    assert group is None
    assert problems == ["/dev/davinci0 is crw------- root:root: a non-root ascend_service_user cannot open it "
                        "(the Ascend driver gives its device files to its running group, HwHiAiUser by default, "
                        "mode 0660); give the device files that group, or set ascend_service_user: root"]


def test_group_without_write_refused():
    group, problems = sa.device_group([device("davinci0", mode=0o640), device("davinci_manager")])
    assert group is None and "/dev/davinci0 is crw-r----- HwHiAiUser:HwHiAiUser" in problems[0]


def test_mixed_groups_refused():
    group, problems = sa.device_group([device("davinci0"), device("hisi_hdc", "video")])
    assert group is None
    assert "different groups (/dev/davinci0 HwHiAiUser; /dev/hisi_hdc video)" in problems[0]


def entry(path, mode, uid=0, gid=0):
    return {"path": path, "mode": mode, "uid": uid, "gid": gid}


def test_others_may_read_a_world_readable_chain():
    chain = [entry("/", DIR | 0o755), entry("/usr", DIR | 0o755), entry("/usr/set_env.sh", FILE | 0o644)]
    assert sa.denied(chain, None, {1000}) is None


def test_a_closed_directory_is_named():
    # CANN installed by root without --install-for-all: its directories are not open to others.
    chain = [entry("/", DIR | 0o755), entry("/usr/local/Ascend/ascend-toolkit", DIR | 0o750),
             entry("/usr/local/Ascend/ascend-toolkit/set_env.sh", FILE | 0o644)]
    assert sa.denied(chain, None, {1000})["path"] == "/usr/local/Ascend/ascend-toolkit"


def test_group_and_owner_bits_apply():
    chain = [entry("/", DIR | 0o755), entry("/models", DIR | 0o750, gid=1000), entry("/models/m", DIR | 0o700, uid=999)]
    assert sa.denied(chain, 999, {1000}) is None
    assert sa.denied(chain, 998, {1000})["path"] == "/models/m"
    assert sa.denied(chain, 999, {1001})["path"] == "/models"


def test_a_directory_needs_read_and_search_a_file_read():
    assert sa.denied([entry("/m", DIR | 0o744)], None, set())["path"] == "/m"
    assert sa.denied([entry("/m", DIR | 0o755)], None, set()) is None
    assert sa.denied([entry("/f", FILE | 0o600)], None, set())["path"] == "/f"


def test_access_problem_names_the_path_and_the_fix():
    text = sa.access_problem("the model", "/root/models/m", entry("/root", DIR | 0o700))
    assert text == ("ascend_service_user cannot read the model /root/models/m: /root is drwx------ (uid 0, gid 0); "
                    "make it readable for the account (for CANN: install it with --install-for-all), or set "
                    "ascend_service_user: root")


def test_root_units_keep_their_lines():
    assert sa.unit_lines(sa.account("root"), ["HwHiAiUser"]) == []


def test_confined_unit_lines():
    lines = sa.unit_lines(sa.account("ascend-inference"), ["HwHiAiUser"])
    assert lines[:5] == ["User=ascend-inference", "Group=ascend-inference", "SupplementaryGroups=HwHiAiUser",
                         "StateDirectory=ascend-inference", "WorkingDirectory=/var/lib/ascend-inference"]
    assert "PrivateTmp=yes" in lines and "NoNewPrivileges=yes" in lines and "ProtectSystem=full" in lines
    # A device allow-list would shut out /dev/davinci*.
    assert not [line for line in lines if line.startswith(("PrivateDevices", "DevicePolicy", "DeviceAllow",
                                                           "ProtectClock"))]


def test_no_device_group_no_supplementary_groups():
    assert not [line for line in sa.unit_lines(sa.account("svc"), []) if line.startswith("SupplementaryGroups")]


def two_nodes(**extra):
    return [dict(name="h", node_ip="10.0.0.1", head=True, nic="eth0", **extra),
            dict(name="w", node_ip="10.0.0.2", nic="eth0", **extra)]


def test_the_plan_names_the_account_and_each_nodes_device_group():
    result = make_plan({"engine": "vllm-mindspore", "model": "/m"}, two_nodes(device_group="HwHiAiUser"))
    assert result["cluster"]["service"] == {"user": "ascend-inference", "group": "ascend-inference",
                                            "home": "/var/lib/ascend-inference",
                                            "state_directory": "ascend-inference", "confined": True}
    assert [n["service_groups"] for n in result["nodes"].values()] == [["HwHiAiUser"], ["HwHiAiUser"]]


def test_root_is_an_explicit_choice():
    result = make_plan({"engine": "vllm-mindspore", "model": "/m", "service_user": "root"},
                       two_nodes(device_group="HwHiAiUser"))
    assert result["cluster"]["service"]["confined"] is False
    assert [n["service_groups"] for n in result["nodes"].values()] == [[], []]


def test_the_plan_refuses_a_bad_account_name():
    with pytest.raises(PlanError) as caught:
        make_plan({"engine": "vllm-mindspore", "model": "/m", "service_user": "x\n$(id)"}, two_nodes())
    assert [e for e in caught.value.errors if e.startswith("ascend_service_user")]


COMMENT = "ascend.inference services"
OURS = {"uid": 998, "gid": 998, "comment": COMMENT, "home": "/var/lib/ascend-inference", "shell": "/usr/sbin/nologin"}


def test_an_account_or_group_someone_else_made_is_refused_naming_the_host():
    deploy = dict(OURS, uid=1000, comment="Deploy user")
    assert sa.takeover_problems("node1", "deploy", "deploy", COMMENT, deploy, {"gid": 998, "members": []}) == [
        'ascend_service_user deploy is an existing account on host node1 (uid 1000, "Deploy user") that '
        'ascend.inference did not create: name a new account (the service_account role creates it), or set '
        'ascend_service_user: root.']
    # A group of the account's name with a member, and no account: the group is not the account's own.
    assert sa.takeover_problems("node1", "svc", "svc", COMMENT, None, {"gid": 997, "members": ["deploy"]}) == [
        'The group svc exists on host node1 (gid 997, members "deploy") but is not the service account\'s own group: '
        'ascend.inference gives the account a group of its own, which reads the Ray token. Name a new account '
        '(ascend_service_user), remove that group, or set ascend_service_user: root.']
    # Our account with another group ID than the group's.
    assert sa.takeover_problems("n", "svc", "svc", COMMENT, OURS, {"gid": 5, "members": []})
    assert sa.takeover_problems("n", "svc", "svc", COMMENT, OURS, {"gid": 998, "members": []}) == []
    assert sa.takeover_problems("n", "svc", "svc", COMMENT, None, None) == []


def test_only_what_is_missing_or_different_is_changed():
    wanted = ("svc", "svc", "/var/lib/ascend-inference", "/usr/sbin/nologin", COMMENT)
    assert sa.account_commands(*wanted, found_user=None, found_group=None) == [
        ["groupadd", "--system", "svc"],
        ["useradd", "--system", "--gid", "svc", "--shell", "/usr/sbin/nologin", "--home-dir",
         "/var/lib/ascend-inference", "--no-create-home", "--comment", COMMENT, "svc"]]
    assert sa.account_commands(*wanted, found_user=OURS, found_group={"gid": 998, "members": []}) == []
    # Our account whose group was removed, and whose shell was changed by hand.
    assert sa.account_commands(*wanted, found_user=dict(OURS, shell="/bin/bash"), found_group=None) == [
        ["groupadd", "--system", "svc"], ["usermod", "--gid", "svc", "--shell", "/usr/sbin/nologin", "svc"]]
