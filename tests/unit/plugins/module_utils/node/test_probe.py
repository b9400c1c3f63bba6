# -*- coding: utf-8 -*-
"""Parsers of node_probe: ip -j, ss, cgroups (npu-smi and CANN: test_npu.py, test_cann.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible_collections.ascend.inference.plugins.module_utils.node import probe as parse

IP_JSON = json.dumps([
    {"ifname": "lo", "addr_info": [{"family": "inet", "local": "127.0.0.1"}]},
    {"ifname": "enp1s0", "addr_info": [{"family": "inet", "local": "192.0.2.11"},
                                       {"family": "inet", "local": "192.0.2.99"}]},
    {"ifname": "enp2s0", "addr_info": []},
])

# `ss -ltnpeH` as root in a simulated node (iproute2 6.1): the third socket belongs to a service running
# as another user, whose descriptors root may not read without CAP_SYS_PTRACE; the kernel still gives
# its owner and cgroup. ss prints "uid:" only when it is not 0 (iproute2's misc/ss.c), so the first two,
# root's, have none. The last one is printed without -e (older callers): its owner is unknown.
SS = """LISTEN 0      4096   10.89.251.11:6379  0.0.0.0:*    users:(("gcs_server",pid=812,fd=20)) ino:1 sk:1 cgroup:/system.slice/ascend-ray.service <->
LISTEN 0      128          [::]:22     [::]:*    users:(("sshd",pid=31,fd=4)) ino:2 sk:2 cgroup:/system.slice/ssh.service v6only:1 <->
LISTEN 0      5      0.0.0.0:8000 0.0.0.0:* uid:999 ino:23302266 sk:5cc cgroup:/libpod_parent/libpod-91/system.slice/ascend-serve.service <->
LISTEN 0      128       0.0.0.0:2024  0.0.0.0:*
"""


def test_ipv4_per_interface_with_secondary_addresses():
    assert parse.ipv4_by_interface(IP_JSON) == {
        "lo": ["127.0.0.1"], "enp1s0": ["192.0.2.11", "192.0.2.99"], "enp2s0": []}
    assert parse.ipv4_by_interface("") == {}


def test_only_numbered_davinci_devices():
    assert [parse.davinci_index(name) for name in ("davinci0", "davinci15", "davinci_manager", "davinci1x")] \
        == [0, 15, None, None]


def test_listeners_with_and_without_a_known_process():
    assert parse.listeners(SS) == [
        {"address": "10.89.251.11", "port": 6379, "process": "gcs_server", "pid": 812, "uid": 0,
         "cgroup": "/system.slice/ascend-ray.service"},
        {"address": "[::]", "port": 22, "process": "sshd", "pid": 31, "uid": 0, "cgroup": "/system.slice/ssh.service"},
        {"address": "0.0.0.0", "port": 8000, "process": None, "pid": None, "uid": 999,
         "cgroup": "/libpod_parent/libpod-91/system.slice/ascend-serve.service"},
        {"address": "0.0.0.0", "port": 2024, "process": None, "pid": None, "uid": None, "cgroup": None},
    ]
    assert parse.unit_of_cgroup(parse.listeners(SS)[2]["cgroup"]) == "ascend-serve.service"


def test_unit_is_the_innermost_service_of_the_cgroup():
    nested = "0::/libpod_parent/libpod-abc/system.slice/ascend-ray.service\n"
    assert parse.unit_of_cgroup(nested) == "ascend-ray.service"
    assert parse.unit_of_cgroup("0::/system.slice/ssh.service/sub\n") == "ssh.service"
    assert parse.unit_of_cgroup("0::/user.slice/user-0.slice/session-3.scope\n") is None
    assert parse.unit_of_cgroup(None) is None


@pytest.mark.parametrize("line,expected", [
    ("#!/opt/ascend-inference/venv/bin/python3\n", ("/opt/ascend-inference/venv/bin/python3", None)),
    ("#!/usr/bin/env python3", (None, "python3")),
    ("#!/usr/bin/env -S python3 -u", (None, "python3")),
    ("#! /usr/bin/python3.11 -E", ("/usr/bin/python3.11", None)),
    ("\x7fELF\x02\x01", (None, None)),
    ("#!", (None, None)),
    ("", (None, None)),
])
def test_shebang_interpreter(line, expected):
    assert parse.shebang_interpreter(line) == expected


def test_engine_problems_name_both_versions():
    found = {"program": "/e/bin/vllm-mindspore", "interpreter": "/e/bin/python3", "error": None,
             "versions": {"vllm-mindspore": "0.4.0", "vllm": "0.9.1"}}
    assert parse.engine_problems(found, "vllm-mindspore", "0.5.1", "0.11.0") == [
        "ascend_engine_version is 0.5.1 but the installed vllm-mindspore is 0.4.0: /e/bin/vllm-mindspore "
        "(Python /e/bin/python3)",
        "vllm-mindspore 0.5.1 runs on vLLM 0.11.0 but the installed vLLM is 0.9.1: /e/bin/vllm-mindspore "
        "(Python /e/bin/python3)"]
    assert parse.engine_problems(found, "vllm-mindspore", "0.4.0", "0.9.1") == []
    assert parse.engine_problems(dict(found, error="exit 1"), "vllm-mindspore", "0.4.0", "0.9.1") == [
        "/e/bin/vllm-mindspore (Python /e/bin/python3): cannot read the installed engine's version: exit 1"]
    assert parse.engine_problems({"program": None}, "vllm-mindspore", "0.4.0", "0.9.1") == []


def test_a_process_of_the_engine_container_is_held_by_the_engine_unit():
    # /proc/PID/cgroup of `vllm serve` in the engine container of a simulated node (nested podman 4.3,
    # cgroup v1): the container's scope names its ID, not the unit that runs `podman run`.
    cgroup = ("12:hugetlb:/libpod_parent/libpod-9d6c/container\n"
              "9:name=systemd:/libpod_parent/libpod-9d6c/machine.slice/libpod-ad7543025f39.scope\n")
    assert parse.unit_of_cgroup(cgroup) is None
    assert parse.unit_of_cgroup(cgroup, {"ad7543025f39": "ascend-engine.service"}) == "ascend-engine.service"
    assert parse.unit_of_cgroup(cgroup, {"0000": "ascend-engine.service"}) is None
