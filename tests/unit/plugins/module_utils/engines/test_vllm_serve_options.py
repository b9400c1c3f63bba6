# -*- coding: utf-8 -*-
"""Each vLLM option table the planner validates against, checked against that release's real `serve` help.

The captures in tests/vllm_help come from vLLM's own parser (tools/regenerate_vllm_tables.sh runs
tools/extract_vllm_serve_options.py on each release's wheel); the reader there parses them without the tables.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import argparse
import contextlib
import io
import os
import re

import pytest

from ansible_collections.ascend.inference.plugins.module_utils.engines.option_tables import OPTION_TABLES

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "..")

# vLLM gives this option a metavar that lists the modules alone, while its
# parser also takes two of them joined by a comma ("model,worker").
COMMA_JOINED_CHOICES = {"collect_detailed_traces"}


@pytest.fixture(params=sorted(OPTION_TABLES), name="release")
def release_fixture(request):
    return request.param


@pytest.fixture(name="captured")
def captured_options(vllm_help, release):
    assert release in vllm_help.captured_versions(), (
        "no tests/vllm_help/vllm-%s-serve-help.txt: run tools/regenerate_vllm_tables.sh %s" % (release, release))
    return vllm_help.read_capture(release)


@pytest.fixture(name="table")
def table_fixture(release):
    return OPTION_TABLES[release].SERVE_OPTIONS


def test_table_and_capture_name_the_same_wheel(release, vllm_help):
    module = OPTION_TABLES[release]
    assert module.VLLM_VERSION == release
    assert re.match(r"^vllm-%s-.*\.whl$" % re.escape(release), module.WHEEL), module.WHEEL
    assert re.match(r"^[0-9a-f]{64}$", module.WHEEL_SHA256), module.WHEEL_SHA256
    with open(vllm_help.capture_path(release)) as handle:
        header = handle.readline()
    assert "of vLLM %s (wheel %s, sha256 %s;" % (release, module.WHEEL, module.WHEEL_SHA256) in header, header


def test_the_regeneration_script_covers_every_table():
    with open(os.path.join(REPO, "tools", "regenerate_vllm_tables.sh")) as handle:
        listed = re.search(r'^SUPPORTED="([^"]*)"', handle.read(), re.M).group(1).split()
    assert sorted(listed) == sorted(OPTION_TABLES)


def test_same_option_names(captured, table, release):
    missing = sorted(set(captured) - set(table))
    unknown = sorted(set(table) - set(captured))
    assert not missing and not unknown, "vLLM %s has options the table lacks: %s; the table has options vLLM lacks: %s" % (
        release, ", ".join(missing) or "none", ", ".join(unknown) or "none")


def test_same_kinds(captured, table, release):
    def kind(entry):
        return (entry["kind"], entry.get("negative"))

    differ = ["%s (table %s, vLLM %s)" % (name, kind(table[name]), kind(captured[name]))
              for name in sorted(set(captured) & set(table)) if kind(table[name]) != kind(captured[name])]
    assert not differ, "kinds differ from vLLM %s's help: %s" % (release, "; ".join(differ))


def test_same_choices(captured, table, release):
    differ = []
    for name in sorted(set(captured) & set(table)):
        listed, shown = set(table[name].get("choices", [])), set(captured[name].get("choices", []))
        if name in COMMA_JOINED_CHOICES:
            joined = {c for c in listed - shown if set(c.split(",")) <= shown and len(set(c.split(","))) > 1}
            listed -= joined
        if listed != shown:
            differ.append("%s (table only: %s; vLLM only: %s)" % (
                name, ", ".join(sorted(listed - shown)) or "-", ", ".join(sorted(shown - listed)) or "-"))
    assert not differ, "choices differ from vLLM %s's help: %s" % (release, "; ".join(differ))


def test_reader_reads_what_argparse_prints(vllm_help, monkeypatch):
    """The reader against Python's own argparse output, for every form the captures use."""
    parser = argparse.ArgumentParser(prog="vllm serve")
    parser.add_argument("model_tag", nargs="?")
    parser.add_argument("--headless", action="store_true")
    parser.add_argument("--enable-x", action=argparse.BooleanOptionalAction, help="Switch. Next -- line: --not-an-option")
    parser.add_argument("--port", type=int, help="Port number.")
    parser.add_argument("--tensor-parallel-size", "-tp", type=int)
    parser.add_argument("--block-size", type=int, choices=[1, 8, 16])
    parser.add_argument("--hf-token", nargs="?")
    parser.add_argument("--api-key", nargs="+")
    parser.add_argument("--patterns", nargs="*")
    parser.add_argument("--pair", nargs=2)
    parser.add_argument("--traces", nargs="+", choices=["all", "model"])
    parser.add_argument("--config-format", metavar=str(["auto", "hf"]))
    parser.add_argument("--tool-call-parser", metavar="{hermes,xlam} or name registered in --tool-parser-plugin")
    parser.epilog = "When passing JSON CLI arguments:\n   --json-arg.key1 value1"
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    monkeypatch.setenv("COLUMNS", "200")
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        parser.print_help()
    assert vllm_help.parse_help(text.getvalue()) == {
        "headless": {"kind": "flag"},
        "enable_x": {"kind": "bool_optional"},
        "port": {"kind": "value"},
        "tensor_parallel_size": {"kind": "value"},
        "block_size": {"kind": "value", "choices": ["1", "8", "16"]},
        "hf_token": {"kind": "value"},
        "api_key": {"kind": "multi"},
        "patterns": {"kind": "multi"},
        "pair": {"kind": "multi"},
        "traces": {"kind": "multi", "choices": ["all", "model"]},
        "config_format": {"kind": "value"},
        "tool_call_parser": {"kind": "value"},
    }, text.getvalue()
