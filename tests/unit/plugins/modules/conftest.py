# -*- coding: utf-8 -*-
"""Run a module's main() with given arguments; its exit_json/fail_json raise ModuleExit."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib
import json

import pytest

from ansible.module_utils import basic

try:  # ansible-core >= 2.19
    from ansible.module_utils.testing import patch_module_args
except ImportError:  # ansible-core 2.18
    from unittest import mock

    @contextlib.contextmanager
    def patch_module_args(args):
        with mock.patch.object(basic, "_ANSIBLE_ARGS", json.dumps({"ANSIBLE_MODULE_ARGS": args}).encode()):
            yield


class ModuleExit(Exception):
    """Raised with the result dict; .failed tells fail_json from exit_json."""

    def __init__(self, result, failed):
        super(ModuleExit, self).__init__(result)
        self.result = result
        self.failed = failed


@pytest.fixture
def run_module(monkeypatch):
    """run_module(main, args) -> ModuleExit (never returns normally)."""

    def exit_json(self, **kwargs):
        raise ModuleExit(kwargs, False)

    def fail_json(self, **kwargs):
        raise ModuleExit(kwargs, True)

    monkeypatch.setattr(basic.AnsibleModule, "exit_json", exit_json)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", fail_json)

    def run(main, args):
        with patch_module_args(args):
            with pytest.raises(ModuleExit) as done:
                main()
        return done.value

    return run
